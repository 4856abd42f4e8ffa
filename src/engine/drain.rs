//! Drain plans: for nodes about to go away, where each of their pods would go if evicted
//! now, and an eviction order that keeps within every PodDisruptionBudget. Nothing is
//! evicted or changed: the plan is for a termination controller or a person.
//!
//! Pods are planned highest priority first (ties by namespace, name, uid), each on the
//! cluster minus the drained nodes and minus what the plan has placed so far:
//! - **fits**: the pod fits on some nodes as they are. The node is the one with the
//!   highest policy score (0 without a policy), then the largest free share of the
//!   resources the pod requests (per resource, allocatable minus what the node's bound
//!   pods and the pod itself request, over allocatable, summed), then the lowest name;
//! - **preempt**: the engine's preemption decision on the plan's working state, victims
//!   named;
//! - **nowhere**: the decision's kube-scheduler style summary says why.
//!
//! A placed pod holds its room on its node for the rest of the plan; the victims of a
//! planned preemption leave the working state and are not planned themselves (their
//! controllers recreate them; the plan does not follow them).
//!
//! Under a policy, critical pods go to on-demand capacity only and nodes with a
//! termination notice take no pod: spot ones by the policy's own filter, the others are
//! cordoned in the working state (listed in [`DrainPlan::noticed_nodes`]).
//!
//! The model does not know pod owners, so DaemonSet and static pods are planned like
//! any other.
//!
//! The working state is a private [`ClusterCache`] filled from the snapshot: placing and
//! preempting go through the same upserts that keep the engine's digests, so every
//! decision sees the plan so far exactly as it would see a real cluster.

use std::collections::BTreeSet;
use std::sync::Arc;

// The cache holds pods and budgets in count-only Arcs.
use triomphe::Arc as Held;

use super::policy::Capacity;
use super::{DecideOptions, Decision, KubernetesVersion, NodeDiagnostic, Outcome, PdbMode, Policy};
use crate::cache::{ClusterCache, NodeInfo, Snapshot};
use crate::model::{Node, Pod, PodDisruptionBudget, PodPhase, PodRef, Resources, Str};

/// Free shares are compared in millionths.
const SHARE_SCALE: i128 = 1_000_000;

/// How a plan decides.
#[derive(Clone, Debug, Default)]
pub struct DrainOptions {
    /// The placement policy; `None`: upstream's decisions.
    pub policy: Option<Arc<Policy>>,
    /// PDB mode of the preemption decisions; `None`: the policy's.
    pub pdb_mode: Option<PdbMode>,
    /// Keep every decision's per-node diagnostics.
    pub explain: bool,
    /// "Now" for pods without `startTime` (Unix nanoseconds); defaults to the clock.
    pub now: Option<i64>,
    /// The kube-scheduler version whose rules the decisions follow.
    pub version: KubernetesVersion,
}

/// Where an evicted pod would go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// It fits on `node` as it is (with the pods placed before it).
    Fits {
        /// The node it goes to.
        node: Str,
    },
    /// It fits on `node` once `victims` (importance order) are preempted.
    Preempt {
        /// The node it goes to.
        node: Str,
        /// The pods preempted there.
        victims: Vec<PodRef>,
    },
    /// No node can take it.
    Nowhere {
        /// Why, as the decision put it.
        reason: String,
    },
}

/// When a pod may be evicted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// In this batch (0-based).
    Batch(usize),
    /// This PodDisruptionBudget covers the pod and allows no disruption now, or none once
    /// the pods before it that fit nowhere are gone.
    BlockedBy {
        /// The budget's namespace.
        namespace: Str,
        /// The budget's name.
        name: Str,
    },
}

/// One pod of a drained node.
#[derive(Clone, Debug)]
pub struct PodPlan {
    /// The pod.
    pub pod: PodRef,
    /// Its priority.
    pub priority: i32,
    /// The drained node it runs on.
    pub from_node: Str,
    /// The policy counts it critical (on-demand only).
    pub critical: bool,
    /// Where it would go.
    pub placement: Placement,
    /// When it may be evicted.
    pub eviction: Eviction,
    /// With `explain`: the placement decision's per-node diagnostics.
    pub diagnostics: Vec<NodeDiagnostic>,
}

/// The plan to drain some nodes: where each of their pods goes, and in which batches.
#[derive(Clone, Debug)]
pub struct DrainPlan {
    /// Highest priority first: the order pods were placed in.
    pub pods: Vec<PodPlan>,
    /// Eviction batches, as indexes into `pods`, in placement order within a batch.
    pub batches: Vec<Vec<usize>>,
    /// Nodes the plan placed nothing on for a termination notice: name and signal.
    pub noticed_nodes: Vec<(Str, String)>,
}

/// Why no drain plan was made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DrainError {
    /// No node was named.
    #[error("at least one node name is required")]
    NoNodes,
    /// `nodes[index]` names no node the snapshot holds.
    #[error("unknown node {name:?}")]
    UnknownNode {
        /// The position of the name among the nodes asked for.
        index: usize,
        /// The name.
        name: String,
    },
    /// A bug: the working copy of the cluster refused a change.
    #[error("working state refused pod {pod}: {message}")]
    WorkingState {
        /// The pod being placed.
        pod: String,
        /// What the working copy said.
        message: String,
    },
}

/// Plans the drain of `nodes` (names; duplicates are ignored) on `snapshot`.
pub fn plan(
    snapshot: &Snapshot,
    nodes: &[impl AsRef<str>],
    options: &DrainOptions,
) -> Result<DrainPlan, DrainError> {
    let drained = drained_nodes(snapshot, nodes)?;
    let span = tracing::info_span!(
        "plan_drain",
        nodes = drained.len(),
        pods = tracing::field::Empty
    );
    let _span = span.enter();
    let mut pods: Vec<Held<Pod>> = drained
        .iter()
        .filter_map(|name| snapshot.node(name))
        .flat_map(|info| info.pods.iter().cloned())
        .collect();
    pods.sort_by(|a, b| drain_order(a, b));
    span.record("pods", pods.len());

    let policy = options.policy.as_deref();
    let (working, noticed_nodes) = working_copy(snapshot, &drained, policy)?;
    let decide_options = DecideOptions {
        explain: options.explain,
        now: options.now,
        version: options.version,
        policy: options.policy.clone(),
        pdb_mode: options.pdb_mode,
        ..DecideOptions::default()
    };
    let mut placed = Vec::with_capacity(pods.len());
    for pod in &pods {
        placed.push(place(&working, pod, &decide_options)?);
    }
    let runs_again: Vec<bool> = placed
        .iter()
        .map(|(placement, _)| !matches!(placement, Placement::Nowhere { .. }))
        .collect();
    let (evictions, batches) = batch_evictions(&pods, &runs_again, &snapshot.pdbs);
    let pods = pods
        .iter()
        .zip(placed)
        .zip(evictions)
        .map(|((pod, (placement, diagnostics)), eviction)| PodPlan {
            pod: pod.pod_ref(),
            priority: pod.priority,
            from_node: pod.node_name.clone().unwrap_or_else(|| Str::from("")),
            critical: policy.is_some_and(|p| p.is_critical(pod)),
            placement,
            eviction,
            diagnostics,
        })
        .collect();
    Ok(DrainPlan {
        pods,
        batches,
        noticed_nodes,
    })
}

/// The drained node names, each checked to be a node of the snapshot.
fn drained_nodes(
    snapshot: &Snapshot,
    nodes: &[impl AsRef<str>],
) -> Result<BTreeSet<Str>, DrainError> {
    if nodes.is_empty() {
        return Err(DrainError::NoNodes);
    }
    nodes
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let name = name.as_ref();
            snapshot
                .node(name)
                .filter(|info| info.node.is_some())
                .map(|info| info.name.clone())
                .ok_or_else(|| DrainError::UnknownNode {
                    index,
                    name: name.to_string(),
                })
        })
        .collect()
}

/// Highest priority first, then namespace, name and uid.
fn drain_order(a: &Pod, b: &Pod) -> std::cmp::Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| a.namespace.cmp(&b.namespace))
        .then_with(|| a.name().cmp(b.name()))
        .then_with(|| a.uid().cmp(b.uid()))
}

/// The cluster without the drained nodes (their pods and the pods nominated to them go
/// too); under a policy, nodes with a termination notice that its filter does not already
/// rule out (not spot) are cordoned. Returns the state and the noticed nodes.
fn working_copy(
    snapshot: &Snapshot,
    drained: &BTreeSet<Str>,
    policy: Option<&Policy>,
) -> Result<(ClusterCache, Vec<(Str, String)>), DrainError> {
    let working = ClusterCache::new();
    for namespace in snapshot.namespaces.values() {
        working.upsert_namespace(namespace.clone());
    }
    for pdb in snapshot.pdbs.iter() {
        working.upsert_pdb(PodDisruptionBudget::clone(pdb));
    }
    let mut noticed = Vec::new();
    let mut kept = Vec::new();
    for info in snapshot.nodes.iter() {
        let Some(node) = info.node.as_deref() else {
            continue;
        };
        if drained.contains(&info.name) {
            continue;
        }
        let mut node = node.clone();
        if let Some(signal) = policy.and_then(|p| p.notice(&node)) {
            if policy.is_some_and(|p| p.capacity(&node) != Capacity::Spot) {
                node.unschedulable = true;
            }
            noticed.push((info.name.clone(), signal));
        }
        working.upsert_node(node);
        kept.push(info);
    }
    noticed.sort();
    let pods: Vec<Held<Pod>> = kept
        .iter()
        .flat_map(|info| info.pods.iter().chain(info.nominated.iter()).cloned())
        .collect();
    for (pod, result) in pods.iter().zip(working.upsert_pods(pods.iter().cloned())) {
        result.map_err(|error| DrainError::WorkingState {
            pod: format!("{}/{}", pod.namespace, pod.name()),
            message: error.to_string(),
        })?;
    }
    Ok((working, noticed))
}

/// Decides where `pod` goes on the working state and holds its room there.
fn place(
    working: &ClusterCache,
    pod: &Pod,
    options: &DecideOptions,
) -> Result<(Placement, Vec<NodeDiagnostic>), DrainError> {
    // The pod as its controller would recreate it: pending, nominated nowhere.
    let mut pending = pod.clone();
    pending.node_name = None;
    pending.nominated_node_name = None;
    pending.phase = PodPhase::Pending;
    pending.terminating = false;
    let snapshot = working.snapshot();
    let decision = super::decide(&snapshot, &pending, options);
    let policy = options.policy.as_deref();
    let placement = match decision.outcome {
        Outcome::Fits => match pick_fit(&snapshot, &pending, &decision.feasible_nodes, policy) {
            Some(node) => {
                bind(working, pending, &node)?;
                Placement::Fits { node }
            }
            None => nowhere(&decision),
        },
        Outcome::Preempt => match decision.nominated_node.clone() {
            Some(node) => {
                for victim in &decision.victims {
                    // A victim already gone changes nothing: ignoring the error is right.
                    let _ = working.delete_pod(&victim.namespace, &victim.name, Some(&victim.uid));
                }
                for cleared in &decision.nominated_pods_to_clear {
                    working.clear_nomination(&cleared.uid);
                }
                bind(working, pending, &node)?;
                Placement::Preempt {
                    node,
                    victims: decision.victims.clone(),
                }
            }
            None => nowhere(&decision),
        },
        Outcome::NotEligible | Outcome::NoCandidate => nowhere(&decision),
    };
    Ok((placement, decision.diagnostics))
}

fn nowhere(decision: &Decision) -> Placement {
    Placement::Nowhere {
        reason: decision.message.clone(),
    }
}

/// Binds the pod to `node` in the working state: its room is taken for the rest of the plan.
fn bind(working: &ClusterCache, mut pod: Pod, node: &Str) -> Result<(), DrainError> {
    pod.node_name = Some(node.clone());
    pod.phase = PodPhase::Running;
    let name = format!("{}/{}", pod.namespace, pod.name());
    working
        .upsert_pod(pod)
        .map(|_| ())
        .map_err(|error| DrainError::WorkingState {
            pod: name,
            message: error.to_string(),
        })
}

/// The feasible node with the highest policy score, then the largest free share of what
/// the pod requests, then the lowest name.
fn pick_fit(
    snapshot: &Snapshot,
    pod: &Pod,
    feasible: &[Str],
    policy: Option<&Policy>,
) -> Option<Str> {
    feasible
        .iter()
        .filter_map(|name| {
            let info = snapshot.node(name)?;
            let node = info.node.as_deref()?;
            let score = policy.map_or(0, |p| p.score(pod, node));
            Some(((score, free_share(info, node, pod.requests())), name))
        })
        .max_by(|(a, a_name), (b, b_name)| a.cmp(b).then_with(|| b_name.cmp(a_name)))
        .map(|(_, name)| name.clone())
}

/// Σ over the resources `request` asks for of (allocatable − requested − request) /
/// allocatable, in millionths.
fn free_share(info: &NodeInfo, node: &Node, request: &Resources) -> i128 {
    let allocatable = &node.allocatable;
    let used = &info.requested;
    let mut amounts = vec![
        (request.milli_cpu, allocatable.milli_cpu, used.milli_cpu),
        (request.memory, allocatable.memory, used.memory),
        (
            request.ephemeral_storage,
            allocatable.ephemeral_storage,
            used.ephemeral_storage,
        ),
    ];
    amounts.extend(
        request
            .scalars
            .iter()
            .map(|(name, amount)| (*amount, allocatable.scalar(name), used.scalar(name))),
    );
    amounts
        .into_iter()
        .filter(|&(asked, allocatable, _)| asked > 0 && allocatable > 0)
        .map(|(asked, allocatable, used)| {
            let free = i128::from(allocatable) - i128::from(used) - i128::from(asked);
            free * SHARE_SCALE / i128::from(allocatable)
        })
        .sum()
}

/// Each pod's eviction (in `pods` order) and the batches. In placement order, a batch
/// takes every waiting pod all of whose budgets still allow one more disruption. Each batch
/// starts from full budgets, as its predecessors' pods are assumed running again elsewhere
/// — except the pods that will not run again (`runs_again` false: they fit nowhere), whose
/// disruptions last. A pod a budget allows no disruption at a batch's start is blocked.
fn batch_evictions(
    pods: &[Held<Pod>],
    runs_again: &[bool],
    pdbs: &[Held<PodDisruptionBudget>],
) -> (Vec<Eviction>, Vec<Vec<usize>>) {
    let covering: Vec<Vec<usize>> = pods
        .iter()
        .map(|pod| (0..pdbs.len()).filter(|&b| pdbs[b].covers(pod)).collect())
        .collect();
    let mut evictions = vec![Eviction::Batch(0); pods.len()];
    let mut lasting = vec![0i32; pdbs.len()];
    let mut waiting: Vec<usize> = (0..pods.len()).collect();
    let mut batches = Vec::new();
    loop {
        let fresh: Vec<i32> = pdbs
            .iter()
            .zip(&lasting)
            .map(|(b, lasting)| b.disruptions_allowed.saturating_sub(*lasting))
            .collect();
        waiting.retain(|&index| {
            // Budgets are in namespace/name order: the first blocking one is named.
            match covering[index].iter().find(|&&b| fresh[b] <= 0) {
                Some(&b) => {
                    evictions[index] = Eviction::BlockedBy {
                        namespace: pdbs[b].namespace.clone(),
                        name: pdbs[b].name.clone(),
                    };
                    false
                }
                None => true,
            }
        });
        if waiting.is_empty() {
            break;
        }
        // The first waiting pod fits the fresh budgets: every round makes progress.
        let mut allowed = fresh;
        let mut batch = Vec::new();
        let mut deferred = Vec::new();
        for index in waiting {
            if covering[index].iter().all(|&b| allowed[b] > 0) {
                for &b in &covering[index] {
                    allowed[b] -= 1;
                    if !runs_again[index] {
                        lasting[b] += 1;
                    }
                }
                evictions[index] = Eviction::Batch(batches.len());
                batch.push(index);
            } else {
                deferred.push(index);
            }
        }
        batches.push(batch);
        waiting = deferred;
    }
    (evictions, batches)
}

#[cfg(test)]
mod tests;
