//! The cluster cache: a sharded concurrent store of nodes with their pods, pending
//! nominated pods and PodDisruptionBudgets.
//!
//! Readers never block writers for long: every node's state is an immutable
//! `Arc<NodeInfo>` replaced copy-on-write (the kube-rs reflector pattern), held in a
//! persistent vector, so a [`Snapshot`] is an O(1) clone of that vector. Writers are
//! serialized by one mutex so that changes touching several maps (a pod moving between
//! nodes) are atomic for other writers and for snapshots. Pods are looked up by uid or
//! name in sharded hash sets (`pod_index`), PDBs in a dashmap, without taking the mutex.

use std::sync::atomic::{AtomicU64, Ordering};
use triomphe::Arc;

use dashmap::DashMap;
use parking_lot::{Mutex, MutexGuard};

use crate::model::labels::Labels;
use crate::model::namespace::{Namespace, Namespaces};
use crate::model::priority::{PriorityClass, PriorityClasses};
use crate::model::{Interner, Node, Pod, PodDetails, PodDisruptionBudget, PodRef, Resources, Str};

mod groups;
mod labels;
mod pod_index;
mod shared;
mod summary;

pub use groups::{GROUP_NODES, NodeGroup};
use labels::LabelInterner;
pub use labels::{LabelId, LabelIds};
use shared::Shared;
pub use summary::{
    HardTaints, INLINE_LEVELS, LevelDigest, LevelTotals, MAX_TAINT_SETS, NO_HARD_TAINTS,
    NodeSummary, READ_NODE,
};

/// What the cache holds for one node name: the node (once it arrived), the pods bound to
/// it and the pending pods nominated to it.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub name: Str,
    pub node: Option<Arc<Node>>,
    /// Pods bound to this node (non-terminal phases only).
    pub pods: Vec<Arc<Pod>>,
    /// Σ effective requests of `pods`.
    pub requested: Resources,
    /// Pending pods whose `nominatedNodeName` is this node.
    pub nominated: Vec<Arc<Pod>>,
    /// Bumped on every change to this entry; a commit re-checks it.
    pub generation: u64,
    /// Number of `pods` with required pod anti-affinity terms.
    pub anti_affinity_pods: usize,
    /// How many of `pods` carry each (namespace, label key, label value), so selectors of
    /// one label are counted per node in O(1) instead of by scanning pods.
    pub label_counts: LabelCounts,
    /// The pods' requests summed per priority, ascending by priority: what removing every
    /// pod below a priority would free, in O(levels) rather than O(pods).
    pub levels: smallvec::SmallVec<[PriorityLevel; 4]>,
}

impl PriorityLevel {
    fn add(&mut self, pod: &Pod) {
        let r = pod.requests();
        self.pods += 1;
        // Wrapping, as upstream's int64 sums: exact whatever the amounts (a level is
        // rebuilt from its pods on removal, the node's total is undone by subtraction).
        self.milli_cpu = self.milli_cpu.wrapping_add(r.milli_cpu);
        self.memory = self.memory.wrapping_add(r.memory);
        self.ephemeral_storage = self.ephemeral_storage.wrapping_add(r.ephemeral_storage);
        self.max_milli_cpu = self.max_milli_cpu.max(r.milli_cpu);
        self.max_memory = self.max_memory.max(r.memory);
        self.max_ephemeral_storage = self.max_ephemeral_storage.max(r.ephemeral_storage);
        self.latest_start = self.latest_start.max(pod.start_time.unwrap_or(i64::MAX));
    }
}

/// Requests of the pods of one priority on a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PriorityLevel {
    pub priority: i32,
    pub pods: i64,
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Largest single pod's request at this priority.
    pub max_milli_cpu: i64,
    pub max_memory: i64,
    pub max_ephemeral_storage: i64,
    /// Latest `startTime` at this priority (`i64::MAX` when some pod has none: "now").
    pub latest_start: i64,
}

/// Per-node label index: interned (namespace, key, value) id → counts, sorted by id. A
/// node's pods carry a few dozen labels: a binary search in one contiguous block is
/// cheaper than hashing into a table, and far cheaper to copy on write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelCounts(Vec<(LabelId, LabelCount)>);

impl LabelCounts {
    pub fn get(&self, id: LabelId) -> Option<&LabelCount> {
        // A forward scan: the block is read in order, so the prefetcher hides the misses
        // a binary search would wait for one after another.
        self.0
            .iter()
            .find(|(known, _)| *known >= id)
            .filter(|(known, _)| *known == id)
            .map(|(_, count)| count)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The counts of `id`, registered (zero) if new.
    fn entry(&mut self, id: LabelId) -> &mut LabelCount {
        let i = match self.0.binary_search_by_key(&id, |(known, _)| *known) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (id, LabelCount::default()));
                i
            }
        };
        &mut self.0[i].1
    }

    /// Where the counts live in memory, for prefetching.
    pub fn as_ptr(&self) -> *const (LabelId, LabelCount) {
        self.0.as_ptr()
    }

    fn remove(&mut self, id: LabelId) {
        if let Ok(i) = self.0.binary_search_by_key(&id, |(known, _)| *known) {
            self.0.remove(i);
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabelCount {
    /// Every pod with the label.
    pub all: u32,
    /// Pods with the label that are not terminating.
    pub live: u32,
}

impl NodeInfo {
    fn empty(name: Str) -> Self {
        NodeInfo {
            name,
            node: None,
            pods: Vec::new(),
            requested: Resources::default(),
            nominated: Vec::new(),
            generation: 0,
            anti_affinity_pods: 0,
            label_counts: LabelCounts::default(),
            levels: smallvec::SmallVec::new(),
        }
    }

    fn is_vacant(&self) -> bool {
        self.node.is_none() && self.pods.is_empty() && self.nominated.is_empty()
    }

    /// Whether a list holds room for more than it has (lists grow by doubling).
    fn has_spare_capacity(&self) -> bool {
        self.pods.capacity() > self.pods.len()
            || self.nominated.capacity() > self.nominated.len()
            || self.label_counts.0.capacity() > self.label_counts.0.len()
    }

    /// Pods on this node carrying the label `id` (see [`Snapshot::label_id`]), live ones
    /// only if asked.
    pub fn count_label(&self, id: LabelId, live_only: bool) -> u32 {
        self.label_counts
            .get(id)
            .map(|c| if live_only { c.live } else { c.all })
            .unwrap_or(0)
    }

    fn index_labels(&mut self, pod: &Pod, ids: impl Iterator<Item = LabelId>, sign: i32) {
        if pod.labels.is_empty() {
            return;
        }
        let index = &mut self.label_counts;
        for id in ids {
            let entry = index.entry(id);
            entry.all = entry.all.wrapping_add_signed(sign);
            if !pod.terminating {
                entry.live = entry.live.wrapping_add_signed(sign);
            }
            if entry.all == 0 {
                index.remove(id);
            }
        }
    }

    fn add_to_level(&mut self, pod: &Pod) {
        let index = match self
            .levels
            .binary_search_by(|l| l.priority.cmp(&pod.priority))
        {
            Ok(i) => i,
            Err(i) => {
                self.levels.insert(
                    i,
                    PriorityLevel {
                        priority: pod.priority,
                        latest_start: i64::MIN,
                        ..PriorityLevel::default()
                    },
                );
                i
            }
        };
        self.levels[index].add(pod);
    }

    /// Recomputes the level of `priority` from the pods (after a removal).
    fn rebuild_level(&mut self, priority: i32) {
        let Ok(index) = self.levels.binary_search_by(|l| l.priority.cmp(&priority)) else {
            return;
        };
        let mut level = PriorityLevel {
            priority,
            latest_start: i64::MIN,
            ..PriorityLevel::default()
        };
        for pod in self.pods.iter().filter(|p| p.priority == priority) {
            level.add(pod);
        }
        if level.pods == 0 {
            self.levels.remove(index);
        } else {
            self.levels[index] = level;
        }
    }

    fn add_pod(&mut self, pod: Arc<Pod>, label_ids: &[LabelId]) {
        self.add_to_level(&pod);
        self.index_labels(&pod, label_ids.iter().copied(), 1);
        self.requested.add(pod.requests());
        if pod.has_required_anti_affinity() {
            self.anti_affinity_pods += 1;
        }
        self.pods.push(pod);
    }

    fn remove_pod(&mut self, uid: &str, label_ids: &[Option<LabelId>]) -> Option<Arc<Pod>> {
        let index = self.pods.iter().position(|p| p.uid() == uid)?;
        let pod = self.pods.swap_remove(index);
        self.rebuild_level(pod.priority);
        self.index_labels(&pod, label_ids.iter().flatten().copied(), -1);
        self.requested.sub(pod.requests());
        if pod.has_required_anti_affinity() {
            self.anti_affinity_pods -= 1;
        }
        Some(pod)
    }

    fn remove_nominated(&mut self, uid: &str) -> Option<Arc<Pod>> {
        let index = self.nominated.iter().position(|p| p.uid() == uid)?;
        Some(self.nominated.swap_remove(index))
    }
}

/// Node name → position in the node vector (a persistent map, so snapshots share it).
type NodeIndex =
    imbl::GenericHashMap<Str, usize, ahash::RandomState, imbl::shared_ptr::DefaultSharedPtr>;

/// Where a pod is placed: borrowed from the pod, as a bulk load's applier asks at every
/// pod, and a count changed there would be a locked instruction per ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place<'a> {
    Bound(&'a Str),
    Nominated(&'a Str),
    Pending,
}

impl Place<'_> {
    fn of(pod: &Pod) -> Place<'_> {
        match (&pod.node_name, pod.nomination()) {
            (Some(node), _) => Place::Bound(node),
            (None, Some(node)) => Place::Nominated(node),
            (None, None) => Place::Pending,
        }
    }
}

/// The result of an upsert or delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// False when the update carried an older `resource_version` than the cache holds.
    pub applied: bool,
    /// The resource version the cache holds for the object afterwards (0 once deleted).
    pub resource_version: u64,
    /// The cache revision after the update.
    pub revision: u64,
}

/// A pod upsert's outcome, and the pod as held before and after it when nominated (what
/// the nominations log is told).
#[derive(Clone, Debug, PartialEq)]
pub struct PodUpsert {
    pub outcome: UpdateOutcome,
    /// The pod held before, if it was nominated ([`Pod::nomination`]).
    pub nominated_before: Option<Arc<Pod>>,
    /// The pod held after, if it is nominated; the one before when the upsert was stale.
    pub nominated_after: Option<Arc<Pod>>,
}

/// `pod`, if it is nominated.
fn nominated(pod: Option<Arc<Pod>>) -> Option<Arc<Pod>> {
    pod.filter(|p| p.nomination().is_some())
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    #[error("{kind} {name} not found")]
    NotFound { kind: &'static str, name: String },
    #[error("pod uid {uid} is already used by {existing}")]
    UidConflict { uid: String, existing: String },
    #[error("pod {name} already exists with uid {existing}")]
    NameConflict { name: String, existing: String },
}

/// A consistent read view for one decision. Cloning is O(1).
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Every node that exists, in no particular order (the engine never depends on it).
    pub nodes: imbl::Vector<Arc<NodeInfo>>,
    index: NodeIndex,
    pub pdbs: Arc<Vec<Arc<PodDisruptionBudget>>>,
    pub revision: u64,
    /// Nodes with at least one pod carrying required anti-affinity.
    pub anti_affinity_nodes: usize,
    /// Node label keys some value of which two or more nodes carry; every other key
    /// (typically `kubernetes.io/hostname`) names at most one node per value.
    pub shared_label_keys: Arc<std::collections::HashSet<Str>>,
    /// Label ids of the node entries' label indexes.
    pub labels: LabelIds,
    /// `summaries[i]` digests `nodes[i]`.
    pub summaries: imbl::Vector<NodeSummary>,
    /// `groups[g]` digests `summaries[g * GROUP_NODES ..]` (see [`NodeGroup`]).
    pub groups: imbl::Vector<Arc<NodeGroup>>,
    /// The hard-taint sets digests refer to: id `k` is `taint_sets[k - 1]`.
    pub taint_sets: imbl::Vector<Arc<HardTaints>>,
    /// Namespace labels, for pod affinity's namespaceSelector.
    pub namespaces: Arc<Namespaces>,
}

/// Asks the CPU to start loading the cache line at `address`.
#[inline(always)]
pub(crate) fn prefetch<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and changes nothing observable,
    // whatever the address. Scans over node entries chase three pointers per node; issuing
    // the loads a few nodes ahead overlaps the misses (see `Snapshot::for_each_node_prefetched`).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address.cast());
    }
}

impl Snapshot {
    /// Calls `visit` on the node entries `range` in order, prefetching the entries, their
    /// nodes, label pairs and label counts a few nodes ahead: a scan that reads those for
    /// every node otherwise waits on each pointer in turn.
    pub fn for_each_node_prefetched(
        &self,
        range: std::ops::Range<usize>,
        mut visit: impl FnMut(&Arc<NodeInfo>),
    ) {
        const ENTRY_AHEAD: usize = 12;
        const FIELDS_AHEAD: usize = 8;
        const LABELS_AHEAD: usize = 4;
        let end = range.end.min(self.nodes.len());
        let start = range.start.min(end);
        let mut entries: Vec<&Arc<NodeInfo>> = Vec::with_capacity(end - start);
        let mut at = 0;
        for leaf in self.nodes.leaves() {
            let (from, to) = (at, at + leaf.len());
            at = to;
            if to <= start || from >= end {
                continue;
            }
            entries.extend(&leaf[start.max(from) - from..end.min(to) - from]);
        }
        for (i, info) in entries.iter().enumerate() {
            if let Some(ahead) = entries.get(i + ENTRY_AHEAD) {
                // The fields a scan reads, not the entry's first line: an entry spans
                // several lines. (Taking a field's address reads nothing.)
                prefetch(&ahead.node);
                prefetch(&ahead.label_counts);
            }
            if let Some(ahead) = entries.get(i + FIELDS_AHEAD) {
                prefetch(ahead.label_counts.as_ptr());
                if let Some(node) = &ahead.node {
                    prefetch(Arc::as_ptr(node));
                }
            }
            if let Some(node) = entries
                .get(i + LABELS_AHEAD)
                .and_then(|a| a.node.as_deref())
            {
                prefetch(node.labels.as_ptr());
            }
            visit(info);
        }
    }

    pub fn node(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).and_then(|&i| self.nodes.get(i))
    }

    /// Whether no two nodes carry the same value of label `key`: a topology domain of
    /// that key is then one node.
    pub fn key_is_node_unique(&self, key: &str) -> bool {
        !self.shared_label_keys.contains(key)
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The id under which node entries count pods labelled `key=value` in `namespace`;
    /// `None` when no pod in the snapshot carries that label.
    pub fn label_id(&self, namespace: &str, key: &str, value: &str) -> Option<LabelId> {
        self.labels.get(namespace, key, value)
    }
}

/// The node entries: existing nodes in a persistent vector (cheap snapshots), entries
/// whose node has not arrived (or was deleted) but that hold pods or nominations aside.
#[derive(Default)]
struct NodeTable {
    nodes: imbl::Vector<Arc<NodeInfo>>,
    /// `summaries[i]` digests `nodes[i]`.
    summaries: imbl::Vector<NodeSummary>,
    /// `groups[g]` digests `summaries[g * GROUP_NODES ..]`, except the groups in
    /// `stale_groups` (rebuilt when a snapshot is taken, so a bulk load rebuilds each once).
    groups: imbl::Vector<Arc<NodeGroup>>,
    stale_groups: Vec<usize>,
    /// `stale[g]`: `g` is in `stale_groups`.
    stale: Vec<bool>,
    /// Interned hard-taint sets, never dropped (at most [`MAX_TAINT_SETS`]): id `k` is
    /// `taint_sets[k - 1]`.
    taint_sets: imbl::Vector<Arc<HardTaints>>,
    taint_set_ids: hashbrown::HashMap<Arc<HardTaints>, u16>,
    index: NodeIndex,
    orphans: std::collections::HashMap<Str, NodeInfo>,
    pdbs: Arc<Vec<Arc<PodDisruptionBudget>>>,
    /// Nodes holding a pod with required anti-affinity (lets decisions skip the scan).
    anti_affinity_nodes: usize,
    /// How many nodes carry each label pair.
    node_label_pairs: hashbrown::HashMap<(Str, Str), u32>,
    /// Per label key, how many of its values two or more nodes carry.
    shared_values: hashbrown::HashMap<Str, u32>,
    /// The keys of `shared_values`, as snapshots see them.
    shared_label_keys: Arc<std::collections::HashSet<Str>>,
    /// During [`ClusterCache::upsert_pods`]: the entries edited so far, filed once at the
    /// end, so a batch copies each touched entry once instead of once per change.
    staged: Option<hashbrown::HashMap<Str, NodeInfo>>,
    /// Ids of the labels of every bound pod.
    labels: LabelInterner,
    /// Values nodes and pods have in common.
    interned: Interned,
}

/// The cache's interning tables (see [`Pod::compact`]).
#[derive(Debug)]
struct Interned {
    strings: Shared<Str>,
    label_sets: Shared<Labels>,
    pod_details: Shared<Arc<PodDetails>>,
    /// A batch is being upserted (a bulk load): answers are remembered by address, as its
    /// pods hand the same memoized handles again and again. A lone update's are new each
    /// time, and remembering them would only hold garbage.
    bulk: bool,
}

/// Answers remembered by address (see [`Shared::remembering`]) for pod details: as many
/// templates as a bulk load's conversions remember, so that every pod of a template they
/// still hold is answered by address; a full table takes ~5 MB.
const RECENT_POD_DETAILS: usize = 1 << 16;

/// Answers remembered by address for strings and label sets: those of a load repeat pod
/// after pod (namespaces, a node's name, an app's labels).
const RECENT_VALUES: usize = 1024;

/// Node entries compacted under one hold of the table's lock once a watch's lists are done
/// (a few milliseconds of copying).
const COMPACTED_PER_LOCK: usize = 1024;

impl Default for Interned {
    fn default() -> Self {
        Self {
            strings: Shared::remembering(RECENT_VALUES),
            label_sets: Shared::remembering(RECENT_VALUES),
            pod_details: Shared::remembering(RECENT_POD_DETAILS),
            bulk: false,
        }
    }
}

impl Interned {
    fn sweep(&mut self) {
        self.strings.sweep();
        self.label_sets.sweep();
        self.pod_details.sweep();
    }
}

impl Interner for Interned {
    fn share_str(&mut self, s: &mut Str) {
        self.strings.share_in_place(s, Str::clone, self.bulk);
    }

    fn share_labels(&mut self, labels: &mut Labels) {
        let (strings, bulk) = (&mut self.strings, self.bulk);
        self.label_sets.share_in_place(
            labels,
            |labels| labels.with_shared_strings(|s| strings.share_by(s, Str::clone, bulk)),
            bulk,
        );
    }

    fn share_details(&mut self, details: &mut Arc<PodDetails>) {
        // A handle answered before is known to be held already, specs dropped: its value
        // is not read (see `Shared::share_in_place`).
        if self.bulk && self.pod_details.recall(details) {
            return;
        }
        if details.holds_specs() {
            Arc::make_mut(details).drop_specs();
        }
        self.pod_details
            .share_by_value(details, Arc::clone, self.bulk);
    }
}

/// Applies `change` to an entry being edited, which makes it a new generation.
fn change_entry<R>(info: &mut NodeInfo, change: impl FnOnce(&mut NodeInfo) -> R) -> R {
    let result = change(info);
    info.generation += 1;
    result
}

impl NodeTable {
    fn get(&self, name: &str) -> Option<&NodeInfo> {
        if let Some(info) = self.staged.as_ref().and_then(|s| s.get(name)) {
            return Some(info);
        }
        match self.index.get(name) {
            Some(&i) => self.nodes.get(i).map(|n| &**n),
            None => self.orphans.get(name),
        }
    }

    /// Applies `change` to the entry for `name` (created if needed), then files it as a
    /// node or an orphan, dropping it once vacant.
    fn edit<R>(&mut self, name: &Str, change: impl FnOnce(&mut NodeInfo) -> R) -> R {
        if self.staged.is_some() {
            return self.edit_staged(name, change);
        }
        let mut info = self.entry_to_edit(name);
        let result = change_entry(&mut info, change);
        self.file(name, info);
        result
    }

    /// `edit` during a batch: the first edit of an entry copies it into `staged`, later
    /// ones change that copy in place.
    fn edit_staged<R>(&mut self, name: &Str, change: impl FnOnce(&mut NodeInfo) -> R) -> R {
        let mut staged = self.staged.take().unwrap_or_default();
        // Looked up by reference: the key is cloned only for a new entry, not at every pod
        // of the node (its count is a shared cache line).
        let result = match staged.get_mut(name) {
            Some(info) => change_entry(info, change),
            None => {
                let mut info = self.entry_to_edit(name);
                let result = change_entry(&mut info, change);
                staged.insert(name.clone(), info);
                result
            }
        };
        self.staged = Some(staged);
        result
    }

    /// A copy of the entry for `name` to change: the node's, the orphan entry (taken), or
    /// a new one.
    fn entry_to_edit(&mut self, name: &Str) -> NodeInfo {
        match self.index.get(name) {
            Some(&i) => (*self.nodes[i]).clone(),
            None => self
                .orphans
                .remove(name)
                .unwrap_or_else(|| NodeInfo::empty(name.clone())),
        }
    }

    /// Files every staged entry and ends the batch.
    fn unstage(&mut self) {
        for (name, info) in self.staged.take().unwrap_or_default() {
            self.file(&name, info);
        }
    }

    /// Counts `node`'s label pairs in (`sign` 1) or out (-1), keeping the set of keys
    /// whose values are shared between nodes.
    fn count_node_labels(&mut self, node: &Node, sign: i32) {
        let mut keys_changed = false;
        for (key, value) in node.labels.iter() {
            let count = self
                .node_label_pairs
                .entry((key.clone(), value.clone()))
                .or_insert(0);
            let before = *count;
            *count = count.wrapping_add_signed(sign);
            let after = *count;
            if after == 0 {
                self.node_label_pairs.remove(&(key.clone(), value.clone()));
            }
            match (before >= 2, after >= 2) {
                (false, true) => {
                    let shared = self.shared_values.entry(key.clone()).or_insert(0);
                    *shared += 1;
                    keys_changed |= *shared == 1;
                }
                (true, false) => {
                    if let Some(shared) = self.shared_values.get_mut(&**key) {
                        *shared -= 1;
                        if *shared == 0 {
                            self.shared_values.remove(&**key);
                            keys_changed = true;
                        }
                    }
                }
                _ => {}
            }
        }
        if keys_changed {
            self.shared_label_keys = Arc::new(self.shared_values.keys().cloned().collect());
        }
    }

    /// Files an edited entry as a node or an orphan, dropping it once vacant.
    fn file(&mut self, name: &Str, info: NodeInfo) {
        // The slot still holds the entry from before the edit (or the batch).
        let slot = self.index.get(name).copied();
        let (old_node, had_anti) = match slot {
            Some(i) => {
                let old = &self.nodes[i];
                (old.node.clone(), old.anti_affinity_pods > 0)
            }
            None => (None, false),
        };
        let same_node = match (&old_node, &info.node) {
            (Some(old), Some(new)) => Arc::ptr_eq(old, new),
            (None, None) => true,
            _ => false,
        };
        if !same_node {
            if let Some(old) = &old_node {
                self.count_node_labels(old, -1);
            }
            if let Some(new) = &info.node {
                self.count_node_labels(new, 1);
            }
        }
        let has_anti = info.node.is_some() && info.anti_affinity_pods > 0;
        self.anti_affinity_nodes = self.anti_affinity_nodes + has_anti as usize - had_anti as usize;
        // Pod changes keep the node: its taint set is the one already digested.
        let taint_set = match slot {
            Some(i) if same_node => self.summaries[i].taint_set,
            _ => self.taint_set_id(info.node.as_deref()),
        };
        match (slot, info.node.is_some()) {
            (Some(i), true) => {
                self.summaries.set(i, NodeSummary::of(&info, taint_set));
                self.mark_group(i);
                self.nodes.set(i, Arc::new(info));
            }
            (Some(i), false) => {
                self.remove_slot(i);
                if !info.is_vacant() {
                    self.orphans.insert(name.clone(), info);
                }
            }
            (None, true) => {
                self.index.insert(name.clone(), self.nodes.len());
                self.mark_group(self.summaries.len());
                self.summaries.push_back(NodeSummary::of(&info, taint_set));
                self.nodes.push_back(Arc::new(info));
            }
            (None, false) => {
                if !info.is_vacant() {
                    self.orphans.insert(name.clone(), info);
                }
            }
        }
    }

    /// The id of `node`'s hard taints, interned on first sight.
    fn taint_set_id(&mut self, node: Option<&Node>) -> u16 {
        let Some(node) = node else {
            return READ_NODE;
        };
        let Some(set) = HardTaints::of(node) else {
            return NO_HARD_TAINTS;
        };
        if let Some(&id) = self.taint_set_ids.get(&set) {
            return id;
        }
        if self.taint_sets.len() >= MAX_TAINT_SETS {
            return READ_NODE;
        }
        let set = Arc::new(set);
        self.taint_sets.push_back(set.clone());
        // Ids from 1; MAX_TAINT_SETS < READ_NODE, so the conversion holds.
        let id = u16::try_from(self.taint_sets.len()).unwrap_or(READ_NODE);
        self.taint_set_ids.insert(set, id);
        id
    }

    /// Removes slot `i` by moving the last entry into it.
    fn remove_slot(&mut self, i: usize) {
        let (Some(last), Some(last_summary)) = (self.nodes.pop_back(), self.summaries.pop_back())
        else {
            return;
        };
        self.mark_group(self.summaries.len());
        let removed = if i < self.nodes.len() {
            self.summaries.set(i, last_summary);
            self.mark_group(i);
            let removed = self.nodes.set(i, last.clone());
            self.index.insert(last.name.clone(), i);
            removed
        } else {
            last
        };
        self.index.remove(&removed.name);
    }

    /// Marks the group of node slot `i` for a rebuild.
    fn mark_group(&mut self, i: usize) {
        let group = i / GROUP_NODES;
        if self.stale.len() <= group {
            self.stale.resize(group + 1, false);
        }
        if !std::mem::replace(&mut self.stale[group], true) {
            self.stale_groups.push(group);
        }
    }

    /// Rebuilds the stale groups (and drops the groups past the last node).
    fn refresh_groups(&mut self) {
        if self.stale_groups.is_empty() {
            return;
        }
        let needed = self.summaries.len().div_ceil(GROUP_NODES);
        self.groups.truncate(needed.min(self.groups.len()));
        let mut stale = std::mem::take(&mut self.stale_groups);
        stale.sort_unstable();
        for group in stale {
            self.stale[group] = false;
            if group >= needed {
                continue;
            }
            let start = group * GROUP_NODES;
            let end = (start + GROUP_NODES).min(self.summaries.len());
            let built = Arc::new(NodeGroup::of(self.summaries.focus().narrow(start..end)));
            if group < self.groups.len() {
                self.groups.set(group, built);
            } else {
                // Every group past the end is stale (its slots were pushed): in order.
                debug_assert_eq!(group, self.groups.len());
                self.groups.push_back(built);
            }
        }
        self.stale_groups = Vec::new();
    }

    fn share_labels(&mut self, node: &mut Node) {
        self.interned.strings.sweep();
        let strings = &mut self.interned.strings;
        node.labels = node.labels.with_shared_strings(|s| strings.share(s));
    }

    /// See [`Pod::compact`].
    fn compact_pod(&mut self, pod: &mut Pod) {
        self.interned.sweep();
        self.interned.bulk = self.staged.is_some();
        pod.compact(&mut self.interned);
    }

    fn all(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.iter().map(|n| &**n).chain(self.orphans.values())
    }
}

/// Counts for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    pub nodes: usize,
    pub pods: usize,
    pub nominated_pods: usize,
    pub pdbs: usize,
    pub priority_classes: usize,
    pub namespaces: usize,
}

/// A nomination as listed or streamed: the pending pod and the node it is nominated to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nomination {
    pub pod: PodRef,
    pub priority: i32,
    pub node: Str,
}

/// One change a commit made, for the nominations log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitChange {
    /// The preemptor is now nominated to `node`.
    Nominated(Nomination),
    /// A lower-priority pod's nomination was cleared.
    NominationCleared { pod: PodRef, node: Str },
    /// A victim is now terminating by preemption.
    VictimMarked { pod: PodRef, node: Str },
}

/// What a `Preempt` commit writes into the cache.
#[derive(Clone, Debug)]
pub struct Commit {
    /// The preemptor as decided on (its nomination is set to `node`).
    pub preemptor: Pod,
    pub node: Str,
    /// The generation of `node` the decision was made on.
    pub node_generation: u64,
    pub victims: Vec<PodRef>,
    pub nominations_to_clear: Vec<PodRef>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node {node} changed since the decision")]
pub struct CommitConflict {
    pub node: Str,
}

#[derive(Default)]
pub struct ClusterCache {
    /// The writer lock and the node entries it guards.
    table: Mutex<NodeTable>,
    /// Held pods by uid and by namespace/name. Where a pod is placed follows from the pod
    /// itself ([`Place::of`]), so nothing else is stored with it.
    pods: pod_index::PodIndex,
    pdbs: DashMap<(Str, Str), Arc<PodDisruptionBudget>, ahash::RandomState>,
    /// Few and rarely changed: replaced whole on a change, read as a cheap clone.
    priority_classes: parking_lot::RwLock<Arc<PriorityClasses>>,
    namespaces: parking_lot::RwLock<Arc<Namespaces>>,
    revision: AtomicU64,
}

type Table<'a> = MutexGuard<'a, NodeTable>;

/// Pods a batch upserts under one locking of the pod indexes (see
/// [`pod_index::LockedIndex`]): their lookups fit the processor's first-level cache, and
/// readers of the indexes wait ~0.1 ms at most.
const INDEX_RUN: usize = 64;

/// `rv == 0` means the client does not version its objects: always applied.
fn is_stale(incoming: u64, held: u64) -> bool {
    incoming != 0 && incoming < held
}

impl ClusterCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }

    /// Moves the revision on. Only the holder of the table lock (`_held`) writes it, so a
    /// load and a store do: a locked add would first wait for every store before it to
    /// land, and a bulk load's applier has cache-missing stores in flight at every pod.
    fn bump(&self, _held: &Table<'_>) -> u64 {
        let next = self.revision.load(Ordering::Relaxed) + 1;
        self.revision.store(next, Ordering::Release);
        next
    }

    pub fn upsert_node(&self, mut node: Node) -> UpdateOutcome {
        let mut table = self.table.lock();
        let name = node.name.clone();
        let held = table
            .get(&name)
            .and_then(|n| n.node.as_ref().map(|n| n.resource_version));
        if let Some(held) = held
            && is_stale(node.resource_version, held)
        {
            return UpdateOutcome {
                applied: false,
                resource_version: held,
                revision: self.revision(),
            };
        }
        let rv = node.resource_version;
        table.share_labels(&mut node);
        table.edit(&name, |info| info.node = Some(Arc::new(node)));
        UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(&table),
        }
    }

    pub fn delete_node(&self, name: &str) -> Result<UpdateOutcome, CacheError> {
        let mut table = self.table.lock();
        let key: Str = name.into();
        if table.get(&key).is_none_or(|n| n.node.is_none()) {
            return Err(CacheError::NotFound {
                kind: "node",
                name: name.to_string(),
            });
        }
        // Pods stay, as in the scheduler cache: they come back with the node.
        table.edit(&key, |info| info.node = None);
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(&table),
        })
    }

    fn unplace(table: &mut Table<'_>, pod: &Pod) {
        match &Place::of(pod) {
            Place::Bound(node) => {
                let ids = table.labels.ids_of(pod);
                let removed = table.edit(node, |info| info.remove_pod(pod.uid(), &ids));
                if removed.is_some() {
                    table.labels.release(ids.into_iter().flatten());
                }
            }
            Place::Nominated(node) => {
                table.edit(node, |info| info.remove_nominated(pod.uid()));
            }
            Place::Pending => {}
        }
    }

    /// Replaces `old` with `pod` where `old` is placed (the same place).
    fn replace(table: &mut Table<'_>, old: &Pod, pod: &Arc<Pod>) {
        match &Place::of(old) {
            Place::Bound(node) => {
                // Acquire before release: labels the pod keeps keep their ids.
                let ids = table.labels.acquire(pod);
                let old_ids = table.labels.ids_of(old);
                let removed = table.edit(node, |info| {
                    let removed = info.remove_pod(old.uid(), &old_ids);
                    info.add_pod(pod.clone(), &ids);
                    removed
                });
                if removed.is_some() {
                    table.labels.release(old_ids.into_iter().flatten());
                }
            }
            Place::Nominated(node) => table.edit(node, |info| {
                info.remove_nominated(old.uid());
                info.nominated.push(pod.clone());
            }),
            Place::Pending => {}
        }
    }

    fn place(table: &mut Table<'_>, pod: &Arc<Pod>, place: Place<'_>) {
        match place {
            Place::Bound(node) => {
                let ids = table.labels.acquire(pod);
                table.edit(node, |info| info.add_pod(pod.clone(), &ids));
            }
            Place::Nominated(node) => table.edit(node, |info| info.nominated.push(pod.clone())),
            Place::Pending => {}
        }
    }

    /// Inserts or replaces a pod. Succeeded/Failed pods are removed (the scheduler never
    /// sees them).
    ///
    /// The pod comes in its final allocation (its only handle), so a bulk load allocates
    /// and first touches it on the thread that converted it rather than the applier's.
    fn put_pod(&self, table: &mut Table<'_>, pod: Arc<Pod>) -> Result<PodUpsert, CacheError> {
        let slots = self.pods.slots(&pod);
        self.put_pod_in(table, slots, pod)
    }

    /// `put_pod`, with the pod's index slots looked up by the caller.
    fn put_pod_in(
        &self,
        table: &mut Table<'_>,
        slots: pod_index::Slots<'_>,
        mut pod: Arc<Pod>,
    ) -> Result<PodUpsert, CacheError> {
        // Before the pod is filed, so the indexes hold the shared strings too. (Never
        // copies: the callers hand over the only handle.)
        table.compact_pod(Arc::make_mut(&mut pod));
        if let Some(existing) = slots.by_name()
            && existing.uid() != pod.uid()
        {
            return Err(CacheError::NameConflict {
                name: format!("{}/{}", pod.namespace, pod.name()),
                existing: existing.uid().to_string(),
            });
        }
        let old = slots.by_uid().cloned();
        if let Some(old) = &old {
            if (&old.namespace, &old.name()) != (&pod.namespace, &pod.name()) {
                return Err(CacheError::UidConflict {
                    uid: pod.uid().to_string(),
                    existing: format!("{}/{}", old.namespace, old.name()),
                });
            }
            if is_stale(pod.resource_version, old.resource_version) {
                let nominated = nominated(Some(old.clone()));
                return Ok(PodUpsert {
                    outcome: UpdateOutcome {
                        applied: false,
                        resource_version: old.resource_version,
                        revision: self.revision(),
                    },
                    nominated_before: nominated.clone(),
                    nominated_after: nominated,
                });
            }
        }
        let rv = pod.resource_version;
        let nominated_after = if pod.phase.is_terminal() {
            if let Some(old) = &old {
                Self::unplace(table, old);
            }
            slots.empty();
            None
        } else {
            let place = Place::of(&pod);
            match &old {
                // An update in place (the usual case): one copy of the node entry.
                Some(old) if Place::of(old) == place => Self::replace(table, old, &pod),
                Some(old) => {
                    Self::unplace(table, old);
                    Self::place(table, &pod, place);
                }
                None => Self::place(table, &pod, place),
            }
            let nominated = pod.nomination().is_some().then(|| pod.clone());
            slots.fill(pod);
            nominated
        };
        Ok(PodUpsert {
            outcome: UpdateOutcome {
                applied: true,
                resource_version: rv,
                revision: self.bump(table),
            },
            nominated_before: nominated(old),
            nominated_after,
        })
    }

    pub fn upsert_pod(&self, pod: impl Into<Arc<Pod>>) -> Result<UpdateOutcome, CacheError> {
        self.upsert_pod_with_nominations(pod).map(|u| u.outcome)
    }

    /// As [`ClusterCache::upsert_pod`], saying too how the pod's nomination moved.
    pub fn upsert_pod_with_nominations(
        &self,
        pod: impl Into<Arc<Pod>>,
    ) -> Result<PodUpsert, CacheError> {
        let pod = pod.into();
        let mut table = self.table.lock();
        self.put_pod(&mut table, pod)
    }

    /// Upserts pods in order under one writer lock, with the results
    /// `upsert_pod_with_nominations` would give each. Bulk loads use it: every node entry a
    /// batch touches is copied once (pods, label index, levels) instead of once per pod,
    /// which dominates a load.
    pub fn upsert_pods<P: Into<Arc<Pod>>>(
        &self,
        pods: impl IntoIterator<Item = P>,
    ) -> Vec<Result<PodUpsert, CacheError>> {
        let mut table = self.table.lock();
        table.staged = Some(hashbrown::HashMap::new());
        let mut pods = pods.into_iter().map(Into::into);
        let mut results = Vec::with_capacity(pods.size_hint().0);
        let mut run = Vec::with_capacity(INDEX_RUN);
        loop {
            run.extend(pods.by_ref().take(INDEX_RUN));
            if run.is_empty() {
                break;
            }
            let mut index = self.pods.lock();
            index.warm(&run);
            for pod in run.drain(..) {
                let slots = index.slots(&pod);
                results.push(self.put_pod_in(&mut table, slots, pod));
            }
        }
        table.unstage();
        results
    }

    /// Says a bulk load is over: the handles its conversions shared (see `server::memo`)
    /// will not be asked about again, so the answers remembered for them are dropped, and
    /// with them the handles.
    pub fn end_bulk_load(&self) {
        let mut table = self.table.lock();
        table.interned.strings.forget_recent();
        table.interned.label_sets.forget_recent();
        table.interned.pod_details.forget_recent();
    }

    /// Copies the node entries whose lists hold spare room (a copy is exact). A watch's
    /// list arrives in many small batches, and each batch copies the entries it edits and
    /// grows their lists by doubling, so after it the lists hold up to twice their
    /// length. The table is locked for [`COMPACTED_PER_LOCK`] entries at a time;
    /// milliseconds a thousand nodes, so call it on a blocking thread.
    pub fn compact_nodes(&self) {
        let mut start = 0;
        loop {
            let mut table = self.table.lock();
            let end = (start + COMPACTED_PER_LOCK).min(table.nodes.len());
            if start >= end {
                return;
            }
            for i in start..end {
                if table.nodes[i].has_spare_capacity() {
                    let exact = Arc::new(NodeInfo::clone(&table.nodes[i]));
                    table.nodes.set(i, exact);
                }
            }
            start = end;
        }
    }

    /// Deletes a pod by namespace/name (and uid when given, which must then match).
    pub fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<UpdateOutcome, CacheError> {
        let mut table = self.table.lock();
        let not_found = || CacheError::NotFound {
            kind: "pod",
            name: format!("{namespace}/{name}"),
        };
        let held = self
            .pods
            .get_by_name(namespace, name)
            .ok_or_else(not_found)?;
        if uid.is_some_and(|u| !u.is_empty() && u != held.uid()) {
            return Err(not_found());
        }
        self.pods.remove(&held);
        Self::unplace(&mut table, &held);
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(&table),
        })
    }

    fn refresh_pdb_list(&self, table: &mut Table<'_>) {
        let mut list: Vec<Arc<PodDisruptionBudget>> =
            self.pdbs.iter().map(|e| e.value().clone()).collect();
        // Stable order so the per-node budget walk is reproducible.
        list.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        table.pdbs = Arc::new(list);
    }

    pub fn upsert_pdb(&self, pdb: PodDisruptionBudget) -> UpdateOutcome {
        let mut table = self.table.lock();
        let key = (pdb.namespace.clone(), pdb.name.clone());
        if let Some(held) = self.pdbs.get(&key)
            && is_stale(pdb.resource_version, held.resource_version)
        {
            return UpdateOutcome {
                applied: false,
                resource_version: held.resource_version,
                revision: self.revision(),
            };
        }
        let rv = pdb.resource_version;
        self.pdbs.insert(key, Arc::new(pdb));
        self.refresh_pdb_list(&mut table);
        UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(&table),
        }
    }

    pub fn delete_pdb(&self, namespace: &str, name: &str) -> Result<UpdateOutcome, CacheError> {
        let mut table = self.table.lock();
        let key: (Str, Str) = (namespace.into(), name.into());
        self.pdbs.remove(&key).ok_or_else(|| CacheError::NotFound {
            kind: "poddisruptionbudget",
            name: format!("{namespace}/{name}"),
        })?;
        self.refresh_pdb_list(&mut table);
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(&table),
        })
    }

    pub fn upsert_priority_class(&self, class: PriorityClass) -> UpdateOutcome {
        let table = self.table.lock();
        let mut classes = self.priority_classes.write();
        if let Some(held) = classes.get(&class.name)
            && is_stale(class.resource_version, held.resource_version)
        {
            return UpdateOutcome {
                applied: false,
                resource_version: held.resource_version,
                revision: self.revision(),
            };
        }
        let rv = class.resource_version;
        Arc::make_mut(&mut classes).insert(class);
        UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(&table),
        }
    }

    /// Deletes a PriorityClass by name (and uid when given, which must then match).
    pub fn delete_priority_class(
        &self,
        name: &str,
        uid: Option<&str>,
    ) -> Result<UpdateOutcome, CacheError> {
        let table = self.table.lock();
        let mut classes = self.priority_classes.write();
        let held_uid = classes.get(name).map(|c| c.uid.clone());
        match held_uid {
            Some(held) if uid.is_none_or(|u| u.is_empty() || *u == *held) => {
                Arc::make_mut(&mut classes).remove(name);
                Ok(UpdateOutcome {
                    applied: true,
                    resource_version: 0,
                    revision: self.bump(&table),
                })
            }
            _ => Err(CacheError::NotFound {
                kind: "priorityclass",
                name: name.to_string(),
            }),
        }
    }

    /// Every PriorityClass held.
    pub fn priority_classes(&self) -> Arc<PriorityClasses> {
        self.priority_classes.read().clone()
    }

    pub fn upsert_namespace(&self, namespace: Namespace) -> UpdateOutcome {
        let table = self.table.lock();
        let mut namespaces = self.namespaces.write();
        if let Some(held) = namespaces.get(&namespace.name)
            && is_stale(namespace.resource_version, held.resource_version)
        {
            return UpdateOutcome {
                applied: false,
                resource_version: held.resource_version,
                revision: self.revision(),
            };
        }
        let rv = namespace.resource_version;
        Arc::make_mut(&mut namespaces).insert(namespace);
        UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(&table),
        }
    }

    /// Deletes a Namespace by name (and uid when given, which must then match); its pods
    /// stay until deleted.
    pub fn delete_namespace(
        &self,
        name: &str,
        uid: Option<&str>,
    ) -> Result<UpdateOutcome, CacheError> {
        let table = self.table.lock();
        let mut namespaces = self.namespaces.write();
        let held_uid = namespaces.get(name).map(|n| n.uid.clone());
        match held_uid {
            Some(held) if uid.is_none_or(|u| u.is_empty() || *u == *held) => {
                Arc::make_mut(&mut namespaces).remove(name);
                Ok(UpdateOutcome {
                    applied: true,
                    resource_version: 0,
                    revision: self.bump(&table),
                })
            }
            _ => Err(CacheError::NotFound {
                kind: "namespace",
                name: name.to_string(),
            }),
        }
    }

    /// Every Namespace held.
    pub fn namespaces(&self) -> Arc<Namespaces> {
        self.namespaces.read().clone()
    }

    /// Every held pod, in no particular order.
    pub fn pods(&self) -> Vec<Arc<Pod>> {
        self.pods.all()
    }

    /// The names of every node held.
    pub fn node_names(&self) -> Vec<Str> {
        let table = self.table.lock();
        table
            .all()
            .filter(|info| info.node.is_some())
            .map(|info| info.name.clone())
            .collect()
    }

    /// The namespace and name of every PodDisruptionBudget held.
    pub fn pdb_keys(&self) -> Vec<(Str, Str)> {
        self.pdbs.iter().map(|entry| entry.key().clone()).collect()
    }

    pub fn get_pod(&self, uid: &str) -> Option<Arc<Pod>> {
        self.pods.get(uid)
    }

    /// Gives a preemptor sent without a nomination the one the cache holds for it, as
    /// upstream re-reads the pod before preempting.
    pub fn fill_held_nomination(&self, preemptor: &mut Pod) {
        if preemptor
            .nominated_node_name
            .as_ref()
            .is_none_or(|n| n.is_empty())
        {
            preemptor.nominated_node_name = self
                .get_pod(preemptor.uid())
                .and_then(|held| held.nomination().cloned());
        }
    }

    pub fn get_pod_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods.get_by_name(namespace, name)
    }

    pub fn get_node(&self, name: &str) -> Option<Arc<Node>> {
        self.table.lock().get(name).and_then(|n| n.node.clone())
    }

    /// A consistent view of every node and PDB, in O(1).
    pub fn snapshot(&self) -> Snapshot {
        let mut table = self.table.lock();
        table.refresh_groups();
        Snapshot {
            nodes: table.nodes.clone(),
            index: table.index.clone(),
            pdbs: table.pdbs.clone(),
            revision: self.revision(),
            anti_affinity_nodes: table.anti_affinity_nodes,
            shared_label_keys: table.shared_label_keys.clone(),
            labels: table.labels.read().clone(),
            summaries: table.summaries.clone(),
            groups: table.groups.clone(),
            taint_sets: table.taint_sets.clone(),
            namespaces: self.namespaces.read().clone(),
        }
    }

    /// Every current nomination, sorted by node then pod.
    pub fn nominations(&self) -> Vec<Nomination> {
        let table = self.table.lock();
        let mut out: Vec<Nomination> = table
            .all()
            .flat_map(|info| {
                info.nominated.iter().map(|p| Nomination {
                    pod: p.pod_ref(),
                    priority: p.priority,
                    node: info.name.clone(),
                })
            })
            .collect();
        drop(table);
        out.sort_by(|a, b| (&a.node, &a.pod).cmp(&(&b.node, &b.pod)));
        out
    }

    pub fn counts(&self) -> CacheCounts {
        let table = self.table.lock();
        CacheCounts {
            nodes: table.nodes.len(),
            pods: self.pods.len(),
            nominated_pods: table.all().map(|n| n.nominated.len()).sum(),
            pdbs: self.pdbs.len(),
            priority_classes: self.priority_classes.read().len(),
            namespaces: self.namespaces.read().len(),
        }
    }

    /// Applies a preemption decision atomically: the preemptor becomes a pending pod
    /// nominated to the node, each victim is marked terminating by preemption (it keeps its
    /// resources until deleted), and the lower-priority nominations on the node are
    /// cleared. Fails without changing anything when the node changed since the decision.
    pub fn commit(&self, commit: &Commit) -> Result<(Vec<CommitChange>, u64), CommitConflict> {
        let mut table = self.table.lock();
        let current = table.get(&commit.node).map(|n| n.generation);
        let name_taken = self
            .pods
            .get_by_name(&commit.preemptor.namespace, commit.preemptor.name())
            .is_some_and(|held| held.uid() != commit.preemptor.uid());
        // A name taken by another uid since the decision: nothing is changed, and the
        // caller's re-check reports it.
        if current != Some(commit.node_generation) || name_taken {
            return Err(CommitConflict {
                node: commit.node.clone(),
            });
        }
        let mut changes = Vec::new();
        for victim in &commit.victims {
            let Some(held) = self.pods.get(&victim.uid) else {
                continue;
            };
            if held.terminating {
                continue;
            }
            let mut pod = (*held).clone();
            pod.terminating = true;
            pod.details_mut()
                .conditions
                .retain(|c| &*c.type_ != crate::model::DISRUPTION_TARGET);
            pod.details_mut().conditions.insert(
                0,
                crate::model::PodCondition {
                    type_: crate::model::DISRUPTION_TARGET.into(),
                    status: "True".into(),
                    reason: crate::model::PREEMPTION_BY_SCHEDULER.into(),
                },
            );
            let node = pod.node_name.clone().unwrap_or_else(|| Str::from(""));
            if self.put_pod(&mut table, Arc::new(pod)).is_ok() {
                changes.push(CommitChange::VictimMarked {
                    pod: victim.clone(),
                    node,
                });
            }
        }
        for cleared in &commit.nominations_to_clear {
            let Some(held) = self.pods.get(&cleared.uid) else {
                continue;
            };
            let mut pod = (*held).clone();
            pod.nominated_node_name = None;
            if self.put_pod(&mut table, Arc::new(pod)).is_ok() {
                changes.push(CommitChange::NominationCleared {
                    pod: cleared.clone(),
                    node: commit.node.clone(),
                });
            }
        }
        let mut preemptor = commit.preemptor.clone();
        preemptor.node_name = None;
        preemptor.nominated_node_name = Some(commit.node.clone());
        if let Some(held) = self.pods.get(preemptor.uid()) {
            preemptor.resource_version = held.resource_version;
        }
        let nomination = Nomination {
            pod: preemptor.pod_ref(),
            priority: preemptor.priority,
            node: commit.node.clone(),
        };
        if self.put_pod(&mut table, Arc::new(preemptor)).is_ok() {
            changes.push(CommitChange::Nominated(nomination));
        }
        Ok((changes, self.revision()))
    }

    /// Clears the preemptor's own nomination (a NO_CANDIDATE outcome). Returns the node it
    /// was nominated to, if it was.
    pub fn clear_nomination(&self, uid: &str) -> Option<(PodRef, Str)> {
        let mut table = self.table.lock();
        let held = self.pods.get(uid)?;
        let Place::Nominated(node) = Place::of(&held) else {
            return None;
        };
        let node = node.clone();
        let mut pod = (*held).clone();
        pod.nominated_node_name = None;
        self.put_pod(&mut table, Arc::new(pod)).ok()?;
        Some((held.pod_ref(), node))
    }
}

#[cfg(test)]
mod tests;
