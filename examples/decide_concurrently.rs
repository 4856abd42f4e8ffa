//! Several clients deciding at once, on one shared rayon pool or on decision lanes (what
//! the server does): shows how concurrent decisions slow each other down.
//! `cargo run --release --example decide_concurrently -- [shared|lanes] [nodes] [pods] [clients] [decisions per client]`

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use preemptd::engine::{self, DecideOptions, DecisionLanes};
use preemptd::generate::{self, ClusterSpec};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("lanes");
    let number =
        |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (nodes, pods, clients, decisions) = (
        number(2, 5_000),
        number(3, 30),
        number(4, 2),
        number(5, 1_000),
    );
    let cache = generate::generate(&ClusterSpec {
        nodes,
        pods_per_node: pods,
        seed: 1,
    })
    .into_cache();
    let snapshot = Arc::new(cache.snapshot());
    let lanes = Arc::new(DecisionLanes::per_core());
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|client| {
            let (snapshot, lanes, mode) = (snapshot.clone(), lanes.clone(), mode.to_string());
            std::thread::spawn(move || {
                let mut millis = Vec::with_capacity(decisions);
                for i in 0..decisions {
                    let preemptor = generate::resource_preemptor((i * clients + client) as u64);
                    let snapshot = snapshot.clone();
                    let (done, result) = mpsc::channel();
                    let decide = move || {
                        let decision =
                            engine::decide(&snapshot, &preemptor, &DecideOptions::default());
                        let _ = done.send(decision.candidates);
                    };
                    let start = Instant::now();
                    if mode == "shared" {
                        rayon::spawn(decide);
                    } else {
                        lanes.spawn(decide);
                    }
                    result.recv().expect("a decision");
                    millis.push(start.elapsed().as_secs_f64() * 1e3);
                }
                millis
            })
        })
        .collect();
    let mut millis: Vec<f64> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("a client thread"))
        .collect();
    let seconds = started.elapsed().as_secs_f64();
    millis.sort_by(f64::total_cmp);
    let at = |q: f64| millis[((millis.len() as f64 * q) as usize).min(millis.len() - 1)];
    println!(
        "{mode}: {nodes} nodes x {pods} pods, {clients} clients: {:.0} decisions/s, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
        millis.len() as f64 / seconds,
        at(0.5),
        at(0.9),
        at(0.99)
    );
}
