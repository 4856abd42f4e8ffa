//! The filter plugins in upstream's default order, split into the cluster-wide
//! PreFilter state (computed once per decision) and per-node checks that read a
//! [`NodeScratch`]: the node's pods as a dry run has changed them.

use triomphe::Arc;

use ahash::AHashMap as HashMap;
use rayon::prelude::*;

use crate::cache::{HardTaints, LabelId, NodeInfo, NodeSummary, Snapshot};
use crate::model::namespace::Namespaces;
use crate::model::{
    HostPort, InclusionPolicy, LabelSelector, Node, NodeSelector, NodeSelectorOperator,
    NodeSelectorRequirement, Pod, PodAffinityTerm, Resources, Str, Taint, TaintEffect,
    WhenUnsatisfiable, labels::optional_matches,
};

/// Upstream framework status codes (Success is `Status::success()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Code {
    Success,
    Unschedulable,
    UnschedulableAndUnresolvable,
}

/// A filter result: the first failing plugin and its reasons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub plugin: &'static str,
    pub reasons: Reasons,
}

/// A status's reasons: inline for the usual one or two, so statuses do not allocate.
pub type Reasons = smallvec::SmallVec<[Reason; 2]>;

/// A failure reason; static in the common cases so a filter pass over many nodes does not
/// allocate a string per node.
pub type Reason = std::borrow::Cow<'static, str>;

impl Status {
    pub fn success() -> Self {
        Status {
            code: Code::Success,
            plugin: "",
            reasons: Reasons::new(),
        }
    }

    pub fn is_success(&self) -> bool {
        self.code == Code::Success
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

pub const NODE_UNSCHEDULABLE: &str = "NodeUnschedulable";
pub const NODE_NAME: &str = "NodeName";
pub const TAINT_TOLERATION: &str = "TaintToleration";
pub const NODE_AFFINITY: &str = "NodeAffinity";
pub const NODE_PORTS: &str = "NodePorts";
pub const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";
pub const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";
pub const INTER_POD_AFFINITY: &str = "InterPodAffinity";

pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

// ---------------------------------------------------------------------------------------
// Node-level matching helpers (no pods involved).

/// First taint with effect NoSchedule/NoExecute that no toleration tolerates.
pub fn untolerated_taint<'a>(taints: &'a [Taint], pod: &Pod) -> Option<&'a Taint> {
    taints.iter().find(|t| {
        matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
            && !pod.details.tolerations.iter().any(|tol| tol.tolerates(t))
    })
}

fn requirement_matches(req: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = &req.values;
    let parse_single = || -> Option<i64> {
        if values.len() == 1 {
            values[0].parse::<i64>().ok()
        } else {
            None
        }
    };
    match req.operator {
        NodeSelectorOperator::In => {
            !values.is_empty() && value.is_some_and(|v| values.iter().any(|x| &**x == v))
        }
        NodeSelectorOperator::NotIn => {
            !values.is_empty() && value.is_none_or(|v| !values.iter().any(|x| &**x == v))
        }
        NodeSelectorOperator::Exists => values.is_empty() && value.is_some(),
        NodeSelectorOperator::DoesNotExist => values.is_empty() && value.is_none(),
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            let (Some(bound), Some(v)) = (parse_single(), value) else {
                return false;
            };
            let Ok(v) = v.parse::<i64>() else {
                return false;
            };
            if req.operator == NodeSelectorOperator::Gt {
                v > bound
            } else {
                v < bound
            }
        }
    }
}

fn field_matches(req: &NodeSelectorRequirement, node: &Node) -> bool {
    // Only `metadata.name` is a node field; In/NotIn with exactly one value are the only
    // valid forms (anything else makes the term invalid, i.e. not matching).
    let field = if &*req.key == "metadata.name" {
        &*node.name
    } else {
        ""
    };
    if req.values.len() != 1 {
        return false;
    }
    match req.operator {
        NodeSelectorOperator::In => field == &*req.values[0],
        NodeSelectorOperator::NotIn => field != &*req.values[0],
        _ => false,
    }
}

/// Required node affinity: OR over terms, AND within; empty terms match nothing.
pub fn node_selector_matches(selector: &NodeSelector, node: &Node) -> bool {
    selector.terms.iter().any(|term| {
        (!term.match_expressions.is_empty() || !term.match_fields.is_empty())
            && term
                .match_expressions
                .iter()
                .all(|r| requirement_matches(r, node.labels.get(&r.key).map(|v| &**v)))
            && term.match_fields.iter().all(|r| field_matches(r, node))
    })
}

/// nodeSelector and required node affinity (upstream `RequiredNodeAffinity.Match`).
pub fn required_node_affinity_matches(pod: &Pod, node: &Node) -> bool {
    pod.details.node_selector.is_subset_of(&node.labels)
        && pod
            .details
            .required_node_affinity
            .as_ref()
            .is_none_or(|s| node_selector_matches(s, node))
}

/// The filters that depend only on the node: NodeUnschedulable, NodeName, TaintToleration,
/// NodeAffinity — all UnschedulableAndUnresolvable.
pub fn static_filters(pod: &Pod, node: &Node) -> Status {
    static_failure(pod, node).map_or_else(Status::success, |f| f.status())
}

/// Which node-only filter fails first, without building its status: a filter pass over
/// many tainted nodes counts taints and words each one's reason once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaticFailure<'n> {
    Unschedulable,
    NodeName,
    Taint(&'n Taint),
    NodeAffinity,
}

impl StaticFailure<'_> {
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

/// TaintToleration's reason for `taint`.
pub fn untolerated_taint_reason(taint: &Taint) -> String {
    format!(
        "node(s) had untolerated taint {{{}: {}}}",
        taint.key, taint.value
    )
}

/// Whether the pod tolerates the taint NodeUnschedulable stands for.
fn tolerates_unschedulable(pod: &Pod) -> bool {
    pod.details.tolerations.iter().any(|t| {
        t.tolerates(&Taint {
            key: UNSCHEDULABLE_TAINT_KEY.into(),
            value: "".into(),
            effect: TaintEffect::NoSchedule,
        })
    })
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
    if let Some(name) = &pod.node_name
        && !name.is_empty()
        && *name != node.name
    {
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

// ---------------------------------------------------------------------------------------
// Inter-pod affinity.

/// An affinity term with its namespace set resolved.
#[derive(Clone, Debug)]
pub struct AffinityTerm {
    selector: Option<LabelSelector>,
    namespace_names: Vec<Str>,
    /// `Some` selects namespaces by their labels (an empty selector selects all).
    namespace_selector: Option<LabelSelector>,
    /// The labels a non-empty `namespace_selector` is matched against.
    namespaces: Option<Arc<Namespaces>>,
    pub topology_key: Str,
    /// For a one-label selector over listed namespaces: the label's id in each namespace
    /// where some pod carries it (see [`AffinityTerm::resolve_labels`]).
    label_ids: Option<smallvec::SmallVec<[LabelId; 2]>>,
    /// The topology key names one node per value (see [`Snapshot::key_is_node_unique`]):
    /// a domain's count is the node's own, read when the node is checked instead of
    /// gathered over the cluster beforehand.
    node_local: bool,
}

impl AffinityTerm {
    pub fn new(
        term: &PodAffinityTerm,
        owner_namespace: &Str,
        namespaces: &Arc<Namespaces>,
    ) -> Self {
        let mut namespaces_listed =
            if term.namespaces.is_empty() && term.namespace_selector.is_none() {
                vec![owner_namespace.clone()]
            } else {
                term.namespaces.clone()
            };
        // A set upstream: a namespace listed twice still counts its pods once.
        namespaces_listed.sort_unstable();
        namespaces_listed.dedup();
        AffinityTerm {
            selector: term.label_selector.clone(),
            namespace_names: namespaces_listed,
            namespace_selector: term.namespace_selector.clone(),
            namespaces: term
                .namespace_selector
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|_| namespaces.clone()),
            topology_key: term.topology_key.clone(),
            label_ids: None,
            node_local: false,
        }
    }

    /// Marks the term node-local when its topology key names one node per value.
    fn with_locality(mut self, snapshot: &Snapshot) -> Self {
        self.node_local = snapshot.key_is_node_unique(&self.topology_key);
        self
    }

    /// Resolves a one-label selector to label ids so [`Self::count_on`] reads each node's
    /// label index instead of its pods.
    fn resolve_labels(mut self, snapshot: &Snapshot) -> Self {
        if self.namespace_selector.is_none()
            && let Some((key, value)) = self.selector.as_ref().and_then(single_label)
        {
            self.label_ids = Some(
                self.namespace_names
                    .iter()
                    .filter_map(|ns| snapshot.label_id(ns, key, value))
                    .collect(),
            );
        }
        self
    }

    /// Upstream `AffinityTerm.Matches`.
    pub fn matches(&self, pod: &Pod) -> bool {
        let in_namespace = self.namespace_names.contains(&pod.namespace)
            || self.namespace_selector.as_ref().is_some_and(|s| {
                s.is_empty()
                    || self
                        .namespaces
                        .as_ref()
                        .is_some_and(|all| s.matches(&all.labels(&pod.namespace)))
            });
        in_namespace && optional_matches(self.selector.as_ref(), &pod.labels)
    }
}

impl AffinityTerm {
    /// Pods on the node this term matches; O(1) through the node's label index when the
    /// term is one label over listed namespaces.
    fn count_on(&self, info: &NodeInfo) -> i64 {
        if let Some(ids) = &self.label_ids {
            return ids
                .iter()
                .map(|&id| info.count_label(id, false) as i64)
                .sum();
        }
        info.pods.iter().filter(|p| self.matches(p)).count() as i64
    }

    /// Whether [`Self::count_on`] is zero on every node of the snapshot it was resolved on.
    fn matches_nothing(&self) -> bool {
        self.label_ids.as_ref().is_some_and(|ids| ids.is_empty())
    }
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

type Pair = (Str, Str);

/// Counts keyed by (topology key, value), as upstream's `topologyToMatchedTermCount` map
/// (which deletes entries that drop to zero, so "empty" means "no non-zero entry").
#[derive(Clone, Debug, Default)]
pub struct PairCounts {
    counts: HashMap<Str, HashMap<Str, i64>>,
    nonzero: usize,
}

impl PairCounts {
    fn add(&mut self, key: &Str, node: &Node, delta: i64) {
        if let Some(value) = node.labels.get(key) {
            self.add_pair(key.clone(), value.clone(), delta);
        }
    }

    fn add_pair(&mut self, key: Str, value: Str, delta: i64) {
        // Look up by reference first: most pairs exist already, so no `Arc` is cloned.
        let values = match self.counts.get_mut(&*key) {
            Some(values) => values,
            None => self.counts.entry(key).or_default(),
        };
        let entry = match values.get_mut(&*value) {
            Some(entry) => entry,
            None => values.entry(value).or_insert(0),
        };
        let before = *entry;
        *entry += delta;
        match (before != 0, *entry != 0) {
            (false, true) => self.nonzero += 1,
            (true, false) => self.nonzero -= 1,
            _ => {}
        }
    }

    fn merge(mut self, other: PairCounts) -> Self {
        for (key, values) in other.counts {
            for (value, count) in values {
                self.add_pair(key.clone(), value, count);
            }
        }
        self
    }

    fn get(&self, key: &str, value: &str) -> i64 {
        self.counts
            .get(key)
            .and_then(|values| values.get(value))
            .copied()
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.nonzero == 0
    }
}

/// The cluster-wide inter-pod counts, gathered over the nodes (in parallel on large
/// clusters).
#[derive(Default)]
struct InterPodCounts {
    existing_anti: PairCounts,
    affinity: PairCounts,
    anti: PairCounts,
}

impl InterPodCounts {
    fn merge(self, other: InterPodCounts) -> Self {
        InterPodCounts {
            existing_anti: self.existing_anti.merge(other.existing_anti),
            affinity: self.affinity.merge(other.affinity),
            anti: self.anti.merge(other.anti),
        }
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

/// Adds `count` to the domain `value`, registering the domain if new.
fn add_count(counts: &mut HashMap<Str, i64>, value: &Str, count: i64) {
    match counts.get_mut(&**value) {
        Some(n) => *n += count,
        None => {
            counts.insert(value.clone(), count);
        }
    }
}

/// From this many nodes on, the PreFilter scans run on the rayon pool.
const PARALLEL_NODES: usize = 256;

/// Local changes of pair counts during one node's dry run (only pairs of that node).
#[derive(Clone, Debug, Default)]
struct PairDelta(Vec<(Pair, i64)>);

impl PairDelta {
    fn add(&mut self, key: &Str, node: &Node, delta: i64) {
        if let Some(value) = node.labels.get(key) {
            if let Some(entry) = self.0.iter_mut().find(|((k, v), _)| k == key && v == value) {
                entry.1 += delta;
            } else {
                self.0.push(((key.clone(), value.clone()), delta));
            }
        }
    }

    fn count(&self, global: &PairCounts, key: &str, value: &str) -> i64 {
        global.get(key, value)
            + self
                .0
                .iter()
                .find(|((k, v), _)| &**k == key && &**v == value)
                .map(|(_, d)| *d)
                .unwrap_or(0)
    }

    /// Whether `global + self` has no non-zero entry.
    fn is_empty_with(&self, global: &PairCounts) -> bool {
        let mut nonzero = global.nonzero as i64;
        for ((k, v), d) in &self.0 {
            let before = global.get(k, v);
            let after = before + d;
            nonzero += (after != 0) as i64 - (before != 0) as i64;
        }
        nonzero == 0
    }
}

// ---------------------------------------------------------------------------------------
// Topology spread.

#[derive(Clone, Debug)]
pub struct SpreadConstraint {
    max_skew: i64,
    pub topology_key: Str,
    selector: Option<LabelSelector>,
    min_domains: i64,
    honor_node_affinity: bool,
    honor_taints: bool,
    self_match: bool,
    /// For a one-label selector: the label's id in the preemptor's namespace (`None`
    /// inside when no pod carries it).
    label_id: Option<Option<LabelId>>,
    /// Eligible domains and their matching-pod counts.
    counts: HashMap<Str, i64>,
    /// The two smallest (value, count), for the global minimum with one domain changed.
    smallest: [Option<(Str, i64)>; 2],
}

impl SpreadConstraint {
    fn min_excluding(&self, value: &str) -> Option<i64> {
        match &self.smallest {
            [Some((v, _)), second] if &**v == value => second.as_ref().map(|(_, c)| *c),
            [Some((_, c)), _] => Some(*c),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The per-decision state.

/// What the filters know about the preemptor and the cluster (upstream's PreFilter
/// results), computed once per decision and read by every node evaluation.
pub struct PreFilter<'a> {
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
        // Terms whose label no pod carries count zero everywhere: no need to visit nodes.
        let scan_affinity = match self.affinity.as_slice() {
            [] => false,
            [only] => !only.matches_nothing(),
            _ => true,
        };
        let scan_anti: Vec<&AffinityTerm> = self
            .anti_affinity
            .iter()
            .filter(|t| !t.matches_nothing() && !t.node_local)
            .collect();
        let scan_inter_pod =
            snapshot.anti_affinity_nodes > 0 || scan_affinity || !scan_anti.is_empty();
        if !scan_inter_pod && self.spread.is_empty() {
            self.inter_pod = has_own_terms;
            return;
        }
        let this = &*self;
        let pod = this.pod;
        let visit = |counts: &mut NodeScanCounts, info: &Arc<NodeInfo>| {
            let Some(node) = info.node.as_deref() else {
                return;
            };
            if scan_inter_pod {
                this.count_inter_pod(info, node, scan_affinity, &scan_anti, &mut counts.inter_pod);
            }
            if !this.spread.is_empty() && this.has_all_spread_keys(node) {
                for (i, c) in this.spread.iter().enumerate() {
                    if !this.spread_node_included(i, node) {
                        continue;
                    }
                    let count = match c.label_id {
                        Some(id) => id.map_or(0, |id| info.count_label(id, true) as i64),
                        None => info
                            .pods
                            .iter()
                            .filter(|p| {
                                !p.terminating
                                    && p.namespace == pod.namespace
                                    && optional_matches(c.selector.as_ref(), &p.labels)
                            })
                            .count() as i64,
                    };
                    if let Some(value) = node.labels.get(&c.topology_key) {
                        add_count(&mut counts.spread[i], value, count);
                    }
                }
            }
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
        self.existing_anti_affinity_counts = counts.inter_pod.existing_anti;
        self.affinity_counts = counts.inter_pod.affinity;
        self.anti_affinity_counts = counts.inter_pod.anti;
        self.inter_pod = has_own_terms || !self.existing_anti_affinity_counts.is_empty();
        for (c, counts) in self.spread.iter_mut().zip(counts.spread) {
            c.counts = counts;
            let mut all: Vec<(Str, i64)> = c.counts.iter().map(|(v, n)| (v.clone(), *n)).collect();
            all.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            c.smallest = [all.first().cloned(), all.get(1).cloned()];
        }
    }

    /// One node's share of the inter-pod counts.
    fn count_inter_pod(
        &self,
        info: &NodeInfo,
        node: &Node,
        scan_affinity: bool,
        scan_anti: &[&AffinityTerm],
        counts: &mut InterPodCounts,
    ) {
        // Existing pods' anti-affinity terms that match the preemptor.
        if info.anti_affinity_pods > 0 {
            for existing in info.pods.iter().filter(|p| p.has_required_anti_affinity()) {
                for term in &existing.details.pod_anti_affinity {
                    let term = AffinityTerm::new(term, &existing.namespace, &self.namespaces);
                    if term.matches(self.pod) {
                        counts.existing_anti.add(&term.topology_key, node, 1);
                    }
                }
            }
        }
        // The preemptor's affinity: pods matching all its terms count for every term.
        if scan_affinity {
            let count = match self.affinity.as_slice() {
                [only] => only.count_on(info),
                terms => info
                    .pods
                    .iter()
                    .filter(|p| terms.iter().all(|t| t.matches(p)))
                    .count() as i64,
            };
            if count > 0 {
                for term in &self.affinity {
                    counts.affinity.add(&term.topology_key, node, count);
                }
            }
        }
        for term in scan_anti {
            let count = term.count_on(info);
            if count > 0 {
                counts.anti.add(&term.topology_key, node, count);
            }
        }
    }

    /// The preemptor's hard spread constraints, without counts yet.
    fn build_spread(&mut self, snapshot: &Snapshot) {
        let pod = self.pod;
        let hard: Vec<_> = pod
            .details
            .topology_spread
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
            .collect();
        self.spread = hard
            .iter()
            .map(|c| {
                let extra: Vec<(Str, Str)> = c
                    .match_label_keys
                    .iter()
                    .filter_map(|k| pod.labels.get(k).map(|v| (k.clone(), v.clone())))
                    .collect();
                let selector = c.label_selector.as_ref().map(|s| s.with_labels(&extra));
                let self_match = optional_matches(selector.as_ref(), &pod.labels);
                let label_id = selector
                    .as_ref()
                    .and_then(single_label)
                    .map(|(key, value)| snapshot.label_id(&pod.namespace, key, value));
                SpreadConstraint {
                    label_id,
                    max_skew: c.max_skew as i64,
                    topology_key: c.topology_key.clone(),
                    selector,
                    min_domains: c.min_domains.unwrap_or(1) as i64,
                    honor_node_affinity: c.node_affinity_policy == InclusionPolicy::Honor,
                    honor_taints: c.node_taints_policy == InclusionPolicy::Honor,
                    self_match,
                    counts: HashMap::default(),
                    smallest: [None, None],
                }
            })
            .collect();
    }

    fn has_all_spread_keys(&self, node: &Node) -> bool {
        self.spread
            .iter()
            .all(|c| node.labels.contains_key(&c.topology_key))
    }

    fn spread_node_included(&self, i: usize, node: &Node) -> bool {
        let c = &self.spread[i];
        (!c.honor_node_affinity || required_node_affinity_matches(self.pod, node))
            && (!c.honor_taints || untolerated_taint(&node.taints, self.pod).is_none())
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
            used_ports: self.wants_ports().then(|| UsedPorts::of(&info.pods)),
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
        if pod.namespace == self.pod.namespace {
            for (i, c) in self.spread.iter().enumerate() {
                if scratch.spread_included[i] && optional_matches(c.selector.as_ref(), &pod.labels)
                {
                    scratch.spread_delta[i] += sign;
                }
            }
        }
    }

    fn update_inter_pod_local(
        &self,
        other: &Pod,
        node: &Node,
        multiplier: i64,
        l: &mut InterPodDelta,
    ) {
        let pod = self.pod;
        for term in &other.details.pod_anti_affinity {
            let term = AffinityTerm::new(term, &other.namespace, &self.namespaces);
            if term.matches(pod) {
                l.existing_anti.add(&term.topology_key, node, multiplier);
            }
        }
        if !self.affinity.is_empty() && self.affinity.iter().all(|t| t.matches(other)) {
            for term in &self.affinity {
                l.affinity.add(&term.topology_key, node, multiplier);
            }
        }
        for term in &self.anti_affinity {
            if term.matches(other) {
                l.anti.add(&term.topology_key, node, multiplier);
            }
        }
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
        let pod = self.pod;
        if scratch
            .used_ports
            .as_ref()
            .is_some_and(|used| used.conflicts_with(&pod.details.host_ports))
        {
            return Status::unschedulable(
                NODE_PORTS,
                "node(s) didn't have free ports for the requested pod ports",
            );
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

    /// Whether NodePorts has anything to check: the preemptor binds a host port.
    fn wants_ports(&self) -> bool {
        self.pod.details.host_ports.iter().any(|p| p.port > 0)
    }

    fn resources_fit(&self, scratch: &NodeScratch<'_>) -> Status {
        let alloc = &scratch.node.allocatable;
        let used = &scratch.requested;
        resources_fit(
            self.pod.requests(),
            alloc.pods,
            scratch.pod_count,
            [
                (alloc.milli_cpu, used.milli_cpu),
                (alloc.memory, used.memory),
                (alloc.ephemeral_storage, used.ephemeral_storage),
            ],
            |name| (alloc.scalar(name), used.scalar(name)),
        )
    }

    /// Whether a node whose digest needs no full read (no NoSchedule/NoExecute taint,
    /// schedulable, nothing nominated) passes the node-only filters and NodePorts for
    /// sure, and NodeResourcesFit is decided by the digest: the preemptor asks for no node,
    /// node affinity, host port or extended resource. A resource failure is then the
    /// node's status, as the later filters never run.
    pub fn digest_decides_resources(&self) -> bool {
        let pod = self.pod;
        pod.node_name.as_deref().is_none_or(str::is_empty)
            && pod.details.node_selector.is_empty()
            && pod.details.required_node_affinity.is_none()
            && pod.details.host_ports.is_empty()
            && pod.requests().scalars.iter().all(|(_, v)| *v == 0)
    }

    /// Whether such a node is filtered from its digest alone, success included: nothing
    /// after NodeResourcesFit has anything to check.
    pub fn digest_suffices(&self) -> bool {
        self.digest_decides_resources() && self.spread.is_empty() && !self.inter_pod
    }

    /// The filters for a node, from its digest; only when [`Self::digest_decides_resources`]
    /// and the digest does not ask for a full read. A failure equals `static_filters` then
    /// `fits_with_nominated` on the node entry; so does a success when
    /// [`Self::digest_suffices`].
    pub fn filter_digest(&self, summary: &NodeSummary) -> Status {
        fit_status(self.digest_fit_mask(summary))
    }

    /// [`Self::filter_digest`] as [`fit`] bits.
    pub fn digest_fit_mask(&self, summary: &NodeSummary) -> u8 {
        self.digest_fit_mask_with(summary, &Occupied::default())
    }

    /// NodeResourcesFit bits from a node's digest with `nominated` (see
    /// [`Self::nominated_occupancy`]) also in use. For a node with no hard taint and a
    /// preemptor the digest decides resources for, these are the node's filter result
    /// (upstream's first pass with nominated pods fails exactly when this does, and the
    /// second pass, with fewer pods, then passes too).
    pub fn digest_fit_mask_with(&self, summary: &NodeSummary, nominated: &Occupied) -> u8 {
        let [cpu, memory, storage, slots] = summary.allocatable;
        let [used_cpu, used_memory, used_storage] = summary.requested;
        let [add_cpu, add_memory, add_storage] = nominated.requested;
        fit_mask(
            self.pod.requests(),
            slots,
            summary.pods as i64 + nominated.pods,
            [
                (cpu, used_cpu.wrapping_add(add_cpu)),
                (memory, used_memory.wrapping_add(add_memory)),
                (storage, used_storage.wrapping_add(add_storage)),
            ],
        )
    }

    /// What the pods nominated to the node that count for the preemptor occupy.
    pub fn nominated_occupancy(&self, info: &NodeInfo) -> Occupied {
        let mut occupied = Occupied::default();
        for pod in self.nominated_pods(info) {
            let r = pod.requests();
            // Wrapping, as upstream's int64 sums on the node.
            occupied.requested[0] = occupied.requested[0].wrapping_add(r.milli_cpu);
            occupied.requested[1] = occupied.requested[1].wrapping_add(r.memory);
            occupied.requested[2] = occupied.requested[2].wrapping_add(r.ephemeral_storage);
            occupied.pods += 1;
        }
        occupied
    }

    fn spread_fits(&self, scratch: &NodeScratch<'_>) -> Status {
        let node = scratch.node;
        for (i, c) in self.spread.iter().enumerate() {
            let Some(value) = node.labels.get(&c.topology_key) else {
                return Status::unresolvable(
                    POD_TOPOLOGY_SPREAD,
                    "node(s) didn't match pod topology spread constraints (missing required label)",
                );
            };
            let base = c.counts.get(value).copied();
            let here = base.unwrap_or(0) + scratch.spread_delta[i];
            let domains = c.counts.len() as i64;
            let min = if domains < c.min_domains {
                0
            } else {
                let others = c.min_excluding(value);
                match (base, others) {
                    // This node's domain is an eligible one: its count may have changed.
                    (Some(_), Some(o)) => here.min(o),
                    (Some(_), None) => here,
                    (None, Some(o)) => o,
                    (None, None) => 0,
                }
            };
            let skew = here + c.self_match as i64 - min;
            if skew > c.max_skew {
                return Status::unschedulable(
                    POD_TOPOLOGY_SPREAD,
                    "node(s) didn't match pod topology spread constraints",
                );
            }
        }
        Status::success()
    }

    fn inter_pod_fits(&self, scratch: &NodeScratch<'_>) -> Status {
        let node = scratch.node;
        let local = &scratch.inter_pod;
        // Required affinity of the preemptor.
        let mut pods_exist = true;
        for term in &self.affinity {
            match node.labels.get(&term.topology_key) {
                Some(value) => {
                    if local
                        .affinity
                        .count(&self.affinity_counts, &term.topology_key, value)
                        <= 0
                    {
                        pods_exist = false;
                    }
                }
                None => {
                    return Status::unresolvable(
                        INTER_POD_AFFINITY,
                        "node(s) didn't match pod affinity rules",
                    );
                }
            }
        }
        // A pod may be the first of a group affine to itself: it passes when nothing in the
        // cluster matches yet and it matches its own terms.
        let first_of_group =
            local.affinity.is_empty_with(&self.affinity_counts) && self.self_affine;
        if !pods_exist && !first_of_group {
            return Status::unresolvable(
                INTER_POD_AFFINITY,
                "node(s) didn't match pod affinity rules",
            );
        }
        // Required anti-affinity of the preemptor. Node-local terms count this node's
        // pods now (every term of the same key is node-local too).
        for term in &self.anti_affinity {
            let Some(value) = node.labels.get(&term.topology_key) else {
                continue;
            };
            let here: i64 = if term.node_local {
                self.anti_affinity
                    .iter()
                    .filter(|t| t.topology_key == term.topology_key)
                    .map(|t| t.count_on(scratch.info))
                    .sum()
            } else {
                0
            };
            if here
                + local
                    .anti
                    .count(&self.anti_affinity_counts, &term.topology_key, value)
                > 0
            {
                return Status::unschedulable(
                    INTER_POD_AFFINITY,
                    "node(s) didn't match pod anti-affinity rules",
                );
            }
        }
        // Existing pods' anti-affinity against the preemptor.
        for (key, value) in node.labels.iter() {
            if local
                .existing_anti
                .count(&self.existing_anti_affinity_counts, key, value)
                > 0
            {
                return Status::unschedulable(
                    INTER_POD_AFFINITY,
                    "node(s) didn't satisfy existing pods anti-affinity rules",
                );
            }
        }
        Status::success()
    }
}

/// NodeResourcesFit failures on cpu, memory, ephemeral storage and pod slots as bits, so
/// the filter pass over many nodes tallies a byte per node instead of building statuses.
pub mod fit {
    pub const TOO_MANY_PODS: u8 = 1;
    pub const CPU: u8 = 2;
    pub const MEMORY: u8 = 4;
    pub const EPHEMERAL_STORAGE: u8 = 8;
    /// Some request exceeds the allocatable: UnschedulableAndUnresolvable.
    pub const UNRESOLVABLE: u8 = 16;
    /// Every combination of the bits above.
    pub const MASKS: usize = 32;
    /// The reason of each bit, in upstream's reason order.
    pub const REASONS: [(u8, &str); 4] = [
        (TOO_MANY_PODS, "Too many pods"),
        (CPU, "Insufficient cpu"),
        (MEMORY, "Insufficient memory"),
        (EPHEMERAL_STORAGE, "Insufficient ephemeral-storage"),
    ];
}

/// NodeResourcesFit on plain amounts, without extended resources: the [`fit`] bits of
/// what is short (0 when the pod fits). `amounts` are `(allocatable, in use)` for CPU,
/// memory and ephemeral storage, `pods` the pods already on the node.
fn fit_mask(request: &Resources, pod_slots: i64, pods: i64, amounts: [(i64, i64); 3]) -> u8 {
    let mut mask = 0;
    if pods + 1 > pod_slots {
        mask |= fit::TOO_MANY_PODS;
    }
    if !request.is_zero_request() {
        let wants = [request.milli_cpu, request.memory, request.ephemeral_storage];
        let bits = [fit::CPU, fit::MEMORY, fit::EPHEMERAL_STORAGE];
        for ((want, (have, in_use)), bit) in wants.into_iter().zip(amounts).zip(bits) {
            if want > 0 && want > have.wrapping_sub(in_use) {
                mask |= bit;
                if want > have {
                    mask |= fit::UNRESOLVABLE;
                }
            }
        }
    }
    mask
}

/// The status of a [`fit_mask`] result with no extended resource short.
pub fn fit_status(mask: u8) -> Status {
    fit_status_with(mask, Reasons::new())
}

fn fit_status_with(mask: u8, scalar_reasons: Reasons) -> Status {
    if mask == 0 && scalar_reasons.is_empty() {
        return Status::success();
    }
    let mut reasons: Reasons = fit::REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, reason)| Reason::Borrowed(reason))
        .collect();
    reasons.extend(scalar_reasons);
    Status {
        code: if mask & fit::UNRESOLVABLE != 0 {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        },
        plugin: NODE_RESOURCES_FIT,
        reasons,
    }
}

/// NodeResourcesFit on plain amounts: `(allocatable, in use)` for CPU, memory and
/// ephemeral storage, `scalar(name)` for the rest, `pods` already on the node.
fn resources_fit(
    request: &Resources,
    pod_slots: i64,
    pods: i64,
    amounts: [(i64, i64); 3],
    scalar: impl Fn(&str) -> (i64, i64),
) -> Status {
    let mut mask = fit_mask(request, pod_slots, pods, amounts);
    let mut scalar_reasons = Reasons::new();
    if !request.is_zero_request() {
        for (name, want) in &request.scalars {
            let (have, in_use) = scalar(name);
            if *want > 0 && *want > have.wrapping_sub(in_use) {
                scalar_reasons.push(Reason::Owned(format!("Insufficient {name}")));
                if *want > have {
                    mask |= fit::UNRESOLVABLE;
                }
            }
        }
    }
    fit_status_with(mask, scalar_reasons)
}

/// Room taken beyond a node's bound pods: milli-CPU, memory and ephemeral storage
/// requested, and pod slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupied {
    pub requested: [i64; 3],
    pub pods: i64,
}

#[derive(Clone, Debug, Default)]
pub struct InterPodDelta {
    affinity: PairDelta,
    anti: PairDelta,
    existing_anti: PairDelta,
}

/// One node's state during a dry run: which bound pods are removed, which nominated pods
/// are added, and the resulting aggregates.
pub struct NodeScratch<'n> {
    pub info: &'n NodeInfo,
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

/// Upstream `HostPortInfo`: a set of (IP, protocol, port) entries, not a count. Removing
/// a pod deletes its entries even when another pod on the node binds the same one, as
/// upstream's `RemovePod` does, and preemption's dry runs see the port free.
#[derive(Clone, Debug, Default)]
struct UsedPorts(Vec<HostPort>);

impl UsedPorts {
    fn of(pods: &[Arc<Pod>]) -> Self {
        let mut used = Self::default();
        for pod in pods {
            used.add(pod);
        }
        used
    }

    fn add(&mut self, pod: &Pod) {
        for port in pod.details.host_ports.iter().filter(|p| p.port > 0) {
            if !self.0.contains(port) {
                self.0.push(port.clone());
            }
        }
    }

    fn remove(&mut self, pod: &Pod) {
        self.0.retain(|used| !pod.details.host_ports.contains(used));
    }

    fn conflicts_with(&self, wanted: &[HostPort]) -> bool {
        wanted
            .iter()
            .any(|want| want.port > 0 && self.0.iter().any(|used| want.conflicts_with(used)))
    }
}
