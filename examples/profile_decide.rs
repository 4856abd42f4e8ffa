//! Loads a generated cluster once, then runs many decisions: a target for `perf record`.
//! `cargo run --release --example profile_decide -- [resources|affinity] [nodes] [pods] [iterations]`
//! (`PROFILE_SPANS=1` first prints the engine's phase spans of one decision)

use std::time::Instant;

use preemptd::engine::{self, DecideOptions};
use preemptd::generate::{self, ClusterSpec};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map(String::as_str).unwrap_or("resources");
    let nodes = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5_000);
    let pods = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(30);
    let iterations: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(200);
    let cache = generate::generate(&ClusterSpec {
        nodes,
        pods_per_node: pods,
        seed: 1,
    })
    .into_cache();
    let snapshot = cache.snapshot();
    let snapshot_nodes = snapshot.nodes.len();
    let pod = if kind == "affinity" {
        generate::affinity_preemptor(1)
    } else {
        generate::resource_preemptor(1)
    };
    if std::env::var_os("PROFILE_SPANS").is_some() {
        // Phase timings of a few warm decisions, from the engine's own spans.
        for _ in 0..3 {
            engine::decide(&snapshot, &pod, &DecideOptions::default());
        }
        let subscriber = tracing_subscriber::fmt()
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_target(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            engine::decide(&snapshot, &pod, &DecideOptions::default());
        });
    }
    let cpu_start = process_cpu();
    let mut times = Vec::with_capacity(iterations);
    let mut last = None;
    for _ in 0..iterations {
        let start = Instant::now();
        last = Some(engine::decide(&snapshot, &pod, &DecideOptions::default()));
        times.push(start.elapsed());
    }
    // CPU time is steadier than wall time on a shared machine.
    let cpu_per_decision = (process_cpu() - cpu_start) / iterations.max(1) as u32;
    times.sort();
    // Tearing down 150k pods takes longer than the decisions: keep it out of profiles.
    std::mem::forget(snapshot);
    std::mem::forget(cache);
    let d = last.expect("at least one iteration");
    println!(
        "{kind}: median {:?}, p99 {:?}, cpu {:?} per decision; outcome {:?} on {:?}, {} victims, {} candidates, {} of {} nodes filtered",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        cpu_per_decision,
        d.outcome,
        d.nominated_node,
        d.victims.len(),
        d.candidates,
        d.nodes_filtered,
        snapshot_nodes
    );
}

/// CPU time of the whole process (every thread).
fn process_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
