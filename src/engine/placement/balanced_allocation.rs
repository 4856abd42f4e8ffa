//! NodeResourcesBalancedAllocation: how evenly cpu and memory are used. Requests are the
//! pods' own (no non-zero defaults); a pod requesting neither is skipped (0 everywhere).
//! v1.35 scores the balance with the pod; v1.36 on (kubernetes#135573) scores the
//! change in balance the pod makes.

use super::{MAX_NODE_SCORE, ScoreInput};
use crate::cache::NodeInfo;
use crate::engine::KubernetesVersion;

/// The plugin's name in explanations.
pub(super) const NAME: &str = "NodeResourcesBalancedAllocation";

/// Upstream `balancedResourceScore` over cpu and memory: (1 − std of the used
/// fractions) × 100, truncated; resources the node has none of are left out, fractions
/// are capped at 1.
pub(super) fn balance_score(requested: [i64; 2], allocatable: [i64; 2]) -> i64 {
    let mut fractions = [0.0; 2];
    let mut count = 0;
    for (r, a) in requested.into_iter().zip(allocatable) {
        if a != 0 {
            fractions[count] = (r as f64 / a as f64).min(1.0);
            count += 1;
        }
    }
    let std = if count == 2 {
        ((fractions[0] - fractions[1]) / 2.0).abs()
    } else {
        0.0
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// Whether the plugin skips the pod: it requests no cpu and no memory.
pub(super) fn skips(input: &ScoreInput<'_>) -> bool {
    let r = input.pod.requests();
    r.milli_cpu == 0 && r.memory == 0
}

/// One node's score.
pub(super) fn score(input: &ScoreInput<'_>, info: &NodeInfo) -> i64 {
    let Some(node) = info.node.as_deref() else {
        return 0;
    };
    let pod = input.pod.requests();
    let allocatable = [node.allocatable.milli_cpu, node.allocatable.memory];
    let allocated = [info.requested.milli_cpu, info.requested.memory];
    let requested = [
        allocated[0].wrapping_add(pod.milli_cpu),
        allocated[1].wrapping_add(pod.memory),
    ];
    let with_pod = balance_score(requested, allocatable);
    match input.version {
        KubernetesVersion::V1_35 => with_pod,
        _ => {
            let without_pod = balance_score(allocated, allocatable);
            MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + with_pod - without_pod) / 2
        }
    }
}
