//! The measurements of one cluster size, against a server process of its own, an
//! in-process server (`--in-process`) or `--target`.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
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
use crate::report::{CpuPerOp, Latency, SizeReport, histogram};
use crate::{BenchArgs, Size};

type Client = PreemptionClient<Channel>;

/// Watch subscribers multiplexed on one connection (servers cap concurrent streams per
/// connection, hyper at 200 by default).
const WATCHERS_PER_CONNECTION: usize = 50;
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

fn endpoint(addr: SocketAddr) -> anyhow::Result<Endpoint> {
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

/// `WatchNominations` fan-out: subscribers from the current revision, nominations
/// published by unary `UpdatePod` (new pending pods with nominated_node_name) at a fixed
/// rate; lag is from each call's ack to each subscriber receiving its event (0 when the
/// event arrives first).
struct WatchPlan<'a> {
    addr: SocketAddr,
    watchers: usize,
    rate: u64,
    seconds: f64,
    nodes: &'a [String],
}

type Received = Vec<(String, Instant)>;

impl WatchPlan<'_> {
    /// Returns the lag distribution, events published, and deliveries missed.
    async fn run(
        &self,
        client: &mut Client,
        run: u32,
        stalled: bool,
    ) -> anyhow::Result<(Latency, u64, u64)> {
        if self.watchers == 0 || self.nodes.is_empty() {
            return Ok((Latency::default(), 0, 0));
        }
        let revision = client
            .list_nominations(pb::ListNominationsRequest {})
            .await
            .context("list nominations")?
            .into_inner()
            .revision;
        let end_uid = format!("bench-watch-{run}-end");
        let connections = self.watchers.div_ceil(WATCHERS_PER_CONNECTION);
        let mut clients = Vec::with_capacity(connections);
        for _ in 0..connections {
            clients.push(PreemptionClient::new(connect(self.addr).await?));
        }
        let mut subscribers: Vec<JoinHandle<anyhow::Result<Received>>> = Vec::new();
        for i in 0..self.watchers {
            let mut watcher = clients[i % connections].clone();
            let mut stream = watcher
                .watch_nominations(pb::WatchNominationsRequest {
                    after_revision: revision,
                })
                .await
                .context("watch nominations")?
                .into_inner();
            let end_uid = end_uid.clone();
            subscribers.push(tokio::spawn(async move {
                let mut received = Vec::new();
                while let Some(event) = stream.message().await.context("watch stream")? {
                    let at = Instant::now();
                    let uid = event.pod.map(|p| p.uid).unwrap_or_default();
                    if uid == end_uid {
                        break;
                    }
                    received.push((uid, at));
                }
                Ok(received)
            }));
        }
        // A subscriber that never reads, on a connection with minimal HTTP/2 windows so
        // its backlog reaches the server quickly.
        let _stalled = if stalled {
            let channel = endpoint(self.addr)?
                .initial_stream_window_size(65_535)
                .initial_connection_window_size(65_535)
                .connect()
                .await
                .context("connect the stalled subscriber")?;
            let stream = PreemptionClient::new(channel.clone())
                .watch_nominations(pb::WatchNominationsRequest {
                    after_revision: revision,
                })
                .await
                .context("stalled watch")?
                .into_inner();
            Some((channel, stream))
        } else {
            None
        };

        let total = (self.rate as f64 * self.seconds).round().max(1.0) as u64;
        let label = format!(
            "watch{} ({} subscribers)",
            if stalled { " +stalled" } else { "" },
            self.watchers
        );
        let progress = Progress::start(&label, total);
        let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / self.rate as f64));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut acked: std::collections::HashMap<String, Instant> =
            std::collections::HashMap::with_capacity(total as usize);
        let mut uids = Vec::with_capacity(total as usize + 1);
        for k in 0..=total {
            ticks.tick().await;
            let uid = if k == total {
                end_uid.clone()
            } else {
                format!("bench-watch-{run}-{k}")
            };
            let node = &self.nodes[k as usize % self.nodes.len()];
            client
                .update_pod(pb::UpdatePodRequest {
                    change: Some(pb::update_pod_request::Change::Upsert(watch_pod(
                        &uid, node,
                    ))),
                })
                .await
                .context("publish a nomination")?;
            if k < total {
                acked.insert(uid.clone(), Instant::now());
                progress.done.fetch_add(1, Ordering::Relaxed);
            }
            uids.push(uid);
        }
        let mut hist = histogram();
        let mut missed = 0u64;
        for subscriber in subscribers {
            let received = tokio::time::timeout(Duration::from_secs(30), subscriber)
                .await
                .context("a subscriber did not see the end of the run")?
                .context("subscriber task")??;
            let mut seen = 0u64;
            for (uid, at) in received {
                if let Some(ack) = acked.get(&uid) {
                    hist.saturating_record(at.saturating_duration_since(*ack).as_micros() as u64);
                    seen += 1;
                }
            }
            missed += total.saturating_sub(seen);
        }
        progress.finish();
        drop(_stalled);
        // Leave the cluster as found.
        for uid in uids {
            client
                .update_pod(pb::UpdatePodRequest {
                    change: Some(pb::update_pod_request::Change::Delete(pb::ObjectRef {
                        namespace: WATCH_NAMESPACE.to_string(),
                        name: uid,
                        uid: None,
                    })),
                })
                .await
                .context("delete a watch pod")?;
        }
        let seconds = self.seconds;
        Ok((Latency::from_histogram(&hist, seconds), total, missed))
    }
}

const WATCH_NAMESPACE: &str = "bench";

/// A small pending pod nominated to `node` (its name is its uid).
fn watch_pod(uid: &str, node: &str) -> pb::Pod {
    pb::Pod {
        namespace: WATCH_NAMESPACE.to_string(),
        name: uid.to_string(),
        uid: uid.to_string(),
        priority: Some(1000),
        nominated_node_name: node.to_string(),
        containers: vec![pb::Container {
            name: "main".to_string(),
            requests: [("cpu".to_string(), "10m".to_string())].into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// `preemptd serve` in a process of its own, so its RSS is the server's alone (no client
/// data, no allocator shared with the client); killed when dropped.
pub(crate) struct ChildServer {
    process: std::process::Child,
    pub addr: SocketAddr,
}

impl ChildServer {
    /// How long the child may take to accept connections.
    const START_TIMEOUT: Duration = Duration::from_secs(20);

    async fn start() -> anyhow::Result<Self> {
        Self::start_with(&[]).await
    }

    /// A server with `extra` flags (e.g. `--extender-listen`).
    pub(crate) async fn start_with(extra: &[String]) -> anyhow::Result<Self> {
        let addr = free_loopback_addr()?;
        let exe = std::env::current_exe().context("locate the preemptd binary")?;
        let process = std::process::Command::new(exe)
            .args([
                "serve",
                "--listen",
                &addr.to_string(),
                "--metrics-listen",
                "off",
            ])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .context("start the server process (preemptd serve)")?;
        let mut child = ChildServer { process, addr };
        let deadline = Instant::now() + Self::START_TIMEOUT;
        loop {
            if let Some(status) = child.process.try_wait()? {
                bail!("the server process exited at start ({status})");
            }
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Ok(child);
            }
            if Instant::now() > deadline {
                bail!(
                    "the server process did not listen on {addr} within {:?}",
                    Self::START_TIMEOUT
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A loopback address with a port the OS just handed out: free, and nothing else on
/// loopback races for it in the moment before a child binds it.
pub(crate) fn free_loopback_addr() -> anyhow::Result<SocketAddr> {
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .context("find a free loopback port")?
        .port();
    Ok(SocketAddr::from(([127, 0, 0, 1], port)))
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Reads the server's resident set size and CPU time.
struct ServerProbe {
    in_process: bool,
    pid: Option<u32>,
}

impl ServerProbe {
    fn source(&self) -> &'static str {
        if self.in_process {
            "in-process"
        } else if self.pid.is_some() {
            "process"
        } else {
            "none"
        }
    }

    /// In-process, freed heap pages are returned to the OS first so the reading counts
    /// what is held, not what the allocator keeps around.
    async fn rss(&self) -> Option<u64> {
        let path = match (self.in_process, self.pid) {
            (true, _) => "/proc/self/status".to_string(),
            (false, Some(pid)) => format!("/proc/{pid}/status"),
            (false, None) => return None,
        };
        let in_process = self.in_process;
        tokio::task::spawn_blocking(move || {
            if in_process {
                preemptd::ops::memory::release_free_memory();
            }
            vm_rss(&std::fs::read_to_string(path).ok()?)
        })
        .await
        .ok()
        .flatten()
    }

    /// CPU time of the server process and of this one, when they are apart (in-process,
    /// one process runs both and neither figure would mean anything).
    fn cpu(&self) -> CpuReading {
        let apart = !self.in_process;
        CpuReading {
            server: self
                .pid
                .filter(|_| apart)
                .and_then(|pid| process_cpu(&pid.to_string())),
            bench: if apart { process_cpu("self") } else { None },
        }
    }
}

/// CPU time used so far (or over a span) by the server and the bench process.
#[derive(Clone, Copy)]
struct CpuReading {
    server: Option<Duration>,
    bench: Option<Duration>,
}

impl CpuReading {
    const ZERO: CpuReading = CpuReading {
        server: Some(Duration::ZERO),
        bench: Some(Duration::ZERO),
    };

    /// The CPU time from this reading to `end`.
    fn until(self, end: CpuReading) -> CpuReading {
        let delta = |a: Option<Duration>, b: Option<Duration>| Some(b?.saturating_sub(a?));
        CpuReading {
            server: delta(self.server, end.server),
            bench: delta(self.bench, end.bench),
        }
    }

    fn plus(self, other: CpuReading) -> CpuReading {
        let sum = |a: Option<Duration>, b: Option<Duration>| Some(a? + b?);
        CpuReading {
            server: sum(self.server, other.server),
            bench: sum(self.bench, other.bench),
        }
    }

    /// Microseconds of CPU per operation from this reading to `end`.
    fn per_op(self, end: CpuReading, ops: u64) -> CpuPerOp {
        let per = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) if ops > 0 => {
                Some(b.saturating_sub(a).as_secs_f64() * 1e6 / ops as f64)
            }
            _ => None,
        };
        CpuPerOp {
            server_us: per(self.server, end.server),
            bench_us: per(self.bench, end.bench),
        }
    }
}

/// User plus system CPU time of a process (`self` or a pid), from `/proc/PID/stat`.
fn process_cpu(pid: &str) -> Option<Duration> {
    parse_stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Linux reports `/proc` CPU times in USER_HZ ticks, 100 per second on every
/// architecture this runs on (what `sysconf(_SC_CLK_TCK)` answers).
const USER_HZ: u64 = 100;

/// `utime` and `stime` (fields 14 and 15) of a `/proc/PID/stat` line. The command name
/// (field 2) is in parentheses and may hold spaces, so fields are counted after it.
fn parse_stat_cpu(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime.checked_add(stime)?;
    Some(Duration::from_millis(ticks.saturating_mul(1000 / USER_HZ)))
}

/// `VmRSS:   123456 kB` → bytes.
fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A progress line on stderr, refreshed every second while a phase runs.
struct Progress {
    done: Arc<AtomicU64>,
    task: JoinHandle<()>,
    tty: bool,
}

impl Progress {
    fn start(label: &str, total: u64) -> Self {
        let done = Arc::new(AtomicU64::new(0));
        let tty = std::io::stderr().is_terminal();
        let counter = done.clone();
        let label = label.to_string();
        let started = Instant::now();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_secs(1));
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let line = format!(
                    "{label}: {}/{total} after {:.0} s",
                    counter.load(Ordering::Relaxed),
                    started.elapsed().as_secs_f64()
                );
                if tty {
                    eprint!("\r\x1b[2K{line}");
                } else {
                    eprintln!("{line}");
                }
            }
        });
        Progress { done, task, tty }
    }

    fn finish(self) {
        self.task.abort();
        if self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vm_rss() {
        let status = "Name:\tx\nVmPeak:\t  10 kB\nVmRSS:\t    2048 kB\nThreads: 1\n";
        assert_eq!(vm_rss(status), Some(2 * 1024 * 1024));
        assert_eq!(vm_rss("Name: x\n"), None);
    }

    #[test]
    fn reads_cpu_time_after_a_command_name_with_spaces_and_parentheses() {
        // utime 250 and stime 50 ticks: 3 s.
        let stat = "4242 (tokio (rt) 1) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 3";
        assert_eq!(parse_stat_cpu(stat), Some(Duration::from_secs(3)));
        assert_eq!(parse_stat_cpu("4242 (x) S 1 2"), None);
        assert_eq!(parse_stat_cpu("garbage"), None);
        // This process's own reading grows while it computes.
        let start = process_cpu("self").expect("this process's stat is readable");
        let give_up = Instant::now() + Duration::from_secs(30);
        let mut spin = 0u64;
        while process_cpu("self") <= Some(start) {
            spin = std::hint::black_box(spin.wrapping_mul(31).wrapping_add(7));
            assert!(Instant::now() < give_up, "cpu time never advanced");
        }
    }

    #[test]
    fn cpu_per_op_is_the_difference_over_the_count() {
        let at = |server_ms: u64, bench_ms: u64| CpuReading {
            server: Some(Duration::from_millis(server_ms)),
            bench: Some(Duration::from_millis(bench_ms)),
        };
        let per = at(1_000, 500).per_op(at(1_300, 560), 1_000);
        assert_eq!(per.server_us, Some(300.0));
        assert_eq!(per.bench_us, Some(60.0));
        let unknown = CpuReading {
            server: None,
            bench: Some(Duration::ZERO),
        };
        assert_eq!(unknown.per_op(at(1, 1), 10).server_us, None);
        assert_eq!(at(0, 0).per_op(at(5, 5), 0).server_us, None);
        let span = at(1_000, 500).until(at(1_200, 600)).plus(at(100, 0));
        assert_eq!(span.server, Some(Duration::from_millis(300)));
        assert_eq!(span.bench, Some(Duration::from_millis(100)));
    }

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
