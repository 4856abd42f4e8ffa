//! Random preemption scenarios: a v1 List (Nodes, Pods, PodDisruptionBudgets) and a preemptor
//! Pod, covering every rule the engine implements. Every bound or nominated pod gets a distinct
//! `status.startTime`, because upstream compares a pod without one using `time.Now()` at each
//! comparison, which would order equal priorities by accident.

use rand::Rng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

mod budgets;
mod gangs;

/// One generated case, in the inputs `preemptd simulate` reads.
pub struct Scenario {
    pub cluster: Value,
    pub preemptor: Value,
}

const NAMESPACES: [&str; 3] = ["default", "team-a", "team-b"];
const APPS: [&str; 4] = ["web", "db", "batch", "cache"];
const ZONES: [&str; 3] = ["a", "b", "c"];
const PRIORITIES: [i64; 5] = [0, 10, 100, 500, 1000];
const TAINT_KEYS: [&str; 3] = ["dedicated", "gpu", "maintenance"];
const TAINT_VALUES: [&str; 2] = ["x", "y"];
const EFFECTS: [&str; 3] = ["NoSchedule", "NoExecute", "PreferNoSchedule"];
const GPU: &str = "example.com/gpu";
const HUGEPAGES: &str = "hugepages-2Mi";

struct Ctx<'a> {
    rng: &'a mut ChaCha8Rng,
    nodes: Vec<String>,
    /// Distinct start-time slots, handed out in a shuffled order so that the start time does
    /// not follow the pod's index.
    start_slots: Vec<u32>,
}

impl Ctx<'_> {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<'b, T>(&mut self, items: &'b [T]) -> &'b T {
        items.choose(self.rng).expect("non-empty choice")
    }

    fn start_time(&mut self) -> String {
        let slot = self.start_slots.pop().unwrap_or(0);
        let (h, m, s) = (slot / 3600, (slot / 60) % 60, slot % 60);
        format!("2026-01-01T{h:02}:{m:02}:{s:02}Z")
    }
}

/// The feature gates that change what the generator makes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gates {
    /// GenericWorkload=true: most cases hold PodGroups (see gangs.rs), the rest are the
    /// gate-off cases.
    pub generic_workload: bool,
}

/// Generates one case for `gates`; with every gate off exactly `scenario`'s case.
pub fn scenario_for(rng: &mut ChaCha8Rng, gates: Gates) -> Scenario {
    if !gates.generic_workload || rng.random_range(0..10) < 2 {
        return scenario(rng);
    }
    // Under 100 nodes: upstream then scores every feasible node.
    let node_count = match rng.random_range(0..100) {
        0..60 => rng.random_range(1..=6),
        60..90 => rng.random_range(7..=30),
        _ => rng.random_range(31..=99),
    };
    let nodes: Vec<String> = (1..=node_count).map(|i| format!("n{i}")).collect();
    let mut slots: Vec<u32> = (0..28_000).map(|i| i * 3).collect();
    slots.shuffle(rng);
    let mut ctx = Ctx {
        rng,
        nodes,
        start_slots: slots,
    };
    let profile = NodeProfile::random(&mut ctx);
    gangs::scenario(&mut ctx, &profile)
}

/// Generates case `index` of a run seeded with `seed`.
pub fn scenario(rng: &mut ChaCha8Rng) -> Scenario {
    let node_count = match rng.random_range(0..100) {
        0..70 => rng.random_range(1..=6),
        70..92 => rng.random_range(7..=30),
        _ => rng.random_range(31..=300),
    };
    let nodes: Vec<String> = (1..=node_count).map(|i| format!("n{i}")).collect();
    let mut slots: Vec<u32> = (0..28_000).map(|i| i * 3).collect();
    slots.shuffle(rng);
    let mut ctx = Ctx {
        rng,
        nodes,
        start_slots: slots,
    };

    let mut items = Vec::new();
    let profile = NodeProfile::random(&mut ctx);
    for name in ctx.nodes.clone() {
        items.push(node(&mut ctx, &name, &profile));
    }
    let mut bound = Vec::new();
    let mut pod_index = 0;
    let per_node_max = if node_count > 30 { 3 } else { 5 };
    for name in ctx.nodes.clone() {
        let count = ctx.rng.random_range(0..=per_node_max);
        for _ in 0..count {
            pod_index += 1;
            let pod = bound_pod(&mut ctx, pod_index, &name, &profile);
            bound.push(pod.clone());
            items.push(pod);
        }
    }
    let nominated = match ctx.rng.random_range(0..10) {
        0..6 => 0,
        6..9 => 1,
        _ => ctx.rng.random_range(2..=4),
    };
    for _ in 0..nominated {
        pod_index += 1;
        items.push(nominated_pod(&mut ctx, pod_index, &profile));
    }
    items.extend(budgets::budgets(&mut ctx, &bound));
    let preemptor = preemptor(&mut ctx, &profile);
    Scenario {
        cluster: json!({"apiVersion": "v1", "kind": "List", "items": items}),
        preemptor,
    }
}

/// Which optional resources this cluster uses, so that requests meet allocatables often.
struct NodeProfile {
    ephemeral: bool,
    hugepages: bool,
    gpu: bool,
    taints: bool,
    ports: bool,
    affinity: bool,
    spread: bool,
}

impl NodeProfile {
    fn random(ctx: &mut Ctx) -> Self {
        NodeProfile {
            ephemeral: ctx.chance(0.2),
            hugepages: ctx.chance(0.15),
            gpu: ctx.chance(0.2),
            taints: ctx.chance(0.3),
            ports: ctx.chance(0.2),
            affinity: ctx.chance(0.35),
            spread: ctx.chance(0.3),
        }
    }
}

fn node(ctx: &mut Ctx, name: &str, profile: &NodeProfile) -> Value {
    let mut labels = Map::new();
    // The hostname label is usually the node's name, but not always (topology keys are labels).
    let hostname = if ctx.chance(0.05) {
        format!("host-{name}")
    } else {
        name.to_string()
    };
    labels.insert("kubernetes.io/hostname".into(), json!(hostname));
    if !ctx.chance(0.07) {
        labels.insert("zone".into(), json!(ctx.pick(&ZONES)));
    }
    if ctx.chance(0.6) {
        labels.insert("disk".into(), json!(ctx.pick(&["ssd", "hdd"])));
    }
    if ctx.chance(0.3) {
        labels.insert("gen".into(), json!(ctx.rng.random_range(1..=5).to_string()));
    }
    let mut alloc = Map::new();
    alloc.insert(
        "cpu".into(),
        json!(ctx.pick(&["1", "2", "4", "1500m", "3"])),
    );
    alloc.insert(
        "memory".into(),
        json!(ctx.pick(&["1Gi", "2Gi", "4Gi", "8Gi", "3Gi"])),
    );
    if !ctx.chance(0.03) {
        alloc.insert(
            "pods".into(),
            json!(ctx.pick(&["1", "2", "3", "4", "6", "110"])),
        );
    }
    if profile.ephemeral && ctx.chance(0.85) {
        alloc.insert(
            "ephemeral-storage".into(),
            json!(ctx.pick(&["5Gi", "10Gi", "20Gi"])),
        );
    }
    if profile.hugepages && ctx.chance(0.9) {
        alloc.insert(HUGEPAGES.into(), json!(ctx.pick(&["0", "64Mi", "128Mi"])));
    }
    if profile.gpu && ctx.chance(0.9) {
        alloc.insert(GPU.into(), json!(ctx.pick(&["1", "2", "4"])));
    }
    let mut spec = Map::new();
    if ctx.chance(0.05) {
        spec.insert("unschedulable".into(), json!(true));
    }
    if profile.taints && ctx.chance(0.4) {
        let count = ctx.rng.random_range(1..=2);
        let mut taints = Vec::new();
        for _ in 0..count {
            let mut t = Map::new();
            t.insert("key".into(), json!(ctx.pick(&TAINT_KEYS)));
            if ctx.chance(0.7) {
                t.insert("value".into(), json!(ctx.pick(&TAINT_VALUES)));
            }
            t.insert("effect".into(), json!(ctx.pick(&EFFECTS)));
            taints.push(Value::Object(t));
        }
        spec.insert("taints".into(), Value::Array(taints));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"capacity": alloc.clone(), "allocatable": alloc},
    })
}

fn resources(ctx: &mut Ctx, profile: &NodeProfile, scale: u32) -> Value {
    let mut requests = Map::new();
    let mut limits = Map::new();
    if ctx.chance(0.9) {
        let cpu = ctx.rng.random_range(1..=10) * 100 * scale;
        requests.insert("cpu".into(), json!(format!("{cpu}m")));
    }
    if ctx.chance(0.8) {
        let mem = ctx.rng.random_range(1..=16) * 128 * scale;
        requests.insert("memory".into(), json!(format!("{mem}Mi")));
    }
    if profile.ephemeral && ctx.chance(0.5) {
        requests.insert(
            "ephemeral-storage".into(),
            json!(format!("{}Gi", ctx.rng.random_range(1..=6))),
        );
    }
    if profile.hugepages && ctx.chance(0.4) {
        let q = json!(ctx.pick(&["32Mi", "64Mi", "96Mi"]));
        requests.insert(HUGEPAGES.into(), q.clone());
        limits.insert(HUGEPAGES.into(), q);
    }
    if profile.gpu && ctx.chance(0.4) {
        let q = json!(ctx.rng.random_range(1..=2).to_string());
        requests.insert(GPU.into(), q.clone());
        limits.insert(GPU.into(), q);
    }
    let mut r = Map::new();
    if !requests.is_empty() {
        r.insert("requests".into(), Value::Object(requests));
    }
    if !limits.is_empty() {
        r.insert("limits".into(), Value::Object(limits));
    }
    Value::Object(r)
}

fn container(ctx: &mut Ctx, name: &str, profile: &NodeProfile, scale: u32) -> Map<String, Value> {
    let mut c = Map::new();
    c.insert("name".into(), json!(name));
    c.insert("image".into(), json!("registry.example/app:1"));
    c.insert("resources".into(), resources(ctx, profile, scale));
    if profile.ports && ctx.chance(0.35) {
        let mut port = Map::new();
        port.insert("containerPort".into(), json!(80));
        port.insert("hostPort".into(), json!(ctx.pick(&[8080, 8081, 9090])));
        if ctx.chance(0.5) {
            port.insert("protocol".into(), json!(ctx.pick(&["TCP", "UDP", "SCTP"])));
        }
        if ctx.chance(0.4) {
            port.insert(
                "hostIP".into(),
                json!(ctx.pick(&["0.0.0.0", "127.0.0.1", "10.0.0.1"])),
            );
        }
        c.insert("ports".into(), json!([Value::Object(port)]));
    }
    c
}

/// Containers, init containers (some of them sidecars), overhead and pod-level resources.
fn pod_spec_resources(ctx: &mut Ctx, spec: &mut Map<String, Value>, profile: &NodeProfile) {
    let count = if ctx.chance(0.8) { 1 } else { 2 };
    let containers: Vec<Value> = (0..count)
        .map(|i| Value::Object(container(ctx, &format!("app{i}"), profile, 1)))
        .collect();
    spec.insert("containers".into(), Value::Array(containers));
    if ctx.chance(0.15) {
        let count = ctx.rng.random_range(1..=3);
        let mut inits = Vec::new();
        for i in 0..count {
            let mut c = container(ctx, &format!("init{i}"), profile, 2);
            if ctx.chance(0.5) {
                c.insert("restartPolicy".into(), json!("Always"));
            }
            inits.push(Value::Object(c));
        }
        spec.insert("initContainers".into(), Value::Array(inits));
    }
    if ctx.chance(0.07) {
        spec.insert(
            "overhead".into(),
            json!({"cpu": ctx.pick(&["100m", "250m"]), "memory": ctx.pick(&["64Mi", "128Mi"])}),
        );
    }
    if ctx.chance(0.07) {
        let mut requests = Map::new();
        if ctx.chance(0.8) {
            requests.insert(
                "cpu".into(),
                json!(format!("{}m", ctx.rng.random_range(5..=25) * 100)),
            );
        }
        if ctx.chance(0.7) {
            requests.insert(
                "memory".into(),
                json!(format!("{}Mi", ctx.rng.random_range(8..=32) * 128)),
            );
        }
        if !requests.is_empty() {
            spec.insert("resources".into(), json!({"requests": requests}));
        }
    }
}

fn labels(ctx: &mut Ctx) -> Map<String, Value> {
    let mut l = Map::new();
    if ctx.chance(0.08) {
        return l;
    }
    l.insert("app".into(), json!(ctx.pick(&APPS)));
    if ctx.chance(0.4) {
        l.insert("tier".into(), json!(ctx.pick(&["front", "back"])));
    }
    if ctx.chance(0.4) {
        l.insert("version".into(), json!(ctx.pick(&["v1", "v2"])));
    }
    l
}

fn selector(ctx: &mut Ctx) -> Value {
    match ctx.rng.random_range(0..10) {
        0..5 => json!({"matchLabels": {"app": ctx.pick(&APPS)}}),
        5..8 => {
            let a = *ctx.pick(&APPS);
            let b = *ctx.pick(&APPS);
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": [a, b]}]})
        }
        8 => {
            json!({"matchExpressions": [{"key": "tier", "operator": ctx.pick(&["Exists", "DoesNotExist"])}]})
        }
        _ => {
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [ctx.pick(&APPS)]}]})
        }
    }
}

/// A required pod (anti-)affinity term. Namespace selectors use only the
/// `kubernetes.io/metadata.name` label, the one label every namespace carries.
fn affinity_term(ctx: &mut Ctx) -> Value {
    let mut t = Map::new();
    t.insert("labelSelector".into(), selector(ctx));
    t.insert(
        "topologyKey".into(),
        json!(ctx.pick(&["zone", "kubernetes.io/hostname", "disk"])),
    );
    match ctx.rng.random_range(0..10) {
        0..6 => {}
        6..8 => {
            let a = *ctx.pick(&NAMESPACES);
            let b = *ctx.pick(&NAMESPACES);
            t.insert("namespaces".into(), json!([a, b]));
        }
        8 => {
            t.insert(
                "namespaceSelector".into(),
                json!({"matchLabels": {"kubernetes.io/metadata.name": ctx.pick(&NAMESPACES)}}),
            );
        }
        _ => {
            let sel = if ctx.chance(0.3) {
                json!({})
            } else {
                json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [ctx.pick(&NAMESPACES)]}]})
            };
            t.insert("namespaceSelector".into(), sel);
        }
    }
    Value::Object(t)
}

fn pod_affinity(ctx: &mut Ctx, p_aff: f64, p_anti: f64) -> Option<Value> {
    let mut a = Map::new();
    if ctx.chance(p_aff) {
        let terms: Vec<Value> = (0..ctx.rng.random_range(1..=2))
            .map(|_| affinity_term(ctx))
            .collect();
        a.insert(
            "podAffinity".into(),
            json!({"requiredDuringSchedulingIgnoredDuringExecution": terms}),
        );
    }
    if ctx.chance(p_anti) {
        let terms: Vec<Value> = (0..ctx.rng.random_range(1..=2))
            .map(|_| affinity_term(ctx))
            .collect();
        a.insert(
            "podAntiAffinity".into(),
            json!({"requiredDuringSchedulingIgnoredDuringExecution": terms}),
        );
    }
    (!a.is_empty()).then_some(Value::Object(a))
}

fn node_selector_requirement(ctx: &mut Ctx) -> Value {
    match ctx.rng.random_range(0..7) {
        0 => {
            json!({"key": "zone", "operator": "In", "values": [ctx.pick(&ZONES), ctx.pick(&ZONES)]})
        }
        1 => json!({"key": "zone", "operator": "NotIn", "values": [ctx.pick(&ZONES)]}),
        2 => json!({"key": "disk", "operator": ctx.pick(&["Exists", "DoesNotExist"])}),
        3 => {
            json!({"key": "gen", "operator": ctx.pick(&["Gt", "Lt"]), "values": [ctx.rng.random_range(1..=4).to_string()]})
        }
        4 => json!({"key": "disk", "operator": "In", "values": ["ssd"]}),
        _ => {
            let n = ctx.nodes.len();
            let names: Vec<String> = (0..ctx.rng.random_range(1..=3))
                .map(|_| format!("n{}", ctx.rng.random_range(1..=n + 1)))
                .collect();
            json!({"key": "metadata.name", "operator": ctx.pick(&["In", "NotIn"]), "values": names, "__field": true})
        }
    }
}

fn node_affinity(ctx: &mut Ctx) -> Value {
    let terms: Vec<Value> = (0..ctx.rng.random_range(1..=2))
        .map(|_| {
            let mut exprs = Vec::new();
            let mut fields = Vec::new();
            for _ in 0..ctx.rng.random_range(1..=2) {
                let mut r = node_selector_requirement(ctx);
                if r.get("__field").is_some() {
                    r.as_object_mut().map(|o| o.remove("__field"));
                    fields.push(r);
                } else {
                    exprs.push(r);
                }
            }
            let mut t = Map::new();
            if !exprs.is_empty() {
                t.insert("matchExpressions".into(), Value::Array(exprs));
            }
            if !fields.is_empty() {
                t.insert("matchFields".into(), Value::Array(fields));
            }
            Value::Object(t)
        })
        .collect();
    json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}})
}

fn tolerations(ctx: &mut Ctx) -> Value {
    let list: Vec<Value> = (0..ctx.rng.random_range(1..=3))
        .map(|_| {
            let mut t = Map::new();
            match ctx.rng.random_range(0..10) {
                0 => {
                    t.insert("operator".into(), json!("Exists"));
                }
                1..4 => {
                    t.insert("key".into(), json!(ctx.pick(&TAINT_KEYS)));
                    t.insert("operator".into(), json!("Exists"));
                }
                _ => {
                    t.insert("key".into(), json!(ctx.pick(&TAINT_KEYS)));
                    if ctx.chance(0.7) {
                        t.insert("operator".into(), json!("Equal"));
                    }
                    t.insert("value".into(), json!(ctx.pick(&TAINT_VALUES)));
                }
            }
            if ctx.chance(0.6) {
                t.insert("effect".into(), json!(ctx.pick(&EFFECTS)));
            }
            Value::Object(t)
        })
        .collect();
    Value::Array(list)
}

fn spread_constraints(ctx: &mut Ctx) -> Value {
    let list: Vec<Value> = (0..ctx.rng.random_range(1..=2))
        .map(|_| {
            let mut c = Map::new();
            c.insert("maxSkew".into(), json!(ctx.rng.random_range(1..=2)));
            c.insert(
                "topologyKey".into(),
                json!(ctx.pick(&["zone", "kubernetes.io/hostname", "disk"])),
            );
            let hard = ctx.chance(0.85);
            c.insert(
                "whenUnsatisfiable".into(),
                json!(if hard {
                    "DoNotSchedule"
                } else {
                    "ScheduleAnyway"
                }),
            );
            c.insert("labelSelector".into(), selector(ctx));
            if hard && ctx.chance(0.25) {
                c.insert("minDomains".into(), json!(ctx.rng.random_range(1..=4)));
            }
            if ctx.chance(0.2) {
                c.insert("matchLabelKeys".into(), json!(["version"]));
            }
            if ctx.chance(0.25) {
                c.insert(
                    "nodeAffinityPolicy".into(),
                    json!(ctx.pick(&["Honor", "Ignore"])),
                );
            }
            if ctx.chance(0.25) {
                c.insert(
                    "nodeTaintsPolicy".into(),
                    json!(ctx.pick(&["Honor", "Ignore"])),
                );
            }
            Value::Object(c)
        })
        .collect();
    Value::Array(list)
}

fn base_pod(
    ctx: &mut Ctx,
    name: &str,
    namespace: &str,
    profile: &NodeProfile,
) -> Map<String, Value> {
    let mut pod = Map::new();
    pod.insert("apiVersion".into(), json!("v1"));
    pod.insert("kind".into(), json!("Pod"));
    let mut meta = Map::new();
    meta.insert("namespace".into(), json!(namespace));
    meta.insert("name".into(), json!(name));
    meta.insert("uid".into(), json!(format!("uid-{namespace}-{name}")));
    let l = labels(ctx);
    if !l.is_empty() {
        meta.insert("labels".into(), Value::Object(l));
    }
    pod.insert("metadata".into(), Value::Object(meta));
    let mut spec = Map::new();
    pod_spec_resources(ctx, &mut spec, profile);
    pod.insert("spec".into(), Value::Object(spec));
    pod
}

fn spec_of(pod: &mut Map<String, Value>) -> &mut Map<String, Value> {
    pod.get_mut("spec")
        .and_then(Value::as_object_mut)
        .expect("pod spec")
}

fn random_namespace(ctx: &mut Ctx) -> &'static str {
    if ctx.chance(0.6) {
        "default"
    } else {
        NAMESPACES[1..].choose(ctx.rng).expect("namespaces")
    }
}

fn bound_pod(ctx: &mut Ctx, index: usize, node: &str, profile: &NodeProfile) -> Value {
    let namespace = random_namespace(ctx);
    let mut pod = base_pod(ctx, &format!("p{index}"), namespace, profile);
    let priority = *ctx.pick(&PRIORITIES);
    let start = ctx.start_time();
    {
        let spec = spec_of(&mut pod);
        spec.insert("nodeName".into(), json!(node));
        if priority != 0 || ctx.chance(0.5) {
            spec.insert("priority".into(), json!(priority));
        }
        if profile.affinity
            && let Some(a) = pod_affinity(ctx, 0.1, 0.2)
        {
            spec.insert("affinity".into(), a);
        }
    }
    let mut status = Map::new();
    let phase = match ctx.rng.random_range(0..100) {
        0..3 => "Succeeded",
        3..5 => "Failed",
        _ => "Running",
    };
    status.insert("phase".into(), json!(phase));
    status.insert("startTime".into(), json!(start));
    if ctx.chance(0.07) {
        let meta = pod
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .expect("metadata");
        meta.insert("deletionTimestamp".into(), json!("2026-01-02T00:00:00Z"));
        if ctx.chance(0.6) {
            let reason = if ctx.chance(0.8) {
                "PreemptionByScheduler"
            } else {
                "EvictionByEvictionAPI"
            };
            let cond_status = if ctx.chance(0.9) { "True" } else { "False" };
            status.insert(
                "conditions".into(),
                json!([{"type": "DisruptionTarget", "status": cond_status, "reason": reason}]),
            );
        }
    }
    pod.insert("status".into(), Value::Object(status));
    Value::Object(pod)
}

fn nominated_pod(ctx: &mut Ctx, index: usize, profile: &NodeProfile) -> Value {
    let namespace = random_namespace(ctx);
    let mut pod = base_pod(ctx, &format!("p{index}"), namespace, profile);
    let priority = *ctx.pick(&PRIORITIES);
    let node = if ctx.chance(0.95) {
        ctx.pick(&ctx.nodes.clone()).clone()
    } else {
        "gone".to_string()
    };
    let start = ctx.start_time();
    {
        let spec = spec_of(&mut pod);
        spec.insert("priority".into(), json!(priority));
        if profile.affinity
            && let Some(a) = pod_affinity(ctx, 0.05, 0.15)
        {
            spec.insert("affinity".into(), a);
        }
    }
    let mut status = json!({"phase": "Pending", "nominatedNodeName": node});
    if ctx.chance(0.5) {
        status["startTime"] = json!(start);
    }
    pod.insert("status".into(), status);
    Value::Object(pod)
}

fn preemptor(ctx: &mut Ctx, profile: &NodeProfile) -> Value {
    let namespace = random_namespace(ctx);
    // Bigger than the average pod, so that preemption is usually needed.
    let mut pod = base_pod(ctx, "preemptor", namespace, profile);
    if ctx.chance(0.5) {
        let containers = spec_of(&mut pod)
            .get_mut("containers")
            .and_then(Value::as_array_mut)
            .expect("containers");
        containers[0]["resources"] = resources(ctx, profile, 2);
    }
    let priority = match ctx.rng.random_range(0..10) {
        0..7 => 1000,
        7..9 => 500,
        _ => *ctx.pick(&PRIORITIES),
    };
    let nodes = ctx.nodes.clone();
    let spec = spec_of(&mut pod);
    spec.insert("priority".into(), json!(priority));
    if ctx.chance(0.05) {
        spec.insert("preemptionPolicy".into(), json!("Never"));
    } else if ctx.chance(0.1) {
        spec.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
    }
    if ctx.chance(0.12) {
        let mut sel = Map::new();
        sel.insert("zone".into(), json!(ctx.pick(&ZONES)));
        if ctx.chance(0.3) {
            sel.insert("disk".into(), json!("ssd"));
        }
        spec.insert("nodeSelector".into(), Value::Object(sel));
    }
    // No `nodeName`: a preemptor is pending (upstream never preempts for a bound pod, and
    // preemptd refuses one).
    let mut affinity = Map::new();
    if ctx.chance(0.15) {
        affinity.insert("nodeAffinity".into(), node_affinity(ctx));
    }
    if profile.affinity
        && let Some(Value::Object(a)) = pod_affinity(ctx, 0.3, 0.4)
    {
        affinity.extend(a);
    }
    if !affinity.is_empty() {
        spec.insert("affinity".into(), Value::Object(affinity));
    }
    if profile.taints && ctx.chance(0.5) || ctx.chance(0.05) {
        spec.insert("tolerations".into(), tolerations(ctx));
    }
    if profile.spread && ctx.chance(0.6) {
        spec.insert("topologySpreadConstraints".into(), spread_constraints(ctx));
    }
    let mut status = json!({"phase": "Pending"});
    if ctx.chance(0.15) {
        status["nominatedNodeName"] = json!(if ctx.chance(0.9) {
            ctx.pick(&nodes).clone()
        } else {
            "gone".to_string()
        });
    }
    pod.insert("status".into(), status);
    Value::Object(pod)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use rand::SeedableRng;

    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_scenario() {
        let a = scenario(&mut ChaCha8Rng::seed_from_u64(9));
        let b = scenario(&mut ChaCha8Rng::seed_from_u64(9));
        assert_eq!(a.cluster, b.cluster);
        assert_eq!(a.preemptor, b.preemptor);
    }

    #[test]
    fn pods_have_distinct_start_times_and_bind_to_existing_nodes() {
        for seed in 0..200 {
            let s = scenario(&mut ChaCha8Rng::seed_from_u64(seed));
            let items = s.cluster["items"].as_array().expect("items");
            let nodes: HashSet<&str> = items
                .iter()
                .filter(|i| i["kind"] == "Node")
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect();
            assert!(!nodes.is_empty());
            let mut starts = HashSet::new();
            for pod in items.iter().filter(|i| i["kind"] == "Pod") {
                if let Some(node) = pod["spec"]["nodeName"].as_str() {
                    assert!(nodes.contains(node), "seed {seed}: {node}");
                    let start = pod["status"]["startTime"].as_str().expect("start time");
                    assert!(
                        starts.insert(start.to_string()),
                        "seed {seed}: {start} twice"
                    );
                }
            }
        }
    }
}
