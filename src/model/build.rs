//! The one builder: every Node, Pod, PodDisruptionBudget, PodGroup and Workload becomes a model object here,
//! however it arrived. A reader (Kubernetes JSON/YAML in `decode`, typed proto and the
//! wire fast path in `server`) only finds the fields and fills an [`input`]; the walk
//! over the object, Kubernetes' defaulting (limits default requests, pod-level requests,
//! sidecars, host ports under `hostNetwork`, the namespace, the uid), every rule on a value
//! and the field path an error names are written once, here, so an object means the same
//! and is refused the same whichever way it arrives.
//!
//! Errors name the field as the Kubernetes object's JSON does, map keys in brackets
//! (`spec.containers[0].resources.requests[cpu]`); a reader puts its own prefix before it
//! (the request field, a list item).

mod cluster;
pub mod input;
mod memo;
mod node;
mod path;
mod pdb;
mod pod;
mod pod_group;
mod rules;

use std::borrow::Cow;

pub use cluster::{NamespaceInput, PriorityClassInput, namespace, priority_class};
pub use input::{
    AffinityInput, AffinityTermInput, ConditionInput, ContainerInput, ImageInput,
    NodeConditionInput, NodeInput, NodeSelectorTermInput, Pairs, PdbInput, PodInput, PortInput,
    PreferredTermInput, Quantities, RequirementInput, ResourcesInput, SelectorInput, Source,
    SpreadInput, TaintInput, TolerationInput, UncommonPodFields, WeightedAffinityTermInput,
};
pub use memo::Memo;
pub use node::node;
pub use pdb::pdb;
pub use pod::pod;
pub use pod_group::{PodGroupInput, WorkloadInput, pod_group, workload};
pub use rules::{is_label_value, is_qualified_name};

use super::Labels;

/// An object the builder refuses: the field (a Kubernetes JSON path, empty for the object
/// itself) and why, lowercase.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct BuildError {
    /// The field path of the refused value.
    pub path: String,
    /// Why it was refused.
    pub message: String,
}

/// `pairs` in key order, each key once (the last of a repeated key counts, as in a
/// protobuf map): borrowed when they already are, as readers of maps mostly give them.
fn in_key_order<'p, 'a, V: Clone>(pairs: &'p [(&'a str, V)]) -> Cow<'p, [(&'a str, V)]> {
    if pairs.windows(2).all(|w| w[0].0 < w[1].0) {
        return Cow::Borrowed(pairs);
    }
    let mut sorted = pairs.to_vec();
    // Stable: the entries of one key stay in order, and the last one is kept.
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut kept: Vec<(&'a str, V)> = Vec::with_capacity(sorted.len());
    for entry in sorted {
        match kept.last_mut() {
            Some(last) if last.0 == entry.0 => *last = entry,
            _ => kept.push(entry),
        }
    }
    Cow::Owned(kept)
}

/// A label set of `pairs` without a memo (selectors' `matchLabels`).
fn labels_of(pairs: &[(&str, &str)]) -> Labels {
    Labels::new(
        in_key_order(pairs)
            .iter()
            .map(|&(k, v)| (k.into(), v.into()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_in_key_order_with_the_last_of_a_repeated_key() {
        let sorted = [("a", 1), ("b", 2)];
        assert!(matches!(in_key_order(&sorted), Cow::Borrowed(_)));
        let repeated = [("b", 1), ("a", 2), ("b", 3), ("a", 4)];
        assert_eq!(&*in_key_order(&repeated), &[("a", 4), ("b", 3)]);
    }
}
