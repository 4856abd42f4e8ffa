//! Malformed requests over gRPC: each gets its status code and a message naming the
//! field, and none changes anything (the cache revision, the nominations and a dry-run
//! answer are the same after it as before).

mod grpc_support;

use grpc_support::*;
use preemptd::server::pb;
use preemptd::server::pb::preempt_request::Preemptor;
use preemptd::server::pb::update_node_request::Change as NodeChange;
use preemptd::server::pb::update_pod_disruption_budget_request::Change as PdbChange;
use preemptd::server::pb::update_pod_request::Change as PodChange;
use tokio::time::timeout;
use tonic::Code;

/// Small enough that the oversize case is cheap, large enough for everything else.
const MAX_MESSAGE_BYTES: usize = 64 * 1024;

enum Call {
    Node(Option<NodeChange>),
    Pod(Option<PodChange>),
    Pdb(Option<PdbChange>),
    Preempt(Option<Preemptor>),
    Watch(u64),
}

async fn call(client: &mut Client, call: Call) -> Result<String, tonic::Status> {
    match call {
        Call::Node(change) => client
            .update_node(pb::UpdateNodeRequest { change })
            .await
            .map(|r| r.into_inner().epoch),
        Call::Pod(change) => client
            .update_pod(pb::UpdatePodRequest { change })
            .await
            .map(|r| r.into_inner().epoch),
        Call::Pdb(change) => client
            .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest { change })
            .await
            .map(|r| r.into_inner().epoch),
        Call::Preempt(preemptor) => client
            .preempt(pb::PreemptRequest {
                preemptor,
                dry_run: false,
                explain: false,
                pdb_mode: pb::PdbMode::Unspecified.into(),
            })
            .await
            .map(|r| r.into_inner().epoch),
        Call::Watch(after_revision) => client
            .watch_nominations(pb::WatchNominationsRequest { after_revision })
            .await
            .map(|_| String::new()),
    }
}

/// Everything a client can observe about the cache's state.
#[derive(Debug, PartialEq)]
struct Observed {
    list_revision: u64,
    nominations: Vec<(String, String)>,
    cache_revision: u64,
    outcome: i32,
    node: String,
    victims: Vec<String>,
}

async fn observe(client: &mut Client) -> Observed {
    let listed = list(client).await;
    let answer = preempt(client, pod("probe", 100, "2", ""), true).await;
    Observed {
        list_revision: listed.revision,
        nominations: listed
            .nominations
            .iter()
            .map(|n| {
                (
                    n.pod.as_ref().map(|p| p.name.clone()).unwrap_or_default(),
                    n.node.clone(),
                )
            })
            .collect(),
        cache_revision: answer.revision,
        outcome: answer.outcome,
        node: answer.nominated_node_name,
        victims: names(&answer.victims),
    }
}

fn typed_pod(edit: impl FnOnce(&mut pb::Pod)) -> Call {
    let mut p = pod("bad", 5, "1", "n1");
    edit(&mut p);
    Call::Pod(Some(PodChange::Upsert(p)))
}

fn typed_node(edit: impl FnOnce(&mut pb::Node)) -> Call {
    let mut n = node("n9", "4");
    edit(&mut n);
    Call::Node(Some(NodeChange::Upsert(n)))
}

fn selector_in_without_values() -> pb::LabelSelector {
    pb::LabelSelector {
        match_expressions: vec![pb::LabelSelectorRequirement {
            key: "app".into(),
            operator: "In".into(),
            values: vec![],
        }],
        ..Default::default()
    }
}

fn anti_affinity(term: pb::PodAffinityTerm) -> Option<pb::Affinity> {
    Some(pb::Affinity {
        pod_anti_affinity: Some(pb::PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: vec![term],
            ..Default::default()
        }),
        ..Default::default()
    })
}

const ANTI: &str =
    "upsert.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";

fn cases() -> Vec<(&'static str, Call, Code, String)> {
    let pod_json = |spec: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"j","namespace":"default"}},"spec":{spec}}}"#
        )
    };
    let node_json = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"nj"}}"#.to_string();
    let s = |x: &str| x.to_string();
    vec![
        (
            "node: missing oneof",
            Call::Node(None),
            Code::InvalidArgument,
            s("change: one of upsert, upsert_json or delete is required"),
        ),
        (
            "node: empty name",
            typed_node(|n| n.name.clear()),
            Code::InvalidArgument,
            s("upsert.metadata.name: must not be empty"),
        ),
        (
            "node: bad quantity",
            typed_node(|n| {
                n.allocatable.insert("cpu".into(), "lots".into());
            }),
            Code::InvalidArgument,
            s("upsert.status.allocatable[cpu]: invalid quantity \"lots\""),
        ),
        (
            "node: negative quantity",
            typed_node(|n| {
                n.allocatable.insert("memory".into(), "-1Gi".into());
            }),
            Code::InvalidArgument,
            s("upsert.status.allocatable[memory]: must be non-negative"),
        ),
        (
            "node: exponent beyond int64",
            typed_node(|n| {
                n.allocatable
                    .insert("example.com/gpu".into(), "1e99999999999999999999".into());
            }),
            Code::InvalidArgument,
            s("upsert.status.allocatable[example.com/gpu]: invalid quantity"),
        ),
        (
            "node: unknown taint effect",
            typed_node(|n| {
                n.taints.push(pb::Taint {
                    key: s("k"),
                    value: s("v"),
                    effect: s("Sometimes"),
                })
            }),
            Code::InvalidArgument,
            s("upsert.spec.taints[0].effect: unsupported value \"Sometimes\""),
        ),
        (
            "node: malformed json",
            Call::Node(Some(NodeChange::UpsertJson(s("{\"kind\": \"Node\",")))),
            Code::InvalidArgument,
            s("upsert_json"),
        ),
        (
            "node: json of a pod",
            Call::Node(Some(NodeChange::UpsertJson(pod_json("{}")))),
            Code::InvalidArgument,
            s("upsert_json: kind: expected kind \"Node\""),
        ),
        (
            "node: json bad allocatable",
            Call::Node(Some(NodeChange::UpsertJson(s(
                r#"{"kind":"Node","metadata":{"name":"nj"},"status":{"allocatable":{"cpu":"x"}}}"#,
            )))),
            Code::InvalidArgument,
            s("upsert_json: status.allocatable[cpu]"),
        ),
        (
            "node: delete without name",
            Call::Node(Some(NodeChange::Delete(pb::ObjectRef::default()))),
            Code::InvalidArgument,
            s("delete.name: must not be empty"),
        ),
        (
            "node: delete unknown",
            Call::Node(Some(NodeChange::Delete(pb::ObjectRef {
                name: s("ghost"),
                ..Default::default()
            }))),
            Code::NotFound,
            s("node ghost not found"),
        ),
        (
            "node: delete with wrong uid",
            Call::Node(Some(NodeChange::Delete(pb::ObjectRef {
                name: s("n1"),
                uid: Some(s("other")),
                ..Default::default()
            }))),
            Code::NotFound,
            s("node n1 with uid other not found"),
        ),
        (
            "pod: missing oneof",
            Call::Pod(None),
            Code::InvalidArgument,
            s("change: one of upsert"),
        ),
        (
            "pod: empty name",
            typed_pod(|p| p.name.clear()),
            Code::InvalidArgument,
            s("upsert.metadata.name: must not be empty"),
        ),
        (
            "pod: bad request quantity",
            typed_pod(|p| {
                p.containers[0]
                    .requests
                    .insert("cpu".into(), "2 cores".into());
            }),
            Code::InvalidArgument,
            s("upsert.spec.containers[0].resources.requests[cpu]: invalid quantity \"2 cores\""),
        ),
        (
            "pod: bad limit quantity",
            typed_pod(|p| {
                p.containers[0].limits.insert("memory".into(), "1Gb".into());
            }),
            Code::InvalidArgument,
            s("upsert.spec.containers[0].resources.limits[memory]: invalid quantity"),
        ),
        (
            "pod: bad init container overhead",
            typed_pod(|p| {
                p.overhead.insert("cpu".into(), "-5m".into());
            }),
            Code::InvalidArgument,
            s("upsert.spec.overhead[cpu]: must be non-negative"),
        ),
        (
            "pod: unknown preemption policy",
            typed_pod(|p| p.preemption_policy = s("Sometimes")),
            Code::InvalidArgument,
            s("upsert.spec.preemptionPolicy: unsupported value \"Sometimes\""),
        ),
        (
            "pod: unknown toleration operator",
            typed_pod(|p| {
                p.tolerations.push(pb::Toleration {
                    operator: s("Maybe"),
                    ..Default::default()
                })
            }),
            Code::InvalidArgument,
            s("upsert.spec.tolerations[0].operator: unsupported value \"Maybe\""),
        ),
        (
            "pod: unknown protocol",
            typed_pod(|p| {
                p.containers[0].ports.push(pb::ContainerPort {
                    host_port: 80,
                    protocol: s("ICMP"),
                    ..Default::default()
                })
            }),
            Code::InvalidArgument,
            s("upsert.spec.containers[0].ports[0].protocol: unsupported value \"ICMP\""),
        ),
        (
            "pod: host port out of range",
            typed_pod(|p| {
                p.containers[0].ports.push(pb::ContainerPort {
                    host_port: 70_000,
                    ..Default::default()
                })
            }),
            Code::InvalidArgument,
            s("upsert.spec.containers[0].ports[0].hostPort: must be between 0 and 65535"),
        ),
        (
            "pod: unknown restart policy",
            typed_pod(|p| p.containers[0].restart_policy = s("Sometimes")),
            Code::InvalidArgument,
            s("upsert.spec.containers[0].restartPolicy: unsupported value"),
        ),
        (
            "pod: unknown node selector operator",
            typed_pod(|p| {
                p.affinity = Some(pb::Affinity {
                    node_affinity: Some(pb::NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(
                            pb::NodeSelector {
                                node_selector_terms: vec![pb::NodeSelectorTerm {
                                    match_expressions: vec![pb::NodeSelectorRequirement {
                                        key: s("zone"),
                                        operator: s("Near"),
                                        values: vec![],
                                    }],
                                    ..Default::default()
                                }],
                            },
                        ),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
            }),
            Code::InvalidArgument,
            s(
                "upsert.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: unsupported value \"Near\"",
            ),
        ),
        (
            "pod: anti-affinity without topology key",
            typed_pod(|p| p.affinity = anti_affinity(pb::PodAffinityTerm::default())),
            Code::InvalidArgument,
            format!("{ANTI}.topologyKey: must not be empty"),
        ),
        (
            "pod: selector In without values",
            typed_pod(|p| {
                p.affinity = anti_affinity(pb::PodAffinityTerm {
                    topology_key: s("zone"),
                    label_selector: Some(selector_in_without_values()),
                    ..Default::default()
                })
            }),
            Code::InvalidArgument,
            format!("{ANTI}.labelSelector.matchExpressions[0].values: must be specified"),
        ),
        (
            "pod: spread max skew 0",
            typed_pod(|p| {
                p.topology_spread_constraints
                    .push(pb::TopologySpreadConstraint {
                        topology_key: s("zone"),
                        when_unsatisfiable: s("DoNotSchedule"),
                        ..Default::default()
                    })
            }),
            Code::InvalidArgument,
            s("upsert.spec.topologySpreadConstraints[0].maxSkew: must be greater than zero"),
        ),
        (
            "pod: spread without when_unsatisfiable",
            typed_pod(|p| {
                p.topology_spread_constraints
                    .push(pb::TopologySpreadConstraint {
                        max_skew: 1,
                        topology_key: s("zone"),
                        ..Default::default()
                    })
            }),
            Code::InvalidArgument,
            s("upsert.spec.topologySpreadConstraints[0].whenUnsatisfiable: unsupported value \"\""),
        ),
        (
            "pod: bad start time",
            typed_pod(|p| p.start_time = s("yesterday")),
            Code::InvalidArgument,
            s("upsert.status.startTime: invalid RFC 3339 timestamp \"yesterday\""),
        ),
        (
            "pod: json bad request",
            Call::Pod(Some(PodChange::UpsertJson(pod_json(
                r#"{"containers":[{"name":"a","resources":{"requests":{"cpu":"many"}}}]}"#,
            )))),
            Code::InvalidArgument,
            s("upsert_json: spec.containers[0].resources.requests[cpu]"),
        ),
        (
            "pod: json of a node",
            Call::Pod(Some(PodChange::UpsertJson(node_json.clone()))),
            Code::InvalidArgument,
            s("upsert_json: kind: expected kind \"Pod\""),
        ),
        (
            "pod: empty json",
            Call::Pod(Some(PodChange::UpsertJson(String::new()))),
            Code::InvalidArgument,
            s("upsert_json"),
        ),
        (
            "pod: json list",
            Call::Pod(Some(PodChange::UpsertJson(s("[1, 2]")))),
            Code::InvalidArgument,
            s("upsert_json"),
        ),
        (
            "pod: delete unknown",
            Call::Pod(Some(PodChange::Delete(pb::ObjectRef {
                name: s("ghost"),
                ..Default::default()
            }))),
            Code::NotFound,
            s("pod default/ghost not found"),
        ),
        (
            "pod: delete with wrong uid",
            Call::Pod(Some(PodChange::Delete(pb::ObjectRef {
                namespace: s("default"),
                name: s("v1"),
                uid: Some(s("not-v1")),
            }))),
            Code::NotFound,
            s("pod default/v1 not found"),
        ),
        (
            "pod: name taken by another uid",
            typed_pod(|p| {
                p.name = s("v1");
                p.uid = s("someone-else");
            }),
            Code::AlreadyExists,
            s("pod default/v1 already exists with uid uid-v1"),
        ),
        (
            "pdb: missing oneof",
            Call::Pdb(None),
            Code::InvalidArgument,
            s("change: one of upsert"),
        ),
        (
            "pdb: json of a pod",
            Call::Pdb(Some(PdbChange::UpsertJson(pod_json("{}")))),
            Code::InvalidArgument,
            s("upsert_json: kind: expected kind \"PodDisruptionBudget\""),
        ),
        (
            "pdb: delete unknown",
            Call::Pdb(Some(PdbChange::Delete(pb::ObjectRef {
                name: s("ghost"),
                ..Default::default()
            }))),
            Code::NotFound,
            s("poddisruptionbudget default/ghost not found"),
        ),
        (
            "preempt: missing oneof",
            Call::Preempt(None),
            Code::InvalidArgument,
            s("preemptor: one of pod, pod_json or pod_ref is required"),
        ),
        (
            "preempt: empty name",
            Call::Preempt(Some(Preemptor::Pod(pb::Pod::default()))),
            Code::InvalidArgument,
            s("pod.metadata.name: must not be empty"),
        ),
        (
            "preempt: malformed json",
            Call::Preempt(Some(Preemptor::PodJson(s("{{{")))),
            Code::InvalidArgument,
            s("pod_json"),
        ),
        (
            "preempt: json of a node",
            Call::Preempt(Some(Preemptor::PodJson(node_json))),
            Code::InvalidArgument,
            s("pod_json: kind: expected kind \"Pod\""),
        ),
        (
            "preempt: bad quantity",
            Call::Preempt(Some(Preemptor::Pod(pod("x", 100, "1.2.3", "")))),
            Code::InvalidArgument,
            s("pod.spec.containers[0].resources.requests[cpu]: invalid quantity \"1.2.3\""),
        ),
        (
            "watch: revision ahead",
            Call::Watch(1_000_000),
            Code::OutOfRange,
            s("revision 1000000 is ahead of the nominations log"),
        ),
        (
            "oversize message",
            Call::Pod(Some(PodChange::UpsertJson(format!(
                "{{\"kind\":\"Pod\",\"pad\":\"{}\"}}",
                "x".repeat(MAX_MESSAGE_BYTES)
            )))),
            Code::OutOfRange,
            s("message length too large"),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_are_rejected_with_their_field_and_change_nothing() {
    timeout(TEST_TIMEOUT, async {
        let mut config = loopback_config();
        config.max_message_bytes = MAX_MESSAGE_BYTES;
        let (server, mut client) = start_with(config).await;
        upsert_node(&mut client, node("n1", "4")).await;
        upsert_pod(&mut client, pod("v1", 10, "2", "n1")).await;
        upsert_pod(&mut client, pod("v2", 10, "2", "n1")).await;
        let mut nominated = pod("low-nom", 50, "1", "");
        nominated.nominated_node_name = "n1".into();
        upsert_pod(&mut client, nominated).await;

        let baseline = observe(&mut client).await;
        assert_eq!(baseline.outcome, pb::Outcome::Preempt as i32);
        assert_eq!(baseline.nominations.len(), 1);

        let cases = cases();
        assert!(cases.len() >= 20);
        let mut failures = Vec::new();
        for (name, request, code, fragment) in cases {
            match call(&mut client, request).await {
                Ok(epoch) => failures.push(format!("{name}: accepted (epoch {epoch})")),
                Err(status) => {
                    let message = status.message();
                    if status.code() != code || !message.contains(&fragment) {
                        failures.push(format!(
                            "{name}: got {:?} {message:?}, want {code:?} containing {fragment:?}",
                            status.code()
                        ));
                    }
                    if code != Code::OutOfRange
                        && (message.ends_with('.')
                            || message.chars().next().is_some_and(char::is_uppercase))
                    {
                        failures.push(format!("{name}: message style {message:?}"));
                    }
                }
            }
            let now = observe(&mut client).await;
            if now != baseline {
                failures.push(format!("{name}: state changed: {now:?} != {baseline:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));

        // The server is still fine, and valid requests still work.
        let ok = upsert_pod(&mut client, pod("fine", 5, "1", "")).await;
        assert!(ok.applied);
        assert_eq!(ok.epoch, server.epoch());
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_update_pod_requests_get_the_error_prost_gives_and_change_nothing() {
    use prost::Message as _;
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        upsert_node(&mut client, node("n1", "4")).await;
        upsert_pod(&mut client, pod("v1", 10, "2", "n1")).await;
        let baseline = observe(&mut client).await;

        let mut with_port = pod("ported", 5, "1", "n1");
        with_port.containers[0].ports = vec![pb::ContainerPort {
            host_port: 8080,
            ..Default::default()
        }];
        let valid = pb::UpdatePodRequest {
            change: Some(PodChange::Upsert(with_port)),
        }
        .encode_to_vec();
        // The pod's first field (its namespace) follows the request's key and length.
        let pod_at = 2;
        assert_eq!(valid[pod_at], 0x0a, "the namespace's key");
        let name = valid
            .windows(b"ported".len())
            .position(|w| w == b"ported")
            .expect("the name");
        let mut bad_utf8_name = valid.clone();
        bad_utf8_name[name] = 0xff;
        let mut wrong_wire_type = valid.clone();
        wrong_wire_type[pod_at] = 0x08; // the namespace as a varint
        let cases = [
            ("truncated", valid[..valid.len() - 1].to_vec()),
            ("name not UTF-8", bad_utf8_name),
            ("field of the wrong wire type", wrong_wire_type),
            ("request cut in its key", vec![0x0a]),
        ];
        for (name, encoding) in cases {
            let expected = pb::UpdatePodRequest::decode(&encoding[..])
                .expect_err("undecodable")
                .to_string();
            let status = raw_update_pod(&server, encoding)
                .await
                .expect_err("rejected");
            assert_eq!(status.code(), Code::Internal, "{name}");
            assert_eq!(status.message(), expected, "{name}");
            assert_eq!(observe(&mut client).await, baseline, "{name}");
        }
        // The same bytes whole are a valid update.
        let applied = raw_update_pod(&server, valid).await.expect("valid update");
        assert!(applied.applied);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_unknown_services_and_methods_are_unimplemented_and_change_nothing() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        upsert_node(&mut client, node("n1", "4")).await;
        let baseline = observe(&mut client).await;
        let mut grpc = tonic::client::Grpc::new(channel(&server).await);
        for path in [
            "/preemptd.v1.Nope/UpdatePod",
            "/preemptd.v1.PreemptionX/UpdatePod",
            "/preemptd.v1.Preemption/Nope",
            "/grpc.health.v1.Health/Nope",
            "/nope",
        ] {
            grpc.ready().await.expect("channel ready");
            let status = grpc
                .unary::<pb::ListNominationsRequest, pb::ListNominationsResponse, _>(
                    tonic::Request::new(pb::ListNominationsRequest {}),
                    path.parse().expect("path"),
                    tonic_prost::ProstCodec::default(),
                )
                .await
                .expect_err("unimplemented");
            assert_eq!(status.code(), Code::Unimplemented, "{path}");
        }
        assert_eq!(observe(&mut client).await, baseline);
    })
    .await
    .expect("test timed out");
}

/// The status of a call of `path` whose request body is `body`, sent as it is in
/// `frames` (each an HTTP/2 DATA frame), with `headers` besides the usual ones.
async fn raw_call(
    server: &preemptd::server::RunningServer,
    path: &str,
    headers: &[(&'static str, &'static str)],
    frames: &[&[u8]],
) -> (Code, String, Option<String>) {
    let stream = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let (send, connection) = h2::client::handshake(stream).await.expect("handshake");
    tokio::spawn(connection);
    let mut send = send.ready().await.expect("ready");
    let mut request = http::Request::builder()
        .method("POST")
        .uri(format!("http://{}{path}", server.local_addr()))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let (response, mut body) = send
        .send_request(request.body(()).expect("request"), false)
        .expect("send headers");
    // The server may answer, and close the stream, before the whole body is sent (a
    // message over the limit, compressed content): what is left then has nowhere to go.
    for frame in frames {
        if body
            .send_data(bytes::Bytes::copy_from_slice(frame), false)
            .is_err()
        {
            break;
        }
    }
    let _ = body.send_data(bytes::Bytes::new(), true);
    let response = response.await.expect("response");
    let head = response.headers().clone();
    let mut body = response.into_body();
    while let Some(data) = body.data().await {
        data.expect("response data");
    }
    let trailers = body.trailers().await.expect("trailers").unwrap_or_default();
    // A trailers-only answer carries its status in the head.
    let status_in = if head.contains_key("grpc-status") {
        &head
    } else {
        &trailers
    };
    let text = |name: &str| {
        status_in
            .get(name)
            .map(|v| v.to_str().expect("ascii").to_string())
    };
    let code = Code::from_bytes(text("grpc-status").expect("grpc-status").as_bytes());
    let message = text("grpc-message").unwrap_or_default();
    (code, message, text("grpc-accept-encoding"))
}

/// `message` in gRPC framing, with `flag` as its compressed flag.
fn grpc_frame(flag: u8, message: &[u8]) -> Vec<u8> {
    let mut out = vec![flag];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// A malformed call: its name, extra headers, body frames and the code tonic answers.
type RawCase<'a> = (
    &'a str,
    &'a [(&'static str, &'static str)],
    Vec<&'a [u8]>,
    Code,
);

/// `UpdatePod` (the hot unary update) and `Sync` (whose requests the server receives as
/// its own type, which keeps a pod's encoding, as a stream its handler reads): for the
/// same malformed call they answer as `UpdateNode` does, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_pod_and_sync_fail_malformed_calls_as_every_method_does() {
    timeout(TEST_TIMEOUT, async {
        let mut config = loopback_config();
        config.max_message_bytes = MAX_MESSAGE_BYTES;
        let (server, mut client) = start_with(config).await;
        upsert_node(&mut client, node("n1", "4")).await;
        let baseline = observe(&mut client).await;

        let whole = grpc_frame(0, b"");
        let short = grpc_frame(0, b"abc");
        let oversize = grpc_frame(0, &vec![0; MAX_MESSAGE_BYTES + 1]);
        let no_headers: &[(&str, &str)] = &[];
        let gzip: &[(&str, &str)] = &[("grpc-encoding", "gzip")];
        let cases: Vec<RawCase> = vec![
            ("no message", no_headers, vec![], Code::Internal),
            (
                "truncated header",
                no_headers,
                vec![&whole[..3]],
                Code::Internal,
            ),
            (
                "truncated message",
                no_headers,
                vec![&short[..6]],
                Code::Internal,
            ),
            (
                "compressed flag",
                no_headers,
                vec![&[1, 0, 0, 0, 0]],
                Code::Internal,
            ),
            (
                "invalid flag",
                no_headers,
                vec![&[7, 0, 0, 0, 0]],
                Code::Internal,
            ),
            (
                "over the size limit",
                no_headers,
                vec![&oversize],
                Code::OutOfRange,
            ),
            (
                "compressed content",
                gzip,
                vec![&whole],
                Code::Unimplemented,
            ),
        ];
        for (name, headers, frames, code) in cases {
            let tonic_answer = raw_call(
                &server,
                "/preemptd.v1.Preemption/UpdateNode",
                headers,
                &frames,
            )
            .await;
            assert_eq!(tonic_answer.0, code, "{name}: UpdateNode {tonic_answer:?}");
            for path in [
                "/preemptd.v1.Preemption/UpdatePod",
                "/preemptd.v1.Preemption/Sync",
            ] {
                let (code, message, accept) = raw_call(&server, path, headers, &frames).await;
                // A stream of no message is a valid (empty) Sync; every other case fails.
                if name == "no message" && path.ends_with("/Sync") {
                    assert_eq!(code, Code::Ok, "{name}: {path}");
                    continue;
                }
                assert_eq!(
                    (code, message, accept),
                    tonic_answer,
                    "{name}: {path} answers unlike tonic"
                );
            }
        }
        assert_eq!(observe(&mut client).await, baseline);
    })
    .await
    .expect("test timed out");
}

/// Documents nested thousands deep, each tens to hundreds of KiB: parsed naively, YAML
/// like this costs seconds to minutes of CPU.
fn hostile_documents() -> Vec<(&'static str, String)> {
    let mut block = String::from("kind: Pod\nspec:\n");
    for depth in 1..400 {
        block.push_str(&" ".repeat(depth));
        block.push_str("a:\n");
    }
    vec![
        ("deep yaml block mapping", block),
        ("deep yaml block sequence", "- ".repeat(100_000) + "x\n"),
        (
            "deep yaml flow",
            "kind: Pod\nspec: ".to_string() + &"[".repeat(200_000),
        ),
        (
            "deep yaml flow closed",
            "kind: Pod\nspec: ".to_string() + &"{a: ".repeat(40_000) + &"}".repeat(40_000),
        ),
        ("deep json array", "[".repeat(200_000)),
        (
            "deep json object",
            "{\"a\":".repeat(40_000) + "1" + &"}".repeat(40_000),
        ),
        (
            "yaml over the size limit",
            "kind: Pod\n".to_string() + &"# padding\n".repeat(300_000),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_documents_are_refused_cheaply_and_other_clients_are_answered() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        // A pod nested moderately deep in a field preemptd ignores is still read.
        let mut nested = String::from(
            "kind: Pod\nmetadata:\n  name: nested\n  namespace: default\n  uid: u-nested\nspec:\n  containers:\n  - name: app\n  x:\n",
        );
        for depth in 2..30 {
            nested.push_str(&"  ".repeat(depth));
            nested.push_str("x:\n");
        }
        client
            .update_pod(pb::UpdatePodRequest {
                change: Some(PodChange::UpsertJson(nested)),
            })
            .await
            .expect("a moderately nested yaml pod is read");

        let mut refusals = Vec::new();
        for (name, document) in hostile_documents() {
            for copy in 0..2 {
                let mut hostile = client.clone();
                let document = document.clone();
                refusals.push(tokio::spawn(async move {
                    let result = hostile
                        .update_pod(pb::UpdatePodRequest {
                            change: Some(PodChange::UpsertJson(document)),
                        })
                        .await;
                    (name, copy, result)
                }));
            }
        }
        // Another client, on its own connection, beside them.
        let mut bystander = Client::new(channel(&server).await);
        let asked = std::time::Instant::now();
        let listed = bystander
            .list_nominations(pb::ListNominationsRequest {})
            .await
            .expect("listnominations beside the hostile documents");
        println!(
            "listnominations beside {} hostile documents answered in {:?}",
            refusals.len(),
            asked.elapsed()
        );
        assert!(listed.into_inner().nominations.is_empty());

        for refusal in refusals {
            let (name, copy, result) = refusal.await.expect("task");
            let status = result.expect_err(name);
            assert_eq!(status.code(), Code::InvalidArgument, "{name} #{copy}: {status:?}");
            let message = status.message();
            assert!(message.starts_with("upsert_json: "), "{name}: {message}");
            assert!(message.contains("limit"), "{name}: {message}");
        }
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}
