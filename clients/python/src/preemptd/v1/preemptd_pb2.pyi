from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PdbMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PDB_MODE_UNSPECIFIED: _ClassVar[PdbMode]
    PDB_MODE_PREFER: _ClassVar[PdbMode]
    PDB_MODE_STRICT: _ClassVar[PdbMode]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_PREEMPT: _ClassVar[Outcome]
    OUTCOME_FITS: _ClassVar[Outcome]
    OUTCOME_NOT_ELIGIBLE: _ClassVar[Outcome]
    OUTCOME_NO_CANDIDATE: _ClassVar[Outcome]

class StatusCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_CODE_UNSPECIFIED: _ClassVar[StatusCode]
    STATUS_CODE_SUCCESS: _ClassVar[StatusCode]
    STATUS_CODE_UNSCHEDULABLE: _ClassVar[StatusCode]
    STATUS_CODE_UNSCHEDULABLE_AND_UNRESOLVABLE: _ClassVar[StatusCode]

class NominationEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NOMINATION_EVENT_TYPE_UNSPECIFIED: _ClassVar[NominationEventType]
    NOMINATION_EVENT_TYPE_NOMINATED: _ClassVar[NominationEventType]
    NOMINATION_EVENT_TYPE_CLEARED: _ClassVar[NominationEventType]
    NOMINATION_EVENT_TYPE_VICTIM_MARKED: _ClassVar[NominationEventType]

class DrainOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DRAIN_OUTCOME_UNSPECIFIED: _ClassVar[DrainOutcome]
    DRAIN_OUTCOME_FITS: _ClassVar[DrainOutcome]
    DRAIN_OUTCOME_PREEMPT: _ClassVar[DrainOutcome]
    DRAIN_OUTCOME_NOWHERE: _ClassVar[DrainOutcome]
PDB_MODE_UNSPECIFIED: PdbMode
PDB_MODE_PREFER: PdbMode
PDB_MODE_STRICT: PdbMode
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_PREEMPT: Outcome
OUTCOME_FITS: Outcome
OUTCOME_NOT_ELIGIBLE: Outcome
OUTCOME_NO_CANDIDATE: Outcome
STATUS_CODE_UNSPECIFIED: StatusCode
STATUS_CODE_SUCCESS: StatusCode
STATUS_CODE_UNSCHEDULABLE: StatusCode
STATUS_CODE_UNSCHEDULABLE_AND_UNRESOLVABLE: StatusCode
NOMINATION_EVENT_TYPE_UNSPECIFIED: NominationEventType
NOMINATION_EVENT_TYPE_NOMINATED: NominationEventType
NOMINATION_EVENT_TYPE_CLEARED: NominationEventType
NOMINATION_EVENT_TYPE_VICTIM_MARKED: NominationEventType
DRAIN_OUTCOME_UNSPECIFIED: DrainOutcome
DRAIN_OUTCOME_FITS: DrainOutcome
DRAIN_OUTCOME_PREEMPT: DrainOutcome
DRAIN_OUTCOME_NOWHERE: DrainOutcome

class ObjectRef(_message.Message):
    __slots__ = ("namespace", "name", "uid")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class PodRef(_message.Message):
    __slots__ = ("namespace", "name", "uid")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class LabelSelector(_message.Message):
    __slots__ = ("match_labels", "match_expressions")
    class MatchLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MATCH_LABELS_FIELD_NUMBER: _ClassVar[int]
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_labels: _containers.ScalarMap[str, str]
    match_expressions: _containers.RepeatedCompositeFieldContainer[LabelSelectorRequirement]
    def __init__(self, match_labels: _Optional[_Mapping[str, str]] = ..., match_expressions: _Optional[_Iterable[_Union[LabelSelectorRequirement, _Mapping]]] = ...) -> None: ...

class LabelSelectorRequirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("name", "uid", "resource_version", "labels", "taints", "unschedulable", "allocatable", "annotations", "conditions", "images")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    UNSCHEDULABLE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    name: str
    uid: str
    resource_version: int
    labels: _containers.ScalarMap[str, str]
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    unschedulable: bool
    allocatable: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    conditions: _containers.RepeatedCompositeFieldContainer[NodeCondition]
    images: _containers.RepeatedCompositeFieldContainer[ContainerImage]
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., unschedulable: _Optional[bool] = ..., allocatable: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., conditions: _Optional[_Iterable[_Union[NodeCondition, _Mapping]]] = ..., images: _Optional[_Iterable[_Union[ContainerImage, _Mapping]]] = ...) -> None: ...

class ContainerImage(_message.Message):
    __slots__ = ("names", "size_bytes")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    size_bytes: int
    def __init__(self, names: _Optional[_Iterable[str]] = ..., size_bytes: _Optional[int] = ...) -> None: ...

class NodeCondition(_message.Message):
    __slots__ = ("type", "status", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class Taint(_message.Message):
    __slots__ = ("key", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ...) -> None: ...

class UpdateNodeRequest(_message.Message):
    __slots__ = ("upsert", "upsert_json", "delete")
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_JSON_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    upsert: Node
    upsert_json: str
    delete: ObjectRef
    def __init__(self, upsert: _Optional[_Union[Node, _Mapping]] = ..., upsert_json: _Optional[str] = ..., delete: _Optional[_Union[ObjectRef, _Mapping]] = ...) -> None: ...

class UpdateNodeResponse(_message.Message):
    __slots__ = ("applied", "resource_version", "revision", "epoch", "stale")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    resource_version: int
    revision: int
    epoch: str
    stale: str
    def __init__(self, applied: _Optional[bool] = ..., resource_version: _Optional[int] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ..., stale: _Optional[str] = ...) -> None: ...

class Pod(_message.Message):
    __slots__ = ("namespace", "name", "uid", "resource_version", "labels", "node_name", "scheduler_name", "priority", "preemption_policy", "containers", "init_containers", "overhead", "resources", "tolerations", "node_selector", "affinity", "topology_spread_constraints", "start_time", "deletion_timestamp", "conditions", "nominated_node_name", "phase", "priority_class_name", "scheduling_group")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class OverheadEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    INIT_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    OVERHEAD_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    AFFINITY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_SPREAD_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    DELETION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    NOMINATED_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_GROUP_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    resource_version: int
    labels: _containers.ScalarMap[str, str]
    node_name: str
    scheduler_name: str
    priority: int
    preemption_policy: str
    containers: _containers.RepeatedCompositeFieldContainer[Container]
    init_containers: _containers.RepeatedCompositeFieldContainer[Container]
    overhead: _containers.ScalarMap[str, str]
    resources: ResourceRequirements
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    node_selector: _containers.ScalarMap[str, str]
    affinity: Affinity
    topology_spread_constraints: _containers.RepeatedCompositeFieldContainer[TopologySpreadConstraint]
    start_time: str
    deletion_timestamp: str
    conditions: _containers.RepeatedCompositeFieldContainer[PodCondition]
    nominated_node_name: str
    phase: str
    priority_class_name: str
    scheduling_group: PodSchedulingGroup
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ..., node_name: _Optional[str] = ..., scheduler_name: _Optional[str] = ..., priority: _Optional[int] = ..., preemption_policy: _Optional[str] = ..., containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., init_containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., overhead: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Union[ResourceRequirements, _Mapping]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., affinity: _Optional[_Union[Affinity, _Mapping]] = ..., topology_spread_constraints: _Optional[_Iterable[_Union[TopologySpreadConstraint, _Mapping]]] = ..., start_time: _Optional[str] = ..., deletion_timestamp: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[PodCondition, _Mapping]]] = ..., nominated_node_name: _Optional[str] = ..., phase: _Optional[str] = ..., priority_class_name: _Optional[str] = ..., scheduling_group: _Optional[_Union[PodSchedulingGroup, _Mapping]] = ...) -> None: ...

class PodSchedulingGroup(_message.Message):
    __slots__ = ("pod_group_name",)
    POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    pod_group_name: str
    def __init__(self, pod_group_name: _Optional[str] = ...) -> None: ...

class Container(_message.Message):
    __slots__ = ("name", "requests", "limits", "ports", "restart_policy", "image")
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LimitsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    RESTART_POLICY_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    requests: _containers.ScalarMap[str, str]
    limits: _containers.ScalarMap[str, str]
    ports: _containers.RepeatedCompositeFieldContainer[ContainerPort]
    restart_policy: str
    image: str
    def __init__(self, name: _Optional[str] = ..., requests: _Optional[_Mapping[str, str]] = ..., limits: _Optional[_Mapping[str, str]] = ..., ports: _Optional[_Iterable[_Union[ContainerPort, _Mapping]]] = ..., restart_policy: _Optional[str] = ..., image: _Optional[str] = ...) -> None: ...

class ContainerPort(_message.Message):
    __slots__ = ("host_port", "protocol", "host_ip", "container_port")
    HOST_PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    HOST_IP_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_PORT_FIELD_NUMBER: _ClassVar[int]
    host_port: int
    protocol: str
    host_ip: str
    container_port: int
    def __init__(self, host_port: _Optional[int] = ..., protocol: _Optional[str] = ..., host_ip: _Optional[str] = ..., container_port: _Optional[int] = ...) -> None: ...

class ResourceRequirements(_message.Message):
    __slots__ = ("requests", "limits")
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LimitsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.ScalarMap[str, str]
    limits: _containers.ScalarMap[str, str]
    def __init__(self, requests: _Optional[_Mapping[str, str]] = ..., limits: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Toleration(_message.Message):
    __slots__ = ("key", "operator", "value", "effect", "toleration_seconds")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TOLERATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    value: str
    effect: str
    toleration_seconds: int
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., toleration_seconds: _Optional[int] = ...) -> None: ...

class Affinity(_message.Message):
    __slots__ = ("node_affinity", "pod_affinity", "pod_anti_affinity")
    NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    POD_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    POD_ANTI_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    node_affinity: NodeAffinity
    pod_affinity: PodAffinity
    pod_anti_affinity: PodAntiAffinity
    def __init__(self, node_affinity: _Optional[_Union[NodeAffinity, _Mapping]] = ..., pod_affinity: _Optional[_Union[PodAffinity, _Mapping]] = ..., pod_anti_affinity: _Optional[_Union[PodAntiAffinity, _Mapping]] = ...) -> None: ...

class NodeAffinity(_message.Message):
    __slots__ = ("required_during_scheduling_ignored_during_execution", "preferred_during_scheduling_ignored_during_execution")
    REQUIRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    required_during_scheduling_ignored_during_execution: NodeSelector
    preferred_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[PreferredSchedulingTerm]
    def __init__(self, required_during_scheduling_ignored_during_execution: _Optional[_Union[NodeSelector, _Mapping]] = ..., preferred_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[PreferredSchedulingTerm, _Mapping]]] = ...) -> None: ...

class PreferredSchedulingTerm(_message.Message):
    __slots__ = ("weight", "preference")
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    weight: int
    preference: NodeSelectorTerm
    def __init__(self, weight: _Optional[int] = ..., preference: _Optional[_Union[NodeSelectorTerm, _Mapping]] = ...) -> None: ...

class NodeSelector(_message.Message):
    __slots__ = ("node_selector_terms",)
    NODE_SELECTOR_TERMS_FIELD_NUMBER: _ClassVar[int]
    node_selector_terms: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    def __init__(self, node_selector_terms: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ...) -> None: ...

class NodeSelectorTerm(_message.Message):
    __slots__ = ("match_expressions", "match_fields")
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELDS_FIELD_NUMBER: _ClassVar[int]
    match_expressions: _containers.RepeatedCompositeFieldContainer[NodeSelectorRequirement]
    match_fields: _containers.RepeatedCompositeFieldContainer[NodeSelectorRequirement]
    def __init__(self, match_expressions: _Optional[_Iterable[_Union[NodeSelectorRequirement, _Mapping]]] = ..., match_fields: _Optional[_Iterable[_Union[NodeSelectorRequirement, _Mapping]]] = ...) -> None: ...

class NodeSelectorRequirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class PodAffinity(_message.Message):
    __slots__ = ("required_during_scheduling_ignored_during_execution", "preferred_during_scheduling_ignored_during_execution")
    REQUIRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    required_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[PodAffinityTerm]
    preferred_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[WeightedPodAffinityTerm]
    def __init__(self, required_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[PodAffinityTerm, _Mapping]]] = ..., preferred_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[WeightedPodAffinityTerm, _Mapping]]] = ...) -> None: ...

class PodAntiAffinity(_message.Message):
    __slots__ = ("required_during_scheduling_ignored_during_execution", "preferred_during_scheduling_ignored_during_execution")
    REQUIRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    required_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[PodAffinityTerm]
    preferred_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[WeightedPodAffinityTerm]
    def __init__(self, required_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[PodAffinityTerm, _Mapping]]] = ..., preferred_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[WeightedPodAffinityTerm, _Mapping]]] = ...) -> None: ...

class WeightedPodAffinityTerm(_message.Message):
    __slots__ = ("weight", "pod_affinity_term")
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    POD_AFFINITY_TERM_FIELD_NUMBER: _ClassVar[int]
    weight: int
    pod_affinity_term: PodAffinityTerm
    def __init__(self, weight: _Optional[int] = ..., pod_affinity_term: _Optional[_Union[PodAffinityTerm, _Mapping]] = ...) -> None: ...

class PodAffinityTerm(_message.Message):
    __slots__ = ("label_selector", "namespaces", "namespace_selector", "topology_key")
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    label_selector: LabelSelector
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    namespace_selector: LabelSelector
    topology_key: str
    def __init__(self, label_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., namespaces: _Optional[_Iterable[str]] = ..., namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., topology_key: _Optional[str] = ...) -> None: ...

class TopologySpreadConstraint(_message.Message):
    __slots__ = ("max_skew", "topology_key", "when_unsatisfiable", "label_selector", "min_domains", "match_label_keys", "node_affinity_policy", "node_taints_policy")
    MAX_SKEW_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    WHEN_UNSATISFIABLE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MIN_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    MATCH_LABEL_KEYS_FIELD_NUMBER: _ClassVar[int]
    NODE_AFFINITY_POLICY_FIELD_NUMBER: _ClassVar[int]
    NODE_TAINTS_POLICY_FIELD_NUMBER: _ClassVar[int]
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector
    min_domains: int
    match_label_keys: _containers.RepeatedScalarFieldContainer[str]
    node_affinity_policy: str
    node_taints_policy: str
    def __init__(self, max_skew: _Optional[int] = ..., topology_key: _Optional[str] = ..., when_unsatisfiable: _Optional[str] = ..., label_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., min_domains: _Optional[int] = ..., match_label_keys: _Optional[_Iterable[str]] = ..., node_affinity_policy: _Optional[str] = ..., node_taints_policy: _Optional[str] = ...) -> None: ...

class PodCondition(_message.Message):
    __slots__ = ("type", "status", "reason")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class UpdatePodRequest(_message.Message):
    __slots__ = ("upsert", "upsert_json", "delete")
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_JSON_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    upsert: Pod
    upsert_json: str
    delete: ObjectRef
    def __init__(self, upsert: _Optional[_Union[Pod, _Mapping]] = ..., upsert_json: _Optional[str] = ..., delete: _Optional[_Union[ObjectRef, _Mapping]] = ...) -> None: ...

class UpdatePodResponse(_message.Message):
    __slots__ = ("applied", "resource_version", "revision", "epoch", "stale")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    resource_version: int
    revision: int
    epoch: str
    stale: str
    def __init__(self, applied: _Optional[bool] = ..., resource_version: _Optional[int] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ..., stale: _Optional[str] = ...) -> None: ...

class PodDisruptionBudget(_message.Message):
    __slots__ = ("namespace", "name", "uid", "resource_version", "selector", "disruptions_allowed", "disrupted_pods")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    DISRUPTIONS_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    DISRUPTED_PODS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    resource_version: int
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[int] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., disruptions_allowed: _Optional[int] = ..., disrupted_pods: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdatePodDisruptionBudgetRequest(_message.Message):
    __slots__ = ("upsert", "upsert_json", "delete")
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_JSON_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    upsert: PodDisruptionBudget
    upsert_json: str
    delete: ObjectRef
    def __init__(self, upsert: _Optional[_Union[PodDisruptionBudget, _Mapping]] = ..., upsert_json: _Optional[str] = ..., delete: _Optional[_Union[ObjectRef, _Mapping]] = ...) -> None: ...

class UpdatePodDisruptionBudgetResponse(_message.Message):
    __slots__ = ("applied", "resource_version", "revision", "epoch", "stale")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    resource_version: int
    revision: int
    epoch: str
    stale: str
    def __init__(self, applied: _Optional[bool] = ..., resource_version: _Optional[int] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ..., stale: _Optional[str] = ...) -> None: ...

class PriorityClass(_message.Message):
    __slots__ = ("name", "uid", "resource_version", "value", "global_default", "preemption_policy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    uid: str
    resource_version: int
    value: int
    global_default: bool
    preemption_policy: str
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[int] = ..., value: _Optional[int] = ..., global_default: _Optional[bool] = ..., preemption_policy: _Optional[str] = ...) -> None: ...

class UpdatePriorityClassRequest(_message.Message):
    __slots__ = ("upsert", "upsert_json", "delete")
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_JSON_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    upsert: PriorityClass
    upsert_json: str
    delete: ObjectRef
    def __init__(self, upsert: _Optional[_Union[PriorityClass, _Mapping]] = ..., upsert_json: _Optional[str] = ..., delete: _Optional[_Union[ObjectRef, _Mapping]] = ...) -> None: ...

class UpdatePriorityClassResponse(_message.Message):
    __slots__ = ("applied", "resource_version", "revision", "epoch", "stale")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    resource_version: int
    revision: int
    epoch: str
    stale: str
    def __init__(self, applied: _Optional[bool] = ..., resource_version: _Optional[int] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ..., stale: _Optional[str] = ...) -> None: ...

class Namespace(_message.Message):
    __slots__ = ("name", "uid", "resource_version", "labels")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    name: str
    uid: str
    resource_version: int
    labels: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class UpdateNamespaceRequest(_message.Message):
    __slots__ = ("upsert", "upsert_json", "delete")
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_JSON_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    upsert: Namespace
    upsert_json: str
    delete: ObjectRef
    def __init__(self, upsert: _Optional[_Union[Namespace, _Mapping]] = ..., upsert_json: _Optional[str] = ..., delete: _Optional[_Union[ObjectRef, _Mapping]] = ...) -> None: ...

class UpdateNamespaceResponse(_message.Message):
    __slots__ = ("applied", "resource_version", "revision", "epoch", "stale")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    resource_version: int
    revision: int
    epoch: str
    stale: str
    def __init__(self, applied: _Optional[bool] = ..., resource_version: _Optional[int] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ..., stale: _Optional[str] = ...) -> None: ...

class PodGroup(_message.Message):
    __slots__ = ("namespace", "name", "uid", "resource_version", "creation_timestamp", "scheduling_policy", "disruption_mode", "priority_class_name", "priority", "preemption_policy", "parent_composite_pod_group_name", "workload_ref")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_POLICY_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_MODE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    PARENT_COMPOSITE_POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_REF_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    resource_version: int
    creation_timestamp: str
    scheduling_policy: PodGroupSchedulingPolicy
    disruption_mode: DisruptionMode
    priority_class_name: str
    priority: int
    preemption_policy: str
    parent_composite_pod_group_name: str
    workload_ref: WorkloadReference
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[int] = ..., creation_timestamp: _Optional[str] = ..., scheduling_policy: _Optional[_Union[PodGroupSchedulingPolicy, _Mapping]] = ..., disruption_mode: _Optional[_Union[DisruptionMode, _Mapping]] = ..., priority_class_name: _Optional[str] = ..., priority: _Optional[int] = ..., preemption_policy: _Optional[str] = ..., parent_composite_pod_group_name: _Optional[str] = ..., workload_ref: _Optional[_Union[WorkloadReference, _Mapping]] = ...) -> None: ...

class PodGroupSchedulingPolicy(_message.Message):
    __slots__ = ("basic", "gang")
    BASIC_FIELD_NUMBER: _ClassVar[int]
    GANG_FIELD_NUMBER: _ClassVar[int]
    basic: BasicSchedulingPolicy
    gang: GangSchedulingPolicy
    def __init__(self, basic: _Optional[_Union[BasicSchedulingPolicy, _Mapping]] = ..., gang: _Optional[_Union[GangSchedulingPolicy, _Mapping]] = ...) -> None: ...

class BasicSchedulingPolicy(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GangSchedulingPolicy(_message.Message):
    __slots__ = ("min_count",)
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    min_count: int
    def __init__(self, min_count: _Optional[int] = ...) -> None: ...

class DisruptionMode(_message.Message):
    __slots__ = ("single", "all")
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    single: SingleDisruptionMode
    all: AllDisruptionMode
    def __init__(self, single: _Optional[_Union[SingleDisruptionMode, _Mapping]] = ..., all: _Optional[_Union[AllDisruptionMode, _Mapping]] = ...) -> None: ...

class SingleDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AllDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WorkloadReference(_message.Message):
    __slots__ = ("workload_name", "template_name")
    WORKLOAD_NAME_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    workload_name: str
    template_name: str
    def __init__(self, workload_name: _Optional[str] = ..., template_name: _Optional[str] = ...) -> None: ...

class UpdatePodGroupRequest(_message.Message):
    __slots__ = ("upsert", "upsert_json", "delete")
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_JSON_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    upsert: PodGroup
    upsert_json: str
    delete: ObjectRef
    def __init__(self, upsert: _Optional[_Union[PodGroup, _Mapping]] = ..., upsert_json: _Optional[str] = ..., delete: _Optional[_Union[ObjectRef, _Mapping]] = ...) -> None: ...

class UpdatePodGroupResponse(_message.Message):
    __slots__ = ("applied", "resource_version", "revision", "epoch", "stale")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    resource_version: int
    revision: int
    epoch: str
    stale: str
    def __init__(self, applied: _Optional[bool] = ..., resource_version: _Optional[int] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ..., stale: _Optional[str] = ...) -> None: ...

class Workload(_message.Message):
    __slots__ = ("namespace", "name", "uid", "resource_version", "pod_group_templates")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    resource_version: int
    pod_group_templates: _containers.RepeatedCompositeFieldContainer[PodGroupTemplate]
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[int] = ..., pod_group_templates: _Optional[_Iterable[_Union[PodGroupTemplate, _Mapping]]] = ...) -> None: ...

class PodGroupTemplate(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UpdateWorkloadRequest(_message.Message):
    __slots__ = ("upsert", "upsert_json", "delete")
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_JSON_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    upsert: Workload
    upsert_json: str
    delete: ObjectRef
    def __init__(self, upsert: _Optional[_Union[Workload, _Mapping]] = ..., upsert_json: _Optional[str] = ..., delete: _Optional[_Union[ObjectRef, _Mapping]] = ...) -> None: ...

class UpdateWorkloadResponse(_message.Message):
    __slots__ = ("applied", "resource_version", "revision", "epoch", "stale")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    resource_version: int
    revision: int
    epoch: str
    stale: str
    def __init__(self, applied: _Optional[bool] = ..., resource_version: _Optional[int] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ..., stale: _Optional[str] = ...) -> None: ...

class PreemptRequest(_message.Message):
    __slots__ = ("pod", "pod_json", "pod_ref", "dry_run", "explain", "pdb_mode")
    POD_FIELD_NUMBER: _ClassVar[int]
    POD_JSON_FIELD_NUMBER: _ClassVar[int]
    POD_REF_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    PDB_MODE_FIELD_NUMBER: _ClassVar[int]
    pod: Pod
    pod_json: str
    pod_ref: PodRef
    dry_run: bool
    explain: bool
    pdb_mode: PdbMode
    def __init__(self, pod: _Optional[_Union[Pod, _Mapping]] = ..., pod_json: _Optional[str] = ..., pod_ref: _Optional[_Union[PodRef, _Mapping]] = ..., dry_run: _Optional[bool] = ..., explain: _Optional[bool] = ..., pdb_mode: _Optional[_Union[PdbMode, str]] = ...) -> None: ...

class FilterStatus(_message.Message):
    __slots__ = ("code", "plugin", "reasons")
    CODE_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    code: StatusCode
    plugin: str
    reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, code: _Optional[_Union[StatusCode, str]] = ..., plugin: _Optional[str] = ..., reasons: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeDiagnostic(_message.Message):
    __slots__ = ("node", "filter", "preemption", "victims", "pdb_violations", "candidate", "notes")
    NODE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_FIELD_NUMBER: _ClassVar[int]
    VICTIMS_FIELD_NUMBER: _ClassVar[int]
    PDB_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    node: str
    filter: FilterStatus
    preemption: FilterStatus
    victims: _containers.RepeatedCompositeFieldContainer[PodRef]
    pdb_violations: int
    candidate: bool
    notes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node: _Optional[str] = ..., filter: _Optional[_Union[FilterStatus, _Mapping]] = ..., preemption: _Optional[_Union[FilterStatus, _Mapping]] = ..., victims: _Optional[_Iterable[_Union[PodRef, _Mapping]]] = ..., pdb_violations: _Optional[int] = ..., candidate: _Optional[bool] = ..., notes: _Optional[_Iterable[str]] = ...) -> None: ...

class PreemptResponse(_message.Message):
    __slots__ = ("outcome", "nominated_node_name", "victims", "nominated_pods_to_clear", "pdb_violations", "message", "feasible_nodes", "diagnostics", "epoch", "revision", "nominations_revision", "kubernetes_version", "placement")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    NOMINATED_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    VICTIMS_FIELD_NUMBER: _ClassVar[int]
    NOMINATED_PODS_TO_CLEAR_FIELD_NUMBER: _ClassVar[int]
    PDB_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FEASIBLE_NODES_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    NOMINATIONS_REVISION_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_VERSION_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    outcome: Outcome
    nominated_node_name: str
    victims: _containers.RepeatedCompositeFieldContainer[PodRef]
    nominated_pods_to_clear: _containers.RepeatedCompositeFieldContainer[PodRef]
    pdb_violations: int
    message: str
    feasible_nodes: _containers.RepeatedScalarFieldContainer[str]
    diagnostics: _containers.RepeatedCompositeFieldContainer[NodeDiagnostic]
    epoch: str
    revision: int
    nominations_revision: int
    kubernetes_version: str
    placement: Placement
    def __init__(self, outcome: _Optional[_Union[Outcome, str]] = ..., nominated_node_name: _Optional[str] = ..., victims: _Optional[_Iterable[_Union[PodRef, _Mapping]]] = ..., nominated_pods_to_clear: _Optional[_Iterable[_Union[PodRef, _Mapping]]] = ..., pdb_violations: _Optional[int] = ..., message: _Optional[str] = ..., feasible_nodes: _Optional[_Iterable[str]] = ..., diagnostics: _Optional[_Iterable[_Union[NodeDiagnostic, _Mapping]]] = ..., epoch: _Optional[str] = ..., revision: _Optional[int] = ..., nominations_revision: _Optional[int] = ..., kubernetes_version: _Optional[str] = ..., placement: _Optional[_Union[Placement, _Mapping]] = ...) -> None: ...

class Placement(_message.Message):
    __slots__ = ("node_name", "score", "tied_nodes", "node_scores", "feasible_nodes")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TIED_NODES_FIELD_NUMBER: _ClassVar[int]
    NODE_SCORES_FIELD_NUMBER: _ClassVar[int]
    FEASIBLE_NODES_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    score: int
    tied_nodes: _containers.RepeatedScalarFieldContainer[str]
    node_scores: _containers.RepeatedCompositeFieldContainer[NodeScore]
    feasible_nodes: int
    def __init__(self, node_name: _Optional[str] = ..., score: _Optional[int] = ..., tied_nodes: _Optional[_Iterable[str]] = ..., node_scores: _Optional[_Iterable[_Union[NodeScore, _Mapping]]] = ..., feasible_nodes: _Optional[int] = ...) -> None: ...

class NodeScore(_message.Message):
    __slots__ = ("node_name", "total", "plugins")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    total: int
    plugins: _containers.RepeatedCompositeFieldContainer[PluginScore]
    def __init__(self, node_name: _Optional[str] = ..., total: _Optional[int] = ..., plugins: _Optional[_Iterable[_Union[PluginScore, _Mapping]]] = ...) -> None: ...

class PluginScore(_message.Message):
    __slots__ = ("plugin", "score", "weight")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    score: int
    weight: int
    def __init__(self, plugin: _Optional[str] = ..., score: _Optional[int] = ..., weight: _Optional[int] = ...) -> None: ...

class PodGroupRef(_message.Message):
    __slots__ = ("namespace", "name", "uid")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class PreemptGroupRequest(_message.Message):
    __slots__ = ("group_ref", "pod_group", "pod_group_json", "members", "member_json", "dry_run", "explain", "pdb_mode")
    GROUP_REF_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_JSON_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    MEMBER_JSON_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    PDB_MODE_FIELD_NUMBER: _ClassVar[int]
    group_ref: PodGroupRef
    pod_group: PodGroup
    pod_group_json: str
    members: _containers.RepeatedCompositeFieldContainer[Pod]
    member_json: _containers.RepeatedScalarFieldContainer[str]
    dry_run: bool
    explain: bool
    pdb_mode: PdbMode
    def __init__(self, group_ref: _Optional[_Union[PodGroupRef, _Mapping]] = ..., pod_group: _Optional[_Union[PodGroup, _Mapping]] = ..., pod_group_json: _Optional[str] = ..., members: _Optional[_Iterable[_Union[Pod, _Mapping]]] = ..., member_json: _Optional[_Iterable[str]] = ..., dry_run: _Optional[bool] = ..., explain: _Optional[bool] = ..., pdb_mode: _Optional[_Union[PdbMode, str]] = ...) -> None: ...

class GroupNomination(_message.Message):
    __slots__ = ("pod", "node_name")
    POD_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    pod: PodRef
    node_name: str
    def __init__(self, pod: _Optional[_Union[PodRef, _Mapping]] = ..., node_name: _Optional[str] = ...) -> None: ...

class PreemptGroupResponse(_message.Message):
    __slots__ = ("outcome", "victims", "pdb_violations", "nominations", "nominated_pods_to_clear", "message", "kubernetes_version", "pod_group_disruptions", "notes", "epoch", "revision", "nominations_revision")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    VICTIMS_FIELD_NUMBER: _ClassVar[int]
    PDB_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    NOMINATIONS_FIELD_NUMBER: _ClassVar[int]
    NOMINATED_PODS_TO_CLEAR_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_VERSION_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_DISRUPTIONS_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    NOMINATIONS_REVISION_FIELD_NUMBER: _ClassVar[int]
    outcome: Outcome
    victims: _containers.RepeatedCompositeFieldContainer[PodRef]
    pdb_violations: int
    nominations: _containers.RepeatedCompositeFieldContainer[GroupNomination]
    nominated_pods_to_clear: _containers.RepeatedCompositeFieldContainer[PodRef]
    message: str
    kubernetes_version: str
    pod_group_disruptions: int
    notes: _containers.RepeatedScalarFieldContainer[str]
    epoch: str
    revision: int
    nominations_revision: int
    def __init__(self, outcome: _Optional[_Union[Outcome, str]] = ..., victims: _Optional[_Iterable[_Union[PodRef, _Mapping]]] = ..., pdb_violations: _Optional[int] = ..., nominations: _Optional[_Iterable[_Union[GroupNomination, _Mapping]]] = ..., nominated_pods_to_clear: _Optional[_Iterable[_Union[PodRef, _Mapping]]] = ..., message: _Optional[str] = ..., kubernetes_version: _Optional[str] = ..., pod_group_disruptions: _Optional[int] = ..., notes: _Optional[_Iterable[str]] = ..., epoch: _Optional[str] = ..., revision: _Optional[int] = ..., nominations_revision: _Optional[int] = ...) -> None: ...

class Nomination(_message.Message):
    __slots__ = ("pod", "priority", "node")
    POD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    pod: PodRef
    priority: int
    node: str
    def __init__(self, pod: _Optional[_Union[PodRef, _Mapping]] = ..., priority: _Optional[int] = ..., node: _Optional[str] = ...) -> None: ...

class ListNominationsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListNominationsResponse(_message.Message):
    __slots__ = ("nominations", "revision", "epoch")
    NOMINATIONS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    nominations: _containers.RepeatedCompositeFieldContainer[Nomination]
    revision: int
    epoch: str
    def __init__(self, nominations: _Optional[_Iterable[_Union[Nomination, _Mapping]]] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ...) -> None: ...

class WatchNominationsRequest(_message.Message):
    __slots__ = ("after_revision",)
    AFTER_REVISION_FIELD_NUMBER: _ClassVar[int]
    after_revision: int
    def __init__(self, after_revision: _Optional[int] = ...) -> None: ...

class WatchNominationsResponse(_message.Message):
    __slots__ = ("revision", "type", "pod", "node", "priority", "initial", "epoch", "batch_revision")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    INITIAL_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    BATCH_REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    type: NominationEventType
    pod: PodRef
    node: str
    priority: int
    initial: bool
    epoch: str
    batch_revision: int
    def __init__(self, revision: _Optional[int] = ..., type: _Optional[_Union[NominationEventType, str]] = ..., pod: _Optional[_Union[PodRef, _Mapping]] = ..., node: _Optional[str] = ..., priority: _Optional[int] = ..., initial: _Optional[bool] = ..., epoch: _Optional[str] = ..., batch_revision: _Optional[int] = ...) -> None: ...

class SyncRequest(_message.Message):
    __slots__ = ("node", "pod", "pdb", "priority_class", "namespace", "pod_group", "workload")
    NODE_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    PDB_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    node: UpdateNodeRequest
    pod: UpdatePodRequest
    pdb: UpdatePodDisruptionBudgetRequest
    priority_class: UpdatePriorityClassRequest
    namespace: UpdateNamespaceRequest
    pod_group: UpdatePodGroupRequest
    workload: UpdateWorkloadRequest
    def __init__(self, node: _Optional[_Union[UpdateNodeRequest, _Mapping]] = ..., pod: _Optional[_Union[UpdatePodRequest, _Mapping]] = ..., pdb: _Optional[_Union[UpdatePodDisruptionBudgetRequest, _Mapping]] = ..., priority_class: _Optional[_Union[UpdatePriorityClassRequest, _Mapping]] = ..., namespace: _Optional[_Union[UpdateNamespaceRequest, _Mapping]] = ..., pod_group: _Optional[_Union[UpdatePodGroupRequest, _Mapping]] = ..., workload: _Optional[_Union[UpdateWorkloadRequest, _Mapping]] = ...) -> None: ...

class SyncCounts(_message.Message):
    __slots__ = ("nodes", "pods", "pdbs", "priority_classes", "namespaces", "pod_groups", "workloads")
    NODES_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    PDBS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASSES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    POD_GROUPS_FIELD_NUMBER: _ClassVar[int]
    WORKLOADS_FIELD_NUMBER: _ClassVar[int]
    nodes: int
    pods: int
    pdbs: int
    priority_classes: int
    namespaces: int
    pod_groups: int
    workloads: int
    def __init__(self, nodes: _Optional[int] = ..., pods: _Optional[int] = ..., pdbs: _Optional[int] = ..., priority_classes: _Optional[int] = ..., namespaces: _Optional[int] = ..., pod_groups: _Optional[int] = ..., workloads: _Optional[int] = ...) -> None: ...

class SyncRejection(_message.Message):
    __slots__ = ("index", "code", "field", "message")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    index: int
    code: str
    field: str
    message: str
    def __init__(self, index: _Optional[int] = ..., code: _Optional[str] = ..., field: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SyncResponse(_message.Message):
    __slots__ = ("applied", "stale", "rejected", "rejections", "revision", "epoch", "nominations_revision")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    NOMINATIONS_REVISION_FIELD_NUMBER: _ClassVar[int]
    applied: SyncCounts
    stale: SyncCounts
    rejected: int
    rejections: _containers.RepeatedCompositeFieldContainer[SyncRejection]
    revision: int
    epoch: str
    nominations_revision: int
    def __init__(self, applied: _Optional[_Union[SyncCounts, _Mapping]] = ..., stale: _Optional[_Union[SyncCounts, _Mapping]] = ..., rejected: _Optional[int] = ..., rejections: _Optional[_Iterable[_Union[SyncRejection, _Mapping]]] = ..., revision: _Optional[int] = ..., epoch: _Optional[str] = ..., nominations_revision: _Optional[int] = ...) -> None: ...

class PlanDrainRequest(_message.Message):
    __slots__ = ("node_names", "pdb_mode", "explain")
    NODE_NAMES_FIELD_NUMBER: _ClassVar[int]
    PDB_MODE_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    node_names: _containers.RepeatedScalarFieldContainer[str]
    pdb_mode: PdbMode
    explain: bool
    def __init__(self, node_names: _Optional[_Iterable[str]] = ..., pdb_mode: _Optional[_Union[PdbMode, str]] = ..., explain: _Optional[bool] = ...) -> None: ...

class PodDrainPlan(_message.Message):
    __slots__ = ("pod", "priority", "from_node", "outcome", "node_name", "victims", "reason", "critical", "batch", "blocked_by_pdb", "diagnostics")
    POD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    FROM_NODE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    VICTIMS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CRITICAL_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_BY_PDB_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    pod: PodRef
    priority: int
    from_node: str
    outcome: DrainOutcome
    node_name: str
    victims: _containers.RepeatedCompositeFieldContainer[PodRef]
    reason: str
    critical: bool
    batch: int
    blocked_by_pdb: ObjectRef
    diagnostics: _containers.RepeatedCompositeFieldContainer[NodeDiagnostic]
    def __init__(self, pod: _Optional[_Union[PodRef, _Mapping]] = ..., priority: _Optional[int] = ..., from_node: _Optional[str] = ..., outcome: _Optional[_Union[DrainOutcome, str]] = ..., node_name: _Optional[str] = ..., victims: _Optional[_Iterable[_Union[PodRef, _Mapping]]] = ..., reason: _Optional[str] = ..., critical: _Optional[bool] = ..., batch: _Optional[int] = ..., blocked_by_pdb: _Optional[_Union[ObjectRef, _Mapping]] = ..., diagnostics: _Optional[_Iterable[_Union[NodeDiagnostic, _Mapping]]] = ...) -> None: ...

class DrainBatch(_message.Message):
    __slots__ = ("pods",)
    PODS_FIELD_NUMBER: _ClassVar[int]
    pods: _containers.RepeatedCompositeFieldContainer[PodRef]
    def __init__(self, pods: _Optional[_Iterable[_Union[PodRef, _Mapping]]] = ...) -> None: ...

class NoticedNode(_message.Message):
    __slots__ = ("node", "signal")
    NODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    node: str
    signal: str
    def __init__(self, node: _Optional[str] = ..., signal: _Optional[str] = ...) -> None: ...

class PlanDrainResponse(_message.Message):
    __slots__ = ("pods", "batches", "noticed_nodes", "epoch", "revision")
    PODS_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    NOTICED_NODES_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    pods: _containers.RepeatedCompositeFieldContainer[PodDrainPlan]
    batches: _containers.RepeatedCompositeFieldContainer[DrainBatch]
    noticed_nodes: _containers.RepeatedCompositeFieldContainer[NoticedNode]
    epoch: str
    revision: int
    def __init__(self, pods: _Optional[_Iterable[_Union[PodDrainPlan, _Mapping]]] = ..., batches: _Optional[_Iterable[_Union[DrainBatch, _Mapping]]] = ..., noticed_nodes: _Optional[_Iterable[_Union[NoticedNode, _Mapping]]] = ..., epoch: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...
