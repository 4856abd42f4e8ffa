//! A PodDisruptionBudget, reduced to what preemption reads.

use super::{LabelSelector, Pod, Str};

/// A PodDisruptionBudget, reduced to what preemption reads.
#[derive(Clone, Debug, PartialEq)]
pub struct PodDisruptionBudget {
    /// The budget's namespace.
    pub namespace: Str,
    /// The budget's name.
    pub name: Str,
    /// The budget's uid.
    pub uid: Str,
    /// The API server's resourceVersion, as a number.
    pub resource_version: u64,
    /// `None` when missing; an invalid selector is kept as `Some` with `valid == false`
    /// (upstream skips such a PDB).
    pub selector: Option<LabelSelector>,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
    /// Pod names in `status.disruptedPods`.
    pub disrupted_pods: Vec<Str>,
}

impl PodDisruptionBudget {
    /// Whether this PDB covers the pod (same namespace, valid non-empty selector matching).
    pub fn covers(&self, pod: &Pod) -> bool {
        if self.namespace != pod.namespace || pod.labels.is_empty() {
            return false;
        }
        match &self.selector {
            Some(selector) => {
                selector.is_valid() && !selector.is_empty() && selector.matches(&pod.labels)
            }
            None => false,
        }
    }
}
