"""Kubernetes objects (the JSON `kubectl get -o json` prints, as parsed dicts) to the typed
preemptd.v1 messages, field by field as the proto's comments map them.

The server applies the same defaulting to typed messages as to `upsert_json` (limits
default requests, empty namespace means "default", ...), with one exception the proto has
no field for: `spec.hostNetwork`, which the API server turns into `hostPort =
containerPort`; the converter applies it here. JSON `null` counts as a missing field, as in
Go's decoder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Union

from preemptd.v1 import preemptd_pb2 as pb

KubeObject = Mapping[str, Any]
TypedObject = Union[pb.Node, pb.Pod, pb.PodDisruptionBudget]

_EMPTY: Mapping[str, Any] = {}


def _obj(parent: KubeObject, key: str) -> KubeObject:
    value = parent.get(key)
    return value if isinstance(value, Mapping) else _EMPTY


def _list(parent: KubeObject, key: str) -> list[Any]:
    value = parent.get(key)
    return value if isinstance(value, list) else []


def _str(parent: KubeObject, key: str) -> str:
    value = parent.get(key)
    return "" if value is None else str(value)


def _int(parent: KubeObject, key: str) -> int:
    value = parent.get(key)
    return 0 if value is None else int(value)


def _present(parent: KubeObject, key: str) -> bool:
    return parent.get(key) is not None


def _quantity(value: Any) -> str:
    # Kubernetes accepts quantities as strings or JSON numbers.
    if isinstance(value, bool) or value is None:
        raise ValueError(f"expected a quantity, got {value!r}")
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _quantities(parent: KubeObject, key: str) -> dict[str, str]:
    return {name: _quantity(v) for name, v in _obj(parent, key).items() if v is not None}


def _strings(parent: KubeObject, key: str) -> dict[str, str]:
    return {k: str(v) for k, v in _obj(parent, key).items() if v is not None}


def _resource_version(meta: KubeObject) -> int:
    value = meta.get("resourceVersion")
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise ValueError(f"metadata.resourceVersion: invalid resource version {value!r}")


def _selector(value: KubeObject) -> pb.LabelSelector:
    return pb.LabelSelector(
        match_labels=_strings(value, "matchLabels"),
        match_expressions=[
            pb.LabelSelectorRequirement(
                key=_str(e, "key"),
                operator=_str(e, "operator"),
                values=[str(v) for v in _list(e, "values")],
            )
            for e in _list(value, "matchExpressions")
        ],
    )


def node_from_kube(obj: KubeObject) -> pb.Node:
    """A v1 Node as the typed Node message."""
    meta, spec, status = _obj(obj, "metadata"), _obj(obj, "spec"), _obj(obj, "status")
    return pb.Node(
        name=_str(meta, "name"),
        uid=_str(meta, "uid"),
        resource_version=_resource_version(meta),
        labels=_strings(meta, "labels"),
        taints=[
            pb.Taint(key=_str(t, "key"), value=_str(t, "value"), effect=_str(t, "effect"))
            for t in _list(spec, "taints")
        ],
        unschedulable=bool(spec.get("unschedulable")),
        allocatable=_quantities(status, "allocatable"),
        # Read by a placement policy's termination-notice signals.
        annotations=_strings(meta, "annotations"),
        conditions=[
            pb.NodeCondition(
                type=_str(c, "type"),
                status=_str(c, "status"),
                reason=_str(c, "reason"),
                message=_str(c, "message"),
            )
            for c in _list(status, "conditions")
        ],
    )


def _container(c: KubeObject, host_network: bool) -> pb.Container:
    resources = _obj(c, "resources")
    ports = []
    for p in _list(c, "ports"):
        host_port = _int(p, "hostPort")
        container_port = _int(p, "containerPort")
        if host_network and host_port == 0:
            host_port = container_port
        ports.append(
            pb.ContainerPort(
                host_port=host_port,
                protocol=_str(p, "protocol"),
                host_ip=_str(p, "hostIP"),
                container_port=container_port,
            )
        )
    return pb.Container(
        name=_str(c, "name"),
        requests=_quantities(resources, "requests"),
        limits=_quantities(resources, "limits"),
        ports=ports,
        restart_policy=_str(c, "restartPolicy"),
    )


def _node_selector_requirements(values: list[Any]) -> list[pb.NodeSelectorRequirement]:
    return [
        pb.NodeSelectorRequirement(
            key=_str(r, "key"),
            operator=_str(r, "operator"),
            values=[str(v) for v in _list(r, "values")],
        )
        for r in values
    ]


def _affinity_term(t: KubeObject) -> pb.PodAffinityTerm:
    term = pb.PodAffinityTerm(
        namespaces=[str(n) for n in _list(t, "namespaces")],
        topology_key=_str(t, "topologyKey"),
    )
    # Presence matters: an absent selector matches nothing, an empty one everything.
    if _present(t, "labelSelector"):
        term.label_selector.CopyFrom(_selector(_obj(t, "labelSelector")))
    if _present(t, "namespaceSelector"):
        term.namespace_selector.CopyFrom(_selector(_obj(t, "namespaceSelector")))
    return term


def _affinity(value: KubeObject) -> pb.Affinity:
    affinity = pb.Affinity()
    if _present(value, "nodeAffinity"):
        node_affinity = affinity.node_affinity
        node_affinity.SetInParent()
        required_key = "requiredDuringSchedulingIgnoredDuringExecution"
        required = _obj(value, "nodeAffinity")
        if _present(required, required_key):
            selector = node_affinity.required_during_scheduling_ignored_during_execution
            selector.SetInParent()
            for term in _list(_obj(required, required_key), "nodeSelectorTerms"):
                selector.node_selector_terms.append(
                    pb.NodeSelectorTerm(
                        match_expressions=_node_selector_requirements(
                            _list(term, "matchExpressions")
                        ),
                        match_fields=_node_selector_requirements(_list(term, "matchFields")),
                    )
                )
    for key, target in (
        ("podAffinity", affinity.pod_affinity),
        ("podAntiAffinity", affinity.pod_anti_affinity),
    ):
        if _present(value, key):
            target.SetInParent()
            terms = _list(_obj(value, key), "requiredDuringSchedulingIgnoredDuringExecution")
            target.required_during_scheduling_ignored_during_execution.extend(
                _affinity_term(t) for t in terms
            )
    return affinity


def _spread(c: KubeObject) -> pb.TopologySpreadConstraint:
    constraint = pb.TopologySpreadConstraint(
        max_skew=_int(c, "maxSkew"),
        topology_key=_str(c, "topologyKey"),
        when_unsatisfiable=_str(c, "whenUnsatisfiable"),
        match_label_keys=[str(k) for k in _list(c, "matchLabelKeys")],
        node_affinity_policy=_str(c, "nodeAffinityPolicy"),
        node_taints_policy=_str(c, "nodeTaintsPolicy"),
    )
    if _present(c, "labelSelector"):
        constraint.label_selector.CopyFrom(_selector(_obj(c, "labelSelector")))
    if _present(c, "minDomains"):
        constraint.min_domains = _int(c, "minDomains")
    return constraint


def _toleration(t: KubeObject) -> pb.Toleration:
    toleration = pb.Toleration(
        key=_str(t, "key"),
        operator=_str(t, "operator"),
        value=_str(t, "value"),
        effect=_str(t, "effect"),
    )
    if _present(t, "tolerationSeconds"):
        toleration.toleration_seconds = _int(t, "tolerationSeconds")
    return toleration


def pod_from_kube(obj: KubeObject) -> pb.Pod:
    """A v1 Pod as the typed Pod message."""
    meta, spec, status = _obj(obj, "metadata"), _obj(obj, "spec"), _obj(obj, "status")
    host_network = bool(spec.get("hostNetwork"))
    pod = pb.Pod(
        namespace=_str(meta, "namespace"),
        name=_str(meta, "name"),
        uid=_str(meta, "uid"),
        resource_version=_resource_version(meta),
        labels=_strings(meta, "labels"),
        node_name=_str(spec, "nodeName"),
        scheduler_name=_str(spec, "schedulerName"),
        priority_class_name=_str(spec, "priorityClassName"),
        preemption_policy=_str(spec, "preemptionPolicy"),
        containers=[_container(c, host_network) for c in _list(spec, "containers")],
        init_containers=[_container(c, host_network) for c in _list(spec, "initContainers")],
        overhead=_quantities(spec, "overhead"),
        tolerations=[_toleration(t) for t in _list(spec, "tolerations")],
        node_selector=_strings(spec, "nodeSelector"),
        topology_spread_constraints=[_spread(c) for c in _list(spec, "topologySpreadConstraints")],
        start_time=_str(status, "startTime"),
        deletion_timestamp=_str(meta, "deletionTimestamp"),
        conditions=[
            pb.PodCondition(type=_str(c, "type"), status=_str(c, "status"), reason=_str(c, "reason"))
            for c in _list(status, "conditions")
        ],
        nominated_node_name=_str(status, "nominatedNodeName"),
        phase=_str(status, "phase"),
    )
    if _present(spec, "priority"):
        pod.priority = _int(spec, "priority")
    if _present(spec, "resources"):
        resources = _obj(spec, "resources")
        pod.resources.CopyFrom(
            pb.ResourceRequirements(
                requests=_quantities(resources, "requests"),
                limits=_quantities(resources, "limits"),
            )
        )
    if _present(spec, "affinity"):
        pod.affinity.CopyFrom(_affinity(_obj(spec, "affinity")))
    return pod


def pdb_from_kube(obj: KubeObject) -> pb.PodDisruptionBudget:
    """A policy/v1 PodDisruptionBudget as the typed PodDisruptionBudget message."""
    meta, spec, status = _obj(obj, "metadata"), _obj(obj, "spec"), _obj(obj, "status")
    pdb = pb.PodDisruptionBudget(
        namespace=_str(meta, "namespace"),
        name=_str(meta, "name"),
        uid=_str(meta, "uid"),
        resource_version=_resource_version(meta),
        disruptions_allowed=_int(status, "disruptionsAllowed"),
        # status.disruptedPods maps pod name to the time it was disrupted.
        disrupted_pods=list(_obj(status, "disruptedPods").keys()),
    )
    if _present(spec, "selector"):
        pdb.selector.CopyFrom(_selector(_obj(spec, "selector")))
    return pdb


_CONVERTERS: dict[str, Callable[[KubeObject], TypedObject]] = {
    "Node": node_from_kube,
    "Pod": pod_from_kube,
    "PodDisruptionBudget": pdb_from_kube,
}


def from_kube(obj: KubeObject, kind: str | None = None) -> TypedObject:
    """A Node, Pod or PodDisruptionBudget (by `kind`, or the object's own) as its message."""
    kind = kind or _str(obj, "kind")
    try:
        convert = _CONVERTERS[kind]
    except KeyError:
        raise ValueError(
            f"unsupported kind {kind!r}: supported kinds are Node, Pod, PodDisruptionBudget"
        ) from None
    message: TypedObject = convert(obj)
    return message


def list_items(kube_list: KubeObject) -> list[tuple[str, KubeObject]]:
    """The (kind, object) items of a `kubectl get ... -o json` List; items without a kind
    take it from a typed list's kind (PodList -> Pod). A single object is one item."""
    list_kind = _str(kube_list, "kind")
    if not list_kind.endswith("List") and "items" not in kube_list:
        return [(list_kind, kube_list)]
    default_kind = list_kind[: -len("List")] if list_kind.endswith("List") else ""
    items = []
    for index, item in enumerate(_list(kube_list, "items")):
        kind = _str(item, "kind") or default_kind
        if kind not in _CONVERTERS:
            raise ValueError(f"items[{index}].kind: unsupported kind {kind!r}")
        items.append((kind, item))
    return items
