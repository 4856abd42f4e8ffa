//! NodeUnschedulable: a node marked unschedulable takes only pods that tolerate the taint
//! that stands for the mark.

use crate::model::{Pod, Taint, TaintEffect};

/// The plugin's name in statuses and diagnostics.
pub const NODE_UNSCHEDULABLE: &str = "NodeUnschedulable";

/// The taint key a pod tolerates to be placed on an unschedulable node.
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// Whether the pod tolerates the taint NodeUnschedulable stands for.
pub(super) fn tolerates_unschedulable(pod: &Pod) -> bool {
    pod.details.tolerations.iter().any(|t| {
        t.tolerates(&Taint {
            key: UNSCHEDULABLE_TAINT_KEY.into(),
            value: "".into(),
            effect: TaintEffect::NoSchedule,
        })
    })
}
