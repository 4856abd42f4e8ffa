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
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `metadata.resourceVersion`, as a number.
    pub resource_version: u64,
    /// `metadata.labels`.
    pub labels: Pairs<'a, 16>,
    /// `spec.taints`.
    pub taints: SmallVec<[TaintInput<'a>; 2]>,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// `status.allocatable`.
    pub allocatable: Quantities<'a, 8>,
    /// `metadata.annotations`.
    pub annotations: Pairs<'a, 4>,
    /// `status.conditions`.
    pub conditions: SmallVec<[NodeConditionInput<'a>; 4]>,
    /// `status.images`.
    pub images: Vec<ImageInput<'a>>,
}

/// An entry of a node's `status.images`.
#[derive(Debug, Default)]
pub struct ImageInput<'a> {
    /// `names`.
    pub names: Vec<&'a str>,
    /// `sizeBytes`.
    pub size_bytes: i64,
}

/// A node condition.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeConditionInput<'a> {
    /// `type`.
    pub type_: &'a str,
    /// `status`.
    pub status: &'a str,
    /// `reason`.
    pub reason: &'a str,
    /// `message`.
    pub message: &'a str,
}

/// A node taint.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaintInput<'a> {
    /// `key`.
    pub key: &'a str,
    /// `value`.
    pub value: &'a str,
    /// `effect`.
    pub effect: &'a str,
}

/// A PodDisruptionBudget.
#[derive(Debug, Default)]
pub struct PdbInput<'a> {
    /// `metadata.namespace`.
    pub namespace: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `metadata.resourceVersion`, as a number.
    pub resource_version: u64,
    /// `spec.selector`.
    pub selector: Option<SelectorInput<'a>>,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
    /// `status.disruptedPods`.
    pub disrupted_pods: Vec<&'a str>,
}

/// A Pod, field by field as Kubernetes nests them (`metadata`, `spec`, `status`).
#[derive(Debug, Default)]
pub struct PodInput<'a> {
    /// `metadata.namespace`.
    pub namespace: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `metadata.resourceVersion`, as a number.
    pub resource_version: u64,
    /// `metadata.labels`.
    pub labels: Pairs<'a, 8>,
    /// Empty: not terminating.
    pub deletion_timestamp: &'a str,

    /// `spec.nodeName`.
    pub node_name: &'a str,
    /// `spec.schedulerName`.
    pub scheduler_name: &'a str,
    /// `spec.priority`.
    pub priority: Option<i32>,
    /// `spec.priorityClassName`.
    pub priority_class_name: &'a str,
    /// `spec.preemptionPolicy`.
    pub preemption_policy: &'a str,
    /// Only Kubernetes JSON carries it (typed pods give their host ports as they are).
    pub host_network: bool,
    /// `spec.containers`.
    pub containers: SmallVec<[ContainerInput<'a>; 2]>,
    /// `spec.tolerations`.
    pub tolerations: SmallVec<[TolerationInput<'a>; 2]>,
    /// `spec.nodeSelector`.
    pub node_selector: Pairs<'a, 4>,
    /// `spec.schedulingGroup.podGroupName`; empty: in no group.
    pub scheduling_group: &'a str,

    /// `status.startTime`.
    pub start_time: &'a str,
    /// `status.nominatedNodeName`.
    pub nominated_node_name: &'a str,
    /// `status.phase`.
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
    /// `spec.initContainers`.
    pub init_containers: Vec<ContainerInput<'a>>,
    /// `spec.overhead`.
    pub overhead: Quantities<'a, 4>,
    /// Pod-level `spec.resources`.
    pub resources: ResourcesInput<'a>,
    /// `spec.affinity`.
    pub affinity: AffinityInput<'a>,
    /// `spec.topologySpreadConstraints`.
    pub topology_spread_constraints: Vec<SpreadInput<'a>>,
    /// `status.conditions`.
    pub conditions: Vec<ConditionInput<'a>>,
}

impl UncommonPodFields<'_> {
    /// Whether every field is unset.
    pub fn is_empty(&self) -> bool {
        let AffinityInput {
            required_node_affinity,
            pod_affinity,
            pod_anti_affinity,
            preferred_node_affinity,
            preferred_pod_affinity,
            preferred_pod_anti_affinity,
        } = &self.affinity;
        self.init_containers.is_empty()
            && self.overhead.is_empty()
            && self.resources.requests.is_empty()
            && self.resources.limits.is_empty()
            && required_node_affinity.is_none()
            && pod_affinity.is_empty()
            && pod_anti_affinity.is_empty()
            && preferred_node_affinity.is_empty()
            && preferred_pod_affinity.is_empty()
            && preferred_pod_anti_affinity.is_empty()
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
    /// `requests`.
    pub requests: Quantities<'a, 4>,
    /// `limits`.
    pub limits: Quantities<'a, 4>,
}

/// A container.
#[derive(Debug, Default)]
pub struct ContainerInput<'a> {
    /// `name`.
    pub name: &'a str,
    /// `resources`.
    pub resources: ResourcesInput<'a>,
    /// `ports`.
    pub ports: SmallVec<[PortInput<'a>; 2]>,
    /// `restartPolicy`.
    pub restart_policy: &'a str,
    /// `image`.
    pub image: &'a str,
}

/// A container port.
#[derive(Debug, Clone, Copy, Default)]
pub struct PortInput<'a> {
    /// `hostPort`.
    pub host_port: i32,
    /// Read only with `hostNetwork`, where it defaults the host port.
    pub container_port: i32,
    /// `protocol`.
    pub protocol: &'a str,
    /// `hostIP`.
    pub host_ip: &'a str,
}

/// A toleration (`tolerationSeconds` does not matter to preemption: left out).
#[derive(Debug, Clone, Copy, Default)]
pub struct TolerationInput<'a> {
    /// `key`.
    pub key: &'a str,
    /// `operator`.
    pub operator: &'a str,
    /// `value`.
    pub value: &'a str,
    /// `effect`.
    pub effect: &'a str,
}

/// `spec.affinity`: the required terms (filters) and the preferred ones (scoring).
#[derive(Debug, Default)]
pub struct AffinityInput<'a> {
    /// `nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_node_affinity: Vec<PreferredTermInput<'a>>,
    /// `podAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_pod_affinity: Vec<WeightedAffinityTermInput<'a>>,
    /// `podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_pod_anti_affinity: Vec<WeightedAffinityTermInput<'a>>,
    /// `nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`;
    /// `None` without the `requiredDuringSchedulingIgnoredDuringExecution` object.
    pub required_node_affinity: Option<Vec<NodeSelectorTermInput<'a>>>,
    /// `podAffinity`: its required terms.
    pub pod_affinity: Vec<AffinityTermInput<'a>>,
    /// `podAntiAffinity`: its required terms.
    pub pod_anti_affinity: Vec<AffinityTermInput<'a>>,
}

/// A preferred node affinity term.
#[derive(Debug, Default)]
pub struct PreferredTermInput<'a> {
    /// `weight`.
    pub weight: i32,
    /// `preference`.
    pub preference: NodeSelectorTermInput<'a>,
}

/// A preferred pod (anti-)affinity term.
#[derive(Debug, Default)]
pub struct WeightedAffinityTermInput<'a> {
    /// `weight`.
    pub weight: i32,
    /// `podAffinityTerm`.
    pub term: AffinityTermInput<'a>,
}

/// A node selector term.
#[derive(Debug, Default)]
pub struct NodeSelectorTermInput<'a> {
    /// `matchExpressions`.
    pub match_expressions: Vec<RequirementInput<'a>>,
    /// `matchFields`.
    pub match_fields: Vec<RequirementInput<'a>>,
}

/// A requirement of a label or node selector: key, operator, values.
#[derive(Debug, Default)]
pub struct RequirementInput<'a> {
    /// `key`.
    pub key: &'a str,
    /// `operator`.
    pub operator: &'a str,
    /// `values`.
    pub values: Vec<&'a str>,
}

/// A `metav1.LabelSelector`.
#[derive(Debug, Default)]
pub struct SelectorInput<'a> {
    /// `matchLabels`.
    pub match_labels: Pairs<'a, 4>,
    /// `matchExpressions`.
    pub match_expressions: Vec<RequirementInput<'a>>,
}

/// A required pod (anti-)affinity term.
#[derive(Debug, Default)]
pub struct AffinityTermInput<'a> {
    /// `labelSelector`.
    pub label_selector: Option<SelectorInput<'a>>,
    /// `namespaces`.
    pub namespaces: Vec<&'a str>,
    /// `namespaceSelector`.
    pub namespace_selector: Option<SelectorInput<'a>>,
    /// `topologyKey`.
    pub topology_key: &'a str,
}

/// A topology spread constraint.
#[derive(Debug, Default)]
pub struct SpreadInput<'a> {
    /// `maxSkew`.
    pub max_skew: i32,
    /// `topologyKey`.
    pub topology_key: &'a str,
    /// `whenUnsatisfiable`.
    pub when_unsatisfiable: &'a str,
    /// `labelSelector`.
    pub label_selector: Option<SelectorInput<'a>>,
    /// `minDomains`.
    pub min_domains: Option<i32>,
    /// `matchLabelKeys`.
    pub match_label_keys: Vec<&'a str>,
    /// `nodeAffinityPolicy`.
    pub node_affinity_policy: &'a str,
    /// `nodeTaintsPolicy`.
    pub node_taints_policy: &'a str,
}

/// A pod condition.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConditionInput<'a> {
    /// `type`.
    pub type_: &'a str,
    /// `status`.
    pub status: &'a str,
    /// `reason`.
    pub reason: &'a str,
}
