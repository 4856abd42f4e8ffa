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
//! [`AppMirror`] applies what the watches deliver to the core.

mod listed;
mod metrics;
mod mirror;

pub use mirror::AppMirror;

use std::borrow::Cow;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::model::build::Memo;
use crate::model::decode::{self, Object};
use listed::ListedKeys;

/// The kinds preemptd watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    Namespace,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
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
        }
    }

    fn api_resource(self) -> ApiResource {
        use k8s_openapi::api::{core::v1, policy::v1 as policy, scheduling::v1 as scheduling};
        match self {
            Kind::Node => ApiResource::erase::<v1::Node>(&()),
            Kind::Pod => ApiResource::erase::<v1::Pod>(&()),
            Kind::PodDisruptionBudget => ApiResource::erase::<policy::PodDisruptionBudget>(&()),
            Kind::PriorityClass => ApiResource::erase::<scheduling::PriorityClass>(&()),
            Kind::Namespace => ApiResource::erase::<v1::Namespace>(&()),
        }
    }

    /// The model object `value` describes; nodes and pods take their repeated values from
    /// the memo of the watch or list being read (see [`with_memo`]).
    fn decode(self, value: &Value) -> Result<Object, decode::DecodeError> {
        match self {
            Kind::Node => with_memo(|memo| decode::decode_node_with(value, memo)).map(Object::Node),
            Kind::Pod => with_memo(|memo| decode::decode_pod_with(value, memo)).map(Object::Pod),
            Kind::PodDisruptionBudget => decode::decode_pdb(value).map(Object::Pdb),
            Kind::PriorityClass => decode::decode_priority_class(value).map(Object::PriorityClass),
            Kind::Namespace => decode::decode_namespace(value).map(Object::Namespace),
        }
    }
}

thread_local! {
    /// The memo of the watch or list whose response this thread is reading, if any (see
    /// [`with_memo_installed`]): kube-rs reads each object while the watch's task polls
    /// it, on whichever async thread runs the task.
    static MEMO: std::cell::RefCell<Option<Box<Memo>>> = const { std::cell::RefCell::new(None) };
}

/// Converts with the memo installed on this thread; a disabled one when none is (every
/// conversion then allocates its own values).
fn with_memo<T>(convert: impl FnOnce(&mut Memo) -> T) -> T {
    MEMO.with_borrow_mut(|memo| match memo {
        Some(memo) => convert(memo),
        None => convert(&mut Memo::disabled()),
    })
}

/// Runs `poll` with `memo` installed for this thread's conversions, and takes it back.
/// Without a memo, every pod carried its own copy of the strings its details keep
/// (toleration keys and values, its class name) and of details its template's pods share.
/// Owned by a watch rather than by a thread, what a list remembered is dropped when the
/// list is done instead of held as long as the thread lives.
fn with_memo_installed<T>(memo: &mut Option<Box<Memo>>, poll: impl FnOnce() -> T) -> T {
    let previous = MEMO.replace(memo.take());
    let result = poll();
    *memo = MEMO.replace(previous);
    result
}

/// A kind as a type, so that reading a watched object can convert it (see [`Watched`]).
trait KindType: Clone + std::fmt::Debug + Send + Sync + 'static {
    const KIND: Kind;
}

macro_rules! kind_types {
    ($($name:ident => $kind:ident),* $(,)?) => {$(
        #[derive(Clone, Copy, Debug)]
        struct $name;
        impl KindType for $name {
            const KIND: Kind = Kind::$kind;
        }
    )*};
}

kind_types!(
    NodeType => Node,
    PodType => Pod,
    PdbType => PodDisruptionBudget,
    PriorityClassType => PriorityClass,
    NamespaceType => Namespace,
);

/// `$body` with `$type` the [`KindType`] of `$kind`.
macro_rules! with_kind_type {
    ($kind:expr, $type:ident => $body:expr) => {
        match $kind {
            Kind::Node => {
                type $type = NodeType;
                $body
            }
            Kind::Pod => {
                type $type = PodType;
                $body
            }
            Kind::PodDisruptionBudget => {
                type $type = PdbType;
                $body
            }
            Kind::PriorityClass => {
                type $type = PriorityClassType;
                $body
            }
            Kind::Namespace => {
                type $type = NamespaceType;
                $body
            }
        }
    };
}

/// Names one object of a kind: `namespace` is empty for cluster-scoped kinds; `uid` is
/// set on deletions, so a pod recreated under the same name is not deleted by mistake.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

/// The kind, namespace and name of `object`.
fn key_of(object: &Object) -> (Kind, &str, &str) {
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

/// A change a watcher hands the applier.
enum Change {
    Upsert(Object),
    Other(Control),
}

/// The changes applied one at a time, between batches of upserts.
enum Control {
    /// A (re)list of the kind begins.
    ListStarted(Kind),
    Delete(ObjectKey, Option<String>),
    /// The builder refused the object's new version: the one held goes.
    Refused(ObjectKey),
    /// The (re)list is complete: objects it did not name are gone.
    ListDone(Kind),
}

/// Changes queued between the watchers and the applier: bounds what a fast API server
/// can make preemptd hold before the cache takes it.
const QUEUED_CHANGES: usize = 8192;
/// How often the progress of a long list is logged.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Watches every kind through `client` and applies what arrives to `mirror`, until the
/// returned task is aborted. Watch errors (410 Gone included) restart the watch with
/// backoff; each restart relists.
pub fn start(client: kube::Client, mirror: Arc<dyn Mirror>) -> tokio::task::JoinHandle<()> {
    let (changes, received) = mpsc::channel(QUEUED_CHANGES);
    let applier = std::thread::Builder::new()
        .name("kube-applier".into())
        .spawn(move || apply_changes(received, mirror.as_ref()));
    if let Err(error) = applier {
        tracing::error!(%error, "cannot start the kubernetes applier thread");
    }
    metrics::watches_started();
    let mut watches: Vec<_> = Kind::ALL
        .into_iter()
        .map(|kind| {
            with_kind_type!(kind, K => tokio::spawn(watch::<K>(client.clone(), changes.clone())))
        })
        .collect();
    watches.push(tokio::spawn(metrics::report_event_ages()));
    tokio::spawn(async move {
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

/// The pause between a kind's watch retries before jitter (which adds up to as much
/// again): an API server back from an outage is relisted within about a second.
/// kube-rs's default grows to 30 s (plus jitter), so a cluster stayed stale for up to
/// half a minute after its API server answered again. Not shorter: a failed list starts
/// over with an `Init` event, which resets the stream's backoff, so this is also the
/// pace of list retries while the API server is down.
const RETRY_DELAY: Duration = Duration::from_millis(500);
/// How often a watch that keeps failing says so again.
const FAILING_LOG_EVERY: Duration = Duration::from_secs(30);

/// A watch's retry pauses: [`RETRY_DELAY`], jittered.
fn retry_backoff() -> watcher::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(RETRY_DELAY)
        .with_max_delay(RETRY_DELAY)
        .with_jitter()
        .without_max_times()
        .into()
}

/// One kind's watch: every event converted on arrival and queued for the applier.
async fn watch<K: KindType>(client: kube::Client, changes: mpsc::Sender<Change>) {
    let kind = K::KIND;
    let api: Api<Watched<K>> = Api::all_with(client, &kind.api_resource());
    let mut events = watcher(api, watcher::Config::default())
        .backoff(retry_backoff())
        .boxed();
    let mut outage = Outage::default();
    // Set at each (re)list's start, which comes first.
    let mut memo = None;
    while let Some(event) = next_with_memo(&mut events, &mut memo).await {
        // `Init` comes before any request: it says nothing of the API server.
        if matches!(&event, Ok(e) if !matches!(e, watcher::Event::Init)) {
            outage.ended(kind);
        }
        let change = match event {
            Ok(watcher::Event::Init) => {
                // A list converts many objects at once: remember as a Sync stream does.
                memo = Some(Box::new(Memo::for_stream()));
                Some(Change::Other(Control::ListStarted(kind)))
            }
            Ok(watcher::Event::InitApply(object) | watcher::Event::Apply(object)) => {
                Some(upsert_or_refusal(object))
            }
            Ok(watcher::Event::Delete(object)) => deletion(&object),
            Ok(watcher::Event::InitDone) => {
                let list_memo = memo.replace(Box::new(Memo::for_long_lived()));
                // Dropped before the cache hands free memory back at SERVING: a list's
                // memo holds the keys of its templates (megabytes for a large cluster),
                // milliseconds to free, so not on an async thread. Left in the freeing
                // thread's cache, a few hundred keys kept ~100 slabs of their size
                // resident (3 MB at 60k pods).
                let _ = tokio::task::spawn_blocking(move || {
                    drop(list_memo);
                    crate::ops::memory::flush_thread_cache();
                })
                .await;
                Some(Change::Other(Control::ListDone(kind)))
            }
            Err(error) => {
                metrics::watch_error(kind);
                outage.failed(kind, &error);
                None
            }
        };
        if let Some(change) = change
            && changes.send(change).await.is_err()
        {
            return;
        }
    }
}

/// A watch's run of failures: logged when it starts, every [`FAILING_LOG_EVERY`] while
/// it lasts, and when it ends (retries come about every second, too often to log each).
#[derive(Default)]
struct Outage {
    since: Option<Instant>,
    failures: u64,
    last_logged: Option<Instant>,
}

impl Outage {
    fn failed(&mut self, kind: Kind, error: &watcher::Error) {
        let now = Instant::now();
        let since = *self.since.get_or_insert_with(|| {
            metrics::watch_healthy(kind, false);
            now
        });
        self.failures += 1;
        if self
            .last_logged
            .is_none_or(|last| now.duration_since(last) >= FAILING_LOG_EVERY)
        {
            self.last_logged = Some(now);
            tracing::warn!(
                kind = kind.name(),
                %error,
                failures = self.failures,
                failing_seconds = now.duration_since(since).as_secs(),
                "watch failed, retrying"
            );
        }
    }

    fn ended(&mut self, kind: Kind) {
        if let Some(since) = self.since.take() {
            metrics::watch_healthy(kind, true);
            tracing::info!(
                kind = kind.name(),
                failures = self.failures,
                failed_seconds = since.elapsed().as_secs_f64(),
                "watch answered again"
            );
            *self = Outage::default();
        }
    }
}

/// The next of `events`, read with `memo` installed for its conversions.
async fn next_with_memo<S: futures::Stream + Unpin>(
    events: &mut S,
    memo: &mut Option<Box<Memo>>,
) -> Option<S::Item> {
    std::future::poll_fn(|cx| with_memo_installed(memo, || events.poll_next_unpin(cx))).await
}

/// `future`'s output, its conversions made with `memo` installed.
async fn with_memo_until_done<F: Future>(future: F, memo: &mut Option<Box<Memo>>) -> F::Output {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| with_memo_installed(memo, || future.as_mut().poll(cx))).await
}

/// What an added or changed object means for the cache: the model object, or, when the
/// builder refuses it, that whatever is held under its name goes. The object as the API
/// server now has it cannot be represented, so an older version kept would answer for an
/// object that no longer is; a relist drops it (it is not named by the list), and a watch
/// event does the same, so a long-running preemptd and a fresh one agree.
fn upsert_or_refusal<K: KindType>(watched: Watched<K>) -> Change {
    let key = ObjectKey {
        kind: K::KIND,
        namespace: watched.metadata.namespace.clone().unwrap_or_default(),
        name: watched.metadata.name.clone().unwrap_or_default(),
    };
    match convert(watched) {
        Some(object) => Change::Upsert(object),
        None => Change::Other(Control::Refused(key)),
    }
}

/// The model object of a watched object; `None` (counted and logged) when the builder
/// refused it.
fn convert<K: KindType>(watched: Watched<K>) -> Option<Object> {
    let kind = K::KIND;
    match watched.object {
        Ok(object) => Some(object),
        Err(error) => {
            metrics::rejected(kind);
            let meta = &watched.metadata;
            let namespace = meta.namespace.as_deref().unwrap_or_default();
            let name = meta.name.as_deref().unwrap_or_default();
            if let Some(suppressed) = metrics::refusal_log_due(kind) {
                tracing::warn!(
                    kind = kind.name(),
                    namespace,
                    name,
                    %error,
                    suppressed,
                    "object refused, not held"
                );
            }
            None
        }
    }
}

fn deletion<K: KindType>(object: &Watched<K>) -> Option<Change> {
    let kind = K::KIND;
    let name = object.metadata.name.clone()?;
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let key = ObjectKey {
        kind,
        namespace,
        name,
    };
    Some(Change::Other(Control::Delete(
        key,
        object.metadata.uid.clone(),
    )))
}

/// A watched object, converted as it is read: the model object (or why the builder
/// refused it) and the identity the watcher and the logs need. The JSON tree it was read
/// into is dropped at once, not after the whole page of a list is read: a pod's tree is
/// a few hundred small allocations, and a page's 500 trees, freed while the cache
/// allocated the pods it keeps, left their slabs part full and resident.
#[derive(Clone, Debug)]
struct Watched<K> {
    metadata: ObjectMeta,
    object: Result<Object, decode::DecodeError>,
    kind: PhantomData<K>,
}

impl<'de, K: KindType> serde::Deserialize<'de> for Watched<K> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Value::deserialize(deserializer)?;
        let mut metadata = ObjectMeta::default();
        if let Some(Value::Object(meta)) = object.get("metadata") {
            let text = |key: &str| meta.get(key).and_then(Value::as_str).map(str::to_string);
            metadata.name = text("name");
            metadata.namespace = text("namespace");
            metadata.uid = text("uid");
            metadata.resource_version = text("resourceVersion");
        }
        Ok(Watched {
            metadata,
            object: K::KIND.decode(&object),
            kind: PhantomData,
        })
    }
}

impl<K: KindType> kube::Resource for Watched<K> {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(resource: &ApiResource) -> Cow<'_, str> {
        resource.kind.as_str().into()
    }

    fn group(resource: &ApiResource) -> Cow<'_, str> {
        resource.group.as_str().into()
    }

    fn version(resource: &ApiResource) -> Cow<'_, str> {
        resource.version.as_str().into()
    }

    fn api_version(resource: &ApiResource) -> Cow<'_, str> {
        resource.api_version.as_str().into()
    }

    fn plural(resource: &ApiResource) -> Cow<'_, str> {
        resource.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A list in progress: what it named so far.
struct Listing {
    started: Instant,
    seen: ListedKeys,
    last_progress: Instant,
}

/// The applier thread: applies changes in arrival order, batching upserts.
fn apply_changes(mut received: mpsc::Receiver<Change>, mirror: &dyn Mirror) {
    let mut listings: std::collections::HashMap<Kind, Listing> = Default::default();
    let mut listed: HashSet<Kind> = HashSet::new();
    let mut batch: Vec<Object> = Vec::new();
    let mut changes = Vec::new();
    while received.blocking_recv_many(&mut changes, QUEUED_CHANGES) > 0 {
        for change in changes.drain(..) {
            match change {
                Change::Upsert(object) => {
                    let (kind, namespace, name) = key_of(&object);
                    metrics::event(kind, "apply");
                    if let Some(listing) = listings.get_mut(&kind) {
                        listing.seen.insert(namespace, name);
                    }
                    batch.push(object);
                }
                Change::Other(control) => {
                    flush(mirror, &mut batch);
                    apply_control(control, mirror, &mut listings, &mut listed);
                }
            }
        }
        flush(mirror, &mut batch);
        log_progress(&mut listings);
    }
}

fn flush(mirror: &dyn Mirror, batch: &mut Vec<Object>) {
    if !batch.is_empty() {
        mirror.upsert(std::mem::take(batch));
    }
}

fn apply_control(
    control: Control,
    mirror: &dyn Mirror,
    listings: &mut std::collections::HashMap<Kind, Listing>,
    listed: &mut HashSet<Kind>,
) {
    match control {
        Control::Delete(key, uid) => {
            metrics::event(key.kind, "delete");
            if let Some(listing) = listings.get_mut(&key.kind) {
                listing.seen.remove(&key.namespace, &key.name);
            }
            mirror.delete(&key, uid.as_deref());
        }
        Control::Refused(key) => {
            if let Some(listing) = listings.get_mut(&key.kind) {
                listing.seen.remove(&key.namespace, &key.name);
            }
            if !key.name.is_empty() {
                mirror.delete(&key, None);
            }
        }
        Control::ListStarted(kind) => {
            // A list that failed starts over: one relist however many attempts it takes.
            if listed.contains(&kind) && !listings.contains_key(&kind) {
                metrics::relist(kind);
                tracing::info!(kind = kind.name(), "relisting");
            }
            let now = Instant::now();
            listings.insert(
                kind,
                Listing {
                    started: now,
                    seen: ListedKeys::default(),
                    last_progress: now,
                },
            );
        }
        Control::ListDone(kind) => {
            let Some(listing) = listings.remove(&kind) else {
                return;
            };
            let mut gone = Vec::new();
            mirror.for_each_key(kind, &mut |namespace, name| {
                if !listing.seen.contains(namespace, name) {
                    gone.push(ObjectKey {
                        kind,
                        namespace: namespace.to_string(),
                        name: name.to_string(),
                    });
                }
            });
            for key in &gone {
                mirror.delete(key, None);
            }
            let seconds = listing.started.elapsed().as_secs_f64();
            metrics::listed(kind);
            tracing::info!(
                kind = kind.name(),
                objects = listing.seen.len(),
                deleted = gone.len(),
                seconds,
                "listed"
            );
            // The listed keys (megabytes for a large list) are freed before `ready` hands
            // free memory back.
            drop(listing);
            if listed.insert(kind) && listed.len() == Kind::ALL.len() {
                tracing::info!("every kind listed, serving decisions");
                mirror.ready();
            }
        }
    }
}

fn log_progress(listings: &mut std::collections::HashMap<Kind, Listing>) {
    let now = Instant::now();
    for (kind, listing) in listings.iter_mut() {
        if now.duration_since(listing.last_progress) >= PROGRESS_EVERY {
            listing.last_progress = now;
            let elapsed = now.duration_since(listing.started).as_secs_f64();
            let objects = listing.seen.len();
            tracing::info!(
                kind = kind.name(),
                objects,
                objects_per_second = (objects as f64 / elapsed.max(1e-9)).round(),
                "listing"
            );
        }
    }
}

/// Where the cluster is: a kubeconfig file, or the pod's service account.
#[derive(Debug, Clone)]
pub enum Source {
    /// A kubeconfig file; `None` reads `KUBECONFIG` or `~/.kube/config`, as kubectl does.
    Kubeconfig(Option<std::path::PathBuf>),
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

/// Every object of every kind, listed once (pages of [`LIST_PAGE`]); objects the builder
/// refuses are left out with a warning, as the watches leave them out.
pub async fn list_once(client: kube::Client) -> anyhow::Result<Vec<Object>> {
    use anyhow::Context as _;
    let mut objects = Vec::new();
    let mut memo = Some(Box::new(Memo::for_stream()));
    for kind in Kind::ALL {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watched_object_is_converted_as_it_is_read_and_names_itself() {
        let text = r#"{
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1",
                         "resourceVersion": "42",
                         "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c",
                     "resources": {"requests": {"cpu": "250m"}}}]}
        }"#;
        let watched: Watched<PodType> = serde_json::from_str(text).expect("a pod");
        assert_eq!(watched.metadata.name.as_deref(), Some("web-1"));
        assert_eq!(watched.metadata.namespace.as_deref(), Some("shop"));
        assert_eq!(watched.metadata.uid.as_deref(), Some("u-1"));
        assert_eq!(watched.metadata.resource_version.as_deref(), Some("42"));

        let Some(Object::Pod(pod)) = convert(watched) else {
            panic!("the pod converts");
        };
        assert_eq!(
            (pod.namespace.as_ref(), pod.name(), pod.uid()),
            ("shop", "web-1", "u-1")
        );
        assert_eq!(pod.node_name.as_deref(), Some("n1"));
        assert_eq!(pod.resource_version, 42);
    }

    #[test]
    fn pods_converted_with_one_memo_share_their_details_and_the_strings_in_them() {
        let pod = |memo: &mut Option<Box<Memo>>, name: &str, cpu: &str| {
            let text = format!(
                r#"{{"metadata": {{"name": "{name}", "namespace": "shop", "uid": "u-{name}"}},
                    "spec": {{"nodeName": "n1", "priorityClassName": "high",
                             "containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "{cpu}"}}}}}}],
                             "tolerations": [{{"key": "node.kubernetes.io/not-ready",
                                              "operator": "Exists", "effect": "NoExecute",
                                              "tolerationSeconds": 300}}]}}}}"#
            );
            let watched: Watched<PodType> =
                with_memo_installed(memo, || serde_json::from_str(&text)).expect("a pod");
            let Some(Object::Pod(pod)) = convert(watched) else {
                panic!("the pod converts");
            };
            pod
        };
        let mut memo = Some(Box::new(Memo::for_stream()));
        // Requests that differ keep the details apart, as an API server's pods' do.
        let (first, second) = (
            pod(&mut memo, "web-1", "100m"),
            pod(&mut memo, "web-2", "200m"),
        );
        assert!(!triomphe::Arc::ptr_eq(&first.details, &second.details));
        // A pod of the first one's template is given its details.
        let third = pod(&mut memo, "web-3", "100m");
        assert!(triomphe::Arc::ptr_eq(&first.details, &third.details));
        // Another watch's memo (or none) knows nothing of them.
        for mut other in [Some(Box::new(Memo::for_stream())), None] {
            let fourth = pod(&mut other, "web-4", "100m");
            assert_eq!(first.details.requests, fourth.details.requests);
            assert!(!triomphe::Arc::ptr_eq(&first.details, &fourth.details));
        }
        assert!(MEMO.with_borrow(Option::is_none), "the memo is taken back");
        assert_eq!((third.name(), third.uid()), ("web-3", "u-web-3"));
        // The tolerations too, whatever else their details differ in.
        assert!(
            first
                .details
                .tolerations
                .ptr_eq(&second.details.tolerations)
        );
        let key = |pod: &crate::model::Pod| pod.details.tolerations[0].key.clone();
        assert_eq!(&*key(&first), "node.kubernetes.io/not-ready");
        assert!(triomphe::Arc::ptr_eq(&key(&first), &key(&second)));
        let class = |pod: &crate::model::Pod| pod.details.priority_class_name.clone();
        assert!(triomphe::Arc::ptr_eq(
            &class(&first).expect("a class"),
            &class(&second).expect("a class")
        ));
    }

    #[test]
    fn a_watched_object_the_builder_refuses_is_skipped() {
        let text = r#"{"metadata": {"name": "bad", "namespace": "shop"},
                       "spec": {"containers": [{"name": "c",
                                "resources": {"requests": {"cpu": "lots"}}}]}}"#;
        let watched: Watched<PodType> = serde_json::from_str(text).expect("json");
        assert!(watched.object.is_err());
        assert!(convert(watched).is_none());
    }

    /// Kind, namespace and name.
    type HeldKey = (&'static str, String, String);

    /// A mirror that keeps the uid of each object by its key.
    #[derive(Default)]
    struct Held(std::sync::Mutex<std::collections::BTreeMap<HeldKey, String>>);

    impl Mirror for Held {
        fn upsert(&self, objects: Vec<Object>) {
            let mut held = self.0.lock().unwrap();
            for object in objects {
                let (kind, namespace, name) = key_of(&object);
                let uid = match &object {
                    Object::Pod(p) => p.uid().to_string(),
                    _ => String::new(),
                };
                held.insert((kind.name(), namespace.into(), name.into()), uid);
            }
        }
        fn delete(&self, key: &ObjectKey, uid: Option<&str>) {
            let mut held = self.0.lock().unwrap();
            let k = (key.kind.name(), key.namespace.clone(), key.name.clone());
            if uid.is_none_or(|uid| held.get(&k).is_some_and(|h| h == uid)) {
                held.remove(&k);
            }
        }
        fn for_each_key(&self, kind: Kind, each: &mut dyn FnMut(&str, &str)) {
            for (k, namespace, name) in self.0.lock().unwrap().keys() {
                if *k == kind.name() {
                    each(namespace, name);
                }
            }
        }
        fn ready(&self) {}
    }

    fn watched_pod(name: &str, cpu: &str) -> Watched<PodType> {
        let text = format!(
            r#"{{"metadata": {{"name": "{name}", "namespace": "shop", "uid": "u-{name}"}},
                "spec": {{"nodeName": "n1", "containers": [{{"name": "c",
                         "resources": {{"requests": {{"cpu": "{cpu}"}}}}}}]}}}}"#
        );
        serde_json::from_str(&text).expect("json")
    }

    /// What `mirror` holds after the applier has applied `changes` in order.
    fn applied(changes: Vec<Change>) -> Vec<HeldKey> {
        let mirror = Held::default();
        let (sender, received) = mpsc::channel(changes.len().max(1));
        for change in changes {
            assert!(sender.try_send(change).is_ok(), "room for every change");
        }
        drop(sender);
        apply_changes(received, &mirror);
        mirror.0.into_inner().unwrap().into_keys().collect()
    }

    #[test]
    fn a_refused_version_drops_the_held_one_in_a_watch_event_as_in_a_relist() {
        let list = |pods: Vec<Change>| {
            let mut changes = vec![Change::Other(Control::ListStarted(Kind::Pod))];
            changes.extend(pods);
            changes.push(Change::Other(Control::ListDone(Kind::Pod)));
            changes
        };
        let first = || {
            list(vec![
                upsert_or_refusal(watched_pod("web-1", "100m")),
                upsert_or_refusal(watched_pod("web-2", "100m")),
            ])
        };
        // A watch event carries web-1's new version, which the builder refuses.
        let mut watched = first();
        watched.push(upsert_or_refusal(watched_pod("web-1", "lots")));
        // A relist finds web-1 in that version.
        let mut relisted = first();
        relisted.extend(list(vec![
            upsert_or_refusal(watched_pod("web-1", "lots")),
            upsert_or_refusal(watched_pod("web-2", "100m")),
        ]));
        let only_web_2 = vec![("pod", "shop".to_string(), "web-2".to_string())];
        assert_eq!(applied(watched), only_web_2);
        assert_eq!(applied(relisted), only_web_2);
        // And a refused version within a list, after the good one, drops it too.
        let mut twice = first();
        twice.extend(list(vec![
            upsert_or_refusal(watched_pod("web-2", "100m")),
            upsert_or_refusal(watched_pod("web-1", "100m")),
            upsert_or_refusal(watched_pod("web-1", "lots")),
        ]));
        assert_eq!(applied(twice), only_web_2);
    }
}
