//! Clusters for gang (workload-aware) preemption benchmarks, on the shape of upstream's
//! workload-preemption benchmark (kubernetes#140651): 1,000 nodes, 10 running pods on each
//! (10,000 potential victims) — plain pods, members of `single`-mode gangs and members of
//! `all`-mode gangs spanning ten nodes — and pending PodGroups whose every member needs most
//! of a node, so each member's node must be cleared.

use super::Rng;
use crate::model::quantity::Quantity;
use crate::model::{
    Container, ContainerResources, DisruptionMode, Labels, Node, Pod, PodGroup, PodPhase,
    Resources, SchedulingPolicy, Str,
};

/// Sizes and seed of a gang cluster.
#[derive(Clone, Debug)]
pub struct GangClusterSpec {
    /// How many nodes.
    pub nodes: usize,
    /// Running pods on each node (the potential victims).
    pub pods_per_node: usize,
    /// The seed: the same spec generates the same cluster.
    pub seed: u64,
}

impl Default for GangClusterSpec {
    /// kubernetes#140651's shape.
    fn default() -> Self {
        Self {
            nodes: 1_000,
            pods_per_node: 10,
            seed: 1,
        }
    }
}

/// A generated gang cluster, in load order (nodes, PodGroups, then pods).
#[derive(Clone, Debug, Default)]
pub struct GangCluster {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The running gangs' PodGroups.
    pub pod_groups: Vec<PodGroup>,
    /// The running pods.
    pub pods: Vec<Pod>,
}

/// A pending gang: its PodGroup and its member pods, in member order.
#[derive(Clone, Debug)]
pub struct PendingGang {
    /// The PodGroup.
    pub group: PodGroup,
    /// The members (pending, no node).
    pub members: Vec<Pod>,
}

/// The namespace of the running pods and gangs.
pub const VICTIM_NAMESPACE: &str = "inference";
/// The namespace of the pending gangs.
pub const PREEMPTOR_NAMESPACE: &str = "training";
/// How many nodes a running gang spans (one member on each).
pub const RUNNING_GANG_NODES: usize = 10;
/// The pending gangs' priority: above every running pod.
pub const PREEMPTOR_PRIORITY: i32 = 1_000_000;

const NODE_MILLI_CPU: i64 = 4_000;
const VICTIM_MILLI_CPU: i64 = 350;
const MEMBER_MILLI_CPU: i64 = 2_000;
const GI: i64 = 1 << 30;
const START: i64 = 1_700_000_000_000_000_000;

/// Generates the running cluster. On every node, slot `s` of its `pods_per_node` holds a
/// plain pod (slots 0–3), a member of a `single`-mode gang (4–6) or of an `all`-mode gang
/// (7 and up); a gang's members sit in the same slot of ten consecutive nodes.
pub fn gang_cluster(spec: &GangClusterSpec) -> GangCluster {
    let mut rng = Rng::new(spec.seed);
    let mut out = GangCluster::default();
    for i in 0..spec.nodes {
        let name = format!("node-{i:05}");
        out.nodes.push(Node {
            name: name.as_str().into(),
            uid: format!("uid-{name}").into(),
            resource_version: 1,
            labels: Labels::new(vec![
                ("kubernetes.io/hostname".into(), name.as_str().into()),
                (
                    "topology.kubernetes.io/zone".into(),
                    format!("zone-{}", i % 10).into(),
                ),
            ]),
            taints: Vec::new(),
            unschedulable: false,
            annotations: Labels::default(),
            conditions: Vec::new(),
            images: Vec::new(),
            allocatable: Resources {
                milli_cpu: NODE_MILLI_CPU,
                memory: 16 * GI,
                ephemeral_storage: 100 * GI,
                pods: 110,
                scalars: Vec::new(),
            },
        });
    }
    for slot in 0..spec.pods_per_node {
        let mode = match slot {
            0..=3 => None,
            4..=6 => Some(DisruptionMode::Single),
            _ => Some(DisruptionMode::All),
        };
        for (index, node) in out.nodes.iter().enumerate() {
            let priority = if rng.chance(50) { 100 } else { 1_000 };
            let name = format!("slot{slot}-{index:05}");
            let mut pod = running_pod(&name, node.name.clone(), &mut rng);
            match mode {
                None => pod.priority = priority,
                Some(mode) => {
                    let gang = format!("gang-slot{slot}-{:05}", index / RUNNING_GANG_NODES);
                    if index % RUNNING_GANG_NODES == 0 {
                        out.pod_groups.push(pod_group(
                            VICTIM_NAMESPACE,
                            &gang,
                            priority,
                            mode,
                            RUNNING_GANG_NODES as i32,
                        ));
                    }
                    // Members carry their group's priority, as admission requires.
                    pod.priority = out.pod_groups.last().map_or(priority, |g| g.priority);
                    pod.details_mut().scheduling_group = Some(gang.as_str().into());
                }
            }
            out.pods.push(pod.finish());
        }
    }
    out
}

/// Pending gang number `index` of `members` pods, each needing half a node's cpu (so every
/// member's node must be cleared of most of its pods).
pub fn pending_gang(members: usize, index: u64) -> PendingGang {
    let name = format!("train-{members}-{index}");
    let group = pod_group(
        PREEMPTOR_NAMESPACE,
        &name,
        PREEMPTOR_PRIORITY,
        DisruptionMode::All,
        members as i32,
    );
    let members = (0..members)
        .map(|m| {
            let pod_name = format!("{name}-{m:02}");
            let mut pod = Pod::new(PREEMPTOR_NAMESPACE, &pod_name, &format!("uid-{pod_name}"));
            pod.resource_version = 1;
            pod.priority = PREEMPTOR_PRIORITY;
            pod.labels = [("job", name.clone())].into_iter().collect();
            pod.details_mut().scheduling_group = Some(name.as_str().into());
            pod.details_mut().containers = vec![container(MEMBER_MILLI_CPU)];
            pod.finish()
        })
        .collect();
    PendingGang { group, members }
}

fn running_pod(name: &str, node: Str, rng: &mut Rng) -> Pod {
    let mut pod = Pod::new(VICTIM_NAMESPACE, name, &format!("uid-{name}"));
    pod.resource_version = 1;
    pod.node_name = Some(node);
    pod.phase = PodPhase::Running;
    pod.start_time = Some(START + rng.below(1_000_000) as i64 * 1_000_000_000).into();
    pod.labels = [("app", "inference")].into_iter().collect();
    pod.details_mut().containers = vec![container(VICTIM_MILLI_CPU)];
    pod
}

fn container(milli_cpu: i64) -> Container {
    Container {
        name: "main".into(),
        requests: ContainerResources::new(vec![
            ("cpu".into(), Quantity::from_millis(milli_cpu)),
            ("memory".into(), Quantity::from_units(milli_cpu * (1 << 20))),
        ]),
        ports: Vec::new(),
        restart_always: false,
        image: "".into(),
    }
}

fn pod_group(
    namespace: &str,
    name: &str,
    priority: i32,
    mode: DisruptionMode,
    min_count: i32,
) -> PodGroup {
    PodGroup {
        namespace: namespace.into(),
        name: name.into(),
        uid: format!("uid-pg-{name}").into(),
        resource_version: 1,
        creation_time: Some(START),
        policy: SchedulingPolicy::Gang { min_count },
        disruption_mode: mode,
        priority_class_name: None,
        priority,
        priority_unset: false,
        preemption_policy: None,
        parent: None,
        workload: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_shape_has_ten_thousand_victims_in_gangs_spanning_ten_nodes() {
        let cluster = gang_cluster(&GangClusterSpec::default());
        assert_eq!(cluster.nodes.len(), 1_000);
        assert_eq!(cluster.pods.len(), 10_000);
        // Slots 4..10 are gang members: 6 slots x 100 gangs of ten.
        assert_eq!(cluster.pod_groups.len(), 600);
        let all = cluster
            .pod_groups
            .iter()
            .filter(|g| g.disruption_mode == DisruptionMode::All)
            .count();
        assert_eq!(all, 300);
        let first = &cluster.pod_groups[0];
        let members: Vec<_> = cluster
            .pods
            .iter()
            .filter(|p| p.details.scheduling_group.as_ref() == Some(&first.name))
            .collect();
        assert_eq!(members.len(), RUNNING_GANG_NODES);
        assert!(members.iter().all(|p| p.priority == first.priority));
        assert_eq!(
            gang_cluster(&GangClusterSpec::default()).pods,
            cluster.pods,
            "the same seed gives the same cluster"
        );
    }

    #[test]
    fn a_pending_gang_needs_half_a_node_per_member() {
        let gang = pending_gang(8, 3);
        assert_eq!(gang.members.len(), 8);
        assert_eq!(gang.group.policy, SchedulingPolicy::Gang { min_count: 8 });
        assert!(gang.members.iter().all(|p| p.node_name.is_none()
            && p.details.requests.milli_cpu == MEMBER_MILLI_CPU
            && p.details.scheduling_group.as_deref() == Some("train-8-3")));
    }
}
