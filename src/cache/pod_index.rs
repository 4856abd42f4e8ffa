//! The held pods by uid and by namespace/name. Each index is a hash set of the pods
//! themselves (one pointer a slot) looked up through borrowed keys, rather than a map
//! from copies of the key strings: at a million pods that is ~60 bytes a pod less.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use triomphe::Arc;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;

use crate::model::{Pod, key_hash};

/// What the uid index is looked up by: a uid and its [`key_hash`], from wherever.
///
/// Keys hash by their key hashes rather than by the strings: when an index grows, every
/// pod in it is rehashed, and reading a hash the pod keeps costs one cache miss less a
/// pod than reading its identity string (a tenth of a bulk load's applier time).
trait Uid {
    fn uid(&self) -> &str;
    fn uid_hash(&self) -> u32;
}

impl Hash for dyn Uid + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u32(self.uid_hash())
    }
}

impl PartialEq for dyn Uid + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.uid() == other.uid()
    }
}

impl Eq for dyn Uid + '_ {}

/// A uid looked up.
struct UidQuery<'a>(&'a str);

impl Uid for UidQuery<'_> {
    fn uid(&self) -> &str {
        self.0
    }

    fn uid_hash(&self) -> u32 {
        key_hash(self.0)
    }
}

/// A held pod, hashed and compared by its uid.
#[derive(Clone)]
struct ByUid(Arc<Pod>);

impl Uid for ByUid {
    fn uid(&self) -> &str {
        self.0.uid()
    }

    fn uid_hash(&self) -> u32 {
        self.0.key_hashes().uid
    }
}

impl Hash for ByUid {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self as &dyn Uid).hash(state)
    }
}

impl PartialEq for ByUid {
    fn eq(&self, other: &Self) -> bool {
        self.uid() == other.uid()
    }
}

impl Eq for ByUid {}

impl<'a> Borrow<dyn Uid + 'a> for ByUid {
    fn borrow(&self) -> &(dyn Uid + 'a) {
        self
    }
}

/// What the name index is looked up by: a namespace, a name and the name's
/// [`key_hash`], from wherever (hashed as [`Uid`] is, for the same reason).
trait NamespacedName {
    fn key(&self) -> (&str, &str);
    fn name_hash(&self) -> u32;
}

/// A namespace and name looked up.
struct NameQuery<'a>(&'a str, &'a str);

impl NamespacedName for NameQuery<'_> {
    fn key(&self) -> (&str, &str) {
        (self.0, self.1)
    }

    fn name_hash(&self) -> u32 {
        key_hash(self.1)
    }
}

impl Hash for dyn NamespacedName + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Namespaces are few and shared: reading one is a cache hit.
        self.key().0.hash(state);
        state.write_u32(self.name_hash())
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

    fn name_hash(&self) -> u32 {
        self.0.key_hashes().name
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
        let key: &dyn Uid = &UidQuery(uid);
        self.by_uid.get(key).map(|held| held.key().0.clone())
    }

    pub fn get_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        let key: &dyn NamespacedName = &NameQuery(namespace, name);
        self.by_name.get(key).map(|held| held.key().0.clone())
    }

    /// The slots for `pod` under its uid and under its namespace/name, with what each
    /// holds: one lookup in each index for a change, which [`Slots::fill`] or
    /// [`Slots::empty`] then makes. Holds both slots' shards locked until dropped: the
    /// caller is the one writer (under the cache's table lock) and reads no index meanwhile.
    pub fn slots(&self, pod: &Arc<Pod>) -> Slots<'_> {
        Slots {
            by_uid: self.by_uid.entry(ByUid(pod.clone())),
            by_name: self.by_name.entry(ByName(pod.clone())),
        }
    }

    /// Drops `pod` (held under its uid and name) from both indexes.
    pub fn remove(&self, pod: &Pod) {
        let key: &dyn Uid = &UidQuery(pod.uid());
        self.by_uid.remove(key);
        let key: &dyn NamespacedName = &NameQuery(&pod.namespace, pod.name());
        self.by_name.remove(key);
    }

    pub fn len(&self) -> usize {
        self.by_uid.len()
    }
}

/// A pod's slots in both indexes (see [`PodIndex::slots`]).
pub(super) struct Slots<'a> {
    by_uid: Entry<'a, ByUid, ()>,
    by_name: Entry<'a, ByName, ()>,
}

impl Slots<'_> {
    /// The pod held under the uid.
    pub fn by_uid(&self) -> Option<&Arc<Pod>> {
        match &self.by_uid {
            Entry::Occupied(held) => Some(&held.key().0),
            Entry::Vacant(_) => None,
        }
    }

    /// The pod held under the namespace/name.
    pub fn by_name(&self) -> Option<&Arc<Pod>> {
        match &self.by_name {
            Entry::Occupied(held) => Some(&held.key().0),
            Entry::Vacant(_) => None,
        }
    }

    /// Holds the pod in both, in place of what either held. The caller keeps the two
    /// indexes consistent: a name belongs to one uid, a uid to one name.
    pub fn fill(self) {
        match self.by_uid {
            // An occupied entry keeps its key unless replaced: the key is the pod.
            Entry::Occupied(held) => drop(held.replace_entry(())),
            Entry::Vacant(slot) => drop(slot.insert(())),
        }
        match self.by_name {
            Entry::Occupied(held) => drop(held.replace_entry(())),
            Entry::Vacant(slot) => drop(slot.insert(())),
        }
    }

    /// Drops what both hold.
    pub fn empty(self) {
        if let Entry::Occupied(held) = self.by_uid {
            held.remove();
        }
        if let Entry::Occupied(held) = self.by_name {
            held.remove();
        }
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
        let insert = |pod: Arc<Pod>| index.slots(&pod).fill();
        insert(pod("ns", "a", "uid-a", 1));
        insert(pod("ns", "b", "uid-b", 1));
        insert(pod("other", "a", "uid-c", 1));
        // A newer version replaces the held pod in both indexes.
        let newer = pod("ns", "a", "uid-a", 2);
        let slots = index.slots(&newer);
        assert_eq!(slots.by_uid().unwrap().resource_version, 1);
        assert_eq!(slots.by_name().unwrap().uid(), "uid-a");
        slots.fill();
        assert_eq!(index.len(), 3);
        assert_eq!(index.get("uid-a").unwrap().resource_version, 2);
        assert_eq!(index.get_by_name("ns", "a").unwrap().resource_version, 2);
        assert_eq!(index.get_by_name("other", "a").unwrap().uid(), "uid-c");
        assert!(index.get_by_name("ns", "c").is_none());
        assert!(index.get("uid-x").is_none());

        index.remove(&index.get("uid-a").unwrap());
        assert!(index.get("uid-a").is_none());
        // Emptying the slots of a new name and uid changes nothing; of held ones, drops them.
        index.slots(&pod("ns", "c", "uid-x", 1)).empty();
        assert_eq!(index.len(), 2);
        let slots = index.slots(&pod("ns", "b", "uid-b", 3));
        assert!(slots.by_uid().is_some() && slots.by_name().is_some());
        slots.empty();
        assert!(index.get("uid-b").is_none() && index.get_by_name("ns", "b").is_none());
        index.slots(&pod("ns", "b", "uid-b", 4)).fill();
        assert!(index.get_by_name("ns", "a").is_none());
        assert_eq!(index.get_by_name("ns", "b").unwrap().uid(), "uid-b");
        assert_eq!(index.len(), 2);
    }
}
