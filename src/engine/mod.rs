//! The preemption decision: filters over every node, eligibility, exhaustive candidate
//! search with remove-all-then-reprieve victim selection, the node pick and the
//! nominations to clear — upstream DefaultPreemption's semantics (v1.35).

mod bounds;
pub mod filters;
mod victims;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;

pub use filters::{Code, Status};

use crate::cache::{NodeInfo, Snapshot};
use crate::model::{Pod, PodRef, PreemptionPolicy, Str};
use filters::PreFilter;

/// Below this many nodes a decision runs on the calling thread.
const PARALLEL_THRESHOLD: usize = 256;
/// Up to this many potential nodes every one is dry-run; above, bounds prune the search.
const PRUNE_THRESHOLD: usize = 64;
const NOT_HELPFUL: &[filters::Reason] = &[std::borrow::Cow::Borrowed(
    "Preemption is not helpful for scheduling",
)];
/// Nodes dry-run between two pruning checks.
const PRUNE_CHUNK: usize = 32;

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
        .then_with(|| a.name.cmp(&b.name))
        .then_with(|| a.uid.cmp(&b.uid))
}

fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Upstream's FitError text: `0/N nodes are available: <count> <reason>, ....`
fn fit_error_message<'a>(
    total: usize,
    statuses: impl Iterator<Item = &'a [filters::Reason]>,
) -> String {
    let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
    for reasons in statuses {
        for reason in reasons {
            *histogram.entry(reason.as_ref()).or_default() += 1;
        }
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
pub fn decide(snapshot: &Snapshot, preemptor: &Pod, options: &DecideOptions) -> Decision {
    let now = options.now.unwrap_or_else(now_nanos);
    let pre = PreFilter::new(preemptor, snapshot);
    let nodes = &snapshot.nodes;
    let parallel = nodes.len() >= PARALLEL_THRESHOLD;

    // 1. The normal filter pass, every node with nominated pods.
    // The bound of an Unschedulable node is computed while its data is hot in the cache.
    let want_bounds = !options.explain && nodes.len() > PRUNE_THRESHOLD;
    let filter_one = |info: &Arc<NodeInfo>| -> (Status, Option<bounds::Bound>) {
        let Some(node) = info.node.as_deref() else {
            return (Status::success(), None);
        };
        let status = filters::static_filters(preemptor, node);
        if !status.is_success() {
            return (status, None);
        }
        let status = match pre.scratch(info) {
            Some(mut scratch) => pre.fits_with_nominated(&mut scratch),
            None => status,
        };
        let bound = (want_bounds && status.code == Code::Unschedulable)
            .then(|| bounds::bound(&pre, info))
            .flatten();
        (status, bound)
    };
    let (statuses, node_bounds): (Vec<Status>, Vec<Option<bounds::Bound>>) = if parallel {
        nodes.par_iter().map(filter_one).unzip()
    } else {
        nodes.iter().map(filter_one).unzip()
    };

    let mut feasible: Vec<Str> = nodes
        .iter()
        .zip(&statuses)
        .filter(|(_, s)| s.is_success())
        .map(|(n, _)| n.name.clone())
        .collect();
    feasible.sort_unstable();
    let mut diagnostics: Vec<NodeDiagnostic> = if options.explain {
        nodes
            .iter()
            .zip(&statuses)
            .map(|(n, s)| NodeDiagnostic {
                node: n.name.clone(),
                filter: s.clone(),
                preemption: None,
                victims: Vec::new(),
                pdb_violations: 0,
                candidate: false,
            })
            .collect()
    } else {
        Vec::new()
    };
    if !feasible.is_empty() {
        let mut decision = Decision::new(
            Outcome::Fits,
            format!("{}/{} nodes are available", feasible.len(), nodes.len()),
        );
        decision.feasible_nodes = feasible;
        decision = decision.with_diagnostics(diagnostics);
        return decision;
    }
    let filter_message =
        fit_error_message(nodes.len(), statuses.iter().map(|s| s.reasons.as_slice()));

    // 2. Eligibility.
    if let Some(reason) = not_eligible_reason(snapshot, preemptor, &statuses) {
        let mut decision = Decision::new(
            Outcome::NotEligible,
            format!("{filter_message} preemption: {reason}"),
        );
        decision = decision.with_diagnostics(diagnostics);
        return decision;
    }

    // 3. Candidates: every Unschedulable node, dry-run.
    let potential: Vec<usize> = statuses
        .iter()
        .enumerate()
        .filter(|(_, s)| s.code == Code::Unschedulable)
        .map(|(i, _)| i)
        .collect();
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
    if options.explain || potential.len() <= PRUNE_THRESHOLD {
        collect(run(&potential), &mut candidates);
    } else {
        // Most promising nodes first (by resource lower bounds), in chunks; stop once no
        // remaining node can beat the best candidate found. Nodes that cannot fit even
        // with every lower-priority pod gone are dry-run only if nothing else is found,
        // for the failure message.
        let mut bounded: Vec<(bounds::Bound, usize)> = Vec::with_capacity(potential.len());
        let mut unfit: Vec<usize> = Vec::new();
        for &index in &potential {
            match node_bounds[index] {
                Some(b) => bounded.push((b, index)),
                None => unfit.push(index),
            }
        }
        // Only the front is usually dry-run: order it chunk by chunk, lazily.
        let order_key = |(b, index): &(bounds::Bound, usize)| (b.order(), *index);
        let mut sorted_upto = 0;
        let mut best: Option<([i64; 4], i64)> = None;
        while sorted_upto < bounded.len() {
            let end = (sorted_upto + PRUNE_CHUNK).min(bounded.len());
            let rest = &mut bounded[sorted_upto..];
            if end - sorted_upto < rest.len() {
                rest.select_nth_unstable_by_key(end - sorted_upto, order_key);
            }
            bounded[sorted_upto..end].sort_unstable_by_key(order_key);
            let chunk = &bounded[sorted_upto..end];
            sorted_upto = end;
            let open: Vec<usize> = chunk
                .iter()
                .filter(|(b, _)| best.is_none_or(|(key, start)| !b.loses_to(key, start, now)))
                .map(|(_, i)| *i)
                .collect();
            if open.is_empty() {
                break;
            }
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

    if candidates.is_empty() {
        let not_helpful = nodes.len() - failures.len();
        let preemption_message = fit_error_message(
            nodes.len(),
            failures
                .iter()
                .map(|(_, s)| s.reasons.as_slice())
                .chain(std::iter::repeat_n(NOT_HELPFUL, not_helpful)),
        );
        let mut decision = Decision::new(
            Outcome::NoCandidate,
            format!("{filter_message} preemption: {preemption_message}"),
        );
        decision = decision.with_diagnostics(diagnostics);
        decision.nodes_evaluated = candidates.len() + failures.len();
        return decision;
    }

    // 4. Pick the node.
    let chosen = pick_one(&candidates, nodes, now);
    let candidate = &candidates[chosen];
    let info = &nodes[candidate.index];
    let mut to_clear: Vec<&Arc<Pod>> = info
        .nominated
        .iter()
        .filter(|p| p.priority < preemptor.priority && p.uid != preemptor.uid)
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
    statuses: &[Status],
) -> Option<&'static str> {
    if pod.preemption_policy == PreemptionPolicy::Never {
        return Some("not eligible due to preemptionPolicy=Never.");
    }
    let nominated = pod.nominated_node_name.as_ref().filter(|n| !n.is_empty())?;
    let index = snapshot.node_index(nominated)?;
    if statuses[index].code == Code::UnschedulableAndUnresolvable {
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
