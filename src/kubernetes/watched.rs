//! Reading watched objects: each is converted by the model's Kubernetes reader as soon
//! as it is read, with the memo of the watch or list being read installed on the thread,
//! and its JSON tree dropped.

use std::borrow::Cow;
use std::marker::PhantomData;

use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ApiResource;
use serde_json::Value;

use crate::model::build::Memo;
use crate::model::decode::{self, Object};

use super::{Kind, metrics};

impl Kind {
    /// The model object `value` describes; nodes and pods take their repeated values from
    /// the memo of the watch or list being read (see [`with_memo`]).
    pub(super) fn decode(self, value: &Value) -> Result<Object, decode::DecodeError> {
        match self {
            Kind::Node => with_memo(|memo| decode::decode_node_with(value, memo)).map(Object::Node),
            Kind::Pod => with_memo(|memo| decode::decode_pod_with(value, memo)).map(Object::Pod),
            Kind::PodDisruptionBudget => decode::decode_pdb(value).map(Object::Pdb),
            Kind::PriorityClass => decode::decode_priority_class(value).map(Object::PriorityClass),
            Kind::Namespace => decode::decode_namespace(value).map(Object::Namespace),
            Kind::PodGroup => decode::decode_pod_group(value).map(Object::PodGroup),
            Kind::Workload => decode::decode_workload(value).map(Object::Workload),
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
pub(super) fn with_memo_installed<T>(memo: &mut Option<Box<Memo>>, poll: impl FnOnce() -> T) -> T {
    let previous = MEMO.replace(memo.take());
    let result = poll();
    *memo = MEMO.replace(previous);
    result
}

/// A kind as a type, so that reading a watched object can convert it (see [`Watched`]).
pub(super) trait KindType: Clone + std::fmt::Debug + Send + Sync + 'static {
    const KIND: Kind;
}

macro_rules! kind_types {
    ($($name:ident => $kind:ident),* $(,)?) => {$(
        #[derive(Clone, Copy, Debug)]
        pub(super) struct $name;
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
    PodGroupType => PodGroup,
    WorkloadType => Workload,
);

/// The next of `events`, read with `memo` installed for its conversions.
pub(super) async fn next_with_memo<S: futures::Stream + Unpin>(
    events: &mut S,
    memo: &mut Option<Box<Memo>>,
) -> Option<S::Item> {
    std::future::poll_fn(|cx| with_memo_installed(memo, || events.poll_next_unpin(cx))).await
}

/// `future`'s output, its conversions made with `memo` installed.
pub(super) async fn with_memo_until_done<F: Future>(
    future: F,
    memo: &mut Option<Box<Memo>>,
) -> F::Output {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| with_memo_installed(memo, || future.as_mut().poll(cx))).await
}

/// The model object of a watched object; `None` (counted and logged) when the builder
/// refused it.
pub(super) fn convert<K: KindType>(watched: Watched<K>) -> Option<Object> {
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

/// A watched object, converted as it is read: the model object (or why the builder
/// refused it) and the identity the watcher and the logs need. The JSON tree it was read
/// into is dropped at once, not after the whole page of a list is read: a pod's tree is
/// a few hundred small allocations, and a page's 500 trees, freed while the cache
/// allocated the pods it keeps, left their slabs part full and resident.
#[derive(Clone, Debug)]
pub(super) struct Watched<K> {
    pub(super) metadata: ObjectMeta,
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
}
