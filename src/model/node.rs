//! A Kubernetes node as the scheduler sees it.

use super::{Labels, Resources, Str, Taint};

/// A Kubernetes node as the scheduler sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The node's name.
    pub name: Str,
    /// The node's uid.
    pub uid: Str,
    /// The API server's resourceVersion, as a number.
    pub resource_version: u64,
    /// The node's labels.
    pub labels: Labels,
    /// The node's taints.
    pub taints: Vec<Taint>,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// `status.allocatable`; `pods` is the pod-slot count.
    pub allocatable: Resources,
    /// `metadata.annotations`: only a placement policy's termination-notice signals read
    /// them.
    pub annotations: Labels,
    /// `status.conditions`: likewise.
    pub conditions: Vec<NodeCondition>,
    /// `status.images`: ImageLocality scores the nodes that already hold a pod's images.
    pub images: Vec<ContainerImage>,
}

/// One entry of a node's `status.images`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerImage {
    /// `names`: every name the image is known by.
    pub names: Vec<Str>,
    /// `sizeBytes`.
    pub size_bytes: i64,
}

/// A node condition (`status.conditions[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCondition {
    /// `Ready`, `MemoryPressure`, ...
    pub kind: Str,
    /// `True`, `False` or `Unknown`.
    pub status: Str,
    /// Machine-readable reason for the condition's status.
    pub reason: Str,
    /// Human-readable details.
    pub message: Str,
}
