//! ImageLocality: nodes that already hold the pod's images score higher, by the images'
//! sizes scaled by how many nodes hold them. Image names of the pod are normalised
//! (`:latest` added when untagged); the node's names are taken as the node reports them.

use ahash::AHashMap as HashMap;

use super::{MAX_NODE_SCORE, ScoreInput};
use crate::cache::NodeInfo;

/// The plugin's name in explanations.
pub(super) const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// Below this summed size a node scores 0.
pub(super) const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: at this size and above a node scores 100.
pub(super) const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// Upstream `calculatePriority`: the clamped sum placed between the thresholds.
pub(super) fn calculate_priority(sum: i64, image_count: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * image_count as i64;
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else {
        sum.min(max_threshold)
    };
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

/// How many nodes hold each of the pod's images, over every node of the cluster.
pub(super) struct ImageSpread<'a> {
    nodes_holding: HashMap<&'a str, i64>,
    total_nodes: i64,
}

impl<'a> ImageSpread<'a> {
    pub(super) fn new(input: &'a ScoreInput<'a>) -> Self {
        let mut nodes_holding: HashMap<&'a str, i64> = input
            .pod
            .details
            .images
            .iter()
            .map(|name| (&**name, 0))
            .collect();
        let mut total_nodes = 0;
        // Without images to look for, every node scores 0 and nothing here is read.
        let nodes = if nodes_holding.is_empty() {
            None
        } else {
            Some(input.snapshot.nodes.iter())
        };
        for info in nodes.into_iter().flatten() {
            let Some(node) = info.node.as_deref() else {
                continue;
            };
            total_nodes += 1;
            if node.images.is_empty() {
                continue;
            }
            for (name, count) in nodes_holding.iter_mut() {
                if node
                    .images
                    .iter()
                    .any(|i| i.names.iter().any(|n| &**n == *name))
                {
                    *count += 1;
                }
            }
        }
        ImageSpread {
            nodes_holding,
            total_nodes,
        }
    }

    /// One node's score.
    pub(super) fn score(&self, input: &ScoreInput<'_>, info: &NodeInfo) -> i64 {
        let Some(node) = info.node.as_deref() else {
            return 0;
        };
        let images = &input.pod.details.images;
        let mut sum: i64 = 0;
        for name in images {
            // The last of the node's images known by the name gives the size, as the
            // scheduler's per-node image map is filled in order.
            let size = node
                .images
                .iter()
                .rev()
                .find(|i| i.names.iter().any(|n| n == name))
                .map(|i| i.size_bytes);
            if let Some(size) = size {
                let holding = self.nodes_holding.get(&**name).copied().unwrap_or(0);
                let spread = holding as f64 / self.total_nodes as f64;
                sum = sum.wrapping_add((size as f64 * spread) as i64);
            }
        }
        calculate_priority(sum, images.len())
    }
}
