//! Deterministic synthetic clusters for benchmarks and load tests: a realistic mix of
//! priority classes, zones and hostnames, labels, PDBs, taints and tolerations, host ports,
//! pending nominated pods and terminating pods. The same seed and sizes give the same
//! cluster, object for object.

pub mod gangs;

use crate::model::quantity::Quantity;
use crate::model::{
    Container, ContainerResources, HostPort, LabelSelector, Labels, Node, Pod, PodAffinityTerm,
    PodDisruptionBudget, PodPhase, Protocol, Resources, Str, Taint, TaintEffect, Toleration,
    TolerationOperator, TopologySpreadConstraint, WhenUnsatisfiable,
};

/// Sizes and seed of a generated cluster.
#[derive(Clone, Debug)]
pub struct ClusterSpec {
    /// How many nodes.
    pub nodes: usize,
    /// How many pods each node is given.
    pub pods_per_node: usize,
    /// The seed: the same spec generates the same cluster.
    pub seed: u64,
}

/// A generated cluster, in load order (nodes, PDBs, then pods).
#[derive(Clone, Debug, Default)]
pub struct GeneratedCluster {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The pods.
    pub pods: Vec<Pod>,
    /// The PodDisruptionBudgets.
    pub pdbs: Vec<PodDisruptionBudget>,
}

impl GeneratedCluster {
    /// Loads the cluster into a new cache (nodes, PDBs, then pods).
    pub fn into_cache(self) -> crate::cache::ClusterCache {
        let cache = crate::cache::ClusterCache::new();
        for node in self.nodes {
            cache.upsert_node(node);
        }
        for pdb in self.pdbs {
            cache.upsert_pdb(pdb);
        }
        for pod in self.pods {
            // Generated names and uids are unique, so no upsert can conflict.
            let _ = cache.upsert_pod(pod);
        }
        cache
    }
}

/// splitmix64: tiny, fast and good enough for synthetic data.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// The next pseudo-random value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// How many zones the nodes are spread over.
pub const ZONES: usize = 8;
/// How many apps the pods belong to.
pub const APPS: usize = 40;
/// Priority classes of the bound pods: batch, default, service, critical.
pub const PRIORITIES: [i32; 4] = [0, 100, 1000, 100_000];
/// The namespaces the pods are spread over.
pub const NAMESPACES: [&str; 4] = ["batch", "web", "data", "platform"];

fn cpu(millis: i64) -> Quantity {
    Quantity::from_millis(millis)
}

fn bytes(value: i64) -> Quantity {
    Quantity::from_units(value)
}

const GI: i64 = 1 << 30;
const MI: i64 = 1 << 20;

fn app_name(i: u64) -> String {
    format!("app-{i:02}")
}

/// Generates the cluster for `spec`. Nodes are filled to roughly 85–95% of their cpu so
/// a large pod needs preemption nearly everywhere.
pub fn generate(spec: &ClusterSpec) -> GeneratedCluster {
    let mut rng = Rng::new(spec.seed);
    let mut out = GeneratedCluster::default();
    for i in 0..spec.nodes {
        let name = format!("node-{i:06}");
        let zone = format!("zone-{}", i % ZONES);
        let cores = [16, 32, 64][rng.below(3) as usize];
        let mut labels: Vec<(Str, Str)> = vec![
            ("kubernetes.io/hostname".into(), name.as_str().into()),
            ("topology.kubernetes.io/zone".into(), zone.as_str().into()),
            (
                "node.kubernetes.io/instance-type".into(),
                format!("m{cores}").into(),
            ),
            (
                "disk".into(),
                if rng.chance(30) { "ssd" } else { "hdd" }.into(),
            ),
        ];
        if i % 20 == 0 {
            labels.push(("accelerator".into(), "gpu".into()));
        }
        let mut taints = Vec::new();
        if i % 20 == 0 {
            taints.push(Taint {
                key: "dedicated".into(),
                value: "gpu".into(),
                effect: TaintEffect::NoSchedule,
            });
        }
        let mut scalars = Vec::new();
        if i % 20 == 0 {
            scalars.push(("example.com/gpu".into(), 8));
        }
        out.nodes.push(Node {
            name: name.as_str().into(),
            uid: format!("uid-{name}").into(),
            resource_version: 1,
            labels: Labels::new(labels),
            taints,
            unschedulable: i % 500 == 499,
            annotations: Default::default(),
            conditions: Vec::new(),
            images: Vec::new(),
            allocatable: Resources {
                milli_cpu: cores * 1000 - 200,
                memory: cores * 4 * GI - 512 * MI,
                ephemeral_storage: 100 * GI,
                pods: 110.max(spec.pods_per_node as i64 + 10),
                scalars,
            },
        });
    }
    for (n, app) in (0..APPS as u64).enumerate() {
        if n % 4 != 0 {
            continue;
        }
        let namespace = NAMESPACES[n % NAMESPACES.len()];
        out.pdbs.push(PodDisruptionBudget {
            namespace: namespace.into(),
            name: format!("{}-pdb", app_name(app)).into(),
            uid: format!("uid-pdb-{app}").into(),
            resource_version: 1,
            selector: Some(LabelSelector {
                match_labels: [("app", app_name(app))].into_iter().collect(),
                match_expressions: Vec::new(),
            }),
            disruptions_allowed: (rng.below(3)) as i32,
            disrupted_pods: Vec::new(),
        });
    }
    let mut serial = 0u64;
    for (index, node) in out.nodes.clone().iter().enumerate() {
        // Fill 93–99% of the node's cpu: split the budget by random weights.
        let budget = node.allocatable.milli_cpu * (93 + rng.below(7) as i64) / 100;
        let weights: Vec<i64> = (0..spec.pods_per_node)
            .map(|_| 50 + rng.below(100) as i64)
            .collect();
        let total_weight: i64 = weights.iter().sum::<i64>().max(1);
        for weight in weights {
            serial += 1;
            let app = rng.below(APPS as u64);
            let namespace = NAMESPACES[(app as usize) % NAMESPACES.len()];
            let priority = match rng.below(10) {
                0..=3 => PRIORITIES[0],
                4..=6 => PRIORITIES[1],
                7..=8 => PRIORITIES[2],
                _ => PRIORITIES[3],
            };
            let millis = (budget * weight / total_weight).max(1);
            let mut pod = Pod::new(
                namespace,
                &format!("{}-{serial:07}", app_name(app)),
                &format!("uid-pod-{serial:07}"),
            );
            pod.resource_version = 1;
            pod.labels = [
                ("app", app_name(app)),
                (
                    "tier",
                    ["frontend", "backend", "worker"][(app % 3) as usize].to_string(),
                ),
            ]
            .into_iter()
            .collect();
            pod.node_name = Some(node.name.clone());
            pod.priority = priority;
            pod.phase = PodPhase::Running;
            pod.start_time =
                Some(1_700_000_000_000_000_000 + rng.below(10_000_000) as i64 * 1_000_000_000)
                    .into();
            let mut ports = Vec::new();
            if rng.chance(3) {
                ports.push(HostPort {
                    ip: "0.0.0.0".into(),
                    protocol: Protocol::Tcp,
                    port: 9100,
                });
            }
            pod.details_mut().containers = vec![Container {
                name: "main".into(),
                requests: ContainerResources::new(vec![
                    ("cpu".into(), cpu(millis)),
                    ("memory".into(), bytes(millis * 2 * MI)),
                ]),
                ports,
                restart_always: false,
                image: "".into(),
            }];
            if index % 20 == 0 {
                pod.details_mut().tolerations.push(Toleration {
                    key: "dedicated".into(),
                    operator: TolerationOperator::Equal,
                    value: "gpu".into(),
                    effect: Some(TaintEffect::NoSchedule),
                });
            }
            if rng.chance(1) {
                pod.terminating = true;
            }
            out.pods.push(pod.finish());
        }
    }
    // A few pending pods nominated by earlier preemptions.
    let nominated = (spec.nodes / 50).max(1);
    for k in 0..nominated {
        serial += 1;
        let node =
            &out.nodes[rng.below(out.nodes.len().max(1) as u64) as usize % out.nodes.len().max(1)];
        let mut pod = Pod::new(
            "web",
            &format!("pending-{k:05}"),
            &format!("uid-pending-{serial:07}"),
        );
        pod.resource_version = 1;
        pod.priority = PRIORITIES[1 + (k % 3)];
        pod.nominated_node_name = Some(node.name.clone());
        pod.details_mut().containers = vec![Container {
            name: "main".into(),
            requests: ContainerResources::new(vec![("cpu".into(), cpu(500))]),
            ports: Vec::new(),
            restart_always: false,
            image: "".into(),
        }];
        out.pods.push(pod.finish());
    }
    out
}

/// A generated cluster's pods and two preemptors (resources-only, and with anti-affinity
/// and spread): pods of every shape, for conversion tests.
pub fn mixed_pods(nodes: usize, pods_per_node: usize, seed: u64) -> Vec<Pod> {
    let mut pods = generate(&ClusterSpec {
        nodes,
        pods_per_node,
        seed,
    })
    .pods;
    pods.push(affinity_preemptor(seed));
    pods.push(resource_preemptor(seed + 1));
    pods
}

/// A pending pod that fits nowhere without preemption: resources only.
pub fn resource_preemptor(index: u64) -> Pod {
    let mut pod = Pod::new(
        "web",
        &format!("preemptor-{index}"),
        &format!("uid-preemptor-{index}"),
    );
    pod.priority = 10_000;
    pod.labels = [("app", "checkout")].into_iter().collect();
    pod.details_mut().containers = vec![Container {
        name: "main".into(),
        requests: ContainerResources::new(vec![
            ("cpu".into(), cpu(6000)),
            ("memory".into(), bytes(8 * GI)),
        ]),
        ports: Vec::new(),
        restart_always: false,
        image: "".into(),
    }];
    pod.finish()
}

/// A pending pod with required anti-affinity (one per host) and a zone spread constraint.
pub fn affinity_preemptor(index: u64) -> Pod {
    let mut pod = resource_preemptor(index);
    let selector = LabelSelector {
        match_labels: [("app", "app-07")].into_iter().collect(),
        match_expressions: Vec::new(),
    };
    pod.labels = [("app", "app-07")].into_iter().collect();
    pod.namespace = NAMESPACES[7 % NAMESPACES.len()].into();
    pod.details_mut().pod_anti_affinity.push(PodAffinityTerm {
        label_selector: Some(selector.clone()),
        namespaces: Vec::new(),
        namespace_selector: None,
        topology_key: "kubernetes.io/hostname".into(),
    });
    pod.details_mut()
        .topology_spread
        .push(TopologySpreadConstraint {
            max_skew: 5,
            topology_key: "topology.kubernetes.io/zone".into(),
            when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
            label_selector: Some(selector),
            min_domains: None,
            match_label_keys: Vec::new(),
            node_affinity_policy: crate::model::InclusionPolicy::Honor,
            node_taints_policy: crate::model::InclusionPolicy::Ignore,
        });
    pod
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_cluster() {
        let spec = ClusterSpec {
            nodes: 30,
            pods_per_node: 5,
            seed: 7,
        };
        let a = generate(&spec);
        let b = generate(&spec);
        assert_eq!(a.nodes, b.nodes);
        assert_eq!(a.pods, b.pods);
        assert_eq!(a.pdbs, b.pdbs);
        assert_eq!(a.nodes.len(), 30);
        assert_eq!(a.pods.iter().filter(|p| p.node_name.is_some()).count(), 150);
        let c = generate(&ClusterSpec { seed: 8, ..spec });
        assert_ne!(a.pods, c.pods);
    }
}
