//! Kubernetes JSON → typed proto messages, written from the proto's field list and
//! independent of the server's builder: the typed half of the JSON/typed parity tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use preemptd::server::pb;
use serde_json::Value;

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
        .unwrap_or_default()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(text).collect())
        .unwrap_or_default()
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn int32(v: &Value) -> Option<i32> {
    v.as_i64().and_then(|n| i32::try_from(n).ok())
}

fn resource_version(v: &Value) -> u64 {
    match v {
        Value::Number(n) => n.as_u64().unwrap_or(0),
        Value::String(s) => s.parse().unwrap_or(0),
        _ => 0,
    }
}

pub fn node(o: &Value) -> pb::Node {
    let meta = &o["metadata"];
    pb::Node {
        name: text(&meta["name"]),
        uid: text(&meta["uid"]),
        resource_version: resource_version(&meta["resourceVersion"]),
        labels: string_map(&meta["labels"]),
        taints: items(&o["spec"]["taints"])
            .iter()
            .map(|t| pb::Taint {
                key: text(&t["key"]),
                value: text(&t["value"]),
                effect: text(&t["effect"]),
            })
            .collect(),
        unschedulable: o["spec"]["unschedulable"].as_bool().unwrap_or(false),
        allocatable: string_map(&o["status"]["allocatable"]),
        annotations: string_map(&meta["annotations"]),
        conditions: items(&o["status"]["conditions"])
            .iter()
            .map(|c| pb::NodeCondition {
                r#type: text(&c["type"]),
                status: text(&c["status"]),
                reason: text(&c["reason"]),
                message: text(&c["message"]),
            })
            .collect(),
        images: items(&o["status"]["images"])
            .iter()
            .map(|i| pb::ContainerImage {
                names: strings(&i["names"]),
                size_bytes: i["sizeBytes"].as_i64().unwrap_or(0),
            })
            .collect(),
    }
}

fn selector(v: &Value) -> Option<pb::LabelSelector> {
    v.as_object()?;
    Some(pb::LabelSelector {
        match_labels: string_map(&v["matchLabels"]),
        match_expressions: items(&v["matchExpressions"])
            .iter()
            .map(|e| pb::LabelSelectorRequirement {
                key: text(&e["key"]),
                operator: text(&e["operator"]),
                values: strings(&e["values"]),
            })
            .collect(),
    })
}

pub fn pdb(o: &Value) -> pb::PodDisruptionBudget {
    let meta = &o["metadata"];
    pb::PodDisruptionBudget {
        namespace: text(&meta["namespace"]),
        name: text(&meta["name"]),
        uid: text(&meta["uid"]),
        resource_version: resource_version(&meta["resourceVersion"]),
        selector: selector(&o["spec"]["selector"]),
        disruptions_allowed: int32(&o["status"]["disruptionsAllowed"]).unwrap_or(0),
        disrupted_pods: o["status"]["disruptedPods"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
    }
}

fn container(c: &Value) -> pb::Container {
    pb::Container {
        name: text(&c["name"]),
        requests: string_map(&c["resources"]["requests"]),
        limits: string_map(&c["resources"]["limits"]),
        ports: items(&c["ports"])
            .iter()
            .map(|p| pb::ContainerPort {
                host_port: int32(&p["hostPort"]).unwrap_or(0),
                protocol: text(&p["protocol"]),
                host_ip: text(&p["hostIP"]),
                container_port: int32(&p["containerPort"]).unwrap_or(0),
            })
            .collect(),
        restart_policy: text(&c["restartPolicy"]),
        image: text(&c["image"]),
    }
}

fn node_requirements(v: &Value) -> Vec<pb::NodeSelectorRequirement> {
    items(v)
        .iter()
        .map(|r| pb::NodeSelectorRequirement {
            key: text(&r["key"]),
            operator: text(&r["operator"]),
            values: strings(&r["values"]),
        })
        .collect()
}

fn affinity_term(t: &Value) -> pb::PodAffinityTerm {
    pb::PodAffinityTerm {
        label_selector: selector(&t["labelSelector"]),
        namespaces: strings(&t["namespaces"]),
        namespace_selector: selector(&t["namespaceSelector"]),
        topology_key: text(&t["topologyKey"]),
    }
}

fn affinity_terms(v: &Value) -> Vec<pb::PodAffinityTerm> {
    items(&v["requiredDuringSchedulingIgnoredDuringExecution"])
        .iter()
        .map(affinity_term)
        .collect()
}

fn weighted_terms(v: &Value) -> Vec<pb::WeightedPodAffinityTerm> {
    items(&v["preferredDuringSchedulingIgnoredDuringExecution"])
        .iter()
        .map(|t| pb::WeightedPodAffinityTerm {
            weight: int32(&t["weight"]).unwrap_or(0),
            pod_affinity_term: t["podAffinityTerm"]
                .as_object()
                .map(|_| affinity_term(&t["podAffinityTerm"])),
        })
        .collect()
}

fn affinity(a: &Value) -> Option<pb::Affinity> {
    a.as_object()?;
    let required = &a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    Some(pb::Affinity {
        node_affinity: a["nodeAffinity"].as_object().map(|_| pb::NodeAffinity {
            required_during_scheduling_ignored_during_execution: required.as_object().map(|_| {
                pb::NodeSelector {
                    node_selector_terms: items(&required["nodeSelectorTerms"])
                        .iter()
                        .map(|t| pb::NodeSelectorTerm {
                            match_expressions: node_requirements(&t["matchExpressions"]),
                            match_fields: node_requirements(&t["matchFields"]),
                        })
                        .collect(),
                }
            }),
            preferred_during_scheduling_ignored_during_execution: items(
                &a["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
            )
            .iter()
            .map(|t| pb::PreferredSchedulingTerm {
                weight: int32(&t["weight"]).unwrap_or(0),
                preference: t["preference"].as_object().map(|_| pb::NodeSelectorTerm {
                    match_expressions: node_requirements(&t["preference"]["matchExpressions"]),
                    match_fields: node_requirements(&t["preference"]["matchFields"]),
                }),
            })
            .collect(),
        }),
        pod_affinity: a["podAffinity"].as_object().map(|_| pb::PodAffinity {
            required_during_scheduling_ignored_during_execution: affinity_terms(&a["podAffinity"]),
            preferred_during_scheduling_ignored_during_execution: weighted_terms(&a["podAffinity"]),
        }),
        pod_anti_affinity: a["podAntiAffinity"]
            .as_object()
            .map(|_| pb::PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: affinity_terms(
                    &a["podAntiAffinity"],
                ),
                preferred_during_scheduling_ignored_during_execution: weighted_terms(
                    &a["podAntiAffinity"],
                ),
            }),
    })
}

pub fn pod(o: &Value) -> pb::Pod {
    let meta = &o["metadata"];
    let spec = &o["spec"];
    let status = &o["status"];
    pb::Pod {
        namespace: text(&meta["namespace"]),
        name: text(&meta["name"]),
        uid: text(&meta["uid"]),
        resource_version: resource_version(&meta["resourceVersion"]),
        labels: string_map(&meta["labels"]),
        node_name: text(&spec["nodeName"]),
        scheduler_name: text(&spec["schedulerName"]),
        priority: int32(&spec["priority"]),
        priority_class_name: text(&spec["priorityClassName"]),
        preemption_policy: text(&spec["preemptionPolicy"]),
        containers: items(&spec["containers"]).iter().map(container).collect(),
        init_containers: items(&spec["initContainers"])
            .iter()
            .map(container)
            .collect(),
        overhead: string_map(&spec["overhead"]),
        resources: spec["resources"]
            .as_object()
            .map(|_| pb::ResourceRequirements {
                requests: string_map(&spec["resources"]["requests"]),
                limits: string_map(&spec["resources"]["limits"]),
            }),
        tolerations: items(&spec["tolerations"])
            .iter()
            .map(|t| pb::Toleration {
                key: text(&t["key"]),
                operator: text(&t["operator"]),
                value: text(&t["value"]),
                effect: text(&t["effect"]),
                toleration_seconds: t["tolerationSeconds"].as_i64(),
            })
            .collect(),
        node_selector: string_map(&spec["nodeSelector"]),
        affinity: affinity(&spec["affinity"]),
        topology_spread_constraints: items(&spec["topologySpreadConstraints"])
            .iter()
            .map(|c| pb::TopologySpreadConstraint {
                max_skew: int32(&c["maxSkew"]).unwrap_or(0),
                topology_key: text(&c["topologyKey"]),
                when_unsatisfiable: text(&c["whenUnsatisfiable"]),
                label_selector: selector(&c["labelSelector"]),
                min_domains: int32(&c["minDomains"]),
                match_label_keys: strings(&c["matchLabelKeys"]),
                node_affinity_policy: text(&c["nodeAffinityPolicy"]),
                node_taints_policy: text(&c["nodeTaintsPolicy"]),
            })
            .collect(),
        start_time: text(&status["startTime"]),
        deletion_timestamp: text(&meta["deletionTimestamp"]),
        conditions: items(&status["conditions"])
            .iter()
            .map(|c| pb::PodCondition {
                r#type: text(&c["type"]),
                status: text(&c["status"]),
                reason: text(&c["reason"]),
            })
            .collect(),
        nominated_node_name: text(&status["nominatedNodeName"]),
        scheduling_group: spec["schedulingGroup"]
            .as_object()
            .map(|_| pb::PodSchedulingGroup {
                pod_group_name: text(&spec["schedulingGroup"]["podGroupName"]),
            }),
        phase: text(&status["phase"]),
    }
}
