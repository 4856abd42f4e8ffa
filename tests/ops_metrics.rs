//! `/metrics` end to end: a server with its metrics endpoint on port 0, real gRPC
//! traffic, and a plain HTTP/1.1 scrape checked for names, labels and counts.
//!
//! Its own test binary: the metrics recorder is process-wide.

mod grpc_support;

use std::time::Duration;

use grpc_support::*;
use preemptd::server::pb;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tonic::Code;

async fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect metrics");
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: */*\r\n\r\n").as_bytes())
        .await
        .expect("send request");
    let mut response = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        stream.read_to_string(&mut response),
    )
    .await
    .expect("scrape timed out")
    .expect("read response");
    let (head, body) = response.split_once("\r\n\r\n").expect("http response");
    (head.to_string(), body.to_string())
}

/// The value of the sample `name` whose labels include every pair in `labels`.
fn sample(body: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .find(|(series, _)| {
            let (series_name, series_labels) = series.split_once('{').unwrap_or((series, ""));
            series_name == name
                && labels
                    .iter()
                    .all(|(k, v)| series_labels.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|(_, value)| value.parse().ok())
}

fn count(body: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    sample(body, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in\n{body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_counts_real_traffic() {
    let (server, mut client) = start_with(preemptd::server::ServeConfig {
        metrics_listen: Some("127.0.0.1:0".parse().expect("addr")),
        ..loopback_config()
    })
    .await;
    let metrics = server.metrics_addr().expect("metrics endpoint");

    upsert_node(&mut client, node("n1", "2")).await;
    upsert_node(&mut client, node("n2", "2")).await;
    upsert_pod(&mut client, pod("low-1", 1, "2", "n1")).await;
    upsert_pod(&mut client, pod("low-2", 1, "1", "n2")).await;
    client
        .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest {
            change: Some(pb::update_pod_disruption_budget_request::Change::UpsertJson(
                r#"{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"pdb","namespace":"default"},"spec":{"maxUnavailable":1,"selector":{"matchLabels":{"app":"x"}}},"status":{"disruptionsAllowed":1}}"#.into(),
            )),
        })
        .await
        .expect("pdb");
    // Fits on n2 (1 CPU free): no preemption attempt.
    let fits = preempt(&mut client, pod("small", 100, "1", ""), true).await;
    assert_eq!(outcome(&fits), pb::Outcome::Fits);
    // Needs 2 CPUs: preempts low-1 on n1 (committed, so it is nominated).
    let preempted = preempt(&mut client, pod("big", 100, "2", ""), false).await;
    assert_eq!(outcome(&preempted), pb::Outcome::Preempt);
    // A bad request: counted with its code.
    let bad = client
        .preempt(pb::PreemptRequest::default())
        .await
        .expect_err("no preemptor");
    assert_eq!(bad.code(), Code::InvalidArgument);
    // A watch, cut short by the client.
    let mut watch = client
        .watch_nominations(pb::WatchNominationsRequest { after_revision: 0 })
        .await
        .expect("watch")
        .into_inner();
    watch
        .message()
        .await
        .expect("first event")
        .expect("an event");

    let (head, body) = http_get(metrics, "/metrics").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");

    let preempt_labels = [
        ("grpc_service", "preemptd.v1.Preemption"),
        ("grpc_method", "Preempt"),
    ];
    assert_eq!(
        count(&body, "grpc_server_started_total", &preempt_labels),
        3.0
    );
    let ok = [preempt_labels[0], preempt_labels[1], ("grpc_code", "OK")];
    assert_eq!(count(&body, "grpc_server_handled_total", &ok), 2.0);
    let invalid = [
        preempt_labels[0],
        preempt_labels[1],
        ("grpc_code", "InvalidArgument"),
    ];
    assert_eq!(count(&body, "grpc_server_handled_total", &invalid), 1.0);
    let update_pod = [
        ("grpc_service", "preemptd.v1.Preemption"),
        ("grpc_method", "UpdatePod"),
        ("grpc_code", "OK"),
    ];
    assert_eq!(count(&body, "grpc_server_handled_total", &update_pod), 2.0);
    assert_eq!(
        count(&body, "grpc_server_handling_seconds_count", &preempt_labels),
        3.0
    );
    let le = [preempt_labels[0], preempt_labels[1], ("le", "+Inf")];
    assert_eq!(
        count(&body, "grpc_server_handling_seconds_bucket", &le),
        3.0
    );
    // Explicit buckets, not the exporter's summary default.
    assert!(
        sample(
            &body,
            "grpc_server_handling_seconds_bucket",
            &[("le", "0.0005")]
        )
        .is_some()
    );

    assert_eq!(
        count(&body, "preemptd_decisions_total", &[("outcome", "fits")]),
        1.0
    );
    assert_eq!(
        count(&body, "preemptd_decisions_total", &[("outcome", "preempt")]),
        1.0
    );
    assert_eq!(
        count(&body, "preemptd_decision_duration_seconds_count", &[]),
        2.0
    );
    assert!(
        sample(
            &body,
            "preemptd_decision_duration_seconds_bucket",
            &[("le", "0.001")]
        )
        .is_some()
    );
    assert_eq!(
        count(&body, "scheduler_preemption_attempts_total", &[]),
        1.0
    );
    assert_eq!(count(&body, "scheduler_preemption_victims_count", &[]), 1.0);
    assert_eq!(count(&body, "scheduler_preemption_victims_sum", &[]), 1.0);
    assert_eq!(
        count(&body, "scheduler_preemption_victims_bucket", &[("le", "1")]),
        1.0
    );

    assert_eq!(count(&body, "preemptd_cache_nodes", &[]), 2.0);
    // low-1, low-2 and the committed preemptor.
    assert_eq!(count(&body, "preemptd_cache_pods", &[]), 3.0);
    assert_eq!(count(&body, "preemptd_cache_nominated_pods", &[]), 1.0);
    assert_eq!(count(&body, "preemptd_cache_pdbs", &[]), 1.0);
    assert!(count(&body, "preemptd_nominations_revision", &[]) >= 2.0);
    assert_eq!(count(&body, "preemptd_watch_subscribers", &[]), 1.0);
    assert!(body.contains("# HELP preemptd_decisions_total"), "{body}");

    // The watch ends (client drop): handled with code Canceled, subscribers back to 0.
    drop(watch);
    let watch_done = [
        ("grpc_service", "preemptd.v1.Preemption"),
        ("grpc_method", "WatchNominations"),
        ("grpc_code", "Canceled"),
    ];
    let mut last = String::new();
    for _ in 0..100 {
        let (_, body) = http_get(metrics, "/metrics").await;
        if sample(&body, "grpc_server_handled_total", &watch_done) == Some(1.0)
            && sample(&body, "preemptd_watch_subscribers", &[]) == Some(0.0)
        {
            last.clear();
            break;
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(last.is_empty(), "watch end not counted:\n{last}");

    // Unknown methods do not grow label sets.
    let channel = channel(&server).await;
    let mut raw = tonic::client::Grpc::new(channel);
    raw.ready().await.expect("ready");
    let status = raw
        .unary::<pb::ListNominationsRequest, pb::ListNominationsResponse, _>(
            tonic::Request::new(pb::ListNominationsRequest {}),
            "/preemptd.v1.Preemption/NoSuchMethod"
                .parse()
                .expect("path"),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .expect_err("unimplemented");
    assert_eq!(status.code(), Code::Unimplemented);
    let (_, body) = http_get(metrics, "/metrics").await;
    let unknown = [
        ("grpc_service", "unknown"),
        ("grpc_method", "unknown"),
        ("grpc_code", "Unimplemented"),
    ];
    assert_eq!(count(&body, "grpc_server_handled_total", &unknown), 1.0);
    assert!(!body.contains("NoSuchMethod"));

    let (head, _) = http_get(metrics, "/").await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");

    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn server_runs_without_a_metrics_endpoint() {
    let (server, mut client) = start().await;
    assert_eq!(server.metrics_addr(), None);
    upsert_node(&mut client, node("n1", "1")).await;
    server.shutdown().await.expect("shutdown");
}

/// The sum of every series of `name` whose labels include every pair in `labels`.
fn total(body: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let (series_name, series_labels) = series.split_once('{').unwrap_or((series, ""));
            series_name == name
                && labels
                    .iter()
                    .all(|(k, v)| series_labels.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|(_, value)| value.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_sync_streams_are_counted_as_handled() {
    let (server, client) = start_with(preemptd::server::ServeConfig {
        metrics_listen: Some("127.0.0.1:0".parse().expect("addr")),
        ..loopback_config()
    })
    .await;
    let metrics = server.metrics_addr().expect("metrics endpoint");
    let sync = [("grpc_method", "Sync")];
    let counts = || async {
        let (_, body) = http_get(metrics, "/metrics").await;
        (
            total(&body, "grpc_server_started_total", &sync),
            total(&body, "grpc_server_handled_total", &sync),
        )
    };
    let (started_before, _) = counts().await;

    const STREAMS: usize = 6;
    let mut feeds = Vec::new();
    for i in 0..STREAMS {
        let (items, call) = open_sync_feed(&client);
        items
            .send(sync_pod_item(pod(&format!("p{i}"), 0, "100m", "")))
            .await
            .expect("send");
        feeds.push((items, call));
    }
    // Every stream has reached the server before any is cancelled.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while counts().await.0 < started_before + STREAMS as f64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "streams never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Half are cancelled mid-stream (the client drops the call: RST_STREAM), half end.
    for (i, (items, call)) in feeds.into_iter().enumerate() {
        if i % 2 == 0 {
            call.abort();
            let _ = call.await;
            drop(items);
        } else {
            drop(items);
            call.await.expect("sync task").expect("sync answered");
        }
    }
    // Every started call is handled exactly once, the cancelled ones included.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (started, handled) = counts().await;
        assert!(started >= started_before + STREAMS as f64);
        if started == handled {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "sync started {started}, handled {handled}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await.expect("shutdown");
}
