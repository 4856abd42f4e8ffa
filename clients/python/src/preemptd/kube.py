"""Kubernetes objects (the JSON `kubectl get -o json` prints, as parsed dicts) to the typed
preemptd.v1 messages, field by field as the proto's comments map them.

The server applies the same defaulting to typed messages as to `upsert_json` (limits
default requests, empty namespace means "default", ...), with one exception the proto has
no field for: `spec.hostNetwork`, which the API server turns into `hostPort =
containerPort`; the converter applies it here. JSON `null` counts as a missing field, as in
Go's decoder. A value of the wrong JSON type is refused with a ConversionError naming its
field path (`spec.containers[0].resources.requests[cpu]`); the values themselves (quantities,
enum strings) are checked by the server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Union

from preemptd.v1 import preemptd_pb2 as pb

KubeObject = Mapping[str, Any]
TypedObject = Union[pb.Node, pb.Pod, pb.PodDisruptionBudget, pb.PodGroup, pb.Workload]

_EMPTY: Mapping[str, Any] = {}


class ConversionError(ValueError):
    """A Kubernetes object field of the wrong shape; `path` is its JSON path."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


class _At:
    """A JSON object read with field paths in errors. Missing fields and null read as zero."""

    def __init__(self, path: str, value: Any) -> None:
        if value is not None and not isinstance(value, Mapping):
            raise ConversionError(path or "(object)", f"expected an object, got {value!r}")
        self.path = path
        self.m: Mapping[str, Any] = _EMPTY if value is None else value

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def present(self, key: str) -> bool:
        return self.m.get(key) is not None

    def obj(self, key: str) -> _At:
        return _At(self.at(key), self.m.get(key))

    def array(self, key: str) -> list[_At]:
        return [_At(f"{self.at(key)}[{i}]", v) for i, v in enumerate(self._raw_list(key))]

    def _raw_list(self, key: str) -> list[Any]:
        value = self.m.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ConversionError(self.at(key), f"expected a list, got {value!r}")
        return value

    def text(self, key: str) -> str:
        value = self.m.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ConversionError(self.at(key), f"expected a string, got {value!r}")
        return value

    def flag(self, key: str) -> bool:
        value = self.m.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ConversionError(self.at(key), f"expected a boolean, got {value!r}")
        return value

    def integer(self, key: str, bits: int = 32) -> int:
        value = self.m.get(key)
        if value is None:
            return 0
        limit = 1 << (bits - 1)
        if isinstance(value, bool) or not isinstance(value, int) or not -limit <= value < limit:
            raise ConversionError(self.at(key), f"expected a {bits}-bit integer, got {value!r}")
        return value

    def str_list(self, key: str) -> list[str]:
        out = []
        for i, value in enumerate(self._raw_list(key)):
            if not isinstance(value, str):
                raise ConversionError(f"{self.at(key)}[{i}]", f"expected a string, got {value!r}")
            out.append(value)
        return out

    def strings(self, key: str) -> dict[str, str]:
        out = {}
        for name, value in self.obj(key).m.items():
            if not isinstance(value, str):
                raise ConversionError(f"{self.at(key)}[{name}]", f"expected a string, got {value!r}")
            out[name] = value
        return out

    def quantities(self, key: str) -> dict[str, str]:
        # Kubernetes accepts quantities as strings or JSON numbers, and reads null as zero.
        out = {}
        for name, value in self.obj(key).m.items():
            if value is None:
                out[name] = "0"
            elif isinstance(value, str):
                out[name] = value
            elif isinstance(value, int) and not isinstance(value, bool):
                out[name] = str(value)
            elif isinstance(value, float):
                out[name] = repr(value)
            else:
                raise ConversionError(
                    f"{self.at(key)}[{name}]", f"expected a quantity (a string or a number), got {value!r}"
                )
        return out

    def resource_version(self) -> int:
        value = self.m.get("resourceVersion")
        if value is None or value == "":
            return 0
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
        raise ConversionError(self.at("resourceVersion"), f"invalid resource version {value!r}")


def _selector(value: _At) -> pb.LabelSelector:
    return pb.LabelSelector(
        match_labels=value.strings("matchLabels"),
        match_expressions=[
            pb.LabelSelectorRequirement(key=e.text("key"), operator=e.text("operator"), values=e.str_list("values"))
            for e in value.array("matchExpressions")
        ],
    )


def node_from_kube(obj: KubeObject) -> pb.Node:
    """A v1 Node as the typed Node message."""
    return _node(_At("", obj))


def _node(o: _At) -> pb.Node:
    meta, spec, status = o.obj("metadata"), o.obj("spec"), o.obj("status")
    return pb.Node(
        name=meta.text("name"),
        uid=meta.text("uid"),
        resource_version=meta.resource_version(),
        labels=meta.strings("labels"),
        taints=[pb.Taint(key=t.text("key"), value=t.text("value"), effect=t.text("effect")) for t in spec.array("taints")],
        unschedulable=spec.flag("unschedulable"),
        allocatable=status.quantities("allocatable"),
        # Read by a placement policy's termination-notice signals.
        annotations=meta.strings("annotations"),
        conditions=[
            pb.NodeCondition(
                type=c.text("type"), status=c.text("status"), reason=c.text("reason"), message=c.text("message")
            )
            for c in status.array("conditions")
        ],
        # Read by scoring (ImageLocality).
        images=[
            pb.ContainerImage(names=i.str_list("names"), size_bytes=i.integer("sizeBytes", 64))
            for i in status.array("images")
        ],
    )


def _container(c: _At, host_network: bool) -> pb.Container:
    resources = c.obj("resources")
    ports = []
    for p in c.array("ports"):
        host_port = p.integer("hostPort")
        container_port = p.integer("containerPort")
        if host_network and host_port == 0:
            host_port = container_port
        ports.append(
            pb.ContainerPort(
                host_port=host_port, protocol=p.text("protocol"), host_ip=p.text("hostIP"), container_port=container_port
            )
        )
    return pb.Container(
        name=c.text("name"),
        image=c.text("image"),
        requests=resources.quantities("requests"),
        limits=resources.quantities("limits"),
        ports=ports,
        restart_policy=c.text("restartPolicy"),
    )


def _node_selector_requirements(values: list[_At]) -> list[pb.NodeSelectorRequirement]:
    return [
        pb.NodeSelectorRequirement(key=r.text("key"), operator=r.text("operator"), values=r.str_list("values"))
        for r in values
    ]


def _affinity_term(t: _At) -> pb.PodAffinityTerm:
    term = pb.PodAffinityTerm(namespaces=t.str_list("namespaces"), topology_key=t.text("topologyKey"))
    # Presence matters: an absent selector matches nothing, an empty one everything.
    if t.present("labelSelector"):
        term.label_selector.CopyFrom(_selector(t.obj("labelSelector")))
    if t.present("namespaceSelector"):
        term.namespace_selector.CopyFrom(_selector(t.obj("namespaceSelector")))
    return term


def _affinity(value: _At) -> pb.Affinity:
    affinity = pb.Affinity()
    if value.present("nodeAffinity"):
        node_affinity = affinity.node_affinity
        node_affinity.SetInParent()
        required_key = "requiredDuringSchedulingIgnoredDuringExecution"
        required = value.obj("nodeAffinity")
        if required.present(required_key):
            selector = node_affinity.required_during_scheduling_ignored_during_execution
            selector.SetInParent()
            for term in required.obj(required_key).array("nodeSelectorTerms"):
                selector.node_selector_terms.append(_node_selector_term(term))
        for preferred in required.array(_PREFERRED):
            scheduling_term = pb.PreferredSchedulingTerm(weight=preferred.integer("weight"))
            if preferred.present("preference"):
                scheduling_term.preference.CopyFrom(_node_selector_term(preferred.obj("preference")))
            node_affinity.preferred_during_scheduling_ignored_during_execution.append(scheduling_term)
    for key, target in (
        ("podAffinity", affinity.pod_affinity),
        ("podAntiAffinity", affinity.pod_anti_affinity),
    ):
        if value.present(key):
            target.SetInParent()
            terms = value.obj(key).array("requiredDuringSchedulingIgnoredDuringExecution")
            target.required_during_scheduling_ignored_during_execution.extend(_affinity_term(t) for t in terms)
            for preferred in value.obj(key).array(_PREFERRED):
                weighted = pb.WeightedPodAffinityTerm(weight=preferred.integer("weight"))
                if preferred.present("podAffinityTerm"):
                    weighted.pod_affinity_term.CopyFrom(_affinity_term(preferred.obj("podAffinityTerm")))
                target.preferred_during_scheduling_ignored_during_execution.append(weighted)
    return affinity


_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _node_selector_term(term: _At) -> pb.NodeSelectorTerm:
    return pb.NodeSelectorTerm(
        match_expressions=_node_selector_requirements(term.array("matchExpressions")),
        match_fields=_node_selector_requirements(term.array("matchFields")),
    )


def _spread(c: _At) -> pb.TopologySpreadConstraint:
    constraint = pb.TopologySpreadConstraint(
        max_skew=c.integer("maxSkew"),
        topology_key=c.text("topologyKey"),
        when_unsatisfiable=c.text("whenUnsatisfiable"),
        match_label_keys=c.str_list("matchLabelKeys"),
        node_affinity_policy=c.text("nodeAffinityPolicy"),
        node_taints_policy=c.text("nodeTaintsPolicy"),
    )
    if c.present("labelSelector"):
        constraint.label_selector.CopyFrom(_selector(c.obj("labelSelector")))
    if c.present("minDomains"):
        constraint.min_domains = c.integer("minDomains")
    return constraint


def _toleration(t: _At) -> pb.Toleration:
    toleration = pb.Toleration(
        key=t.text("key"), operator=t.text("operator"), value=t.text("value"), effect=t.text("effect")
    )
    if t.present("tolerationSeconds"):
        toleration.toleration_seconds = t.integer("tolerationSeconds", 64)
    return toleration


def pod_from_kube(obj: KubeObject) -> pb.Pod:
    """A v1 Pod as the typed Pod message."""
    return _pod(_At("", obj))


def _pod(o: _At) -> pb.Pod:
    meta, spec, status = o.obj("metadata"), o.obj("spec"), o.obj("status")
    host_network = spec.flag("hostNetwork")
    pod = pb.Pod(
        namespace=meta.text("namespace"),
        name=meta.text("name"),
        uid=meta.text("uid"),
        resource_version=meta.resource_version(),
        labels=meta.strings("labels"),
        node_name=spec.text("nodeName"),
        scheduler_name=spec.text("schedulerName"),
        priority_class_name=spec.text("priorityClassName"),
        preemption_policy=spec.text("preemptionPolicy"),
        containers=[_container(c, host_network) for c in spec.array("containers")],
        init_containers=[_container(c, host_network) for c in spec.array("initContainers")],
        overhead=spec.quantities("overhead"),
        tolerations=[_toleration(t) for t in spec.array("tolerations")],
        node_selector=spec.strings("nodeSelector"),
        topology_spread_constraints=[_spread(c) for c in spec.array("topologySpreadConstraints")],
        start_time=status.text("startTime"),
        deletion_timestamp=meta.text("deletionTimestamp"),
        conditions=[
            pb.PodCondition(type=c.text("type"), status=c.text("status"), reason=c.text("reason"))
            for c in status.array("conditions")
        ],
        nominated_node_name=status.text("nominatedNodeName"),
        phase=status.text("phase"),
    )
    if spec.present("priority"):
        pod.priority = spec.integer("priority")
    if spec.present("resources"):
        resources = spec.obj("resources")
        pod.resources.CopyFrom(
            pb.ResourceRequirements(requests=resources.quantities("requests"), limits=resources.quantities("limits"))
        )
    if spec.present("affinity"):
        pod.affinity.CopyFrom(_affinity(spec.obj("affinity")))
    if spec.present("schedulingGroup"):
        pod.scheduling_group.pod_group_name = spec.obj("schedulingGroup").text("podGroupName")
        pod.scheduling_group.SetInParent()
    return pod


def pdb_from_kube(obj: KubeObject) -> pb.PodDisruptionBudget:
    """A policy/v1 PodDisruptionBudget as the typed PodDisruptionBudget message."""
    return _pdb(_At("", obj))


def _pdb(o: _At) -> pb.PodDisruptionBudget:
    meta, spec, status = o.obj("metadata"), o.obj("spec"), o.obj("status")
    pdb = pb.PodDisruptionBudget(
        namespace=meta.text("namespace"),
        name=meta.text("name"),
        uid=meta.text("uid"),
        resource_version=meta.resource_version(),
        disruptions_allowed=status.integer("disruptionsAllowed"),
        # status.disruptedPods maps pod name to the time it was disrupted.
        disrupted_pods=list(status.obj("disruptedPods").m.keys()),
    )
    if spec.present("selector"):
        pdb.selector.CopyFrom(_selector(spec.obj("selector")))
    return pdb


def pod_group_from_kube(obj: KubeObject) -> pb.PodGroup:
    """A scheduling.k8s.io/v1beta1 PodGroup as the typed PodGroup message."""
    return _pod_group(_At("", obj))


def _pod_group(o: _At) -> pb.PodGroup:
    meta, spec = o.obj("metadata"), o.obj("spec")
    group = pb.PodGroup(
        namespace=meta.text("namespace"),
        name=meta.text("name"),
        uid=meta.text("uid"),
        resource_version=meta.resource_version(),
        creation_timestamp=meta.text("creationTimestamp"),
        priority_class_name=spec.text("priorityClassName"),
        preemption_policy=spec.text("preemptionPolicy"),
        parent_composite_pod_group_name=spec.text("parentCompositePodGroupName"),
    )
    # Presence matters: each policy and mode is set by being present.
    if spec.present("schedulingPolicy"):
        policy = spec.obj("schedulingPolicy")
        group.scheduling_policy.SetInParent()
        if policy.present("basic"):
            policy.obj("basic")
            group.scheduling_policy.basic.SetInParent()
        if policy.present("gang"):
            group.scheduling_policy.gang.min_count = policy.obj("gang").integer("minCount")
            group.scheduling_policy.gang.SetInParent()
    if spec.present("disruptionMode"):
        mode = spec.obj("disruptionMode")
        group.disruption_mode.SetInParent()
        if mode.present("single"):
            mode.obj("single")
            group.disruption_mode.single.SetInParent()
        if mode.present("all"):
            mode.obj("all")
            getattr(group.disruption_mode, "all").SetInParent()
    if spec.present("priority"):
        group.priority = spec.integer("priority")
    if spec.present("workloadRef"):
        ref = spec.obj("workloadRef")
        group.workload_ref.CopyFrom(
            pb.WorkloadReference(workload_name=ref.text("workloadName"), template_name=ref.text("templateName"))
        )
    return group


def workload_from_kube(obj: KubeObject) -> pb.Workload:
    """A scheduling.k8s.io/v1beta1 Workload as the typed Workload message."""
    return _workload(_At("", obj))


def _workload(o: _At) -> pb.Workload:
    meta = o.obj("metadata")
    return pb.Workload(
        namespace=meta.text("namespace"),
        name=meta.text("name"),
        uid=meta.text("uid"),
        resource_version=meta.resource_version(),
        pod_group_templates=[pb.PodGroupTemplate(name=t.text("name")) for t in o.obj("spec").array("podGroupTemplates")],
    )


_CONVERTERS: dict[str, Callable[[_At], TypedObject]] = {
    "Node": _node,
    "Pod": _pod,
    "PodDisruptionBudget": _pdb,
    "PodGroup": _pod_group,
    "Workload": _workload,
}


def from_kube(obj: KubeObject, kind: str | None = None, *, path: str = "") -> TypedObject:
    """A Node, Pod, PodDisruptionBudget, PodGroup or Workload (by `kind`, or the object's own) as its message.
    `path` prefixes the field paths of errors (e.g. "items[3]")."""
    at = _At(path, obj)
    kind = kind or at.text("kind")
    try:
        convert = _CONVERTERS[kind]
    except KeyError:
        raise ConversionError(
            at.at("kind"), f"unsupported kind {kind!r}: supported kinds are Node, Pod, PodDisruptionBudget, PodGroup, Workload"
        ) from None
    message: TypedObject = convert(at)
    return message


def list_items(kube_list: KubeObject) -> list[tuple[str, KubeObject]]:
    """The (kind, object) items of a `kubectl get ... -o json` List; items without a kind
    take it from a typed list's kind (PodList -> Pod). A single object is one item."""
    at = _At("", kube_list)
    list_kind = at.text("kind")
    if not list_kind.endswith("List") and "items" not in kube_list:
        return [(list_kind, kube_list)]
    default_kind = list_kind[: -len("List")] if list_kind.endswith("List") else ""
    items = []
    for index, item in enumerate(at.array("items")):
        kind = item.text("kind") or default_kind
        if kind not in _CONVERTERS:
            raise ConversionError(f"items[{index}].kind", f"unsupported kind {kind!r}")
        items.append((kind, item.m))
    return items
