//! The measurements of one cluster size, against a server process of its own, an
//! in-process server (`--in-process`) or `--target`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use hdrhistogram::Histogram;
use prost::Message as _;
use rayon::prelude::*;
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tonic::transport::{Channel, Endpoint};

use pb::preemption_client::PreemptionClient;
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::Pod;
use preemptd::server::{self, ServeConfig, messages, pb};

use crate::grpc;
use crate::progress::Progress;
use crate::report::{Latency, SizeReport, histogram};
use crate::server_process::{ChildServer, CpuReading, ServerProbe};
use crate::watch::WatchPlan;
use crate::{BenchArgs, Size};

pub(crate) type Client = PreemptionClient<Channel>;

/// Bound pods whose labels the update phase rewrites (round-robin).
const UPDATE_SAMPLE: usize = 10_000;
/// Connections the update phase spreads its calls over. On one, the server answers a
/// whole batch of calls, then the client sends the next batch, each side idle while the
/// other works; two let the batches overlap.
const UPDATE_CONNECTIONS: usize = 2;
/// Unrecorded calls before each latency phase (connection set-up, first-touch costs).
const WARMUP_CALLS: u64 = 5;

pub(super) async fn measure(args: &BenchArgs, size: Size) -> anyhow::Result<SizeReport> {
    let started = Instant::now();
    let mut child = None;
    let (server, addr) = match args.target {
        Some(addr) => (None, addr),
        None if args.in_process => {
            let server = server::start(ServeConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                ..ServeConfig::default()
            })
            .await
            .context("start the in-process server")?;
            let addr = server.local_addr();
            (Some(server), addr)
        }
        None => {
            let started = ChildServer::start().await?;
            let addr = started.addr;
            child = Some(started);
            (None, addr)
        }
    };
    let probe = ServerProbe {
        in_process: server.is_some(),
        pid: child.as_ref().map(|c| c.process.id()).or(args.server_pid),
    };
    let channel = connect(addr).await?;
    let mut client = PreemptionClient::new(channel.clone());
    if args.target.is_some() && !args.force {
        crate::target::ensure_fresh(&mut client, addr).await?;
    }

    let spec = ClusterSpec {
        nodes: size.nodes,
        pods_per_node: size.pods_per_node,
        seed: args.seed,
    };
    eprintln!("generating and encoding the cluster ...");
    let prepared = tokio::task::spawn_blocking(move || prepare(&spec))
        .await
        .context("prepare task")?;
    let mut report = SizeReport {
        nodes: prepared.nodes,
        pods: prepared.pods.len(),
        pdbs: prepared.pdbs,
        concurrency: args.concurrency,
        update_concurrency: args.update_concurrency,
        watchers: args.watchers,
        rss_source: probe.source(),
        ..SizeReport::default()
    };

    // Bulk load: nodes and budgets, then pods, each in one Sync stream. RSS is read
    // around each so nodes and pods are charged separately; the client's own data is
    // all allocated before the first reading and kept until after the last.
    let rss_before = probe.rss().await;
    let cpu = probe.cpu();
    let sync_connection = grpc::Connection::open(addr).await?;
    let first = prepared.first;
    let t = Instant::now();
    let response = sync_stream(&sync_connection, &first, "sync nodes+pdbs").await?;
    let nodes_seconds = t.elapsed().as_secs_f64();
    check_sync(&response, first.len())?;
    let rss_nodes = probe.rss().await;
    let pods = prepared.pods;
    let t = Instant::now();
    let response = sync_stream(&sync_connection, &pods, "sync pods").await?;
    report.sync_pods_seconds = t.elapsed().as_secs_f64();
    check_sync(&response, pods.len())?;
    let rss_pods = probe.rss().await;
    report.sync_objects = (first.len() + pods.len()) as u64;
    report.sync_seconds = nodes_seconds + report.sync_pods_seconds;
    report.sync_cpu = cpu.per_op(probe.cpu(), report.sync_objects);
    if let (Some(before), Some(nodes), Some(after)) = (rss_before, rss_nodes, rss_pods) {
        report.rss_bytes_per_node =
            nodes.saturating_sub(before) as f64 / report.nodes.max(1) as f64;
        report.rss_bytes_per_pod = after.saturating_sub(nodes) as f64 / report.pods.max(1) as f64;
        report.rss_after_load_bytes = after;
    }
    drop((first, pods, sync_connection));

    let cap = args.phase_cap();
    let cpu = probe.cpu();
    let (latency, outcomes) = preempt_phase(
        &channel,
        args.concurrency,
        args.preempts,
        cap,
        generate::resource_preemptor,
        "preempt (resources)",
    )
    .await?;
    report.preempt_cpu = cpu.per_op(probe.cpu(), latency.count + WARMUP_CALLS.min(args.preempts));
    report.preempt = latency;
    report.preempt_outcomes = outcomes;
    let cpu = probe.cpu();
    let (latency, outcomes) = preempt_phase(
        &channel,
        args.concurrency,
        args.preempts,
        cap,
        generate::affinity_preemptor,
        "preempt (anti-affinity)",
    )
    .await?;
    report.affinity_cpu = cpu.per_op(probe.cpu(), latency.count + WARMUP_CALLS.min(args.preempts));
    report.affinity = latency;
    report.affinity_outcomes = outcomes;

    let cpu = probe.cpu();
    report.update = update_phase(
        addr,
        &prepared.update_sample,
        args.updates,
        args.update_concurrency,
        cap,
    )
    .await?;
    report.update_cpu = cpu.per_op(probe.cpu(), report.update.count);

    let watch = WatchPlan {
        addr,
        watchers: args.watchers,
        rate: args.watch_rate,
        seconds: args.watch_seconds,
        nodes: &prepared.node_names,
    };
    // Runs without and with a stalled subscriber alternate, and each kind reports its
    // median run: on a shared machine one run can be slowed by something else entirely.
    let mut plain = Vec::new();
    let mut stalled = Vec::new();
    let mut plain_cpu = CpuReading::ZERO;
    let mut deliveries = 0u64;
    for round in 0..args.watch_runs {
        let cpu = probe.cpu();
        let (latency, events, missed) = watch.run(&mut client, 2 * round, false).await?;
        plain_cpu = plain_cpu.plus(cpu.until(probe.cpu()));
        report.watch_events = events;
        deliveries += events * args.watchers as u64;
        report.watch_missed += missed;
        plain.push(latency);
        let (latency, _, missed) = watch.run(&mut client, 2 * round + 1, true).await?;
        report.watch_missed += missed;
        stalled.push(latency);
    }
    report.watch_cpu = CpuReading::ZERO.per_op(plain_cpu, deliveries);
    report.watch_runs_p99_ms = plain.iter().map(|l| l.p99_ms).collect();
    report.watch_stalled_runs_p99_ms = stalled.iter().map(|l| l.p99_ms).collect();
    report.watch = Latency::median_run(plain);
    report.watch_stalled = Latency::median_run(stalled);

    if let Some(server) = server {
        server.shutdown().await?;
    }
    drop(child);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

pub(crate) async fn connect(addr: SocketAddr) -> anyhow::Result<Channel> {
    endpoint(addr)?
        .connect()
        .await
        .with_context(|| format!("connect to {addr}"))
}

pub(crate) fn endpoint(addr: SocketAddr) -> anyhow::Result<Endpoint> {
    Ok(Endpoint::from_shared(format!("http://{addr}"))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5)))
}

/// The client's copy of the cluster: encoded `SyncRequest`s, ready to stream.
pub(crate) struct Prepared {
    /// Nodes then PDBs.
    pub first: Vec<Bytes>,
    pub pods: Vec<Bytes>,
    pub nodes: usize,
    pub pdbs: usize,
    pub node_names: Vec<String>,
    pub update_sample: Vec<pb::Pod>,
}

/// Generates the cluster and encodes every object as a `SyncRequest` (in parallel).
/// Encoding up front keeps the client's work during the load to copying bytes, so the
/// load rate measures the server.
fn prepare(spec: &ClusterSpec) -> Prepared {
    prepare_cluster(&generate::generate(spec))
}

/// [`prepare`] of a cluster already generated.
pub(crate) fn prepare_cluster(cluster: &generate::GeneratedCluster) -> Prepared {
    use pb::sync_request::Item;
    let encode = |item: Item| Bytes::from(pb::SyncRequest { item: Some(item) }.encode_to_vec());
    let mut first: Vec<Bytes> = cluster
        .nodes
        .par_iter()
        .map(|n| {
            encode(Item::Node(pb::UpdateNodeRequest {
                change: Some(pb::update_node_request::Change::Upsert(
                    messages::node_message(n),
                )),
            }))
        })
        .collect();
    first.extend(cluster.pdbs.iter().map(|b| {
        encode(Item::Pdb(pb::UpdatePodDisruptionBudgetRequest {
            change: Some(pb::update_pod_disruption_budget_request::Change::Upsert(
                messages::pdb_message(b),
            )),
        }))
    }));
    let pods: Vec<Bytes> = cluster
        .pods
        .par_iter()
        .map(|p| {
            encode(Item::Pod(pb::UpdatePodRequest {
                change: Some(pb::update_pod_request::Change::Upsert(
                    messages::pod_message(p),
                )),
            }))
        })
        .collect();
    let update_sample = cluster
        .pods
        .iter()
        .filter(|p| p.node_name.is_some() && !p.terminating)
        .take(UPDATE_SAMPLE)
        .map(messages::pod_message)
        .collect();
    Prepared {
        first,
        pods,
        nodes: cluster.nodes.len(),
        pdbs: cluster.pdbs.len(),
        node_names: cluster.nodes.iter().map(|n| n.name.to_string()).collect(),
        update_sample,
    }
}

pub(crate) async fn sync_stream(
    connection: &grpc::Connection,
    items: &[Bytes],
    label: &str,
) -> anyhow::Result<pb::SyncResponse> {
    let progress = Progress::start(label, items.len() as u64);
    let response = connection
        .client_streaming("/preemptd.v1.Preemption/Sync", items, &progress.done)
        .await;
    progress.finish();
    let response = response.context("sync")?;
    pb::SyncResponse::decode(response).context("sync response")
}

pub(crate) fn check_sync(response: &pb::SyncResponse, sent: usize) -> anyhow::Result<()> {
    if let Some(first) = response.rejections.first() {
        bail!(
            "sync rejected {} items; first: #{} {} {}: {}",
            response.rejected,
            first.index,
            first.code,
            first.field,
            first.message
        );
    }
    let counts = |c: &Option<pb::SyncCounts>| {
        c.as_ref().map_or(0, |c| {
            c.nodes + c.pods + c.pdbs + c.pod_groups + c.workloads
        })
    };
    let seen = counts(&response.applied) + counts(&response.stale);
    if seen != sent as u64 {
        bail!("sync accounted for {seen} of {sent} items (is --target a fresh server?)");
    }
    Ok(())
}

type Outcomes = Map<String, Value>;
/// One Preempt worker's latencies and outcome counts.
type WorkerResult = (Histogram<u64>, BTreeMap<String, u64>);

/// Dry-run `Preempt` calls for `make(i)` preemptors at a fixed concurrency.
async fn preempt_phase(
    channel: &Channel,
    concurrency: usize,
    count: u64,
    cap: Duration,
    make: fn(u64) -> Pod,
    label: &str,
) -> anyhow::Result<(Latency, Outcomes)> {
    let request = move |i: u64| pb::PreemptRequest {
        preemptor: Some(pb::preempt_request::Preemptor::Pod(messages::pod_message(
            &make(i),
        ))),
        dry_run: true,
        explain: false,
        pdb_mode: pb::PdbMode::Unspecified.into(),
    };
    let mut client = PreemptionClient::new(channel.clone());
    for i in 0..WARMUP_CALLS.min(count) {
        client
            .preempt(request(1_000_000_000 + i))
            .await
            .context("preempt warm-up")?;
    }
    let progress = Progress::start(label, count);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + cap;
    let workers: Vec<JoinHandle<anyhow::Result<WorkerResult>>> = (0..concurrency)
        .map(|_| {
            let mut client = client.clone();
            let next = next.clone();
            let done = progress.done.clone();
            tokio::spawn(async move {
                let mut hist = histogram();
                let mut outcomes = BTreeMap::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count || Instant::now() >= deadline {
                        break;
                    }
                    let req = request(i);
                    let t = Instant::now();
                    let response = client.preempt(req).await.context("preempt")?;
                    hist.saturating_record(t.elapsed().as_micros() as u64);
                    done.fetch_add(1, Ordering::Relaxed);
                    let outcome = pb::Outcome::try_from(response.get_ref().outcome)
                        .map_or("UNKNOWN", |o| o.as_str_name());
                    *outcomes.entry(outcome.to_string()).or_insert(0) += 1;
                }
                Ok((hist, outcomes))
            })
        })
        .collect();
    let mut hist = histogram();
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    for worker in workers {
        let (h, o) = worker.await.context("preempt worker")??;
        hist.add(&h).context("merge histograms")?;
        for (k, v) in o {
            *outcomes.entry(k).or_insert(0) += v;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    progress.finish();
    let outcomes = outcomes
        .into_iter()
        .map(|(k, v)| (k, Value::from(v)))
        .collect();
    Ok((Latency::from_histogram(&hist, seconds), outcomes))
}

/// Unary `UpdatePod` calls rewriting a label of existing bound pods (each call a newer
/// resource_version), at a fixed concurrency.
///
/// The calls run on a single-threaded runtime of their own, over HTTP/2 connections of
/// their own driven by each calling task ([`grpc::Connection`]), with requests encoded
/// before the phase: on a multi-threaded runtime, or through tonic's client, each call
/// hops between tasks and threads, costing the client about as much CPU as the server
/// spends on the call, which then measures the client rather than the server.
async fn update_phase(
    addr: SocketAddr,
    sample: &[pb::Pod],
    count: u64,
    concurrency: usize,
    cap: Duration,
) -> anyhow::Result<Latency> {
    if sample.is_empty() || count == 0 {
        return Ok(Latency::default());
    }
    let sample = sample.to_vec();
    let progress = Progress::start("update pod", count);
    let done = progress.done.clone();
    let (reply, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("bench-update".to_string())
        .spawn(move || {
            let requests = Arc::new(encode_updates(&sample, count));
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("start the update runtime")
                .and_then(|runtime| {
                    runtime.block_on(update_calls(addr, requests, concurrency, cap, done))
                });
            let _ = reply.send(result);
        })
        .context("start the update thread")?;
    let latency = result.await.context("update thread")??;
    progress.finish();
    Ok(latency)
}

/// Every call's request, encoded before the calls start (as the `Sync` load's are), so
/// the client's work while they run is the calls themselves: the `i`th rewrites the
/// `bench-update` label of sample pod `i % len` at a resource_version `i / len + 1`
/// newer.
fn encode_updates(sample: &[pb::Pod], count: u64) -> Vec<Bytes> {
    let len = sample.len() as u64;
    (0..count)
        .into_par_iter()
        .map(|i| {
            let round = i / len;
            let mut pod = sample[(i % len) as usize].clone();
            pod.resource_version += round + 1;
            pod.labels
                .insert("bench-update".to_string(), (round + 1).to_string());
            let request = pb::UpdatePodRequest {
                change: Some(pb::update_pod_request::Change::Upsert(pod)),
            };
            grpc::frame(&request.encode_to_vec())
        })
        .collect()
}

async fn update_calls(
    addr: SocketAddr,
    requests: Arc<Vec<Bytes>>,
    concurrency: usize,
    cap: Duration,
    done: Arc<AtomicU64>,
) -> anyhow::Result<Latency> {
    let connections = UPDATE_CONNECTIONS.min(concurrency);
    let mut channels = Vec::with_capacity(connections);
    for _ in 0..connections {
        channels.push(grpc::Connection::open(addr).await?);
    }
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + cap;
    let workers: Vec<JoinHandle<anyhow::Result<Histogram<u64>>>> = (0..concurrency)
        .map(|w| {
            let connection = channels[w % connections].clone();
            let (next, requests, done) = (next.clone(), requests.clone(), done.clone());
            tokio::spawn(async move {
                let mut hist = histogram();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(request) = requests.get(i) else {
                        break;
                    };
                    if Instant::now() >= deadline {
                        break;
                    }
                    let t = Instant::now();
                    let response = connection
                        .unary("/preemptd.v1.Preemption/UpdatePod", request.clone())
                        .await
                        .context("update pod")?;
                    hist.saturating_record(t.elapsed().as_micros() as u64);
                    pb::UpdatePodResponse::decode(response).context("update pod response")?;
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok(hist)
            })
        })
        .collect();
    let mut hist = histogram();
    for worker in workers {
        hist.add(&worker.await.context("update worker")??)
            .context("merge histograms")?;
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(Latency::from_histogram(&hist, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_encoded_items_decode_as_sync_requests() {
        let spec = ClusterSpec {
            nodes: 3,
            pods_per_node: 2,
            seed: 1,
        };
        let prepared = prepare(&spec);
        assert_eq!(prepared.first.len(), prepared.nodes + prepared.pdbs);
        for bytes in prepared.first.iter().chain(&prepared.pods) {
            let item = pb::SyncRequest::decode(bytes.clone()).expect("decodes");
            assert!(item.item.is_some());
        }
    }
}
