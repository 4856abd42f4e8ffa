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

use crate::cache::{
    GROUP_NODES, HardTaints, NO_HARD_TAINTS, NodeInfo, NodeSummary, READ_NODE, Snapshot,
};
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
/// Screened node groups filtered with the ones that must be (the most promising), and
/// the first batch of more when the search needs them (then twice as many each time).
const SCREEN_FIRST_GROUPS: usize = 4;
/// Below this many nodes a decision filters every node rather than screen node groups
/// first: the rounds of filtering and dry runs that screening takes cost more than the
/// filter pass saves (break-even near 10,000 nodes; 2× faster at 20,000 and 3–4× at
/// 50,000 in `examples/profile_decide`).
pub const SCREEN_MIN_NODES: usize = 12_000;
/// Node groups per parallel screening task.
const SCREEN_TASK_GROUPS: usize = 128;
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
    /// Screen node groups (see [`crate::cache::NodeGroup`]) on clusters of at least this
    /// many nodes; `None`: [`SCREEN_MIN_NODES`]. Decisions are the same either way.
    pub screen_min_nodes: Option<usize>,
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
    /// Nodes whose digests the filter pass read; the others were answered for by their
    /// group's columns (see [`crate::cache::NodeGroup`]), which cannot hold the winner.
    pub nodes_filtered: usize,
    /// Nodes dry-run for preemption.
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
            nodes_filtered: 0,
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
        Self::of_set(preemptor, by_taints, sets, summary.taint_set, known)
    }

    /// [`Self::of`] for a node whose digest names hard-taint set `taint_set`.
    fn of_set(
        preemptor: &Pod,
        by_taints: bool,
        sets: &'n imbl::Vector<Arc<HardTaints>>,
        taint_set: u16,
        known: Option<&mut Vec<Option<NodeOnly<'n>>>>,
    ) -> Self {
        if !by_taints {
            return NodeOnly::ReadNode;
        }
        let slot = match taint_set {
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

/// A node group whose columns answer for it (see [`crate::cache::NodeGroup`]): no node
/// in it fits the preemptor, each node failing the node-only filters or NodeResourcesFit
/// on its digest. Such a group is filtered only if it may hold the winning candidate;
/// otherwise its nodes count towards the filter reasons from the columns alone.
#[derive(Clone, Debug)]
struct GroupScreen {
    group: usize,
    /// A lower bound of the [`bounds::Bound::key`] of every candidate in the group (all
    /// `i64::MAX` when it can have none).
    key: [i64; 4],
    /// The latest criterion-5 value (an unset start read as now) a candidate here whose
    /// key is `key` can have.
    latest: i64,
    /// Nodes passing the node-only filters and failing NodeResourcesFit for each reason
    /// of [`filters::fit::REASONS`].
    short: [u32; 4],
    /// The nodes passing the node-only filters, as bits.
    pass: u64,
}

impl GroupScreen {
    /// Most promising first, as [`Pending`] orders nodes.
    fn order(&self) -> ([i64; 4], std::cmp::Reverse<i64>, usize) {
        (self.key, std::cmp::Reverse(self.latest), self.group)
    }

    /// Whether no candidate in the group can beat (or tie) the best candidate, of key
    /// `key` and criterion-5 value `start`.
    fn loses_to(&self, key: [i64; 4], start: i64) -> bool {
        self.key > key || self.key == key && self.latest < start
    }

    /// Every node group's screen, in group order; `None` for a group that must be
    /// filtered (or that the screen cannot answer for).
    fn pass(
        pre: &PreFilter<'_>,
        snapshot: &Snapshot,
        now: i64,
        parallel: bool,
    ) -> Vec<Option<GroupScreen>> {
        let screen = |groups: std::ops::Range<usize>| {
            let mut verdicts = Vec::new();
            groups
                .map(|group| Self::of(pre, snapshot, group, now, &mut verdicts))
                .collect::<Vec<_>>()
        };
        let groups = snapshot.groups.len();
        if parallel && groups >= 2 * SCREEN_TASK_GROUPS {
            let tasks = groups.div_ceil(SCREEN_TASK_GROUPS);
            (0..tasks)
                .into_par_iter()
                .map(|task| {
                    screen(task * SCREEN_TASK_GROUPS..((task + 1) * SCREEN_TASK_GROUPS).min(groups))
                })
                .collect::<Vec<_>>()
                .concat()
        } else {
            screen(0..groups)
        }
    }

    fn of<'n>(
        pre: &PreFilter<'_>,
        snapshot: &'n Snapshot,
        index: usize,
        now: i64,
        verdicts: &mut Vec<Option<NodeOnly<'n>>>,
    ) -> Option<GroupScreen> {
        let group = snapshot.groups.get(index)?;
        if group.read_node {
            return None;
        }
        let pod = pre.pod;
        let members = group.members();
        let mut pass = members & !group.tainted;
        let mut tainted = group.tainted & members;
        while tainted != 0 {
            let slot = tainted.trailing_zeros() as usize;
            tainted &= tainted - 1;
            let set = group.taint_sets[slot];
            match NodeOnly::of_set(pod, true, &snapshot.taint_sets, set, Some(verdicts)) {
                NodeOnly::Pass => pass |= 1 << slot,
                NodeOnly::Fail(_) => {}
                NodeOnly::ReadNode => return None,
            }
        }
        // Bits of the nodes short of pod slots, milli-CPU, memory, ephemeral storage.
        let request = pod.requests();
        let mut short = [group.full & members, 0, 0, 0];
        if !request.is_zero_request() {
            let wants = [request.milli_cpu, request.memory, request.ephemeral_storage];
            for ((bits, want), free) in short[1..].iter_mut().zip(wants).zip(&group.free) {
                if want > 0 {
                    for (slot, &free) in free[..group.len].iter().enumerate() {
                        *bits |= u64::from(want > free) << slot;
                    }
                }
            }
        }
        // Nodes with nominated pods that take room from the preemptor: as the pass does.
        if group.max_nominated_priority >= pod.priority {
            for slot in 0..group.len {
                if group.nominated_priority[slot] < pod.priority || pass & (1 << slot) == 0 {
                    continue;
                }
                let node = index * GROUP_NODES + slot;
                let nominated = pre.nominated_occupancy(snapshot.nodes.get(node)?);
                let mask = pre.digest_fit_mask_with(snapshot.summaries.get(node)?, &nominated);
                for (bits, (bit, _)) in short.iter_mut().zip(filters::fit::REASONS) {
                    if mask & bit != 0 {
                        *bits |= 1 << slot;
                    } else {
                        *bits &= !(1 << slot);
                    }
                }
            }
        }
        if pass & !(short[0] | short[1] | short[2] | short[3]) != 0 {
            // Some node may fit, or needs the filters after NodeResourcesFit.
            return None;
        }
        let (key, latest) = if pass == 0 || group.lowest >= pod.priority {
            ([i64::MAX; 4], i64::MIN)
        } else {
            // A candidate's highest victim priority is at least the lowest priority of
            // its node's pods, at least one victim.
            let lowest = i64::from(group.lowest);
            (
                [0, lowest, lowest + SHIFT, 1],
                group.lowest_latest_start_at(now),
            )
        };
        Some(GroupScreen {
            group: index,
            key,
            latest,
            short: short.map(|bits| (bits & pass).count_ones()),
            pass,
        })
    }

    /// [`Self::loses_to`] node by node, from each node's own lowest priority and a victim
    /// count from its largest requests: when the best candidate needs several victims,
    /// the group's key alone (one victim) cannot tell.
    fn each_node_loses_to(
        &self,
        snapshot: &Snapshot,
        pod: &Pod,
        key: [i64; 4],
        start: i64,
        now: i64,
    ) -> bool {
        let Some(group) = snapshot.groups.get(self.group) else {
            return false;
        };
        if key[0] != 0 {
            return false;
        }
        let request = pod.requests();
        let wants = [request.milli_cpu, request.memory, request.ephemeral_storage];
        let checked = !request.is_zero_request();
        let mut nodes = self.pass;
        while nodes != 0 {
            let slot = nodes.trailing_zeros() as usize;
            nodes &= nodes - 1;
            let lowest = group.node_lowest[slot];
            // No pod below the preemptor: no candidate (the search has one already).
            if lowest >= pod.priority || i64::from(lowest) > key[1] {
                continue;
            }
            if i64::from(lowest) < key[1] {
                return false;
            }
            // Removing pods of the lowest priority only: each frees at most the largest
            // request, so a deficit of `d` takes at least `d / largest` victims.
            let mut count = 1i64;
            if checked && group.exact_free & (1 << slot) != 0 {
                for ((want, free), largest) in
                    wants.into_iter().zip(&group.free).zip(&group.largest)
                {
                    let (deficit, largest) = (want.saturating_sub(free[slot]), largest[slot]);
                    if want > 0 && deficit > 0 && largest > 0 {
                        count = count.max(deficit / largest + i64::from(deficit % largest != 0));
                    }
                }
            }
            let lowest = i64::from(lowest);
            let node = [0, lowest, (lowest + SHIFT).saturating_mul(count), count];
            let latest = match group.node_lowest_start[slot] {
                i64::MAX => now,
                latest => latest,
            };
            if node < key || node == key && latest >= start {
                return false;
            }
        }
        true
    }

    /// Adds the filter reasons of the nodes of `skipped` to `tally`.
    fn add_reasons<'n>(
        skipped: &[GroupScreen],
        pre: &PreFilter<'_>,
        snapshot: &'n Snapshot,
        tally: &mut FilterTally<'n>,
    ) {
        let mut verdicts = Vec::new();
        for screen in skipped {
            for ((bit, _), count) in filters::fit::REASONS.iter().zip(screen.short) {
                tally.digest_failures[usize::from(*bit)] += count;
            }
            let Some(group) = snapshot.groups.get(screen.group) else {
                continue;
            };
            let mut tainted = group.tainted & group.members();
            while tainted != 0 {
                let slot = tainted.trailing_zeros() as usize;
                tainted &= tainted - 1;
                let set = group.taint_sets[slot];
                let sets = &snapshot.taint_sets;
                match NodeOnly::of_set(pre.pod, true, sets, set, Some(&mut verdicts)) {
                    NodeOnly::Fail(filters::StaticFailure::Taint(taint)) => tally.add_taint(taint),
                    NodeOnly::Fail(failure) => tally.reasons.add_all(&failure.status().reasons),
                    NodeOnly::Pass | NodeOnly::ReadNode => {}
                }
            }
        }
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
    // The digests leaf by leaf of the persistent vector: contiguous slices.
    let mut leaves: Vec<(usize, &[NodeSummary])> = Vec::new();
    let mut start = 0;
    for leaf in summaries.leaves() {
        leaves.push((start, leaf));
        start += leaf.len();
    }
    // The slices of the node groups `groups` (ascending).
    let slices_of = |groups: &[usize]| -> Vec<(usize, &[NodeSummary])> {
        let mut slices = Vec::with_capacity(groups.len());
        for &group in groups {
            let from = group * GROUP_NODES;
            let to = (from + GROUP_NODES).min(nodes.len());
            let first = leaves.partition_point(|(start, leaf)| start + leaf.len() <= from);
            for &(start, leaf) in leaves[first..].iter().take_while(|(start, _)| *start < to) {
                let (a, b) = (from.max(start), to.min(start + leaf.len()));
                slices.push((a, &leaf[a - start..b - start]));
            }
        }
        slices
    };
    // A few runs of slices, each tallied with room for all its nodes (no regrowth).
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
    // The filter pass over `slices`, in tasks of at least `PARALLEL_MIN_NODES` nodes so
    // splitting costs little next to the work.
    let filter_slices = |slices: &[(usize, &[NodeSummary])]| -> FilterTally {
        let count: usize = slices.iter().map(|(_, leaf)| leaf.len()).sum();
        let tasks = if parallel {
            (count / PARALLEL_MIN_NODES).clamp(1, 2 * rayon::current_num_threads())
        } else {
            1
        };
        let per_task = slices.len().div_ceil(tasks).max(1);
        FilterTally::concat(if tasks > 1 {
            slices.par_chunks(per_task).map(filter_group).collect()
        } else {
            slices.chunks(per_task).map(filter_group).collect()
        })
    };
    // With group screening, the groups that may hold a fitting node or that the
    // digests cannot answer for are filtered first, with the most promising others;
    // the rest wait in `screened`, most promising first, until the candidate search
    // shows whether they can hold a winner.
    let screening = want_bounds
        && digest_decides_resources
        && nodes.len() >= options.screen_min_nodes.unwrap_or(SCREEN_MIN_NODES);
    let (mut tally, screened, mut next_screened) = tracing::info_span!(
        "filter",
        nodes = nodes.len(),
        screened = tracing::field::Empty
    )
    .in_scope(|| {
        if !screening || snapshot.groups.len() != nodes.len().div_ceil(GROUP_NODES) {
            return (filter_slices(&leaves), Vec::new(), 0);
        }
        let screen = GroupScreen::pass(&pre, snapshot, now, parallel);
        let (mut first, mut screened): (Vec<usize>, Vec<GroupScreen>) = (Vec::new(), Vec::new());
        for (group, verdict) in screen.into_iter().enumerate() {
            match verdict {
                Some(verdict) => screened.push(verdict),
                None => first.push(group),
            }
        }
        screened.sort_unstable_by_key(GroupScreen::order);
        let taken = screened.len().min(SCREEN_FIRST_GROUPS);
        first.extend(screened[..taken].iter().map(|s| s.group));
        first.sort_unstable();
        tracing::Span::current().record("screened", screened.len() - taken);
        (filter_slices(&slices_of(&first)), screened, taken)
    });
    // Nodes of screened groups never filtered.
    let unfiltered = |screens: &[GroupScreen]| -> usize {
        let len = |s: &GroupScreen| snapshot.groups.get(s.group).map_or(0, |g| g.len);
        screens.iter().map(len).sum()
    };
    let feasible = std::mem::take(&mut tally.feasible);
    let mut bounded = std::mem::take(&mut tally.bounded_groups);
    let mut unbounded = std::mem::take(&mut tally.unbounded);
    let mut statuses = std::mem::take(&mut tally.statuses);

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
        decision.nodes_filtered = nodes.len() - unfiltered(&screened[next_screened..]);
        decision = decision.with_diagnostics(diagnostics);
        return decision;
    }
    // The filter reasons of every node: the filtered ones' and the skipped groups'.
    let filter_message = |tally: FilterTally<'_>, skipped: &[GroupScreen]| {
        let mut tally = tally;
        GroupScreen::add_reasons(skipped, &pre, snapshot, &mut tally);
        fit_error_message(nodes.len(), &tally.into_reasons())
    };

    // 2. Eligibility.
    let not_eligible = tracing::info_span!("eligibility")
        .in_scope(|| not_eligible_reason(snapshot, preemptor, |index| filter_one(index).0.code));
    if let Some(reason) = not_eligible {
        let filter_message = filter_message(tally, &screened[next_screened..]);
        let mut decision = Decision::new(
            Outcome::NotEligible,
            format!("{filter_message} preemption: {reason}"),
        );
        decision.nodes_filtered = nodes.len() - unfiltered(&screened[next_screened..]);
        decision = decision.with_diagnostics(diagnostics);
        return decision;
    }

    // 3. Candidates: every Unschedulable node, dry-run.
    let potential_count = bounded.iter().map(|g| g.all.len()).sum::<usize>() + unbounded.len();
    let search = tracing::info_span!(
        "candidate_search",
        potential = potential_count,
        nodes_filtered = tracing::field::Empty,
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
    // Screened groups the search showed cannot hold a winner: counted, never filtered.
    let mut skipped: Vec<GroupScreen> = Vec::new();
    if options.explain || !screening && potential_count <= PRUNE_THRESHOLD {
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
        let mut best: Option<([i64; 4], i64)> = None;
        let mut chunk_len = PRUNE_CHUNK_FIRST.max(rayon::current_num_threads());
        let mut open: Vec<usize> = Vec::with_capacity(PRUNE_CHUNK_MAX);
        let mut more_groups = SCREEN_FIRST_GROUPS;
        loop {
            // Each round pops the most promising bounded nodes that can still beat the
            // best candidate so far.
            let mut remaining = MostPromising::new(std::mem::take(&mut bounded));
            loop {
                open.clear();
                while open.len() < chunk_len {
                    let Some(next) = remaining.pop() else {
                        break;
                    };
                    if let Some((key, start)) = best {
                        // Nodes come in key order, and within a key by descending latest
                        // start (an unset start, "now", first): once one with a known
                        // start loses, so does every node after it.
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
                            if (b.0, std::cmp::Reverse(b.1))
                                <= (key.0, std::cmp::Reverse(key.1)) =>
                        {
                            b
                        }
                        _ => key,
                    });
                }
            }
            // Then the screened groups that may still hold a winner, a few more each time.
            let mut groups = Vec::new();
            while next_screened < screened.len() && groups.len() < more_groups {
                let group = &screened[next_screened];
                next_screened += 1;
                if best.is_some_and(|(key, start)| {
                    group.loses_to(key, start)
                        || group.each_node_loses_to(snapshot, preemptor, key, start, now)
                }) {
                    skipped.push(group.clone());
                } else {
                    groups.push(group.group);
                }
            }
            if groups.is_empty() {
                break;
            }
            more_groups *= 2;
            groups.sort_unstable();
            let mut more = filter_slices(&slices_of(&groups));
            bounded = std::mem::take(&mut more.bounded_groups);
            unbounded.append(&mut more.unbounded);
            tally = FilterTally::concat(vec![tally, more]);
        }
        if candidates.is_empty() {
            collect(run(&unbounded), &mut candidates);
        }
    }
    let filter_message = filter_message(tally, &skipped);
    let nodes_filtered = nodes.len() - unfiltered(&skipped);
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

    search.record("nodes_filtered", nodes_filtered);
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
        decision.nodes_filtered = nodes_filtered;
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
    decision.nodes_filtered = nodes_filtered;
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
