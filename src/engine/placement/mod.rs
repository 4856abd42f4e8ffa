//! Where the kube-scheduler would put a pod: upstream's `schedulePod` — the nominated
//! node first, then every filter over every node (with the nominated pods, as
//! `RunFilterPluginsWithNominatedPods`), then the default profile's Score plugins over
//! the feasible nodes — on a [`ClusterView`]: a snapshot with pods taken off (victims)
//! or put on (victims reprieved, gang members assumed).
//!
//! Deliberate differences from upstream: every feasible node is scored (upstream scores
//! a sample above 100 nodes, `numFeasibleNodesToFind`); equal totals go to the lowest
//! node name (upstream picks at random among them, and [`Placement::tied`] lists them).

mod balanced_allocation;
mod image_locality;
mod inter_pod_affinity;
mod node_affinity;
mod pod_topology_spread;
mod resources_fit;
mod taint_toleration;
#[cfg(test)]
mod tests;

use triomphe::Arc;

use super::filters::{PreFilter, Status, static_failure};
use super::tally::{ReasonCounts, fit_error_message};
use super::version::KubernetesVersion;
use crate::cache::{NodeInfo, Snapshot};
use crate::model::{Pod, Str};

/// Upstream's MaxNodeScore.
pub const MAX_NODE_SCORE: i64 = 100;

/// The default profile's Score plugins in upstream's order, with their weights.
pub const PLUGINS: [(&str, i64); 7] = [
    (taint_toleration::NAME, 3),
    (node_affinity::NAME, 2),
    (resources_fit::NAME, 1),
    (pod_topology_spread::NAME, 2),
    (inter_pod_affinity::NAME, 2),
    (balanced_allocation::NAME, 1),
    (image_locality::NAME, 1),
];

/// What the Score plugins read besides the node.
pub(super) struct ScoreInput<'a> {
    pod: &'a Pod,
    snapshot: &'a Snapshot,
    version: KubernetesVersion,
}

/// One feasible node's scores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeScores {
    /// The node.
    pub node: Str,
    /// Σ weight × normalised score.
    pub total: i64,
    /// Each plugin's normalised score (0–100), in [`PLUGINS`] order; multiply by the
    /// plugin's weight for its part of `total`.
    pub plugins: [i64; PLUGINS.len()],
}

/// Where a pod would go, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The node; `None` when none fits.
    pub node: Option<Str>,
    /// The chosen node's total score (0 when nothing was scored).
    pub total: i64,
    /// Every node with the chosen node's total, by name (the chosen one first): upstream
    /// picks among them at random.
    pub tied: Vec<Str>,
    /// The scored nodes, best first (total descending, then name); empty when the pod
    /// went to its nominated node or only one node fits (upstream scores nothing then),
    /// and from [`ClusterView::place_remembering`].
    pub scores: Vec<NodeScores>,
    /// How many nodes passed the filters (1 when the nominated node was taken).
    pub feasible: usize,
    /// Why the pod fits nowhere (upstream's FitError text); empty when it fits.
    pub message: String,
    /// Upstream's InterPodAffinity PreFilter skipped this cycle: the pod has no terms and
    /// no pod on the view has required anti-affinity against it. A gang member's later
    /// Filter re-checks run in the cycle state of its placement, so they skip it too
    /// ([`ClusterView::fits_as_placed`]).
    pub inter_pod_skipped: bool,
}

/// A snapshot with pods taken off and put on, on which Filter and Score run as on the
/// cluster itself. Cloning the snapshot costs O(1); each edit copies the node entry it
/// changes.
#[derive(Clone, Debug)]
pub struct ClusterView {
    snapshot: Snapshot,
    version: KubernetesVersion,
    /// Terminating pods taken off (−1) or put back (+1) since the cycle states were made
    /// ([`ClusterView::mark_cycle_states`]), with their nodes: upstream's AddPod and
    /// RemovePod count them in PodTopologySpread's state, though its PreFilter does not.
    terminating_moved: Vec<(Arc<Pod>, Str, i64)>,
}

impl ClusterView {
    /// The cluster as `snapshot` holds it, with `version`'s scoring rules.
    pub fn new(snapshot: &Snapshot, version: KubernetesVersion) -> Self {
        ClusterView {
            snapshot: snapshot.clone(),
            version,
            terminating_moved: Vec::new(),
        }
    }

    /// The edited snapshot.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Takes bound pods off their nodes (victims), each node edited once; how many the
    /// view held.
    pub fn remove_pods<'p>(&mut self, pods: impl IntoIterator<Item = &'p Pod>) -> usize {
        let pods: Vec<&Pod> = pods.into_iter().collect();
        let removed = self.snapshot.remove_bound_pods(pods.iter().copied());
        for pod in pods.iter().filter(|p| p.terminating) {
            if let Some(node) = &pod.node_name {
                self.terminating_moved
                    .push((Arc::new((*pod).clone()), node.clone(), -1));
            }
        }
        removed
    }

    /// Takes off the bound pods at `positions` (node index, position among the node's
    /// pods, as [`super::units::units_below`] gives them for this view; in order), each
    /// node edited once.
    pub fn remove_at(&mut self, positions: &[(usize, usize)]) -> usize {
        let moved = &mut self.terminating_moved;
        self.snapshot.remove_positions(positions, |pod| {
            if let Some(node) = pod.node_name.as_ref().filter(|_| pod.terminating) {
                moved.push((pod.clone(), node.clone(), -1));
            }
        })
    }

    /// The cycle states of the pods to be checked are made now (a gang's members are
    /// placed): later moves of terminating pods count as upstream's updates count them.
    pub fn mark_cycle_states(&mut self) {
        self.terminating_moved.clear();
    }

    /// Takes `pod` off `node`, where [`ClusterView::add_pod`] put it (an assumed member,
    /// whose own `nodeName` is unset); `false` when it is not there.
    pub fn remove_pod_from(&mut self, pod: &Pod, node: &str) -> bool {
        let removed = self.snapshot.remove_bound_pod(node, pod.uid());
        if let Some(pod) = removed.as_ref().filter(|p| p.terminating) {
            self.terminating_moved.push((pod.clone(), node.into(), -1));
        }
        removed.is_some()
    }

    /// Puts `pod` on `node` (a victim back, or a member assumed during a reprieve, whose
    /// nomination stays as upstream's snapshot `AddPod` leaves it); `false` when the
    /// view has no such node.
    pub fn add_pod(&mut self, pod: Arc<Pod>, node: &Str) -> bool {
        if pod.terminating {
            self.terminating_moved.push((pod.clone(), node.clone(), 1));
        }
        self.snapshot.add_bound_pod(pod, node)
    }

    /// A scheduling cycle's assume: `pod` on `node`, its nomination withdrawn (the
    /// nominator drops an assumed pod). Returns the withdrawn nomination, for
    /// [`ClusterView::forget`].
    pub fn assume(&mut self, pod: Arc<Pod>, node: &Str) -> Option<Arc<Pod>> {
        let withdrawn = pod
            .nomination()
            .and_then(|nominated| self.snapshot.remove_nominated_pod(nominated, pod.uid()));
        self.add_pod(pod, node);
        withdrawn
    }

    /// Undoes [`ClusterView::assume`] (upstream's unreserve and forget): `pod` off `node`,
    /// the nomination it withdrew back.
    pub fn forget(&mut self, pod: &Pod, node: &str, withdrawn: Option<Arc<Pod>>) {
        self.remove_pod_from(pod, node);
        if let Some(nominated) = withdrawn {
            self.snapshot.add_nominated_pod(nominated);
        }
    }

    /// Every filter for `pod` on `node`, with the nominated pods.
    pub fn fits(&self, pod: &Pod, node: &str) -> Result<(), Status> {
        self.fits_with(&self.cycle_state(pod), node)
    }

    /// The PreFilter state upstream's cycle state holds for `pod` now: made when the
    /// states were marked, then updated pod by pod.
    fn cycle_state<'p>(&self, pod: &'p Pod) -> PreFilter<'p> {
        let mut pre = PreFilter::new(pod, &self.snapshot);
        pre.count_moved_terminating(
            &self.snapshot,
            self.terminating_moved
                .iter()
                .map(|(pod, node, sign)| (&**pod, &**node, *sign)),
        );
        pre
    }

    /// [`ClusterView::fits`] for a pod placed earlier on another view, in the cycle state
    /// of that placement as upstream keeps it: pods added since update its PreFilter
    /// state, but a plugin whose PreFilter skipped stays skipped — InterPodAffinity when
    /// `placement.inter_pod_skipped`.
    pub fn fits_as_placed(
        &self,
        pod: &Pod,
        node: &str,
        placement_skipped_inter_pod: bool,
    ) -> Result<(), Status> {
        let mut pre = self.cycle_state(pod);
        if placement_skipped_inter_pod {
            pre.skip_inter_pod();
        }
        self.fits_with(&pre, node)
    }

    fn fits_with(&self, pre: &PreFilter<'_>, node: &str) -> Result<(), Status> {
        let pod = pre.pod;
        match self.snapshot.node(node) {
            Some(info) => {
                let status = filter(pre, pod, info);
                if status.is_success() {
                    Ok(())
                } else {
                    Err(status)
                }
            }
            None => Err(Status::node_not_found()),
        }
    }

    /// Where upstream's `schedulePod` puts `pod` on this view.
    pub fn place(&self, pod: &Pod) -> Placement {
        self.place_with(pod, &mut PlacementMemo::default(), Detail::Ranking)
    }

    /// [`ClusterView::place`] without [`Placement::scores`] (and with only the chosen node
    /// in [`Placement::tied`] unless `list_ties`), reusing from `memo` what an earlier
    /// placement of a pod of the same template found on nodes the view has not changed
    /// since (a gang's members, placed one after another), and leaving this placement's
    /// findings in it.
    pub fn place_remembering(
        &self,
        pod: &Pod,
        memo: &mut PlacementMemo,
        list_ties: bool,
    ) -> Placement {
        self.place_with(pod, memo, Detail::Choice { list_ties })
    }

    fn place_with(&self, pod: &Pod, memo: &mut PlacementMemo, detail: Detail) -> Placement {
        let snapshot = &self.snapshot;
        let pre = PreFilter::new(pod, snapshot);
        if let Some(nominated) = pod.nominated_node_name.as_ref().filter(|n| !n.is_empty())
            && let Some(info) = snapshot.node(nominated)
            && filter(&pre, pod, info).is_success()
        {
            return Placement::single(nominated.clone(), &pre);
        }
        let input = ScoreInput {
            pod,
            snapshot,
            version: self.version,
        };
        let images = image_locality::ImageSpread::new(&input);
        memo.prepare(pod, &pre, snapshot.nodes.len());
        let mut feasible: Vec<(&NodeInfo, [i64; PLUGINS.len()])> =
            Vec::with_capacity(snapshot.nodes.len());
        let mut reasons = ReasonCounts::default();
        for (index, info) in snapshot.nodes.iter().enumerate() {
            let eval = match memo.reusable(index, info) {
                Some(eval) => eval.clone(),
                None => {
                    let eval = evaluate(&pre, &input, &images, info);
                    memo.keep(index, info, &eval);
                    eval
                }
            };
            match eval {
                NodeEval::Fits(raw) => feasible.push((&**info, raw)),
                NodeEval::Fails(status) => reasons.add_all(&status.reasons),
            }
        }
        match feasible.len() {
            0 => Placement {
                node: None,
                total: 0,
                tied: Vec::new(),
                scores: Vec::new(),
                feasible: 0,
                message: fit_error_message(snapshot.nodes.len(), &reasons),
                inter_pod_skipped: pre.inter_pod_skipped(),
            },
            1 => Placement::single(feasible[0].0.name.clone(), &pre),
            count => {
                let weighed = prioritize(&input, &feasible);
                let total = weighed.iter().map(|(total, _)| *total).max().unwrap_or(0);
                let mut tied: Vec<Str> = match detail {
                    Detail::Choice { list_ties: false } => feasible
                        .iter()
                        .zip(&weighed)
                        .filter(|(_, (t, _))| *t == total)
                        .map(|((info, _), _)| &info.name)
                        .min()
                        .into_iter()
                        .cloned()
                        .collect(),
                    _ => feasible
                        .iter()
                        .zip(&weighed)
                        .filter(|(_, (t, _))| *t == total)
                        .map(|((info, _), _)| info.name.clone())
                        .collect(),
                };
                tied.sort();
                let mut scores = Vec::new();
                if detail == Detail::Ranking {
                    scores = feasible
                        .iter()
                        .zip(weighed)
                        .map(|((info, _), (total, plugins))| NodeScores {
                            node: info.name.clone(),
                            total,
                            plugins,
                        })
                        .collect();
                    scores.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.node.cmp(&b.node)));
                }
                Placement {
                    node: tied.first().cloned(),
                    total,
                    tied,
                    scores,
                    feasible: count,
                    message: String::new(),
                    inter_pod_skipped: pre.inter_pod_skipped(),
                }
            }
        }
    }
}

/// How much of a placement's reasoning to keep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Every scored node, ranked ([`Placement::scores`]), and every tied node.
    Ranking,
    /// The choice, with the tied nodes when `list_ties`.
    Choice { list_ties: bool },
}

/// One node's Filter result for a pod and, when it passes, the raw scores of the plugins
/// that read that node alone (TaintToleration, NodeAffinity, NodeResourcesFit,
/// BalancedAllocation, ImageLocality; the others' slots are 0 here).
#[derive(Clone, Debug)]
enum NodeEval {
    Fits([i64; PLUGINS.len()]),
    Fails(Status),
}

/// Filter and the node-local raw scores of `pod` on one node.
fn evaluate(
    pre: &PreFilter<'_>,
    input: &ScoreInput<'_>,
    images: &image_locality::ImageSpread<'_>,
    info: &NodeInfo,
) -> NodeEval {
    let status = filter(pre, input.pod, info);
    if !status.is_success() {
        return NodeEval::Fails(status);
    }
    let pod = input.pod;
    let mut raw = [0; PLUGINS.len()];
    raw[0] = taint_toleration::raw_score(pod, info);
    if !node_affinity::skips(pod) {
        raw[1] = node_affinity::raw_score(pod, info);
    }
    raw[2] = resources_fit::score(input, info);
    if !balanced_allocation::skips(input) {
        raw[5] = balanced_allocation::score(input, info);
    }
    raw[6] = images.score(input, info);
    NodeEval::Fits(raw)
}

/// What the last placement found per node, for the next pod of the same template: a
/// node's entry is reused while the view still holds the very node entry it was found on
/// (every edit of a view replaces the entry it changes). Only pods whose Filter and
/// node-local scores read nothing beyond the node use it: no pod affinity, anti-affinity
/// or spread terms of their own, and no pod's required anti-affinity against them.
#[derive(Default)]
pub struct PlacementMemo {
    /// The pod the entries are for, when they may be reused.
    template: Option<Pod>,
    /// Per node: the entry it was found on, whether that entry has nominated pods, and
    /// what was found.
    nodes: Vec<Option<(Arc<NodeInfo>, bool, NodeEval)>>,
}

impl PlacementMemo {
    /// Keeps the entries when `pod` is of the template they are for, else clears them.
    fn prepare(&mut self, pod: &Pod, pre: &PreFilter<'_>, nodes: usize) {
        let reads_only_its_node = !pre.reads_other_nodes()
            && pod.details.pod_affinity.is_empty()
            && pod.details.pod_anti_affinity.is_empty()
            && pod.details.preferred_pod_affinity.is_empty()
            && pod.details.preferred_pod_anti_affinity.is_empty()
            && pod.details.topology_spread.is_empty();
        let same_template = self.template.as_ref().is_some_and(|t| {
            t.priority == pod.priority
                && t.namespace == pod.namespace
                && t.labels == pod.labels
                && t.node_name == pod.node_name
                && (Arc::ptr_eq(&t.details, &pod.details) || t.details == pod.details)
        });
        if !(reads_only_its_node && same_template) {
            self.nodes.clear();
        }
        self.nodes.resize(nodes, None);
        self.template = reads_only_its_node.then(|| pod.clone());
    }

    /// The entry found on exactly this node entry. Nodes with nominated pods are always
    /// evaluated again: whether a nomination counts depends on whose it is.
    fn reusable(&self, index: usize, info: &Arc<NodeInfo>) -> Option<&NodeEval> {
        let (seen, nominated, eval) = self.nodes.get(index)?.as_ref()?;
        (Arc::ptr_eq(seen, info) && !nominated).then_some(eval)
    }

    fn keep(&mut self, index: usize, info: &Arc<NodeInfo>, eval: &NodeEval) {
        if self.template.is_some()
            && let Some(slot) = self.nodes.get_mut(index)
        {
            *slot = Some((info.clone(), !info.nominated.is_empty(), eval.clone()));
        }
    }
}

impl Placement {
    /// The only feasible node, taken without scoring.
    fn single(node: Str, pre: &PreFilter<'_>) -> Self {
        Placement {
            node: Some(node.clone()),
            total: 0,
            tied: vec![node],
            scores: Vec::new(),
            feasible: 1,
            message: String::new(),
            inter_pod_skipped: pre.inter_pod_skipped(),
        }
    }
}

/// Every filter of `pod` on one node, with its nominated pods.
fn filter(pre: &PreFilter<'_>, pod: &Pod, info: &NodeInfo) -> Status {
    let Some(node) = info.node.as_deref() else {
        return Status::node_not_found();
    };
    if let Some(failure) = static_failure(pod, node) {
        return failure.status();
    }
    match pre.scratch(info) {
        Some(mut scratch) => pre.fits_with_nominated(&mut scratch),
        None => Status::node_not_found(),
    }
}

/// Upstream `DefaultNormalizeScore`: scaled so the largest is 100 (then reversed when
/// fewer is better); all 0 stays 0, or 100 reversed.
fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0).max(0);
    for score in scores.iter_mut() {
        if max == 0 {
            *score = if reverse { MAX_NODE_SCORE } else { 0 };
            continue;
        }
        let scaled = MAX_NODE_SCORE * *score / max;
        *score = if reverse {
            MAX_NODE_SCORE - scaled
        } else {
            scaled
        };
    }
}

/// PreScore, Score and NormalizeScore of every plugin over the feasible nodes (with the
/// node-local raw scores [`evaluate`] found), weighted and summed (upstream
/// `prioritizeNodes`): each node's total and normalised scores, in `feasible` order.
fn prioritize(
    input: &ScoreInput<'_>,
    feasible: &[(&NodeInfo, [i64; PLUGINS.len()])],
) -> Vec<(i64, [i64; PLUGINS.len()])> {
    let pod = input.pod;
    let n = feasible.len();
    let infos: Vec<&NodeInfo> = feasible.iter().map(|(info, _)| *info).collect();
    let column = |p: usize| -> Vec<i64> { feasible.iter().map(|(_, raw)| raw[p]).collect() };
    let mut columns: [Vec<i64>; PLUGINS.len()] = Default::default();

    columns[0] = column(0);
    default_normalize(&mut columns[0], true);

    columns[1] = column(1);
    if !node_affinity::skips(pod) {
        default_normalize(&mut columns[1], false);
    }

    columns[2] = column(2);

    columns[3] = match pod_topology_spread::SpreadScores::gather(input, &infos) {
        None => vec![0; n],
        Some(spread) => {
            let raw: Vec<Option<i64>> = infos.iter().map(|i| spread.score(input, i)).collect();
            pod_topology_spread::normalize(&raw)
        }
    };

    let topology = inter_pod_affinity::TopologyScores::gather(input);
    columns[4] = if topology.is_empty() {
        vec![0; n]
    } else {
        let mut raw: Vec<i64> = infos.iter().map(|i| topology.score(i)).collect();
        inter_pod_affinity::normalize(&mut raw);
        raw
    };

    columns[5] = column(5);
    columns[6] = column(6);

    (0..n)
        .map(|at| {
            let plugins: [i64; PLUGINS.len()] = std::array::from_fn(|p| columns[p][at]);
            let total = plugins
                .iter()
                .zip(PLUGINS)
                .map(|(score, (_, weight))| score * weight)
                .sum();
            (total, plugins)
        })
        .collect()
}
