//! A Kubernetes node as the scheduler sees it.

use super::{Labels, Resources, Str, Taint};

/// A Kubernetes node as the scheduler sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: Str,
    pub uid: Str,
    pub resource_version: u64,
    pub labels: Labels,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// `status.allocatable`; `pods` is the pod-slot count.
    pub allocatable: Resources,
    /// `metadata.annotations`: only a placement policy's termination-notice signals read
    /// them.
    pub annotations: Labels,
    /// `status.conditions`: likewise.
    pub conditions: Vec<NodeCondition>,
}

/// A node condition (`status.conditions[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCondition {
    /// `Ready`, `MemoryPressure`, ...
    pub kind: Str,
    /// `True`, `False` or `Unknown`.
    pub status: Str,
    pub reason: Str,
    pub message: Str,
}
