//! The bounded (pruned) candidate search must give exactly the decision of the full
//! search. `explain` turns pruning off, so the two are compared on generated clusters.

use preemptd::cache::ClusterCache;
use preemptd::engine::{self, DecideOptions, Outcome};
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::quantity::Quantity;
use preemptd::model::{ContainerResources, Pod};

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
        for (i, (priority, millis)) in [
            (50, 1500),
            (500, 3000),
            (5000, 6000),
            (200_000, 9000),
            (1000, 500),
        ]
        .into_iter()
        .enumerate()
        {
            for base in [
                generate::resource_preemptor(i as u64),
                generate::affinity_preemptor(i as u64),
            ] {
                let pod = preemptor(base, priority, millis);
                let full = engine::decide(&snapshot, &pod, &DecideOptions { explain: true, now });
                let pruned = engine::decide(
                    &snapshot,
                    &pod,
                    &DecideOptions {
                        explain: false,
                        now,
                    },
                );
                assert_eq!(full.outcome, pruned.outcome, "seed {seed} pod {i}");
                assert_eq!(
                    full.nominated_node, pruned.nominated_node,
                    "seed {seed} pod {i}"
                );
                assert_eq!(full.victims, pruned.victims, "seed {seed} pod {i}");
                assert_eq!(full.nominated_pods_to_clear, pruned.nominated_pods_to_clear);
                assert_eq!(full.pdb_violations, pruned.pdb_violations);
                assert_eq!(full.message, pruned.message);
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
                    assert_eq!(*summary, preemptd::cache::NodeSummary::of(info));
                    if summary.needs_full_read(pod.priority) {
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
