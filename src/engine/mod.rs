//! The preemption decision: filters over every node, eligibility, exhaustive candidate
//! search with remove-all-then-reprieve victim selection, the node pick and the
//! nominations to clear — upstream DefaultPreemption's semantics (v1.35).

mod bounds;
pub mod filters;
mod lanes;
mod victims;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use triomphe::Arc;

use rayon::prelude::*;

pub use filters::{Code, Status};
pub use lanes::DecisionLanes;

use crate::cache::{HardTaints, NO_HARD_TAINTS, NodeInfo, NodeSummary, READ_NODE, Snapshot};
use crate::model::{Pod, PodRef, PreemptionPolicy, Str, Taint};
use filters::PreFilter;

/// Below this many nodes a decision runs on the calling thread.
const PARALLEL_THRESHOLD: usize = 256;
/// The filter pass hands each parallel task at least this many nodes: fewer wake-ups and
/// merges, which matters when several decisions run at once.
const PARALLEL_MIN_NODES: usize = 1024;
/// Up to this many potential nodes every one is dry-run; above, bounds prune the search.
const PRUNE_THRESHOLD: usize = 64;
const NOT_HELPFUL: &[filters::Reason] = &[std::borrow::Cow::Borrowed(
    "Preemption is not helpful for scheduling",
)];
/// Nodes dry-run before the first pruning check (one per worker thread and some), then
/// twice as many each round up to `PRUNE_CHUNK_MAX`: the most promising nodes usually
/// hold the winner, so the first rounds are small.
const PRUNE_CHUNK_FIRST: usize = 4;
const PRUNE_CHUNK_MAX: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Outcome {
    /// Victims must go; the preemptor is nominated to `nominated_node`.
    Preempt,
    /// The preemptor fits somewhere already: no preemption.
    Fits,
    /// The preemptor may not preempt (PreemptionPolicy Never, or a victim of an earlier
    /// preemption is still terminating on its nominated node).
    NotEligible,
    /// No node can be made to fit; the preemptor's own nomination is cleared.
    NoCandidate,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Preempt => "OUTCOME_PREEMPT",
            Outcome::Fits => "OUTCOME_FITS",
            Outcome::NotEligible => "OUTCOME_NOT_ELIGIBLE",
            Outcome::NoCandidate => "OUTCOME_NO_CANDIDATE",
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct DecideOptions {
    /// Fill `Decision::diagnostics` with one entry per node.
    pub explain: bool,
    /// "Now" for pods without `startTime` (Unix nanoseconds); defaults to the clock.
    pub now: Option<i64>,
}

/// Why a node was or was not a candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDiagnostic {
    pub node: Str,
    /// The filter result of the normal scheduling pass.
    pub filter: Status,
    /// For nodes tried for preemption: the dry run's failure, if it failed.
    pub preemption: Option<Status>,
    /// For candidates: the victims (importance order) and PDB violations.
    pub victims: Vec<PodRef>,
    pub pdb_violations: i32,
    pub candidate: bool,
}

#[derive(Clone, Debug)]
pub struct Decision {
    pub outcome: Outcome,
    pub nominated_node: Option<Str>,
    /// Importance order (most important first).
    pub victims: Vec<PodRef>,
    pub nominated_pods_to_clear: Vec<PodRef>,
    pub pdb_violations: i32,
    /// kube-scheduler style summary.
    pub message: String,
    /// For `Fits`: the nodes the pod fits on, by name.
    pub feasible_nodes: Vec<Str>,
    pub diagnostics: Vec<NodeDiagnostic>,
    /// Generation of the chosen node in the snapshot (for the commit check).
    pub node_generation: u64,
    /// Nodes dry-run for preemption (the filter pass covers every node).
    pub nodes_evaluated: usize,
    pub candidates: usize,
}

impl Decision {
    /// Diagnostics in node-name order, whatever order the snapshot holds nodes in.
    fn with_diagnostics(mut self, mut diagnostics: Vec<NodeDiagnostic>) -> Self {
        diagnostics.sort_by(|a, b| a.node.cmp(&b.node));
        self.diagnostics = diagnostics;
        self
    }

    fn new(outcome: Outcome, message: String) -> Self {
        Decision {
            outcome,
            nominated_node: None,
            victims: Vec::new(),
            nominated_pods_to_clear: Vec::new(),
            pdb_violations: 0,
            message,
            feasible_nodes: Vec::new(),
            diagnostics: Vec::new(),
            node_generation: 0,
            nodes_evaluated: 0,
            candidates: 0,
        }
    }
}

/// A candidate node with its victims.
pub(crate) struct Candidate {
    pub index: usize,
    pub victims: Vec<Arc<Pod>>,
    pub pdb_violations: i32,
}

/// Importance order (upstream `MoreImportantPod`): higher priority first, then earlier
/// start (unset = now); remaining ties by namespace/name so results are reproducible.
pub(crate) fn importance(a: &Pod, b: &Pod, now: i64) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| {
            a.start_time
                .unwrap_or(now)
                .cmp(&b.start_time.unwrap_or(now))
        })
        .then_with(|| a.namespace.cmp(&b.namespace))
        .then_with(|| a.name().cmp(b.name()))
        .then_with(|| a.uid().cmp(b.uid()))
}

fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// How many nodes gave each failure reason. Reasons are mostly the same few static
/// strings, so they are matched by address first and kept in a short list; a cluster
/// with many distinct reasons (say, one taint value per node) spills into a hash map.
#[derive(Default)]
struct ReasonCounts {
    few: Vec<(filters::Reason, usize)>,
    many: ahash::AHashMap<filters::Reason, usize>,
}

impl ReasonCounts {
    const FEW: usize = 16;

    fn add(&mut self, reason: &filters::Reason, count: usize) {
        let same = |known: &filters::Reason| {
            std::ptr::eq(known.as_ptr(), reason.as_ptr()) && known.len() == reason.len()
                || known == reason
        };
        if let Some(entry) = self.few.iter_mut().find(|(known, _)| same(known)) {
            entry.1 += count;
        } else if self.few.len() < Self::FEW {
            self.few.push((reason.clone(), count));
        } else {
            *self.many.entry(reason.clone()).or_default() += count;
        }
    }

    fn add_all(&mut self, reasons: &[filters::Reason]) {
        for reason in reasons {
            self.add(reason, 1);
        }
    }

    fn merge(mut self, other: ReasonCounts) -> Self {
        for (reason, count) in other.entries() {
            self.add(reason, count);
        }
        self
    }

    fn entries(&self) -> impl Iterator<Item = (&filters::Reason, usize)> {
        self.few
            .iter()
            .map(|(reason, count)| (reason, *count))
            .chain(self.many.iter().map(|(reason, count)| (reason, *count)))
    }
}

/// What the filter pass keeps of the nodes.
struct FilterTally<'n> {
    reasons: ReasonCounts,
    /// Nodes failed by TaintToleration, by taint (worded once at the end).
    taints: Vec<(&'n Taint, usize)>,
    /// Nodes failed from their digest alone, counted by NodeResourcesFit failure bits.
    digest_failures: [u32; filters::fit::MASKS],
    /// Nodes the preemptor fits on.
    feasible: Vec<usize>,
    /// Unschedulable nodes with their resource lower bound (when bounds are computed),
    /// while the group's nodes are filtered.
    bounded: Vec<Pending>,
    /// Then each group's `bounded` with its most promising nodes picked out (in parallel).
    bounded_groups: Vec<BoundedGroup>,
    /// The other Unschedulable nodes: all of them when no bounds are computed, else those
    /// that cannot fit even with every lower-priority pod gone.
    unbounded: Vec<usize>,
    /// With `explain`: every node's status.
    statuses: Vec<(usize, Status)>,
    /// The node-only verdict of each hard-taint set met so far (by id − 1).
    taint_verdicts: Vec<Option<NodeOnly<'n>>>,
}

impl Default for FilterTally<'_> {
    fn default() -> Self {
        FilterTally {
            reasons: ReasonCounts::default(),
            taints: Vec::new(),
            digest_failures: [0; filters::fit::MASKS],
            feasible: Vec::new(),
            bounded: Vec::new(),
            bounded_groups: Vec::new(),
            unbounded: Vec::new(),
            statuses: Vec::new(),
            taint_verdicts: Vec::new(),
        }
    }
}

/// What a node's digest says of the node-only filters (NodeUnschedulable, NodeName,
/// TaintToleration, NodeAffinity).
#[derive(Clone, Copy, Debug)]
enum NodeOnly<'n> {
    Pass,
    Fail(filters::StaticFailure<'n>),
    /// The digest cannot tell: the node must be read.
    ReadNode,
}

impl<'n> NodeOnly<'n> {
    /// The verdict for a node with `summary`, from its hard-taint set when the preemptor
    /// names no node and has no node selector or affinity (`by_taints`). Each set's verdict
    /// is worked out once into `known` when given.
    fn of(
        preemptor: &Pod,
        by_taints: bool,
        sets: &'n imbl::Vector<Arc<HardTaints>>,
        summary: &NodeSummary,
        known: Option<&mut Vec<Option<NodeOnly<'n>>>>,
    ) -> Self {
        if !by_taints {
            return NodeOnly::ReadNode;
        }
        let slot = match summary.taint_set {
            NO_HARD_TAINTS => return NodeOnly::Pass,
            READ_NODE => return NodeOnly::ReadNode,
            id => usize::from(id) - 1,
        };
        let verdict = || match sets.get(slot) {
            Some(set) => {
                filters::hard_taints_failure(preemptor, set).map_or(NodeOnly::Pass, NodeOnly::Fail)
            }
            None => NodeOnly::ReadNode,
        };
        match known {
            Some(known) => {
                if known.len() <= slot {
                    known.resize(sets.len().max(slot + 1), None);
                }
                *known[slot].get_or_insert_with(verdict)
            }
            None => verdict(),
        }
    }
}

impl<'n> FilterTally<'n> {
    fn add_taint(&mut self, taint: &'n Taint) {
        let same = |known: &&Taint| {
            std::ptr::eq(*known, taint) || known.key == taint.key && known.value == taint.value
        };
        match self.taints.iter_mut().find(|(known, _)| same(known)) {
            Some((_, count)) => *count += 1,
            None => self.taints.push((taint, 1)),
        }
    }

    fn record(
        &mut self,
        index: usize,
        status: Status,
        bound: Option<bounds::Bound>,
        explain: bool,
    ) {
        self.reasons.add_all(&status.reasons);
        match status.code {
            Code::Success => self.feasible.push(index),
            Code::Unschedulable => match bound {
                Some(bound) => self.bounded.push(Pending::new(bound, index)),
                None => self.unbounded.push(index),
            },
            Code::UnschedulableAndUnresolvable => {}
        }
        if explain {
            self.statuses.push((index, status));
        }
    }

    fn with_capacity(nodes: usize) -> Self {
        FilterTally {
            bounded: Vec::with_capacity(nodes),
            ..FilterTally::default()
        }
    }

    /// Ends a group: its bounded nodes become a [`BoundedGroup`].
    fn seal(mut self) -> Self {
        let all = std::mem::take(&mut self.bounded);
        if !all.is_empty() {
            self.bounded_groups.push(BoundedGroup {
                least: MostPromising::least(&all),
                all,
            });
        }
        self
    }

    /// The sealed tallies of several groups of nodes as one, each list copied once (the
    /// bounded nodes stay in their groups).
    fn concat(tallies: Vec<FilterTally<'n>>) -> Self {
        let mut all = FilterTally::default();
        for tally in tallies {
            all.reasons = all.reasons.merge(tally.reasons);
            for (taint, count) in tally.taints {
                for _ in 0..count {
                    all.add_taint(taint);
                }
            }
            for (into, from) in all.digest_failures.iter_mut().zip(tally.digest_failures) {
                *into += from;
            }
            all.feasible.extend(tally.feasible);
            all.bounded_groups.extend(tally.bounded_groups);
            all.unbounded.extend(tally.unbounded);
            all.statuses.extend(tally.statuses);
        }
        all
    }

    /// Every failure reason, the digest failures included.
    fn into_reasons(mut self) -> ReasonCounts {
        for (taint, count) in std::mem::take(&mut self.taints) {
            let reason = filters::Reason::Owned(filters::untolerated_taint_reason(taint));
            self.reasons.add(&reason, count);
        }
        for (mask, &count) in self.digest_failures.iter().enumerate() {
            if count == 0 {
                continue;
            }
            for (bit, reason) in filters::fit::REASONS {
                if mask as u8 & bit != 0 {
                    self.reasons
                        .add(&filters::Reason::Borrowed(reason), count as usize);
                }
            }
        }
        self.reasons
    }
}

/// Pins the lifetime of a filter-pass closure's tally to the snapshot's (a closure's
/// own parameter annotations would make it any lifetime).
fn tally_with<'n, F: Fn(&mut FilterTally<'n>, usize, &NodeSummary)>(f: F) -> F {
    f
}

/// An Unschedulable node waiting to be dry-run, ordered most promising first: by its
/// bound's [`bounds::Bound::order`], then index. Both are packed into two integers in
/// that order, so picking the most promising of tens of thousands compares two words
/// instead of branching on five fields (a fifth of a 5,000-node decision otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    /// Highest victim priority (offset to unsigned, 32 bits), shifted priority sum (never
    /// negative, 64 bits), victim count (32 bits, a larger one held as `u32::MAX`, still
    /// a lower bound).
    rank: u128,
    /// Latest start, complemented so later sorts first (64 bits), node index (64 bits).
    tie: u128,
}

impl Pending {
    const SIGN: u32 = 1 << 31;
    const SIGN_64: u64 = 1 << 63;

    fn new(bound: bounds::Bound, index: usize) -> Self {
        let highest = bound.highest.clamp(i32::MIN.into(), i32::MAX.into()) as i32;
        let sum = u64::try_from(bound.sum).unwrap_or(0);
        let count = u32::try_from(bound.count.max(0)).unwrap_or(u32::MAX);
        let latest = !((bound.latest_start as u64) ^ Self::SIGN_64);
        Pending {
            rank: u128::from((highest as u32) ^ Self::SIGN) << 96
                | u128::from(sum) << 32
                | u128::from(count),
            tie: u128::from(latest) << 64 | index as u128,
        }
    }

    fn bound(&self) -> bounds::Bound {
        bounds::Bound {
            highest: (((self.rank >> 96) as u32 ^ Self::SIGN) as i32).into(),
            sum: ((self.rank >> 32) as u64) as i64,
            count: (self.rank as u32).into(),
            latest_start: (!((self.tie >> 64) as u64) ^ Self::SIGN_64) as i64,
        }
    }

    fn index(&self) -> usize {
        self.tie as u64 as usize
    }
}

/// The bounded nodes of one filter group, with the group's `MostPromising::FIRST` most
/// promising picked out where the group ran.
struct BoundedGroup {
    least: Vec<Pending>,
    all: Vec<Pending>,
}

/// The bounded nodes, handed out most promising first. A search pops a handful of the
/// tens of thousands: the first `FIRST` are picked out in one pass (most nodes cost one
/// comparison), and the rest are ordered only if the search gets that far.
struct MostPromising {
    /// The most promising nodes, least promising first (popped from the back).
    first: Vec<Pending>,
    /// Every bounded node, by group; those after `first` are ordered when `first` runs out.
    all: Vec<Vec<Pending>>,
    rest: Option<std::collections::BinaryHeap<std::cmp::Reverse<Pending>>>,
}

impl MostPromising {
    /// Enough for the first rounds of a search, which usually end it. Each group picks out
    /// its own: a heap of `FIRST` over a group's nodes costs ~`FIRST · ln(nodes / FIRST)`
    /// sift-downs besides one comparison a node, so a larger one costs more than the rare
    /// ordering of the rest.
    const FIRST: usize = 8 * PRUNE_CHUNK_FIRST;

    /// The `FIRST` least of `all`, least promising first.
    fn least(all: &[Pending]) -> Vec<Pending> {
        // A max-heap of the `FIRST` least nodes seen so far: its top is the one to beat.
        let mut least: std::collections::BinaryHeap<Pending> =
            std::collections::BinaryHeap::with_capacity(Self::FIRST + 1);
        for pending in all {
            if least.len() < Self::FIRST {
                least.push(*pending);
            } else if least.peek().is_some_and(|top| pending < top) {
                least.pop();
                least.push(*pending);
            }
        }
        let mut first = least.into_sorted_vec();
        first.reverse();
        first
    }

    /// The overall `FIRST` least are among the groups' own `FIRST` least.
    fn new(groups: Vec<BoundedGroup>) -> Self {
        let first = if groups.len() == 1 {
            groups[0].least.clone()
        } else {
            let picked: Vec<Pending> = groups
                .iter()
                .flat_map(|g| g.least.iter().copied())
                .collect();
            Self::least(&picked)
        };
        MostPromising {
            first,
            all: groups.into_iter().map(|g| g.all).collect(),
            rest: None,
        }
    }

    fn pop(&mut self) -> Option<Pending> {
        if let Some(next) = self.first.pop() {
            if self.first.is_empty() && self.rest.is_none() {
                // Entries are distinct (their node indexes are), so the rest is exactly
                // what orders after the last one handed out.
                let all = std::mem::take(&mut self.all);
                self.rest = Some(
                    all.into_iter()
                        .flatten()
                        .filter(|p| *p > next)
                        .map(std::cmp::Reverse)
                        .collect(),
                );
            }
            return Some(next);
        }
        self.rest.as_mut()?.pop().map(|std::cmp::Reverse(p)| p)
    }

    fn clear(&mut self) {
        self.first.clear();
        self.all.clear();
        self.rest = Some(std::collections::BinaryHeap::new());
    }
}

/// Upstream's FitError text: `0/N nodes are available: <count> <reason>, ....`
fn fit_error_message(total: usize, reasons: &ReasonCounts) -> String {
    // Distinct reasons with equal text (an owned copy of a static one) count as one.
    let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
    for (reason, count) in reasons.entries() {
        *histogram.entry(reason.as_ref()).or_default() += count;
    }
    let mut parts: Vec<String> = histogram
        .into_iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    parts.sort();
    if parts.is_empty() {
        format!("0/{total} nodes are available.")
    } else {
        format!("0/{total} nodes are available: {}.", parts.join(", "))
    }
}

/// Decides preemption for `preemptor` on `snapshot`. The preemptor's
/// `nominated_node_name` is the nomination in force (callers fill it from the cache when
/// the request carries none).
///
/// Traced as a `decide` span with `filter`, `eligibility`, `candidate_search` and
/// `node_pick` children — one span per phase, never per node, so tracing stays a few
/// microseconds per decision.
pub fn decide(snapshot: &Snapshot, preemptor: &Pod, options: &DecideOptions) -> Decision {
    let span = tracing::info_span!(
        "decide",
        preemptor.namespace = %preemptor.namespace,
        preemptor.name = %preemptor.name(),
        preemptor.priority = preemptor.priority,
        nodes = snapshot.nodes.len(),
        revision = snapshot.revision,
        outcome = tracing::field::Empty,
        node = tracing::field::Empty,
        nodes_evaluated = tracing::field::Empty,
        candidates = tracing::field::Empty,
        victims = tracing::field::Empty,
    );
    let decision =
        if snapshot.nodes.len() >= PARALLEL_THRESHOLD && rayon::current_thread_index().is_none() {
            // Run on the pool: the parallel passes then split among its workers instead of
            // each waking them from outside.
            rayon::scope(|_| span.in_scope(|| decide_phases(snapshot, preemptor, options)))
        } else {
            span.in_scope(|| decide_phases(snapshot, preemptor, options))
        };
    if !span.is_disabled() {
        span.record("outcome", decision.outcome.as_str());
        if let Some(node) = &decision.nominated_node {
            span.record("node", &**node);
        }
        span.record("nodes_evaluated", decision.nodes_evaluated);
        span.record("candidates", decision.candidates);
        span.record("victims", decision.victims.len());
    }
    decision
}

fn decide_phases(snapshot: &Snapshot, preemptor: &Pod, options: &DecideOptions) -> Decision {
    let now = options.now.unwrap_or_else(now_nanos);
    let pre = PreFilter::new(preemptor, snapshot);
    let nodes = &snapshot.nodes;
    let parallel = nodes.len() >= PARALLEL_THRESHOLD;

    // 1. The normal filter pass, every node with nominated pods.
    // The bound of an Unschedulable node is computed while its data is hot in the cache.
    // Nodes whose digest answers for them are never read in full.
    let summaries = &snapshot.summaries;
    let want_bounds = !options.explain && nodes.len() > PRUNE_THRESHOLD;
    let digest_decides_resources = pre.digest_decides_resources();
    let digest_suffices = pre.digest_suffices();
    let node_at = |index: usize| &**nodes.get(index).expect("a digest per node entry");
    // The fit bits from the digest, when it decides the filters, with the room the node's
    // nominated pods take: `None` when the node must be read in full. A success only
    // comes when the digest suffices for every filter.
    // (The hot loop keeps this and the bound apart: one value holding both is copied
    // through the stack in pieces the CPU cannot forward, which cost a fifth of the pass.)
    // `node_only_pass`: the node-only filters pass on the digest's word.
    let digest_fit = |summary: &NodeSummary, index: usize, node_only_pass: bool| {
        if !node_only_pass {
            return None;
        }
        let nominated = if summary.counts_nominated(preemptor.priority) {
            pre.nominated_occupancy(node_at(index))
        } else {
            filters::Occupied::default()
        };
        let mask = pre.digest_fit_mask_with(summary, &nominated);
        (mask != 0 || digest_suffices).then_some((mask, nominated))
    };
    // The bound of a node its digest fails as Unschedulable (when bounds are wanted).
    let digest_bound =
        |summary: &NodeSummary, index: usize, mask: u8, nominated: &filters::Occupied| {
            if want_bounds && mask != 0 && mask & filters::fit::UNRESOLVABLE == 0 {
                bounds::bound_of_summary(preemptor, summary, nominated)
                    .unwrap_or_else(|| bounds::bound(&pre, node_at(index)))
            } else {
                None
            }
        };
    // Everything after the node-only filters, on the node entry.
    let dynamic = |info: &NodeInfo| {
        let status = match pre.scratch(info) {
            Some(mut scratch) => pre.fits_with_nominated(&mut scratch),
            None => Status::success(),
        };
        let bound = (want_bounds && status.code == Code::Unschedulable)
            .then(|| bounds::bound(&pre, info))
            .flatten();
        (status, bound)
    };
    let taint_sets = &snapshot.taint_sets;
    let filter_one = |index: usize| {
        let (summary, info) = (&summaries[index], &nodes[index]);
        let pass = match NodeOnly::of(
            preemptor,
            digest_decides_resources,
            taint_sets,
            summary,
            None,
        ) {
            NodeOnly::Fail(failure) => return (failure.status(), None),
            NodeOnly::Pass => true,
            NodeOnly::ReadNode => false,
        };
        if let Some((mask, nominated)) = digest_fit(summary, index, pass) {
            let bound = digest_bound(summary, index, mask, &nominated);
            return (filters::fit_status(mask), bound);
        }
        let Some(node) = info.node.as_deref() else {
            return (Status::success(), None);
        };
        match filters::static_failure(preemptor, node) {
            Some(failure) => (failure.status(), None),
            None => dynamic(info),
        }
    };
    // Nodes whose digest decides them are tallied as NodeResourcesFit bits and failing
    // taints by reference, without a status each; the rest get their status.
    let explain = options.explain;
    let filter_into = tally_with(|tally, index, summary| {
        let verdicts = Some(&mut tally.taint_verdicts);
        let pass = match NodeOnly::of(
            preemptor,
            digest_decides_resources,
            taint_sets,
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
        if let Some((mask, nominated)) = digest_fit(summary, index, pass) {
            if explain {
                tally.statuses.push((index, filters::fit_status(mask)));
            }
            if mask == 0 {
                tally.feasible.push(index);
                return;
            }
            tally.digest_failures[mask as usize] += 1;
            if mask & filters::fit::UNRESOLVABLE == 0 {
                match digest_bound(summary, index, mask, &nominated) {
                    Some(bound) => tally.bounded.push(Pending::new(bound, index)),
                    None => tally.unbounded.push(index),
                }
            }
            return;
        }
        let Some(info) = nodes.get(index) else {
            return;
        };
        let Some(node) = info.node.as_deref() else {
            tally.record(index, Status::success(), None, explain);
            return;
        };
        match filters::static_failure(preemptor, node) {
            Some(filters::StaticFailure::Taint(taint)) if !explain => tally.add_taint(taint),
            Some(failure) => tally.record(index, failure.status(), None, explain),
            None => {
                let (status, bound) = dynamic(info);
                tally.record(index, status, bound, explain);
            }
        }
    });
    // The digests leaf by leaf of the persistent vector: contiguous slices, and tasks of
    // at least `PARALLEL_MIN_NODES` nodes so splitting costs little next to the work.
    let mut leaves: Vec<(usize, &[NodeSummary])> = Vec::new();
    let mut start = 0;
    for leaf in summaries.leaves() {
        leaves.push((start, leaf));
        start += leaf.len();
    }
    // A few groups of leaves, each tallied with room for all its nodes (no regrowth).
    let filter_group = |group: &[(usize, &[NodeSummary])]| {
        let len = group.iter().map(|(_, leaf)| leaf.len()).sum();
        let mut tally = FilterTally::with_capacity(len);
        let mut full_reads: Vec<&Arc<NodeInfo>> = Vec::new();
        for &(start, leaf) in group {
            // When every node entry is read, they are scattered in memory: ask for this
            // leaf's, then read them. (When the digests decide resources, the few entries
            // read are not worth a pass over the digests: it costs more than their misses.)
            if !digest_decides_resources {
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
                filter_into(&mut tally, start + offset, summary);
            }
        }
        tally.seal()
    };
    let tallies: Vec<FilterTally> =
        tracing::info_span!("filter", nodes = nodes.len()).in_scope(|| {
            let groups = if parallel {
                (nodes.len() / PARALLEL_MIN_NODES).clamp(1, 2 * rayon::current_num_threads())
            } else {
                1
            };
            let per_group = leaves.len().div_ceil(groups).max(1);
            if groups > 1 {
                leaves.par_chunks(per_group).map(filter_group).collect()
            } else {
                leaves.chunks(per_group).map(filter_group).collect()
            }
        });
    let mut tally = FilterTally::concat(tallies);
    let feasible = std::mem::take(&mut tally.feasible);
    let bounded = std::mem::take(&mut tally.bounded_groups);
    let unbounded = std::mem::take(&mut tally.unbounded);
    let mut statuses = std::mem::take(&mut tally.statuses);
    let filter_reasons = tally.into_reasons();

    let mut feasible: Vec<Str> = feasible.iter().map(|&i| nodes[i].name.clone()).collect();
    feasible.sort_unstable();
    statuses.sort_unstable_by_key(|(index, _)| *index);
    let mut diagnostics: Vec<NodeDiagnostic> = statuses
        .into_iter()
        .map(|(index, status)| NodeDiagnostic {
            node: nodes[index].name.clone(),
            filter: status,
            preemption: None,
            victims: Vec::new(),
            pdb_violations: 0,
            candidate: false,
        })
        .collect();
    if !feasible.is_empty() {
        let mut decision = Decision::new(
            Outcome::Fits,
            format!("{}/{} nodes are available", feasible.len(), nodes.len()),
        );
        decision.feasible_nodes = feasible;
        decision = decision.with_diagnostics(diagnostics);
        return decision;
    }
    let filter_message = fit_error_message(nodes.len(), &filter_reasons);

    // 2. Eligibility.
    let not_eligible = tracing::info_span!("eligibility")
        .in_scope(|| not_eligible_reason(snapshot, preemptor, |index| filter_one(index).0.code));
    if let Some(reason) = not_eligible {
        let mut decision = Decision::new(
            Outcome::NotEligible,
            format!("{filter_message} preemption: {reason}"),
        );
        decision = decision.with_diagnostics(diagnostics);
        return decision;
    }

    // 3. Candidates: every Unschedulable node, dry-run.
    let potential_count = bounded.iter().map(|g| g.all.len()).sum::<usize>() + unbounded.len();
    let search = tracing::info_span!(
        "candidate_search",
        potential = potential_count,
        nodes_evaluated = tracing::field::Empty,
        candidates = tracing::field::Empty,
    )
    .entered();
    let pdbs = victims::PdbIndex::new(&snapshot.pdbs);
    let evaluate = |&index: &usize| -> (usize, Result<Candidate, Status>) {
        (
            index,
            victims::select_victims_on_node(&pre, &nodes[index], &pdbs, now).map(
                |(victims, pdb_violations)| Candidate {
                    index,
                    victims,
                    pdb_violations,
                },
            ),
        )
    };
    let run = |indices: &[usize]| -> Vec<(usize, Result<Candidate, Status>)> {
        if indices.len() >= 8 && parallel {
            indices.par_iter().map(evaluate).collect()
        } else {
            indices.iter().map(evaluate).collect()
        }
    };
    let mut candidates = Vec::new();
    let mut failures: Vec<(usize, Status)> = Vec::new();
    let mut collect = |results: Vec<(usize, Result<Candidate, Status>)>,
                       candidates: &mut Vec<Candidate>| {
        for (index, result) in results {
            match result {
                Ok(c) => candidates.push(c),
                Err(s) => failures.push((index, s)),
            }
        }
    };
    if options.explain || potential_count <= PRUNE_THRESHOLD {
        let mut potential: Vec<usize> = bounded
            .iter()
            .flat_map(|g| g.all.iter().map(Pending::index))
            .chain(unbounded.iter().copied())
            .collect();
        potential.sort_unstable();
        collect(run(&potential), &mut candidates);
    } else {
        // Most promising nodes first (by resource lower bounds), in chunks; stop once no
        // remaining node can beat the best candidate found. Nodes that cannot fit even
        // with every lower-priority pod gone are dry-run only if nothing else is found,
        // for the failure message.
        let unfit = unbounded;
        // Each round pops the most promising bounded nodes that can still beat the best
        // candidate so far.
        let mut remaining = MostPromising::new(bounded);
        let mut best: Option<([i64; 4], i64)> = None;
        let mut chunk_len = PRUNE_CHUNK_FIRST.max(rayon::current_num_threads());
        let mut open: Vec<usize> = Vec::with_capacity(PRUNE_CHUNK_MAX);
        loop {
            open.clear();
            while open.len() < chunk_len {
                let Some(next) = remaining.pop() else {
                    break;
                };
                if let Some((key, start)) = best {
                    // Nodes come in key order, and within a key by descending latest
                    // start (an unset start, "now", first): once one with a known start
                    // loses, so does every node after it.
                    let bound = next.bound();
                    if bound.key() > key
                        || bound.latest_start != i64::MAX && bound.loses_to(key, start, now)
                    {
                        remaining.clear();
                        break;
                    }
                    if next.bound().loses_to(key, start, now) {
                        continue;
                    }
                }
                open.push(next.index());
            }
            if open.is_empty() {
                break;
            }
            chunk_len = (chunk_len * 2).min(PRUNE_CHUNK_MAX);
            let before = candidates.len();
            collect(run(&open), &mut candidates);
            for c in &candidates[before..] {
                let key = (score_key(c), earliest_start_of_highest(c, now));
                // Smaller key, then later start, is better.
                best = Some(match best {
                    Some(b)
                        if (b.0, std::cmp::Reverse(b.1)) <= (key.0, std::cmp::Reverse(key.1)) =>
                    {
                        b
                    }
                    _ => key,
                });
            }
        }
        if candidates.is_empty() {
            collect(run(&unfit), &mut candidates);
        }
    }
    if options.explain {
        for c in &candidates {
            let d = &mut diagnostics[c.index];
            d.candidate = true;
            d.victims = c.victims.iter().map(|p| p.pod_ref()).collect();
            d.pdb_violations = c.pdb_violations;
        }
        for (index, status) in &failures {
            diagnostics[*index].preemption = Some(status.clone());
        }
    }

    search.record("nodes_evaluated", candidates.len() + failures.len());
    search.record("candidates", candidates.len());
    drop(search);

    if candidates.is_empty() {
        let not_helpful = nodes.len() - failures.len();
        let mut reasons = ReasonCounts::default();
        for (_, status) in &failures {
            reasons.add_all(&status.reasons);
        }
        reasons.add(&NOT_HELPFUL[0], not_helpful);
        let preemption_message = fit_error_message(nodes.len(), &reasons);
        let mut decision = Decision::new(
            Outcome::NoCandidate,
            format!("{filter_message} preemption: {preemption_message}"),
        );
        decision = decision.with_diagnostics(diagnostics);
        decision.nodes_evaluated = candidates.len() + failures.len();
        return decision;
    }

    // 4. Pick the node.
    let _pick = tracing::info_span!("node_pick", candidates = candidates.len()).entered();
    let chosen = pick_one(&candidates, nodes, now);
    let candidate = &candidates[chosen];
    let info = &nodes[candidate.index];
    let mut to_clear: Vec<&Arc<Pod>> = info
        .nominated
        .iter()
        .filter(|p| p.priority < preemptor.priority && p.uid() != preemptor.uid())
        .collect();
    to_clear.sort_by(|a, b| importance(a, b, now));
    let mut decision = Decision::new(Outcome::Preempt, filter_message);
    decision.nominated_node = Some(info.name.clone());
    decision.victims = candidate.victims.iter().map(|p| p.pod_ref()).collect();
    decision.pdb_violations = candidate.pdb_violations;
    decision.nominated_pods_to_clear = to_clear.iter().map(|p| p.pod_ref()).collect();
    decision.node_generation = info.generation;
    decision = decision.with_diagnostics(diagnostics);
    decision.nodes_evaluated = candidates.len() + failures.len();
    decision.candidates = candidates.len();
    decision
}

/// Upstream `PodEligibleToPreemptOthers`; `Some(reason)` when not eligible.
fn not_eligible_reason(
    snapshot: &Snapshot,
    pod: &Pod,
    filter_code: impl FnOnce(usize) -> Code,
) -> Option<&'static str> {
    if pod.preemption_policy == PreemptionPolicy::Never {
        return Some("not eligible due to preemptionPolicy=Never.");
    }
    let nominated = pod.nominated_node_name.as_ref().filter(|n| !n.is_empty())?;
    let index = snapshot.node_index(nominated)?;
    if filter_code(index) == Code::UnschedulableAndUnresolvable {
        return None;
    }
    let blocked = snapshot.nodes[index]
        .pods
        .iter()
        .any(|p| p.priority < pod.priority && p.terminating_by_preemption());
    blocked.then_some("not eligible due to a terminating pod on the nominated node.")
}

const SHIFT: i64 = i32::MAX as i64 + 1;

/// The first four pick criteria as a key where smaller is better: PDB violations, the
/// highest victim priority, the sum of priorities shifted by 2^31, the victim count.
pub(crate) fn score_key(c: &Candidate) -> [i64; 4] {
    [
        c.pdb_violations as i64,
        c.victims.first().map(|p| p.priority as i64).unwrap_or(0),
        c.victims.iter().map(|p| p.priority as i64 + SHIFT).sum(),
        c.victims.len() as i64,
    ]
}

/// Criterion 5: the earliest start time among the victims of the highest priority (unset
/// start = now); a later one is better.
fn earliest_start_of_highest(c: &Candidate, now: i64) -> i64 {
    let highest = c.victims.iter().map(|p| p.priority).max().unwrap_or(0);
    c.victims
        .iter()
        .filter(|p| p.priority == highest)
        .map(|p| p.start_time.unwrap_or(now))
        .min()
        .unwrap_or(i64::MIN)
}

/// Upstream `pickOneNodeForPreemption` with a deterministic last tie-break (node name).
fn pick_one(candidates: &[Candidate], nodes: &imbl::Vector<Arc<NodeInfo>>, now: i64) -> usize {
    // Scores where higher is better, in upstream's criteria order.
    let score = |c: &Candidate| -> [i64; 5] {
        let [violations, first, sum, count] = score_key(c);
        [
            -violations,
            -first,
            -sum,
            -count,
            earliest_start_of_highest(c, now),
        ]
    };
    let scores: Vec<[i64; 5]> = candidates.iter().map(score).collect();
    (0..candidates.len())
        .max_by(|&a, &b| {
            scores[a].cmp(&scores[b]).then_with(|| {
                // Lower name wins the final tie: reverse so max_by picks it.
                nodes[candidates[b].index]
                    .name
                    .cmp(&nodes[candidates[a].index].name)
            })
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(index: usize, seed: u64) -> Pending {
        // Few distinct bounds, so many entries tie on everything but the index.
        let x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59;
        Pending::new(
            bounds::Bound {
                highest: (x % 3) as i64,
                sum: (x % 5) as i64,
                count: 1,
                latest_start: if x.is_multiple_of(2) {
                    i64::MAX
                } else {
                    x as i64
                },
            },
            index,
        )
    }

    /// Packed, a pending node keeps its bound and index and orders as (bound order,
    /// index) would, extremes included.
    #[test]
    fn pending_nodes_order_as_their_bounds_then_index() {
        let mut rng = crate::generate::Rng::new(11);
        let mut pick = |choices: &[i64]| choices[rng.below(choices.len() as u64) as usize];
        let extremes = [i64::MIN, i64::MIN + 1, -1, 0, 1, 2, i64::MAX - 1, i64::MAX];
        let priorities = [i32::MIN.into(), -5, 0, 7, i32::MAX.into()];
        let all: Vec<(bounds::Bound, usize)> = (0..2000)
            .map(|i| {
                let bound = bounds::Bound {
                    highest: pick(&priorities),
                    sum: pick(&[0, 1, 3, i64::MAX - 1, i64::MAX]),
                    count: pick(&[1, 2, u32::MAX.into()]),
                    latest_start: pick(&extremes),
                };
                (
                    bound,
                    pick(&[0, 1, 5, u32::MAX.into(), i64::MAX]) as usize + i % 2,
                )
            })
            .collect();
        for &(bound, index) in &all {
            let pending = Pending::new(bound, index);
            assert_eq!((pending.bound(), pending.index()), (bound, index));
        }
        for pair in all.windows(2) {
            let [(a, i), (b, j)] = [pair[0], pair[1]];
            assert_eq!(
                Pending::new(a, i).cmp(&Pending::new(b, j)),
                (a.order(), i).cmp(&(b.order(), j)),
                "{a:?} {i} / {b:?} {j}"
            );
        }
    }

    /// `all` dealt round-robin into `count` sealed filter groups.
    fn groups_of(all: &[Pending], count: usize) -> Vec<BoundedGroup> {
        (0..count)
            .map(|g| {
                let all: Vec<Pending> = all.iter().skip(g).step_by(count).copied().collect();
                BoundedGroup {
                    least: MostPromising::least(&all),
                    all,
                }
            })
            .collect()
    }

    #[test]
    fn most_promising_hands_out_every_node_in_order_past_the_first_picks() {
        for len in [
            0,
            1,
            5,
            MostPromising::FIRST - 1,
            MostPromising::FIRST,
            129,
            1000,
        ] {
            // Dealt into several groups, as the parallel filter pass leaves them.
            for groups in [1, 3, 4] {
                let all: Vec<Pending> = (0..len)
                    .map(|i| pending(i * 7 % len.max(1), i as u64 + 1))
                    .collect();
                let mut expected = all.clone();
                expected.sort();
                let mut promising = MostPromising::new(groups_of(&all, groups));
                let popped: Vec<Pending> = std::iter::from_fn(|| promising.pop()).collect();
                assert_eq!(popped, expected, "{len} nodes in {groups} groups");
            }
        }
    }

    #[test]
    fn most_promising_hands_out_nothing_after_clear() {
        let all: Vec<Pending> = (0..300).map(|i| pending(i, i as u64)).collect();
        let mut promising = MostPromising::new(groups_of(&all, 2));
        assert!(promising.pop().is_some());
        promising.clear();
        assert_eq!(promising.pop(), None);
    }
}
