//! Gang preemption end to end: the stock kube-scheduler v1.37.2 with GenericWorkload on
//! preempts for a pending PodGroup, and preemptd in Kubernetes mode, watching the same API
//! server, named the same victims and the same node per member in its `PreemptGroup` dry
//! run beforehand. Nodes have no kubelet: everything is read back from the API objects
//! (the victims' deletion timestamp and DisruptionTarget condition, the members'
//! status.nominatedNodeName, then spec.nodeName).
//!
//! The members are created with a scheduling gate, one after the other, while kube-scheduler
//! runs: its queue orders a gang's members by priority, attempts, the time it received each,
//! then name, and preemptd by priority and name, so both place them in the same order. Its
//! queue takes the gang only when no member is gated. The scenario is tie-free: the nodes
//! differ in size, and the test checks that preemptd's `explain` lists no score tie.
//!
//! Needs the v1beta1 scheduling API, so it runs only on 1.37:
//!
//! ```sh
//! KUBE_APISERVER_EXTRA_ARGS="--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true" \
//!   ./upstream/with-kube-apiserver --kubernetes-version 1.37 \
//!   cargo test -p preemptd-cli --features kube-e2e --test scheduler_gang
//! ```

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use preemptd::server::pb;
use serde_json::{Value, json};
use support::Process;

/// How long a change may take to reach the scheduler, preemptd and back to the API.
const SETTLE: Duration = Duration::from_secs(60);

/// Node sizes (CPUs): distinct, so least-allocated scoring never ties.
const NODES: [(&str, &str); 4] = [("n1", "4"), ("n2", "5"), ("n3", "6"), ("n4", "8")];

/// The running pods: (name, node, priority class, cpu, PodGroup). `infer` is a gang in
/// disruption mode `all` spread over n1 and n4; the batch pods are plain pods.
const RUNNING: [(&str, &str, &str, &str, Option<&str>); 4] = [
    ("infer-0", "n1", "low", "3", Some("infer")),
    ("infer-1", "n4", "low", "5", Some("infer")),
    ("batch-a", "n2", "batch", "4", None),
    ("batch-b", "n3", "batch", "5", None),
];

/// The pending gang: two members of 4 CPUs, both needed. As it is, no node has 4 CPUs free.
const MEMBERS: [&str; 2] = ["train-0", "train-1"];

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run this test through ./upstream/with-kube-apiserver")
    })
}

/// preemptd in Kubernetes mode as kube-scheduler v1.37.2 with GenericWorkload on.
fn start_preemptd(dir: &Path, grpc: SocketAddr, metrics: SocketAddr) -> Process {
    Process::spawn(
        "preemptd",
        support::preemptd()
            .env("RUST_LOG", "info")
            .args(["serve", "--listen", &grpc.to_string()])
            .args(["--metrics-listen", &metrics.to_string()])
            .args(["--kubernetes-version", "1.37"])
            .args(["--feature-gates", "GenericWorkload=true"])
            .arg("--kubeconfig")
            .arg(var("KUBECONFIG")),
        dir,
    )
}

/// The stock kube-scheduler, default profile, GenericWorkload on; no leader election, no
/// serving port. -v=2 logs each preemption and the end of its victims' deletion.
fn start_scheduler(dir: &Path) -> Process {
    let config = dir.join("kube-scheduler.yaml");
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
leaderElection:
  leaderElect: false
",
        kubeconfig = var("KUBECONFIG"),
    );
    std::fs::write(&config, text).expect("write scheduler config");
    Process::spawn(
        "kube-scheduler",
        Command::new(var("PREEMPTD_E2E_KUBE_SCHEDULER"))
            .arg("--config")
            .arg(&config)
            .args([
                "--secure-port=0",
                "--feature-gates=GenericWorkload=true",
                "-v=2",
            ]),
        dir,
    )
}

// ---------------------------------------------------------------------------------------
// Polling and objects.

/// Polls `probe` until it yields a value, for at most [`SETTLE`].
async fn until<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + SETTLE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {SETTLE:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The value of an unlabelled metric, or `None` while `/metrics` does not answer.
async fn metric(addr: SocketAddr, name: &str) -> Option<f64> {
    let text = tokio::task::spawn_blocking(move || support::scrape(addr))
        .await
        .ok()?
        .ok()?;
    text.lines()
        .find(|line| line.split(' ').next() == Some(name))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("object")
}

async fn create<K>(api: &Api<K>, manifest: Value)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = manifest["metadata"]["name"].clone();
    api.create(&PostParams::default(), &from(manifest))
        .await
        .unwrap_or_else(|error| panic!("create {name}: {error}"));
}

/// Creates a Ready node, then takes off the not-ready taint the API server puts on a new
/// one (a kubelet's node becomes ready; these have no kubelet).
async fn create_node(nodes: &Api<Node>, name: &str, cpu: &str) {
    let resources = json!({"cpu": cpu, "memory": "8Gi", "pods": "110"});
    create(
        nodes,
        json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
            }
        }),
    )
    .await;
    let untaint = Patch::Merge(json!({"spec": {"taints": null}}));
    nodes
        .patch(name, &PatchParams::default(), &untaint)
        .await
        .expect("untaint node");
}

fn pod_group(name: &str, class: &str, min_count: i32, disruption: Value) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "disruptionMode": disruption,
            "priorityClassName": class
        }
    })
}

fn pod(name: &str, class: &str, cpu: &str, node: Option<&str>, group: Option<&str>) -> Value {
    let mut spec = json!({
        "priorityClassName": class,
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
    });
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    if let Some(group) = group {
        spec["schedulingGroup"] = json!({"podGroupName": group});
    }
    json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// A deletion without grace: a bound pod goes at once (no kubelet finishes it otherwise).
fn at_once() -> DeleteParams {
    DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    }
}

fn has_condition(pod: &Pod, kind: &str, reason: &str) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|conditions| {
        conditions
            .iter()
            .any(|c| c.type_ == kind && c.status == "True" && c.reason.as_deref() == Some(reason))
    })
}

/// The nodes `explain` says a member's placement tied on: "member NAME goes to NODE (score
/// S of N feasible nodes; tied: A, B)".
fn tied_nodes(notes: &[String], member: &str) -> BTreeSet<String> {
    let prefix = format!("member {member} goes to ");
    let note = notes
        .iter()
        .find(|note| note.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no placement note for {member}: {notes:?}"));
    let (_, tied) = note
        .split_once("tied: ")
        .unwrap_or_else(|| panic!("no tie list in {note:?}"));
    let tied = tied.trim_end_matches(')');
    tied.split(", ").map(str::to_string).collect()
}

// ---------------------------------------------------------------------------------------
// The test.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_scheduler_preempts_for_a_gang_as_preemptd_decided() {
    let kube = kube::Client::try_default()
        .await
        .expect("admin client from KUBECONFIG");
    let dir = tempfile::tempdir().expect("temp dir");
    let groups: Api<PodGroup> = Api::namespaced(kube.clone(), "default");
    if let Err(error) = groups.list(&ListParams::default()).await {
        panic!(
            "the api server serves no scheduling.k8s.io/v1beta1 podgroups ({error}): run with \
             KUBE_APISERVER_EXTRA_ARGS=\"--feature-gates=GenericWorkload=true \
             --runtime-config=scheduling.k8s.io/v1beta1=true\""
        );
    }
    let classes: Api<PriorityClass> = Api::all(kube.clone());
    for (name, value) in [("low", 100), ("batch", 200), ("high", 1000)] {
        create(
            &classes,
            json!({"metadata": {"name": name}, "value": value}),
        )
        .await;
    }
    let nodes: Api<Node> = Api::all(kube.clone());
    for (name, cpu) in NODES {
        create_node(&nodes, name, cpu).await;
    }
    let pods: Api<Pod> = Api::namespaced(kube.clone(), "default");
    let scheduler = start_scheduler(dir.path());
    scheduler_watches(&pods).await;

    create(&groups, pod_group("infer", "low", 2, json!({"all": {}}))).await;
    create(
        &groups,
        pod_group("train", "high", 2, json!({"single": {}})),
    )
    .await;
    for (name, node, class, cpu, group) in RUNNING {
        create(&pods, pod(name, class, cpu, Some(node), group)).await;
    }
    // Gated until preemptd has answered; created one after the other, so kube-scheduler's
    // queue takes them in name order, preemptd's order.
    for name in MEMBERS {
        let mut member = pod(name, "high", "4", None, Some("train"));
        member["spec"]["schedulingGates"] = json!([{"name": "preemptd.e2e/hold"}]);
        create(&pods, member).await;
    }

    // preemptd lists the cluster as it now is, then decides.
    let (grpc, metrics) = (support::free_port(), support::free_port());
    let _preemptd = start_preemptd(dir.path(), grpc, metrics);
    let held = [
        ("preemptd_cache_nodes", NODES.len()),
        ("preemptd_cache_pods", RUNNING.len() + MEMBERS.len()),
        ("preemptd_cache_pod_groups", 2),
    ];
    for (name, count) in held {
        until(&format!("preemptd holds {count} ({name})"), || async {
            (metric(metrics, name).await? == count as f64).then_some(())
        })
        .await;
    }
    let answer = preemptd_dry_run(grpc).await;
    let victims: BTreeSet<String> = answer.victims.iter().map(|v| v.name.clone()).collect();
    let nominations: BTreeMap<String, String> = answer
        .nominations
        .iter()
        .map(|n| (n.pod.clone().expect("member").name, n.node_name.clone()))
        .collect();
    // With every lower unit out, train-0 takes n4 and train-1 n3 (the emptiest nodes).
    // batch-a goes back (n2 is not needed); batch-b does not (train-1 needs n3), nor does
    // `infer` (train-0 needs n4), and being one unit, infer-0 goes too, although n1 stays
    // empty.
    let expected_nominations = BTreeMap::from([
        ("train-0".to_string(), "n4".to_string()),
        ("train-1".to_string(), "n3".to_string()),
    ]);
    assert_eq!(
        answer.outcome,
        pb::Outcome::Preempt as i32,
        "preemptd: {answer:#?}"
    );
    assert_eq!(nominations, expected_nominations, "preemptd: {answer:#?}");
    let expected_victims = ["batch-b", "infer-0", "infer-1"].map(str::to_string);
    assert_eq!(
        victims,
        BTreeSet::from(expected_victims),
        "preemptd: {answer:#?}"
    );
    for (member, node) in &nominations {
        let tied = tied_nodes(&answer.notes, member);
        assert_eq!(tied, BTreeSet::from([node.clone()]), "a tie: {answer:#?}");
    }

    // The gates go; kube-scheduler takes the gang once both are gone, and preempts.
    let ungate = Patch::Merge(json!({"spec": {"schedulingGates": null}}));
    for name in MEMBERS {
        pods.patch(name, &PatchParams::default(), &ungate)
            .await
            .expect("lift the scheduling gate");
    }
    let finished = [
        "Async Preemption finished completely",
        "preemptor=\"default/train\"",
    ];
    until(
        "kube-scheduler finishes deleting the gang's victims",
        || async { scheduler.logged(&finished).then_some(()) },
    )
    .await;
    let nominated = until("both members nominated", || async {
        let mut nominated = BTreeMap::new();
        for name in MEMBERS {
            let member = pods.get(name).await.ok()?;
            nominated.insert(name.to_string(), member.status?.nominated_node_name?);
        }
        Some(nominated)
    })
    .await;
    let all = pods.list(&ListParams::default()).await.expect("list pods");
    assert_eq!(
        all.items.len(),
        RUNNING.len() + MEMBERS.len(),
        "a pod is gone"
    );
    let terminating: Vec<&Pod> = all
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .collect();
    let names: BTreeSet<String> = terminating
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, victims, "kube-scheduler's victims");
    assert_eq!(nominated, nominations, "kube-scheduler's nominations");
    for victim in terminating {
        let condition = has_condition(victim, "DisruptionTarget", "PreemptionByScheduler");
        assert!(condition, "{:?}", victim.status);
    }

    // Without a kubelet the victims stay terminating: delete them, and the gang binds
    // where it was nominated.
    for name in &victims {
        pods.delete(name, &at_once()).await.expect("delete victim");
    }
    for (member, node) in &nominations {
        let bound = until(&format!("{member} bound"), || async {
            pods.get(member).await.ok()?.spec?.node_name
        })
        .await;
        assert_eq!(&bound, node, "{member}");
    }
}

/// Waits until kube-scheduler schedules from its watches, not its first list: it binds a
/// probe pod, which is then deleted. A pod created from now on reaches its queue as an
/// event, in the order of creation; pods of the first list come in no set order (client-go
/// gathers a watch-list's initial objects in a map).
async fn scheduler_watches(pods: &Api<Pod>) {
    create(pods, pod("probe", "low", "100m", None, None)).await;
    until("kube-scheduler binds a probe pod", || async {
        pods.get("probe").await.ok()?.spec?.node_name
    })
    .await;
    pods.delete("probe", &at_once())
        .await
        .expect("delete probe");
    until("the probe pod deleted", || async {
        pods.get_opt("probe").await.ok()?.is_none().then_some(())
    })
    .await;
}

/// preemptd's dry run for the gang, with explain: the members are the pending pods it holds
/// that name the group.
async fn preemptd_dry_run(grpc: SocketAddr) -> pb::PreemptGroupResponse {
    let endpoint =
        tonic::transport::Endpoint::from_shared(format!("http://{grpc}")).expect("endpoint");
    let channel = until("preemptd listens", || {
        let endpoint = endpoint.clone();
        async move { endpoint.connect().await.ok() }
    })
    .await;
    let mut client = pb::preemption_client::PreemptionClient::new(channel);
    let request = pb::PreemptGroupRequest {
        group: Some(pb::preempt_group_request::Group::GroupRef(
            pb::PodGroupRef {
                namespace: "default".into(),
                name: "train".into(),
                uid: String::new(),
            },
        )),
        dry_run: true,
        explain: true,
        ..Default::default()
    };
    client
        .preempt_group(request)
        .await
        .expect("PreemptGroup")
        .into_inner()
}
