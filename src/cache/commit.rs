//! Preemption commits: a decision written into the cache atomically, and nominations
//! cleared.

use triomphe::Arc;

use crate::model::{Pod, PodRef, Str};

use super::ClusterCache;
use super::table::Place;

/// A nomination as listed or streamed: the pending pod and the node it is nominated to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nomination {
    /// The nominated pod.
    pub pod: PodRef,
    /// Its priority.
    pub priority: i32,
    /// The node it is nominated to.
    pub node: Str,
}

/// One change a commit made, for the nominations log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitChange {
    /// The preemptor is now nominated to `node`.
    Nominated(Nomination),
    /// A lower-priority pod's nomination was cleared.
    NominationCleared {
        /// The pod whose nomination was cleared.
        pod: PodRef,
        /// The node it was nominated to.
        node: Str,
    },
    /// A victim is now terminating by preemption.
    VictimMarked {
        /// The victim.
        pod: PodRef,
        /// The node it runs on.
        node: Str,
    },
}

/// What a `Preempt` commit writes into the cache.
#[derive(Clone, Debug)]
pub struct Commit {
    /// The preemptor as decided on (its nomination is set to `node`).
    pub preemptor: Pod,
    /// The node the preemptor is nominated to.
    pub node: Str,
    /// The generation of `node` the decision was made on.
    pub node_generation: u64,
    /// The pods to mark terminating by preemption.
    pub victims: Vec<PodRef>,
    /// Lower-priority pods whose nominations to `node` are cleared.
    pub nominations_to_clear: Vec<PodRef>,
}

/// The decision is stale: its node changed in the cache since the snapshot.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node {node} changed since the decision")]
pub struct CommitConflict {
    /// The node that changed.
    pub node: Str,
}

impl ClusterCache {
    /// Applies a preemption decision atomically: the preemptor becomes a pending pod
    /// nominated to the node, each victim is marked terminating by preemption (it keeps its
    /// resources until deleted), and the lower-priority nominations on the node are
    /// cleared. Fails without changing anything when the node changed since the decision.
    pub fn commit(&self, commit: &Commit) -> Result<(Vec<CommitChange>, u64), CommitConflict> {
        let mut table = self.table.lock();
        let current = table.get(&commit.node).map(|n| n.generation);
        let name_taken = self
            .pods
            .get_by_name(&commit.preemptor.namespace, commit.preemptor.name())
            .is_some_and(|held| held.uid() != commit.preemptor.uid());
        // A name taken by another uid since the decision: nothing is changed, and the
        // caller's re-check reports it.
        if current != Some(commit.node_generation) || name_taken {
            return Err(CommitConflict {
                node: commit.node.clone(),
            });
        }
        let mut changes = Vec::new();
        for victim in &commit.victims {
            let Some(held) = self.pods.get(&victim.uid) else {
                continue;
            };
            if held.terminating {
                continue;
            }
            let mut pod = (*held).clone();
            pod.terminating = true;
            pod.details_mut()
                .conditions
                .retain(|c| &*c.type_ != crate::model::DISRUPTION_TARGET);
            pod.details_mut().conditions.insert(
                0,
                crate::model::PodCondition {
                    type_: crate::model::DISRUPTION_TARGET.into(),
                    status: "True".into(),
                    reason: crate::model::PREEMPTION_BY_SCHEDULER.into(),
                },
            );
            let node = pod.node_name.clone().unwrap_or_else(|| Str::from(""));
            if self.put_pod(&mut table, Arc::new(pod)).is_ok() {
                changes.push(CommitChange::VictimMarked {
                    pod: victim.clone(),
                    node,
                });
            }
        }
        for cleared in &commit.nominations_to_clear {
            let Some(held) = self.pods.get(&cleared.uid) else {
                continue;
            };
            let mut pod = (*held).clone();
            pod.nominated_node_name = None;
            if self.put_pod(&mut table, Arc::new(pod)).is_ok() {
                changes.push(CommitChange::NominationCleared {
                    pod: cleared.clone(),
                    node: commit.node.clone(),
                });
            }
        }
        let mut preemptor = commit.preemptor.clone();
        preemptor.node_name = None;
        preemptor.nominated_node_name = Some(commit.node.clone());
        if let Some(held) = self.pods.get(preemptor.uid()) {
            preemptor.resource_version = held.resource_version;
        }
        let nomination = Nomination {
            pod: preemptor.pod_ref(),
            priority: preemptor.priority,
            node: commit.node.clone(),
        };
        if self.put_pod(&mut table, Arc::new(preemptor)).is_ok() {
            changes.push(CommitChange::Nominated(nomination));
        }
        Ok((changes, self.revision()))
    }

    /// Clears the preemptor's own nomination (a NO_CANDIDATE outcome). Returns the node it
    /// was nominated to, if it was.
    pub fn clear_nomination(&self, uid: &str) -> Option<(PodRef, Str)> {
        let mut table = self.table.lock();
        let held = self.pods.get(uid)?;
        let Place::Nominated(node) = Place::of(&held) else {
            return None;
        };
        let node = node.clone();
        let mut pod = (*held).clone();
        pod.nominated_node_name = None;
        self.put_pod(&mut table, Arc::new(pod)).ok()?;
        Some((held.pod_ref(), node))
    }
}
