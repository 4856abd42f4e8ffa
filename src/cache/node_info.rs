//! One node's entry: the node, its pods and nominated pods, and what the engine reads
//! of them without scanning the pods (requests, label counts, priority levels).

use triomphe::Arc;

use crate::model::{HostPort, Node, Pod, Resources, Str};

use super::LabelId;

/// What the cache holds for one node name: the node (once it arrived), the pods bound to
/// it and the pending pods nominated to it.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    /// The node's name.
    pub name: Str,
    /// The node, once it arrived (nominated pods can name a node not yet known).
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
    /// Host ports a pod of `pods` binds that upstream's port set of this node no longer
    /// holds: a snapshot edit took off another pod binding the same one, and upstream's
    /// `HostPortInfo` is a set, not a count. Empty in the cache.
    pub forgotten_ports: Vec<HostPort>,
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
    /// The priority.
    pub priority: i32,
    /// Pods at this priority.
    pub pods: i64,
    /// Their summed milli-CPU requests.
    pub milli_cpu: i64,
    /// Their summed memory requests.
    pub memory: i64,
    /// Their summed ephemeral storage requests.
    pub ephemeral_storage: i64,
    /// Largest single pod's request at this priority.
    pub max_milli_cpu: i64,
    /// Largest single pod's memory request at this priority.
    pub max_memory: i64,
    /// Largest single pod's ephemeral storage request at this priority.
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
    /// The counts of label `id`, if a pod on the node carries it.
    pub fn get(&self, id: LabelId) -> Option<&LabelCount> {
        // A forward scan: the block is read in order, so the prefetcher hides the misses
        // a binary search would wait for one after another.
        self.0
            .iter()
            .find(|(known, _)| *known >= id)
            .filter(|(known, _)| *known == id)
            .map(|(_, count)| count)
    }

    /// No pod on the node carries a label.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many distinct labels the node's pods carry.
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

/// How many of a node's pods carry one label.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabelCount {
    /// Every pod with the label.
    pub all: u32,
    /// Pods with the label that are not terminating.
    pub live: u32,
}

impl NodeInfo {
    pub(super) fn empty(name: Str) -> Self {
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
            forgotten_ports: Vec::new(),
        }
    }

    pub(super) fn is_vacant(&self) -> bool {
        self.node.is_none() && self.pods.is_empty() && self.nominated.is_empty()
    }

    /// Whether a list holds room for more than it has (lists grow by doubling).
    pub(super) fn has_spare_capacity(&self) -> bool {
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

    pub(super) fn add_pod(&mut self, pod: Arc<Pod>, label_ids: &[LabelId]) {
        self.add_to_level(&pod);
        self.index_labels(&pod, label_ids.iter().copied(), 1);
        self.requested.add(pod.requests());
        if pod.has_required_anti_affinity() {
            self.anti_affinity_pods += 1;
        }
        self.pods.push(pod);
    }

    pub(super) fn remove_pod(
        &mut self,
        uid: &str,
        label_ids: &[Option<LabelId>],
    ) -> Option<Arc<Pod>> {
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

    /// A copy of this entry without the pods at `positions` (the kept ones' label ids in
    /// `kept_label_ids`, in order), what is derived from the pods rebuilt.
    pub(super) fn without(&self, positions: &[usize], kept_label_ids: &[Vec<LabelId>]) -> NodeInfo {
        let mut info = NodeInfo {
            name: self.name.clone(),
            node: self.node.clone(),
            pods: Vec::with_capacity(self.pods.len().saturating_sub(positions.len())),
            requested: Resources::default(),
            nominated: self.nominated.clone(),
            generation: self.generation,
            anti_affinity_pods: 0,
            label_counts: LabelCounts::default(),
            levels: smallvec::SmallVec::new(),
            forgotten_ports: self.forgotten_ports.clone(),
        };
        let mut ids = kept_label_ids.iter();
        for (i, pod) in self.pods.iter().enumerate() {
            if !positions.contains(&i) {
                info.add_pod(pod.clone(), ids.next().map_or(&[], Vec::as_slice));
            }
        }
        info
    }

    pub(super) fn remove_nominated(&mut self, uid: &str) -> Option<Arc<Pod>> {
        let index = self.nominated.iter().position(|p| p.uid() == uid)?;
        Some(self.nominated.swap_remove(index))
    }
}
