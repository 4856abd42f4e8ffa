//! `Preempt` calls refused before any decision: a preemptor that is no pending pod (bound,
//! terminating), the same pods at the extender's `/preempt` and in `simulate`, and a
//! committing call in Kubernetes mode. Each refusal changes nothing.

mod extender_support;
mod grpc_support;

use std::net::SocketAddr;
use std::path::Path;

use grpc_support::*;
use preemptd::server::pb;
use preemptd::server::pb::preempt_request::Preemptor;
use preemptd::server::{RunningServer, ServeConfig};
use preemptd::simulate::{SimulateError, SimulateOptions};
use tokio::time::timeout;
use tonic::Code;

const SHOP: &str = "shop";

fn shop_pod(name: &str, priority: i32, cpu: &str, node: &str) -> pb::Pod {
    pb::Pod {
        namespace: SHOP.into(),
        ..pod(name, priority, cpu, node)
    }
}

fn terminating(mut p: pb::Pod) -> pb::Pod {
    p.deletion_timestamp = "2026-11-28T12:00:00Z".into();
    p
}

/// `n1` (2 cpu) holds shop/web-1 (priority 100) and low (0), `n2` (2 cpu) holds
/// shop/leaving (priority 100, terminating) and fill (0): every node is full, so a
/// decision for any of the bound pods would preempt.
async fn load(client: &mut Client) {
    upsert_node(client, node("n1", "2")).await;
    upsert_node(client, node("n2", "2")).await;
    upsert_pod(client, shop_pod("web-1", 100, "1", "n1")).await;
    upsert_pod(client, pod("low", 0, "1", "n1")).await;
    upsert_pod(client, terminating(shop_pod("leaving", 100, "1", "n2"))).await;
    upsert_pod(client, pod("fill", 0, "1", "n2")).await;
}

/// Everything a client can observe of the cache: the nominations and their revision, the
/// cache revision, and a dry run that would notice a victim marked terminating.
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
    let answer = preempt(client, pod("probe", 50, "1", ""), true).await;
    Observed {
        list_revision: listed.revision,
        nominations: listed
            .nominations
            .iter()
            .map(|n| {
                let pod = n.pod.as_ref().map(|r| r.name.clone()).unwrap_or_default();
                (pod, n.node.clone())
            })
            .collect(),
        cache_revision: answer.revision,
        outcome: answer.outcome,
        node: answer.nominated_node_name,
        victims: names(&answer.victims),
    }
}

fn request(preemptor: Preemptor, dry_run: bool) -> pb::PreemptRequest {
    pb::PreemptRequest {
        preemptor: Some(preemptor),
        dry_run,
        explain: false,
        pdb_mode: pb::PdbMode::Unspecified.into(),
    }
}

fn by_ref(namespace: &str, name: &str) -> Preemptor {
    Preemptor::PodRef(pb::PodRef {
        namespace: namespace.into(),
        name: name.into(),
        uid: String::new(),
    })
}

/// A pod manifest bound to `node`, as `pod_json`.
fn manifest_on(name: &str, node: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": SHOP, "uid": format!("uid-{name}")},
        "spec": {
            "nodeName": node,
            "priority": 100,
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]
        },
        "status": {"phase": "Running"}
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempt_refuses_preemptors_that_are_not_pending_and_changes_nothing() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        load(&mut client).await;
        let before = observe(&mut client).await;
        assert_eq!(
            pb::Outcome::try_from(before.outcome),
            Ok(pb::Outcome::Preempt),
            "{before:?}"
        );

        let cases = [
            (
                "pod_ref of a bound pod",
                by_ref(SHOP, "web-1"),
                "pod shop/web-1 is bound to node n1: preemption is only for pending pods",
            ),
            (
                "pod_ref of a terminating pod",
                by_ref(SHOP, "leaving"),
                "pod shop/leaving is terminating on node n2: preemption is only for pending pods",
            ),
            (
                "inline pod with node_name",
                Preemptor::Pod(shop_pod("inline", 100, "1", "n2")),
                "pod shop/inline is bound to node n2: preemption is only for pending pods",
            ),
            (
                "pod_json with spec.nodeName",
                Preemptor::PodJson(manifest_on("manifest", "n1")),
                "pod shop/manifest is bound to node n1: preemption is only for pending pods",
            ),
        ];
        for (case, preemptor, message) in cases {
            for dry_run in [false, true] {
                let refused = client
                    .preempt(request(preemptor.clone(), dry_run))
                    .await
                    .expect_err(case);
                assert_eq!(
                    refused.code(),
                    Code::FailedPrecondition,
                    "{case} (dry_run {dry_run}): {refused:?}"
                );
                assert_eq!(refused.message(), message, "{case} (dry_run {dry_run})");
                assert_eq!(
                    observe(&mut client).await,
                    before,
                    "{case} (dry_run {dry_run}) changed the cache"
                );
            }
        }

        // A pending pod of the same shape is still decided and committed.
        let committed = preempt(&mut client, shop_pod("pending", 100, "1", ""), false).await;
        assert_eq!(outcome(&committed), pb::Outcome::Preempt, "{committed:?}");
        assert_ne!(observe(&mut client).await, before);
    })
    .await
    .expect("test timed out");
}

fn extender_config() -> ServeConfig {
    ServeConfig {
        extender_listen: Some("127.0.0.1:0".parse().expect("address")),
        ..loopback_config()
    }
}

fn extender(server: &RunningServer) -> SocketAddr {
    server.extender_addr().expect("extender address")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extender_refuses_a_bound_preemptor_as_grpc_does() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_with(extender_config()).await;
        load(&mut client).await;
        let before = observe(&mut client).await;
        let bound = extender_support::bound_pod_json("bound", 100, "1", "n1");
        let body = extender_support::preemption_args_meta(&bound, &[("n2", &["uid-fill"], 0)]);
        let reply = extender_support::post(extender(&server), "/preempt", &body).await;
        assert_eq!(reply.status, 412, "{}", reply.body);
        assert_eq!(
            reply.json()["error"],
            "pod default/bound is bound to node n1: preemption is only for pending pods"
        );
        assert_eq!(observe(&mut client).await, before);

        // The pending pod is answered.
        let pending = extender_support::pod_json("pending", 100, "1", "{}");
        let body = extender_support::preemption_args_meta(&pending, &[("n2", &["uid-fill"], 0)]);
        let reply = extender_support::post(extender(&server), "/preempt", &body).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
    })
    .await
    .expect("test timed out");
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path
}

#[test]
fn simulate_refuses_a_bound_preemptor_naming_the_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cluster.json");
    let pod = write(dir.path(), "pod.json", &manifest_on("web-9", "node-a"));
    let refused = preemptd::simulate::simulate(&cluster, &pod, SimulateOptions::default())
        .expect_err("a bound preemptor");
    assert!(
        matches!(refused, SimulateError::Invalid { .. }),
        "{refused:?}"
    );
    assert_eq!(refused.exit_code(), 65);
    assert_eq!(
        refused.to_string(),
        format!(
            "{}: spec.nodeName: pod shop/web-9 is bound to node node-a: preemption is only for pending pods",
            pod.display()
        )
    );

    // Pending, the same pod is decided.
    let mut pending: serde_json::Value =
        serde_json::from_str(&manifest_on("web-9", "node-a")).expect("manifest");
    pending["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("nodeName");
    pending["status"]["phase"] = "Pending".into();
    let pod = write(dir.path(), "pending.json", &pending.to_string());
    preemptd::simulate::simulate(&cluster, &pod, SimulateOptions::default())
        .expect("a pending preemptor is decided");
}

/// A kubeconfig naming an API server that never answers: a port bound but never
/// accepted on, held by the returned listener.
fn unanswered_kubeconfig(dir: &Path) -> (std::path::PathBuf, std::net::TcpListener) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: silent
  cluster:
    server: http://{addr}
contexts:
- name: silent
  context:
    cluster: silent
    user: nobody
current-context: silent
users:
- name: nobody
  user:
    token: none
"
    );
    (write(dir, "kubeconfig", &text), listener)
}

/// In Kubernetes mode the watches are the one writer: a committing `Preempt` is refused
/// at once, before the cluster is even listed (a dry run waits for the listing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_mode_refuses_a_committing_preempt_before_deciding() {
    timeout(TEST_TIMEOUT, async {
        let dir = tempfile::tempdir().expect("temp dir");
        let (kubeconfig, _silent) = unanswered_kubeconfig(dir.path());
        let config = ServeConfig {
            cluster: Some(preemptd::kubernetes::Source::Kubeconfig(Some(kubeconfig))),
            ..loopback_config()
        };
        let (server, mut client) = start_with(config).await;
        for preemptor in [
            by_ref(SHOP, "web-1"),
            Preemptor::Pod(shop_pod("pending", 100, "1", "")),
        ] {
            let refused = client
                .preempt(request(preemptor.clone(), false))
                .await
                .expect_err("a committing preempt");
            assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
            assert_eq!(
                refused.message(),
                "kubernetes mode: preempt with dry_run: the cluster's watches are the one writer; evict the victims and set the nomination through the API server"
            );
            let waiting = client
                .preempt(request(preemptor, true))
                .await
                .expect_err("nothing listed yet");
            assert_eq!(waiting.code(), Code::Unavailable, "{waiting:?}");
        }
        let listed = list(&mut client).await;
        assert!(listed.nominations.is_empty(), "{listed:?}");
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}
