//! The node table the writer lock guards: node entries in a persistent vector, their
//! digests and groups, and the entries whose node has not arrived.

use triomphe::Arc;

use crate::model::{Node, Pod, PodDisruptionBudget, Str};

use super::interned::Interned;
use super::labels::LabelInterner;
use super::{
    GROUP_NODES, HardTaints, MAX_TAINT_SETS, NO_HARD_TAINTS, NodeGroup, NodeInfo, NodeSummary,
    READ_NODE,
};

/// Node name → position in the node vector (a persistent map, so snapshots share it).
pub(super) type NodeIndex =
    imbl::GenericHashMap<Str, usize, ahash::RandomState, imbl::shared_ptr::DefaultSharedPtr>;

/// Where a pod is placed: borrowed from the pod, as a bulk load's applier asks at every
/// pod, and a count changed there would be a locked instruction per ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place<'a> {
    Bound(&'a Str),
    Nominated(&'a Str),
    Pending,
}

impl Place<'_> {
    pub(super) fn of(pod: &Pod) -> Place<'_> {
        match (&pod.node_name, pod.nomination()) {
            (Some(node), _) => Place::Bound(node),
            (None, Some(node)) => Place::Nominated(node),
            (None, None) => Place::Pending,
        }
    }
}

/// The node entries: existing nodes in a persistent vector (cheap snapshots), entries
/// whose node has not arrived (or was deleted) but that hold pods or nominations aside.
#[derive(Default)]
pub(super) struct NodeTable {
    pub(super) nodes: imbl::Vector<Arc<NodeInfo>>,
    /// `summaries[i]` digests `nodes[i]`.
    pub(super) summaries: imbl::Vector<NodeSummary>,
    /// `groups[g]` digests `summaries[g * GROUP_NODES ..]`, except the groups in
    /// `stale_groups` (rebuilt when a snapshot is taken, so a bulk load rebuilds each once).
    pub(super) groups: imbl::Vector<Arc<NodeGroup>>,
    stale_groups: Vec<usize>,
    /// `stale[g]`: `g` is in `stale_groups`.
    stale: Vec<bool>,
    /// Interned hard-taint sets, never dropped (at most [`MAX_TAINT_SETS`]): id `k` is
    /// `taint_sets[k - 1]`.
    pub(super) taint_sets: imbl::Vector<Arc<HardTaints>>,
    taint_set_ids: hashbrown::HashMap<Arc<HardTaints>, u16>,
    pub(super) index: NodeIndex,
    orphans: std::collections::HashMap<Str, NodeInfo>,
    pub(super) pdbs: Arc<Vec<Arc<PodDisruptionBudget>>>,
    /// Nodes holding a pod with required anti-affinity (lets decisions skip the scan).
    pub(super) anti_affinity_nodes: usize,
    /// How many nodes carry each label pair.
    node_label_pairs: hashbrown::HashMap<(Str, Str), u32>,
    /// Per label key, how many of its values two or more nodes carry.
    shared_values: hashbrown::HashMap<Str, u32>,
    /// The keys of `shared_values`, as snapshots see them.
    pub(super) shared_label_keys: Arc<std::collections::HashSet<Str>>,
    /// During [`ClusterCache::upsert_pods`]: the entries edited so far, filed once at the
    /// end, so a batch copies each touched entry once instead of once per change.
    pub(super) staged: Option<hashbrown::HashMap<Str, NodeInfo>>,
    /// Ids of the labels of every bound pod.
    pub(super) labels: LabelInterner,
    /// Values nodes and pods have in common.
    pub(super) interned: Interned,
}

/// Applies `change` to an entry being edited, which makes it a new generation.
fn change_entry<R>(info: &mut NodeInfo, change: impl FnOnce(&mut NodeInfo) -> R) -> R {
    let result = change(info);
    info.generation += 1;
    result
}

impl NodeTable {
    pub(super) fn get(&self, name: &str) -> Option<&NodeInfo> {
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
    pub(super) fn edit<R>(&mut self, name: &Str, change: impl FnOnce(&mut NodeInfo) -> R) -> R {
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
    pub(super) fn unstage(&mut self) {
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
    pub(super) fn refresh_groups(&mut self) {
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

    pub(super) fn share_labels(&mut self, node: &mut Node) {
        self.interned.strings.sweep();
        let strings = &mut self.interned.strings;
        node.labels = node.labels.with_shared_strings(|s| strings.share(s));
    }

    /// See [`Pod::compact`].
    pub(super) fn compact_pod(&mut self, pod: &mut Pod) {
        self.interned.sweep();
        self.interned.bulk = self.staged.is_some();
        pod.compact(&mut self.interned);
    }

    pub(super) fn all(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.iter().map(|n| &**n).chain(self.orphans.values())
    }
}
