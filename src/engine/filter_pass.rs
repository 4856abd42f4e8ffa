//! Phase 1, the filter pass: upstream's normal scheduling filters over the nodes, with
//! their nominated pods. Besides each node's result it does candidate screening's per-node
//! work (see [`super::potential`]): an Unschedulable node gets its resource lower bound
//! here, while its data is hot in the cache. Nodes whose digest answers for them are never
//! read in full.

use rayon::prelude::*;
use triomphe::Arc;

use super::bounds;
use super::filters::{self, Code, PreFilter, Status};
use super::groups::{GroupScreen, ScreenedGroups};
use super::policy::Applied;
use super::tally::{FilterTally, NodeOnly, fit_error_message};
use super::thresholds::{PARALLEL_THRESHOLD, PRUNE_THRESHOLD};
use crate::cache::{GROUP_NODES, NodeInfo, NodeSummary, Snapshot};
use crate::model::Pod;

/// The filter pass hands each parallel task at least this many nodes: fewer wake-ups and
/// merges, which matters when several decisions run at once.
const PARALLEL_MIN_NODES: usize = 1024;

/// What the filter phase hands on: its tally and the screened groups it left out.
pub(super) struct Filtered<'a> {
    pub tally: FilterTally<'a>,
    pub screened: ScreenedGroups,
}

/// The filter pass of one decision: what it knows of the preemptor and the snapshot.
pub(super) struct FilterPass<'a> {
    pub snapshot: &'a Snapshot,
    pub pre: &'a PreFilter<'a>,
    pub preemptor: &'a Pod,
    /// Every node gets a status (for the diagnostics).
    pub explain: bool,
    /// Split the work over the rayon pool.
    pub parallel: bool,
    /// Unschedulable nodes get a resource lower bound, for the search to prune with.
    pub want_bounds: bool,
    digest_decides_resources: bool,
    digest_suffices: bool,
    /// The placement policy, which rules nodes out before the resource filters.
    policy: Option<Applied<'a>>,
    /// The digests leaf by leaf of the persistent vector: contiguous slices, with the
    /// index of each one's first node.
    leaves: Vec<(usize, &'a [NodeSummary])>,
}

impl<'a> FilterPass<'a> {
    pub(super) fn new(snapshot: &'a Snapshot, pre: &'a PreFilter<'a>, explain: bool) -> Self {
        let nodes = snapshot.nodes.len();
        let mut leaves = Vec::new();
        let mut start = 0;
        for leaf in snapshot.summaries.leaves() {
            leaves.push((start, leaf));
            start += leaf.len();
        }
        FilterPass {
            snapshot,
            pre,
            preemptor: pre.pod,
            explain,
            parallel: nodes >= PARALLEL_THRESHOLD,
            want_bounds: !explain && nodes > PRUNE_THRESHOLD,
            digest_decides_resources: pre.digest_decides_resources(),
            digest_suffices: pre.digest_suffices(),
            policy: None,
            leaves,
        }
    }

    /// The pass under `policy`, when there is one.
    pub(super) fn with_policy(mut self, policy: Option<Applied<'a>>) -> Self {
        self.policy = policy;
        self
    }

    /// Whether the pass screens node groups (see [`GroupScreen`]) on a cluster this large:
    /// only bounds prune the search, and only the digests screen a group.
    /// A policy's rulings are on the nodes, not their digests: no screening under one.
    pub(super) fn screens_groups(&self, min_nodes: usize) -> bool {
        self.want_bounds
            && self.digest_decides_resources
            && self.policy.is_none()
            && self.snapshot.nodes.len() >= min_nodes
    }

    /// The phase, in a `filter` span: every node, or with `screening` the node groups
    /// that may hold a fitting node or that the digests cannot answer for, with the most
    /// promising others; the rest wait in [`ScreenedGroups`] until the search shows
    /// whether they can hold a winner.
    pub(super) fn run(&self, screening: bool, now: i64) -> Filtered<'a> {
        let nodes = self.snapshot.nodes.len();
        let span = tracing::info_span!("filter", nodes, screened = tracing::field::Empty);
        let _entered = span.enter();
        if !screening || self.snapshot.groups.len() != nodes.div_ceil(GROUP_NODES) {
            return Filtered {
                tally: self.filter_slices(&self.leaves),
                screened: ScreenedGroups::default(),
            };
        }
        let screens = GroupScreen::pass(self.pre, self.snapshot, now, self.parallel);
        let (first, screened) = ScreenedGroups::split(screens);
        span.record("screened", screened.waiting().len());
        Filtered {
            tally: self.filter_groups(&first),
            screened,
        }
    }

    /// The filter pass over the node groups `groups` (ascending).
    pub(super) fn filter_groups(&self, groups: &[usize]) -> FilterTally<'a> {
        self.filter_slices(&self.slices_of(groups))
    }

    /// One node's filter status; `None` for an index past the snapshot's nodes.
    pub(super) fn node_status(&self, index: usize) -> Option<Status> {
        let summary = self.snapshot.summaries.get(index)?;
        let mut tally = FilterTally::default();
        self.tally_node(&mut tally, index, summary, true);
        tally.statuses.pop().map(|(_, status)| status)
    }

    /// Nodes the pass read: all but those of the screened groups `skipped`.
    pub(super) fn nodes_filtered(&self, skipped: &[GroupScreen]) -> usize {
        let len = |s: &GroupScreen| self.snapshot.groups.get(s.group).map_or(0, |g| g.len);
        self.snapshot.nodes.len() - skipped.iter().map(len).sum::<usize>()
    }

    /// The FitError text of every node: the filtered ones' reasons and the skipped
    /// groups'.
    pub(super) fn failure_message(
        &self,
        mut tally: FilterTally<'a>,
        skipped: &[GroupScreen],
    ) -> String {
        GroupScreen::add_reasons(skipped, self.pre, self.snapshot, &mut tally);
        fit_error_message(self.snapshot.nodes.len(), &tally.into_reasons())
    }

    /// The slices of the node groups `groups` (ascending).
    fn slices_of(&self, groups: &[usize]) -> Vec<(usize, &'a [NodeSummary])> {
        let nodes = self.snapshot.nodes.len();
        let leaves = &self.leaves;
        let mut slices = Vec::with_capacity(groups.len());
        for &group in groups {
            let from = group * GROUP_NODES;
            let to = (from + GROUP_NODES).min(nodes);
            let first = leaves.partition_point(|(start, leaf)| start + leaf.len() <= from);
            for &(start, leaf) in leaves[first..].iter().take_while(|(start, _)| *start < to) {
                let (a, b) = (from.max(start), to.min(start + leaf.len()));
                slices.push((a, &leaf[a - start..b - start]));
            }
        }
        slices
    }

    /// The filter pass over `slices`, in tasks of at least `PARALLEL_MIN_NODES` nodes so
    /// splitting costs little next to the work.
    fn filter_slices(&self, slices: &[(usize, &'a [NodeSummary])]) -> FilterTally<'a> {
        let count: usize = slices.iter().map(|(_, leaf)| leaf.len()).sum();
        let tasks = if self.parallel {
            (count / PARALLEL_MIN_NODES).clamp(1, 2 * rayon::current_num_threads())
        } else {
            1
        };
        let per_task = slices.len().div_ceil(tasks).max(1);
        let task = |slices: &[(usize, &'a [NodeSummary])]| self.filter_task(slices);
        FilterTally::concat(if tasks > 1 {
            slices.par_chunks(per_task).map(task).collect()
        } else {
            slices.chunks(per_task).map(task).collect()
        })
    }

    /// One task's run of slices, tallied with room for all its nodes (no regrowth).
    fn filter_task(&self, slices: &[(usize, &'a [NodeSummary])]) -> FilterTally<'a> {
        let nodes = &self.snapshot.nodes;
        let len = slices.iter().map(|(_, leaf)| leaf.len()).sum();
        let mut tally = FilterTally::with_capacity(len);
        let mut full_reads: Vec<&Arc<NodeInfo>> = Vec::new();
        for &(start, leaf) in slices {
            // When every node entry is read, they are scattered in memory: ask for this
            // leaf's, then read them. (When the digests decide resources, the few entries
            // read are not worth a pass over the digests: it costs more than their misses.)
            if !self.digest_decides_resources {
                full_reads.clear();
                for offset in 0..leaf.len() {
                    if let Some(info) = nodes.get(start + offset) {
                        crate::cache::prefetch(&info.node);
                        full_reads.push(info);
                    }
                }
                for info in &full_reads {
                    if let Some(node) = info.node.as_deref() {
                        crate::cache::prefetch(node);
                        crate::cache::prefetch(node.taints.as_ptr());
                    }
                }
            }
            for (offset, summary) in leaf.iter().enumerate() {
                self.tally_node(&mut tally, start + offset, summary, self.explain);
            }
        }
        tally.seal()
    }

    /// Filters node `index` into `tally`. Nodes whose digest decides them are tallied as
    /// NodeResourcesFit bits and failing taints by reference, without a status each
    /// unless `explain`; the rest get their status.
    #[inline(always)]
    fn tally_node(
        &self,
        tally: &mut FilterTally<'a>,
        index: usize,
        summary: &NodeSummary,
        explain: bool,
    ) {
        let verdicts = Some(&mut tally.taint_verdicts);
        let pass = match NodeOnly::of(
            self.preemptor,
            self.digest_decides_resources,
            &self.snapshot.taint_sets,
            summary,
            verdicts,
        ) {
            NodeOnly::Fail(filters::StaticFailure::Taint(taint)) if !explain => {
                tally.add_taint(taint);
                return;
            }
            NodeOnly::Fail(failure) => {
                tally.record(index, failure.status(), None, explain);
                return;
            }
            NodeOnly::Pass => true,
            NodeOnly::ReadNode => false,
        };
        if pass && let Some(status) = self.policy_status(index) {
            tally.record(index, status, None, explain);
            return;
        }
        if let Some((mask, nominated)) = self.digest_fit(summary, index, pass) {
            if explain {
                tally.statuses.push((index, filters::fit_status(mask)));
            }
            if mask == 0 {
                tally.feasible.push(index);
                return;
            }
            tally.digest_failures[mask as usize] += 1;
            if mask & filters::fit::UNRESOLVABLE == 0 {
                let bound = self.digest_bound(summary, index, mask, &nominated);
                tally.potential.add(index, bound);
            }
            return;
        }
        let Some(info) = self.snapshot.nodes.get(index) else {
            return;
        };
        let Some(node) = info.node.as_deref() else {
            tally.record(index, Status::success(), None, explain);
            return;
        };
        match filters::static_failure(self.preemptor, node) {
            Some(filters::StaticFailure::Taint(taint)) if !explain => tally.add_taint(taint),
            Some(failure) => tally.record(index, failure.status(), None, explain),
            None => match self.policy_status(index) {
                Some(status) => tally.record(index, status, None, explain),
                None => {
                    let (status, bound) = self.filter_node_entry(info);
                    tally.record(index, status, bound, explain);
                }
            },
        }
    }

    /// The status of a node the policy rules out (after the node-only filters pass, so a
    /// node they fail keeps their reason).
    fn policy_status(&self, index: usize) -> Option<Status> {
        let policy = self.policy.as_ref()?;
        let node = self.snapshot.nodes.get(index)?.node.as_deref()?;
        policy.filter_status(node)
    }

    /// The fit bits from the digest, when it decides the filters, with the room the
    /// node's nominated pods take: `None` when the node must be read in full. A success
    /// only comes when the digest suffices for every filter. `node_only_pass`: the
    /// node-only filters pass on the digest's word.
    // The bound is worked out apart: one value holding both is copied through the stack
    // in pieces the CPU cannot forward to the loads that follow.
    #[inline(always)]
    fn digest_fit(
        &self,
        summary: &NodeSummary,
        index: usize,
        node_only_pass: bool,
    ) -> Option<(u8, filters::Occupied)> {
        if !node_only_pass {
            return None;
        }
        let nominated = if summary.counts_nominated(self.preemptor.priority) {
            self.pre.nominated_occupancy(self.node_at(index))
        } else {
            filters::Occupied::default()
        };
        let mask = self.pre.digest_fit_mask_with(summary, &nominated);
        (mask != 0 || self.digest_suffices).then_some((mask, nominated))
    }

    /// The bound of a node its digest fails as Unschedulable (when bounds are wanted).
    #[inline(always)]
    fn digest_bound(
        &self,
        summary: &NodeSummary,
        index: usize,
        mask: u8,
        nominated: &filters::Occupied,
    ) -> Option<bounds::Bound> {
        if self.want_bounds && mask != 0 && mask & filters::fit::UNRESOLVABLE == 0 {
            bounds::bound_of_summary(self.preemptor, summary, nominated)
                .unwrap_or_else(|| bounds::bound(self.pre, self.node_at(index)))
        } else {
            None
        }
    }

    /// Everything after the node-only filters, on the node entry, with the node's bound
    /// when it is Unschedulable (and bounds are wanted).
    fn filter_node_entry(&self, info: &NodeInfo) -> (Status, Option<bounds::Bound>) {
        let status = match self.pre.scratch(info) {
            Some(mut scratch) => self.pre.fits_with_nominated(&mut scratch),
            None => Status::success(),
        };
        let bound = (self.want_bounds && status.code == Code::Unschedulable)
            .then(|| bounds::bound(self.pre, info))
            .flatten();
        (status, bound)
    }

    fn node_at(&self, index: usize) -> &'a NodeInfo {
        self.snapshot
            .nodes
            .get(index)
            .expect("a digest per node entry")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::test_support::*;
    use crate::model::Str;
    use crate::model::{
        NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
    };

    const NOW: i64 = 1_000;

    /// One node of each kind the filters tell apart, for a preemptor of priority 100
    /// asking for 600m: it fits on `free`; `tainted`, `cordoned` and `small` (less
    /// allocatable than asked) are UnschedulableAndUnresolvable; `low` and `high` are full,
    /// of pods below and above the preemptor.
    fn kinds() -> crate::cache::Snapshot {
        let mut cordoned = node("cordoned", 1000, 4 * GI);
        cordoned.unschedulable = true;
        snapshot(
            vec![
                node("free", 1000, 4 * GI),
                tainted(node("tainted", 1000, 4 * GI), "dedicated"),
                cordoned,
                node("small", 500, 4 * GI),
                node("low", 1000, 4 * GI),
                node("high", 1000, 4 * GI),
            ],
            vec![
                pod("low-1", 10, 500, GI, Some("low")),
                pod("low-2", 20, 500, GI, Some("low")),
                pod("high-1", 200, 1000, GI, Some("high")),
            ],
        )
    }

    fn names(snapshot: &Snapshot, indices: &[usize]) -> Vec<String> {
        indices
            .iter()
            .map(|&i| snapshot.nodes[i].name.to_string())
            .collect()
    }

    fn preemptors() -> Vec<Pod> {
        let digest = pod("preemptor", 100, 600, GI, None);
        // A node selector: every node is read in full.
        let mut read = pod("preemptor", 100, 600, GI, None);
        read.details_mut().required_node_affinity = Some(NodeSelector {
            terms: vec![NodeSelectorTerm {
                match_expressions: vec![NodeSelectorRequirement {
                    key: "kubernetes.io/hostname".into(),
                    operator: NodeSelectorOperator::Exists,
                    values: Vec::new(),
                }],
                match_fields: Vec::new(),
            }],
        });
        vec![digest, read]
    }

    #[test]
    fn screening_keeps_only_unschedulable_nodes_with_the_bounds_resources_give() {
        let snapshot = kinds();
        for preemptor in preemptors() {
            let pre = PreFilter::new(&preemptor, &snapshot);
            let mut pass = FilterPass::new(&snapshot, &pre, false);
            pass.want_bounds = true;
            let mut tally = pass.run(false, NOW).tally;
            assert_eq!(tally.take_feasible(&snapshot.nodes), [Str::from("free")]);
            let mut potential = std::mem::take(&mut tally.potential);
            assert_eq!(names(&snapshot, &potential.indices()), ["low", "high"]);
            // `high` cannot be freed by pods below the preemptor: no bound, last resort.
            assert_eq!(names(&snapshot, &potential.unbounded), ["high"]);
            let mut promising = potential.take_promising();
            let low = promising.pop().expect("low is bounded");
            assert_eq!(names(&snapshot, &[low.index()]), ["low"]);
            // Both pods must go (600m of 1000m, 500m each), the higher at priority 20.
            assert_eq!((low.bound().highest, low.bound().count), (20, 2));
            assert_eq!(promising.pop(), None);
        }
    }

    #[test]
    fn without_bounds_every_unschedulable_node_waits_unbounded() {
        let snapshot = kinds();
        let preemptor = pod("preemptor", 100, 600, GI, None);
        let pre = PreFilter::new(&preemptor, &snapshot);
        let pass = FilterPass::new(&snapshot, &pre, false);
        assert!(
            !pass.want_bounds,
            "a cluster this small is searched exhaustively"
        );
        let mut potential = pass.run(false, NOW).tally.potential;
        assert_eq!(names(&snapshot, &potential.unbounded), ["low", "high"]);
        assert_eq!(potential.take_promising().pop(), None);
    }

    #[test]
    fn a_node_has_one_status_whether_tallied_or_asked_for_alone() {
        let snapshot = kinds();
        for preemptor in preemptors() {
            let pre = PreFilter::new(&preemptor, &snapshot);
            let pass = FilterPass::new(&snapshot, &pre, true);
            let mut tally = pass.run(false, NOW).tally;
            let diagnostics = tally.take_diagnostics(&snapshot.nodes);
            assert_eq!(diagnostics.len(), snapshot.nodes.len());
            for (index, diagnostic) in diagnostics.iter().enumerate() {
                assert_eq!(diagnostic.node, snapshot.nodes[index].name);
                assert_eq!(pass.node_status(index).as_ref(), Some(&diagnostic.filter));
            }
            let code = |name: &str| {
                pass.node_status(snapshot.node_index(name).unwrap())
                    .unwrap()
                    .code
            };
            assert_eq!(code("free"), Code::Success);
            for name in ["tainted", "cordoned", "small"] {
                assert_eq!(code(name), Code::UnschedulableAndUnresolvable, "{name}");
            }
            for name in ["low", "high"] {
                assert_eq!(code(name), Code::Unschedulable, "{name}");
            }
            assert_eq!(pass.node_status(snapshot.nodes.len()), None);
        }
    }

    #[test]
    fn the_failure_message_counts_every_reason_once_per_node() {
        let snapshot = kinds();
        // `free` fits and gives no reason.
        let preemptor = pod("preemptor", 100, 600, GI, None);
        let pre = PreFilter::new(&preemptor, &snapshot);
        for explain in [false, true] {
            let pass = FilterPass::new(&snapshot, &pre, explain);
            let tally = pass.run(false, NOW).tally;
            assert_eq!(
                pass.failure_message(tally, &[]),
                "0/6 nodes are available: 1 node(s) had untolerated taint {dedicated: }, \
                 1 node(s) were unschedulable, 3 Insufficient cpu."
            );
            assert_eq!(pass.nodes_filtered(&[]), 6);
        }
    }
}
