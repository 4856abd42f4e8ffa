//! Times the two stages a `Sync` load puts every pod through, one after the other on one
//! thread: receiving (reading each pod from its encoding into the model, item by item;
//! `PROFILE_PROST=1` decodes it with prost and converts, as the server once did) and the
//! cache insert (in batches, as the stream's applier does). No gRPC, no threads: the per-stage figures are steadier
//! than a load's rate on a shared machine, and the process is a target for `perf record`.
//! `cargo run --release --example profile_sync -- [nodes] [pods per node] [rounds]`

use std::time::{Duration, Instant};

use bytes::Bytes;

use preemptd::cache::ClusterCache;
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::Pod;
use preemptd::model::build::Memo;
use preemptd::server::wire::{self, ReceivedPod, SyncRequestWire, WireItem};
use preemptd::server::{convert, messages, pb};
use prost::Message;

/// Pods per cache batch, as the stream's applier merges queued chunks.
const BATCH: usize = 512;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let nodes = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let pods_per_node = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(30);
    let rounds: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(3);
    // As a Sync stream converts: with its memo of repeated strings, label sets and details.
    let no_memo = std::env::var_os("PROFILE_NO_MEMO").is_some();
    // As the server received pods before it read them from their encoding.
    let decode_with_prost = std::env::var_os("PROFILE_PROST").is_some();
    let cluster = generate::generate(&ClusterSpec {
        nodes,
        pods_per_node,
        seed: 1,
    });
    let encoded: Vec<Bytes> = cluster
        .pods
        .iter()
        .map(|p| {
            pb::SyncRequest {
                item: Some(pb::sync_request::Item::Pod(pb::UpdatePodRequest {
                    change: Some(pb::update_pod_request::Change::Upsert(
                        messages::pod_message(p),
                    )),
                })),
            }
            .encode_to_vec()
            .into()
        })
        .collect();
    let count = encoded.len();
    let bytes: usize = encoded.iter().map(Bytes::len).sum();
    println!(
        "{count} pods on {nodes} nodes, {} bytes a pod on the wire",
        bytes / count.max(1)
    );
    let mut stages: [Vec<Duration>; 2] = Default::default();
    for round in 0..rounds {
        let cache = ClusterCache::new();
        for node in &cluster.nodes {
            cache.upsert_node(node.clone());
        }
        for pdb in &cluster.pdbs {
            cache.upsert_pdb(pdb.clone());
        }

        // Chunk by chunk, as the server receives and applies: what one chunk allocates is
        // freed before the next, so the working set stays a server's.
        let (mut receive, mut apply) = (Duration::ZERO, Duration::ZERO);
        let mut memo = if no_memo {
            Memo::disabled()
        } else {
            Memo::for_stream()
        };
        for chunk in encoded.chunks(BATCH) {
            // Each item decoded and converted in turn, as the receiving task does.
            let started = Instant::now();
            let pods = receive_chunk(chunk, &mut memo, decode_with_prost);
            receive += started.elapsed();

            let started = Instant::now();
            apply_chunk(&cache, pods);
            apply += started.elapsed();
        }
        assert!(cache.counts().pods > 0, "the pods were loaded");
        // Tearing the cache down is no part of a load (and is not timed).
        drop(cache);

        let per_pod = |d: Duration| d.as_nanos() as f64 / count as f64;
        println!(
            "round {}: receive (decode and convert) {:.0} ns, apply {:.0} ns a pod",
            round + 1,
            per_pod(receive),
            per_pod(apply)
        );
        for (stage, took) in stages.iter_mut().zip([receive, apply]) {
            stage.push(took);
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_nanos() as f64 / count as f64
    };
    let [receive, apply] = &mut stages;
    let (receive, apply) = (median(receive), median(apply));
    println!(
        "median: receive {receive:.0} ns, apply {apply:.0} ns; {:.0} ns a pod in all",
        receive + apply
    );
}

// The two stages are functions of their own (never inlined), so a profiler reports each
// one's inclusive cost.

/// Receives a chunk's items one by one, as the receiving task does.
#[inline(never)]
fn receive_chunk(
    chunk: &[Bytes],
    memo: &mut Memo,
    decode_with_prost: bool,
) -> Vec<triomphe::Arc<Pod>> {
    chunk
        .iter()
        .map(|bytes| {
            // The receiving task hands the applier each pod in its final allocation.
            if decode_with_prost {
                return triomphe::Arc::new(receive_with_prost(bytes, memo));
            }
            let request = SyncRequestWire::decode(bytes.clone()).expect("encoded above");
            let Some(WireItem::Pod(encoding)) = request.item else {
                unreachable!("only pods were encoded")
            };
            triomphe::Arc::new(
                match wire::receive_pod(encoding, memo).expect("encoded above") {
                    ReceivedPod::Upserted(pod) => pod.expect("generated pods are valid"),
                    // A pod with fields the wire reader leaves to prost.
                    ReceivedPod::Decoded(request) => match request.change {
                        Some(pb::update_pod_request::Change::Upsert(pod)) => {
                            convert::pod_with_memo("upsert", &pod, memo)
                                .expect("generated pods are valid")
                        }
                        _ => unreachable!("only upserts were encoded"),
                    },
                },
            )
        })
        .collect()
}

/// Decodes the whole request with prost, then converts (`PROFILE_PROST=1`).
fn receive_with_prost(bytes: &[u8], memo: &mut Memo) -> Pod {
    let request = pb::SyncRequest::decode(bytes).expect("encoded above");
    match request.item {
        Some(pb::sync_request::Item::Pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(pod)),
        })) => convert::pod_with_memo("upsert", &pod, memo).expect("generated pods are valid"),
        _ => unreachable!("only pod upserts were encoded"),
    }
}

/// Inserts a chunk's pods as one batch, as the applier does.
#[inline(never)]
fn apply_chunk(cache: &ClusterCache, pods: Vec<triomphe::Arc<Pod>>) {
    for result in cache.upsert_pods(pods) {
        result.expect("generated pods do not conflict");
    }
}
