//! Phase 2, eligibility: whether the preemptor may preempt at all (upstream
//! `PodEligibleToPreemptOthers`), and before that whether it is a pod preemption is for.

use super::filters::Code;
use crate::cache::Snapshot;
use crate::model::{Pod, PreemptionPolicy, Str};

/// Why a pod is no preemptor at all. Upstream preempts only for pods waiting to be
/// scheduled: its queue never holds a bound pod, skips pods being deleted, and its
/// informer drops finished ones. Every entry point (gRPC `Preempt`, the extender's
/// `/preempt`, `simulate`) refuses such a pod with this, before deciding anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotPending {
    /// Bound to a node and being deleted.
    #[error("pod {pod} is terminating on node {node}: preemption is only for pending pods")]
    TerminatingOn {
        /// The pod, as namespace/name.
        pod: String,
        /// Its node.
        node: Str,
    },
    /// Being deleted before it was bound.
    #[error("pod {pod} is terminating: preemption is only for pending pods")]
    Terminating {
        /// The pod, as namespace/name.
        pod: String,
    },
    /// Bound to a node.
    #[error("pod {pod} is bound to node {node}: preemption is only for pending pods")]
    Bound {
        /// The pod, as namespace/name.
        pod: String,
        /// Its node.
        node: Str,
    },
    /// Succeeded or failed.
    #[error("pod {pod} has finished (phase {phase}): preemption is only for pending pods")]
    Finished {
        /// The pod, as namespace/name.
        pod: String,
        /// Its phase, `Succeeded` or `Failed`.
        phase: &'static str,
    },
}

impl NotPending {
    /// The manifest field that makes the pod no preemptor.
    pub fn field(&self) -> &'static str {
        match self {
            NotPending::TerminatingOn { .. } | NotPending::Terminating { .. } => {
                "metadata.deletionTimestamp"
            }
            NotPending::Bound { .. } => "spec.nodeName",
            NotPending::Finished { .. } => "status.phase",
        }
    }
}

/// `Ok` when `pod` is pending: not bound to a node, not terminating, not finished.
pub fn check_pending(pod: &Pod) -> Result<(), NotPending> {
    let name = || format!("{}/{}", pod.namespace, pod.name());
    match (&pod.node_name, pod.terminating) {
        (Some(node), true) => Err(NotPending::TerminatingOn {
            pod: name(),
            node: node.clone(),
        }),
        (None, true) => Err(NotPending::Terminating { pod: name() }),
        (Some(node), false) => Err(NotPending::Bound {
            pod: name(),
            node: node.clone(),
        }),
        (None, false) if pod.phase.is_terminal() => Err(NotPending::Finished {
            pod: name(),
            phase: pod.phase.as_str(),
        }),
        (None, false) => Ok(()),
    }
}

/// `Some(reason)` when `pod` may not preempt: its policy is Never, or a lower-priority
/// victim of an earlier preemption is still terminating on its nominated node — unless
/// that node now fails the filters as UnschedulableAndUnresolvable (`filter_code` of the
/// node's index), when the nomination no longer holds the pod back.
pub(super) fn not_eligible_reason(
    snapshot: &Snapshot,
    pod: &Pod,
    units: Option<&super::units::UnitContext<'_>>,
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
    let blocked = snapshot.nodes[index].pods.iter().any(|p| {
        // With victim units a pod of a group is preempted at its group's priority.
        let priority = units.map_or(p.priority, |u| u.priority(p));
        priority < pod.priority && p.terminating_by_preemption()
    });
    blocked.then_some("not eligible due to a terminating pod on the nominated node.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::test_support::*;

    const TERMINATING: &str = "not eligible due to a terminating pod on the nominated node.";

    fn nominated_to(node: &str) -> Pod {
        let mut p = pod("preemptor", 100, 500, GI, None);
        p.nominated_node_name = Some(node.into());
        p
    }

    /// Node `a` holds a pod of priority `priority` terminating by preemption; node `b`
    /// holds nothing.
    fn cluster(priority: i32) -> Snapshot {
        let victim = terminating_by_preemption(pod("victim", priority, 500, GI, Some("a")));
        snapshot(
            vec![node("a", 1000, 4 * GI), node("b", 1000, 4 * GI)],
            vec![victim],
        )
    }

    /// The reason, with the index `filter_code` was asked about (if it was).
    fn reason_with(
        snapshot: &Snapshot,
        pod: &Pod,
        code: Code,
    ) -> (Option<&'static str>, Option<usize>) {
        let mut asked = None;
        let reason = not_eligible_reason(snapshot, pod, None, |index| {
            asked = Some(index);
            code
        });
        (reason, asked)
    }

    #[test]
    fn only_pending_pods_are_preemptors() {
        let pending = pod("p", 100, 500, GI, None);
        assert_eq!(check_pending(&pending), Ok(()));
        assert_eq!(check_pending(&nominated_to("a")), Ok(()));

        let bound = pod("web-1", 100, 500, GI, Some("n1"));
        let refused = check_pending(&bound).expect_err("bound");
        assert_eq!(refused.field(), "spec.nodeName");
        assert_eq!(
            refused.to_string(),
            "pod default/web-1 is bound to node n1: preemption is only for pending pods"
        );

        let mut leaving = bound.clone();
        leaving.terminating = true;
        let refused = check_pending(&leaving).expect_err("terminating");
        assert_eq!(refused.field(), "metadata.deletionTimestamp");
        assert!(
            refused.to_string().contains("is terminating on node n1"),
            "{refused}"
        );
        let mut leaving_unbound = pending.clone();
        leaving_unbound.terminating = true;
        assert!(matches!(
            check_pending(&leaving_unbound),
            Err(NotPending::Terminating { .. })
        ));

        for phase in [
            crate::model::PodPhase::Succeeded,
            crate::model::PodPhase::Failed,
        ] {
            let mut finished = pending.clone();
            finished.phase = phase;
            let refused = check_pending(&finished).expect_err("finished");
            assert_eq!(refused.field(), "status.phase");
            assert!(refused.to_string().contains(phase.as_str()), "{refused}");
        }
    }

    #[test]
    fn policy_never_is_not_eligible_whatever_the_nomination() {
        let snapshot = cluster(0);
        for mut p in [pod("preemptor", 100, 500, GI, None), nominated_to("a")] {
            p.preemption_policy = PreemptionPolicy::Never;
            assert_eq!(
                reason_with(&snapshot, &p, Code::Unschedulable),
                (Some("not eligible due to preemptionPolicy=Never."), None)
            );
        }
    }

    #[test]
    fn a_lower_priority_victim_terminating_on_the_nominated_node_holds_the_pod_back() {
        let snapshot = cluster(0);
        let a = snapshot.node_index("a");
        assert_eq!(
            reason_with(&snapshot, &nominated_to("a"), Code::Unschedulable),
            (Some(TERMINATING), a)
        );
        // Nominated elsewhere, or not at all: eligible.
        assert_eq!(
            reason_with(&snapshot, &nominated_to("b"), Code::Unschedulable).0,
            None
        );
        let none = pod("preemptor", 100, 500, GI, None);
        assert_eq!(
            reason_with(&snapshot, &none, Code::Unschedulable),
            (None, None)
        );
        assert_eq!(
            reason_with(&snapshot, &nominated_to(""), Code::Unschedulable),
            (None, None)
        );
        // A node the snapshot lacks is never filtered.
        assert_eq!(
            reason_with(&snapshot, &nominated_to("gone"), Code::Unschedulable),
            (None, None)
        );
    }

    #[test]
    fn an_unresolvable_nominated_node_no_longer_holds_the_pod_back() {
        let snapshot = cluster(0);
        assert_eq!(
            reason_with(
                &snapshot,
                &nominated_to("a"),
                Code::UnschedulableAndUnresolvable
            ),
            (None, snapshot.node_index("a"))
        );
    }

    #[test]
    fn only_lower_priority_pods_terminating_by_preemption_count() {
        for priority in [100, 1000] {
            let snapshot = cluster(priority);
            assert_eq!(
                reason_with(&snapshot, &nominated_to("a"), Code::Unschedulable).0,
                None
            );
        }
        // Terminating for another reason (no DisruptionTarget condition).
        let mut leaving = pod("leaving", 0, 500, GI, Some("a"));
        leaving.terminating = true;
        let snapshot = snapshot(vec![node("a", 1000, 4 * GI)], vec![leaving]);
        assert_eq!(
            reason_with(&snapshot, &nominated_to("a"), Code::Unschedulable).0,
            None
        );
    }
}
