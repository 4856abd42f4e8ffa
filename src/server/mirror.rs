//! Kubernetes mode's writer: what the watches of `crate::kubernetes` deliver is applied
//! through the same apply function per kind as every update call, and the server turns
//! SERVING once every kind is listed.

use std::sync::Arc;

use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::kubernetes::{Kind, Mirror, ObjectKey};
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
        let mut pods = Vec::new();
        for object in objects {
            let result = match object {
                Object::Pod(pod) => {
                    pods.push(Change::Upsert(PodArc::new(pod)));
                    continue;
                }
                other => {
                    // Pods wait for nothing but keep their order with each other.
                    self.state.apply_watched_pods(std::mem::take(&mut pods));
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
        self.state.apply_watched_pods(pods);
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
