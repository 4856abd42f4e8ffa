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

/// What a decision writes into the cache: `Preempt` nominates one pod, `PreemptGroup`
/// every placed member of a group.
#[derive(Clone, Debug)]
pub struct Commit {
    /// The pods nominated, each as decided on with the node it is nominated to.
    pub nominated: Vec<(Pod, Str)>,
    /// The nodes the decision depends on, with the generations it read.
    pub checked_nodes: Vec<(Str, u64)>,
    /// The pods to mark terminating by preemption.
    pub victims: Vec<PodRef>,
    /// Lower-priority pods whose nominations are cleared.
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
    /// Applies a preemption decision atomically, as one cache change: each nominated pod
    /// becomes a pending pod nominated to its node, each victim is marked terminating by
    /// preemption (it keeps its resources until deleted), and the lower-priority
    /// nominations are cleared. Fails without changing anything when a checked node
    /// changed since the decision, or a nominated pod's name is taken by another uid.
    pub fn commit(&self, commit: &Commit) -> Result<(Vec<CommitChange>, u64), CommitConflict> {
        let mut table = self.table.lock();
        for (node, generation) in &commit.checked_nodes {
            if table.get(node).map(|n| n.generation) != Some(*generation) {
                return Err(CommitConflict { node: node.clone() });
            }
        }
        // A name taken by another uid since the decision: nothing is changed, and the
        // caller's re-check reports it.
        for (pod, node) in &commit.nominated {
            let name_taken = self
                .pods
                .get_by_name(&pod.namespace, pod.name())
                .is_some_and(|held| held.uid() != pod.uid());
            if name_taken {
                return Err(CommitConflict { node: node.clone() });
            }
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
            let Place::Nominated(node) = Place::of(&held) else {
                continue;
            };
            let node = node.clone();
            let mut pod = (*held).clone();
            pod.nominated_node_name = None;
            if self.put_pod(&mut table, Arc::new(pod)).is_ok() {
                changes.push(CommitChange::NominationCleared {
                    pod: cleared.clone(),
                    node,
                });
            }
        }
        for (pod, node) in &commit.nominated {
            let mut pod = pod.clone();
            pod.node_name = None;
            pod.nominated_node_name = Some(node.clone());
            if let Some(held) = self.pods.get(pod.uid()) {
                pod.resource_version = held.resource_version;
            }
            let nomination = Nomination {
                pod: pod.pod_ref(),
                priority: pod.priority,
                node: node.clone(),
            };
            if self.put_pod(&mut table, Arc::new(pod)).is_ok() {
                changes.push(CommitChange::Nominated(nomination));
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, PodPhase, Resources};

    fn node(name: &str) -> Node {
        Node {
            name: name.into(),
            uid: name.into(),
            resource_version: 0,
            labels: Default::default(),
            taints: Vec::new(),
            unschedulable: false,
            annotations: Default::default(),
            conditions: Vec::new(),
            images: Vec::new(),
            allocatable: Resources {
                milli_cpu: 1000,
                pods: 10,
                ..Resources::default()
            },
        }
    }

    fn pending(name: &str) -> Pod {
        let mut p = Pod::new("default", name, name);
        p.priority = 10;
        p.phase = PodPhase::Pending;
        p.finish()
    }

    #[test]
    fn a_commit_nominates_every_pod_or_none_when_a_checked_node_changed() {
        let cache = ClusterCache::new();
        cache.upsert_node(node("n1"));
        cache.upsert_node(node("n2"));
        let generation = |name: &str| cache.snapshot().node(name).expect("node").generation;
        let commit = Commit {
            nominated: vec![
                (pending("m-0"), Str::from("n1")),
                (pending("m-1"), Str::from("n2")),
            ],
            checked_nodes: vec![
                ("n1".into(), generation("n1")),
                ("n2".into(), generation("n2")),
            ],
            victims: Vec::new(),
            nominations_to_clear: Vec::new(),
        };
        // n2 changes after the decision: nothing is recorded.
        let mut changed = node("n2");
        changed.unschedulable = true;
        cache.upsert_node(changed);
        let revision = cache.revision();
        assert_eq!(
            cache.commit(&commit).expect_err("n2 changed"),
            CommitConflict { node: "n2".into() }
        );
        assert_eq!(cache.revision(), revision);
        assert!(cache.nominations().is_empty());

        let fresh = Commit {
            checked_nodes: vec![
                ("n1".into(), generation("n1")),
                ("n2".into(), generation("n2")),
            ],
            ..commit
        };
        let (changes, _) = cache.commit(&fresh).expect("commits");
        assert_eq!(changes.len(), 2);
        let nominated: Vec<(String, String)> = cache
            .nominations()
            .into_iter()
            .map(|n| (n.pod.name.to_string(), n.node.to_string()))
            .collect();
        assert_eq!(
            nominated,
            vec![("m-0".into(), "n1".into()), ("m-1".into(), "n2".into())]
        );
    }
}
