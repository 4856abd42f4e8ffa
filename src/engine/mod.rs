//! The preemption decision, upstream DefaultPreemption's semantics (v1.35, v1.36 or v1.37:
//! [`KubernetesVersion`]), as named phases each in its own module:
//! 1. [`filter_pass`]: the normal scheduling filters over the nodes — does the preemptor
//!    fit somewhere already? (On large clusters [`groups`] screens node groups first.)
//! 2. [`eligibility`]: may the preemptor preempt at all?
//! 3. [`potential`], candidate screening: the nodes preemption might help, with lower
//!    bounds of their pick scores ([`bounds`]).
//! 4. [`search`]: remove-all-then-reprieve victim selection ([`victims`]) on those nodes,
//!    pruned by the bounds without changing the answer.
//! 5. [`pick`]: the node, and the nominations to clear.
//!
//! A [`policy`] (optional) rules nodes out in phase 1 and candidates out in phase 4, and
//! names each in the diagnostics; without one the decision is upstream's.
//!
//! [`drain`] plans where the pods of nodes about to go away would go, decision by decision.
//! [`per_node`] answers one node at a time for callers that already hold candidate
//! nodes (kube-scheduler's extender verbs), with the same victim selection.

mod bounds;
mod candidate;
mod clock;
mod decision;
pub mod drain;
mod eligibility;
mod filter_pass;
pub mod filters;
pub mod group;
mod groups;
mod lanes;
pub mod per_node;
mod pick;
pub mod placement;
pub mod policy;
mod potential;
mod search;
mod tally;
#[cfg(test)]
mod test_support;
mod thresholds;
pub mod units;
mod version;
mod victims;

pub use decision::{DecideOptions, Decision, NodeDiagnostic, Outcome};
pub use eligibility::{NotPending, check_pending};
pub use filters::{Code, Status};
pub use group::{GroupDecision, GroupOptions, decide_group};
pub use lanes::DecisionLanes;
pub use policy::{PdbMode, Policy};
pub use version::{FeatureGates, GateError, KubernetesVersion};

use crate::cache::Snapshot;
use crate::model::{Pod, Str};
use filter_pass::FilterPass;
use filters::PreFilter;
use search::Found;
use thresholds::PARALLEL_THRESHOLD;

/// Below this many nodes a decision filters every node rather than screen node groups
/// first: on smaller clusters the rounds of filtering and dry runs that screening takes
/// cost more than the filter pass saves (see `examples/profile_decide`).
pub const SCREEN_MIN_NODES: usize = 12_000;
const NOT_HELPFUL: filters::Reason =
    std::borrow::Cow::Borrowed("Preemption is not helpful for scheduling");

impl Decision {
    /// No node can be made to fit: the dry runs' failures and, for every node not
    /// dry-run, "not helpful".
    fn no_candidate(found: Found, total: usize) -> Self {
        let mut reasons = tally::ReasonCounts::default();
        for (_, status) in &found.failures {
            reasons.add_all(&status.reasons);
        }
        reasons.add(&NOT_HELPFUL, total - found.failures.len());
        let preemption_message = tally::fit_error_message(total, &reasons);
        let message = format!("{} preemption: {preemption_message}", found.filter_message);
        let mut decision = Decision::new(Outcome::NoCandidate, message);
        decision.nodes_filtered = found.nodes_filtered;
        decision.nodes_evaluated = found.evaluated();
        decision
    }

    /// Preemption on the candidate `chosen` of `found`.
    fn preempt(
        snapshot: &Snapshot,
        preemptor: &Pod,
        found: Found,
        chosen: usize,
        now: i64,
    ) -> Self {
        let evaluated = found.evaluated();
        let Found {
            candidates,
            filter_message,
            nodes_filtered,
            ..
        } = found;
        let candidate = &candidates[chosen];
        let info = &snapshot.nodes[candidate.index];
        let mut decision = Decision::new(Outcome::Preempt, filter_message);
        decision.nominated_node = Some(info.name.clone());
        decision.victims = candidate.victims.iter().map(|p| p.pod_ref()).collect();
        decision.pdb_violations = candidate.pdb_violations;
        decision.nominated_pods_to_clear = pick::nominated_pods_to_clear(info, preemptor, now);
        decision.node_generation = info.generation;
        decision.nodes_filtered = nodes_filtered;
        decision.nodes_evaluated = evaluated;
        decision.candidates = candidates.len();
        decision
    }
}

/// Upstream tries a pod's nominated node first and, when the pod fits there, schedules it
/// there without filtering any other node: the nominated node is then the only feasible one.
fn nominated_first(feasible: Vec<Str>, preemptor: &Pod) -> Vec<Str> {
    match preemptor
        .nominated_node_name
        .as_ref()
        .filter(|n| !n.is_empty())
    {
        Some(nominated) if feasible.contains(nominated) => vec![nominated.clone()],
        _ => feasible,
    }
}

/// With `explain`: what the dry runs found of each node.
fn explain_search(
    diagnostics: &mut [NodeDiagnostic],
    found: &Found,
    snapshot: &Snapshot,
    preemptor: &Pod,
    version: KubernetesVersion,
) {
    let pdbs = victims::PdbIndex::new(&snapshot.pdbs, version);
    for c in &found.candidates {
        let d = &mut diagnostics[c.index];
        d.candidate = true;
        d.victims = c.victims.iter().map(|p| p.pod_ref()).collect();
        d.pdb_violations = c.pdb_violations;
        d.notes = pdbs.order_notes(&snapshot.nodes[c.index], preemptor.priority);
    }
    for (index, status) in &found.failures {
        diagnostics[*index].preemption = Some(status.clone());
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
    let mut decision =
        if snapshot.nodes.len() >= PARALLEL_THRESHOLD && rayon::current_thread_index().is_none() {
            // Run on the pool: the parallel passes then split among its workers instead of
            // each waking them from outside.
            rayon::scope(|_| span.in_scope(|| decide_phases(snapshot, preemptor, options)))
        } else {
            span.in_scope(|| decide_phases(snapshot, preemptor, options))
        };
    decision.kubernetes_version = options.version;
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
    let now = options.now.unwrap_or_else(clock::now_nanos);
    let total = snapshot.nodes.len();
    let pre = PreFilter::new(preemptor, snapshot);
    let applied = options
        .policy
        .as_deref()
        .map(|policy| policy::Applied::new(policy, preemptor));
    let pass = FilterPass::new(snapshot, &pre, options.explain).with_policy(applied);
    let units = options
        .feature_gates
        .as_ref()
        .and_then(|gates| units::UnitContext::new(snapshot, gates));
    // Screening skips node groups by bounds on pods, not units.
    let screening = units.is_none()
        && pass.screens_groups(options.screen_min_nodes.unwrap_or(SCREEN_MIN_NODES));

    // 1. Filter.
    let mut filtered = pass.run(screening, now);
    let mut diagnostics = filtered.tally.take_diagnostics(&snapshot.nodes);
    let feasible = nominated_first(filtered.tally.take_feasible(&snapshot.nodes), preemptor);
    if !feasible.is_empty() {
        let mut decision = Decision::fits(feasible, total);
        decision.nodes_filtered = pass.nodes_filtered(filtered.screened.waiting());
        if options.explain {
            let view = placement::ClusterView::new(snapshot, options.version);
            decision.placement = Some(view.place(preemptor));
        }
        return decision.with_diagnostics(diagnostics);
    }

    // 2. Eligibility.
    let not_eligible = tracing::info_span!("eligibility").in_scope(|| {
        eligibility::not_eligible_reason(snapshot, preemptor, units.as_ref(), |index| {
            // A node the snapshot lacks cannot hold the preemptor back.
            pass.node_status(index)
                .map_or(Code::UnschedulableAndUnresolvable, |status| status.code)
        })
    });
    if let Some(reason) = not_eligible {
        let skipped = filtered.screened.waiting();
        let filter_message = pass.failure_message(filtered.tally, skipped);
        let message = format!("{filter_message} preemption: {reason}");
        let mut decision = Decision::new(Outcome::NotEligible, message);
        decision.nodes_filtered = pass.nodes_filtered(skipped);
        return decision.with_diagnostics(diagnostics);
    }

    // 3. and 4. Candidate screening and the search.
    let strict = options.effective_pdb_mode() == PdbMode::Strict;
    let found = search::find_candidates(
        &pass,
        filtered,
        screening,
        strict,
        options.version,
        now,
        units.as_ref(),
    );
    if options.explain {
        explain_search(
            &mut diagnostics,
            &found,
            snapshot,
            preemptor,
            options.version,
        );
    }
    if found.candidates.is_empty() {
        return Decision::no_candidate(found, total).with_diagnostics(diagnostics);
    }

    // 5. Pick the node.
    let _pick = tracing::info_span!("node_pick", candidates = found.candidates.len()).entered();
    let chosen = pick::pick_one(&found.candidates, &snapshot.nodes, now);
    Decision::preempt(snapshot, preemptor, found, chosen, now).with_diagnostics(diagnostics)
}
