//! The application core as the watches' [`Mirror`]: what the watches deliver is applied
//! through the core's one dispatch, as every update call is, and the core turns listed
//! once every kind is.

use std::sync::Arc;

use crate::app::{AnyChange, App, AppError, Change, ObjectKey as AppKey, PodArc};
use crate::model::decode::Object;

use super::{Kind, Mirror, ObjectKey};

/// The core, fed by the watches (its one writer in Kubernetes mode).
pub struct AppMirror {
    app: Arc<App>,
}

impl AppMirror {
    /// The watches' writer into `app`.
    pub fn new(app: Arc<App>) -> Self {
        AppMirror { app }
    }
}

fn change_of(object: Object) -> AnyChange {
    match object {
        Object::Node(node) => AnyChange::Node(Change::Upsert(node)),
        Object::Pod(pod) => AnyChange::Pod(Change::Upsert(PodArc::new(pod))),
        Object::Pdb(pdb) => AnyChange::Pdb(Change::Upsert(pdb)),
        Object::PriorityClass(class) => AnyChange::PriorityClass(Change::Upsert(class)),
        Object::Namespace(ns) => AnyChange::Namespace(Change::Upsert(ns)),
    }
}

impl Mirror for AppMirror {
    fn upsert(&self, objects: Vec<Object>) {
        self.app
            .apply_in_order(objects.into_iter().map(change_of), |result| {
                if let Err(error) = result {
                    tracing::warn!(%error, "watched object not applied");
                }
            });
    }

    fn delete(&self, key: &ObjectKey, uid: Option<&str>) {
        let key_of = AppKey {
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            uid: uid.map(str::to_string),
        };
        let change = match key.kind {
            Kind::Node => AnyChange::Node(Change::Delete(key_of)),
            Kind::Pod => AnyChange::Pod(Change::Delete(key_of)),
            Kind::PodDisruptionBudget => AnyChange::Pdb(Change::Delete(key_of)),
            Kind::PriorityClass => AnyChange::PriorityClass(Change::Delete(key_of)),
            Kind::Namespace => AnyChange::Namespace(Change::Delete(key_of)),
        };
        self.app.apply_in_order([change], |result| match result {
            // Gone already (deleted and relisted in between) is what a delete wants.
            Ok(_) | Err(AppError::NotFound(_)) => {}
            Err(error) => tracing::warn!(
                kind = key.kind.name(),
                namespace = %key.namespace,
                name = %key.name,
                %error,
                "watched change not applied"
            ),
        });
    }

    fn for_each_key(&self, kind: Kind, each: &mut dyn FnMut(&str, &str)) {
        let cache = &self.app.cache;
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
        // The lists' pages are decoded and dropped: hand their memory back, as a bulk
        // Sync does (this is the applier thread, whose cache held the most), with the
        // room the lists' small batches left in node entries.
        self.app.cache.end_bulk_load();
        self.app.cache.compact_nodes();
        crate::ops::memory::flush_thread_cache();
        std::thread::Builder::new()
            .name("release-memory".into())
            .spawn(crate::ops::memory::release_free_memory)
            .map(drop)
            .unwrap_or_else(|error| tracing::warn!(%error, "cannot release freed memory"));
        self.app.set_listed();
    }
}
