//! Kubernetes mode: preemptd mirrors a cluster by itself. One kube-rs watcher per kind
//! lists and then watches its objects; each object is read into one JSON tree, converted
//! by the model's Kubernetes reader (the one builder every input goes through) as soon as
//! it is read, and the tree dropped, so only the compact model is kept.
//!
//! The watchers hand their changes to one applier thread, which applies them to a
//! [`Mirror`] in arrival order, in batches of whatever has queued up. A (re)list replaces
//! the state of its kind: what the cache holds that the list did not name is deleted, so
//! objects deleted while the watch was cut off disappear. An object the builder refuses
//! is not held, whether a watch event or a list brings it: the version held before goes.
//! The mirror is ready once every kind has finished its first list. Failed watches retry
//! about every second, so the cache catches up soon after an API server outage.
//!
//! This layer knows kube-rs, the model and the application core, not gRPC:
//! [`AppMirror`] applies what the watches deliver to the core. At start,
//! [`check_server_version`] compares the API server's version with the one decisions
//! answer as.

mod applier;
mod discovery;
mod listed;
mod metrics;
mod mirror;
mod server_version;
mod watch;
mod watched;

pub use mirror::AppMirror;
pub use server_version::check_server_version;

use std::sync::Arc;

use kube::api::{Api, ApiResource};
use tokio::sync::mpsc;

use crate::model::build::Memo;
use crate::model::decode::Object;
use applier::{QUEUED_CHANGES, apply_changes};
use watch::watch;
use watched::{KindType, Watched, convert, with_memo_until_done};

/// The kinds preemptd watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `v1` Node.
    Node,
    /// `v1` Pod.
    Pod,
    /// `policy/v1` PodDisruptionBudget.
    PodDisruptionBudget,
    /// `scheduling.k8s.io/v1` PriorityClass.
    PriorityClass,
    /// `v1` Namespace.
    Namespace,
    /// `scheduling.k8s.io/v1beta1` PodGroup, watched when the API server serves it.
    PodGroup,
    /// `scheduling.k8s.io/v1beta1` Workload, watched when the API server serves it.
    Workload,
}

impl Kind {
    /// Every kind, each once.
    pub const ALL: [Kind; 7] = [
        Kind::Node,
        Kind::Pod,
        Kind::PodDisruptionBudget,
        Kind::PriorityClass,
        Kind::Namespace,
        Kind::PodGroup,
        Kind::Workload,
    ];

    /// The kinds every API server serves, watched always.
    pub const CORE: [Kind; 5] = [
        Kind::Node,
        Kind::Pod,
        Kind::PodDisruptionBudget,
        Kind::PriorityClass,
        Kind::Namespace,
    ];

    /// The metric label and log field value.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Pod => "pod",
            Kind::PodDisruptionBudget => "poddisruptionbudget",
            Kind::PriorityClass => "priorityclass",
            Kind::Namespace => "namespace",
            Kind::PodGroup => "podgroup",
            Kind::Workload => "workload",
        }
    }

    pub(super) fn api_resource(self) -> ApiResource {
        use k8s_openapi::api::scheduling::v1beta1 as workloads;
        use k8s_openapi::api::{core::v1, policy::v1 as policy, scheduling::v1 as scheduling};
        match self {
            Kind::Node => ApiResource::erase::<v1::Node>(&()),
            Kind::Pod => ApiResource::erase::<v1::Pod>(&()),
            Kind::PodDisruptionBudget => ApiResource::erase::<policy::PodDisruptionBudget>(&()),
            Kind::PriorityClass => ApiResource::erase::<scheduling::PriorityClass>(&()),
            Kind::Namespace => ApiResource::erase::<v1::Namespace>(&()),
            Kind::PodGroup => ApiResource::erase::<workloads::PodGroup>(&()),
            Kind::Workload => ApiResource::erase::<workloads::Workload>(&()),
        }
    }
}

/// `$body` with `$type` the [`KindType`] of `$kind`.
macro_rules! with_kind_type {
    ($kind:expr, $type:ident => $body:expr) => {
        match $kind {
            Kind::Node => {
                type $type = watched::NodeType;
                $body
            }
            Kind::Pod => {
                type $type = watched::PodType;
                $body
            }
            Kind::PodDisruptionBudget => {
                type $type = watched::PdbType;
                $body
            }
            Kind::PriorityClass => {
                type $type = watched::PriorityClassType;
                $body
            }
            Kind::Namespace => {
                type $type = watched::NamespaceType;
                $body
            }
            Kind::PodGroup => {
                type $type = watched::PodGroupType;
                $body
            }
            Kind::Workload => {
                type $type = watched::WorkloadType;
                $body
            }
        }
    };
}

/// Names one object of a kind: `namespace` is empty for cluster-scoped kinds; `uid` is
/// set on deletions, so a pod recreated under the same name is not deleted by mistake.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// The object's kind.
    pub kind: Kind,
    /// The object's namespace; empty for cluster-scoped kinds.
    pub namespace: String,
    /// The object's name.
    pub name: String,
}

/// The kind, namespace and name of `object`.
pub(super) fn key_of(object: &Object) -> (Kind, &str, &str) {
    match object {
        Object::Node(n) => (Kind::Node, "", n.name.as_ref()),
        Object::Pod(p) => (Kind::Pod, p.namespace.as_ref(), p.name()),
        Object::Pdb(b) => (
            Kind::PodDisruptionBudget,
            b.namespace.as_ref(),
            b.name.as_ref(),
        ),
        Object::PriorityClass(c) => (Kind::PriorityClass, "", c.name.as_ref()),
        Object::Namespace(n) => (Kind::Namespace, "", n.name.as_ref()),
        Object::PodGroup(g) => (Kind::PodGroup, g.namespace.as_ref(), g.name.as_ref()),
        Object::Workload(w) => (Kind::Workload, w.namespace.as_ref(), w.name.as_ref()),
    }
}

/// Where the mirrored state goes: the server's cache, with its nomination log.
pub trait Mirror: Send + Sync + 'static {
    /// Applies added or changed objects, in order.
    fn upsert(&self, objects: Vec<Object>);
    /// Deletes an object; `uid`, when known, must match the one held.
    fn delete(&self, key: &ObjectKey, uid: Option<&str>);
    /// Calls `each` with the namespace and name of every object of `kind` held now.
    fn for_each_key(&self, kind: Kind, each: &mut dyn FnMut(&str, &str));
    /// Every kind has finished its first list: decisions may be served.
    fn ready(&self);
}

/// Watches every kind the API server serves through `client` (see
/// [`discovery::served_kinds`]) and applies what arrives to `mirror`, until the returned
/// task is aborted. Watch errors (410 Gone included) restart the watch with backoff;
/// each restart relists.
pub fn start(client: kube::Client, mirror: Arc<dyn Mirror>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let kinds = discovery::served_kinds(&client).await;
        let (changes, received) = mpsc::channel(QUEUED_CHANGES);
        let watched = kinds.len();
        let applier = std::thread::Builder::new()
            .name("kube-applier".into())
            .spawn(move || apply_changes(received, mirror.as_ref(), watched));
        if let Err(error) = applier {
            tracing::error!(%error, "cannot start the kubernetes applier thread");
        }
        metrics::watches_started(&kinds);
        let mut watches: Vec<_> = kinds
            .iter()
            .map(|&kind| {
                with_kind_type!(kind, K => tokio::spawn(watch::<K>(client.clone(), changes.clone())))
            })
            .collect();
        watches.push(tokio::spawn(metrics::report_event_ages(kinds)));
        let _abort_on_drop = AbortOnDrop(watches);
        std::future::pending::<()>().await;
    })
}

struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Where the cluster is: a kubeconfig file, or the pod's service account.
#[derive(Debug, Clone)]
pub enum Source {
    /// A kubeconfig file; `None` reads `KUBECONFIG` or `~/.kube/config`, as kubectl does.
    Kubeconfig(Option<std::path::PathBuf>),
    /// The service account of the pod preemptd runs in.
    InCluster,
}

/// A client for `source`'s cluster (its current context).
pub async fn client(source: &Source) -> anyhow::Result<kube::Client> {
    use anyhow::Context as _;
    let config = match source {
        Source::Kubeconfig(Some(path)) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .with_context(|| format!("cannot use kubeconfig {}", path.display()))?
        }
        Source::Kubeconfig(None) => kube::Config::from_kubeconfig(&Default::default())
            .await
            .context("cannot use the kubeconfig of KUBECONFIG or ~/.kube/config")?,
        Source::InCluster => {
            kube::Config::incluster().context("cannot use the in-cluster service account")?
        }
    };
    kube::Client::try_from(config).context("cannot create a kubernetes client")
}

/// Every object of every kind the API server serves, listed once (pages of
/// [`LIST_PAGE`]); objects the builder refuses are left out with a warning, as the
/// watches leave them out.
pub async fn list_once(client: kube::Client) -> anyhow::Result<Vec<Object>> {
    use anyhow::Context as _;
    let mut objects = Vec::new();
    let mut memo = Some(Box::new(Memo::for_stream()));
    let kinds = discovery::discover(&client)
        .await
        .context("cannot discover the served resources")?;
    for kind in kinds {
        with_kind_type!(kind, K => with_memo_until_done(list_kind::<K>(client.clone(), &mut objects), &mut memo)
            .await
            .with_context(|| format!("cannot list {}s", kind.name()))?);
    }
    Ok(objects)
}

/// Adds every object of `K` to `objects`.
async fn list_kind<K: KindType>(
    client: kube::Client,
    objects: &mut Vec<Object>,
) -> Result<(), kube::Error> {
    let api: Api<Watched<K>> = Api::all_with(client, &K::KIND.api_resource());
    let mut params = kube::api::ListParams::default().limit(LIST_PAGE);
    loop {
        let page = api.list(&params).await?;
        let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        objects.extend(page.items.into_iter().filter_map(convert));
        match next {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(()),
        }
    }
}

/// Objects per page of a one-off list.
const LIST_PAGE: u32 = 500;
