//! The kube-scheduler extender end to end: a real server with `extender_listen` on
//! 127.0.0.1:0, state pushed over gRPC, and HTTP requests in the exact JSON kube-scheduler
//! sends (nodeCacheCapable and full-node), over plaintext and TLS.

mod extender_support;
mod grpc_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use extender_support::*;
use grpc_support::*;
use preemptd::engine::Policy;
use preemptd::server::authz::AuthzPolicy;
use preemptd::server::pb;
use preemptd::server::pb::update_pod_disruption_budget_request::Change as PdbChange;
use preemptd::server::{RunningServer, ServeConfig};
use serde_json::{Value, json};
use tokio::time::timeout;

const POLICY: &str = "
criticalPods:
  priorityAtLeast: 1000
";
const NOTICE: &str =
    "node(s) were spot capacity with a termination notice (taint karpenter.sh/disrupted)";
const CRITICAL_OFF_SPOT: &str = "node(s) were spot capacity, which critical pods avoid";

fn config(policy: Option<&str>) -> ServeConfig {
    ServeConfig {
        extender_listen: Some("127.0.0.1:0".parse().expect("address")),
        policy: policy.map(|text| Arc::new(Policy::from_yaml(text).expect("policy"))),
        ..loopback_config()
    }
}

fn extender(server: &RunningServer) -> SocketAddr {
    server.extender_addr().expect("extender address")
}

fn labelled_node(name: &str, cpu: &str, labels: &[(&str, &str)]) -> pb::Node {
    let mut n = node(name, cpu);
    n.labels.extend(map(labels));
    n
}

/// `spot-a` (spot), `spot-noticed` (spot with Karpenter's disruption taint), `od-b`
/// (on-demand).
async fn load_capacity(client: &mut Client) {
    upsert_node(
        client,
        labelled_node("spot-a", "2", &[("karpenter.sh/capacity-type", "spot")]),
    )
    .await;
    let mut noticed = labelled_node(
        "spot-noticed",
        "2",
        &[("karpenter.sh/capacity-type", "spot")],
    );
    noticed.taints.push(pb::Taint {
        key: "karpenter.sh/disrupted".into(),
        value: String::new(),
        effect: "NoSchedule".into(),
    });
    upsert_node(client, noticed).await;
    upsert_node(
        client,
        labelled_node("od-b", "2", &[("karpenter.sh/capacity-type", "on-demand")]),
    )
    .await;
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect()
}

fn reasons(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("reason").to_string()))
        .collect()
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const ALL: [&str; 4] = ["spot-a", "spot-noticed", "od-b", "ghost"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filter_applies_the_policy_to_cached_nodes() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(config(Some(POLICY))).await;
        load_capacity(&mut client).await;
        let addr = extender(&server);

        let batch = pod_json("batch", 10, "500m", "{}");
        let reply = post(addr, "/filter", &args_with_names(&batch, &ALL)).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.content_type, "application/json");
        let result = reply.json();
        assert_eq!(strings(&result["NodeNames"]), ["spot-a", "od-b"]);
        assert_eq!(result["Nodes"], Value::Null);
        assert_eq!(
            reasons(&result["FailedNodes"]),
            expected(&[
                ("spot-noticed", NOTICE),
                ("ghost", "node is not in preemptd's cache")
            ])
        );
        assert_eq!(result["FailedAndUnresolvableNodes"], json!({}));
        assert_eq!(result["Error"], "");

        // A critical pod: spot is unresolvable (preemption there cannot help).
        let critical = pod_json("critical", 1000, "500m", "{}");
        let result = post(addr, "/filter", &args_with_names(&critical, &ALL))
            .await
            .json();
        assert_eq!(strings(&result["NodeNames"]), ["od-b"]);
        assert_eq!(
            reasons(&result["FailedAndUnresolvableNodes"]),
            expected(&[("spot-a", CRITICAL_OFF_SPOT)])
        );
        assert_eq!(
            reasons(&result["FailedNodes"]),
            expected(&[
                ("spot-noticed", NOTICE),
                ("ghost", "node is not in preemptd's cache")
            ])
        );

        // Older extenders' lower-case keys.
        let lower = format!(r#"{{"pod":{critical},"nodenames":["spot-a","od-b"]}}"#);
        let result = post(addr, "/filter", &lower).await.json();
        assert_eq!(strings(&result["NodeNames"]), ["od-b"]);
    })
    .await
    .expect("test timed out");
}

/// Lists as long as kube-scheduler sends (judged on the rayon pool in parts) answer as
/// short ones do, in the request's order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_name_lists_are_answered_in_the_request_order() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(config(Some(POLICY))).await;
        load_capacity(&mut client).await;
        let addr = extender(&server);
        let ghosts: Vec<String> = (0..1500).map(|i| format!("ghost-{i}")).collect();
        let mut names = Vec::new();
        for (i, ghost) in ghosts.iter().enumerate() {
            names.push(ghost.as_str());
            names.push(["spot-a", "spot-noticed", "od-b"][i % 3]);
        }
        let batch = pod_json("batch", 10, "500m", "{}");
        let body = args_with_names(&batch, &names);

        let result = post(addr, "/filter", &body).await.json();
        let passed: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| ["spot-a", "od-b"].contains(n))
            .collect();
        assert_eq!(strings(&result["NodeNames"]), passed);
        let mut failed = reasons(&result["FailedNodes"]);
        assert_eq!(failed.remove("spot-noticed").as_deref(), Some(NOTICE));
        let not_cached: Vec<&String> = failed
            .iter()
            .filter(|(_, why)| *why == "node is not in preemptd's cache")
            .map(|(name, _)| name)
            .collect();
        assert_eq!(not_cached.len(), ghosts.len(), "{failed:?}");

        let reply = post(addr, "/prioritize", &body).await.json();
        let scored: Vec<(String, i64)> = reply
            .as_array()
            .expect("a list")
            .iter()
            .map(|p| {
                let host = p["Host"].as_str().expect("host").to_string();
                (host, p["Score"].as_i64().expect("score"))
            })
            .collect();
        let expected: Vec<(String, i64)> = names
            .iter()
            .map(|n| (n.to_string(), if *n == "spot-a" { 10 } else { 0 }))
            .collect();
        assert_eq!(scored, expected);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filter_of_full_nodes_answers_from_the_given_nodes() {
    timeout(TEST_TIMEOUT, async {
        // Nothing pushed: the request's nodes are all there is.
        let (server, _client) = start_with(config(Some(POLICY))).await;
        let nodes = vec![
            node_json("x-spot", r#"{"karpenter.sh/capacity-type":"spot"}"#, "null"),
            node_json(
                "x-noticed",
                r#"{"karpenter.sh/capacity-type":"spot"}"#,
                r#"[{"key":"karpenter.sh/disrupted","effect":"NoSchedule"}]"#,
            ),
            node_json(
                "x-od",
                r#"{"karpenter.sh/capacity-type":"on-demand"}"#,
                "[]",
            ),
        ];
        let batch = pod_json("batch", 10, "500m", "{}");
        let reply = post(
            extender(&server),
            "/filter",
            &args_with_nodes(&batch, &nodes),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let result = reply.json();
        assert_eq!(result["NodeNames"], Value::Null);
        let items = result["Nodes"]["items"].as_array().expect("items");
        let names: Vec<&str> = items
            .iter()
            .map(|n| n["metadata"]["name"].as_str().expect("name"))
            .collect();
        assert_eq!(names, ["x-spot", "x-od"]);
        // The nodes come back as sent.
        let sent: Value = serde_json::from_str(&nodes[0]).expect("json");
        assert_eq!(items[0], sent);
        assert_eq!(
            reasons(&result["FailedNodes"]),
            expected(&[("x-noticed", NOTICE)])
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_policy_every_cached_node_passes_and_scores_zero() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(config(None)).await;
        load_capacity(&mut client).await;
        let addr = extender(&server);
        let critical = pod_json("critical", 1000, "500m", "{}");
        let result = post(addr, "/filter", &args_with_names(&critical, &ALL))
            .await
            .json();
        assert_eq!(
            strings(&result["NodeNames"]),
            ["spot-a", "spot-noticed", "od-b"]
        );
        assert_eq!(
            reasons(&result["FailedNodes"]),
            expected(&[("ghost", "node is not in preemptd's cache")])
        );
        let scores = post(addr, "/prioritize", &args_with_names(&critical, &ALL))
            .await
            .json();
        assert_eq!(
            scores,
            json!([
                {"Host": "spot-a", "Score": 0},
                {"Host": "spot-noticed", "Score": 0},
                {"Host": "od-b", "Score": 0},
                {"Host": "ghost", "Score": 0},
            ])
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prioritize_scores_by_the_policy() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(config(Some(POLICY))).await;
        load_capacity(&mut client).await;
        let addr = extender(&server);
        let batch = pod_json("batch", 10, "500m", "{}");
        let reply = post(addr, "/prioritize", &args_with_names(&batch, &ALL)).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(
            reply.json(),
            json!([
                {"Host": "spot-a", "Score": 10},
                {"Host": "spot-noticed", "Score": 0},
                {"Host": "od-b", "Score": 0},
                {"Host": "ghost", "Score": 0},
            ])
        );
        let critical = pod_json("critical", 1000, "500m", "{}");
        let nodes = vec![
            node_json("x-spot", r#"{"karpenter.sh/capacity-type":"spot"}"#, "null"),
            node_json(
                "x-od",
                r#"{"karpenter.sh/capacity-type":"on-demand"}"#,
                "[]",
            ),
        ];
        let reply = post(addr, "/prioritize", &args_with_nodes(&critical, &nodes)).await;
        assert_eq!(
            reply.json(),
            json!([{"Host": "x-spot", "Score": 0}, {"Host": "x-od", "Score": 10}])
        );
    })
    .await
    .expect("test timed out");
}

/// Three full nodes: `n1` holds a1 (priority 1) and a2 (2), `n2` b1 (3) and b2 (200),
/// `n3` the budget-guarded c1 (1, a PDB allowing no disruption); `spot-n4` (spot) d1 (1).
/// Each pod takes 1 cpu (c1 and d1: 2) of the nodes' 2.
async fn load_preemption(client: &mut Client) {
    for name in ["n1", "n2", "n3"] {
        upsert_node(client, node(name, "2")).await;
    }
    upsert_node(
        client,
        labelled_node("spot-n4", "2", &[("karpenter.sh/capacity-type", "spot")]),
    )
    .await;
    for (name, priority, cpu, node) in [
        ("a1", 1, "1", "n1"),
        ("a2", 2, "1", "n1"),
        ("b1", 3, "1", "n2"),
        ("b2", 200, "1", "n2"),
        ("d1", 1, "2", "spot-n4"),
    ] {
        upsert_pod(client, pod(name, priority, cpu, node)).await;
    }
    let mut guarded = pod("c1", 1, "2", "n3");
    guarded.labels = map(&[("app", "db")]);
    upsert_pod(client, guarded).await;
    client
        .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest {
            change: Some(PdbChange::Upsert(pb::PodDisruptionBudget {
                namespace: "default".into(),
                name: "db".into(),
                selector: Some(pb::LabelSelector {
                    match_labels: map(&[("app", "db")]),
                    ..Default::default()
                }),
                disruptions_allowed: 0,
                ..Default::default()
            })),
        })
        .await
        .expect("pdb");
}

/// The scheduler's candidates: every pod on each node listed as its victim.
const EVERY_POD: &[(&str, &[&str], i64)] = &[
    ("n1", &["uid-a1", "uid-a2"], 0),
    ("n2", &["uid-b1"], 0),
    ("n3", &["uid-c1"], 1),
    ("spot-n4", &["uid-d1"], 0),
];

/// The result's victims by node: (UIDs, PDB violations).
fn victims(result: &Value) -> BTreeMap<String, (Vec<String>, i64)> {
    let map = result["NodeNameToMetaVictims"]
        .as_object()
        .unwrap_or_else(|| panic!("no NodeNameToMetaVictims: {result}"));
    map.iter()
        .map(|(node, v)| {
            let uids = v["Pods"]
                .as_array()
                .expect("Pods")
                .iter()
                .map(|p| p["UID"].as_str().expect("UID").to_string())
                .collect();
            (
                node.clone(),
                (uids, v["NumPDBViolations"].as_i64().expect("count")),
            )
        })
        .collect()
}

fn victims_of(pairs: &[(&str, &[&str], i64)]) -> BTreeMap<String, (Vec<String>, i64)> {
    pairs
        .iter()
        .map(|(node, uids, n)| {
            (
                node.to_string(),
                (uids.iter().map(|u| u.to_string()).collect(), *n),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempt_returns_the_victims_grpc_preempt_chooses_on_each_node() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(config(None)).await;
        load_preemption(&mut client).await;
        let preemptor = pod("urgent", 100, "1", "");

        // gRPC Preempt's per-node choices (explain lists every candidate's victims).
        let decided = client
            .preempt(pb::PreemptRequest {
                preemptor: Some(pb::preempt_request::Preemptor::Pod(preemptor)),
                dry_run: true,
                explain: true,
                pdb_mode: pb::PdbMode::Unspecified.into(),
            })
            .await
            .expect("preempt")
            .into_inner();
        let from_grpc: BTreeMap<String, (Vec<String>, i64)> = decided
            .diagnostics
            .iter()
            .filter(|d| d.candidate)
            .map(|d| {
                let uids = d.victims.iter().map(|v| v.uid.clone()).collect();
                (d.node.clone(), (uids, i64::from(d.pdb_violations)))
            })
            .collect();
        assert_eq!(from_grpc.len(), 4, "{:?}", decided.diagnostics);

        let body = preemption_args_meta(&pod_json("urgent", 100, "1", "{}"), EVERY_POD);
        let reply = post(extender(&server), "/preempt", &body).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let result = reply.json();
        assert_eq!(victims(&result), from_grpc);
        assert_eq!(
            victims(&result),
            victims_of(&[
                ("n1", &["uid-a1"], 0),
                ("n2", &["uid-b1"], 0),
                ("n3", &["uid-c1"], 1),
                ("spot-n4", &["uid-d1"], 0),
            ])
        );

        // The same candidates with full pods (nodeCacheCapable: false).
        let full = |node: &str, pods: &[(&str, i32, &str)]| {
            let pods: Vec<String> = pods
                .iter()
                .map(|(name, priority, cpu)| bound_pod_json(name, *priority, cpu, node))
                .collect();
            (node.to_string(), pods)
        };
        let candidates = [
            full("n1", &[("a1", 1, "1"), ("a2", 2, "1")]),
            full("n2", &[("b1", 3, "1")]),
        ];
        let candidates: Vec<(&str, Vec<String>, i64)> = candidates
            .iter()
            .map(|(node, pods)| (node.as_str(), pods.clone(), 0))
            .collect();
        let body = preemption_args_full(&pod_json("urgent", 100, "1", "{}"), &candidates);
        let result = post(extender(&server), "/preempt", &body).await.json();
        assert_eq!(
            victims(&result),
            victims_of(&[("n1", &["uid-a1"], 0), ("n2", &["uid-b1"], 0)])
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempt_sheds_load_with_grpc_preempt_beyond_the_decision_slots() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(ServeConfig {
            max_concurrent_preempts: 1,
            ..config(None)
        })
        .await;
        // Enough candidates that one request holds the one slot for a while.
        let names: Vec<String> = (0..300).map(|n| format!("n{n}")).collect();
        let mut candidates: Vec<(&str, Vec<String>)> = Vec::new();
        for name in &names {
            upsert_node(&mut client, node(name, "4")).await;
            let mut uids = Vec::new();
            for p in 0..8 {
                let pod_name = format!("{name}-p{p}");
                upsert_pod(&mut client, pod(&pod_name, p % 3, "500m", name)).await;
                uids.push(format!("uid-{pod_name}"));
            }
            candidates.push((name, uids));
        }
        let uids: Vec<Vec<&str>> = candidates
            .iter()
            .map(|(_, uids)| uids.iter().map(String::as_str).collect())
            .collect();
        let meta: Vec<(&str, &[&str], i64)> = candidates
            .iter()
            .zip(&uids)
            .map(|((name, _), uids)| (*name, &uids[..], 0))
            .collect();
        let body = Arc::new(preemption_args_meta(
            &pod_json("urgent", 100, "2", "{}"),
            &meta,
        ));
        let addr = extender(&server);
        // Rounds repeat in the unlikely case no two requests overlapped.
        let mut shed = None;
        for _round in 0..20 {
            let calls: Vec<_> = (0..6)
                .map(|_| {
                    let body = body.clone();
                    tokio::spawn(async move { post(addr, "/preempt", &body).await })
                })
                .collect();
            let mut served = 0;
            for call in calls {
                let reply = call.await.expect("join");
                match reply.status {
                    200 => {
                        assert_eq!(victims(&reply.json()).len(), 300);
                        served += 1;
                    }
                    429 => shed = Some(reply),
                    status => panic!("unexpected {status}: {}", reply.body),
                }
            }
            assert!(served >= 1, "at least the first request is served");
            if shed.is_some() {
                break;
            }
        }
        let shed = shed.expect("no request was shed");
        assert_eq!(
            shed.json()["error"],
            "too many concurrent preempt calls (limit 1); retry with backoff"
        );
        // The slot is free again once the requests are done.
        let reply = post(addr, "/preempt", &body).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempt_drops_divergent_empty_and_unknown_candidates() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(config(None)).await;
        load_preemption(&mut client).await;
        let preemptor = pod_json("urgent", 100, "1", "{}");
        let body = preemption_args_meta(
            &preemptor,
            &[
                // preemptd evicts a1, which the scheduler does not list: views diverged.
                ("n1", &["uid-a2"], 0),
                // Newer schedulers may send candidates without victims.
                ("n2", &[], 0),
                ("n3", &["uid-c1"], 1),
                ("ghost", &["uid-x"], 0),
            ],
        );
        let reply = post(extender(&server), "/preempt", &body).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(
            victims(&reply.json()),
            victims_of(&[("n3", &["uid-c1"], 1)])
        );
        // No candidates at all.
        let reply = post(
            extender(&server),
            "/preempt",
            &format!(
                r#"{{"Pod":{preemptor},"NodeNameToVictims":null,"NodeNameToMetaVictims":{{}}}}"#
            ),
        )
        .await;
        assert_eq!(reply.json(), json!({"NodeNameToMetaVictims": {}}));
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_drops_budget_violators_in_strict_mode_and_spot_for_critical_pods() {
    timeout(TEST_TIMEOUT, async {
        let policy = "criticalPods:\n  priorityAtLeast: 1000\npdbMode: strict\n";
        let (server, mut client) = start_with(config(Some(policy))).await;
        load_preemption(&mut client).await;
        let body = preemption_args_meta(&pod_json("urgent", 100, "1", "{}"), EVERY_POD);
        let result = post(extender(&server), "/preempt", &body).await.json();
        assert_eq!(
            victims(&result),
            victims_of(&[
                ("n1", &["uid-a1"], 0),
                ("n2", &["uid-b1"], 0),
                ("spot-n4", &["uid-d1"], 0),
            ])
        );
        // A critical preemptor: spot-n4 goes too (b2, priority 200, is now a victim).
        let every_pod_n2: &[(&str, &[&str], i64)] = &[
            ("n1", &["uid-a1", "uid-a2"], 0),
            ("n2", &["uid-b1", "uid-b2"], 0),
            ("spot-n4", &["uid-d1"], 0),
        ];
        let body = preemption_args_meta(&pod_json("vip", 1000, "2", "{}"), every_pod_n2);
        let result = post(extender(&server), "/preempt", &body).await.json();
        assert_eq!(
            victims(&result),
            victims_of(&[
                ("n1", &["uid-a2", "uid-a1"], 0),
                ("n2", &["uid-b2", "uid-b1"], 0),
            ])
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_are_400_and_bad_pods_are_reported() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(config(Some(POLICY))).await;
        load_capacity(&mut client).await;
        let addr = extender(&server);
        for path in ["/filter", "/prioritize", "/preempt"] {
            let reply = post(addr, path, r#"{"Pod": {"metadata": "#).await;
            assert_eq!(reply.status, 400, "{path}: {}", reply.body);
            let message = reply.json()["error"].as_str().expect("error").to_string();
            assert!(message.starts_with("body: invalid JSON"), "{message}");
        }
        // The builder refuses the pod: /filter reports it in Error, as kube-scheduler
        // expects; the others have no such field and answer 400.
        let bad = pod_json("bad", 10, "lots", "{}");
        let reply = post(addr, "/filter", &args_with_names(&bad, &["od-b"])).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let result = reply.json();
        let error = result["Error"].as_str().expect("Error");
        assert!(
            error.starts_with("Pod: spec.containers[0].resources.requests[cpu]"),
            "{error}"
        );
        assert_eq!(result["NodeNames"], Value::Null);
        let reply = post(addr, "/prioritize", &args_with_names(&bad, &["od-b"])).await;
        assert_eq!(reply.status, 400, "{}", reply.body);
        let reply = post(
            addr,
            "/preempt",
            &preemption_args_meta(&bad, &[("od-b", &["uid-x"], 0)]),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.body);
        // A body over the message limit.
        let (small, _client) = start_with(ServeConfig {
            max_message_bytes: 64,
            ..config(None)
        })
        .await;
        let big = args_with_names(&pod_json("p", 1, "1", "{}"), &["od-b"]);
        let reply = post(extender(&small), "/filter", &big).await;
        assert_eq!(reply.status, 413, "{}", reply.body);
        // Wrong method, unknown path.
        let reply = post(addr, "/bind", "{}").await;
        assert_eq!(reply.status, 404);
    })
    .await
    .expect("test timed out");
}

mod tls {
    //! TLS on the extender port, and `--authz` roles.

    use super::*;
    use preemptd::server::tls::TlsSettings;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
    use rustls_pki_types::pem::PemObject as _;

    struct Pki {
        ca_pem: String,
        dir: tempfile::TempDir,
    }

    /// A CA and a server certificate for localhost in a temporary directory.
    fn pki() -> Pki {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "test ca");
        let ca_key = KeyPair::generate().expect("ca key");
        let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.subject_alt_names = vec![SanType::DnsName("localhost".try_into().expect("dns"))];
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &issuer).expect("sign");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("tls.crt"), cert.pem()).expect("cert");
        std::fs::write(dir.path().join("tls.key"), key.serialize_pem()).expect("key");
        Pki {
            ca_pem: ca_cert.pem(),
            dir,
        }
    }

    async fn post_tls(
        addr: SocketAddr,
        ca_pem: &str,
        path: &str,
        body: &str,
        headers: &[&str],
    ) -> Reply {
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(
            rustls_pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()).flatten(),
        );
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .expect("handshake");
        post_on(tls, path, body, headers).await
    }

    fn authz(dir: &Path) -> Arc<AuthzPolicy> {
        std::fs::write(dir.join("reader-token"), "reader-secret\n").expect("token");
        let yaml =
            "clients:\n  - name: scheduler\n    token_file: reader-token\n    role: reader\n";
        Arc::new(AuthzPolicy::from_yaml(yaml, dir).expect("authz"))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tls_serves_the_extender_and_authz_refuses_unknown_callers() {
        timeout(TEST_TIMEOUT, async {
            let pki = pki();
            let dir = pki.dir.path();
            let server = preemptd::server::start(ServeConfig {
                tls: Some(TlsSettings::new(dir.join("tls.crt"), dir.join("tls.key"))),
                authz: Some(authz(dir)),
                ..config(None)
            })
            .await
            .expect("start");
            let addr = extender(&server);
            let nodes = vec![node_json("x", "{}", "null")];
            let body = args_with_nodes(&pod_json("p", 1, "100m", "{}"), &nodes);

            // No credential, or an unknown token: 401 (who are you?), not 403.
            let reply = post_tls(addr, &pki.ca_pem, "/filter", &body, &[]).await;
            assert_eq!(reply.status, 401, "{}", reply.body);
            assert_eq!(
                reply.json(),
                json!({"error": "extender/filter needs role reader; the caller presented no known credential (a client certificate or a bearer token)"})
            );
            let wrong = ["Authorization: Bearer guess"];
            let reply = post_tls(addr, &pki.ca_pem, "/preempt", &body, &wrong).await;
            assert_eq!(reply.status, 401, "{}", reply.body);

            let token = ["Authorization: Bearer reader-secret"];
            let reply = post_tls(addr, &pki.ca_pem, "/filter", &body, &token).await;
            assert_eq!(reply.status, 200, "{}", reply.body);
            let result = reply.json();
            assert_eq!(result["Nodes"]["items"][0]["metadata"]["name"], "x");
            server.shutdown().await.expect("shutdown");
        })
        .await
        .expect("test timed out");
    }
}
