//! Offline drain plans (`preemptd plan-drain`): read a cluster as `simulate` does (a file,
//! or a live cluster listed once), plan the drain of the named nodes with
//! [`engine::drain`], and render the plan as text for people or as the proto3 JSON of
//! `preemptd.v1.PlanDrainResponse` for programs.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::app::{App, AppConfig};
use crate::engine::drain::{DrainError, DrainPlan, Eviction, Placement};
use crate::engine::{FeatureGates, PdbMode, Policy};
use crate::model::PodRef;
use crate::model::decode::Object;
use crate::simulate::{self, SimulateError};

/// How `plan-drain` plans.
#[derive(Clone, Debug, Default)]
pub struct PlanDrainOptions {
    /// The placement policy (`--policy`); `None`: upstream's decisions.
    pub policy: Option<Arc<Policy>>,
    /// PDB mode of the preemption decisions; `None`: the policy's.
    pub pdb_mode: Option<PdbMode>,
    /// The Kubernetes version (and its feature gates) to decide as.
    pub feature_gates: FeatureGates,
}

impl PlanDrainOptions {
    /// The application core these options set up.
    fn app_config(&self) -> AppConfig {
        AppConfig {
            policy: self.policy.clone(),
            feature_gates: self.feature_gates.clone(),
            ..AppConfig::default()
        }
    }
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanDrainError {
    /// The cluster could not be read.
    #[error(transparent)]
    Cluster(#[from] SimulateError),
    /// The node list names no node, or a node the cluster lacks.
    #[error("--nodes: {0}")]
    Nodes(DrainError),
}

impl PlanDrainError {
    /// sysexits-style: the reader's codes, 64 (EX_USAGE) for a bad `--nodes`, 70
    /// (EX_SOFTWARE) for a defect.
    pub fn exit_code(&self) -> i32 {
        match self {
            PlanDrainError::Cluster(error) => error.exit_code(),
            PlanDrainError::Nodes(DrainError::WorkingState { .. }) => 70,
            PlanDrainError::Nodes(_) => 64,
        }
    }
}

/// A plan, and a note per file that had objects skipped.
#[derive(Debug)]
pub struct PlannedDrain {
    /// The plan itself.
    pub plan: DrainPlan,
    /// Remarks on the plan for the user.
    pub notes: Vec<String>,
}

/// Reads the cluster file and plans the drain of `nodes`.
pub fn plan_drain(
    cluster: &Path,
    nodes: &[String],
    options: &PlanDrainOptions,
) -> Result<PlannedDrain, PlanDrainError> {
    let (objects, note) = simulate::read_file(cluster, false)?;
    let app = simulate::load_cluster(objects, &options.app_config()).map_err(|error| {
        SimulateError::Invalid {
            path: cluster.to_path_buf(),
            document: None,
            error,
        }
    })?;
    plan_on(&app, nodes, options, note.into_iter().collect())
}

/// As [`plan_drain`], the cluster's objects already read (from a live cluster).
pub fn plan_drain_objects(
    objects: Vec<Object>,
    nodes: &[String],
    options: &PlanDrainOptions,
) -> Result<PlannedDrain, PlanDrainError> {
    let app = simulate::load_cluster(objects, &options.app_config())
        .map_err(|error| SimulateError::Cluster(error.to_string()))?;
    plan_on(&app, nodes, options, Vec::new())
}

fn plan_on(
    app: &App,
    nodes: &[String],
    options: &PlanDrainOptions,
    notes: Vec<String>,
) -> Result<PlannedDrain, PlanDrainError> {
    let planned = app
        .plan_drain(nodes, options.pdb_mode, false)
        .map_err(PlanDrainError::Nodes)?;
    Ok(PlannedDrain {
        plan: planned.plan,
        notes,
    })
}

fn pod_name(pod: &PodRef) -> String {
    format!("{}/{}", pod.namespace, pod.name)
}

/// The plan for people: one line per pod (priority, pod, the node it is on, where it
/// would go), then the eviction batches and what blocks the rest.
pub fn plan_text(plan: &DrainPlan) -> String {
    let mut out = String::new();
    let pods = plan.pods.len();
    let blocked = plan
        .pods
        .iter()
        .filter(|p| matches!(p.eviction, Eviction::BlockedBy { .. }))
        .count();
    let _ = writeln!(
        out,
        "{pods} pod(s) to move, {} eviction batch(es), {blocked} blocked by a PodDisruptionBudget",
        plan.batches.len()
    );
    let width = plan
        .pods
        .iter()
        .map(|p| pod_name(&p.pod).len())
        .max()
        .unwrap_or(0)
        .max(3);
    let from_width = plan
        .pods
        .iter()
        .map(|p| p.from_node.len())
        .max()
        .unwrap_or(0)
        .max(4);
    if pods > 0 {
        let _ = writeln!(
            out,
            "\n{:>10}  {:width$}  {:from_width$}  WHERE IT WOULD GO",
            "PRIORITY", "POD", "FROM"
        );
    }
    for p in &plan.pods {
        let outcome = match &p.placement {
            Placement::Fits { node } => format!("fits on {node}"),
            Placement::Preempt { node, victims } => {
                let victims: Vec<String> = victims.iter().map(pod_name).collect();
                format!("preempts on {node}: {}", victims.join(", "))
            }
            Placement::Nowhere { reason } => format!("nowhere: {reason}"),
        };
        let critical = if p.critical { " (critical)" } else { "" };
        let _ = writeln!(
            out,
            "{:>10}  {:width$}  {:from_width$}  {outcome}{critical}",
            p.priority,
            pod_name(&p.pod),
            p.from_node,
        );
    }
    if !plan.batches.is_empty() {
        let _ = writeln!(
            out,
            "\neviction batches (each once the previous batch's pods run again):"
        );
        for (index, batch) in plan.batches.iter().enumerate() {
            let names: Vec<String> = batch
                .iter()
                .filter_map(|&i| plan.pods.get(i))
                .map(|p| pod_name(&p.pod))
                .collect();
            let _ = writeln!(out, "  {}: {}", index + 1, names.join(", "));
        }
    }
    if blocked > 0 || !plan.noticed_nodes.is_empty() {
        out.push('\n');
    }
    for p in &plan.pods {
        if let Eviction::BlockedBy { namespace, name } = &p.eviction {
            let _ = writeln!(
                out,
                "blocked: {} (PodDisruptionBudget {namespace}/{name} allows no disruption)",
                pod_name(&p.pod)
            );
        }
    }
    for (node, signal) in &plan.noticed_nodes {
        let _ = writeln!(out, "not a target: {node} ({signal})");
    }
    out
}
