//! A consistent read view of the cache for one decision.

use triomphe::Arc;

use crate::model::namespace::Namespaces;
use crate::model::{PodDisruptionBudget, Str};

use super::pod_groups::PodGroupIndex;
use super::table::NodeIndex;
use super::{HardTaints, LabelId, LabelIds, NodeGroup, NodeInfo, NodeSummary};

/// A consistent read view for one decision. Cloning is O(1).
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Every node that exists, in no particular order (the engine never depends on it).
    pub nodes: imbl::Vector<Arc<NodeInfo>>,
    pub(super) index: NodeIndex,
    /// Every PodDisruptionBudget, in (namespace, name) order whatever order they arrived
    /// in: a victim's budgets are walked in it (v1.37's classification depends on it).
    pub pdbs: Arc<Vec<Arc<PodDisruptionBudget>>>,
    /// The cache revision the snapshot was taken at.
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
    /// PodGroups and Workloads, with each group's bound members.
    pub pod_groups: PodGroupIndex,
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

    /// Node `name`, if the snapshot holds it.
    pub fn node(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).and_then(|&i| self.nodes.get(i))
    }

    /// Whether no two nodes carry the same value of label `key`: a topology domain of
    /// that key is then one node.
    pub fn key_is_node_unique(&self, key: &str) -> bool {
        !self.shared_label_keys.contains(key)
    }

    /// The position of node `name` in `nodes`, if the snapshot holds it.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The id under which node entries count pods labelled `key=value` in `namespace`;
    /// `None` when no pod in the snapshot carries that label.
    pub fn label_id(&self, namespace: &str, key: &str, value: &str) -> Option<LabelId> {
        self.labels.get(namespace, key, value)
    }
}
