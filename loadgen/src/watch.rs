//! The `WatchNominations` phase: subscribers fed by `UpdatePod` nominations at a fixed rate.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::task::JoinHandle;

use pb::preemption_client::PreemptionClient;
use preemptd::server::pb;

use crate::client::{Client, connect, endpoint};
use crate::progress::Progress;
use crate::report::{Latency, histogram};

/// Watch subscribers multiplexed on one connection (servers cap concurrent streams per
/// connection, hyper at 200 by default).
const WATCHERS_PER_CONNECTION: usize = 50;

/// `WatchNominations` fan-out: subscribers from the current revision, nominations
/// published by unary `UpdatePod` (new pending pods with nominated_node_name) at a fixed
/// rate; lag is from each call's ack to each subscriber receiving its event (0 when the
/// event arrives first).
pub(crate) struct WatchPlan<'a> {
    pub(crate) addr: SocketAddr,
    pub(crate) watchers: usize,
    pub(crate) rate: u64,
    pub(crate) seconds: f64,
    pub(crate) nodes: &'a [String],
}

type Received = Vec<(String, Instant)>;

impl WatchPlan<'_> {
    /// Returns the lag distribution, events published, and deliveries missed.
    pub(crate) async fn run(
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
