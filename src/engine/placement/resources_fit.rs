//! NodeResourcesFit's score, the default LeastAllocated strategy over cpu and memory
//! (weight 1 each): the share of the node left free once the pod is on it, counted with
//! the scheduler's non-zero requests (see [`crate::model::NonZeroRequests`]); the pod's
//! own side ignores its pod-level requests, as upstream's scorer does
//! ([`crate::model::resources::fit_score_requests`]).

use super::{MAX_NODE_SCORE, ScoreInput};
use crate::cache::NodeInfo;
use crate::model::NonZeroRequests;

/// The plugin's name in explanations.
pub(super) const NAME: &str = "NodeResourcesFit";

/// Upstream `leastRequestedScore`: the free share after the pod, 0 when it overflows.
pub(super) fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// Σ non-zero requests of the node's pods.
pub(super) fn node_non_zero(info: &NodeInfo) -> NonZeroRequests {
    info.pods
        .iter()
        .fold(NonZeroRequests::default(), |mut sum, pod| {
            let r = pod.details.non_zero_requests;
            sum.milli_cpu = sum.milli_cpu.wrapping_add(r.milli_cpu);
            sum.memory = sum.memory.wrapping_add(r.memory);
            sum
        })
}

/// One node's score: the weighted mean (integer division) of the resources the node
/// has any of.
pub(super) fn score(input: &ScoreInput<'_>, info: &NodeInfo) -> i64 {
    let Some(node) = info.node.as_deref() else {
        return 0;
    };
    let pod = input.pod.details.fit_score_requests;
    let on_node = node_non_zero(info);
    let resources = [
        (node.allocatable.milli_cpu, on_node.milli_cpu, pod.milli_cpu),
        (node.allocatable.memory, on_node.memory, pod.memory),
    ];
    let (mut total, mut weights) = (0, 0);
    for (allocatable, allocated, request) in resources {
        if allocatable == 0 {
            continue;
        }
        total += least_requested_score(allocated.wrapping_add(request), allocatable);
        weights += 1;
    }
    if weights == 0 { 0 } else { total / weights }
}
