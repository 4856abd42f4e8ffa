//! The application core as the watches' [`Mirror`]: what the watches deliver is applied
//! through the core's one dispatch, as every update call is, and the core turns listed
//! once every kind is.
//!
//! A pod whose name the core holds under another uid replaces it: the API server deleted
//! that pod and created this one (a StatefulSet's pod restarted, say), maybe while the
//! watch was cut off, so the one held is gone. Push mode's updates keep refusing such a
//! pod: there, the writer may simply be wrong.

use std::collections::HashSet;
use std::hash::BuildHasher as _;
use std::sync::Arc;

use crate::app::{AnyChange, App, AppError, Change, ObjectKey as AppKey};
use crate::model::Pod;
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

impl AppMirror {
    fn apply(&self, changes: &mut Vec<AnyChange>) {
        self.app.apply_in_order(changes.drain(..), |result| {
            if let Err(error) = result {
                tracing::warn!(%error, "watched object not applied");
            }
        });
    }

    /// The delete that goes before `pod` when the core holds its name under another uid.
    fn replaced_by(&self, pod: &Pod) -> Option<AnyChange> {
        let held = self.app.cache.get_pod_by_name(&pod.namespace, pod.name())?;
        if held.uid() == pod.uid() {
            return None;
        }
        tracing::debug!(
            namespace = %pod.namespace,
            pod = %pod.name(),
            old_uid = %held.uid(),
            uid = %pod.uid(),
            "pod recreated under the same name, replacing the one held"
        );
        Some(AnyChange::Pod(Change::Delete(AppKey {
            namespace: pod.namespace.to_string(),
            name: pod.name().to_string(),
            uid: Some(held.uid().to_string()),
        })))
    }
}

impl Mirror for AppMirror {
    fn upsert(&self, objects: Vec<Object>) {
        let mut changes = Vec::with_capacity(objects.len());
        // Hashes of the pod names in `changes`: a name twice in one batch (never from one
        // watch, which deletes between) applies what came before first, so the core is
        // asked about it afresh.
        let mut names = HashSet::new();
        let hasher = hashbrown::DefaultHashBuilder::default();
        for object in objects {
            if let Object::Pod(pod) = &object {
                let name = hasher.hash_one((&*pod.namespace, pod.name()));
                if !names.insert(name) {
                    self.apply(&mut changes);
                    names.clear();
                    names.insert(name);
                }
                changes.extend(self.replaced_by(pod));
            }
            changes.push(AnyChange::from(object));
        }
        self.apply(&mut changes);
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
            Kind::PodGroup => AnyChange::PodGroup(Change::Delete(key_of)),
            Kind::Workload => AnyChange::Workload(Change::Delete(key_of)),
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
            Kind::PodGroup => cache
                .pod_groups()
                .groups()
                .for_each(|g| each(&g.namespace, &g.name)),
            Kind::Workload => cache
                .pod_groups()
                .workloads()
                .for_each(|w| each(&w.namespace, &w.name)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::AppConfig;
    use crate::model::decode;

    fn pod(uid: &str, node: &str, cpu: &str) -> Object {
        let value = serde_json::json!({
            "metadata": {"name": "web-0", "namespace": "default", "uid": uid},
            "spec": {"nodeName": node, "containers": [{"name": "c",
                     "resources": {"requests": {"cpu": cpu}}}]}
        });
        Object::Pod(decode::decode_pod(&value).expect("a pod"))
    }

    fn held(app: &App) -> Vec<(String, Option<String>)> {
        let mut pods: Vec<_> = app
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

    #[test]
    fn a_pod_recreated_under_its_name_replaces_the_one_held_and_goes_with_its_delete() {
        let app = Arc::new(App::new(&AppConfig {
            mirrored: true,
            ..AppConfig::default()
        }));
        let mirror = AppMirror::new(app.clone());
        mirror.upsert(vec![pod("uid-old", "n1", "1")]);
        assert_eq!(held(&app), [("uid-old".into(), Some("n1".into()))]);

        // The new pod alone, as a watch event or a relist brings it.
        mirror.upsert(vec![pod("uid-new", "n2", "2")]);
        assert_eq!(held(&app), [("uid-new".into(), Some("n2".into()))]);

        // Both in one batch (an old version queued behind a relist's): the last wins.
        mirror.upsert(vec![pod("uid-a", "n1", "1"), pod("uid-b", "n3", "1")]);
        assert_eq!(held(&app), [("uid-b".into(), Some("n3".into()))]);

        let key = ObjectKey {
            kind: Kind::Pod,
            namespace: "default".into(),
            name: "web-0".into(),
        };
        mirror.delete(&key, Some("uid-b"));
        assert!(held(&app).is_empty(), "{:?}", held(&app));
    }
}
