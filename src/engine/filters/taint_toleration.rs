//! TaintToleration: a node's NoSchedule and NoExecute taints keep out pods that do not
//! tolerate them.

use crate::model::{Pod, Taint, TaintEffect};

/// The plugin's name in statuses and diagnostics.
pub const TAINT_TOLERATION: &str = "TaintToleration";

/// First taint with effect NoSchedule/NoExecute that no toleration tolerates.
pub fn untolerated_taint<'a>(taints: &'a [Taint], pod: &Pod) -> Option<&'a Taint> {
    taints.iter().find(|t| {
        matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
            && !pod.details.tolerations.iter().any(|tol| tol.tolerates(t))
    })
}

/// TaintToleration's reason for `taint`.
pub fn untolerated_taint_reason(taint: &Taint) -> String {
    format!(
        "node(s) had untolerated taint {{{}: {}}}",
        taint.key, taint.value
    )
}
