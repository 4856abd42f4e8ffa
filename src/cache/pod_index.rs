//! The held pods by uid and by namespace/name. Each index is a hash set of the pods
//! themselves (one pointer a slot) looked up through borrowed keys, rather than a map
//! from copies of the key strings: at a million pods that is ~60 bytes a pod less.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use triomphe::Arc;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;

use crate::model::Pod;

/// A held pod, hashed and compared by its uid.
#[derive(Clone)]
struct ByUid(Arc<Pod>);

impl Hash for ByUid {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.uid().hash(state)
    }
}

impl PartialEq for ByUid {
    fn eq(&self, other: &Self) -> bool {
        self.0.uid() == other.0.uid()
    }
}

impl Eq for ByUid {}

impl Borrow<str> for ByUid {
    fn borrow(&self) -> &str {
        self.0.uid()
    }
}

/// What the name index is looked up by: a namespace and a name, borrowed from wherever.
trait NamespacedName {
    fn key(&self) -> (&str, &str);
}

impl NamespacedName for (&str, &str) {
    fn key(&self) -> (&str, &str) {
        (self.0, self.1)
    }
}

impl Hash for dyn NamespacedName + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

impl PartialEq for dyn NamespacedName + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for dyn NamespacedName + '_ {}

/// A held pod, hashed and compared by namespace/name.
#[derive(Clone)]
struct ByName(Arc<Pod>);

impl NamespacedName for ByName {
    fn key(&self) -> (&str, &str) {
        (&self.0.namespace, self.0.name())
    }
}

impl Hash for ByName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self as &dyn NamespacedName).hash(state)
    }
}

impl PartialEq for ByName {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for ByName {}

impl<'a> Borrow<dyn NamespacedName + 'a> for ByName {
    fn borrow(&self) -> &(dyn NamespacedName + 'a) {
        self
    }
}

#[derive(Default)]
pub(super) struct PodIndex {
    by_uid: DashMap<ByUid, (), ahash::RandomState>,
    by_name: DashMap<ByName, (), ahash::RandomState>,
}

impl PodIndex {
    pub fn get(&self, uid: &str) -> Option<Arc<Pod>> {
        self.by_uid.get(uid).map(|held| held.key().0.clone())
    }

    pub fn get_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        let key: &dyn NamespacedName = &(namespace, name);
        self.by_name.get(key).map(|held| held.key().0.clone())
    }

    /// Holds `pod` under its uid and its name, in place of what either held. The caller
    /// keeps the two consistent: a name belongs to one uid, a uid to one name.
    pub fn insert(&self, pod: Arc<Pod>) {
        match self.by_uid.entry(ByUid(pod.clone())) {
            // An occupied entry keeps its key unless replaced: the key is the pod.
            Entry::Occupied(held) => {
                held.replace_entry(());
            }
            Entry::Vacant(slot) => {
                slot.insert(());
            }
        }
        match self.by_name.entry(ByName(pod)) {
            Entry::Occupied(held) => {
                held.replace_entry(());
            }
            Entry::Vacant(slot) => {
                slot.insert(());
            }
        }
    }

    /// Drops `pod` (held under its uid and name) from both indexes.
    pub fn remove(&self, pod: &Pod) {
        self.by_uid.remove(pod.uid());
        let key: &dyn NamespacedName = &(&*pod.namespace, pod.name());
        self.by_name.remove(key);
    }

    pub fn len(&self) -> usize {
        self.by_uid.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(namespace: &str, name: &str, uid: &str, rv: u64) -> Arc<Pod> {
        let mut pod = Pod::new(namespace, name, uid);
        pod.resource_version = rv;
        Arc::new(pod.finish())
    }

    #[test]
    fn finds_the_latest_pod_by_uid_and_by_name_until_removed() {
        let index = PodIndex::default();
        index.insert(pod("ns", "a", "uid-a", 1));
        index.insert(pod("ns", "b", "uid-b", 1));
        index.insert(pod("other", "a", "uid-c", 1));
        // A newer version replaces the held pod in both indexes.
        index.insert(pod("ns", "a", "uid-a", 2));
        assert_eq!(index.len(), 3);
        assert_eq!(index.get("uid-a").unwrap().resource_version, 2);
        assert_eq!(index.get_by_name("ns", "a").unwrap().resource_version, 2);
        assert_eq!(index.get_by_name("other", "a").unwrap().uid(), "uid-c");
        assert!(index.get_by_name("ns", "c").is_none());
        assert!(index.get("uid-x").is_none());

        index.remove(&index.get("uid-a").unwrap());
        assert!(index.get("uid-a").is_none());
        assert!(index.get_by_name("ns", "a").is_none());
        assert_eq!(index.get_by_name("ns", "b").unwrap().uid(), "uid-b");
        assert_eq!(index.len(), 2);
    }
}
