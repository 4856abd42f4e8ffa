//! NodeAffinity's score: the summed weights of the pod's preferred terms the node
//! matches. Skipped (0 everywhere) without preferred terms; the default profile adds no
//! terms of its own (no addedAffinity).

use crate::cache::NodeInfo;
use crate::engine::filters::term_matches;
use crate::model::Pod;

/// The plugin's name in explanations.
pub(super) const NAME: &str = "NodeAffinity";

/// Whether the plugin skips the pod.
pub(super) fn skips(pod: &Pod) -> bool {
    pod.details.preferred_node_affinity.is_empty()
}

/// Σ weights of the matching preferred terms (an empty term matches no node).
pub(super) fn raw_score(pod: &Pod, info: &NodeInfo) -> i64 {
    let Some(node) = info.node.as_deref() else {
        return 0;
    };
    pod.details
        .preferred_node_affinity
        .iter()
        .filter(|t| t.weight != 0 && term_matches(&t.preference, node))
        .map(|t| i64::from(t.weight))
        .sum()
}
