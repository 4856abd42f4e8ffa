//! What the filter pass keeps of the nodes: each failure reason's count, the feasible and
//! the potential nodes, and the node-only verdicts of the hard-taint sets.

use std::collections::BTreeMap;

use triomphe::Arc;

use super::bounds;
use super::decision::NodeDiagnostic;
use super::filters::{self, Code, Status};
use super::potential::Potential;
use crate::cache::{HardTaints, NO_HARD_TAINTS, NodeInfo, NodeSummary, READ_NODE};
use crate::model::{Pod, Str, Taint};

/// How many nodes gave each failure reason. Reasons are mostly the same few static
/// strings, so they are matched by address first and kept in a short list; a cluster
/// with many distinct reasons (say, one taint value per node) spills into a hash map.
#[derive(Default)]
pub(super) struct ReasonCounts {
    few: Vec<(filters::Reason, usize)>,
    many: ahash::AHashMap<filters::Reason, usize>,
}

impl ReasonCounts {
    const FEW: usize = 16;

    pub(super) fn add(&mut self, reason: &filters::Reason, count: usize) {
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

    pub(super) fn add_all(&mut self, reasons: &[filters::Reason]) {
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

/// Upstream's FitError text: `0/N nodes are available: <count> <reason>, ....`
pub(super) fn fit_error_message(total: usize, reasons: &ReasonCounts) -> String {
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

/// What the filter pass keeps of the nodes.
pub(super) struct FilterTally<'n> {
    reasons: ReasonCounts,
    /// Nodes failed by TaintToleration, by taint (worded once at the end).
    taints: Vec<(&'n Taint, usize)>,
    /// Nodes failed from their digest alone, counted by NodeResourcesFit failure bits.
    pub digest_failures: [u32; filters::fit::MASKS],
    /// Nodes the preemptor fits on.
    pub feasible: Vec<usize>,
    /// The Unschedulable nodes, candidate screening's potential nodes.
    pub potential: Potential,
    /// With `explain`: every node's status.
    pub statuses: Vec<(usize, Status)>,
    /// The node-only verdict of each hard-taint set met so far (by id − 1).
    pub taint_verdicts: Vec<Option<NodeOnly<'n>>>,
}

impl Default for FilterTally<'_> {
    fn default() -> Self {
        FilterTally {
            reasons: ReasonCounts::default(),
            taints: Vec::new(),
            digest_failures: [0; filters::fit::MASKS],
            feasible: Vec::new(),
            potential: Potential::default(),
            statuses: Vec::new(),
            taint_verdicts: Vec::new(),
        }
    }
}

/// What a node's digest says of the node-only filters (NodeUnschedulable, NodeName,
/// TaintToleration, NodeAffinity).
#[derive(Clone, Copy, Debug)]
pub(super) enum NodeOnly<'n> {
    Pass,
    Fail(filters::StaticFailure<'n>),
    /// The digest cannot tell: the node must be read.
    ReadNode,
}

impl<'n> NodeOnly<'n> {
    /// The verdict for a node with `summary`, from its hard-taint set when the preemptor
    /// names no node and has no node selector or affinity (`by_taints`). Each set's verdict
    /// is worked out once into `known` when given.
    pub(super) fn of(
        preemptor: &Pod,
        by_taints: bool,
        sets: &'n imbl::Vector<Arc<HardTaints>>,
        summary: &NodeSummary,
        known: Option<&mut Vec<Option<NodeOnly<'n>>>>,
    ) -> Self {
        Self::of_set(preemptor, by_taints, sets, summary.taint_set, known)
    }

    /// [`Self::of`] for a node whose digest names hard-taint set `taint_set`.
    pub(super) fn of_set(
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
    pub(super) fn add_taint(&mut self, taint: &'n Taint) {
        let same = |known: &&Taint| {
            std::ptr::eq(*known, taint) || known.key == taint.key && known.value == taint.value
        };
        match self.taints.iter_mut().find(|(known, _)| same(known)) {
            Some((_, count)) => *count += 1,
            None => self.taints.push((taint, 1)),
        }
    }

    /// `count` nodes failing NodeResourcesFit on their digest with the bits `mask`.
    pub(super) fn add_digest_failures(&mut self, mask: u8, count: u32) {
        self.digest_failures[usize::from(mask)] += count;
    }

    /// A node failing a node-only filter, counted without a status of its own.
    pub(super) fn add_node_only_failure(&mut self, failure: filters::StaticFailure<'n>) {
        match failure {
            filters::StaticFailure::Taint(taint) => self.add_taint(taint),
            failure => self.reasons.add_all(&failure.status().reasons),
        }
    }

    pub(super) fn record(
        &mut self,
        index: usize,
        status: Status,
        bound: Option<bounds::Bound>,
        explain: bool,
    ) {
        self.reasons.add_all(&status.reasons);
        match status.code {
            Code::Success => self.feasible.push(index),
            Code::Unschedulable => self.potential.add(index, bound),
            Code::UnschedulableAndUnresolvable => {}
        }
        if explain {
            self.statuses.push((index, status));
        }
    }

    pub(super) fn with_capacity(nodes: usize) -> Self {
        FilterTally {
            potential: Potential::with_capacity(nodes),
            ..FilterTally::default()
        }
    }

    /// Ends a filter task (see [`Potential::seal`]).
    pub(super) fn seal(mut self) -> Self {
        self.potential.seal();
        self
    }

    /// The sealed tallies of several groups of nodes as one, each list copied once.
    pub(super) fn concat(tallies: Vec<FilterTally<'n>>) -> Self {
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
            all.potential.append(tally.potential);
            all.statuses.extend(tally.statuses);
        }
        all
    }

    /// The nodes the preemptor fits on, by name.
    pub(super) fn take_feasible(&mut self, nodes: &imbl::Vector<Arc<NodeInfo>>) -> Vec<Str> {
        let mut feasible: Vec<Str> = std::mem::take(&mut self.feasible)
            .into_iter()
            .map(|index| nodes[index].name.clone())
            .collect();
        feasible.sort_unstable();
        feasible
    }

    /// With `explain`, one diagnostic per node in node order (so a node's index is its
    /// diagnostic's); without, none.
    pub(super) fn take_diagnostics(
        &mut self,
        nodes: &imbl::Vector<Arc<NodeInfo>>,
    ) -> Vec<NodeDiagnostic> {
        let mut statuses = std::mem::take(&mut self.statuses);
        statuses.sort_unstable_by_key(|(index, _)| *index);
        statuses
            .into_iter()
            .map(|(index, status)| NodeDiagnostic {
                node: nodes[index].name.clone(),
                filter: status,
                preemption: None,
                victims: Vec::new(),
                pdb_violations: 0,
                candidate: false,
                notes: Vec::new(),
            })
            .collect()
    }

    /// Every failure reason, the digest failures included.
    pub(super) fn into_reasons(mut self) -> ReasonCounts {
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
