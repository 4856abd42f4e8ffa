//! The bounded (pruned) candidate search must give exactly the decision of the full
//! search. `explain` turns pruning off, so the two are compared on generated clusters.

use preemptd::cache::ClusterCache;
use preemptd::engine::{self, DecideOptions, Outcome};
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::quantity::Quantity;
use preemptd::model::{ContainerResources, Pod};

/// Preemptor (priority, milli-cpu) pairs: from below every pod to above all, small to large.
const PREEMPTOR_SHAPES: [(i32, i64); 6] = [
    (50, 1500),
    (500, 3000),
    (5000, 6000),
    (200_000, 9000),
    (1000, 500),
    (100_000, 2500),
];

fn load(spec: &ClusterSpec) -> ClusterCache {
    generate::generate(spec).into_cache()
}

fn preemptor(base: Pod, priority: i32, millis: i64) -> Pod {
    let mut pod = base;
    pod.priority = priority;
    pod.details_mut().containers[0].requests = ContainerResources::new(vec![
        ("cpu".into(), Quantity::from_millis(millis)),
        ("memory".into(), Quantity::from_units(millis << 20)),
    ]);
    pod.finish()
}

/// The full pass's decision (`explain`: no pruning, no screening) and the decision with
/// `options`, asserted equal in everything a client sees.
fn decide_both(
    snapshot: &preemptd::cache::Snapshot,
    pod: &Pod,
    options: DecideOptions,
    what: &str,
) -> (engine::Decision, engine::Decision) {
    let full = engine::decide(
        snapshot,
        pod,
        &DecideOptions {
            explain: true,
            ..options.clone()
        },
    );
    let pruned = engine::decide(snapshot, pod, &options);
    assert_eq!(full.outcome, pruned.outcome, "{what}");
    assert_eq!(full.nominated_node, pruned.nominated_node, "{what}");
    assert_eq!(full.victims, pruned.victims, "{what}");
    assert_eq!(
        full.nominated_pods_to_clear, pruned.nominated_pods_to_clear,
        "{what}"
    );
    assert_eq!(full.pdb_violations, pruned.pdb_violations, "{what}");
    assert_eq!(full.feasible_nodes, pruned.feasible_nodes, "{what}");
    assert_eq!(full.message, pruned.message, "{what}");
    (full, pruned)
}

#[test]
fn pruned_search_decides_like_the_full_search() {
    let mut preempted = 0;
    let mut pruned_some = 0;
    for seed in 0..6 {
        let cache = load(&ClusterSpec {
            nodes: 150 + 40 * seed as usize,
            pods_per_node: 8 + 3 * seed as usize,
            seed,
        });
        let snapshot = cache.snapshot();
        let now = Some(1_800_000_000_000_000_000);
        // The first five shapes, as this test has always decided.
        let shapes = &PREEMPTOR_SHAPES[..PREEMPTOR_SHAPES.len() - 1];
        for (i, &(priority, millis)) in shapes.iter().enumerate() {
            for base in [
                generate::resource_preemptor(i as u64),
                generate::affinity_preemptor(i as u64),
            ] {
                let pod = preemptor(base, priority, millis);
                let options = DecideOptions {
                    now,
                    ..DecideOptions::default()
                };
                let (full, pruned) =
                    decide_both(&snapshot, &pod, options, &format!("seed {seed} pod {i}"));
                if full.outcome == Outcome::Preempt {
                    preempted += 1;
                    assert!(pruned.nodes_evaluated <= full.nodes_evaluated);
                    if pruned.nodes_evaluated < full.nodes_evaluated {
                        pruned_some += 1;
                    }
                }
            }
        }
    }
    assert!(
        preempted >= 20,
        "only {preempted} decisions preempted: the comparison is too weak"
    );
    assert!(
        pruned_some >= 10,
        "pruning skipped nodes in only {pruned_some} decisions"
    );
}

/// A node's digest gives the same filter status as its full entry whenever the engine
/// uses it, on clusters with taints, nominated pods and many priorities; and the digests
/// stay in step with the entries through updates and deletions.
#[test]
fn node_digests_filter_like_the_full_entries() {
    use preemptd::engine::filters::{PreFilter, static_filters};
    let mut compared = 0;
    let mut failing = 0;
    for seed in 0..4 {
        let spec = ClusterSpec {
            nodes: 60,
            pods_per_node: 6 + seed as usize,
            seed,
        };
        let cluster = generate::generate(&spec);
        let cache = ClusterCache::new();
        for node in &cluster.nodes {
            cache.upsert_node(node.clone());
        }
        for pod in &cluster.pods {
            cache.upsert_pod(pod.clone()).unwrap();
        }
        // Churn: deletions (slots move) and pods with five more priority levels.
        for pod in cluster.pods.iter().step_by(7) {
            cache.delete_pod(&pod.namespace, pod.name(), None).unwrap();
        }
        cache.delete_node(&cluster.nodes[3].name).unwrap();
        for (k, pod) in cluster.pods.iter().step_by(5).enumerate() {
            let mut pod = pod.clone();
            pod.priority = 10 + k as i32 % 5;
            cache.upsert_pod(pod).unwrap();
        }
        let snapshot = cache.snapshot();
        assert_eq!(snapshot.summaries.len(), snapshot.nodes.len());
        for (priority, millis) in [(5, 100), (12, 2000), (5000, 6000), (200_000, 60_000)] {
            for base in [
                generate::resource_preemptor(1),
                generate::affinity_preemptor(1),
            ] {
                let pod = preemptor(base, priority, millis);
                let pre = PreFilter::new(&pod, &snapshot);
                assert!(pre.digest_decides_resources());
                let resources_only = pod.details.pod_anti_affinity.is_empty();
                assert_eq!(pre.digest_suffices(), resources_only);
                for (summary, info) in snapshot.summaries.iter().zip(snapshot.nodes.iter()) {
                    assert_eq!(
                        *summary,
                        preemptd::cache::NodeSummary::of(info, summary.taint_set)
                    );
                    if summary.needs_full_read(pod.priority) || summary.hard_taints() {
                        continue;
                    }
                    let node = info.node.as_deref().unwrap();
                    let mut full = static_filters(&pod, node);
                    if full.is_success() {
                        full = pre.fits_with_nominated(&mut pre.scratch(info).unwrap());
                    }
                    let digest = pre.filter_digest(summary);
                    if resources_only || !digest.is_success() {
                        assert_eq!(digest, full, "node {}", info.name);
                        compared += 1;
                        failing += !full.is_success() as usize;
                    }
                }
            }
        }
    }
    assert!(
        compared > 500 && failing > 100,
        "{compared} compared, {failing} failing"
    );
}

/// On clusters of many node groups, a decision that screens groups (the default) is the
/// full pass's, message included: the skipped groups' filter reasons come from their
/// columns. Checked before and after churn that moves nodes between groups, for
/// preemptors tolerating nothing or every taint, and for one that is itself nominated;
/// and the screen does skip nodes.
#[test]
fn screened_groups_decide_like_the_full_pass() {
    use preemptd::cache::{GROUP_NODES, NodeGroup};
    use preemptd::model::{Toleration, TolerationOperator};

    let (mut preempted, mut screened) = (0, 0);
    for seed in 0..3u64 {
        let cluster = generate::generate(&ClusterSpec {
            nodes: 1200 + 300 * seed as usize,
            pods_per_node: 20,
            seed,
        });
        let cache = ClusterCache::new();
        for node in &cluster.nodes {
            cache.upsert_node(node.clone());
        }
        for pod in &cluster.pods {
            cache.upsert_pod(pod.clone()).unwrap();
        }
        let nominated = cluster
            .pods
            .iter()
            .find(|p| p.nominated_node_name.is_some())
            .unwrap()
            .clone();
        for churn in [false, true] {
            if churn {
                // A deleted node's slot takes the last node (of another group).
                for node in cluster.nodes.iter().step_by(97) {
                    cache.delete_node(&node.name).unwrap();
                }
                for pod in cluster.pods.iter().step_by(41) {
                    cache.delete_pod(&pod.namespace, pod.name(), None).unwrap();
                }
                for (k, pod) in cluster.pods.iter().skip(1).step_by(13).enumerate() {
                    let mut pod = pod.clone();
                    pod.priority = 10 + k as i32 % 7;
                    pod.resource_version += 1;
                    cache.upsert_pod(pod).unwrap();
                }
            }
            let snapshot = cache.snapshot();
            assert_eq!(
                snapshot.groups.len(),
                snapshot.nodes.len().div_ceil(GROUP_NODES)
            );
            for (g, group) in snapshot.groups.iter().enumerate() {
                let digests = snapshot.summaries.iter().skip(g * GROUP_NODES);
                assert_eq!(
                    **group,
                    NodeGroup::of(digests.take(GROUP_NODES)),
                    "group {g}"
                );
            }
            let now = Some(1_800_000_000_000_000_000);
            for (i, &(priority, millis)) in PREEMPTOR_SHAPES.iter().enumerate() {
                let mut tolerant = generate::resource_preemptor(i as u64);
                tolerant.details_mut().tolerations = vec![Toleration {
                    key: "".into(),
                    operator: TolerationOperator::Exists,
                    value: "".into(),
                    effect: None,
                }]
                .into();
                for base in [
                    generate::resource_preemptor(i as u64),
                    generate::affinity_preemptor(i as u64),
                    tolerant,
                    nominated.clone(),
                ] {
                    let pod = preemptor(base, priority, millis);
                    let what = format!("seed {seed} churn {churn} pod {i} {}", pod.name());
                    // Screening from the first node, as on clusters of 12,000 or more.
                    let options = DecideOptions {
                        now,
                        screen_min_nodes: Some(0),
                        ..DecideOptions::default()
                    };
                    let (full, pruned) = decide_both(&snapshot, &pod, options, &what);
                    assert_eq!(full.nodes_filtered, snapshot.nodes.len());
                    if full.outcome == Outcome::Preempt {
                        preempted += 1;
                        screened += (pruned.nodes_filtered < snapshot.nodes.len()) as usize;
                    }
                }
            }
        }
    }
    assert!(
        preempted >= 24 && screened * 2 >= preempted,
        "groups were skipped in only {screened} of {preempted} preempting decisions"
    );
}

/// A node's interned hard-taint set gives the node-only filters' verdict of the node
/// itself, for preemptors tolerating nothing, some taints, or everything; and nodes with
/// equal hard taints share one set.
#[test]
fn taint_sets_filter_like_the_nodes() {
    use preemptd::cache::{HardTaints, NO_HARD_TAINTS, READ_NODE};
    use preemptd::engine::filters::{hard_taints_failure, static_failure};
    use preemptd::model::{Taint, TaintEffect, Toleration, TolerationOperator};

    let cluster = generate::generate(&ClusterSpec {
        nodes: 400,
        pods_per_node: 4,
        seed: 3,
    });
    let cache = ClusterCache::new();
    let taint = |key: &str, value: &str, effect| Taint {
        key: key.into(),
        value: value.into(),
        effect,
    };
    for (i, node) in cluster.nodes.iter().enumerate() {
        let mut node = node.clone();
        match i % 7 {
            // Soft taints only: nothing for the node-only filters.
            0 => node.taints = vec![taint("soft", "x", TaintEffect::PreferNoSchedule)],
            1 => node
                .taints
                .push(taint("evict", "now", TaintEffect::NoExecute)),
            2 => {
                node.taints
                    .insert(0, taint("soft", "y", TaintEffect::PreferNoSchedule));
                node.taints
                    .push(taint("dedicated", "db", TaintEffect::NoSchedule));
            }
            3 => node.unschedulable = true,
            _ => {}
        }
        cache.upsert_node(node);
    }
    let snapshot = cache.snapshot();
    let tolerate = |key: &str, operator, value: &str, effect| Toleration {
        key: key.into(),
        operator,
        value: value.into(),
        effect,
    };
    let tolerations = [
        vec![],
        vec![tolerate(
            "dedicated",
            TolerationOperator::Equal,
            "gpu",
            Some(TaintEffect::NoSchedule),
        )],
        vec![
            tolerate("evict", TolerationOperator::Exists, "", None),
            tolerate(
                "node.kubernetes.io/unschedulable",
                TolerationOperator::Exists,
                "",
                None,
            ),
        ],
        vec![tolerate("", TolerationOperator::Exists, "", None)],
    ];
    let mut by_set = std::collections::HashMap::new();
    let (mut checked, mut failed) = (0, 0);
    for tolerations in tolerations {
        let mut pod = generate::resource_preemptor(1);
        pod.details_mut().tolerations = tolerations.into();
        let pod = pod.finish();
        for (summary, info) in snapshot.summaries.iter().zip(snapshot.nodes.iter()) {
            let node = info.node.as_deref().unwrap();
            assert_eq!(
                summary.taint_set == NO_HARD_TAINTS,
                HardTaints::of(node).is_none()
            );
            assert_ne!(summary.taint_set, READ_NODE);
            if summary.taint_set == NO_HARD_TAINTS {
                assert_eq!(static_failure(&pod, node), None, "node {}", node.name);
                continue;
            }
            let set = &snapshot.taint_sets[usize::from(summary.taint_set) - 1];
            assert_eq!(**set, HardTaints::of(node).unwrap());
            assert_eq!(
                *by_set
                    .entry(HardTaints::of(node))
                    .or_insert(summary.taint_set),
                summary.taint_set
            );
            let expected = static_failure(&pod, node);
            assert_eq!(
                hard_taints_failure(&pod, set),
                expected,
                "node {}",
                node.name
            );
            checked += 1;
            failed += expected.is_some() as usize;
        }
    }
    assert!(
        checked > 500 && failed > 200 && failed < checked,
        "{checked} checked, {failed} failed"
    );
    assert_eq!(snapshot.taint_sets.len(), by_set.len());
}
