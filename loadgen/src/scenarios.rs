//! `preemptd bench --write-scenarios DIR`: the bench's clusters and preemptors as
//! Kubernetes JSON, so other schedulers (upstream/harness's `time` mode) are timed on
//! exactly the objects the bench loads, from the one generator.
//!
//! The rendering covers every model field `preemptd::model::decode` reads back, so the
//! JSON means the same objects to preemptd; the tests check that round trip.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Map, Value, json};

use preemptd::generate::{self, ClusterSpec};
use preemptd::model::{
    Container, ContainerResources, LabelSelector, Labels, Node, NodeSelector,
    NodeSelectorRequirement, Pod, PodAffinityTerm, PodDisruptionBudget, PreemptionPolicy,
    Resources, TopologySpreadConstraint, WhenUnsatisfiable,
};

use crate::{BenchArgs, Size};

/// Stands for `metadata.deletionTimestamp`: the model keeps only that one is set.
const DELETION_TIMESTAMP: &str = "2023-11-14T22:13:20Z";

/// Makes the bench's preemptor number `i` of one kind.
type MakePreemptor = fn(u64) -> Pod;

/// The preemptor kinds of the bench: the name in the file name, and the generator.
const PREEMPTOR_KINDS: [(&str, MakePreemptor); 2] = [
    ("resources", generate::resource_preemptor),
    ("affinity", generate::affinity_preemptor),
];

/// Writes, for each size, `DIR/NODESxPODS/cluster.json` (a v1 List of the Nodes,
/// PodDisruptionBudgets and Pods the bench loads, in that order) and
/// `DIR/NODESxPODS/preemptors-KIND.json` (a v1 List of the `--preempts` preemptors the
/// bench sends, in order).
pub(super) fn write_all(args: &BenchArgs, dir: &Path) -> anyhow::Result<()> {
    for size in args.sizes() {
        let out = dir.join(format!("{}x{}", size.nodes, size.pods_per_node));
        std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
        eprintln!(
            "writing {} nodes x {} pods per node to {} ...",
            size.nodes,
            size.pods_per_node,
            out.display()
        );
        let cluster = generate::generate(&ClusterSpec {
            nodes: size.nodes,
            pods_per_node: size.pods_per_node,
            seed: args.seed,
        });
        let items = cluster
            .nodes
            .iter()
            .map(node_json)
            .chain(cluster.pdbs.iter().map(pdb_json))
            .chain(cluster.pods.iter().map(pod_json));
        write_list(&out.join("cluster.json"), items)?;
        for (kind, make) in PREEMPTOR_KINDS {
            let pods = (0..args.preempts).map(|i| pod_json(&make(i)));
            write_list(&out.join(format!("preemptors-{kind}.json")), pods)?;
        }
        report_size(&out, size)?;
    }
    Ok(())
}

fn report_size(out: &Path, size: Size) -> anyhow::Result<()> {
    let path: PathBuf = out.join("cluster.json");
    let bytes = std::fs::metadata(&path)
        .with_context(|| format!("stat {}", path.display()))?
        .len();
    println!(
        "{}x{}: {} ({:.0} MB)",
        size.nodes,
        size.pods_per_node,
        path.display(),
        bytes as f64 / 1e6
    );
    Ok(())
}

/// A v1 List written item by item: a million pods never sit in memory as one value.
pub(crate) fn write_list(path: &Path, items: impl Iterator<Item = Value>) -> anyhow::Result<()> {
    let file = File::create(path).with_context(|| format!("create {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let write = |out: &mut BufWriter<File>| -> std::io::Result<()> {
        out.write_all(br#"{"apiVersion":"v1","kind":"List","items":["#)?;
        for (i, item) in items.enumerate() {
            if i > 0 {
                out.write_all(b",\n")?;
            }
            serde_json::to_writer(&mut *out, &item)?;
        }
        out.write_all(b"]}\n")?;
        out.flush()
    };
    write(&mut out).with_context(|| format!("write {}", path.display()))
}

fn labels_json(labels: &Labels) -> Value {
    Value::Object(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), json!(&**v)))
            .collect(),
    )
}

fn quantities_json(list: &ContainerResources) -> Value {
    Value::Object(
        list.iter()
            .map(|(name, q)| (name.to_string(), json!(q.to_string())))
            .collect(),
    )
}

fn allocatable_json(r: &Resources) -> Value {
    let mut map = Map::new();
    map.insert("cpu".into(), json!(format!("{}m", r.milli_cpu)));
    map.insert("memory".into(), json!(r.memory.to_string()));
    map.insert(
        "ephemeral-storage".into(),
        json!(r.ephemeral_storage.to_string()),
    );
    map.insert("pods".into(), json!(r.pods.to_string()));
    for (name, value) in &r.scalars {
        map.insert(name.to_string(), json!(value.to_string()));
    }
    Value::Object(map)
}

/// A v1 Node.
pub(crate) fn node_json(node: &Node) -> Value {
    let taints: Vec<Value> = node
        .taints
        .iter()
        .map(|t| json!({"key": &*t.key, "value": &*t.value, "effect": t.effect.as_str()}))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": &*node.name,
            "uid": &*node.uid,
            "resourceVersion": node.resource_version.to_string(),
            "labels": labels_json(&node.labels),
        },
        "spec": {"unschedulable": node.unschedulable, "taints": taints},
        "status": {"allocatable": allocatable_json(&node.allocatable)},
    })
}

fn selector_json(selector: &LabelSelector) -> Value {
    let expressions: Vec<Value> = selector
        .match_expressions
        .iter()
        .map(|r| {
            let values: Vec<&str> = r.values.iter().map(|v| &**v).collect();
            json!({"key": &*r.key, "operator": r.operator.as_str(), "values": values})
        })
        .collect();
    json!({
        "matchLabels": labels_json(&selector.match_labels),
        "matchExpressions": expressions,
    })
}

fn optional_selector_json(selector: &Option<LabelSelector>) -> Value {
    selector.as_ref().map_or(Value::Null, selector_json)
}

/// A policy/v1 PodDisruptionBudget.
fn pdb_json(pdb: &PodDisruptionBudget) -> Value {
    let disrupted: Map<String, Value> = pdb
        .disrupted_pods
        .iter()
        .map(|name| (name.to_string(), json!(DELETION_TIMESTAMP)))
        .collect();
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "namespace": &*pdb.namespace,
            "name": &*pdb.name,
            "uid": &*pdb.uid,
            "resourceVersion": pdb.resource_version.to_string(),
        },
        "spec": {"selector": optional_selector_json(&pdb.selector)},
        "status": {
            "disruptionsAllowed": pdb.disruptions_allowed,
            "disruptedPods": disrupted,
        },
    })
}

fn container_json(container: &Container) -> Value {
    let ports: Vec<Value> = container
        .ports
        .iter()
        .map(|p| {
            json!({
                "containerPort": p.port,
                "hostPort": p.port,
                "protocol": p.protocol.as_str(),
                "hostIP": &*p.ip,
            })
        })
        .collect();
    let mut map = Map::new();
    map.insert("name".into(), json!(&*container.name));
    map.insert(
        "resources".into(),
        json!({"requests": quantities_json(&container.requests)}),
    );
    map.insert("ports".into(), Value::Array(ports));
    if container.restart_always {
        map.insert("restartPolicy".into(), json!("Always"));
    }
    Value::Object(map)
}

fn requirements_json(requirements: &[NodeSelectorRequirement]) -> Value {
    requirements
        .iter()
        .map(|r| {
            let values: Vec<&str> = r.values.iter().map(|v| &**v).collect();
            json!({"key": &*r.key, "operator": r.operator.as_str(), "values": values})
        })
        .collect()
}

fn node_selector_json(selector: &NodeSelector) -> Value {
    let terms: Vec<Value> = selector
        .terms
        .iter()
        .map(|t| {
            json!({
                "matchExpressions": requirements_json(&t.match_expressions),
                "matchFields": requirements_json(&t.match_fields),
            })
        })
        .collect();
    json!({"nodeSelectorTerms": terms})
}

fn affinity_terms_json(terms: &[PodAffinityTerm]) -> Value {
    let terms: Vec<Value> = terms
        .iter()
        .map(|t| {
            let namespaces: Vec<&str> = t.namespaces.iter().map(|n| &**n).collect();
            json!({
                "labelSelector": optional_selector_json(&t.label_selector),
                "namespaces": namespaces,
                "namespaceSelector": optional_selector_json(&t.namespace_selector),
                "topologyKey": &*t.topology_key,
            })
        })
        .collect();
    json!({"requiredDuringSchedulingIgnoredDuringExecution": terms})
}

fn spread_json(c: &TopologySpreadConstraint) -> Value {
    let policy = |p: preemptd::model::InclusionPolicy| match p {
        preemptd::model::InclusionPolicy::Honor => "Honor",
        preemptd::model::InclusionPolicy::Ignore => "Ignore",
    };
    let keys: Vec<&str> = c.match_label_keys.iter().map(|k| &**k).collect();
    json!({
        "maxSkew": c.max_skew,
        "topologyKey": &*c.topology_key,
        "whenUnsatisfiable": match c.when_unsatisfiable {
            WhenUnsatisfiable::DoNotSchedule => "DoNotSchedule",
            WhenUnsatisfiable::ScheduleAnyway => "ScheduleAnyway",
        },
        "labelSelector": optional_selector_json(&c.label_selector),
        "minDomains": c.min_domains,
        "matchLabelKeys": keys,
        "nodeAffinityPolicy": policy(c.node_affinity_policy),
        "nodeTaintsPolicy": policy(c.node_taints_policy),
    })
}

/// A v1 Pod. Its container specs must still be held (not [`Pod::compact`]ed): the
/// effective requests are rendered from them.
pub(crate) fn pod_json(pod: &Pod) -> Value {
    let d = &pod.details;
    let mut metadata = Map::new();
    metadata.insert("namespace".into(), json!(&*pod.namespace));
    metadata.insert("name".into(), json!(pod.name()));
    metadata.insert("uid".into(), json!(pod.uid()));
    metadata.insert(
        "resourceVersion".into(),
        json!(pod.resource_version.to_string()),
    );
    metadata.insert("labels".into(), labels_json(&pod.labels));
    if pod.terminating {
        metadata.insert("deletionTimestamp".into(), json!(DELETION_TIMESTAMP));
    }
    let tolerations: Vec<Value> = d
        .tolerations
        .iter()
        .map(|t| {
            let operator = match t.operator {
                preemptd::model::TolerationOperator::Equal => "Equal",
                preemptd::model::TolerationOperator::Exists => "Exists",
            };
            json!({
                "key": &*t.key,
                "operator": operator,
                "value": &*t.value,
                "effect": t.effect.map_or("", |e| e.as_str()),
            })
        })
        .collect();
    let mut affinity = Map::new();
    if let Some(required) = &d.required_node_affinity {
        affinity.insert(
            "nodeAffinity".into(),
            json!({"requiredDuringSchedulingIgnoredDuringExecution": node_selector_json(required)}),
        );
    }
    if !d.pod_affinity.is_empty() {
        affinity.insert("podAffinity".into(), affinity_terms_json(&d.pod_affinity));
    }
    if !d.pod_anti_affinity.is_empty() {
        affinity.insert(
            "podAntiAffinity".into(),
            affinity_terms_json(&d.pod_anti_affinity),
        );
    }
    let mut spec = Map::new();
    if let Some(node) = &pod.node_name {
        spec.insert("nodeName".into(), json!(&**node));
    }
    spec.insert("schedulerName".into(), json!(pod.scheduler_name()));
    spec.insert("priority".into(), json!(pod.priority));
    spec.insert(
        "preemptionPolicy".into(),
        json!(match pod.preemption_policy {
            PreemptionPolicy::PreemptLowerPriority => "PreemptLowerPriority",
            PreemptionPolicy::Never => "Never",
        }),
    );
    spec.insert(
        "containers".into(),
        d.containers.iter().map(container_json).collect(),
    );
    if !d.init_containers.is_empty() {
        spec.insert(
            "initContainers".into(),
            d.init_containers.iter().map(container_json).collect(),
        );
    }
    if !d.overhead.is_empty() {
        spec.insert("overhead".into(), quantities_json(&d.overhead));
    }
    if !d.pod_requests.is_empty() {
        spec.insert(
            "resources".into(),
            json!({"requests": quantities_json(&d.pod_requests)}),
        );
    }
    spec.insert("tolerations".into(), Value::Array(tolerations));
    if !d.node_selector.is_empty() {
        spec.insert("nodeSelector".into(), labels_json(&d.node_selector));
    }
    if !affinity.is_empty() {
        spec.insert("affinity".into(), Value::Object(affinity));
    }
    if !d.topology_spread.is_empty() {
        spec.insert(
            "topologySpreadConstraints".into(),
            d.topology_spread.iter().map(spread_json).collect(),
        );
    }
    if let Some(group) = &d.scheduling_group {
        spec.insert("schedulingGroup".into(), json!({"podGroupName": &**group}));
    }
    let mut status = Map::new();
    status.insert("phase".into(), json!(pod.phase.as_str()));
    if let Some(nanos) = pod.start_time.get() {
        status.insert("startTime".into(), json!(rfc3339(nanos)));
    }
    if let Some(node) = &pod.nominated_node_name {
        status.insert("nominatedNodeName".into(), json!(&**node));
    }
    if !d.conditions.is_empty() {
        let conditions: Vec<Value> = d
            .conditions
            .iter()
            .map(|c| json!({"type": &*c.type_, "status": &*c.status, "reason": &*c.reason}))
            .collect();
        status.insert("conditions".into(), Value::Array(conditions));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// RFC 3339 in UTC, with a fraction only when the time has one.
fn rfc3339(nanos: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(nanos)
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use preemptd::model::decode::{self, Object};

    /// The rendered JSON, read back through preemptd's own reader, is the generated
    /// cluster object for object; and so are the preemptors.
    #[test]
    fn rendered_objects_decode_to_the_generated_ones() {
        let cluster = generate::generate(&ClusterSpec {
            nodes: 60,
            pods_per_node: 8,
            seed: 3,
        });
        // What a small cluster might miss: taints, host ports, terminating and
        // nominated pods.
        assert!(cluster.nodes.iter().any(|n| !n.taints.is_empty()));
        assert!(
            cluster
                .pods
                .iter()
                .any(|p| !p.details.host_ports.is_empty())
        );
        assert!(cluster.pods.iter().any(|p| p.terminating));
        assert!(cluster.pods.iter().any(|p| p.nominated_node_name.is_some()));
        let dir = tempfile::tempdir().unwrap();
        let items = cluster
            .nodes
            .iter()
            .map(node_json)
            .chain(cluster.pdbs.iter().map(pdb_json))
            .chain(cluster.pods.iter().map(pod_json));
        let path = dir.path().join("cluster.json");
        write_list(&path, items).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let objects = decode::decode_list(&decode::parse_document(&text).unwrap()).unwrap();
        let expected: Vec<Object> = cluster
            .nodes
            .iter()
            .cloned()
            .map(Object::Node)
            .chain(cluster.pdbs.iter().cloned().map(Object::Pdb))
            .chain(cluster.pods.iter().cloned().map(Object::Pod))
            .collect();
        assert_eq!(objects.len(), expected.len());
        for (got, want) in objects.iter().zip(&expected) {
            assert_eq!(got, want);
        }
        for (_, make) in PREEMPTOR_KINDS {
            for i in [0, 7] {
                let pod = make(i);
                assert_eq!(decode::decode_pod(&pod_json(&pod)).unwrap(), pod);
            }
        }
    }

    /// Fields the generator leaves at their defaults render and read back too.
    #[test]
    fn every_pod_field_renders() {
        let mut pod = generate::affinity_preemptor(1);
        pod.preemption_policy = PreemptionPolicy::Never;
        pod.start_time = Some(1_700_000_000_123_456_789).into();
        pod.nominated_node_name = Some("node-000001".into());
        let d = pod.details_mut();
        d.scheduler_name = Some("other".into());
        d.node_selector = [("disk", "ssd")].into_iter().collect();
        d.pod_affinity = d.pod_anti_affinity.clone();
        d.required_node_affinity = Some(NodeSelector {
            terms: vec![preemptd::model::NodeSelectorTerm {
                match_expressions: vec![NodeSelectorRequirement {
                    key: "disk".into(),
                    operator: preemptd::model::NodeSelectorOperator::In,
                    values: vec!["ssd".into()],
                }],
                match_fields: Vec::new(),
            }],
        });
        d.init_containers = vec![Container {
            name: "sidecar".into(),
            restart_always: true,
            image: "".into(),
            ..d.containers[0].clone()
        }];
        d.overhead = ContainerResources::new(vec![(
            "cpu".into(),
            preemptd::model::quantity::Quantity::from_millis(100),
        )]);
        d.conditions = vec![preemptd::model::PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: "PreemptionByScheduler".into(),
        }];
        let pod = pod.finish();
        assert_eq!(decode::decode_pod(&pod_json(&pod)).unwrap(), pod);
    }
}
