//! Kubernetes mode's writer: what the watches of `crate::kubernetes` deliver is applied
//! through the same apply function per kind as every update call, and the server turns
//! SERVING once every kind is listed.

use std::collections::HashSet;
use std::hash::BuildHasher as _;
use std::sync::Arc;

use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::kubernetes::{Kind, Mirror, ObjectKey};
use crate::model::Pod;
use crate::model::decode::Object;

use super::pb;
use super::service::State;
use super::service::apply::{Change, PodArc};

/// The server's state as the watches' [`Mirror`].
pub(super) struct StateMirror {
    pub state: Arc<State>,
    pub health: HealthReporter,
    /// Where health is set from the watches' applier thread.
    pub runtime: tokio::runtime::Handle,
}

fn object_ref(key: &ObjectKey, uid: Option<&str>) -> pb::ObjectRef {
    pb::ObjectRef {
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        uid: uid.map(str::to_string),
    }
}

impl StateMirror {
    fn log_refused(key: &ObjectKey, error: &super::errors::ApiError) {
        tracing::warn!(kind = key.kind.name(), namespace = %key.namespace, name = %key.name, %error, "watched change not applied");
    }
}

impl Mirror for StateMirror {
    fn upsert(&self, objects: Vec<Object>) {
        let mut pods = PodRun::default();
        for object in objects {
            let result = match object {
                Object::Pod(pod) => {
                    pods.push(&self.state, pod);
                    continue;
                }
                other => {
                    // Pods wait for nothing but keep their order with each other.
                    pods.apply(&self.state);
                    match other {
                        Object::Node(node) => self.state.apply_node(Change::Upsert(node)),
                        Object::Pdb(pdb) => self.state.apply_pdb(Change::Upsert(pdb)),
                        Object::PriorityClass(class) => {
                            self.state.apply_priority_class(Change::Upsert(class))
                        }
                        Object::Namespace(ns) => self.state.apply_namespace(Change::Upsert(ns)),
                        Object::Pod(_) => continue,
                    }
                }
            };
            if let Err(error) = result {
                tracing::warn!(%error, "watched object not applied");
            }
        }
        pods.apply(&self.state);
    }

    fn delete(&self, key: &ObjectKey, uid: Option<&str>) {
        let r = object_ref(key, uid);
        let result = match key.kind {
            Kind::Node => self.state.apply_node(Change::Delete(r)).map(drop),
            Kind::Pod => self.state.apply_pod(Change::Delete(r)).map(drop),
            Kind::PodDisruptionBudget => self.state.apply_pdb(Change::Delete(r)).map(drop),
            Kind::PriorityClass => self.state.apply_priority_class(Change::Delete(r)).map(drop),
            Kind::Namespace => self.state.apply_namespace(Change::Delete(r)).map(drop),
        };
        // Gone already (deleted and relisted in between) is what a delete wants.
        if let Err(error) = result
            && error.code() != tonic::Code::NotFound
        {
            Self::log_refused(key, &error);
        }
    }

    fn for_each_key(&self, kind: Kind, each: &mut dyn FnMut(&str, &str)) {
        let cache = &self.state.cache;
        match kind {
            Kind::Node => cache.node_names().iter().for_each(|n| each("", n)),
            Kind::Pod => cache
                .pods()
                .iter()
                .for_each(|p| each(&p.namespace, p.name())),
            Kind::PodDisruptionBudget => cache
                .pdb_keys()
                .iter()
                .for_each(|(namespace, name)| each(namespace, name)),
            Kind::PriorityClass => cache.priority_classes().names().for_each(|n| each("", n)),
            Kind::Namespace => cache.namespaces().names().for_each(|n| each("", n)),
        }
    }

    fn ready(&self) {
        self.state.set_listed();
        // The lists' pages are decoded and dropped: hand their memory back, as a bulk
        // Sync does (this is the applier thread, whose cache held the most), with the
        // room the lists' small batches left in node entries.
        self.state.cache.end_bulk_load();
        self.state.cache.compact_nodes();
        crate::ops::memory::flush_thread_cache();
        self.runtime
            .spawn_blocking(crate::ops::memory::release_free_memory);
        let health = self.health.clone();
        self.runtime
            .spawn(async move { super::set_health(&health, ServingStatus::Serving).await });
    }
}

/// Watched pods on their way to the cache as one batch. A pod whose name the cache holds
/// under another uid replaces it: the API server deleted that pod and created this one
/// (a StatefulSet's pod restarted, say), maybe while the watch was cut off, so the one
/// held is gone. Push mode's updates keep refusing such a pod: there, the writer may
/// simply be wrong.
#[derive(Default)]
struct PodRun {
    changes: Vec<Change<PodArc>>,
    /// Hashes of the names in `changes`: a name twice in one run (never from one watch,
    /// which deletes between) sends the run first, so the cache is asked about it afresh.
    names: HashSet<u64>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl PodRun {
    fn push(&mut self, state: &State, pod: Pod) {
        let name_hash = self.hasher.hash_one((&*pod.namespace, pod.name()));
        if !self.names.insert(name_hash) {
            self.apply(state);
            self.names.insert(name_hash);
        }
        if let Some(held) = state.cache.get_pod_by_name(&pod.namespace, pod.name())
            && held.uid() != pod.uid()
        {
            tracing::debug!(
                namespace = %pod.namespace,
                pod = %pod.name(),
                old_uid = %held.uid(),
                uid = %pod.uid(),
                "pod recreated under the same name, replacing the one held"
            );
            self.changes.push(Change::Delete(pb::ObjectRef {
                namespace: pod.namespace.to_string(),
                name: pod.name().to_string(),
                uid: Some(held.uid().to_string()),
            }));
        }
        self.changes.push(Change::Upsert(PodArc::new(pod)));
    }

    /// Sends the run to the cache.
    fn apply(&mut self, state: &State) {
        self.names.clear();
        state.apply_watched_pods(std::mem::take(&mut self.changes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::decode;

    fn pod(uid: &str, node: &str, cpu: &str) -> Object {
        let value = serde_json::json!({
            "metadata": {"name": "web-0", "namespace": "default", "uid": uid},
            "spec": {"nodeName": node, "containers": [{"name": "c",
                     "resources": {"requests": {"cpu": cpu}}}]}
        });
        Object::Pod(decode::decode_pod(&value).expect("a pod"))
    }

    fn held(state: &State) -> Vec<(String, Option<String>)> {
        let mut pods: Vec<_> = state
            .cache
            .pods()
            .iter()
            .map(|p| {
                (
                    p.uid().to_string(),
                    p.node_name.as_deref().map(str::to_string),
                )
            })
            .collect();
        pods.sort();
        pods
    }

    #[tokio::test]
    async fn a_pod_recreated_under_its_name_replaces_the_one_held_and_goes_with_its_delete() {
        let state = Arc::new(State::new(&super::super::ServeConfig::default()));
        let mirror = StateMirror {
            state: state.clone(),
            health: tonic_health::server::health_reporter().0,
            runtime: tokio::runtime::Handle::current(),
        };
        mirror.upsert(vec![pod("uid-old", "n1", "1")]);
        assert_eq!(held(&state), [("uid-old".into(), Some("n1".into()))]);

        // The new pod alone, as a watch event or a relist brings it.
        mirror.upsert(vec![pod("uid-new", "n2", "2")]);
        assert_eq!(held(&state), [("uid-new".into(), Some("n2".into()))]);

        // Both in one batch (an old version queued behind a relist's): the last wins.
        mirror.upsert(vec![pod("uid-a", "n1", "1"), pod("uid-b", "n3", "1")]);
        assert_eq!(held(&state), [("uid-b".into(), Some("n3".into()))]);

        let key = ObjectKey {
            kind: Kind::Pod,
            namespace: "default".into(),
            name: "web-0".into(),
        };
        mirror.delete(&key, Some("uid-b"));
        assert!(held(&state).is_empty(), "{:?}", held(&state));
    }
}
