//! Small clusters for the phases' unit tests: nodes and pods with just the fields a test
//! needs.

use crate::cache::{ClusterCache, Snapshot};
use crate::model::quantity::Quantity;
use crate::model::{
    Container, ContainerResources, Node, Pod, PodCondition, PodPhase, Resources, Str, Taint,
    TaintEffect,
};

pub(super) const GI: i64 = 1 << 30;

pub(super) fn node(name: &str, cpu_milli: i64, memory: i64) -> Node {
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
        allocatable: Resources {
            milli_cpu: cpu_milli,
            memory,
            pods: 110,
            ..Resources::default()
        },
    }
}

pub(super) fn tainted(mut node: Node, key: &str) -> Node {
    node.taints.push(Taint {
        key: key.into(),
        value: "".into(),
        effect: TaintEffect::NoSchedule,
    });
    node
}

/// A pod requesting `cpu_milli` millicores and `memory` bytes; bound when `node` is set.
pub(super) fn pod(
    name: &str,
    priority: i32,
    cpu_milli: i64,
    memory: i64,
    node: Option<&str>,
) -> Pod {
    let mut p = Pod::new("default", name, name);
    p.priority = priority;
    p.node_name = node.map(Str::from);
    p.phase = if node.is_some() {
        PodPhase::Running
    } else {
        PodPhase::Pending
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

pub(super) fn started(mut p: Pod, seconds: i64) -> Pod {
    p.start_time = Some(seconds * 1_000_000_000).into();
    p
}

pub(super) fn terminating_by_preemption(mut p: Pod) -> Pod {
    p.terminating = true;
    p.details_mut().conditions.push(PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: "PreemptionByScheduler".into(),
    });
    p
}

pub(super) fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>) -> Snapshot {
    let cache = ClusterCache::new();
    for n in nodes {
        cache.upsert_node(n);
    }
    for p in pods {
        cache.upsert_pod(p).expect("pod loads");
    }
    cache.snapshot()
}

/// A PodGroup in `default` at `priority`: a gang of at least `min_count` (`None`: basic).
pub(super) fn pod_group(
    name: &str,
    priority: i32,
    mode: crate::model::DisruptionMode,
    min_count: Option<i32>,
) -> crate::model::PodGroup {
    crate::model::PodGroup {
        namespace: "default".into(),
        name: name.into(),
        uid: format!("uid-{name}").into(),
        resource_version: 0,
        creation_time: None,
        policy: min_count.map_or(crate::model::SchedulingPolicy::Basic, |min_count| {
            crate::model::SchedulingPolicy::Gang { min_count }
        }),
        disruption_mode: mode,
        priority_class_name: None,
        priority,
        priority_unset: false,
        preemption_policy: None,
        parent: None,
        workload: None,
    }
}

/// `p` as a member of group `group` (`spec.schedulingGroup.podGroupName`).
pub(super) fn member(mut p: Pod, group: &str) -> Pod {
    p.details_mut().scheduling_group = Some(group.into());
    p
}

/// [`snapshot`] holding `groups` too.
pub(super) fn snapshot_with_groups(
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    groups: Vec<crate::model::PodGroup>,
) -> Snapshot {
    let mut snapshot = snapshot(nodes, pods);
    for group in groups {
        snapshot.pod_groups.upsert_group(triomphe::Arc::new(group));
    }
    snapshot
}
