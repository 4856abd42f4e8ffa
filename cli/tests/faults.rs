//! Faults, through the real binary (`preemptd serve` on 127.0.0.1 port 0, its address
//! read from its "serving" log line): a server killed with SIGKILL comes back with a new
//! epoch and an empty cache and, after the same Sync, decides as before; a 100 MiB
//! message is refused without the server holding it; a client that dies in the middle of
//! a Sync leaves only whole items applied; idle and half-open connections do not stop
//! a normal client. Every server is killed when its test ends, even on panic.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use preemptd::server::pb;
use preemptd::server::pb::preemption_client::PreemptionClient;
use prost::Message;
use tokio::io::AsyncWriteExt;
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

type Client = PreemptionClient<Channel>;

/// Generous bound for anything to happen on a loaded machine (never a timed assertion:
/// only a wait that fails the test instead of hanging it).
const DEADLINE: Duration = Duration::from_secs(60);

/// A `preemptd serve` child process, killed and reaped when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(extra_args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_preemptd"))
            // Nothing from the test's own environment (PREEMPTD_*, OTEL_*) leaks in.
            .env_clear()
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(["--metrics-listen", "off", "--log-format", "json"])
            .args(extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn preemptd");
        let stderr = child.stderr.take().expect("stderr");
        // From here on the child is killed on drop, whatever fails next.
        let mut server = Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let (addr_tx, addr_rx) = std_mpsc::channel();
        std::thread::spawn(move || {
            // Drains stderr for the child's whole life, so its logging never blocks.
            let mut addr_tx = Some(addr_tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = serving_addr(&line)
                    && let Some(tx) = addr_tx.take()
                {
                    let _ = tx.send(addr);
                }
            }
        });
        server.addr = addr_rx
            .recv_timeout(DEADLINE)
            .expect("preemptd logs the address it serves on");
        server
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown code runs.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL preemptd");
        let status = self.child.wait().expect("reap preemptd");
        assert!(!status.success(), "{status:?}");
    }

    /// Resident memory (VmRSS), in bytes.
    fn rss(&self) -> u64 {
        self.memory("VmRSS")
    }

    /// The most resident memory the server ever had (VmHWM), in bytes.
    fn peak_rss(&self) -> u64 {
        self.memory("VmHWM")
    }

    /// A memory figure of /proc/PID/status, in bytes.
    fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc/PID/status");
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|kib| kib.trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc/PID/status"));
        kib * 1024
    }

    async fn client(&self) -> Client {
        let channel = Endpoint::from_shared(format!("http://{}", self.addr))
            .expect("endpoint")
            .connect_timeout(Duration::from_secs(10))
            .connect()
            .await
            .expect("connect");
        PreemptionClient::new(channel)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address of a JSON "serving" log line (fields nested or flattened).
fn serving_addr(line: &str) -> Option<SocketAddr> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let fields = value.get("fields").unwrap_or(&value);
    if fields.get("message")?.as_str()? != "serving" {
        return None;
    }
    fields.get("addr")?.as_str()?.parse().ok()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn node(name: &str, cpu: &str) -> pb::Node {
    pb::Node {
        name: name.into(),
        labels: map(&[("kubernetes.io/hostname", name)]),
        allocatable: map(&[("cpu", cpu), ("memory", "64Gi"), ("pods", "110")]),
        resource_version: 1,
        ..Default::default()
    }
}

/// A pod requesting `cpu`; bound when `node` is non-empty, pending otherwise.
fn pod(name: &str, priority: i32, cpu: &str, node: &str) -> pb::Pod {
    pb::Pod {
        namespace: "default".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        node_name: node.into(),
        priority: Some(priority),
        phase: if node.is_empty() {
            "Pending"
        } else {
            "Running"
        }
        .into(),
        containers: vec![pb::Container {
            name: "app".into(),
            requests: map(&[("cpu", cpu)]),
            ..Default::default()
        }],
        resource_version: 1,
        ..Default::default()
    }
}

fn node_item(node: pb::Node) -> pb::SyncRequest {
    pb::SyncRequest {
        item: Some(pb::sync_request::Item::Node(pb::UpdateNodeRequest {
            change: Some(pb::update_node_request::Change::Upsert(node)),
        })),
    }
}

fn pod_item(pod: pb::Pod) -> pb::SyncRequest {
    pb::SyncRequest {
        item: Some(pb::sync_request::Item::Pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(pod)),
        })),
    }
}

async fn sync(client: &mut Client, items: Vec<pb::SyncRequest>) -> pb::SyncResponse {
    client
        .sync(tokio_stream::iter(items))
        .await
        .expect("sync")
        .into_inner()
}

async fn preempt(client: &mut Client, preemptor: pb::Pod, dry_run: bool) -> pb::PreemptResponse {
    client
        .preempt(pb::PreemptRequest {
            preemptor: Some(pb::preempt_request::Preemptor::Pod(preemptor)),
            dry_run,
            ..Default::default()
        })
        .await
        .expect("preempt")
        .into_inner()
}

async fn nominations(client: &mut Client) -> pb::ListNominationsResponse {
    client
        .list_nominations(pb::ListNominationsRequest {})
        .await
        .expect("list nominations")
        .into_inner()
}

fn victim_names(response: &pb::PreemptResponse) -> Vec<String> {
    let mut names: Vec<String> = response.victims.iter().map(|v| v.name.clone()).collect();
    names.sort();
    names
}

/// Three full-ish nodes: n1 (a: 1 cpu at 10, b: 2 cpu at 20), n2 (c: 3 cpu at 5), n3
/// (d: 4 cpu at 100).
fn cluster() -> Vec<pb::SyncRequest> {
    let mut items: Vec<_> = ["n1", "n2", "n3"]
        .into_iter()
        .map(|name| node_item(node(name, "4")))
        .collect();
    for (name, priority, cpu, node) in [
        ("a", 10, "1", "n1"),
        ("b", 20, "2", "n1"),
        ("c", 5, "3", "n2"),
        ("d", 100, "4", "n3"),
    ] {
        items.push(pod_item(pod(name, priority, cpu, node)));
    }
    items
}

/// Preemptors whose answers differ: one preempts, one fits, two find no candidate.
fn preemptors() -> Vec<pb::Pod> {
    vec![
        pod("wants-4", 50, "4", ""),
        pod("wants-1", 50, "1", ""),
        pod("wants-5", 1000, "5", ""),
        pod("low-4", 1, "4", ""),
    ]
}

/// Dry-run answers for every preemptor, checked to carry `epoch`, with the epoch and
/// revision cleared so answers of two processes compare.
async fn decisions(client: &mut Client, epoch: &str) -> Vec<pb::PreemptResponse> {
    let mut answers = Vec::new();
    for preemptor in preemptors() {
        let mut answer = preempt(client, preemptor, true).await;
        assert_eq!(answer.epoch, epoch);
        answer.epoch.clear();
        answer.revision = 0;
        answers.push(answer);
    }
    answers
}

fn outcome(response: &pb::PreemptResponse) -> pb::Outcome {
    pb::Outcome::try_from(response.outcome).expect("known outcome")
}

#[tokio::test]
async fn a_killed_server_restarts_with_a_new_epoch_an_empty_cache_and_the_same_decisions() {
    let server = Server::start(&[]);
    let mut client = server.client().await;
    let synced = sync(&mut client, cluster()).await;
    assert_eq!(synced.rejected, 0, "{synced:?}");
    let epoch = synced.epoch.clone();
    assert!(!epoch.is_empty());
    let before = decisions(&mut client, &epoch).await;
    let outcomes: Vec<_> = before.iter().map(outcome).collect();
    assert_eq!(
        outcomes,
        [
            pb::Outcome::Preempt,
            pb::Outcome::Fits,
            pb::Outcome::NoCandidate,
            pb::Outcome::NoCandidate
        ],
        "{before:?}"
    );
    // A committed nomination, which the killed process takes with it.
    let committed = preempt(&mut client, preemptors()[0].clone(), false).await;
    assert_eq!(outcome(&committed), pb::Outcome::Preempt);
    assert_eq!(nominations(&mut client).await.nominations.len(), 1);

    server.kill();
    let server = Server::start(&[]);
    let mut client = server.client().await;
    let listed = nominations(&mut client).await;
    assert_ne!(listed.epoch, epoch, "a restarted server has a new epoch");
    assert!(listed.nominations.is_empty(), "{listed:?}");
    // No node is known: nothing preempts.
    let blind = preempt(&mut client, preemptors()[0].clone(), true).await;
    assert_eq!(blind.epoch, listed.epoch);
    assert_ne!(outcome(&blind), pb::Outcome::Preempt, "{blind:?}");
    assert!(blind.victims.is_empty(), "{blind:?}");

    let resynced = sync(&mut client, cluster()).await;
    assert_eq!(resynced.epoch, listed.epoch);
    assert_eq!(resynced.applied, synced.applied);
    assert_eq!(decisions(&mut client, &listed.epoch).await, before);
}

/// A Sync of ever-new pod templates (distinct labels, containers, requests and
/// tolerations: over 1 KB of details each, over 250 MB in all) for one pod name, so the cache
/// holds one pod while the stream's memo sees a new template per item. The memo remembers
/// a bounded number of templates and bytes (STREAM_TEMPLATES, 8 MiB of keys a table) and
/// the stream's queues a bounded number of chunks, so the server's peak memory grows by
/// far less than the stream's size; a memo or queue without bounds would hold it all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_of_ever_new_templates_stays_within_the_memos_and_queues_bounds() {
    const TEMPLATES: usize = 250_000;
    let server = Server::start(&[]);
    let mut client = server.client().await;
    sync(&mut client, vec![node_item(node("n1", "4"))]).await;
    let peak_before = server.peak_rss();

    let items = (0..TEMPLATES).map(|i| {
        let mut p = pod("p", 0, &format!("{}m", 1 + i % 997), "");
        p.labels = map(&[("template", &format!("t-{i}")), ("app", "hostile")]);
        p.containers[0].name = format!("container-{i}");
        p.resource_version = i as u64 + 1;
        p.tolerations = (0..20)
            .map(|t| pb::Toleration {
                key: format!("example.com/taint-{i}-{t}"),
                operator: "Exists".into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            })
            .collect();
        pod_item(p)
    });
    let sent: usize = items.clone().map(|item| item.encoded_len()).sum();
    let answer = client
        .sync(tokio_stream::iter(items))
        .await
        .expect("the hostile Sync is applied")
        .into_inner();
    assert_eq!(answer.rejected, 0, "{:?}", answer.rejections);
    assert_eq!(
        answer.applied.as_ref().map(|counts| counts.pods),
        Some(TEMPLATES as u64),
        "{answer:?}"
    );

    let grown = server.peak_rss().saturating_sub(peak_before);
    println!("a stream of {sent} bytes grew the peak resident memory by {grown} bytes");
    assert!(sent > 250 << 20, "the stream sent {sent} bytes");
    assert!(
        grown < 200 << 20,
        "the server's peak resident memory grew by {grown} bytes for a stream of {sent}"
    );
    let answer = preempt(&mut client, pod("fits", 0, "1", ""), true).await;
    assert_eq!(outcome(&answer), pb::Outcome::Fits, "{answer:?}");
}

/// Large enough to hold a 100 MiB message, which the server must refuse unread.
const HUGE: usize = 100 * 1024 * 1024;

fn huge_pod_json() -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"huge","namespace":"default","uid":"uid-huge","annotations":{{"pad":"{}"}}}},"spec":{{"containers":[{{"name":"app"}}]}}}}"#,
        "x".repeat(HUGE)
    )
}

#[tokio::test]
async fn a_100_mib_message_is_refused_unread_and_the_server_keeps_serving() {
    let server = Server::start(&[]);
    let mut client = server.client().await.max_encoding_message_size(usize::MAX);
    sync(&mut client, vec![node_item(node("n1", "4"))]).await;
    let rss_before = server.rss();

    let status = client
        .update_pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::UpsertJson(huge_pod_json())),
        })
        .await
        .expect_err("a 100 MiB update is refused");
    // tonic's own code for a message over the decoding limit (16 MiB by default).
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    assert!(status.message().contains("16777216"), "{status:?}");

    let item = pb::SyncRequest {
        item: Some(pb::sync_request::Item::Pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::UpsertJson(huge_pod_json())),
        })),
    };
    let status = client
        .sync(tokio_stream::iter(vec![item]))
        .await
        .expect_err("a 100 MiB Sync item is refused");
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");

    // Still serving, on the same connection and a new one, and nothing was applied.
    let answer = preempt(&mut client, pod("fits", 0, "1", ""), true).await;
    assert_eq!(outcome(&answer), pb::Outcome::Fits, "{answer:?}");
    let mut fresh = server.client().await;
    let answer = preempt(&mut fresh, pod("huge", 1000, "4", ""), true).await;
    assert_eq!(outcome(&answer), pb::Outcome::Fits, "{answer:?}");
    let grown = server.rss().saturating_sub(rss_before);
    assert!(
        grown < 50 * 1024 * 1024,
        "the server's resident memory grew by {grown} bytes"
    );
}

/// A gRPC message frame: uncompressed flag, big-endian length, the encoding.
fn grpc_frame(message: &impl Message) -> Vec<u8> {
    let encoding = message.encode_to_vec();
    let mut frame = Vec::with_capacity(5 + encoding.len());
    frame.push(0);
    frame.extend_from_slice(&u32::try_from(encoding.len()).expect("small").to_be_bytes());
    frame.extend_from_slice(&encoding);
    frame
}

/// Sync applies items as they arrive, chunk by chunk, in stream order (see
/// `src/server/service/sync.rs`): it is not all-or-nothing. A client that dies in the
/// middle of a stream therefore leaves applied every item the server received whole, and
/// nothing of the item it was cut in: a message is only ever applied complete.
///
/// A raw HTTP/2 client sends node n1 and pods a and b whole, then the first half of pod
/// c's message, and its connection is then dropped. The victims of a preemptor that needs
/// all of n1 name exactly the pods the cache holds there: {a, b} before and after the
/// cut, and {a, b, c} once c is sent whole on a new stream (so the check could fail).
/// The server allows one Sync stream, so a second one being accepted shows the cut
/// stream has ended.
#[tokio::test]
async fn a_client_killed_mid_sync_leaves_only_whole_items_applied() {
    let server = Server::start(&["--max-sync-streams", "1"]);
    let mut client = server.client().await;
    let preemptor = pod("wants-n1", 1000, "4", "");

    let tcp = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let (send_request, connection) = h2::client::handshake(tcp).await.expect("handshake");
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut send_request = send_request.ready().await.expect("ready");
    let request = http::Request::builder()
        .method("POST")
        .uri(format!(
            "http://{}/preemptd.v1.Preemption/Sync",
            server.addr
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("request");
    let (response, mut body) = send_request
        .send_request(request, false)
        .expect("send request");
    let mut whole = Vec::new();
    for item in [
        node_item(node("n1", "4")),
        pod_item(pod("a", 0, "1", "n1")),
        pod_item(pod("b", 0, "1", "n1")),
    ] {
        whole.extend(grpc_frame(&item));
    }
    body.send_data(Bytes::from(whole), false)
        .expect("send whole");
    let cut = grpc_frame(&pod_item(pod("c", 0, "1", "n1")));
    body.send_data(Bytes::copy_from_slice(&cut[..cut.len() / 2]), false)
        .expect("send half");

    // The whole items are applied while the stream is open.
    let started = Instant::now();
    loop {
        let answer = preempt(&mut client, preemptor.clone(), true).await;
        if victim_names(&answer) == ["a", "b"] {
            break;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "a and b never applied: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The client dies: its connection closes with half a message sent.
    driver.abort();
    let _ = driver.await;
    drop((response, body, send_request));

    let started = Instant::now();
    loop {
        match client.sync(tokio_stream::iter(Vec::new())).await {
            Ok(_) => break,
            Err(status) => assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}"),
        }
        assert!(started.elapsed() < DEADLINE, "the cut stream never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answer = preempt(&mut client, preemptor.clone(), true).await;
    assert_eq!(victim_names(&answer), ["a", "b"], "{answer:?}");

    let synced = sync(&mut client, vec![pod_item(pod("c", 0, "1", "n1"))]).await;
    assert_eq!(synced.applied.map(|c| c.pods), Some(1), "{synced:?}");
    let answer = preempt(&mut client, preemptor, true).await;
    assert_eq!(victim_names(&answer), ["a", "b", "c"], "{answer:?}");
}

/// Hundreds of idle connections, and slowloris clients that send half the HTTP/2 preface
/// and then a byte now and then, do not stop a normal client's calls.
#[tokio::test]
async fn idle_and_slowloris_connections_do_not_stop_a_normal_client() {
    let server = Server::start(&[]);
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(
            tokio::net::TcpStream::connect(server.addr)
                .await
                .expect("connect idle"),
        );
    }
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let mut slow = Vec::new();
    for _ in 0..50 {
        let mut stream = tokio::net::TcpStream::connect(server.addr)
            .await
            .expect("connect slowloris");
        stream
            .write_all(&preface[..preface.len() / 2])
            .await
            .expect("half a preface");
        slow.push(stream);
    }

    let mut client = server.client().await;
    sync(&mut client, vec![node_item(node("n1", "4"))]).await;
    // The slowloris clients dribble one more byte of their preface between calls.
    for byte in &preface[preface.len() / 2..] {
        for stream in &mut slow {
            // The server may have closed a stalled connection: that is fine too.
            let _ = stream.write_all(std::slice::from_ref(byte)).await;
        }
        let answer = preempt(&mut client, pod("fits", 0, "1", ""), true).await;
        assert_eq!(outcome(&answer), pb::Outcome::Fits, "{answer:?}");
    }
    // A new client connects and is served too.
    let mut fresh = server.client().await;
    let listed = nominations(&mut fresh).await;
    assert!(listed.nominations.is_empty());
    drop((idle, slow));
}
