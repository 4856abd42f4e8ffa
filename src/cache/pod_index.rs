//! The held pods by uid and by namespace/name. Each index is a hash set of the pods
//! themselves (one pointer a slot) looked up by borrowed keys, rather than a map from
//! copies of the key strings: at a million pods that is ~60 bytes a pod less.
//!
//! A set hashes a held pod from the [`key_hash`]es it keeps, never from its strings, and
//! grows by hashing every pod first, then moving them: the first pass reads one pod after
//! another with nothing waiting on each read, so the processor overlaps their cache
//! misses, where hashbrown's own growth hashes and moves each pod in turn, each move
//! waiting on its read.

use hashbrown::HashTable;
use parking_lot::{RwLock, RwLockWriteGuard};
use triomphe::Arc;

use crate::model::{Pod, key_hash};

/// Shards per index: a reader locks one, while the one writer holds at most one of each
/// index.
const SHARDS: usize = 16;

#[derive(Default)]
pub(super) struct PodIndex {
    by_uid: PodSet<ByUid>,
    by_name: PodSet<ByName>,
}

impl PodIndex {
    pub(super) fn get(&self, uid: &str) -> Option<Arc<Pod>> {
        self.by_uid
            .find(uid_hash(key_hash(uid)), |held| held.uid() == uid)
    }

    pub(super) fn get_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.by_name
            .find(name_hash(namespace, key_hash(name)), |held| {
                held.name() == name && *held.namespace == *namespace
            })
    }

    /// The slots for `pod` under its uid and under its namespace/name, with what each
    /// holds: one lookup in each index for a change, which [`Slots::fill`] or
    /// [`Slots::empty`] then makes. Holds both slots' shards locked until dropped: the
    /// caller is the one writer (under the cache's table lock) and reads no index meanwhile.
    pub(super) fn slots(&self, pod: &Pod) -> Slots<'_> {
        Slots {
            by_uid: self.by_uid.slot(pod),
            by_name: self.by_name.slot(pod),
        }
    }

    /// Both indexes locked for a run of changes by the one writer: see [`LockedIndex`].
    pub(super) fn lock(&self) -> LockedIndex<'_> {
        LockedIndex {
            by_uid: self.by_uid.lock(),
            by_name: self.by_name.lock(),
        }
    }

    /// Drops `pod` (held under its uid and name) from both indexes.
    pub(super) fn remove(&self, pod: &Pod) {
        self.by_uid.remove(pod);
        self.by_name.remove(pod);
    }

    pub(super) fn len(&self) -> usize {
        self.by_uid.len()
    }

    /// Every held pod, in no particular order.
    pub(super) fn all(&self) -> Vec<Arc<Pod>> {
        self.by_uid.all()
    }
}

/// A 32-bit key hash (or two) spread over the 64 bits hashbrown reads: the low bits pick
/// the bucket, the top seven tell slots apart, the middle ones the shard (SplitMix64's
/// finalizer).
fn spread(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn uid_hash(uid_key_hash: u32) -> u64 {
    spread(u64::from(uid_key_hash))
}

/// Namespaces are few and shared: hashing one reads memory already cached.
fn name_hash(namespace: &str, name_key_hash: u32) -> u64 {
    spread(u64::from(key_hash(namespace)) << 32 | u64::from(name_key_hash))
}

/// What a set hashes its pods by.
trait Key {
    fn hash(pod: &Pod) -> u64;
    /// Whether `a` and `b` have the same key. The kept key hashes are compared first: a
    /// held pod whose slot only shares a tag with the key costs one read, not also a read
    /// of its identity string.
    fn same(a: &Pod, b: &Pod) -> bool;
}

#[derive(Default)]
struct ByUid;

impl Key for ByUid {
    fn hash(pod: &Pod) -> u64 {
        uid_hash(pod.key_hashes().uid)
    }

    fn same(a: &Pod, b: &Pod) -> bool {
        a.key_hashes().uid == b.key_hashes().uid && a.uid() == b.uid()
    }
}

#[derive(Default)]
struct ByName;

impl Key for ByName {
    fn hash(pod: &Pod) -> u64 {
        name_hash(&pod.namespace, pod.key_hashes().name)
    }

    fn same(a: &Pod, b: &Pod) -> bool {
        a.key_hashes().name == b.key_hashes().name
            && a.name() == b.name()
            && a.namespace == b.namespace
    }
}

type Shard = HashTable<Arc<Pod>>;

/// Held pods, by the hash `K` makes of each.
struct PodSet<K> {
    shards: Box<[RwLock<Shard>]>,
    key: std::marker::PhantomData<K>,
}

impl<K> Default for PodSet<K> {
    fn default() -> Self {
        PodSet {
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            key: std::marker::PhantomData,
        }
    }
}

impl<K: Key> PodSet<K> {
    fn shard(&self, hash: u64) -> &RwLock<Shard> {
        &self.shards[shard_of(hash)]
    }

    fn find(&self, hash: u64, eq: impl Fn(&Pod) -> bool) -> Option<Arc<Pod>> {
        self.shard(hash).read().find(hash, |held| eq(held)).cloned()
    }

    fn slot(&self, pod: &Pod) -> Slot<'_, K> {
        let hash = K::hash(pod);
        Slot::find(ShardRef::Locked(self.shard(hash).write()), hash, pod)
    }

    fn lock(&self) -> LockedSet<'_, K> {
        LockedSet {
            shards: std::array::from_fn(|i| self.shards[i].write()),
            key: std::marker::PhantomData,
        }
    }

    fn remove(&self, pod: &Pod) {
        let hash = K::hash(pod);
        if let Ok(held) = self
            .shard(hash)
            .write()
            .find_entry(hash, |held| K::same(held, pod))
        {
            held.remove();
        }
    }

    fn len(&self) -> usize {
        self.shards.iter().map(|shard| shard.read().len()).sum()
    }

    fn all(&self) -> Vec<Arc<Pod>> {
        self.shards
            .iter()
            .flat_map(|shard| shard.read().iter().cloned().collect::<Vec<_>>())
            .collect()
    }
}

fn shard_of(hash: u64) -> usize {
    (hash >> 32) as usize % SHARDS
}

/// Every shard of a set, locked (see [`LockedIndex`]).
struct LockedSet<'a, K> {
    shards: [RwLockWriteGuard<'a, Shard>; SHARDS],
    key: std::marker::PhantomData<K>,
}

impl<K: Key> LockedSet<'_, K> {
    fn slot(&mut self, pod: &Pod) -> Slot<'_, K> {
        let hash = K::hash(pod);
        Slot::find(
            ShardRef::Borrowed(&mut self.shards[shard_of(hash)]),
            hash,
            pod,
        )
    }

    /// Looks `pod` up and drops the answer: see [`LockedIndex::warm`].
    fn warm(&self, pod: &Pod) {
        let hash = K::hash(pod);
        let held = self.shards[shard_of(hash)].find(hash, |held| K::same(held, pod));
        std::hint::black_box(held.is_some());
    }
}

/// Both indexes with every shard locked, for a run of changes by the one writer.
///
/// A lone change locks its two shards, and unlocking them (a locked instruction) first
/// waits for every store before it, the slot just written among them, a cache miss in
/// an index of a million pods. A bulk load's applier takes its pods in runs under one
/// locking, and looks the whole run up first ([`LockedIndex::warm`]), so the misses of
/// those lookups overlap rather than come one at a time.
pub(super) struct LockedIndex<'a> {
    by_uid: LockedSet<'a, ByUid>,
    by_name: LockedSet<'a, ByName>,
}

impl LockedIndex<'_> {
    /// As [`PodIndex::slots`].
    pub(super) fn slots(&mut self, pod: &Pod) -> Slots<'_> {
        Slots {
            by_uid: self.by_uid.slot(pod),
            by_name: self.by_name.slot(pod),
        }
    }

    /// Brings the slots of `pods` into the processor's cache: independent lookups, whose
    /// misses the processor overlaps, where the changes after them each wait on their own.
    pub(super) fn warm<'p>(&self, pods: impl IntoIterator<Item = &'p Arc<Pod>>) {
        for pod in pods {
            self.by_uid.warm(pod);
            self.by_name.warm(pod);
        }
    }
}

/// A slot's shard: locked for the one change, or of a [`LockedIndex`].
enum ShardRef<'a> {
    Locked(RwLockWriteGuard<'a, Shard>),
    Borrowed(&'a mut Shard),
}

impl std::ops::Deref for ShardRef<'_> {
    type Target = Shard;

    fn deref(&self) -> &Shard {
        match self {
            ShardRef::Locked(guard) => guard,
            ShardRef::Borrowed(shard) => shard,
        }
    }
}

impl std::ops::DerefMut for ShardRef<'_> {
    fn deref_mut(&mut self) -> &mut Shard {
        match self {
            ShardRef::Locked(guard) => guard,
            ShardRef::Borrowed(shard) => shard,
        }
    }
}

/// One set's slot for a pod, its shard locked.
struct Slot<'a, K> {
    table: ShardRef<'a>,
    hash: u64,
    held: Option<Arc<Pod>>,
    key: std::marker::PhantomData<K>,
}

impl<'a, K: Key> Slot<'a, K> {
    fn find(table: ShardRef<'a>, hash: u64, pod: &Pod) -> Self {
        let held = table.find(hash, |held| K::same(held, pod)).cloned();
        Slot {
            table,
            hash,
            held,
            key: std::marker::PhantomData,
        }
    }

    fn fill(mut self, pod: Arc<Pod>) {
        match &self.held {
            Some(held) => {
                if let Some(slot) = self.table.find_mut(self.hash, |p| Arc::ptr_eq(p, held)) {
                    *slot = pod;
                }
            }
            None => {
                if self.table.len() == self.table.capacity() {
                    grow::<K>(&mut self.table);
                }
                self.table
                    .insert_unique(self.hash, pod, |held| K::hash(held));
            }
        }
    }

    fn empty(mut self) {
        if let Some(held) = &self.held
            && let Ok(entry) = self.table.find_entry(self.hash, |p| Arc::ptr_eq(p, held))
        {
            entry.remove();
        }
    }
}

/// Doubles `table`, hashing every pod before moving any (see the module docs).
fn grow<K: Key>(table: &mut Shard) {
    let held: Vec<Arc<Pod>> = table.drain().collect();
    let hashes: Vec<u64> = held.iter().map(|pod| K::hash(pod)).collect();
    let mut bigger = HashTable::with_capacity((held.len() * 2).max(16));
    for (pod, hash) in held.into_iter().zip(hashes) {
        bigger.insert_unique(hash, pod, |held| K::hash(held));
    }
    *table = bigger;
}

/// A pod's slots in both indexes (see [`PodIndex::slots`]).
pub(super) struct Slots<'a> {
    by_uid: Slot<'a, ByUid>,
    by_name: Slot<'a, ByName>,
}

impl Slots<'_> {
    /// The pod held under the uid.
    pub(super) fn by_uid(&self) -> Option<&Arc<Pod>> {
        self.by_uid.held.as_ref()
    }

    /// The pod held under the namespace/name.
    pub(super) fn by_name(&self) -> Option<&Arc<Pod>> {
        self.by_name.held.as_ref()
    }

    /// Holds the pod in both, in place of what either held. The caller keeps the two
    /// indexes consistent: a name belongs to one uid, a uid to one name.
    pub(super) fn fill(self, pod: Arc<Pod>) {
        self.by_uid.fill(pod.clone());
        self.by_name.fill(pod);
    }

    /// Drops what both hold.
    pub(super) fn empty(self) {
        self.by_uid.empty();
        self.by_name.empty();
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
        let insert = |pod: Arc<Pod>| index.slots(&pod).fill(pod.clone());
        insert(pod("ns", "a", "uid-a", 1));
        insert(pod("ns", "b", "uid-b", 1));
        insert(pod("other", "a", "uid-c", 1));
        // A newer version replaces the held pod in both indexes.
        let newer = pod("ns", "a", "uid-a", 2);
        let slots = index.slots(&newer);
        assert_eq!(slots.by_uid().unwrap().resource_version, 1);
        assert_eq!(slots.by_name().unwrap().uid(), "uid-a");
        slots.fill(newer.clone());
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
        let again = pod("ns", "b", "uid-b", 4);
        index.slots(&again).fill(again.clone());
        assert!(index.get_by_name("ns", "a").is_none());
        assert_eq!(index.get_by_name("ns", "b").unwrap().uid(), "uid-b");
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn a_locked_index_finds_and_fills_as_lone_changes_do() {
        let index = PodIndex::default();
        let pods: Vec<Arc<Pod>> = (0..300)
            .map(|i| {
                pod(
                    &format!("ns-{}", i % 3),
                    &format!("p-{i}"),
                    &format!("u-{i}"),
                    1,
                )
            })
            .collect();
        {
            let mut locked = index.lock();
            locked.warm(&pods);
            for pod in &pods {
                let slots = locked.slots(pod);
                assert!(slots.by_uid().is_none() && slots.by_name().is_none());
                slots.fill(pod.clone());
            }
            // Seen at once by the same locking: the update finds what was just filled.
            let newer = pod("ns-1", "p-7", "u-7", 2);
            let slots = locked.slots(&newer);
            assert!(Arc::ptr_eq(slots.by_uid().unwrap(), &pods[7]));
            assert!(Arc::ptr_eq(slots.by_name().unwrap(), &pods[7]));
            slots.fill(newer);
            locked.slots(&pods[8]).empty();
        }
        assert_eq!(index.len(), 299);
        assert_eq!(index.get("u-7").unwrap().resource_version, 2);
        assert_eq!(
            index.get_by_name("ns-1", "p-7").unwrap().resource_version,
            2
        );
        assert!(index.get("u-8").is_none() && index.get_by_name("ns-2", "p-8").is_none());
        assert!(Arc::ptr_eq(&index.get("u-299").unwrap(), &pods[299]));
        // Another uid under a held name is told apart by uid, found by name.
        let other = pod("ns-0", "p-0", "u-other", 1);
        let mut locked = index.lock();
        let slots = locked.slots(&other);
        assert!(slots.by_uid().is_none());
        assert_eq!(slots.by_name().unwrap().uid(), "u-0");
    }

    #[test]
    fn pods_stay_found_as_the_indexes_grow_and_shrink() {
        let index = PodIndex::default();
        // Many namespaces with the same names (a StatefulSet in each), and names
        // repeated across namespaces with uids of their own.
        let pods: Vec<Arc<Pod>> = (0..20_000)
            .map(|i| {
                pod(
                    &format!("ns-{}", i % 500),
                    &format!("web-{}", i / 500),
                    &format!("uid-{i}"),
                    1,
                )
            })
            .collect();
        for pod in &pods {
            let slots = index.slots(pod);
            assert!(slots.by_uid().is_none() && slots.by_name().is_none());
            slots.fill(pod.clone());
        }
        assert_eq!(index.len(), pods.len());
        for pod in &pods {
            assert!(Arc::ptr_eq(&index.get(pod.uid()).unwrap(), pod));
            assert!(Arc::ptr_eq(
                &index.get_by_name(&pod.namespace, pod.name()).unwrap(),
                pod
            ));
        }
        for pod in pods.iter().step_by(2) {
            index.remove(pod);
        }
        assert_eq!(index.len(), pods.len() / 2);
        for (i, pod) in pods.iter().enumerate() {
            assert_eq!(index.get(pod.uid()).is_some(), i % 2 == 1);
            assert_eq!(
                index.get_by_name(&pod.namespace, pod.name()).is_some(),
                i % 2 == 1
            );
        }
        assert!(index.get_by_name("ns-1", "web-999").is_none());
    }
}
