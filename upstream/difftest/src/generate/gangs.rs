//! Scenarios with PodGroups (scheduling.k8s.io/v1beta1), for GenericWorkload=true: running
//! gangs of 2 to 64 members bound across the nodes (gang and basic policies; disruption mode
//! single or all, all only with the gang policy as the API requires; priorities from a
//! PriorityClass in the List or explicit), loose pods, nominated pods, budgets that often cover
//! members, and a preemptor that is either a Pod or a PodGroup whose pending members are in the
//! List (spread, affinity or anti-affinity among them, some nominated). Clusters stay under 100
//! nodes, so upstream scores every feasible node.
//!
//! Every pod of a group has the group's priority (the scheduler rejects a group otherwise), and
//! the members of one group share one pod template, as a job controller makes them.

use rand::Rng;
use rand::seq::SliceRandom;
use serde_json::{Map, Value, json};

use super::{
    Ctx, NodeProfile, PRIORITIES, Scenario, base_pod, budgets, node, nominated_pod,
    random_namespace, resources, spec_of,
};

/// The PriorityClasses a group may name; admission copies `value` into `spec.priority`.
const CLASSES: [(&str, i64); 4] = [
    ("batch-low", 10),
    ("inference", 500),
    ("training", 1000),
    ("critical", 2000),
];

/// A generated group: its PodGroup object and what its members share.
struct Group {
    namespace: String,
    name: String,
    priority: i64,
    class: Option<&'static str>,
    /// The pod template every member copies (resources, labels, constraints).
    template: Map<String, Value>,
}

fn member_count(ctx: &mut Ctx, cap: usize) -> usize {
    let n = match ctx.rng.random_range(0..100) {
        0..70 => ctx.rng.random_range(2..=8),
        70..93 => ctx.rng.random_range(9..=24),
        _ => ctx.rng.random_range(25..=64),
    };
    n.min(cap.max(2))
}

fn group_priority(ctx: &mut Ctx, high: bool) -> (i64, Option<&'static str>) {
    if ctx.chance(0.5) {
        let (name, value) = if high {
            *ctx.pick(&CLASSES[1..])
        } else {
            *ctx.pick(&CLASSES[..3])
        };
        (value, Some(name))
    } else if high {
        (*ctx.pick(&[500, 1000, 1000, 2000]), None)
    } else {
        (*ctx.pick(&PRIORITIES), None)
    }
}

/// The PodGroup object. `min_count` 0 means the basic policy.
fn pod_group(ctx: &mut Ctx, g: &Group, min_count: usize, all: bool) -> Value {
    let policy = if min_count == 0 {
        json!({"basic": {}})
    } else {
        json!({"gang": {"minCount": min_count}})
    };
    let mut spec = Map::new();
    spec.insert("schedulingPolicy".into(), policy);
    if all {
        spec.insert("disruptionMode".into(), json!({"all": {}}));
    } else if ctx.chance(0.5) {
        spec.insert("disruptionMode".into(), json!({"single": {}}));
    }
    if let Some(class) = g.class {
        spec.insert("priorityClassName".into(), json!(class));
    }
    if g.priority != 0 || g.class.is_some() || ctx.chance(0.5) {
        spec.insert("priority".into(), json!(g.priority));
    }
    json!({
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "namespace": g.namespace,
            "name": g.name,
            "uid": format!("uid-pg-{}-{}", g.namespace, g.name),
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
    })
}

/// A required anti-affinity or affinity term, or a spread constraint, among the members
/// (selected by the group's label), over hostname or zone.
fn among_members(ctx: &mut Ctx, group: &str, spec: &mut Map<String, Value>) {
    let selector = json!({"matchLabels": {"group": group}});
    let key = *ctx.pick(&["kubernetes.io/hostname", "zone"]);
    match ctx.rng.random_range(0..10) {
        0..4 => {
            let hard = ctx.chance(0.6);
            spec.insert(
                "topologySpreadConstraints".into(),
                json!([{
                    "maxSkew": ctx.rng.random_range(1..=2),
                    "topologyKey": key,
                    "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" },
                    "labelSelector": selector,
                }]),
            );
        }
        4..6 => {
            spec.insert(
                "affinity".into(),
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
                ]}}),
            );
        }
        6..8 => {
            let term = json!({"labelSelector": selector, "topologyKey": key});
            let affinity = if ctx.chance(0.5) {
                json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": ctx.rng.random_range(1..=100), "podAffinityTerm": term}
                ]}})
            } else {
                json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": ctx.rng.random_range(1..=100), "podAffinityTerm": term}
                ]}})
            };
            spec.insert("affinity".into(), affinity);
        }
        _ => {}
    }
}

fn new_group(
    ctx: &mut Ctx,
    name: &str,
    profile: &NodeProfile,
    high: bool,
    constrained: bool,
) -> Group {
    let namespace = random_namespace(ctx).to_string();
    let (priority, class) = group_priority(ctx, high);
    let mut template = base_pod(ctx, "template", &namespace, profile);
    template["metadata"]["labels"]["group"] = json!(name);
    if high && ctx.chance(0.4) {
        // Bigger members, so that the gang usually needs room.
        let resources = resources(ctx, profile, 2);
        spec_of(&mut template)["containers"][0]["resources"] = resources;
    }
    {
        let spec = spec_of(&mut template);
        spec.insert("priority".into(), json!(priority));
        if let Some(class) = class {
            spec.insert("priorityClassName".into(), json!(class));
        }
        spec.insert("schedulingGroup".into(), json!({"podGroupName": name}));
        if constrained {
            among_members(ctx, name, spec);
        }
    }
    Group {
        namespace,
        name: name.to_string(),
        priority,
        class,
        template,
    }
}

fn member(g: &Group, index: usize) -> Map<String, Value> {
    let mut pod = g.template.clone();
    let name = format!("{}-{index}", g.name);
    pod["metadata"]["name"] = json!(name);
    pod["metadata"]["uid"] = json!(format!("uid-{}-{name}", g.namespace));
    pod
}

/// A running gang: members bound to random nodes, each with its own start time.
fn running_group(ctx: &mut Ctx, index: usize, profile: &NodeProfile) -> (Vec<Value>, Value) {
    let name = format!("run{index}");
    // Running members may carry constraints among themselves too (existing pods' required
    // anti-affinity binds newcomers); they are placed at random, as a past cluster state.
    let constrained = ctx.chance(0.2);
    let g = new_group(ctx, &name, profile, false, constrained);
    let size = member_count(ctx, 4 * ctx.nodes.len());
    let gang = ctx.chance(0.7);
    let min_count = if gang {
        ctx.rng.random_range(1..=size)
    } else {
        0
    };
    let all = gang && ctx.chance(0.5);
    let object = pod_group(ctx, &g, min_count, all);
    let mut pods = Vec::new();
    for i in 0..size {
        let mut pod = member(&g, i);
        let node = ctx.pick(&ctx.nodes.clone()).clone();
        spec_of(&mut pod).insert("nodeName".into(), json!(node));
        let start = ctx.start_time();
        pod.insert(
            "status".into(),
            json!({"phase": "Running", "startTime": start}),
        );
        pods.push(Value::Object(pod));
    }
    (pods, object)
}

/// The preemptor gang's pending members; some carry a nominated node.
fn pending_members(ctx: &mut Ctx, g: &Group, size: usize) -> Vec<Value> {
    // One creation time for the whole gang (created together, as a controller does):
    // upstream then orders members by name, as preemptd does; preemptd does not see queue
    // times (upstream's queue orders by priority, attempts, queue time, then name).
    let created = "2026-01-01T00:00:00Z";
    let nominate = ctx.chance(0.2);
    let mut names: Vec<usize> = (0..size).collect();
    names.shuffle(ctx.rng);
    names
        .into_iter()
        .map(|i| {
            let mut pod = member(g, i);
            pod["metadata"]["creationTimestamp"] = json!(created);
            let mut status = json!({"phase": "Pending"});
            if nominate && ctx.chance(0.5) {
                status["nominatedNodeName"] = json!(ctx.pick(&ctx.nodes.clone()));
            }
            pod.insert("status".into(), status);
            Value::Object(pod)
        })
        .collect()
}

/// A case with PodGroups; the preemptor is a PodGroup (its members in the List) or a Pod.
pub(super) fn scenario(ctx: &mut Ctx, profile: &NodeProfile) -> Scenario {
    let mut items = Vec::new();
    for name in ctx.nodes.clone() {
        items.push(node(ctx, &name, profile));
    }
    let mut bound = Vec::new();
    let mut pod_index = 0;
    for name in ctx.nodes.clone() {
        for _ in 0..ctx.rng.random_range(0..=2) {
            pod_index += 1;
            let pod = super::bound_pod(ctx, pod_index, &name, profile);
            bound.push(pod.clone());
            items.push(pod);
        }
    }
    let mut groups = Vec::new();
    for i in 0..ctx.rng.random_range(0..=4) {
        let (pods, object) = running_group(ctx, i, profile);
        bound.extend(pods.iter().cloned());
        items.extend(pods);
        groups.push(object);
    }
    for _ in 0..ctx.rng.random_range(0..=2) {
        pod_index += 1;
        items.push(nominated_pod(ctx, pod_index, profile));
    }
    items.extend(budgets::budgets(ctx, &bound));

    let preemptor = if ctx.chance(0.7) {
        let constrained = ctx.chance(0.5);
        let g = new_group(ctx, "train", profile, true, constrained);
        let size = member_count(ctx, 2 * ctx.nodes.len());
        let min_count = if ctx.chance(0.8) {
            ctx.rng.random_range(1..=size)
        } else {
            0
        };
        let mut object = pod_group(ctx, &g, min_count, false);
        if ctx.chance(0.05) {
            object["spec"]["preemptionPolicy"] = json!("Never");
        }
        let members = pending_members(ctx, &g, size);
        if ctx.chance(0.05) {
            // A member with preemptionPolicy Never makes the group Never.
            let mut m = members.clone();
            m[0]["spec"]["preemptionPolicy"] = json!("Never");
            items.extend(m);
        } else {
            items.extend(members);
        }
        if ctx.chance(0.3) {
            // The List may hold the preemptor's own PodGroup; the preemptor wins.
            items.push(object.clone());
        }
        object
    } else {
        super::preemptor(ctx, profile)
    };
    // PriorityClasses for every class a group names, placed anywhere in the List.
    let named = |name: &str| {
        items
            .iter()
            .chain(groups.iter())
            .chain([&preemptor])
            .any(|item| item["spec"]["priorityClassName"] == name)
    };
    let used: Vec<(&str, i64)> = CLASSES.into_iter().filter(|(n, _)| named(n)).collect();
    for (name, value) in used {
        items.push(json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }));
    }
    items.extend(groups);
    Scenario {
        cluster: json!({"apiVersion": "v1", "kind": "List", "items": items}),
        preemptor,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::super::{Gates, scenario, scenario_for};
    use serde_json::Value;

    const ON: Gates = Gates {
        generic_workload: true,
    };

    #[test]
    fn with_the_gate_off_the_cases_are_todays() {
        for seed in 0..50 {
            let a = scenario_for(&mut ChaCha8Rng::seed_from_u64(seed), Gates::default());
            let b = scenario(&mut ChaCha8Rng::seed_from_u64(seed));
            assert_eq!(a.cluster, b.cluster);
            assert_eq!(a.preemptor, b.preemptor);
        }
    }

    fn key(v: &Value) -> (String, String) {
        (
            v["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .into(),
            v["metadata"]["name"].as_str().unwrap_or("").into(),
        )
    }

    /// Every group case is valid as the API and the scheduler require it, and the cases
    /// together cover what the brief lists.
    #[test]
    fn group_cases_are_valid_and_cover_gangs() {
        let (mut group_preemptors, mut pod_preemptors, mut all_mode, mut basic) = (0, 0, 0, 0);
        let (mut biggest, mut nominated_members, mut classes, mut explicit) = (0, 0, 0, 0);
        let (mut constrained, mut covered) = (0, 0);
        for seed in 0..400 {
            let s = scenario_for(&mut ChaCha8Rng::seed_from_u64(seed), ON);
            let items = s.cluster["items"].as_array().expect("items");
            let groups: HashMap<(String, String), &Value> = items
                .iter()
                .filter(|i| i["kind"] == "PodGroup")
                .map(|g| (key(g), g))
                .collect();
            if groups.is_empty() && s.preemptor["kind"] == "Pod" {
                continue;
            }
            let nodes = items.iter().filter(|i| i["kind"] == "Node").count();
            assert!(nodes < 100, "seed {seed}: {nodes} nodes");
            let mut sizes: HashMap<(String, String), usize> = HashMap::new();
            let preemptor_key = key(&s.preemptor);
            for pod in items.iter().filter(|i| i["kind"] == "Pod") {
                let Some(group) = pod["spec"]["schedulingGroup"]["podGroupName"].as_str() else {
                    continue;
                };
                let gk = (key(pod).0, group.to_string());
                let g = if s.preemptor["kind"] == "PodGroup" && gk == preemptor_key {
                    assert!(
                        pod["spec"]["nodeName"].is_null(),
                        "seed {seed}: bound member"
                    );
                    if !pod["status"]["nominatedNodeName"].is_null() {
                        nominated_members += 1;
                    }
                    if !pod["spec"]["affinity"].is_null()
                        || !pod["spec"]["topologySpreadConstraints"].is_null()
                    {
                        constrained += 1;
                    }
                    &s.preemptor
                } else {
                    groups
                        .get(&gk)
                        .unwrap_or_else(|| panic!("seed {seed}: {gk:?}"))
                };
                assert_eq!(
                    pod["spec"]["priority"].as_i64().unwrap_or(0),
                    g["spec"]["priority"].as_i64().unwrap_or(0),
                    "seed {seed}: a member's priority is its group's"
                );
                *sizes.entry(gk).or_default() += 1;
                let app = &pod["metadata"]["labels"]["app"];
                if !app.is_null()
                    && items.iter().any(|b| {
                        b["kind"] == "PodDisruptionBudget"
                            && b["spec"]["selector"]["matchLabels"]["app"] == *app
                    })
                {
                    covered += 1;
                }
            }
            for g in groups.values().chain([&&s.preemptor]) {
                if g["kind"] != "PodGroup" {
                    continue;
                }
                let is_gang = !g["spec"]["schedulingPolicy"]["gang"].is_null();
                if !g["spec"]["disruptionMode"]["all"].is_null() {
                    assert!(is_gang, "seed {seed}: mode all needs the gang policy");
                    all_mode += 1;
                }
                if !is_gang {
                    basic += 1;
                }
                if g["spec"]["priorityClassName"].is_string() {
                    classes += 1;
                } else {
                    explicit += 1;
                }
            }
            for (g, n) in &sizes {
                assert!((2..=64).contains(n), "seed {seed}: {g:?} has {n}");
                biggest = biggest.max(*n);
            }
            if s.preemptor["kind"] == "PodGroup" {
                assert!(
                    sizes.contains_key(&preemptor_key),
                    "seed {seed}: no members"
                );
                group_preemptors += 1;
            } else {
                pod_preemptors += 1;
            }
        }
        for (what, n) in [
            ("group preemptors", group_preemptors),
            ("pod preemptors among groups", pod_preemptors),
            ("all-mode groups", all_mode),
            ("basic groups", basic),
            ("nominated members", nominated_members),
            ("priorities from classes", classes),
            ("explicit priorities", explicit),
            ("spread or affinity among members", constrained),
            ("members under a budget", covered),
        ] {
            assert!(n > 0, "no {what}");
        }
        assert!(biggest >= 25, "largest gang {biggest}");
    }
}
