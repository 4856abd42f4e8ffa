//! TaintToleration's score: the node's PreferNoSchedule taints the pod does not tolerate,
//! fewer is better (normalised in reverse).

use crate::cache::NodeInfo;
use crate::model::{Pod, TaintEffect};

/// The plugin's name in explanations.
pub(super) const NAME: &str = "TaintToleration";

/// Untolerated PreferNoSchedule taints. (Only tolerations with no effect or
/// PreferNoSchedule can tolerate such a taint, as upstream's PreScore keeps.)
pub(super) fn raw_score(pod: &Pod, info: &NodeInfo) -> i64 {
    let Some(node) = info.node.as_deref() else {
        return 0;
    };
    node.taints
        .iter()
        .filter(|t| {
            t.effect == TaintEffect::PreferNoSchedule
                && !pod.details.tolerations.iter().any(|tol| tol.tolerates(t))
        })
        .count() as i64
}
