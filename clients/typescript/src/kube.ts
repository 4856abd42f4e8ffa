// Kubernetes objects (the JSON `kubectl get -o json` prints, parsed) to the typed preemptd.v1
// messages, field by field as the proto's comments map them.
//
// The server applies the same defaulting to typed messages as to `upsertJson` (limits
// default requests, empty namespace means "default", ...), with one exception the proto has
// no field for: `spec.hostNetwork`, which the API server turns into `hostPort =
// containerPort`; the converter applies it here. JSON `null` counts as a missing field, as
// in Go's decoder.

import {
  Affinity,
  Container,
  LabelSelector,
  Node,
  NodeSelectorRequirement,
  Pod,
  PodAffinityTerm,
  PodDisruptionBudget,
  TopologySpreadConstraint,
  Toleration,
} from "./gen/preemptd/v1/preemptd";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type KubeObject = { [key: string]: any };
export type Kind = "Node" | "Pod" | "PodDisruptionBudget";
export type TypedObject =
  | { kind: "Node"; node: Node }
  | { kind: "Pod"; pod: Pod }
  | { kind: "PodDisruptionBudget"; pdb: PodDisruptionBudget };

const KINDS: readonly string[] = ["Node", "Pod", "PodDisruptionBudget"];

function obj(parent: KubeObject, key: string): KubeObject {
  const value = parent[key];
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : {};
}

function list(parent: KubeObject, key: string): KubeObject[] {
  const value = parent[key];
  return Array.isArray(value) ? value : [];
}

function str(parent: KubeObject, key: string): string {
  const value = parent[key];
  return value === undefined || value === null ? "" : String(value);
}

function int(parent: KubeObject, key: string): number {
  const value = parent[key];
  return value === undefined || value === null ? 0 : Number(value);
}

function present(parent: KubeObject, key: string): boolean {
  return parent[key] !== undefined && parent[key] !== null;
}

function strings(parent: KubeObject, key: string): { [key: string]: string } {
  const out: { [key: string]: string } = {};
  for (const [k, v] of Object.entries(obj(parent, key))) {
    if (v !== null && v !== undefined) out[k] = String(v);
  }
  return out;
}

function quantities(parent: KubeObject, key: string): { [key: string]: string } {
  const out: { [key: string]: string } = {};
  for (const [name, v] of Object.entries(obj(parent, key))) {
    if (v === null || v === undefined) continue;
    // Kubernetes accepts quantities as strings or JSON numbers.
    if (typeof v !== "string" && typeof v !== "number") {
      throw new Error(`${key}[${name}]: expected a quantity, got ${JSON.stringify(v)}`);
    }
    out[name] = String(v);
  }
  return out;
}

function resourceVersion(meta: KubeObject): bigint {
  const value = meta["resourceVersion"];
  if (value === undefined || value === null || value === "") return 0n;
  if (typeof value === "number" && Number.isInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === "string" && /^[0-9]+$/.test(value)) return BigInt(value);
  throw new Error(`metadata.resourceVersion: invalid resource version ${JSON.stringify(value)}`);
}

function selector(value: KubeObject): LabelSelector {
  return {
    matchLabels: strings(value, "matchLabels"),
    matchExpressions: list(value, "matchExpressions").map((e) => ({
      key: str(e, "key"),
      operator: str(e, "operator"),
      values: list(e, "values").map(String),
    })),
  };
}

/** A v1 Node as the typed Node message. */
export function nodeFromKube(o: KubeObject): Node {
  const meta = obj(o, "metadata");
  const spec = obj(o, "spec");
  const status = obj(o, "status");
  return {
    name: str(meta, "name"),
    uid: str(meta, "uid"),
    resourceVersion: resourceVersion(meta),
    labels: strings(meta, "labels"),
    taints: list(spec, "taints").map((t) => ({
      key: str(t, "key"),
      value: str(t, "value"),
      effect: str(t, "effect"),
    })),
    unschedulable: Boolean(spec["unschedulable"]),
    allocatable: quantities(status, "allocatable"),
    // Read by a placement policy's termination-notice signals.
    annotations: strings(meta, "annotations"),
    conditions: list(status, "conditions").map((c) => ({
      type: str(c, "type"),
      status: str(c, "status"),
      reason: str(c, "reason"),
      message: str(c, "message"),
    })),
  };
}

function container(c: KubeObject, hostNetwork: boolean): Container {
  const resources = obj(c, "resources");
  return {
    name: str(c, "name"),
    requests: quantities(resources, "requests"),
    limits: quantities(resources, "limits"),
    ports: list(c, "ports").map((p) => {
      const containerPort = int(p, "containerPort");
      let hostPort = int(p, "hostPort");
      if (hostNetwork && hostPort === 0) hostPort = containerPort;
      return { hostPort, protocol: str(p, "protocol"), hostIp: str(p, "hostIP"), containerPort };
    }),
    restartPolicy: str(c, "restartPolicy"),
  };
}

function nodeSelectorRequirements(values: KubeObject[]): NodeSelectorRequirement[] {
  return values.map((r) => ({
    key: str(r, "key"),
    operator: str(r, "operator"),
    values: list(r, "values").map(String),
  }));
}

function affinityTerm(t: KubeObject): PodAffinityTerm {
  // Presence matters: an absent selector matches nothing, an empty one everything.
  return {
    labelSelector: present(t, "labelSelector") ? selector(obj(t, "labelSelector")) : undefined,
    namespaces: list(t, "namespaces").map(String),
    namespaceSelector: present(t, "namespaceSelector")
      ? selector(obj(t, "namespaceSelector"))
      : undefined,
    topologyKey: str(t, "topologyKey"),
  };
}

const REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution";

function affinity(value: KubeObject): Affinity {
  const nodeAffinity = obj(value, "nodeAffinity");
  const podTerms = (key: string) => ({
    requiredDuringSchedulingIgnoredDuringExecution: list(obj(value, key), REQUIRED).map(affinityTerm),
  });
  return {
    nodeAffinity: present(value, "nodeAffinity")
      ? {
          requiredDuringSchedulingIgnoredDuringExecution: present(nodeAffinity, REQUIRED)
            ? {
                nodeSelectorTerms: list(obj(nodeAffinity, REQUIRED), "nodeSelectorTerms").map(
                  (term) => ({
                    matchExpressions: nodeSelectorRequirements(list(term, "matchExpressions")),
                    matchFields: nodeSelectorRequirements(list(term, "matchFields")),
                  }),
                ),
              }
            : undefined,
        }
      : undefined,
    podAffinity: present(value, "podAffinity") ? podTerms("podAffinity") : undefined,
    podAntiAffinity: present(value, "podAntiAffinity") ? podTerms("podAntiAffinity") : undefined,
  };
}

function spread(c: KubeObject): TopologySpreadConstraint {
  return {
    maxSkew: int(c, "maxSkew"),
    topologyKey: str(c, "topologyKey"),
    whenUnsatisfiable: str(c, "whenUnsatisfiable"),
    labelSelector: present(c, "labelSelector") ? selector(obj(c, "labelSelector")) : undefined,
    minDomains: present(c, "minDomains") ? int(c, "minDomains") : undefined,
    matchLabelKeys: list(c, "matchLabelKeys").map(String),
    nodeAffinityPolicy: str(c, "nodeAffinityPolicy"),
    nodeTaintsPolicy: str(c, "nodeTaintsPolicy"),
  };
}

function toleration(t: KubeObject): Toleration {
  return {
    key: str(t, "key"),
    operator: str(t, "operator"),
    value: str(t, "value"),
    effect: str(t, "effect"),
    tolerationSeconds: present(t, "tolerationSeconds") ? BigInt(int(t, "tolerationSeconds")) : undefined,
  };
}

/** A v1 Pod as the typed Pod message. */
export function podFromKube(o: KubeObject): Pod {
  const meta = obj(o, "metadata");
  const spec = obj(o, "spec");
  const status = obj(o, "status");
  const hostNetwork = Boolean(spec["hostNetwork"]);
  const resources = obj(spec, "resources");
  return {
    namespace: str(meta, "namespace"),
    name: str(meta, "name"),
    uid: str(meta, "uid"),
    resourceVersion: resourceVersion(meta),
    labels: strings(meta, "labels"),
    nodeName: str(spec, "nodeName"),
    schedulerName: str(spec, "schedulerName"),
    priority: present(spec, "priority") ? int(spec, "priority") : undefined,
    priorityClassName: str(spec, "priorityClassName"),
    preemptionPolicy: str(spec, "preemptionPolicy"),
    containers: list(spec, "containers").map((c) => container(c, hostNetwork)),
    initContainers: list(spec, "initContainers").map((c) => container(c, hostNetwork)),
    overhead: quantities(spec, "overhead"),
    resources: present(spec, "resources")
      ? { requests: quantities(resources, "requests"), limits: quantities(resources, "limits") }
      : undefined,
    tolerations: list(spec, "tolerations").map(toleration),
    nodeSelector: strings(spec, "nodeSelector"),
    affinity: present(spec, "affinity") ? affinity(obj(spec, "affinity")) : undefined,
    topologySpreadConstraints: list(spec, "topologySpreadConstraints").map(spread),
    startTime: str(status, "startTime"),
    deletionTimestamp: str(meta, "deletionTimestamp"),
    conditions: list(status, "conditions").map((c) => ({
      type: str(c, "type"),
      status: str(c, "status"),
      reason: str(c, "reason"),
    })),
    nominatedNodeName: str(status, "nominatedNodeName"),
    phase: str(status, "phase"),
  };
}

/** A policy/v1 PodDisruptionBudget as the typed PodDisruptionBudget message. */
export function pdbFromKube(o: KubeObject): PodDisruptionBudget {
  const meta = obj(o, "metadata");
  const spec = obj(o, "spec");
  const status = obj(o, "status");
  return {
    namespace: str(meta, "namespace"),
    name: str(meta, "name"),
    uid: str(meta, "uid"),
    resourceVersion: resourceVersion(meta),
    selector: present(spec, "selector") ? selector(obj(spec, "selector")) : undefined,
    disruptionsAllowed: int(status, "disruptionsAllowed"),
    // status.disruptedPods maps pod name to the time it was disrupted.
    disruptedPods: Object.keys(obj(status, "disruptedPods")),
  };
}

/** A Node, Pod or PodDisruptionBudget (by `kind`, or the object's own) as its message. */
export function fromKube(o: KubeObject, kind?: string): TypedObject {
  const k = kind ?? str(o, "kind");
  switch (k) {
    case "Node":
      return { kind: "Node", node: nodeFromKube(o) };
    case "Pod":
      return { kind: "Pod", pod: podFromKube(o) };
    case "PodDisruptionBudget":
      return { kind: "PodDisruptionBudget", pdb: pdbFromKube(o) };
    default:
      throw new Error(`unsupported kind ${JSON.stringify(k)}: supported kinds are Node, Pod, PodDisruptionBudget`);
  }
}

/**
 * The items of a `kubectl get ... -o json` List, each with its kind set; items without a
 * kind take it from a typed list's kind (PodList -> Pod). A single object is one item.
 */
export function listItems(kubeList: KubeObject): KubeObject[] {
  const listKind = str(kubeList, "kind");
  if (!listKind.endsWith("List") && !("items" in kubeList)) return [kubeList];
  const defaultKind = listKind.endsWith("List") ? listKind.slice(0, -"List".length) : "";
  return list(kubeList, "items").map((item, index) => {
    const kind = str(item, "kind") || defaultKind;
    if (!KINDS.includes(kind)) {
      throw new Error(`items[${index}].kind: unsupported kind ${JSON.stringify(kind)}`);
    }
    return { ...item, kind };
  });
}
