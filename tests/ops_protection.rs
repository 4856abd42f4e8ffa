//! Protection over real gRPC: the per-RPC timeout (DEADLINE_EXCEEDED, but never for a
//! watch stream's lifetime), load shedding on Preempt (RESOURCE_EXHAUSTED at once), the
//! watcher and Sync-stream caps, the message-size limit and HTTP/2 keepalive.

mod grpc_support;

use std::time::{Duration, Instant};

use grpc_support::*;
use preemptd::server::{ServeConfig, pb};
use tonic::Code;

/// A valid pod as JSON, padded with an annotation of `pad` bytes so decoding takes a
/// while (documents over 32 KiB are decoded on the blocking pool).
fn padded_pod_json(name: &str, cpu: &str, pad: usize) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "annotations": { "padding": "x".repeat(pad) },
        },
        "spec": {
            "priority": 100,
            "containers": [{ "name": "app", "resources": { "requests": { "cpu": cpu } } }],
        },
        "status": { "phase": "Pending" },
    })
    .to_string()
}

fn preempt_json(json: String) -> pb::PreemptRequest {
    pb::PreemptRequest {
        preemptor: Some(pb::preempt_request::Preemptor::PodJson(json)),
        dry_run: true,
        explain: false,
        pdb_mode: pb::PdbMode::Unspecified.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_calls_get_deadline_exceeded_but_watches_live_on() {
    let (server, mut client) = start_with(ServeConfig {
        rpc_timeout: Some(Duration::from_millis(1)),
        ..loopback_config()
    })
    .await;
    upsert_node(&mut client, node("n1", "4")).await;
    // Receiving and decoding 8 MB of JSON cannot be done in 1 ms.
    let start = Instant::now();
    let status = client
        .preempt(preempt_json(padded_pod_json("slow", "1", 8 << 20)))
        .await
        .expect_err("timed out");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(
        status.message().contains("rpc timeout"),
        "{}",
        status.message()
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    server.shutdown().await.expect("shutdown");

    // A watch stream outlives the timeout many times over.
    let (server, mut client) = start_with(ServeConfig {
        rpc_timeout: Some(Duration::from_millis(100)),
        ..loopback_config()
    })
    .await;
    let mut watch = client
        .watch_nominations(pb::WatchNominationsRequest { after_revision: 0 })
        .await
        .expect("watch")
        .into_inner();
    tokio::time::sleep(Duration::from_millis(400)).await;
    upsert_node(&mut client, node("n1", "4")).await;
    let mut nominated = pod("nominated", 10, "1", "");
    nominated.nominated_node_name = "n1".into();
    upsert_pod(&mut client, nominated).await;
    let event = tokio::time::timeout(Duration::from_secs(10), watch.message())
        .await
        .expect("event in time")
        .expect("stream alive")
        .expect("an event");
    assert_eq!(event.pod.map(|p| p.name).as_deref(), Some("nominated"));
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempt_overload_is_shed_with_resource_exhausted() {
    let (server, mut client) = start_with(ServeConfig {
        max_concurrent_preempts: 1,
        ..loopback_config()
    })
    .await;
    upsert_node(&mut client, node("n1", "4")).await;
    // Concurrent calls each holding the one slot for milliseconds (decoding 1 MB): some
    // must be refused. Rounds repeat in the unlikely case no two calls overlapped.
    let json = padded_pod_json("p", "1", 1 << 20);
    let mut shed = None;
    for _round in 0..20 {
        let calls = (0..16).map(|_| {
            let mut client = client.clone();
            let json = json.clone();
            tokio::spawn(async move { client.preempt(preempt_json(json)).await })
        });
        let mut ok = 0;
        for call in calls.collect::<Vec<_>>() {
            match call.await.expect("join") {
                Ok(_) => ok += 1,
                Err(status) => {
                    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                    shed = Some(status);
                }
            }
        }
        assert!(ok >= 1, "at least the first call is served");
        if shed.is_some() {
            break;
        }
    }
    let shed = shed.expect("no call was shed");
    assert!(
        shed.message()
            .contains("too many concurrent preempt calls (limit 1)"),
        "{}",
        shed.message()
    );
    // The slot is free again once the calls are done.
    let response = preempt(&mut client, pod("after", 100, "1", ""), true).await;
    assert_eq!(outcome(&response), pb::Outcome::Fits);
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn watchers_over_the_cap_are_refused() {
    let (server, mut client) = start_with(ServeConfig {
        max_watchers: 2,
        ..loopback_config()
    })
    .await;
    let request = || pb::WatchNominationsRequest { after_revision: 0 };
    let first = client
        .watch_nominations(request())
        .await
        .expect("first watch");
    let _second = client
        .watch_nominations(request())
        .await
        .expect("second watch");
    let status = client
        .watch_nominations(request())
        .await
        .expect_err("third watch refused");
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert!(
        status
            .message()
            .contains("too many nomination watchers (limit 2)"),
        "{}",
        status.message()
    );
    // A closed watch frees its slot (once the server sees the stream reset).
    drop(first);
    let mut reopened = None;
    for _ in 0..100 {
        match client.watch_nominations(request()).await {
            Ok(watch) => {
                reopened = Some(watch);
                break;
            }
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    assert!(reopened.is_some(), "the slot was not freed");
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_streams_over_the_cap_are_refused_until_one_ends() {
    let (server, mut client) = start_with(ServeConfig {
        max_sync_streams: 1,
        ..loopback_config()
    })
    .await;
    upsert_node(&mut client, node("n1", "4")).await;
    // A stream that stays open (a feed), known to be running once its pod is applied.
    let (items, open) = open_sync_feed(&client);
    let mut held = pod("held", 0, "1", "n1");
    held.resource_version = 5;
    items.send(sync_pod_item(held.clone())).await.expect("send");
    wait_until_held(&mut client, &held).await;

    let status = client
        .sync(tokio_stream::iter(vec![sync_pod_item(pod(
            "other", 0, "1", "n1",
        ))]))
        .await
        .expect_err("second stream refused");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status
            .message()
            .contains("too many open sync streams (limit 1)"),
        "{}",
        status.message()
    );

    // The open stream ends normally, and its slot is free for the next one.
    drop(items);
    let first = open.await.expect("join").expect("open stream").into_inner();
    assert_eq!(first.applied.map(|c| c.pods), Some(1));
    let next = client
        .sync(tokio_stream::iter(vec![sync_pod_item(pod(
            "other", 0, "1", "n1",
        ))]))
        .await
        .expect("a stream after the first ended")
        .into_inner();
    assert_eq!(next.applied.map(|c| c.pods), Some(1));
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn oversized_messages_are_refused() {
    let (server, mut client) = start_with(ServeConfig {
        max_message_bytes: 64 * 1024,
        ..loopback_config()
    })
    .await;
    let status = client
        .preempt(preempt_json(padded_pod_json("big", "1", 128 * 1024)))
        .await
        .expect_err("too large");
    // tonic's own code for a message over the decoding limit.
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    assert!(status.message().contains("65536"), "{}", status.message());
    // Under the limit is fine.
    upsert_node(&mut client, node("n1", "4")).await;
    let response = client
        .preempt(preempt_json(padded_pod_json("small", "1", 16 * 1024)))
        .await
        .expect("under the limit")
        .into_inner();
    assert_eq!(outcome(&response), pb::Outcome::Fits);
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn keepalive_pings_keep_idle_connections_usable() {
    let (server, _) = start_with(ServeConfig {
        keepalive_interval: Some(Duration::from_millis(50)),
        keepalive_timeout: Duration::from_secs(1),
        ..loopback_config()
    })
    .await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", server.local_addr()))
            .expect("endpoint")
            .connect()
            .await
            .expect("connect");
    let mut client = pb::preemption_client::PreemptionClient::new(channel);
    upsert_node(&mut client, node("n1", "1")).await;
    // Many ping intervals of idleness: the client answers the pings, the connection stays.
    tokio::time::sleep(Duration::from_millis(500)).await;
    upsert_node(&mut client, node("n2", "1")).await;
    assert_eq!(list(&mut client).await.nominations.len(), 0);
    server.shutdown().await.expect("shutdown");
}
