//! What a decision answers, and the options it is taken with.

use super::filters::Status;
use super::placement::Placement;
use super::policy::{PdbMode, Policy};
use super::version::{FeatureGates, KubernetesVersion};
use crate::model::{PodRef, Str};

/// What a decision concluded.
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
    /// The outcome's name in the API (`OUTCOME_*`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Preempt => "OUTCOME_PREEMPT",
            Outcome::Fits => "OUTCOME_FITS",
            Outcome::NotEligible => "OUTCOME_NOT_ELIGIBLE",
            Outcome::NoCandidate => "OUTCOME_NO_CANDIDATE",
        }
    }
}

/// How a decision is made and what it reports.
#[derive(Clone, Debug, Default)]
pub struct DecideOptions {
    /// Fill `Decision::diagnostics` with one entry per node.
    pub explain: bool,
    /// "Now" for pods without `startTime` (Unix nanoseconds); defaults to the clock.
    pub now: Option<i64>,
    /// Screen node groups (see [`crate::cache::NodeGroup`]) on clusters of at least this
    /// many nodes; `None`: [`super::SCREEN_MIN_NODES`]. Decisions are the same either way.
    pub screen_min_nodes: Option<usize>,
    /// The placement policy; `None`: upstream's decision exactly.
    pub policy: Option<std::sync::Arc<Policy>>,
    /// PDB mode for this decision; `None`: the policy's (`prefer` without one).
    pub pdb_mode: Option<PdbMode>,
    /// The kube-scheduler version whose rules the decision follows.
    pub version: KubernetesVersion,
    /// The version's feature gates when not its defaults: with GenericWorkload on, pods
    /// of PodGroups are preempted as victim units (see the engine's `units` module).
    pub feature_gates: Option<FeatureGates>,
}

impl DecideOptions {
    /// The PDB mode in force.
    pub fn effective_pdb_mode(&self) -> PdbMode {
        self.pdb_mode
            .or_else(|| self.policy.as_ref().map(|p| p.pdb_mode))
            .unwrap_or_default()
    }
}

/// Why a node was or was not a candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDiagnostic {
    /// The node.
    pub node: Str,
    /// The filter result of the normal scheduling pass.
    pub filter: Status,
    /// For nodes tried for preemption: the dry run's failure, if it failed.
    pub preemption: Option<Status>,
    /// For candidates: the victims (importance order) and PDB violations.
    pub victims: Vec<PodRef>,
    /// How many PodDisruptionBudgets preempting `victims` violates.
    pub pdb_violations: i32,
    /// The node was a candidate for preemption.
    pub candidate: bool,
    /// For candidates: what a reader should know about how the victims were chosen
    /// (e.g. the order a victim's several budgets were walked in).
    pub notes: Vec<String>,
}

/// What preemption decided for one pending pod.
#[derive(Clone, Debug)]
pub struct Decision {
    /// What was concluded.
    pub outcome: Outcome,
    /// For `Preempt`: the node the preemptor is nominated to.
    pub nominated_node: Option<Str>,
    /// Importance order (most important first).
    pub victims: Vec<PodRef>,
    /// Pending pods whose nominations to the chosen node are cleared.
    pub nominated_pods_to_clear: Vec<PodRef>,
    /// How many PodDisruptionBudgets preempting `victims` violates.
    pub pdb_violations: i32,
    /// kube-scheduler style summary.
    pub message: String,
    /// For `Fits`: the nodes the pod fits on, by name.
    pub feasible_nodes: Vec<Str>,
    /// With `explain`: one entry per node.
    pub diagnostics: Vec<NodeDiagnostic>,
    /// Generation of the chosen node in the snapshot (for the commit check).
    pub node_generation: u64,
    /// Nodes whose digests the filter pass read; the others were answered for by their
    /// group's columns (see [`crate::cache::NodeGroup`]), which cannot hold the winner.
    pub nodes_filtered: usize,
    /// Nodes dry-run for preemption.
    pub nodes_evaluated: usize,
    /// Nodes found to be candidates.
    pub candidates: usize,
    /// The kube-scheduler version whose rules the decision followed.
    pub kubernetes_version: KubernetesVersion,
    /// For `Fits` with `explain`: where the kube-scheduler would bind the pod, and why.
    pub placement: Option<Placement>,
}

impl Decision {
    /// Diagnostics in node-name order, whatever order the snapshot holds nodes in.
    pub(super) fn with_diagnostics(mut self, mut diagnostics: Vec<NodeDiagnostic>) -> Self {
        diagnostics.sort_by(|a, b| a.node.cmp(&b.node));
        self.diagnostics = diagnostics;
        self
    }

    pub(super) fn new(outcome: Outcome, message: String) -> Self {
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
            kubernetes_version: KubernetesVersion::default(),
            placement: None,
        }
    }

    /// The preemptor fits on `feasible` (by name) of `total` nodes.
    pub(super) fn fits(feasible: Vec<Str>, total: usize) -> Self {
        let message = format!("{}/{} nodes are available", feasible.len(), total);
        let mut decision = Decision::new(Outcome::Fits, message);
        decision.feasible_nodes = feasible;
        decision
    }
}
