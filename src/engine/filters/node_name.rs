//! NodeName: a pod that names a node fits no other.

use crate::model::{Node, Pod};

/// The plugin's name in statuses and diagnostics.
pub const NODE_NAME: &str = "NodeName";

/// Whether the pod names a node other than `node`.
pub(super) fn names_other_node(pod: &Pod, node: &Node) -> bool {
    pod.node_name
        .as_ref()
        .is_some_and(|name| !name.is_empty() && *name != node.name)
}
