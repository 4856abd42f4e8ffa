//! Micro-benchmarks of the engine's hot paths on generated clusters.
//! Run: `cargo bench --bench engine` (divan prints median and spread per case).

use std::sync::LazyLock;

use preemptd::cache::{ClusterCache, Snapshot};
use preemptd::engine::{self, DecideOptions};
use preemptd::generate::{self, ClusterSpec};

fn main() {
    // Built before timing starts, so no sample includes loading the cluster.
    LazyLock::force(&SNAPSHOT_5K);
    divan::main();
}

fn load(nodes: usize, pods_per_node: usize) -> ClusterCache {
    generate::generate(&ClusterSpec {
        nodes,
        pods_per_node,
        seed: 1,
    })
    .into_cache()
}

static CACHE_5K: LazyLock<ClusterCache> = LazyLock::new(|| load(5_000, 30));
static SNAPSHOT_5K: LazyLock<Snapshot> = LazyLock::new(|| CACHE_5K.snapshot());

#[divan::bench(sample_count = 30)]
fn snapshot_5k_nodes() -> Snapshot {
    CACHE_5K.snapshot()
}

#[divan::bench(sample_count = 30)]
fn decide_resources_5k_x_30() -> engine::Decision {
    engine::decide(
        &SNAPSHOT_5K,
        &generate::resource_preemptor(1),
        &DecideOptions::default(),
    )
}

#[divan::bench(sample_count = 20)]
fn decide_affinity_spread_5k_x_30() -> engine::Decision {
    engine::decide(
        &SNAPSHOT_5K,
        &generate::affinity_preemptor(1),
        &DecideOptions::default(),
    )
}

#[divan::bench(sample_count = 10)]
fn upsert_pod_into_5k_cluster(bencher: divan::Bencher) {
    let pods: Vec<_> = generate::generate(&ClusterSpec {
        nodes: 50,
        pods_per_node: 20,
        seed: 9,
    })
    .pods
    .into_iter()
    .map(|mut p| {
        p.node_name = Some("node-000001".into());
        let (name, uid) = (format!("bench-{}", p.name()), format!("bench-{}", p.uid()));
        p.renamed(&name, &uid)
    })
    .collect();
    let mut i = 0;
    bencher.bench_local(|| {
        let pod = pods[i % pods.len()].clone();
        i += 1;
        CACHE_5K.upsert_pod(pod)
    });
}
