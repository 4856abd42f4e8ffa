//! The stock kube-scheduler (v1.35.4, built from its Go module like the API server) with
//! preemptd as its extender: filter, prioritize and preempt verbs, nodeCacheCapable. The
//! real `preemptd` binary runs in Kubernetes mode against the same API server, with a
//! placement policy. Nodes have no kubelet: everything is read back from the API objects
//! (spec.nodeName of bound pods; the victims' DisruptionTarget condition and deletion
//! timestamp; the preemptor's status.nominatedNodeName).
//!
//! Run through `./upstream/with-kube-apiserver`, which builds the API server, etcd and
//! kube-scheduler and sets `KUBECONFIG` and `PREEMPTD_E2E_*`:
//!
//! ```sh
//! ./upstream/with-kube-apiserver cargo test -p preemptd-cli --features kube-e2e --test scheduler_extender
//! ```

mod support;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use preemptd::server::pb;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::{Process, free_port};

/// How long a change may take to reach the scheduler, preemptd and back to the API.
const SETTLE: Duration = Duration::from_secs(60);

const SPOT: [&str; 2] = ["spot-1", "spot-2"];
const NOTICED: &str = "spot-noticed";
const ON_DEMAND: [&str; 2] = ["on-demand-1", "on-demand-2"];

/// Priorities: the policy below makes `critical` (and anything at or above it) critical.
const BATCH: (&str, i32) = ("batch", 100);
const SERVICE: (&str, i32) = ("service", 1000);
const CRITICAL: (&str, i32) = ("critical", 1_000_000);

/// Default capacity labels and notice taints, plus critical pods by priority. The notice
/// taint the test puts on a spot node is PreferNoSchedule: kube-scheduler alone would still
/// place pods there, so keeping them off is preemptd's doing.
const POLICY: &str = "criticalPods:\n  priorityAtLeast: 1000000\n";

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run these tests through ./upstream/with-kube-apiserver")
    })
}

struct Preemptd {
    process: Process,
    grpc: SocketAddr,
    metrics: SocketAddr,
}

impl Preemptd {
    fn start(dir: &Path, extender: SocketAddr) -> Preemptd {
        let policy = dir.join("policy.yaml");
        std::fs::write(&policy, POLICY).expect("write policy");
        let (grpc, metrics) = (free_port(), free_port());
        let process = Process::spawn(
            "preemptd",
            Command::new(env!("CARGO_BIN_EXE_preemptd"))
                .env_clear()
                // Debug for the extender: it logs each preemption candidate it drops.
                .env("RUST_LOG", "info,preemptd::server::extender=debug")
                .args(["serve", "--listen", &grpc.to_string()])
                .args(["--metrics-listen", &metrics.to_string()])
                .args(["--extender-listen", &extender.to_string()])
                .arg("--kubeconfig")
                .arg(var("KUBECONFIG"))
                .arg("--policy")
                .arg(&policy),
            dir,
        );
        Preemptd {
            process,
            grpc,
            metrics,
        }
    }

    async fn client(&self) -> pb::preemption_client::PreemptionClient<tonic::transport::Channel> {
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", self.grpc))
            .expect("endpoint");
        let channel = until("preemptd listens", || {
            let endpoint = endpoint.clone();
            async move { endpoint.connect().await.ok() }
        })
        .await;
        pb::preemption_client::PreemptionClient::new(channel)
    }

    /// The metrics page, or `None` while the endpoint does not answer.
    async fn metrics_text(&self) -> Option<String> {
        let mut stream = TcpStream::connect(self.metrics).await.ok()?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
            .await
            .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await.ok()?;
        Some(text)
    }

    /// A metric's value: the first series of `name` that carries every one of `labels`
    /// (`verb="preempt"`), in whatever order the exporter writes them.
    async fn metric(&self, name: &str, labels: &[&str]) -> Option<f64> {
        let text = self.metrics_text().await?;
        text.lines()
            .filter(|line| {
                let series = line.split(' ').next().unwrap_or_default();
                let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
                metric == name && labels.iter().all(|label| rest.contains(label))
            })
            .find_map(|line| line.rsplit(' ').next()?.parse().ok())
    }
}

/// kube-scheduler with preemptd as its only extender; no leader election, no serving port.
fn start_scheduler(dir: &Path, extender: SocketAddr) -> Process {
    let config = dir.join("kube-scheduler.yaml");
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
leaderElection:
  leaderElect: false
extenders:
- urlPrefix: http://{extender}
  filterVerb: filter
  prioritizeVerb: prioritize
  preemptVerb: preempt
  weight: 10
  nodeCacheCapable: true
  httpTimeout: 10s
",
        kubeconfig = var("KUBECONFIG"),
    );
    std::fs::write(&config, text).expect("write scheduler config");
    // -v=2 logs each preemption's target node and victims.
    Process::spawn(
        "kube-scheduler",
        Command::new(var("PREEMPTD_E2E_KUBE_SCHEDULER"))
            .arg("--config")
            .arg(&config)
            .args(["--secure-port=0", "-v=2"]),
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

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("object")
}

/// A node as a kubelet would report it: 2 CPUs, Ready, with capacity labels and taints.
fn node(name: &str, labels: Value, taints: Value) -> Node {
    let mut metadata = json!({"name": name, "labels": labels});
    metadata["labels"]["kubernetes.io/hostname"] = json!(name);
    let resources = json!({"cpu": "2", "memory": "8Gi", "pods": "110"});
    from(json!({
        "metadata": metadata,
        "spec": {"taints": taints},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
        }
    }))
}

/// Creates the node, then sets its taints: the API server puts a not-ready taint on a new
/// node (a kubelet's node becomes ready; these have no kubelet).
async fn create_node(kube: &kube::Client, node: Node) {
    let nodes: Api<Node> = Api::all(kube.clone());
    let name = node.metadata.name.clone().expect("node name");
    let taints = node.spec.as_ref().and_then(|s| s.taints.clone());
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create node");
    nodes
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": taints}})),
        )
        .await
        .expect("set node taints");
}

fn pod(name: &str, class: (&str, i32), cpu: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "priorityClassName": class.0,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
        }
    })
}

async fn create_pod(pods: &Api<Pod>, manifest: Value) {
    pods.create(&PostParams::default(), &from(manifest))
        .await
        .expect("create pod");
}

/// Waits until the scheduler bound the pod, and returns its node.
async fn bound_node(pods: &Api<Pod>, name: &str) -> String {
    until(&format!("pod {name} bound"), || async {
        let pod = pods.get(name).await.ok()?;
        pod.spec?.node_name
    })
    .await
}

fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

fn has_condition(pod: &Pod, kind: &str, reason: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.type_ == kind && c.status == "True" && c.reason.as_deref() == Some(reason)
            })
        })
}

fn names<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    names.into_iter().map(str::to_string).collect()
}

// ---------------------------------------------------------------------------------------
// The test.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_scheduler_places_and_preempts_through_preemptd() {
    let kube = kube::Client::try_default()
        .await
        .expect("admin client from KUBECONFIG");
    let dir = tempfile::tempdir().expect("temp dir");
    let classes: Api<PriorityClass> = Api::all(kube.clone());
    for (name, value) in [BATCH, SERVICE, CRITICAL] {
        let class = from(json!({"metadata": {"name": name}, "value": value}));
        classes
            .create(&PostParams::default(), &class)
            .await
            .expect("create priority class");
    }
    for name in SPOT {
        let labels = json!({"node.kubernetes.io/capacity": "spot"});
        create_node(&kube, node(name, labels, json!(null))).await;
    }
    let notice = json!([{"key": "aws-node-termination-handler/spot-itn",
                         "value": "event-1", "effect": "PreferNoSchedule"}]);
    let labels = json!({"karpenter.sh/capacity-type": "spot"});
    create_node(&kube, node(NOTICED, labels, notice)).await;
    for name in ON_DEMAND {
        let labels = json!({"karpenter.sh/capacity-type": "on-demand"});
        create_node(&kube, node(name, labels, json!(null))).await;
    }

    let extender = free_port();
    let preemptd = Preemptd::start(dir.path(), extender);
    let mut client = preemptd.client().await;
    until("preemptd holds the 5 nodes", || async {
        (preemptd.metric("preemptd_cache_nodes", &[]).await? == 5.0).then_some(())
    })
    .await;
    let scheduler = start_scheduler(dir.path(), extender);
    let pods: Api<Pod> = Api::namespaced(kube.clone(), "default");

    places_by_capacity_and_notice(&pods).await;
    let preempt_calls =
        preemptor_gets_preemptds_node_and_victims(&pods, &preemptd, &mut client).await;
    assert!(
        preempt_calls >= 1.0,
        "preemptd counted no preempt verb call"
    );
    // The scheduler's own account (-v=2) of the preemption it carried out.
    // Each field on its own: releases print them in different orders.
    let node = format!("node=\"{}\"", ON_DEMAND[1]);
    let target = [node.as_str(), "pod=\"default/critical-preemptor\""];
    let victim = [node.as_str(), "victim=\"default/service-b\""];
    until("kube-scheduler logs the preemption", || async {
        let log = scheduler.log_text();
        let logged = |message: &str, fields: &[&str]| {
            log.lines().any(|line| {
                line.contains(message) && fields.iter().all(|field| line.contains(field))
            })
        };
        (logged("the target node for the preemption is determined", &target)
            && logged("Preemptor Pod preempted victim Pod", &victim))
        .then_some(())
    })
    .await;
}

/// Non-critical pods fill the spot nodes first, critical pods go to on-demand ones, and no
/// pod lands on the noticed spot node, not even one that can run nowhere else.
async fn places_by_capacity_and_notice(pods: &Api<Pod>) {
    let spot = names(SPOT);
    let on_demand = names(ON_DEMAND);
    // On empty nodes: only the policy keeps critical pods off spot capacity, which the
    // extender's scores favour for every other pod.
    for i in 1..=2 {
        create_pod(pods, pod(&format!("critical-{i}"), CRITICAL, "500m")).await;
        let node = bound_node(pods, &format!("critical-{i}")).await;
        assert!(on_demand.contains(&node), "critical-{i} bound to {node}");
    }
    // Two of these fill a spot node. Least-allocated scoring alone would put the third and
    // fourth on the emptier on-demand nodes; the extender's scores keep them on spot.
    for i in 1..=4 {
        create_pod(pods, pod(&format!("batch-{i}"), BATCH, "900m")).await;
    }
    for i in 1..=4 {
        let node = bound_node(pods, &format!("batch-{i}")).await;
        assert!(spot.contains(&node), "batch-{i} bound to {node}");
    }
    // Spot is full but for the noticed node, which has the most room: on-demand it is.
    create_pod(pods, pod("batch-overflow", BATCH, "900m")).await;
    let node = bound_node(pods, "batch-overflow").await;
    assert!(on_demand.contains(&node), "batch-overflow bound to {node}");

    // A pod that only the noticed node's labels match stays pending, for preemptd's reason.
    let mut pinned = pod("pinned-to-noticed", BATCH, "100m");
    pinned["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": NOTICED});
    create_pod(pods, pinned).await;
    let message = until("pinned-to-noticed unschedulable", || async {
        let pod = pods.get("pinned-to-noticed").await.ok()?;
        let status = pod.status?;
        let scheduled = status
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
        scheduled.message
    })
    .await;
    assert!(
        message.contains("spot capacity with a termination notice"),
        "{message}"
    );
    let on_noticed = pods
        .list(&ListParams::default().fields(&format!("spec.nodeName={NOTICED}")))
        .await
        .expect("list pods");
    assert!(on_noticed.items.is_empty(), "pods on {NOTICED}");
    delete_all(pods).await;
}

/// The spot nodes hold the lowest-priority pods, so kube-scheduler alone would preempt
/// there; a critical preemptor may only take on-demand capacity. The victims the scheduler
/// marks and the node it nominates are the ones preemptd's own Preempt dry run chooses.
/// Returns preemptd's count of preempt verb calls.
async fn preemptor_gets_preemptds_node_and_victims(
    pods: &Api<Pod>,
    preemptd: &Preemptd,
    client: &mut pb::preemption_client::PreemptionClient<tonic::transport::Channel>,
) -> f64 {
    let bound = |name: &str, node: &str, class, cpu| {
        let mut manifest = pod(name, class, cpu);
        manifest["spec"]["nodeName"] = json!(node);
        manifest
    };
    let fillers = [
        bound("batch-a", SPOT[0], BATCH, "1800m"),
        bound("batch-b", SPOT[1], BATCH, "1800m"),
        bound("batch-c", NOTICED, BATCH, "1800m"),
        bound("service-a1", ON_DEMAND[0], SERVICE, "1000m"),
        bound("service-a2", ON_DEMAND[0], SERVICE, "800m"),
        bound("service-b", ON_DEMAND[1], SERVICE, "1800m"),
    ];
    until("preemptd forgot the placement pods", || async {
        (preemptd.metric("preemptd_cache_pods", &[]).await? == 0.0).then_some(())
    })
    .await;
    let count = fillers.len() as f64;
    for manifest in fillers {
        create_pod(pods, manifest).await;
    }
    until("preemptd holds the bound pods", || async {
        (preemptd.metric("preemptd_cache_pods", &[]).await? == count).then_some(())
    })
    .await;

    // Held back by a scheduling gate until preemptd has answered for it.
    let mut preemptor = pod("critical-preemptor", CRITICAL, "1500m");
    preemptor["spec"]["schedulingGates"] = json!([{"name": "preemptd.e2e/hold"}]);
    create_pod(pods, preemptor).await;
    let request = pb::PreemptRequest {
        preemptor: Some(pb::preempt_request::Preemptor::PodRef(pb::PodRef {
            namespace: "default".into(),
            name: "critical-preemptor".into(),
            uid: String::new(),
        })),
        dry_run: true,
        explain: false,
        pdb_mode: pb::PdbMode::Unspecified.into(),
    };
    let answer = until("preemptd's dry run", || {
        let mut client = client.clone();
        let request = request.clone();
        async move { client.preempt(request).await.ok() }
    })
    .await
    .into_inner();
    assert_eq!(answer.outcome, pb::Outcome::Preempt as i32, "{answer:?}");
    let chosen: BTreeSet<String> = answer.victims.iter().map(|v| v.name.clone()).collect();
    // On on-demand-1 both service pods would have to go; on on-demand-2 one.
    assert_eq!(answer.nominated_node_name, ON_DEMAND[1], "{answer:?}");
    assert_eq!(chosen, names(["service-b"]), "{answer:?}");

    let calls_before = preemptd
        .metric(EXTENDER_REQUESTS, PREEMPT_OK)
        .await
        .unwrap_or(0.0);
    pods.patch(
        "critical-preemptor",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"schedulingGates": null}})),
    )
    .await
    .expect("lift the scheduling gate");

    let (nominated, marked) = until("the scheduler's preemption", || async {
        let preemptor = pods.get("critical-preemptor").await.ok()?;
        let nominated = preemptor.status?.nominated_node_name?;
        let marked: BTreeSet<String> = pods
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .iter()
            .filter(|p| is_terminating(p))
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        (!marked.is_empty()).then_some((nominated, marked))
    })
    .await;
    assert_eq!(nominated, answer.nominated_node_name);
    assert_eq!(marked, chosen);
    for name in &marked {
        let victim = pods.get(name).await.expect("victim");
        assert!(
            has_condition(&victim, "DisruptionTarget", "PreemptionByScheduler"),
            "{name}: {:?}",
            victim.status
        );
    }
    // The scheduler offered the spot nodes too (their victims have the lowest priority);
    // preemptd's /preempt dropped them for the policy's reasons.
    until("preemptd logs the spot candidates it dropped", || async {
        let log = preemptd.process.log_text();
        let dropped = |node: &str| {
            let node = format!("node={node} ");
            log.lines().any(|line| {
                line.contains("verb=\"preempt\"")
                    && line.contains("preemption candidate dropped")
                    && line.contains(&node)
                    && line.contains("reason=node(s) were spot capacity")
            })
        };
        (SPOT.into_iter().chain([NOTICED]).all(dropped)).then_some(())
    })
    .await;
    let calls = preemptd
        .metric(EXTENDER_REQUESTS, PREEMPT_OK)
        .await
        .unwrap_or(0.0)
        - calls_before;

    // Without a kubelet the victims stay terminating: delete them, and the preemptor binds
    // to the node it was nominated to.
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    for name in &marked {
        pods.delete(name, &now).await.expect("delete victim");
    }
    assert_eq!(
        bound_node(pods, "critical-preemptor").await,
        answer.nominated_node_name
    );
    calls
}

/// preemptd's counter of extender requests, and the series of answered preempt calls.
const EXTENDER_REQUESTS: &str = "preemptd_extender_requests_total";
const PREEMPT_OK: &[&str] = &["verb=\"preempt\"", "outcome=\"ok\""];

async fn delete_all(pods: &Api<Pod>) {
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    pods.delete_collection(&now, &ListParams::default())
        .await
        .expect("delete pods");
    until("pods deleted", || async {
        pods.list(&ListParams::default())
            .await
            .ok()?
            .items
            .is_empty()
            .then_some(())
    })
    .await;
}
