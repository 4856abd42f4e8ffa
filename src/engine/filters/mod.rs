//! The filter plugins in upstream's default order, one module each as kube-scheduler lays
//! them out, split into the cluster-wide PreFilter state (computed once per decision) and
//! per-node checks that read a [`NodeScratch`]: the node's pods as a dry run has changed
//! them. This module holds what they share: statuses, the per-decision state, the one scan
//! over the nodes, and the dry run's scratch node.

mod inter_pod_affinity;
mod node_affinity;
mod node_name;
mod node_ports;
mod node_resources_fit;
mod node_unschedulable;
mod pod_topology_spread;
mod taint_toleration;

use triomphe::Arc;

use ahash::AHashMap as HashMap;
use rayon::prelude::*;

use crate::cache::{HardTaints, NodeInfo, Snapshot};
use crate::model::namespace::Namespaces;
use crate::model::{LabelSelector, Node, Pod, Resources, Str, Taint};

pub use inter_pod_affinity::{AffinityTerm, INTER_POD_AFFINITY, InterPodDelta, PairCounts};
pub use node_affinity::{
    NODE_AFFINITY, node_selector_matches, required_node_affinity_matches, term_matches,
};
pub use node_name::NODE_NAME;
pub use node_ports::NODE_PORTS;
pub use node_resources_fit::{NODE_RESOURCES_FIT, Occupied, fit, fit_status};
pub use node_unschedulable::{NODE_UNSCHEDULABLE, UNSCHEDULABLE_TAINT_KEY};
pub use pod_topology_spread::{POD_TOPOLOGY_SPREAD, SpreadConstraint};
pub use taint_toleration::{TAINT_TOLERATION, untolerated_taint, untolerated_taint_reason};

use inter_pod_affinity::InterPodCounts;
use node_ports::UsedPorts;
use node_unschedulable::tolerates_unschedulable;
use pod_topology_spread::add_count;

/// Upstream framework status codes (Success is `Status::success()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Code {
    /// The node passes.
    Success,
    /// The node fails, but preemption may make room.
    Unschedulable,
    /// The node fails, and preemption cannot change that.
    UnschedulableAndUnresolvable,
}

/// A filter result: the first failing plugin and its reasons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The result.
    pub code: Code,
    /// The first failing plugin; empty on success.
    pub plugin: &'static str,
    /// Why it failed.
    pub reasons: Reasons,
}

/// A status's reasons: inline for the usual one or two, so statuses do not allocate.
pub type Reasons = smallvec::SmallVec<[Reason; 2]>;

/// A failure reason; static in the common cases so a filter pass over many nodes does not
/// allocate a string per node.
pub type Reason = std::borrow::Cow<'static, str>;

impl Status {
    /// A passing status.
    pub fn success() -> Self {
        Status {
            code: Code::Success,
            plugin: "",
            reasons: Reasons::new(),
        }
    }

    /// The node passes.
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    /// The node is not in the snapshot (no plugin ran).
    pub fn node_not_found() -> Self {
        Status::unresolvable("", "node(s) not found")
    }

    fn unschedulable(plugin: &'static str, reason: impl Into<Reason>) -> Self {
        Status {
            code: Code::Unschedulable,
            plugin,
            reasons: smallvec::smallvec![reason.into()],
        }
    }

    fn unresolvable(plugin: &'static str, reason: impl Into<Reason>) -> Self {
        Status {
            code: Code::UnschedulableAndUnresolvable,
            plugin,
            reasons: smallvec::smallvec![reason.into()],
        }
    }
}

// ---------------------------------------------------------------------------------------
// The node-only filters: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity.

/// The filters that depend only on the node: NodeUnschedulable, NodeName, TaintToleration,
/// NodeAffinity — all UnschedulableAndUnresolvable.
pub fn static_filters(pod: &Pod, node: &Node) -> Status {
    static_failure(pod, node).map_or_else(Status::success, |f| f.status())
}

/// Which node-only filter fails first, without building its status: a filter pass over
/// many tainted nodes counts taints and words each one's reason once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaticFailure<'n> {
    /// `spec.unschedulable` is set and not tolerated.
    Unschedulable,
    /// The pod asks for another node by name.
    NodeName,
    /// This taint is not tolerated.
    Taint(&'n Taint),
    /// The pod's node selector or required node affinity does not match.
    NodeAffinity,
}

impl StaticFailure<'_> {
    /// The failure's full status.
    pub fn status(&self) -> Status {
        match self {
            StaticFailure::Unschedulable => {
                Status::unresolvable(NODE_UNSCHEDULABLE, "node(s) were unschedulable")
            }
            StaticFailure::NodeName => {
                Status::unresolvable(NODE_NAME, "node(s) didn't match the requested node name")
            }
            StaticFailure::Taint(taint) => {
                Status::unresolvable(TAINT_TOLERATION, untolerated_taint_reason(taint))
            }
            StaticFailure::NodeAffinity => Status::unresolvable(
                NODE_AFFINITY,
                "node(s) didn't match Pod's node affinity/selector",
            ),
        }
    }
}

/// [`static_failure`] on any node with these hard taints, for a pod that names no node and
/// has no node selector or required node affinity (nothing else of the node is read then).
pub fn hard_taints_failure<'n>(pod: &Pod, set: &'n HardTaints) -> Option<StaticFailure<'n>> {
    if set.unschedulable && !tolerates_unschedulable(pod) {
        return Some(StaticFailure::Unschedulable);
    }
    untolerated_taint(&set.taints, pod).map(StaticFailure::Taint)
}

/// The first node-only filter that fails, in upstream's order.
pub fn static_failure<'n>(pod: &Pod, node: &'n Node) -> Option<StaticFailure<'n>> {
    if node.unschedulable && !tolerates_unschedulable(pod) {
        return Some(StaticFailure::Unschedulable);
    }
    if node_name::names_other_node(pod, node) {
        return Some(StaticFailure::NodeName);
    }
    if let Some(taint) = untolerated_taint(&node.taints, pod) {
        return Some(StaticFailure::Taint(taint));
    }
    if !required_node_affinity_matches(pod, node) {
        return Some(StaticFailure::NodeAffinity);
    }
    None
}

/// The single `key=value` a selector requires, when that is all it requires.
fn single_label(selector: &LabelSelector) -> Option<(&Str, &Str)> {
    match (
        selector.match_labels.len(),
        selector.match_expressions.as_slice(),
    ) {
        (1, []) => selector.match_labels.iter().next(),
        (0, [only]) if only.operator == crate::model::Operator::In && only.values.len() == 1 => {
            Some((&only.key, &only.values[0]))
        }
        _ => None,
    }
}

/// What one pass over the nodes gathers.
struct NodeScanCounts {
    inter_pod: InterPodCounts,
    /// Per hard spread constraint: matching pods per eligible domain.
    spread: Vec<HashMap<Str, i64>>,
}

impl NodeScanCounts {
    fn merge(mut self, other: NodeScanCounts) -> Self {
        self.inter_pod = self.inter_pod.merge(other.inter_pod);
        for (into, from) in self.spread.iter_mut().zip(other.spread) {
            for (value, count) in from {
                add_count(into, &value, count);
            }
        }
        self
    }
}

/// From this many nodes on, the PreFilter scans run on the rayon pool.
const PARALLEL_NODES: usize = 256;

// ---------------------------------------------------------------------------------------
// The per-decision state.

/// What the filters know about the preemptor and the cluster (upstream's PreFilter
/// results), computed once per decision and read by every node evaluation.
pub struct PreFilter<'a> {
    /// The preemptor.
    pub pod: &'a Pod,
    affinity: Vec<AffinityTerm>,
    anti_affinity: Vec<AffinityTerm>,
    /// Whether the preemptor matches all its own affinity terms.
    self_affine: bool,
    affinity_counts: PairCounts,
    anti_affinity_counts: PairCounts,
    existing_anti_affinity_counts: PairCounts,
    /// InterPodAffinity has anything to check.
    inter_pod: bool,
    spread: Vec<SpreadConstraint>,
    /// Namespace labels, for existing pods' terms with a namespaceSelector.
    namespaces: Arc<Namespaces>,
}

impl<'a> PreFilter<'a> {
    /// The preemptor's state against `snapshot`.
    pub fn new(pod: &'a Pod, snapshot: &Snapshot) -> Self {
        let affinity: Vec<AffinityTerm> = pod
            .details
            .pod_affinity
            .iter()
            .map(|t| {
                AffinityTerm::new(t, &pod.namespace, &snapshot.namespaces).resolve_labels(snapshot)
            })
            .collect();
        let anti_affinity: Vec<AffinityTerm> = pod
            .details
            .pod_anti_affinity
            .iter()
            .map(|t| {
                AffinityTerm::new(t, &pod.namespace, &snapshot.namespaces)
                    .resolve_labels(snapshot)
                    .with_locality(snapshot)
            })
            .collect();
        let self_affine = affinity.iter().all(|t| t.matches(pod));
        let mut pre = PreFilter {
            pod,
            affinity,
            anti_affinity,
            self_affine,
            affinity_counts: PairCounts::default(),
            anti_affinity_counts: PairCounts::default(),
            existing_anti_affinity_counts: PairCounts::default(),
            inter_pod: false,
            spread: Vec::new(),
            namespaces: snapshot.namespaces.clone(),
        };
        pre.scan_nodes(snapshot);
        pre
    }

    /// One pass over the nodes gathers what InterPodAffinity and PodTopologySpread need
    /// (so each node's data is fetched from memory once), in parallel on large clusters.
    fn scan_nodes(&mut self, snapshot: &Snapshot) {
        self.build_spread(snapshot);
        let has_own_terms = !self.affinity.is_empty() || !self.anti_affinity.is_empty();
        let (scan_affinity, scan_anti) = self.inter_pod_scan();
        let scan_inter_pod =
            snapshot.anti_affinity_nodes > 0 || scan_affinity || !scan_anti.is_empty();
        if !scan_inter_pod && self.spread.is_empty() {
            self.inter_pod = has_own_terms;
            return;
        }
        let this = &*self;
        let visit = |counts: &mut NodeScanCounts, info: &Arc<NodeInfo>| {
            let Some(node) = info.node.as_deref() else {
                return;
            };
            if scan_inter_pod {
                this.count_inter_pod(info, node, scan_affinity, &scan_anti, &mut counts.inter_pod);
            }
            this.count_spread(info, node, &mut counts.spread);
        };
        let empty = || NodeScanCounts {
            inter_pod: InterPodCounts::default(),
            spread: vec![HashMap::default(); this.spread.len()],
        };
        let scan = |range: std::ops::Range<usize>| {
            let mut counts = empty();
            snapshot.for_each_node_prefetched(range, |info| visit(&mut counts, info));
            counts
        };
        let len = snapshot.nodes.len();
        let counts = if len >= PARALLEL_NODES {
            let parts = (len / PARALLEL_NODES).clamp(1, 2 * rayon::current_num_threads());
            let per_part = len.div_ceil(parts);
            (0..parts)
                .into_par_iter()
                .map(|part| scan(part * per_part..((part + 1) * per_part).min(len)))
                .reduce(empty, NodeScanCounts::merge)
        } else {
            scan(0..len)
        };
        self.set_inter_pod_counts(counts.inter_pod);
        self.inter_pod = has_own_terms || !self.existing_anti_affinity_counts.is_empty();
        self.set_spread_counts(counts.spread);
    }

    /// Upstream's InterPodAffinity PreFilter returns Skip: the pod has no required terms
    /// and no pod's required anti-affinity matches it, so its Filter is not run.
    pub fn inter_pod_skipped(&self) -> bool {
        !self.inter_pod
    }

    /// Runs no InterPodAffinity Filter from now on, as upstream's cycle state does once
    /// its PreFilter skipped, whatever pods are added later.
    pub fn skip_inter_pod(&mut self) {
        self.inter_pod = false;
    }

    /// Whether the preemptor's Filter on a node reads pods of other nodes: its spread or
    /// inter-pod terms, or existing pods' anti-affinity against it.
    pub fn reads_other_nodes(&self) -> bool {
        self.inter_pod || !self.spread.is_empty()
    }

    /// A scratch copy of `info` for dry runs.
    pub fn scratch<'n>(&self, info: &'n NodeInfo) -> Option<NodeScratch<'n>> {
        let node = info.node.as_deref()?;
        let spread_eligible = !self.spread.is_empty() && self.has_all_spread_keys(node);
        let spread_included = (0..self.spread.len())
            .map(|i| spread_eligible && self.spread_node_included(i, node))
            .collect();
        Some(NodeScratch {
            info,
            node,
            removed: Vec::new(),
            used_ports: self.wants_ports().then(|| UsedPorts::of(info)),
            pod_count: info.pods.len() as i64,
            requested: info.requested.clone(),
            inter_pod: InterPodDelta::default(),
            spread_delta: smallvec::smallvec![0; self.spread.len()],
            spread_included,
        })
    }

    /// Adds (`+1`) or removes (`-1`) a pod on the scratch node, updating resources and
    /// the affinity/spread state as upstream's PreFilter AddPod/RemovePod extensions do.
    fn apply(&self, scratch: &mut NodeScratch<'_>, pod: &Pod, sign: i64) {
        if sign > 0 {
            scratch.requested.add(pod.requests());
        } else {
            scratch.requested.sub(pod.requests());
        }
        scratch.pod_count += sign;
        if let Some(used) = &mut scratch.used_ports {
            if sign > 0 {
                used.add(pod);
            } else {
                used.remove(pod);
            }
        }
        if self.inter_pod {
            let node = scratch.node;
            self.update_inter_pod_local(pod, node, sign, &mut scratch.inter_pod);
        }
        self.update_spread_local(scratch, pod, sign);
    }

    /// Removes the `index`-th bound pod of the node from the scratch.
    pub fn remove_bound<'n>(&self, scratch: &mut NodeScratch<'n>, index: usize) {
        if scratch.removed.is_empty() {
            scratch.removed = vec![false; scratch.info.pods.len()];
        }
        if !scratch.removed[index] {
            scratch.removed[index] = true;
            let info: &'n NodeInfo = scratch.info;
            self.apply(scratch, &info.pods[index], -1);
        }
    }

    /// Puts the `index`-th bound pod back.
    pub fn restore_bound<'n>(&self, scratch: &mut NodeScratch<'n>, index: usize) {
        if scratch.removed.get(index).copied().unwrap_or(false) {
            scratch.removed[index] = false;
            let info: &'n NodeInfo = scratch.info;
            self.apply(scratch, &info.pods[index], 1);
        }
    }

    /// The pods nominated to this node that occupy room for the preemptor: priority
    /// ≥ the preemptor's, never the preemptor itself.
    pub fn nominated_pods<'n>(&self, info: &'n NodeInfo) -> impl Iterator<Item = &'n Pod> {
        let pod = self.pod;
        info.nominated
            .iter()
            .map(|p| &**p)
            .filter(move |p| p.priority >= pod.priority && p.uid() != pod.uid())
    }

    /// Upstream `RunFilterPluginsWithNominatedPods` for the pod-dependent filters: first
    /// with the nominated pods added, then (if any were added and that passed) without.
    pub fn fits_with_nominated(&self, scratch: &mut NodeScratch<'_>) -> Status {
        let info = scratch.info;
        if info.nominated.is_empty() {
            return self.dynamic_filters(scratch);
        }
        let nominated: Vec<&Pod> = self.nominated_pods(info).collect();
        if !nominated.is_empty() {
            // Upstream adds the nominated pods to a copy of the node: removing them again
            // from a port set could drop entries that bound pods still hold.
            let ports_before = scratch.used_ports.clone();
            for p in &nominated {
                self.apply(scratch, p, 1);
            }
            let status = self.dynamic_filters(scratch);
            for p in &nominated {
                self.apply(scratch, p, -1);
            }
            scratch.used_ports = ports_before;
            if !status.is_success() {
                return status;
            }
        }
        self.dynamic_filters(scratch)
    }

    /// NodePorts, NodeResourcesFit, PodTopologySpread, InterPodAffinity, in that order.
    pub fn dynamic_filters(&self, scratch: &NodeScratch<'_>) -> Status {
        let status = self.ports_fit(scratch);
        if !status.is_success() {
            return status;
        }
        let status = self.resources_fit(scratch);
        if !status.is_success() {
            return status;
        }
        if !self.spread.is_empty() {
            let status = self.spread_fits(scratch);
            if !status.is_success() {
                return status;
            }
        }
        if self.inter_pod {
            let status = self.inter_pod_fits(scratch);
            if !status.is_success() {
                return status;
            }
        }
        Status::success()
    }
}

/// One node's state during a dry run: which bound pods are removed, which nominated pods
/// are added, and the resulting aggregates.
pub struct NodeScratch<'n> {
    /// The node's cache entry.
    pub info: &'n NodeInfo,
    /// The node.
    pub node: &'n Node,
    removed: Vec<bool>,
    /// The node's host ports, kept only when the preemptor binds one.
    used_ports: Option<UsedPorts>,
    pod_count: i64,
    requested: Resources,
    inter_pod: InterPodDelta,
    spread_delta: smallvec::SmallVec<[i64; 2]>,
    spread_included: smallvec::SmallVec<[bool; 2]>,
}
