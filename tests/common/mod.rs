//! Small builders for engine tests: nodes and pods with just the fields a test needs.
#![allow(dead_code)]

use preemptd::cache::ClusterCache;
use preemptd::engine::{self, DecideOptions, Decision};
use preemptd::model::quantity::Quantity;
use preemptd::model::{
    Container, ContainerResources, HostPort, LabelSelector, Labels, Node, Pod, PodAffinityTerm,
    PodCondition, PodDisruptionBudget, Protocol, Resources, Str, Taint, TaintEffect,
};

pub fn resources(cpu_milli: i64, memory: i64, pods: i64) -> Resources {
    Resources {
        milli_cpu: cpu_milli,
        memory,
        pods,
        ..Resources::default()
    }
}

pub fn node(name: &str, cpu_milli: i64, memory: i64) -> Node {
    Node {
        name: name.into(),
        uid: name.into(),
        resource_version: 0,
        labels: [("kubernetes.io/hostname", name)].into_iter().collect(),
        taints: Vec::new(),
        unschedulable: false,
        annotations: Default::default(),
        conditions: Vec::new(),
        images: Vec::new(),
        allocatable: resources(cpu_milli, memory, 110),
    }
}

pub fn with_labels(mut node: Node, pairs: &[(&str, &str)]) -> Node {
    let mut all: Vec<(Str, Str)> = node
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    all.extend(pairs.iter().map(|(k, v)| (Str::from(*k), Str::from(*v))));
    node.labels = Labels::new(all);
    node
}

pub fn tainted(mut node: Node, key: &str, value: &str) -> Node {
    node.taints.push(Taint {
        key: key.into(),
        value: value.into(),
        effect: TaintEffect::NoSchedule,
    });
    node
}

/// A pod requesting `cpu_milli` millicores and `memory` bytes; bound when `node` is set.
pub fn pod(name: &str, priority: i32, cpu_milli: i64, memory: i64, node: Option<&str>) -> Pod {
    let mut p = Pod::new("default", name, name);
    p.priority = priority;
    p.node_name = node.map(Str::from);
    p.phase = if node.is_some() {
        preemptd::model::PodPhase::Running
    } else {
        preemptd::model::PodPhase::Pending
    };
    p.details_mut().containers = vec![Container {
        name: "app".into(),
        requests: ContainerResources::new(vec![
            ("cpu".into(), Quantity::from_millis(cpu_milli)),
            ("memory".into(), Quantity::from_units(memory)),
        ]),
        ports: Vec::new(),
        restart_always: false,
        image: "".into(),
    }];
    p.finish()
}

pub fn labelled(mut p: Pod, pairs: &[(&str, &str)]) -> Pod {
    p.labels = pairs.iter().map(|(k, v)| (*k, *v)).collect();
    p
}

pub fn started(mut p: Pod, seconds: i64) -> Pod {
    p.start_time = Some(seconds * 1_000_000_000).into();
    p
}

pub fn nominated(mut p: Pod, node: &str) -> Pod {
    p.nominated_node_name = Some(node.into());
    p
}

pub fn with_host_port(mut p: Pod, ip: &str, protocol: Protocol, port: i32) -> Pod {
    p.details_mut().containers[0].ports.push(HostPort {
        ip: ip.into(),
        protocol,
        port,
    });
    p.finish()
}

pub fn terminating_by_preemption(mut p: Pod) -> Pod {
    p.terminating = true;
    p.details_mut().conditions.push(PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: "PreemptionByScheduler".into(),
    });
    p
}

pub fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: pairs.iter().map(|(k, v)| (*k, *v)).collect(),
        match_expressions: Vec::new(),
    }
}

pub fn anti_affinity(mut p: Pod, match_labels: &[(&str, &str)], topology_key: &str) -> Pod {
    p.details_mut().pod_anti_affinity.push(PodAffinityTerm {
        label_selector: Some(selector(match_labels)),
        namespaces: Vec::new(),
        namespace_selector: None,
        topology_key: topology_key.into(),
    });
    p
}

pub fn pdb(name: &str, match_labels: &[(&str, &str)], allowed: i32) -> PodDisruptionBudget {
    PodDisruptionBudget {
        namespace: "default".into(),
        name: name.into(),
        uid: name.into(),
        resource_version: 0,
        selector: Some(selector(match_labels)),
        disruptions_allowed: allowed,
        disrupted_pods: Vec::new(),
    }
}

pub struct Cluster {
    pub cache: ClusterCache,
}

impl Cluster {
    pub fn new(nodes: Vec<Node>, pods: Vec<Pod>, pdbs: Vec<PodDisruptionBudget>) -> Self {
        let cache = ClusterCache::new();
        for n in nodes {
            cache.upsert_node(n);
        }
        for p in pods {
            cache.upsert_pod(p).expect("pod loads");
        }
        for b in pdbs {
            cache.upsert_pdb(b);
        }
        Cluster { cache }
    }

    pub fn decide(&self, preemptor: &Pod) -> Decision {
        engine::decide(
            &self.cache.snapshot(),
            preemptor,
            &DecideOptions {
                explain: true,
                now: Some(1_000_000 * 1_000_000_000),
                ..DecideOptions::default()
            },
        )
    }
}

pub fn victim_names(decision: &Decision) -> Vec<String> {
    decision
        .victims
        .iter()
        .map(|v| v.name.to_string())
        .collect()
}
