//! OTLP trace export end to end: an in-process OTLP/gRPC trace receiver, preemptd's
//! telemetry pointed at it, a Preempt call carrying a W3C `traceparent`, and the spans of
//! that call arriving under the client's trace id with the client's span as the parent.
//!
//! Its own test binary: the tracing subscriber is global and set once per process.

mod grpc_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_support::*;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use preemptd::ops::telemetry::{self, TelemetryConfig};
use preemptd::server::pb;

#[derive(Clone, Default)]
struct Receiver {
    requests: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.requests
            .lock()
            .expect("receiver lock")
            .push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
        .map(|v| match v {
            Value::StringValue(s) => s.clone(),
            Value::IntValue(i) => i.to_string(),
            Value::BoolValue(b) => b.to_string(),
            other => format!("{other:?}"),
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempt_spans_reach_the_collector_under_the_clients_trace() {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind receiver");
    let receiver_addr = listener.local_addr().expect("receiver addr");
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(receiver.clone()))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );

    let guard = telemetry::init(&TelemetryConfig {
        otlp_endpoint: Some(format!("http://{receiver_addr}")),
        service_name: "preemptd-test".to_string(),
        ..TelemetryConfig::default()
    })
    .expect("init telemetry");
    assert!(telemetry::exporting());

    let (server, mut client) = start().await;
    upsert_node(&mut client, node("n1", "2")).await;
    upsert_pod(&mut client, pod("low", 1, "2", "n1")).await;

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent_span_id = "00f067aa0ba902b7";
    let mut request = tonic::Request::new(pb::PreemptRequest {
        preemptor: Some(pb::preempt_request::Preemptor::Pod(pod(
            "high", 100, "1", "",
        ))),
        dry_run: false,
        explain: false,
        pdb_mode: pb::PdbMode::Unspecified.into(),
    });
    request.metadata_mut().insert(
        "traceparent",
        format!("00-{trace_id}-{parent_span_id}-01")
            .parse()
            .expect("metadata value"),
    );
    let response = client.preempt(request).await.expect("preempt").into_inner();
    assert_eq!(outcome(&response), pb::Outcome::Preempt);

    // The rpc span ends when the server drops the response body, which can be after the
    // client has its answer, and the batch exporter sends on its own schedule: wait until
    // every span this test looks at has reached the collector.
    let expected = [
        "preemptd.v1.Preemption/Preempt",
        "decide",
        "filter",
        "eligibility",
        "candidate_search",
        "node_pick",
        "commit",
    ];
    let requests = wait_for_spans(&receiver, |spans| {
        let ours: Vec<&str> = spans
            .iter()
            .filter(|s| hex(&s.trace_id) == trace_id)
            .map(|s| s.name.as_str())
            .collect();
        expected.iter().all(|name| ours.contains(name))
            && spans
                .iter()
                .any(|s| s.name == "preemptd.v1.Preemption/UpdatePod")
    })
    .await;
    drop(client);
    server.shutdown().await.expect("shutdown");
    // Flushing blocks until the exporter is done: off the async threads.
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .expect("flush");

    let service_names: Vec<String> = requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .filter_map(|rs| rs.resource.as_ref())
        .flat_map(|r| &r.attributes)
        .filter(|kv| kv.key == "service.name")
        .filter_map(|kv| kv.value.as_ref()?.value.clone())
        .map(|v| format!("{v:?}"))
        .collect();
    assert!(
        service_names.iter().any(|s| s.contains("preemptd-test")),
        "{service_names:?}"
    );
    let spans = spans_of(&requests);
    let ours: Vec<&Span> = spans
        .iter()
        .filter(|s| hex(&s.trace_id) == trace_id)
        .collect();
    let names: Vec<&str> = ours.iter().map(|s| s.name.as_str()).collect();
    for expected in expected {
        assert!(names.contains(&expected), "no {expected} span in {names:?}");
    }

    let rpc = ours
        .iter()
        .find(|s| s.name == "preemptd.v1.Preemption/Preempt")
        .expect("rpc span");
    assert_eq!(
        hex(&rpc.parent_span_id),
        parent_span_id,
        "rpc span's parent"
    );
    assert_eq!(
        attribute(rpc, "rpc.service").as_deref(),
        Some("preemptd.v1.Preemption")
    );
    assert_eq!(attribute(rpc, "rpc.method").as_deref(), Some("Preempt"));
    assert_eq!(attribute(rpc, "rpc.grpc.status_code").as_deref(), Some("0"));

    let decide = ours
        .iter()
        .find(|s| s.name == "decide")
        .expect("decide span");
    assert_eq!(
        decide.parent_span_id, rpc.span_id,
        "decide under the rpc span"
    );
    assert_eq!(attribute(decide, "preemptor.name").as_deref(), Some("high"));
    assert_eq!(
        attribute(decide, "preemptor.namespace").as_deref(),
        Some("default")
    );
    assert_eq!(
        attribute(decide, "outcome").as_deref(),
        Some("OUTCOME_PREEMPT")
    );
    assert_eq!(attribute(decide, "victims").as_deref(), Some("1"));
    assert_eq!(attribute(decide, "candidates").as_deref(), Some("1"));
    assert_eq!(attribute(decide, "node").as_deref(), Some("n1"));
    let commit = ours
        .iter()
        .find(|s| s.name == "commit")
        .expect("commit span");
    assert_eq!(
        commit.parent_span_id, rpc.span_id,
        "commit under the rpc span"
    );
    assert!(attribute(commit, "revision").is_some(), "commit revision");
    let search = ours
        .iter()
        .find(|s| s.name == "candidate_search")
        .expect("search span");
    assert_eq!(search.parent_span_id, decide.span_id);

    // The update calls before carried no traceparent: their spans are roots of their own
    // traces, not part of the client's.
    let updates = spans
        .iter()
        .filter(|s| s.name == "preemptd.v1.Preemption/UpdatePod")
        .collect::<Vec<_>>();
    assert!(!updates.is_empty());
    assert!(
        updates
            .iter()
            .all(|s| hex(&s.trace_id) != trace_id && s.parent_span_id.is_empty())
    );
}

fn spans_of(requests: &[ExportTraceServiceRequest]) -> Vec<Span> {
    requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| ss.spans.iter().cloned())
        .collect()
}

/// Polls the collector until the spans it received satisfy `arrived`; the export requests
/// so far come back. Panics, naming the spans seen, after a deadline generous enough for
/// a loaded machine (the batch exporter sends every few seconds).
async fn wait_for_spans(
    receiver: &Receiver,
    arrived: impl Fn(&[Span]) -> bool,
) -> Vec<ExportTraceServiceRequest> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let requests = receiver.requests.lock().expect("receiver lock").clone();
        let spans = spans_of(&requests);
        if arrived(&spans) {
            return requests;
        }
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert!(
            tokio::time::Instant::now() < deadline,
            "the collector did not receive the expected spans; it has {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
