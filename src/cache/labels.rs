//! Pod labels as interned `(namespace, key, value)` ids.
//!
//! The per-node label index counts pods by id, so a decision resolves a selector's label
//! to an id once and then reads each node's count with an integer probe, instead of
//! hashing and comparing three strings per node; copying a node entry copies a table of
//! plain integers instead of cloning three `Arc<str>` per entry.
//!
//! Ids are never reused: an id whose last pod is gone is forgotten, and the label gets a
//! new id if it comes back, so a snapshot taken earlier never reads another label's
//! counts under its ids. Snapshots keep the id table as it was (a persistent map, O(1) to
//! clone), so their lookups agree with their node entries.

use std::hash::{BuildHasher, Hash};

use smallvec::SmallVec;

use crate::model::{Labels, Pod, Str};

/// The interned id of one label key and value.
pub type LabelId = u64;

/// The ids of one pod's labels, in `pod.labels.iter()` order.
pub(crate) type PodLabelIds = SmallVec<[LabelId; 8]>;

/// Labels whose `(namespace, key, value)` hash to the same 64 bits (almost always one).
type Bucket = SmallVec<[(Str, Str, Str, LabelId); 1]>;

/// The read side: label → id, as of one cache revision.
#[derive(Clone, Debug, Default)]
pub struct LabelIds {
    hasher: ahash::RandomState,
    buckets: imbl::HashMap<u64, Bucket>,
    /// Ids handed out by [`LabelIds::get_or_add`] to an edited snapshot so far.
    added: u64,
}

/// Ids an edited snapshot gives labels the cache has not seen start here: far above any
/// the cache hands out, so the two never meet.
const EDIT_IDS_FROM: LabelId = 1 << 62;

impl LabelIds {
    fn hash(&self, namespace: &str, key: &str, value: &str) -> u64 {
        let mut state = self.hasher.build_hasher();
        (namespace, key, value).hash(&mut state);
        std::hash::Hasher::finish(&state)
    }

    /// The id of pods labelled `key=value` in `namespace`; `None` when no pod carries it.
    pub fn get(&self, namespace: &str, key: &str, value: &str) -> Option<LabelId> {
        self.lookup(self.hash(namespace, key, value), namespace, key, value)
    }

    /// The id of `key=value` in `namespace`, a new one (of this copy alone) when no pod
    /// carries it: an edited snapshot adds pods the cache never held.
    pub(super) fn get_or_add(&mut self, namespace: &Str, key: &Str, value: &Str) -> LabelId {
        let hash = self.hash(namespace, key, value);
        if let Some(id) = self.lookup(hash, namespace, key, value) {
            return id;
        }
        self.added += 1;
        let id = EDIT_IDS_FROM + self.added;
        self.buckets.entry(hash).or_default().push((
            namespace.clone(),
            key.clone(),
            value.clone(),
            id,
        ));
        id
    }

    fn lookup(&self, hash: u64, namespace: &str, key: &str, value: &str) -> Option<LabelId> {
        self.buckets.get(&hash)?.iter().find_map(|(n, k, v, id)| {
            (&**n == namespace && &**k == key && &**v == value).then_some(*id)
        })
    }
}

/// The write side, owned by the node table (so guarded by the writer lock): ids with the
/// number of indexed pods carrying each.
#[derive(Debug, Default)]
pub(crate) struct LabelInterner {
    ids: LabelIds,
    /// id → (pods carrying it, its hash).
    refs: ahash::AHashMap<LabelId, (u32, u64)>,
    next: LabelId,
    /// Ids of label sets seen lately, by the addresses of the set and its namespace. Pods
    /// of one template share both once interned (`Pod::compact`), so most skip hashing
    /// three strings per label and probing the id table. An entry holds its set and
    /// namespace, so neither address can be reused for other strings while it is kept,
    /// and all entries go whenever an id is forgotten, so every id kept is live.
    recent: hashbrown::HashMap<(usize, usize), (Labels, Str, PodLabelIds)>,
}

/// Label sets whose ids are kept at most (then all are forgotten and it starts over).
const RECENT_CAPACITY: usize = 4096;

fn recent_key(pod: &Pod) -> (usize, usize) {
    (
        pod.labels.addr(),
        Str::as_ptr(&pod.namespace).cast::<u8>() as usize,
    )
}

impl LabelInterner {
    pub(super) fn read(&self) -> &LabelIds {
        &self.ids
    }

    /// Ids for the pod's labels, each counted once more (created when new).
    pub(super) fn acquire(&mut self, pod: &Pod) -> PodLabelIds {
        let key = recent_key(pod);
        if let Some((_, _, ids)) = self.recent.get(&key) {
            for id in ids {
                if let Some((count, _)) = self.refs.get_mut(id) {
                    *count += 1;
                }
            }
            return ids.clone();
        }
        let ids = self.acquire_by_value(pod);
        if self.recent.len() >= RECENT_CAPACITY {
            self.recent.clear();
        }
        self.recent.insert(
            key,
            (pod.labels.clone(), pod.namespace.clone(), ids.clone()),
        );
        ids
    }

    fn acquire_by_value(&mut self, pod: &Pod) -> PodLabelIds {
        let namespace = &pod.namespace;
        pod.labels
            .iter()
            .map(|(key, value)| {
                let hash = self.ids.hash(namespace, key, value);
                let id = match self.ids.lookup(hash, namespace, key, value) {
                    Some(id) => id,
                    None => {
                        self.next += 1;
                        let id = self.next;
                        self.ids.buckets.entry(hash).or_default().push((
                            namespace.clone(),
                            key.clone(),
                            value.clone(),
                            id,
                        ));
                        id
                    }
                };
                self.refs.entry(id).or_insert((0, hash)).0 += 1;
                id
            })
            .collect()
    }

    /// Ids of a pod whose labels were acquired before (`None` for a label that was not,
    /// which the index then skips).
    pub(super) fn ids_of(&self, pod: &Pod) -> SmallVec<[Option<LabelId>; 8]> {
        if let Some((_, _, ids)) = self.recent.get(&recent_key(pod)) {
            return ids.iter().copied().map(Some).collect();
        }
        pod.labels
            .iter()
            .map(|(key, value)| self.ids.get(&pod.namespace, key, value))
            .collect()
    }

    /// Counts the ids once less, forgetting those no pod carries any more.
    pub(super) fn release(&mut self, ids: impl IntoIterator<Item = LabelId>) {
        for id in ids {
            let Some((count, hash)) = self.refs.get_mut(&id) else {
                continue;
            };
            *count -= 1;
            if *count > 0 {
                continue;
            }
            let hash = *hash;
            self.refs.remove(&id);
            self.recent.clear();
            if let Some(bucket) = self.ids.buckets.get_mut(&hash) {
                bucket.retain(|entry| entry.3 != id);
                if bucket.is_empty() {
                    self.ids.buckets.remove(&hash);
                }
            }
        }
    }

    /// Distinct labels currently indexed.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.refs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(namespace: &str, labels: &[(&str, &str)]) -> Pod {
        let mut pod = Pod::new(namespace, "p", "u");
        pod.labels = labels.iter().copied().collect();
        pod
    }

    #[test]
    fn ids_are_shared_counted_and_never_reused() {
        let mut interner = LabelInterner::default();
        let a = interner.acquire(&pod("ns", &[("app", "web"), ("tier", "1")]));
        let b = interner.acquire(&pod("ns", &[("app", "web")]));
        let c = interner.acquire(&pod("other", &[("app", "web")]));
        assert_eq!(a[0], b[0]);
        assert_ne!(a[0], c[0], "the namespace is part of the label");
        assert_eq!(interner.len(), 3);
        let before = interner.read().clone();
        interner.release(a.iter().copied());
        assert_eq!(interner.read().get("ns", "app", "web"), Some(b[0]));
        assert_eq!(interner.read().get("ns", "tier", "1"), None);
        interner.release(b.iter().copied());
        assert_eq!(interner.read().get("ns", "app", "web"), None);
        // An older view keeps its ids; a label that comes back gets a new one.
        assert_eq!(before.get("ns", "app", "web"), Some(a[0]));
        let again = interner.acquire(&pod("ns", &[("app", "web")]));
        assert!(again[0] > c[0]);
        assert_eq!(interner.len(), 2);
        assert_eq!(
            interner
                .ids_of(&pod("ns", &[("app", "web"), ("x", "y")]))
                .as_slice(),
            &[Some(again[0]), None]
        );
    }

    #[test]
    fn ids_remembered_by_address_stay_counted_and_live() {
        let mut interner = LabelInterner::default();
        let template = pod("ns", &[("app", "web"), ("tier", "1")]);
        let first = interner.acquire(&template);
        // The same set and namespace again: answered from the recent ids, still counted.
        let second = interner.acquire(&template.clone());
        assert_eq!(first, second);
        assert_eq!(
            interner.ids_of(&template).as_slice(),
            &[Some(first[0]), Some(first[1])]
        );
        // An equal set at another address gets the same ids by value.
        assert_eq!(
            interner.acquire(&pod("ns", &[("app", "web"), ("tier", "1")])),
            first
        );
        interner.release(first.iter().copied());
        interner.release(second.iter().copied());
        assert_eq!(interner.read().get("ns", "app", "web"), Some(first[0]));
        interner.release(first.iter().copied());
        assert_eq!(interner.len(), 0);
        // Forgotten ids are not answered again for the same set: it gets new ones.
        let again = interner.acquire(&template);
        assert!(again.iter().all(|id| *id > first[1]));
        assert_eq!(interner.read().get("ns", "app", "web"), Some(again[0]));
        assert_eq!(
            interner.ids_of(&template).as_slice(),
            &[Some(again[0]), Some(again[1])]
        );
    }
}
