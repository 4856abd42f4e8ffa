//! `preemptd-difftest gang-bench --out DIR [--seed S] [--nodes 1000] [--victims 10000]
//! [--gangs 8,32,64] [--per-size 5]` writes one gang-preemption timing case in the layout
//! `bench-vs-upstream --gang` reads (see its header): `DIR/cluster.json`, a v1 List of the
//! Nodes, the running pods (the potential victims: loose pods and running gangs in disruption
//! mode single and all, all at lower priority), their PodGroups and PriorityClasses, and the
//! pending members of every preemptor gang; `DIR/groups-<size>.json`, a v1 List of the
//! PodGroup preemptors of that many members. The shape is kubernetes#140651's benchmark: 1,000
//! nodes, 10,000 potential victims, gangs of 8, 32 and 64.

use std::path::Path;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

pub struct Shape {
    pub nodes: usize,
    pub victims: usize,
    pub gang_sizes: Vec<usize>,
    pub per_size: usize,
}

fn node(name: &str, zone: usize) -> Value {
    let r = json!({"cpu": "16", "memory": "64Gi", "pods": "110"});
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": format!("z{zone}")}},
        "status": {"capacity": r, "allocatable": r},
    })
}

fn pod(
    name: &str,
    priority: i64,
    cpu_m: u32,
    group: Option<&str>,
) -> serde_json::Map<String, Value> {
    let mut spec = json!({
        "priority": priority,
        "containers": [{"name": "c", "image": "registry.example/app:1",
            "resources": {"requests": {"cpu": format!("{cpu_m}m"), "memory": "2Gi"}}}],
    });
    if let Some(g) = group {
        spec["schedulingGroup"] = json!({"podGroupName": g});
    }
    let mut labels = json!({"app": "batch"});
    if let Some(g) = group {
        labels["group"] = json!(g);
    }
    let Value::Object(p) = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "default", "name": name, "uid": format!("uid-{name}"),
            "labels": labels, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec,
    }) else {
        unreachable!("a pod is an object")
    };
    p
}

fn pod_group(name: &str, priority: i64, min_count: usize, all: bool) -> Value {
    json!({
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"namespace": "default", "name": name, "uid": format!("uid-pg-{name}"),
            "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "disruptionMode": if all { json!({"all": {}}) } else { json!({"single": {}}) },
            "priority": priority,
        },
    })
}

/// The cluster and the preemptor lists, by file name.
pub fn build(rng: &mut ChaCha8Rng, shape: &Shape) -> (Value, Vec<(String, Value)>) {
    let mut items = Vec::new();
    let names: Vec<String> = (0..shape.nodes).map(|i| format!("node-{i:04}")).collect();
    for (i, n) in names.iter().enumerate() {
        items.push(node(n, i % 3));
    }
    // Ten victims per node on average, 1.5 cores each (a node holds at most ten: 15 of 16
    // cores), every one with its own start time; a third of them in running gangs of 4 to 16.
    let mut placed = vec![0usize; shape.nodes];
    let mut slot = 0u32;
    let mut next_node = |rng: &mut ChaCha8Rng| loop {
        let i = rng.random_range(0..shape.nodes);
        if placed[i] < 10 {
            placed[i] += 1;
            return i;
        }
    };
    let mut victims = 0;
    let mut group_index = 0;
    while victims < shape.victims {
        let priority = [10, 100, 200][rng.random_range(0..3)];
        let grouped = rng.random_bool(0.33);
        let size = if grouped {
            rng.random_range(4..=16).min(shape.victims - victims)
        } else {
            1
        };
        let group = grouped.then(|| {
            group_index += 1;
            format!("running-{group_index}")
        });
        if let Some(g) = &group {
            items.push(pod_group(
                g,
                priority,
                rng.random_range(1..=size),
                rng.random_bool(0.5),
            ));
        }
        for m in 0..size {
            let name = match &group {
                Some(g) => format!("{g}-{m}"),
                None => format!("victim-{victims}"),
            };
            let mut p = pod(&name, priority, 1500, group.as_deref());
            let n = next_node(rng);
            p["spec"]["nodeName"] = json!(names[n]);
            slot += 1;
            let (h, mi, s) = (slot / 3600, (slot / 60) % 60, slot % 60);
            p.insert(
                "status".into(),
                json!({"phase": "Running", "startTime": format!("2026-01-01T{h:02}:{mi:02}:{s:02}Z")}),
            );
            items.push(Value::Object(p));
            victims += 1;
        }
    }
    // Preemptor gangs: every member needs 4 cores, so each member displaces victims.
    let mut lists = Vec::new();
    for &size in &shape.gang_sizes {
        let mut groups = Vec::new();
        for k in 0..shape.per_size {
            let name = format!("train-{size}-{k}");
            groups.push(pod_group(&name, 1000, size, false));
            for m in 0..size {
                let mut p = pod(&format!("{name}-{m}"), 1000, 4000, Some(&name));
                p.insert("status".into(), json!({"phase": "Pending"}));
                items.push(Value::Object(p));
            }
        }
        lists.push((
            format!("groups-{size}.json"),
            json!({"apiVersion": "v1", "kind": "List", "items": groups}),
        ));
    }
    (
        json!({"apiVersion": "v1", "kind": "List", "items": items}),
        lists,
    )
}

pub fn write(rng: &mut ChaCha8Rng, shape: &Shape, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (cluster, lists) = build(rng, shape);
    let write = |name: &str, v: &Value| {
        let path = out.join(name);
        std::fs::write(&path, serde_json::to_vec(v).map_err(|e| e.to_string())?)
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    write("cluster.json", &cluster)?;
    for (name, list) in &lists {
        write(name, list)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn the_shape_is_the_one_asked_for() {
        let shape = Shape {
            nodes: 50,
            victims: 400,
            gang_sizes: vec![8, 32],
            per_size: 2,
        };
        let (cluster, lists) = build(&mut ChaCha8Rng::seed_from_u64(1), &shape);
        let items = cluster["items"].as_array().expect("items");
        let count = |f: &dyn Fn(&Value) -> bool| items.iter().filter(|i| f(i)).count();
        assert_eq!(count(&|i| i["kind"] == "Node"), 50);
        assert_eq!(
            count(&|i| i["kind"] == "Pod" && i["spec"]["nodeName"].is_string()),
            400
        );
        assert_eq!(
            count(&|i| i["kind"] == "Pod" && i["spec"]["nodeName"].is_null()),
            2 * 8 + 2 * 32
        );
        let names: Vec<&str> = lists.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["groups-8.json", "groups-32.json"]);
        assert_eq!(lists[1].1["items"].as_array().map(Vec::len), Some(2));
        // No node holds more than ten victims (15 of its 16 cores).
        let mut per_node = std::collections::HashMap::new();
        for i in items.iter().filter(|i| i["spec"]["nodeName"].is_string()) {
            *per_node
                .entry(i["spec"]["nodeName"].as_str().unwrap_or(""))
                .or_insert(0) += 1;
        }
        assert!(per_node.values().all(|&n| n <= 10));
    }
}
