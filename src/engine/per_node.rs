//! Per-node answers for a caller that already holds the candidate nodes — kube-scheduler
//! asking an extender: may the pod go on this node (the policy's filter), how much does
//! the policy like it (its score), and which victims would preemption on this node evict
//! (upstream's `SelectVictimsOnNode`, the same code the full decision dry-runs).

use rayon::prelude::*;
use triomphe::Arc;

use super::filters::{PreFilter, Reason, Status};
use super::policy::{Exclusion, Policy};
use super::victims::{self, Coverage, PdbIndex};
use super::{DecideOptions, PdbMode};
use crate::cache::Snapshot;
use crate::model::{Node, Pod};

/// Candidates dry-run on the calling thread below this many; above, on the rayon pool.
const PARALLEL_NODES: usize = 16;

/// What the placement policy makes of one node for one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeVerdict {
    /// The policy does not rule the node out.
    Allowed,
    /// Ruled out for now, but freeing room could matter to a later decision (a spot
    /// node with a termination notice: the notice may be withdrawn).
    Unschedulable(Reason),
    /// Ruled out whatever is evicted: preemption on the node cannot help.
    Unresolvable(Reason),
}

/// The policy's verdict on `node` for a pod that is `critical` (see [`Policy::is_critical`]).
/// Without a policy every node is allowed.
pub fn verdict(policy: Option<&Policy>, critical: bool, node: &Node) -> NodeVerdict {
    match policy.and_then(|policy| policy.excluded(critical, node)) {
        None => NodeVerdict::Allowed,
        // A noticed spot node: as the brief of the extender says, a plain failure.
        Some(why @ Exclusion::Noticed(_)) => NodeVerdict::Unschedulable(why.reason()),
        // A critical pod on spot capacity: evicting pods there never makes it allowed,
        // so kube-scheduler should not even try preemption on the node.
        Some(why @ Exclusion::CriticalOffSpot) => NodeVerdict::Unresolvable(why.reason()),
    }
}

/// The victims preemption would evict on one node (the snapshot's pods), importance
/// order.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeVictims {
    /// The pods to preempt, most important first.
    pub victims: Vec<Arc<Pod>>,
    /// How many of the victims' PodDisruptionBudgets the preemption violates.
    pub pdb_violations: i32,
}

/// Why a candidate node yields no victims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoVictims {
    /// The snapshot has no such node.
    UnknownNode,
    /// The policy rules the node out for the preemptor.
    Policy(Reason),
    /// Every victim set violates a PodDisruptionBudget and the PDB mode is strict.
    StrictPdb,
    /// Upstream's victim selection failed on the node (the preemptor cannot fit even
    /// with every lower-priority pod gone, or nothing to evict).
    Selection(Status),
}

/// For each of `nodes` (by name): the victims upstream's per-node selection chooses for
/// `preemptor` on the snapshot, or why there are none. The policy and PDB mode of
/// `options` apply as in [`super::decide`]. Blocking work (one dry run per node).
pub fn victims_on_nodes(
    snapshot: &Snapshot,
    preemptor: &Pod,
    nodes: &[&str],
    options: &DecideOptions,
) -> Vec<Result<NodeVictims, NoVictims>> {
    let now = options.now.unwrap_or_else(super::clock::now_nanos);
    let strict = options.effective_pdb_mode() == PdbMode::Strict;
    let policy = options.policy.as_deref();
    let critical = policy.is_some_and(|p| p.is_critical(preemptor));
    let pre = PreFilter::new(preemptor, snapshot);
    let pdbs = PdbIndex::new(&snapshot.pdbs, options.version);
    let select = |coverage: &mut Coverage, name: &&str| {
        let info = snapshot.node(name).ok_or(NoVictims::UnknownNode)?;
        if let Some(node) = &info.node {
            match verdict(policy, critical, node) {
                NodeVerdict::Allowed => {}
                NodeVerdict::Unschedulable(reason) | NodeVerdict::Unresolvable(reason) => {
                    return Err(NoVictims::Policy(reason));
                }
            }
        }
        let (victims, pdb_violations) =
            victims::select_victims_on_node(&pre, info, &pdbs, coverage, now)
                .map_err(NoVictims::Selection)?;
        if strict && pdb_violations > 0 {
            return Err(NoVictims::StrictPdb);
        }
        Ok(NodeVictims {
            victims,
            pdb_violations,
        })
    };
    if nodes.len() >= PARALLEL_NODES {
        nodes
            .par_iter()
            .map_init(Coverage::default, select)
            .collect()
    } else {
        let mut coverage = Coverage::default();
        nodes
            .iter()
            .map(|name| select(&mut coverage, name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::test_support::*;
    use crate::model::Labels;

    fn spot(mut n: Node) -> Node {
        n.labels = [("karpenter.sh/capacity-type", "spot")]
            .into_iter()
            .collect::<Labels>();
        n
    }

    fn critical_policy() -> Policy {
        let mut policy = Policy::default();
        policy.critical.priority_at_least = Some(1000);
        policy
    }

    #[test]
    fn verdicts_fail_noticed_spot_and_keep_critical_pods_off_spot_for_good() {
        let policy = critical_policy();
        let plain = spot(node("s", 1000, GI));
        let noticed = tainted(spot(node("t", 1000, GI)), "karpenter.sh/disrupted");
        assert_eq!(verdict(None, true, &noticed), NodeVerdict::Allowed);
        assert_eq!(verdict(Some(&policy), false, &plain), NodeVerdict::Allowed);
        assert!(matches!(
            verdict(Some(&policy), false, &noticed),
            NodeVerdict::Unschedulable(_)
        ));
        assert!(matches!(
            verdict(Some(&policy), true, &plain),
            NodeVerdict::Unresolvable(_)
        ));
        let on_demand = node("o", 1000, GI);
        assert_eq!(
            verdict(Some(&policy), true, &on_demand),
            NodeVerdict::Allowed
        );
    }

    #[test]
    fn victims_per_node_follow_the_selection_and_the_policy() {
        let snapshot = snapshot(
            vec![node("a", 2000, GI), spot(node("s", 2000, GI))],
            vec![
                pod("low", 1, 1000, 0, Some("a")),
                pod("lower", 0, 1000, 0, Some("a")),
                pod("spot-low", 1, 2000, 0, Some("s")),
            ],
        );
        let preemptor = pod("p", 1000, 1000, 0, None);
        let names = ["a", "s", "ghost"];
        let found = victims_on_nodes(&snapshot, &preemptor, &names, &DecideOptions::default());
        let a = found[0].as_ref().expect("victims on a");
        // Removing one pod is enough: the least important one goes.
        assert_eq!(a.victims.len(), 1);
        assert_eq!(a.victims[0].name(), "lower");
        assert!(found[1].is_ok());
        assert_eq!(found[2], Err(NoVictims::UnknownNode));
        let options = DecideOptions {
            policy: Some(Arc::new(critical_policy())),
            ..DecideOptions::default()
        };
        let found = victims_on_nodes(&snapshot, &preemptor, &names[..2], &options);
        assert!(found[0].is_ok());
        assert!(matches!(found[1], Err(NoVictims::Policy(_))));
    }
}
