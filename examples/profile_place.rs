//! Loads a generated cluster once, then places one small pod many times on it, as a
//! single pod's `explain` or each gang member does: a target for `perf record`.
//! `cargo run --release --features generate --example profile_place -- [resources|affinity] [nodes] [pods] [iterations]`

use std::time::Instant;

use preemptd::engine::KubernetesVersion;
use preemptd::engine::placement::ClusterView;
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::ContainerResources;
use preemptd::model::quantity::Quantity;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map(String::as_str).unwrap_or("resources");
    let nodes = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let pods = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(10);
    let iterations: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let cache = generate::generate(&ClusterSpec {
        nodes,
        pods_per_node: pods,
        seed: 1,
    })
    .into_cache();
    let view = ClusterView::new(&cache.snapshot(), KubernetesVersion::default());
    let mut pod = if kind == "affinity" {
        generate::affinity_preemptor(1)
    } else {
        generate::resource_preemptor(1)
    };
    // Small enough to fit on most nodes: every feasible node is scored.
    let details = pod.details_mut();
    details.containers.truncate(1);
    details.init_containers.clear();
    if let Some(container) = details.containers.first_mut() {
        container.requests = ContainerResources::new(vec![
            ("cpu".into(), Quantity::from_millis(10)),
            ("memory".into(), Quantity::from_units(16 << 20)),
        ]);
    }
    let pod = pod.finish();
    let first = view.place(&pod);
    println!(
        "{kind}: {} feasible of {} nodes, placed on {:?} (total {})",
        first.feasible,
        view.snapshot().nodes.len(),
        first.node,
        first.total
    );
    let start = Instant::now();
    for _ in 0..iterations {
        std::hint::black_box(view.place(std::hint::black_box(&pod)));
    }
    let per_call = start.elapsed() / iterations as u32;
    println!("place: {per_call:?} per call over {iterations} calls");
}
