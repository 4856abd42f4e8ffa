//! Shared helpers for the gRPC tests: start a server on 127.0.0.1:0, connect a client,
//! build typed objects. Everything goes over real loopback gRPC.
#![allow(dead_code)]

pub mod typed;

use std::collections::BTreeMap;
use std::time::Duration;

use preemptd::server::pb;
use preemptd::server::pb::preemption_client::PreemptionClient;
use preemptd::server::{RunningServer, ServeConfig};
use tonic::transport::{Channel, Endpoint};

pub type Client = PreemptionClient<Channel>;

/// Upper bound for any single test body.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(120);

pub fn loopback_config() -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().expect("loopback address"),
        ..ServeConfig::default()
    }
}

pub async fn channel(server: &RunningServer) -> Channel {
    Endpoint::from_shared(format!("http://{}", server.local_addr()))
        .expect("endpoint")
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect("connect")
}

/// A connection with minimal HTTP/2 receive windows (64 KiB instead of hyper's 2 MiB),
/// like a slow or stalled client: the server's sends back up after little data.
pub async fn small_window_channel(server: &RunningServer) -> Channel {
    Endpoint::from_shared(format!("http://{}", server.local_addr()))
        .expect("endpoint")
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535)
        .connect()
        .await
        .expect("connect")
}

pub async fn start_with(config: ServeConfig) -> (RunningServer, Client) {
    let server = preemptd::server::start(config).await.expect("start server");
    let client = PreemptionClient::new(channel(&server).await);
    (server, client)
}

pub async fn start() -> (RunningServer, Client) {
    start_with(loopback_config()).await
}

pub fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn node(name: &str, cpu: &str) -> pb::Node {
    pb::Node {
        name: name.into(),
        labels: map(&[("kubernetes.io/hostname", name)]),
        allocatable: map(&[("cpu", cpu), ("memory", "64Gi"), ("pods", "110")]),
        ..Default::default()
    }
}

/// A pod requesting `cpu`; bound when `node` is non-empty.
pub fn pod(name: &str, priority: i32, cpu: &str, node: &str) -> pb::Pod {
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
        ..Default::default()
    }
}

pub async fn upsert_node(client: &mut Client, node: pb::Node) -> pb::UpdateNodeResponse {
    client
        .update_node(pb::UpdateNodeRequest {
            change: Some(pb::update_node_request::Change::Upsert(node)),
        })
        .await
        .expect("update node")
        .into_inner()
}

pub async fn upsert_pod(client: &mut Client, pod: pb::Pod) -> pb::UpdatePodResponse {
    client
        .update_pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(pod)),
        })
        .await
        .expect("update pod")
        .into_inner()
}

pub async fn delete_pod(client: &mut Client, name: &str) -> pb::UpdatePodResponse {
    client
        .update_pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Delete(pb::ObjectRef {
                namespace: "default".into(),
                name: name.into(),
                uid: None,
            })),
        })
        .await
        .expect("delete pod")
        .into_inner()
}

pub async fn preempt(client: &mut Client, pod: pb::Pod, dry_run: bool) -> pb::PreemptResponse {
    client
        .preempt(pb::PreemptRequest {
            preemptor: Some(pb::preempt_request::Preemptor::Pod(pod)),
            dry_run,
            explain: false,
            pdb_mode: pb::PdbMode::Unspecified.into(),
        })
        .await
        .expect("preempt")
        .into_inner()
}

pub async fn list(client: &mut Client) -> pb::ListNominationsResponse {
    client
        .list_nominations(pb::ListNominationsRequest {})
        .await
        .expect("list nominations")
        .into_inner()
}

pub fn names(refs: &[pb::PodRef]) -> Vec<String> {
    let mut out: Vec<String> = refs
        .iter()
        .map(|r| format!("{}/{}", r.namespace, r.name))
        .collect();
    out.sort();
    out
}

pub fn outcome(r: &pb::PreemptResponse) -> pb::Outcome {
    pb::Outcome::try_from(r.outcome).unwrap_or(pb::Outcome::Unspecified)
}

/// A `Sync` item upserting `pod`.
pub fn sync_pod_item(pod: pb::Pod) -> pb::SyncRequest {
    pb::SyncRequest {
        item: Some(pb::sync_request::Item::Pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(pod)),
        })),
    }
}

/// The answer of a `Sync` call, once its stream ends.
pub type SyncCall =
    tokio::task::JoinHandle<Result<tonic::Response<pb::SyncResponse>, tonic::Status>>;

/// A `Sync` stream kept open as a feed (as a sidecar would): items sent on the sender go
/// out as they are sent; the call answers once the sender is dropped.
pub fn open_sync_feed(client: &Client) -> (tokio::sync::mpsc::Sender<pb::SyncRequest>, SyncCall) {
    let (items, feed) = tokio::sync::mpsc::channel(4);
    let mut streaming = client.clone();
    let call = tokio::spawn(async move {
        streaming
            .sync(tokio_stream::wrappers::ReceiverStream::new(feed))
            .await
    });
    (items, call)
}

/// Waits until the server holds `held` (sent by some other way, e.g. on a `Sync` feed):
/// an older version of it is then answered as stale. `held.resource_version` must be at
/// least 2. Panics after 10 s.
pub async fn wait_until_held(client: &mut Client, held: &pb::Pod) {
    let mut older = held.clone();
    older.resource_version = held.resource_version - 1;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let reply = upsert_pod(client, older.clone()).await;
        if !reply.applied {
            assert_eq!(reply.resource_version, held.resource_version);
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} was never applied",
            held.name
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A request message that is the bytes it holds, sent as they are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawMessage(pub Vec<u8>);

impl prost::Message for RawMessage {
    fn encode_raw(&self, buf: &mut impl bytes::BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        // Only ever sent.
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// `UpdatePod` with `encoding` as its request, sent as it is.
pub async fn raw_update_pod(
    server: &preemptd::server::RunningServer,
    encoding: Vec<u8>,
) -> Result<pb::UpdatePodResponse, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel(server).await);
    grpc.ready().await.expect("channel ready");
    let codec = tonic_prost::ProstCodec::<RawMessage, pb::UpdatePodResponse>::default();
    let path =
        tonic::codegen::http::uri::PathAndQuery::from_static("/preemptd.v1.Preemption/UpdatePod");
    grpc.unary(tonic::Request::new(RawMessage(encoding)), path, codec)
        .await
        .map(tonic::Response::into_inner)
}
