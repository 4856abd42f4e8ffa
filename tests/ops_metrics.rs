//! `/metrics` end to end: a server with its metrics endpoint on port 0, real gRPC
//! traffic, and a plain HTTP/1.1 scrape checked for names, labels and counts; over TLS,
//! scrapes in HTTP/1.1 and HTTP/2 (each as ALPN negotiates it).
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
        .write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: */*\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
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
    client
        .update_pod_group(pb::UpdatePodGroupRequest {
            change: Some(pb::update_pod_group_request::Change::UpsertJson(
                r#"{"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup","metadata":{"name":"gang"},"spec":{"schedulingPolicy":{"gang":{"minCount":2}}}}"#.into(),
            )),
        })
        .await
        .expect("pod group");
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
    assert_eq!(count(&body, "preemptd_cache_pod_groups", &[]), 1.0);
    assert_eq!(count(&body, "preemptd_cache_workloads", &[]), 0.0);
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

/// A CA's PEM, and a server certificate for localhost it signed in a temporary directory
/// (`tls.crt`, `tls.key`).
fn localhost_pki() -> (String, tempfile::TempDir) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "test ca");
    let ca_key = KeyPair::generate().expect("ca key");
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.subject_alt_names = vec![SanType::DnsName("localhost".try_into().expect("dns"))];
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &issuer).expect("sign");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("tls.crt"), cert.pem()).expect("cert");
    std::fs::write(dir.path().join("tls.key"), key.serialize_pem()).expect("key");
    (ca_cert.pem(), dir)
}

/// A TLS connection to `addr` trusting `ca_pem`, offering `alpn`; checks that the server
/// chose it.
async fn tls_connect(
    addr: std::net::SocketAddr,
    ca_pem: &str,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use rustls_pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(
        rustls_pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()).flatten(),
    );
    let mut config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(alpn), "alpn");
    tls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_over_tls_answer_http1_and_http2_scrapes() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let (ca_pem, dir) = localhost_pki();
        let (server, mut client) = {
            let config = preemptd::server::ServeConfig {
                tls: Some(preemptd::server::tls::TlsSettings::new(
                    dir.path().join("tls.crt"),
                    dir.path().join("tls.key"),
                )),
                metrics_listen: Some("127.0.0.1:0".parse().expect("addr")),
                ..loopback_config()
            };
            let server = preemptd::server::start(config).await.expect("start");
            let client = tls_client_for(&server, &ca_pem).await;
            (server, client)
        };
        upsert_node(&mut client, node("n1", "2")).await;
        let metrics = server.metrics_addr().expect("metrics endpoint");

        // HTTP/1.1, as curl without --http2 or a scraper that offers only http/1.1.
        let mut tls = tls_connect(metrics, &ca_pem, b"http/1.1").await;
        tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .expect("send");
        let mut response = Vec::new();
        // Some TLS stacks end without close_notify: what arrived is the answer.
        let _ = tls.read_to_end(&mut response).await;
        let response = String::from_utf8(response).expect("utf-8");
        let (head, body) = response.split_once("\r\n\r\n").expect("http response");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(count(body, "preemptd_cache_nodes", &[]), 1.0);

        // HTTP/2, as the ALPN h2 the port offers promises (curl's default over TLS).
        let tls = tls_connect(metrics, &ca_pem, b"h2").await;
        let (send, connection) = h2::client::handshake(tls).await.expect("h2 handshake");
        tokio::spawn(connection);
        let mut send = send.ready().await.expect("ready");
        let request = http::Request::get("https://localhost/metrics")
            .body(())
            .expect("request");
        let (response, _) = send.send_request(request, true).expect("send request");
        let response = response.await.expect("response");
        assert_eq!(response.status(), http::StatusCode::OK);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .expect("ascii")
                .starts_with("text/plain; version=0.0.4"),
            "{:?}",
            response.headers()
        );
        let mut body = response.into_body();
        let mut text = Vec::new();
        while let Some(data) = body.data().await {
            let data = data.expect("response data");
            let _ = body.flow_control().release_capacity(data.len());
            text.extend_from_slice(&data);
        }
        let text = String::from_utf8(text).expect("utf-8");
        assert_eq!(count(&text, "preemptd_cache_nodes", &[]), 1.0);

        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}

/// A gRPC client of `server` over TLS, trusting `ca_pem`.
async fn tls_client_for(server: &preemptd::server::RunningServer, ca_pem: &str) -> Client {
    let tls = tonic::transport::ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(ca_pem))
        .domain_name("localhost");
    let channel =
        tonic::transport::Endpoint::from_shared(format!("https://{}", server.local_addr()))
            .expect("endpoint")
            .tls_config(tls)
            .expect("tls config")
            .connect()
            .await
            .expect("connect");
    preemptd::server::pb::preemption_client::PreemptionClient::new(channel)
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
