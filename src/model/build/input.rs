//! What a reader fills in for the builder: an object's fields as it found them, borrowed
//! from the request or document, not yet judged. Missing fields are empty (`""`, `0`,
//! `None`, no entries), as Kubernetes reads them. Map-like fields hold their entries in any
//! order, each key once or, repeated, the last one counting (as a protobuf map or a JSON
//! object keeps them).

use std::borrow::Cow;

use smallvec::SmallVec;
use triomphe::Arc;

use super::super::{Labels, PodDetails};

/// A `map<string, string>` (labels, a node selector), borrowed.
pub type Pairs<'a, const N: usize> = SmallVec<[(&'a str, &'a str); N]>;

/// A resource list: resource name to quantity text. The text is owned only when a JSON
/// document wrote the quantity as a number, which the reader spells out.
pub type Quantities<'a, const N: usize> = SmallVec<[(&'a str, Cow<'a, str>); N]>;

/// A Node (`metadata`, `spec`, `status.allocatable`).
#[derive(Debug, Default)]
pub struct NodeInput<'a> {
    pub name: &'a str,
    pub uid: &'a str,
    pub resource_version: u64,
    pub labels: Pairs<'a, 16>,
    pub taints: SmallVec<[TaintInput<'a>; 2]>,
    pub unschedulable: bool,
    pub allocatable: Quantities<'a, 8>,
    pub annotations: Pairs<'a, 4>,
    pub conditions: SmallVec<[NodeConditionInput<'a>; 4]>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct NodeConditionInput<'a> {
    pub type_: &'a str,
    pub status: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct TaintInput<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub effect: &'a str,
}

/// A PodDisruptionBudget.
#[derive(Debug, Default)]
pub struct PdbInput<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub resource_version: u64,
    pub selector: Option<SelectorInput<'a>>,
    pub disruptions_allowed: i32,
    pub disrupted_pods: Vec<&'a str>,
}

/// A Pod, field by field as Kubernetes nests them (`metadata`, `spec`, `status`).
#[derive(Debug, Default)]
pub struct PodInput<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub resource_version: u64,
    pub labels: Pairs<'a, 8>,
    /// Empty: not terminating.
    pub deletion_timestamp: &'a str,

    pub node_name: &'a str,
    pub scheduler_name: &'a str,
    pub priority: Option<i32>,
    pub priority_class_name: &'a str,
    pub preemption_policy: &'a str,
    /// Only Kubernetes JSON carries it (typed pods give their host ports as they are).
    pub host_network: bool,
    pub containers: SmallVec<[ContainerInput<'a>; 2]>,
    pub tolerations: SmallVec<[TolerationInput<'a>; 2]>,
    pub node_selector: Pairs<'a, 4>,

    pub start_time: &'a str,
    pub nominated_node_name: &'a str,
    pub phase: &'a str,

    /// The fields most pods leave unset; `None` when a pod sets none of them (a bulk
    /// load's inputs are then quick to make and to drop).
    pub uncommon: Option<Box<UncommonPodFields<'a>>>,

    /// Where the details (everything but identity, labels, node, priority, policy, times,
    /// nomination and phase) come from.
    pub details: Source<'a, Arc<PodDetails>>,
    /// Where the label set comes from.
    pub label_set: Source<'a, Labels>,
}

impl PodInput<'_> {
    /// `spec.priorityClassName` as the details keep it: only while admission still reads
    /// it (the priority or the preemption policy unset, see `Pod::admit`). An API
    /// server's pods are admitted, so pods of one template in different classes share
    /// their details (the bench's cluster in Kubernetes mode: 5.9k details, not 14k).
    pub fn priority_class_name_kept(&self) -> &str {
        if self.priority.is_none() || self.preemption_policy.is_empty() {
            self.priority_class_name
        } else {
            ""
        }
    }
}

/// A pod's fields most pods leave unset.
#[derive(Debug, Default)]
pub struct UncommonPodFields<'a> {
    pub init_containers: Vec<ContainerInput<'a>>,
    pub overhead: Quantities<'a, 4>,
    /// Pod-level `spec.resources`.
    pub resources: ResourcesInput<'a>,
    pub affinity: AffinityInput<'a>,
    pub topology_spread_constraints: Vec<SpreadInput<'a>>,
    pub conditions: Vec<ConditionInput<'a>>,
}

impl UncommonPodFields<'_> {
    /// Whether every field is unset.
    pub fn is_empty(&self) -> bool {
        let AffinityInput {
            required_node_affinity,
            pod_affinity,
            pod_anti_affinity,
        } = &self.affinity;
        self.init_containers.is_empty()
            && self.overhead.is_empty()
            && self.resources.requests.is_empty()
            && self.resources.limits.is_empty()
            && required_node_affinity.is_none()
            && pod_affinity.is_empty()
            && pod_anti_affinity.is_empty()
            && self.topology_spread_constraints.is_empty()
            && self.conditions.is_empty()
    }

    /// `self` for [`PodInput::uncommon`]: `None` when every field is unset.
    pub fn boxed_unless_empty(self) -> Option<Box<Self>> {
        (!self.is_empty()).then(|| Box::new(self))
    }
}

/// Where a value of a pod comes from, and whether the memo keeps it by the encoding it
/// was read from (see [`super::Memo::details`], [`super::Memo::encoded_labels`]).
#[derive(Debug, Default)]
pub enum Source<'a, V> {
    /// Built from the input's fields, as they are.
    #[default]
    Fields,
    /// Built from the input's fields, read from these fields of an encoding (each whole,
    /// in order): the memo keeps the value by them. Details so kept are finished and
    /// without their specs, as `Pod::compact` leaves them.
    Encoded(SmallVec<[&'a [u8]; 4]>),
    /// Built before from the same encoded fields, which the input then leaves empty.
    Remembered(V),
}

/// `requests` and `limits`.
#[derive(Debug, Default)]
pub struct ResourcesInput<'a> {
    pub requests: Quantities<'a, 4>,
    pub limits: Quantities<'a, 4>,
}

#[derive(Debug, Default)]
pub struct ContainerInput<'a> {
    pub name: &'a str,
    pub resources: ResourcesInput<'a>,
    pub ports: SmallVec<[PortInput<'a>; 2]>,
    pub restart_policy: &'a str,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct PortInput<'a> {
    pub host_port: i32,
    /// Read only with `hostNetwork`, where it defaults the host port.
    pub container_port: i32,
    pub protocol: &'a str,
    pub host_ip: &'a str,
}

/// A toleration (`tolerationSeconds` does not matter to preemption: left out).
#[derive(Debug, Clone, Copy, Default)]
pub struct TolerationInput<'a> {
    pub key: &'a str,
    pub operator: &'a str,
    pub value: &'a str,
    pub effect: &'a str,
}

/// `spec.affinity`, its required terms (preferred ones do not matter to preemption).
#[derive(Debug, Default)]
pub struct AffinityInput<'a> {
    /// `nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`;
    /// `None` without the `requiredDuringSchedulingIgnoredDuringExecution` object.
    pub required_node_affinity: Option<Vec<NodeSelectorTermInput<'a>>>,
    pub pod_affinity: Vec<AffinityTermInput<'a>>,
    pub pod_anti_affinity: Vec<AffinityTermInput<'a>>,
}

#[derive(Debug, Default)]
pub struct NodeSelectorTermInput<'a> {
    pub match_expressions: Vec<RequirementInput<'a>>,
    pub match_fields: Vec<RequirementInput<'a>>,
}

/// A requirement of a label or node selector: key, operator, values.
#[derive(Debug, Default)]
pub struct RequirementInput<'a> {
    pub key: &'a str,
    pub operator: &'a str,
    pub values: Vec<&'a str>,
}

/// A `metav1.LabelSelector`.
#[derive(Debug, Default)]
pub struct SelectorInput<'a> {
    pub match_labels: Pairs<'a, 4>,
    pub match_expressions: Vec<RequirementInput<'a>>,
}

#[derive(Debug, Default)]
pub struct AffinityTermInput<'a> {
    pub label_selector: Option<SelectorInput<'a>>,
    pub namespaces: Vec<&'a str>,
    pub namespace_selector: Option<SelectorInput<'a>>,
    pub topology_key: &'a str,
}

#[derive(Debug, Default)]
pub struct SpreadInput<'a> {
    pub max_skew: i32,
    pub topology_key: &'a str,
    pub when_unsatisfiable: &'a str,
    pub label_selector: Option<SelectorInput<'a>>,
    pub min_domains: Option<i32>,
    pub match_label_keys: Vec<&'a str>,
    pub node_affinity_policy: &'a str,
    pub node_taints_policy: &'a str,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ConditionInput<'a> {
    pub type_: &'a str,
    pub status: &'a str,
    pub reason: &'a str,
}
