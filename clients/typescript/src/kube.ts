// Kubernetes objects (the JSON `kubectl get -o json` prints, parsed) to the typed preemptd.v1
// messages, field by field as the proto's comments map them.
//
// The server applies the same defaulting to typed messages as to `upsertJson` (limits
// default requests, empty namespace means "default", ...), with one exception the proto has
// no field for: `spec.hostNetwork`, which the API server turns into `hostPort =
// containerPort`; the converter applies it here. JSON `null` counts as a missing field, as
// in Go's decoder. A value of the wrong JSON type is refused with a ConversionError naming
// its field path (`spec.containers[0].resources.requests[cpu]`), never turned into NaN; the
// values themselves (quantities, enum strings) are checked by the server.

import {
  Affinity,
  Container,
  LabelSelector,
  Node,
  NodeSelectorRequirement,
  Pod,
  PodAffinityTerm,
  PodDisruptionBudget,
  PodGroup,
  TopologySpreadConstraint,
  Toleration,
  Workload,
} from "./gen/preemptd/v1/preemptd";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type KubeObject = { [key: string]: any };
export type Kind = "Node" | "Pod" | "PodDisruptionBudget" | "PodGroup" | "Workload";
export type TypedObject =
  | { kind: "Node"; node: Node }
  | { kind: "Pod"; pod: Pod }
  | { kind: "PodDisruptionBudget"; pdb: PodDisruptionBudget }
  | { kind: "PodGroup"; podGroup: PodGroup }
  | { kind: "Workload"; workload: Workload };

const KINDS: readonly string[] = ["Node", "Pod", "PodDisruptionBudget", "PodGroup", "Workload"];
const SUPPORTED_KINDS = "Node, Pod, PodDisruptionBudget, PodGroup, Workload";

/** A Kubernetes object field of the wrong shape; `path` is its JSON path. */
export class ConversionError extends Error {
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`${path}: ${problem}`);
    this.name = "ConversionError";
  }
}

const show = (value: unknown): string => (typeof value === "bigint" ? String(value) : JSON.stringify(value));
const isObject = (value: unknown): value is KubeObject =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** A JSON object read with field paths in errors. Missing fields and null read as zero. */
class At {
  readonly m: KubeObject;

  constructor(
    readonly path: string,
    value: unknown,
  ) {
    if (value !== undefined && value !== null && !isObject(value)) {
      throw new ConversionError(path || "(object)", `expected an object, got ${show(value)}`);
    }
    this.m = isObject(value) ? value : {};
  }

  at(key: string): string {
    return this.path ? `${this.path}.${key}` : key;
  }

  present(key: string): boolean {
    return this.m[key] !== undefined && this.m[key] !== null;
  }

  obj(key: string): At {
    return new At(this.at(key), this.m[key]);
  }

  private raw(key: string): unknown[] {
    const value = this.m[key];
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) throw new ConversionError(this.at(key), `expected a list, got ${show(value)}`);
    return value;
  }

  list(key: string): At[] {
    return this.raw(key).map((v, i) => new At(`${this.at(key)}[${i}]`, v));
  }

  str(key: string): string {
    const value = this.m[key];
    if (value === undefined || value === null) return "";
    if (typeof value !== "string") throw new ConversionError(this.at(key), `expected a string, got ${show(value)}`);
    return value;
  }

  bool(key: string): boolean {
    const value = this.m[key];
    if (value === undefined || value === null) return false;
    if (typeof value !== "boolean") throw new ConversionError(this.at(key), `expected a boolean, got ${show(value)}`);
    return value;
  }

  int(key: string): number {
    const value = this.m[key];
    if (value === undefined || value === null) return 0;
    if (typeof value !== "number" || !Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31) {
      throw new ConversionError(this.at(key), `expected a 32-bit integer, got ${show(value)}`);
    }
    return value;
  }

  int64(key: string): bigint {
    const value = this.m[key];
    if (value === undefined || value === null) return 0n;
    if (typeof value !== "number" || !Number.isSafeInteger(value)) {
      throw new ConversionError(this.at(key), `expected a 64-bit integer, got ${show(value)}`);
    }
    return BigInt(value);
  }

  strList(key: string): string[] {
    return this.raw(key).map((v, i) => {
      if (typeof v !== "string") throw new ConversionError(`${this.at(key)}[${i}]`, `expected a string, got ${show(v)}`);
      return v;
    });
  }

  strings(key: string): { [key: string]: string } {
    const out: { [key: string]: string } = {};
    for (const [name, v] of Object.entries(this.obj(key).m)) {
      if (typeof v !== "string") throw new ConversionError(`${this.at(key)}[${name}]`, `expected a string, got ${show(v)}`);
      out[name] = v;
    }
    return out;
  }

  /** A resource list: quantities are strings or JSON numbers; null is zero (as Kubernetes reads it). */
  quantities(key: string): { [key: string]: string } {
    const out: { [key: string]: string } = {};
    for (const [name, v] of Object.entries(this.obj(key).m)) {
      if (v === null || v === undefined) out[name] = "0";
      else if (typeof v === "string" || (typeof v === "number" && Number.isFinite(v))) out[name] = String(v);
      else {
        throw new ConversionError(`${this.at(key)}[${name}]`, `expected a quantity (a string or a number), got ${show(v)}`);
      }
    }
    return out;
  }

  resourceVersion(): bigint {
    const value = this.m["resourceVersion"];
    if (value === undefined || value === null || value === "") return 0n;
    if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
    if (typeof value === "string" && /^[0-9]+$/.test(value)) return BigInt(value);
    throw new ConversionError(this.at("resourceVersion"), `invalid resource version ${show(value)}`);
  }
}

function selector(value: At): LabelSelector {
  return {
    matchLabels: value.strings("matchLabels"),
    matchExpressions: value.list("matchExpressions").map((e) => ({
      key: e.str("key"),
      operator: e.str("operator"),
      values: e.strList("values"),
    })),
  };
}

/** A v1 Node as the typed Node message. */
export function nodeFromKube(o: KubeObject): Node {
  return node(new At("", o));
}

function node(o: At): Node {
  const meta = o.obj("metadata");
  const spec = o.obj("spec");
  const status = o.obj("status");
  return {
    name: meta.str("name"),
    uid: meta.str("uid"),
    resourceVersion: meta.resourceVersion(),
    labels: meta.strings("labels"),
    taints: spec.list("taints").map((t) => ({ key: t.str("key"), value: t.str("value"), effect: t.str("effect") })),
    unschedulable: spec.bool("unschedulable"),
    allocatable: status.quantities("allocatable"),
    // Read by a placement policy's termination-notice signals.
    annotations: meta.strings("annotations"),
    conditions: status.list("conditions").map((c) => ({
      type: c.str("type"),
      status: c.str("status"),
      reason: c.str("reason"),
      message: c.str("message"),
    })),
    // Read by scoring (ImageLocality).
    images: status.list("images").map((i) => ({ names: i.strList("names"), sizeBytes: i.int64("sizeBytes") })),
  };
}

function container(c: At, hostNetwork: boolean): Container {
  const resources = c.obj("resources");
  return {
    name: c.str("name"),
    image: c.str("image"),
    requests: resources.quantities("requests"),
    limits: resources.quantities("limits"),
    ports: c.list("ports").map((p) => {
      const containerPort = p.int("containerPort");
      let hostPort = p.int("hostPort");
      if (hostNetwork && hostPort === 0) hostPort = containerPort;
      return { hostPort, protocol: p.str("protocol"), hostIp: p.str("hostIP"), containerPort };
    }),
    restartPolicy: c.str("restartPolicy"),
  };
}

function nodeSelectorRequirements(values: At[]): NodeSelectorRequirement[] {
  return values.map((r) => ({ key: r.str("key"), operator: r.str("operator"), values: r.strList("values") }));
}

function affinityTerm(t: At): PodAffinityTerm {
  // Presence matters: an absent selector matches nothing, an empty one everything.
  return {
    labelSelector: t.present("labelSelector") ? selector(t.obj("labelSelector")) : undefined,
    namespaces: t.strList("namespaces"),
    namespaceSelector: t.present("namespaceSelector") ? selector(t.obj("namespaceSelector")) : undefined,
    topologyKey: t.str("topologyKey"),
  };
}

const REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution";
const PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution";

const nodeSelectorTerm = (term: At) => ({
  matchExpressions: nodeSelectorRequirements(term.list("matchExpressions")),
  matchFields: nodeSelectorRequirements(term.list("matchFields")),
});

function affinity(value: At): Affinity {
  const nodeAffinity = value.obj("nodeAffinity");
  const podTerms = (key: string) => ({
    requiredDuringSchedulingIgnoredDuringExecution: value.obj(key).list(REQUIRED).map(affinityTerm),
    preferredDuringSchedulingIgnoredDuringExecution: value
      .obj(key)
      .list(PREFERRED)
      .map((w) => ({
        weight: w.int("weight"),
        podAffinityTerm: w.present("podAffinityTerm") ? affinityTerm(w.obj("podAffinityTerm")) : undefined,
      })),
  });
  return {
    nodeAffinity: value.present("nodeAffinity")
      ? {
          requiredDuringSchedulingIgnoredDuringExecution: nodeAffinity.present(REQUIRED)
            ? {
                nodeSelectorTerms: nodeAffinity
                  .obj(REQUIRED)
                  .list("nodeSelectorTerms")
                  .map(nodeSelectorTerm),
              }
            : undefined,
          preferredDuringSchedulingIgnoredDuringExecution: nodeAffinity.list(PREFERRED).map((p) => ({
            weight: p.int("weight"),
            preference: p.present("preference") ? nodeSelectorTerm(p.obj("preference")) : undefined,
          })),
        }
      : undefined,
    podAffinity: value.present("podAffinity") ? podTerms("podAffinity") : undefined,
    podAntiAffinity: value.present("podAntiAffinity") ? podTerms("podAntiAffinity") : undefined,
  };
}

function spread(c: At): TopologySpreadConstraint {
  return {
    maxSkew: c.int("maxSkew"),
    topologyKey: c.str("topologyKey"),
    whenUnsatisfiable: c.str("whenUnsatisfiable"),
    labelSelector: c.present("labelSelector") ? selector(c.obj("labelSelector")) : undefined,
    minDomains: c.present("minDomains") ? c.int("minDomains") : undefined,
    matchLabelKeys: c.strList("matchLabelKeys"),
    nodeAffinityPolicy: c.str("nodeAffinityPolicy"),
    nodeTaintsPolicy: c.str("nodeTaintsPolicy"),
  };
}

function toleration(t: At): Toleration {
  return {
    key: t.str("key"),
    operator: t.str("operator"),
    value: t.str("value"),
    effect: t.str("effect"),
    tolerationSeconds: t.present("tolerationSeconds") ? t.int64("tolerationSeconds") : undefined,
  };
}

/** A v1 Pod as the typed Pod message. */
export function podFromKube(o: KubeObject): Pod {
  return pod(new At("", o));
}

function pod(o: At): Pod {
  const meta = o.obj("metadata");
  const spec = o.obj("spec");
  const status = o.obj("status");
  const hostNetwork = spec.bool("hostNetwork");
  const resources = spec.obj("resources");
  return {
    namespace: meta.str("namespace"),
    name: meta.str("name"),
    uid: meta.str("uid"),
    resourceVersion: meta.resourceVersion(),
    labels: meta.strings("labels"),
    nodeName: spec.str("nodeName"),
    schedulerName: spec.str("schedulerName"),
    priority: spec.present("priority") ? spec.int("priority") : undefined,
    priorityClassName: spec.str("priorityClassName"),
    preemptionPolicy: spec.str("preemptionPolicy"),
    containers: spec.list("containers").map((c) => container(c, hostNetwork)),
    initContainers: spec.list("initContainers").map((c) => container(c, hostNetwork)),
    overhead: spec.quantities("overhead"),
    resources: spec.present("resources")
      ? { requests: resources.quantities("requests"), limits: resources.quantities("limits") }
      : undefined,
    tolerations: spec.list("tolerations").map(toleration),
    nodeSelector: spec.strings("nodeSelector"),
    affinity: spec.present("affinity") ? affinity(spec.obj("affinity")) : undefined,
    topologySpreadConstraints: spec.list("topologySpreadConstraints").map(spread),
    startTime: status.str("startTime"),
    deletionTimestamp: meta.str("deletionTimestamp"),
    conditions: status.list("conditions").map((c) => ({
      type: c.str("type"),
      status: c.str("status"),
      reason: c.str("reason"),
    })),
    nominatedNodeName: status.str("nominatedNodeName"),
    phase: status.str("phase"),
    schedulingGroup: spec.present("schedulingGroup")
      ? { podGroupName: spec.obj("schedulingGroup").str("podGroupName") }
      : undefined,
  };
}

/** A policy/v1 PodDisruptionBudget as the typed PodDisruptionBudget message. */
export function pdbFromKube(o: KubeObject): PodDisruptionBudget {
  return pdb(new At("", o));
}

function pdb(o: At): PodDisruptionBudget {
  const meta = o.obj("metadata");
  const spec = o.obj("spec");
  const status = o.obj("status");
  return {
    namespace: meta.str("namespace"),
    name: meta.str("name"),
    uid: meta.str("uid"),
    resourceVersion: meta.resourceVersion(),
    selector: spec.present("selector") ? selector(spec.obj("selector")) : undefined,
    disruptionsAllowed: status.int("disruptionsAllowed"),
    // status.disruptedPods maps pod name to the time it was disrupted.
    disruptedPods: Object.keys(status.obj("disruptedPods").m),
  };
}

/** A scheduling.k8s.io/v1beta1 PodGroup as the typed PodGroup message. */
export function podGroupFromKube(o: KubeObject): PodGroup {
  return podGroup(new At("", o));
}

// Presence matters: each scheduling policy and disruption mode is set by being present.
function podGroup(o: At): PodGroup {
  const meta = o.obj("metadata");
  const spec = o.obj("spec");
  const policy = spec.obj("schedulingPolicy");
  const mode = spec.obj("disruptionMode");
  const ref = spec.obj("workloadRef");
  // Set by being present; obj() refuses a value that is not an object.
  const presence = (parent: At, key: string) => {
    if (!parent.present(key)) return undefined;
    parent.obj(key);
    return {};
  };
  return {
    namespace: meta.str("namespace"),
    name: meta.str("name"),
    uid: meta.str("uid"),
    resourceVersion: meta.resourceVersion(),
    creationTimestamp: meta.str("creationTimestamp"),
    schedulingPolicy: spec.present("schedulingPolicy")
      ? {
          basic: presence(policy, "basic"),
          gang: policy.present("gang") ? { minCount: policy.obj("gang").int("minCount") } : undefined,
        }
      : undefined,
    disruptionMode: spec.present("disruptionMode")
      ? { single: presence(mode, "single"), all: presence(mode, "all") }
      : undefined,
    priorityClassName: spec.str("priorityClassName"),
    priority: spec.present("priority") ? spec.int("priority") : undefined,
    preemptionPolicy: spec.str("preemptionPolicy"),
    parentCompositePodGroupName: spec.str("parentCompositePodGroupName"),
    workloadRef: spec.present("workloadRef")
      ? { workloadName: ref.str("workloadName"), templateName: ref.str("templateName") }
      : undefined,
  };
}

/** A scheduling.k8s.io/v1beta1 Workload as the typed Workload message. */
export function workloadFromKube(o: KubeObject): Workload {
  return workload(new At("", o));
}

function workload(o: At): Workload {
  const meta = o.obj("metadata");
  return {
    namespace: meta.str("namespace"),
    name: meta.str("name"),
    uid: meta.str("uid"),
    resourceVersion: meta.resourceVersion(),
    podGroupTemplates: o
      .obj("spec")
      .list("podGroupTemplates")
      .map((t) => ({ name: t.str("name") })),
  };
}

/**
 * A Node, Pod, PodDisruptionBudget, PodGroup or Workload (by `kind`, or the object's own) as its message. `path`
 * prefixes the field paths of errors (e.g. "items[3]").
 */
export function fromKube(o: KubeObject, kind?: string, path = ""): TypedObject {
  const at = new At(path, o);
  const k = kind ?? at.str("kind");
  switch (k) {
    case "Node":
      return { kind: "Node", node: node(at) };
    case "Pod":
      return { kind: "Pod", pod: pod(at) };
    case "PodDisruptionBudget":
      return { kind: "PodDisruptionBudget", pdb: pdb(at) };
    case "PodGroup":
      return { kind: "PodGroup", podGroup: podGroup(at) };
    case "Workload":
      return { kind: "Workload", workload: workload(at) };
    default:
      throw new ConversionError(at.at("kind"), `unsupported kind ${JSON.stringify(k)}: supported kinds are ${SUPPORTED_KINDS}`);
  }
}

/**
 * The items of a `kubectl get ... -o json` List, each with its kind set; items without a
 * kind take it from a typed list's kind (PodList -> Pod). A single object is one item.
 */
export function listItems(kubeList: KubeObject): KubeObject[] {
  const at = new At("", kubeList);
  const listKind = at.str("kind");
  if (!listKind.endsWith("List") && !("items" in kubeList)) return [kubeList];
  const defaultKind = listKind.endsWith("List") ? listKind.slice(0, -"List".length) : "";
  return at.list("items").map((item, index) => {
    const kind = item.str("kind") || defaultKind;
    if (!KINDS.includes(kind)) {
      throw new ConversionError(`items[${index}].kind`, `unsupported kind ${JSON.stringify(kind)}`);
    }
    return { ...item.m, kind };
  });
}
