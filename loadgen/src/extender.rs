//! `preemptd bench --extender`: the kube-scheduler extender verbs over loopback HTTP/1.1
//! (one keep-alive connection, as kube-scheduler's client keeps one), nodeCacheCapable:
//! `/filter` and `/prioritize` with every node's name, `/preempt` with
//! `--extender-candidates` candidate nodes, each listing as the scheduler's victims its
//! lower-priority pods (`--extender-victims all`) or those upstream's selection picks there
//! (`chosen`). The server runs the default placement policy over a cluster of
//! spot and on-demand nodes, some of them reclaimed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

use preemptd::engine::DecideOptions;
use preemptd::engine::Policy;
use preemptd::engine::per_node;
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::{Labels, Str, Taint, TaintEffect};
use preemptd::server::{self, ServeConfig};

use crate::client;
use crate::report::{Latency, histogram};
use crate::server_process::{self, ChildServer};
use crate::{BenchArgs, ExtenderVictims, Size};

/// Unrecorded requests before each verb's phase.
const WARMUP: u64 = 5;
/// The policy the server runs: critical pods at system priorities, otherwise the defaults.
const POLICY: &str = "criticalPods:\n  priorityAtLeast: 1000000000\n";

/// The figures of one extender run.
pub(crate) struct ExtenderReport {
    pub nodes: usize,
    pub pods: usize,
    pub candidates: usize,
    /// Candidates `/preempt` kept (each with victims).
    pub kept: usize,
    pub filter: Latency,
    pub prioritize: Latency,
    pub preempt: Latency,
}

impl ExtenderReport {
    pub fn print_human(&self) {
        println!(
            "extender, {} nodes, {} pods; /preempt with {} candidates ({} kept)",
            self.nodes, self.pods, self.candidates, self.kept
        );
        for (verb, l) in [
            ("filter", &self.filter),
            ("prioritize", &self.prioritize),
            ("preempt", &self.preempt),
        ] {
            println!(
                "  /{verb:<11} {:>6} requests  {:>8.1}/s  p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
                l.count, l.per_s, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
            );
        }
    }

    pub fn json(&self) -> Value {
        let latency = |l: &Latency| {
            json!({
                "count": l.count, "per_s": l.per_s, "p50_ms": l.p50_ms,
                "p90_ms": l.p90_ms, "p99_ms": l.p99_ms, "max_ms": l.max_ms,
            })
        };
        json!({
            "extender": {
                "nodes": self.nodes,
                "pods": self.pods,
                "candidates": self.candidates,
                "kept": self.kept,
                "filter": latency(&self.filter),
                "prioritize": latency(&self.prioritize),
                "preempt": latency(&self.preempt),
            }
        })
    }
}

/// The server under test: a child process (default) or in this process.
enum Server {
    Child(ChildServer),
    InProcess(server::RunningServer),
}

pub(crate) async fn measure(args: &BenchArgs, size: Size) -> anyhow::Result<ExtenderReport> {
    let policy_path =
        std::env::temp_dir().join(format!("preemptd-bench-policy-{}.yaml", std::process::id()));
    let (server, grpc_addr, extender_addr) = if args.in_process {
        let running = server::start(ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            extender_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            policy: Some(Arc::new(Policy::from_yaml(POLICY).context("bench policy")?)),
            ..ServeConfig::default()
        })
        .await
        .context("start the in-process server")?;
        let (grpc, ext) = (
            running.local_addr(),
            running.extender_addr().context("extender address")?,
        );
        (Server::InProcess(running), grpc, ext)
    } else {
        std::fs::write(&policy_path, POLICY).context("write the bench policy")?;
        let ext = server_process::free_loopback_addr()?;
        let child = ChildServer::start_with(&[
            "--extender-listen".to_string(),
            ext.to_string(),
            "--policy".to_string(),
            policy_path.display().to_string(),
        ])
        .await;
        let _ = std::fs::remove_file(&policy_path);
        let child = child?;
        let grpc = child.addr;
        (Server::Child(child), grpc, ext)
    };

    let spec = ClusterSpec {
        nodes: size.nodes,
        pods_per_node: size.pods_per_node,
        seed: args.seed,
    };
    eprintln!("generating and encoding the cluster ...");
    let (candidates, listed) = (args.extender_candidates, args.extender_victims);
    let (prepared, bodies) = tokio::task::spawn_blocking(move || {
        let mut cluster = generate::generate(&spec);
        label_capacity(&mut cluster);
        let bodies = Bodies::new(&cluster, candidates, listed);
        (client::prepare_cluster(&cluster), bodies)
    })
    .await
    .context("prepare task")?;
    let connection = crate::grpc::Connection::open(grpc_addr).await?;
    let response = client::sync_stream(&connection, &prepared.first, "sync nodes+pdbs").await?;
    client::check_sync(&response, prepared.first.len())?;
    let response = client::sync_stream(&connection, &prepared.pods, "sync pods").await?;
    client::check_sync(&response, prepared.pods.len())?;
    drop(connection);

    let mut http = HttpConnection::open(extender_addr).await?;
    let (status, reply) = http.post_json("/filter", &bodies.filter).await?;
    let names = reply["NodeNames"].as_array().map_or(0, Vec::len);
    if status != 200 || names == 0 {
        bail!("/filter answered {status} with {names} nodes: {reply}");
    }
    let (status, reply) = http.post_json("/preempt", &bodies.preempt).await?;
    let kept = reply["NodeNameToMetaVictims"]
        .as_object()
        .map_or(0, |m| m.len());
    if status != 200 {
        bail!("/preempt answered {status}: {reply}");
    }

    let cap = args.phase_cap();
    let count = args.extender_requests;
    let filter = phase(&mut http, "/filter", &bodies.filter, count, cap).await?;
    let prioritize = phase(&mut http, "/prioritize", &bodies.filter, count, cap).await?;
    let preempt = phase(&mut http, "/preempt", &bodies.preempt, count, cap).await?;

    match server {
        Server::InProcess(running) => running.shutdown().await?,
        Server::Child(child) => drop(child),
    }
    Ok(ExtenderReport {
        nodes: prepared.nodes,
        pods: prepared.pods.len(),
        candidates: bodies.candidates,
        kept,
        filter,
        prioritize,
        preempt,
    })
}

/// Gives the policy something to decide: every other node spot capacity (Karpenter's
/// label), the rest on-demand, and one spot node in 50 reclaimed (Karpenter's taint).
fn label_capacity(cluster: &mut generate::GeneratedCluster) {
    for (i, node) in cluster.nodes.iter_mut().enumerate() {
        let spot = i % 2 == 0;
        let mut labels: Vec<(Str, Str)> = node
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let capacity = if spot { "spot" } else { "on-demand" };
        labels.push(("karpenter.sh/capacity-type".into(), capacity.into()));
        node.labels = Labels::new(labels);
        if spot && i % 100 == 0 {
            node.taints.push(Taint {
                key: "karpenter.sh/disrupted".into(),
                value: "".into(),
                effect: TaintEffect::NoSchedule,
            });
        }
    }
}

/// The request bodies, as kube-scheduler sends them (nodeCacheCapable).
struct Bodies {
    /// ExtenderArgs with every node's name (`/filter` and `/prioritize`).
    filter: Vec<u8>,
    /// ExtenderPreemptionArgs with the candidates.
    preempt: Vec<u8>,
    candidates: usize,
}

impl Bodies {
    fn new(
        cluster: &generate::GeneratedCluster,
        candidates: usize,
        listed: ExtenderVictims,
    ) -> Self {
        let preemptor = generate::resource_preemptor(0);
        let pod = crate::scenarios::pod_json(&preemptor);
        let names: Vec<&str> = cluster.nodes.iter().map(|n| &*n.name).collect();
        let filter = json!({"Pod": pod, "Nodes": null, "NodeNames": names});
        // Candidates spread over the cluster.
        let step = (cluster.nodes.len() / candidates.max(1)).max(1);
        let chosen: std::collections::HashMap<&str, usize> = cluster
            .nodes
            .iter()
            .step_by(step)
            .take(candidates)
            .enumerate()
            .map(|(i, n)| (&*n.name, i))
            .collect();
        let mut victims: Vec<Vec<Value>> = vec![Vec::new(); chosen.len()];
        match listed {
            ExtenderVictims::All => {
                for pod in &cluster.pods {
                    if let Some(&i) = pod.node_name.as_deref().and_then(|n| chosen.get(n)) {
                        victims[i].push(json!({"UID": pod.uid()}));
                    }
                }
            }
            ExtenderVictims::Chosen => {
                let snapshot = cluster.clone().into_cache().snapshot();
                let mut nodes: Vec<(&str, usize)> = chosen.iter().map(|(n, &i)| (*n, i)).collect();
                nodes.sort_by_key(|&(_, i)| i);
                let names: Vec<&str> = nodes.iter().map(|&(n, _)| n).collect();
                let options = DecideOptions::default();
                let found = per_node::victims_on_nodes(&snapshot, &preemptor, &names, &options);
                for ((_, i), found) in nodes.iter().zip(found) {
                    if let Ok(found) = found {
                        victims[*i] = found
                            .victims
                            .iter()
                            .map(|v| json!({"UID": v.uid()}))
                            .collect();
                    }
                }
            }
        }
        let mut meta = serde_json::Map::new();
        for (name, &i) in &chosen {
            let pods = std::mem::take(&mut victims[i]);
            meta.insert(
                name.to_string(),
                json!({"Pods": pods, "NumPDBViolations": 0}),
            );
        }
        let preempt = json!({"Pod": pod, "NodeNameToVictims": null, "NodeNameToMetaVictims": meta});
        Bodies {
            filter: serde_json::to_vec(&filter).unwrap_or_default(),
            preempt: serde_json::to_vec(&preempt).unwrap_or_default(),
            candidates: chosen.len(),
        }
    }
}

/// `count` requests one after another (after a warm-up), within `cap`.
async fn phase(
    http: &mut HttpConnection,
    path: &str,
    body: &[u8],
    count: u64,
    cap: Duration,
) -> anyhow::Result<Latency> {
    for _ in 0..WARMUP {
        http.post(path, body).await?;
    }
    let mut h = histogram();
    let started = Instant::now();
    for _ in 0..count {
        let t = Instant::now();
        let (status, reply) = http.post(path, body).await?;
        if status != 200 {
            bail!(
                "{path} answered {status}: {}",
                String::from_utf8_lossy(&reply)
            );
        }
        h.saturating_record(t.elapsed().as_micros().max(1) as u64);
        if started.elapsed() > cap {
            break;
        }
    }
    Ok(Latency::from_histogram(&h, started.elapsed().as_secs_f64()))
}

/// One keep-alive HTTP/1.1 connection.
struct HttpConnection {
    stream: BufReader<TcpStream>,
    request: Vec<u8>,
}

impl HttpConnection {
    /// Connects, retrying while the server starts.
    async fn open(addr: SocketAddr) -> anyhow::Result<Self> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let tcp = loop {
            match TcpStream::connect(addr).await {
                Ok(tcp) => break tcp,
                Err(error) if Instant::now() > deadline => {
                    return Err(error)
                        .with_context(|| format!("connect to the extender at {addr}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        tcp.set_nodelay(true)?;
        Ok(HttpConnection {
            stream: BufReader::new(tcp),
            request: Vec::new(),
        })
    }

    /// POSTs `body` as JSON; the status and the parsed reply.
    async fn post_json(&mut self, path: &str, body: &[u8]) -> anyhow::Result<(u16, Value)> {
        let (status, reply) = self.post(path, body).await?;
        Ok((
            status,
            serde_json::from_slice(&reply).unwrap_or(Value::Null),
        ))
    }

    /// POSTs `body` as JSON; the status and the reply's bytes (not parsed: the timed
    /// phases measure the server).
    async fn post(&mut self, path: &str, body: &[u8]) -> anyhow::Result<(u16, Vec<u8>)> {
        self.request.clear();
        self.request.extend_from_slice(
            format!(
                "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        self.request.extend_from_slice(body);
        self.stream.get_mut().write_all(&self.request).await?;
        let mut line = String::new();
        self.stream.read_line(&mut line).await?;
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("bad status line {line:?}"))?;
        let mut length = 0usize;
        loop {
            line.clear();
            if self.stream.read_line(&mut line).await? == 0 {
                bail!("connection closed in the reply head");
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().context("content-length")?;
            }
        }
        let mut reply = vec![0; length];
        self.stream.read_exact(&mut reply).await?;
        Ok((status, reply))
    }
}
