//! Kubernetes mode end to end: the real `preemptd` binary mirrors a real kube-apiserver
//! (v1.35.4, with etcd) and answers Preempt from what it watched. Objects are created,
//! changed and deleted through a real client (kube-rs); preemptd's connection to the API
//! server runs through a proxy the tests can cut, so objects deleted while it is cut off
//! (and etcd compacted meanwhile, so its watch gets 410 Gone) must disappear on relist.
//!
//! Run through `./upstream/with-kube-apiserver`, which builds and starts the API server
//! and sets `KUBECONFIG` and `PREEMPTD_E2E_*`:
//!
//! ```sh
//! ./upstream/with-kube-apiserver cargo test -p preemptd-cli --features kube-e2e --test kube_mode
//! ```

mod support;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use preemptd::server::pb;
use serde_json::{Value, json};
use support::free_port;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;
use tonic::Code;

/// One test at a time: they share the API server's cluster-scoped objects.
static CLUSTER: Mutex<()> = Mutex::const_new(());

/// How long a change may take to reach preemptd's answers.
const SETTLE: Duration = Duration::from_secs(60);

struct Env {
    server: String,
    ca: String,
    token: String,
}

fn env() -> Env {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: run these tests through ./upstream/with-kube-apiserver")
        })
    };
    Env {
        server: var("PREEMPTD_E2E_APISERVER"),
        ca: var("PREEMPTD_E2E_CA"),
        token: var("PREEMPTD_E2E_TOKEN"),
    }
}

async fn admin() -> kube::Client {
    kube::Client::try_default()
        .await
        .expect("admin client from KUBECONFIG")
}

fn kubeconfig(server: &str, ca: &str, token: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("temp kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\n    tls-server-name: 127.0.0.1\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: e2e\n  context: {{cluster: e2e, user: u}}\ncurrent-context: e2e\n"
    );
    std::fs::write(file.path(), text).expect("write kubeconfig");
    file
}

// ---------------------------------------------------------------------------------------
// A TCP proxy in front of the API server that can cut preemptd off.

struct Proxy {
    addr: SocketAddr,
    open: Arc<AtomicBool>,
    /// Bumped on every cut: connections of an older generation close themselves.
    generation: Arc<std::sync::atomic::AtomicU64>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let open = Arc::new(AtomicBool::new(true));
        let generation = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (open2, generation2) = (open.clone(), generation.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if !open2.load(Ordering::SeqCst) {
                    continue; // dropped: refused
                }
                let born = generation2.load(Ordering::SeqCst);
                let generation = generation2.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let copy = async {
                        let (mut cr, mut cw) = tokio::io::split(client);
                        let (mut sr, mut sw) = tokio::io::split(server);
                        tokio::select! {
                            _ = tokio::io::copy(&mut cr, &mut sw) => {}
                            _ = tokio::io::copy(&mut sr, &mut cw) => {}
                        }
                    };
                    let cut = async {
                        while generation.load(Ordering::SeqCst) == born {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    };
                    tokio::select! {
                        _ = copy => {}
                        _ = cut => {}
                    }
                });
            }
        });
        Proxy {
            addr,
            open,
            generation,
        }
    }

    fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

fn apiserver_addr(env: &Env) -> SocketAddr {
    env.server
        .trim_start_matches("https://")
        .parse()
        .expect("PREEMPTD_E2E_APISERVER is https://127.0.0.1:PORT")
}

// ---------------------------------------------------------------------------------------
// The preemptd binary in Kubernetes mode.

struct Preemptd {
    child: Child,
    grpc: SocketAddr,
    metrics: SocketAddr,
    _kubeconfig: tempfile::NamedTempFile,
}

impl Drop for Preemptd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Preemptd {
    fn start(kubeconfig: tempfile::NamedTempFile) -> Preemptd {
        let (grpc, metrics) = (free_port(), free_port());
        let child = Command::new(env!("CARGO_BIN_EXE_preemptd"))
            .env_clear()
            .env("RUST_LOG", "info")
            .args(["serve", "--listen", &grpc.to_string()])
            .args(["--metrics-listen", &metrics.to_string()])
            .arg("--kubeconfig")
            .arg(kubeconfig.path())
            .stdin(Stdio::null())
            .spawn()
            .expect("start preemptd");
        Preemptd {
            child,
            grpc,
            metrics,
            _kubeconfig: kubeconfig,
        }
    }

    async fn client(&self) -> pb::preemption_client::PreemptionClient<tonic::transport::Channel> {
        let deadline = Instant::now() + SETTLE;
        loop {
            match tonic::transport::Endpoint::from_shared(format!("http://{}", self.grpc))
                .expect("endpoint")
                .connect()
                .await
            {
                Ok(channel) => return pb::preemption_client::PreemptionClient::new(channel),
                Err(error) if Instant::now() > deadline => {
                    panic!("preemptd never listened: {error}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    async fn health(&self) -> Option<i32> {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", self.grpc))
            .ok()?
            .connect()
            .await
            .ok()?;
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        let response = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: String::new(),
            })
            .await
            .ok()?;
        Some(response.into_inner().status)
    }

    async fn wait_serving(&self) {
        let serving = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
        let deadline = Instant::now() + SETTLE;
        while self.health().await != Some(serving) {
            assert!(Instant::now() < deadline, "preemptd never became SERVING");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A metric's value (the first series whose line starts with `series`).
    async fn metric(&self, series: &str) -> Option<f64> {
        let mut stream = TcpStream::connect(self.metrics).await.ok()?;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
            .await
            .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await.ok()?;
        text.lines()
            .filter(|line| line.starts_with(series))
            .find_map(|line| line.rsplit(' ').next()?.parse().ok())
    }
}

// ---------------------------------------------------------------------------------------
// Objects.

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("object")
}

fn node(name: &str, cpu: &str) -> Node {
    from(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}
    }))
}

/// Creates a node and takes off the not-ready taint the API server puts on a new one (a
/// kubelet's node becomes ready; these have no kubelet).
async fn create_node(client: &kube::Client, name: &str, cpu: &str) {
    create_cluster(client, &node(name, cpu)).await;
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": null}})),
        )
        .await
        .expect("untaint node");
}

fn pod(namespace: &str, name: &str, node: Option<&str>, class: &str, cpu: &str) -> Pod {
    let mut spec = json!({
        "priorityClassName": class,
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
    });
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    from(json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": spec
    }))
}

fn priority_class(name: &str, value: i32) -> PriorityClass {
    from(json!({"metadata": {"name": name}, "value": value}))
}

async fn create<K>(client: &kube::Client, namespace: Option<&str>, object: &K)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace.unwrap_or("default"));
    api.create(&PostParams::default(), object)
        .await
        .expect("create");
}

async fn create_cluster<K>(client: &kube::Client, object: &K)
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client.clone());
    api.create(&PostParams::default(), object)
        .await
        .expect("create");
}

/// Deletes every object of the tests: pods, budgets, nodes, test namespaces and classes.
async fn wipe(client: &kube::Client) {
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    let pods: Api<Pod> = Api::all(client.clone());
    for p in pods.list(&ListParams::default()).await.expect("list pods") {
        let ns = p.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let _ = api.delete(&p.metadata.name.unwrap_or_default(), &now).await;
    }
    let pdbs: Api<PodDisruptionBudget> = Api::all(client.clone());
    for b in pdbs.list(&ListParams::default()).await.expect("list pdbs") {
        let ns = b.metadata.namespace.clone().unwrap_or_default();
        let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
        let _ = api.delete(&b.metadata.name.unwrap_or_default(), &now).await;
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let _ = nodes.delete_collection(&now, &ListParams::default()).await;
    let classes: Api<PriorityClass> = Api::all(client.clone());
    for c in classes
        .list(&ListParams::default())
        .await
        .expect("list classes")
    {
        let name = c.metadata.name.unwrap_or_default();
        if !name.starts_with("system-") {
            let _ = classes.delete(&name, &now).await;
        }
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for n in namespaces
        .list(&ListParams::default().labels("e2e=true"))
        .await
        .expect("list namespaces")
    {
        let _ = namespaces
            .delete(&n.metadata.name.unwrap_or_default(), &now)
            .await;
    }
}

fn preempt_json(manifest: Value) -> pb::PreemptRequest {
    pb::PreemptRequest {
        preemptor: Some(pb::preempt_request::Preemptor::PodJson(
            manifest.to_string(),
        )),
        dry_run: true,
        explain: false,
        pdb_mode: pb::PdbMode::Unspecified.into(),
    }
}

fn preemptor(name: &str, class: &str, cpu: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"priorityClassName": class, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    })
}

/// Asks until the answer satisfies `want` (changes take a moment to arrive).
async fn eventually(
    client: &mut pb::preemption_client::PreemptionClient<tonic::transport::Channel>,
    request: pb::PreemptRequest,
    what: &str,
    want: impl Fn(&pb::PreemptResponse) -> bool,
) -> pb::PreemptResponse {
    let deadline = Instant::now() + SETTLE;
    let mut last = None;
    while Instant::now() < deadline {
        match client.preempt(request.clone()).await {
            Ok(response) => {
                let response = response.into_inner();
                if want(&response) {
                    return response;
                }
                last = Some(format!("{response:?}"));
            }
            Err(status) => last = Some(format!("{status:?}")),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{what}: never; last answer {last:?}");
}

fn victims(response: &pb::PreemptResponse) -> Vec<String> {
    let mut names: Vec<String> = response.victims.iter().map(|v| v.name.clone()).collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------------------
// The tests.

/// Initial list, live adds, updates and deletes, and a relist after a cut during which
/// objects were deleted and etcd compacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrors_the_cluster_through_lists_watches_and_relists() {
    let _one = CLUSTER.lock().await;
    let env = env();
    let kube = admin().await;
    wipe(&kube).await;
    create_cluster(&kube, &priority_class("low", 10)).await;
    create_cluster(&kube, &priority_class("high", 1000)).await;
    create_node(&kube, "n1", "2").await;
    create_node(&kube, "n2", "2").await;
    create(
        &kube,
        None,
        &pod("default", "p1", Some("n1"), "low", "1500m"),
    )
    .await;
    create(
        &kube,
        None,
        &pod("default", "p2", Some("n2"), "low", "1800m"),
    )
    .await;

    // Started cut off: no decisions before the initial list.
    let proxy = Proxy::start(apiserver_addr(&env)).await;
    proxy.cut();
    let preemptd = Preemptd::start(kubeconfig(&proxy.url(), &env.ca, &env.token));
    let mut client = preemptd.client().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let serving = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
    assert_ne!(preemptd.health().await, Some(serving));
    let early = client
        .preempt(preempt_json(preemptor("hi", "high", "1")))
        .await
        .expect_err("no decision before the initial list");
    assert_eq!(early.code(), Code::Unavailable, "{early:?}");
    proxy.restore();
    preemptd.wait_serving().await;

    // The initial list: the class resolves the raw manifest's priority; n1's victim is
    // the smaller one... both need preempting, the one with fewer requests freed wins.
    let hi = preempt_json(preemptor("hi", "high", "1"));
    let answer = eventually(&mut client, hi.clone(), "initial list", |r| {
        r.outcome == pb::Outcome::Preempt as i32
    })
    .await;
    let expected = if answer.nominated_node_name == "n1" {
        vec!["p1".to_string()]
    } else {
        vec!["p2".to_string()]
    };
    assert_eq!(victims(&answer), expected);

    // Writes come from the watches only.
    let refused = client
        .update_node(pb::UpdateNodeRequest {
            change: Some(pb::update_node_request::Change::UpsertJson(
                serde_json::to_string(&node("x", "1")).unwrap(),
            )),
        })
        .await
        .expect_err("one writer");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");

    // Live add: an empty node makes the pod fit.
    create_node(&kube, "n3", "2").await;
    eventually(&mut client, hi.clone(), "add node n3", |r| {
        r.outcome == pb::Outcome::Fits as i32
    })
    .await;
    // Live update: cordoned, it no longer counts.
    let nodes: Api<Node> = Api::all(kube.clone());
    nodes
        .patch(
            "n3",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon n3");
    eventually(&mut client, hi.clone(), "cordon n3", |r| {
        r.outcome == pb::Outcome::Preempt as i32
    })
    .await;
    // Live delete: p1 gone, n1 has room.
    let pods: Api<Pod> = Api::namespaced(kube.clone(), "default");
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    pods.delete("p1", &now).await.expect("delete p1");
    eventually(&mut client, hi.clone(), "delete p1", |r| {
        r.outcome == pb::Outcome::Fits as i32 && r.feasible_nodes == ["n1"]
    })
    .await;

    // Cut off: objects deleted meanwhile, and etcd compacted past preemptd's watch
    // (the API server compacts every 2 s; writes move the revision on).
    proxy.cut();
    create(
        &kube,
        None,
        &pod("default", "p3", Some("n1"), "low", "1500m"),
    )
    .await;
    pods.delete("p2", &now).await.expect("delete p2");
    nodes.delete("n3", &now).await.expect("delete n3");
    for i in 0..5 {
        let name = format!("churn-{i}");
        create(&kube, None, &pod("default", &name, None, "low", "1m")).await;
        pods.delete(&name, &now).await.expect("delete churn");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    proxy.restore();
    // p2 (deleted while cut off) is gone: n2 has room; p3 (added) fills n1.
    eventually(&mut client, hi.clone(), "relist after 410", |r| {
        r.outcome == pb::Outcome::Fits as i32 && r.feasible_nodes == ["n2"]
    })
    .await;
    let deadline = Instant::now() + SETTLE;
    loop {
        let relists = preemptd
            .metric("preemptd_kube_relists_total{kind=\"pod\"}")
            .await
            .unwrap_or(0.0);
        let pods_held = preemptd.metric("preemptd_cache_pods").await;
        let nodes_held = preemptd.metric("preemptd_cache_nodes").await;
        if relists >= 1.0 && pods_held == Some(1.0) && nodes_held == Some(2.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after the relist: relists {relists}, pods {pods_held:?}, nodes {nodes_held:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wipe(&kube).await;
}

/// Preempt by reference to a pending pod preemptd watched, PriorityClasses from the
/// cluster, and namespaceSelector against the real Namespace labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decides_for_watched_pods_with_classes_and_namespace_labels() {
    let _one = CLUSTER.lock().await;
    let env = env();
    let kube = admin().await;
    wipe(&kube).await;
    create_cluster(&kube, &priority_class("low", 10)).await;
    create_cluster(&kube, &priority_class("high", 1000)).await;
    let team: Namespace =
        from(json!({"metadata": {"name": "team-a", "labels": {"team": "a", "e2e": "true"}}}));
    create_cluster(&kube, &team).await;
    create_node(&kube, "n1", "2").await;
    create_node(&kube, "n2", "4").await;
    create(
        &kube,
        None,
        &pod("default", "p1", Some("n1"), "low", "1500m"),
    )
    .await;
    create(
        &kube,
        Some("team-a"),
        &pod("team-a", "db", Some("n2"), "low", "1500m"),
    )
    .await;
    create(
        &kube,
        None,
        &pod("default", "pending-hi", None, "high", "3"),
    )
    .await;

    let preemptd = Preemptd::start(kubeconfig(&env.server, &env.ca, &env.token));
    let mut client = preemptd.client().await;
    preemptd.wait_serving().await;

    // By reference: the pending pod preemptd watched, with the priority admission gave
    // it. 3 cpu fit only on n2 once db is gone.
    let by_ref = |name: &str| pb::PreemptRequest {
        preemptor: Some(pb::preempt_request::Preemptor::PodRef(pb::PodRef {
            namespace: "default".into(),
            name: name.into(),
            uid: String::new(),
        })),
        dry_run: true,
        explain: false,
        pdb_mode: pb::PdbMode::Unspecified.into(),
    };
    let answer = eventually(&mut client, by_ref("pending-hi"), "pod_ref", |r| {
        r.outcome == pb::Outcome::Preempt as i32
    })
    .await;
    assert_eq!(answer.nominated_node_name, "n2");
    assert_eq!(victims(&answer), ["db"]);
    let missing = client
        .preempt(by_ref("absent"))
        .await
        .expect_err("absent pod");
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");

    // The same question offline: `simulate --kubeconfig` lists the cluster once.
    let manifest = tempfile::NamedTempFile::new().expect("temp pod");
    let mut file = preemptor("pending-hi", "high", "3");
    file["apiVersion"] = json!("v1");
    file["kind"] = json!("Pod");
    std::fs::write(manifest.path(), file.to_string()).expect("write pod");
    let admin_config = kubeconfig(&env.server, &env.ca, &env.token);
    let simulated = Command::new(env!("CARGO_BIN_EXE_preemptd"))
        .env_clear()
        .arg("simulate")
        .arg("--kubeconfig")
        .arg(admin_config.path())
        .arg("--pod")
        .arg(manifest.path())
        .output()
        .expect("run simulate");
    assert!(
        simulated.status.success(),
        "{}",
        String::from_utf8_lossy(&simulated.stderr)
    );
    let decision: Value = serde_json::from_slice(&simulated.stdout).expect("decision JSON");
    assert_eq!(decision["outcome"], "OUTCOME_PREEMPT", "{decision}");
    assert_eq!(decision["nominatedNodeName"], "n2", "{decision}");
    assert_eq!(decision["victims"][0]["name"], "db", "{decision}");

    // A class that does not exist: admission would refuse the manifest.
    let unknown = client
        .preempt(preempt_json(preemptor("x", "nope", "1")))
        .await
        .expect_err("unknown class");
    assert_eq!(unknown.code(), Code::InvalidArgument, "{unknown:?}");
    assert!(
        unknown.message().contains("priorityClassName"),
        "{unknown:?}"
    );

    // Required affinity to app=db in namespaces labelled team=a, as the Namespace object
    // has it: only n2 qualifies (n1 has room too, but no such pod).
    let mut affine = preemptor("affine", "high", "100m");
    affine["spec"]["affinity"] = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaceSelector": {"matchLabels": {"team": "a"}},
        "topologyKey": "kubernetes.io/hostname"
    }]}});
    eventually(
        &mut client,
        preempt_json(affine.clone()),
        "namespaceSelector on real labels",
        |r| r.outcome == pb::Outcome::Fits as i32 && r.feasible_nodes == ["n2"],
    )
    .await;
    // Relabelled, the namespace no longer matches: nowhere fits.
    let namespaces: Api<Namespace> = Api::all(kube.clone());
    namespaces
        .patch(
            "team-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "b"}}})),
        )
        .await
        .expect("relabel team-a");
    eventually(
        &mut client,
        preempt_json(affine),
        "namespace relabelled",
        |r| r.outcome != pb::Outcome::Fits as i32,
    )
    .await;
    wipe(&kube).await;
}

impl Preemptd {
    /// The status health answers for `service` on a fresh connection; `None` while
    /// preemptd does not answer.
    async fn health_of(&self, service: &str) -> Option<i32> {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", self.grpc))
            .ok()?
            .connect()
            .await
            .ok()?;
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        let request = tonic_health::pb::HealthCheckRequest {
            service: service.to_string(),
        };
        Some(health.check(request).await.ok()?.into_inner().status)
    }

    /// Polls `series` until `want` holds for its value (`None`: not exported).
    async fn wait_metric(&self, series: &str, want: impl Fn(Option<f64>) -> bool) {
        let deadline = Instant::now() + SETTLE;
        loop {
            let value = self.metric(series).await;
            if want(value) {
                return;
            }
            assert!(Instant::now() < deadline, "{series}: last {value:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

/// Started while the API server cannot be reached: every health service says
/// NOT_SERVING from the first answer on, until the lists are done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_not_serving_from_the_first_answer_until_every_kind_is_listed() {
    let _one = CLUSTER.lock().await;
    let env = env();
    let proxy = Proxy::start(apiserver_addr(&env)).await;
    proxy.cut();
    let preemptd = Preemptd::start(kubeconfig(&proxy.url(), &env.ca, &env.token));
    let not_serving = tonic_health::pb::health_check_response::ServingStatus::NotServing as i32;
    let serving = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
    let services = ["", "preemptd.v1.Preemption"];

    // Asked as fast as it goes from the start, so the first answer comes as early as the
    // port takes calls; each answer, the first included, is NOT_SERVING.
    let deadline = Instant::now() + SETTLE;
    let mut answers = 0;
    while answers < 20 {
        for service in services {
            match preemptd.health_of(service).await {
                Some(status) => {
                    assert_eq!(status, not_serving, "service {service:?}, answer {answers}");
                    answers += 1;
                }
                // Not listening yet.
                None => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
        assert!(Instant::now() < deadline, "preemptd never answered health");
    }

    proxy.restore();
    for service in services {
        let deadline = Instant::now() + SETTLE;
        while preemptd.health_of(service).await != Some(serving) {
            assert!(
                Instant::now() < deadline,
                "{service:?} never became SERVING"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A pod deleted and created again under its name (a StatefulSet's restart) while
/// preemptd was cut off: the relist holds the new pod, not the old one, and the new one
/// goes when it is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_recreated_under_its_name_during_a_cut_replaces_the_old_one() {
    let _one = CLUSTER.lock().await;
    let env = env();
    let kube = admin().await;
    wipe(&kube).await;
    create_cluster(&kube, &priority_class("low", 10)).await;
    create_cluster(&kube, &priority_class("high", 1000)).await;
    create_node(&kube, "n1", "2").await;
    create_node(&kube, "n2", "2").await;
    create(
        &kube,
        None,
        &pod("default", "web-0", Some("n1"), "low", "1500m"),
    )
    .await;

    let proxy = Proxy::start(apiserver_addr(&env)).await;
    let preemptd = Preemptd::start(kubeconfig(&proxy.url(), &env.ca, &env.token));
    let mut client = preemptd.client().await;
    preemptd.wait_serving().await;
    // One cpu fits only where web-0 is not.
    let hi = preempt_json(preemptor("hi", "high", "1"));
    eventually(&mut client, hi.clone(), "web-0 on n1", |r| {
        r.outcome == pb::Outcome::Fits as i32 && r.feasible_nodes == ["n2"]
    })
    .await;

    // Cut off: web-0 deleted and created again on n2, and etcd compacted past preemptd's
    // watch, so it relists.
    proxy.cut();
    let pods: Api<Pod> = Api::namespaced(kube.clone(), "default");
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    pods.delete("web-0", &now).await.expect("delete web-0");
    create(
        &kube,
        None,
        &pod("default", "web-0", Some("n2"), "low", "1800m"),
    )
    .await;
    for i in 0..5 {
        let name = format!("churn-{i}");
        create(&kube, None, &pod("default", &name, None, "low", "1m")).await;
        pods.delete(&name, &now).await.expect("delete churn");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    proxy.restore();
    eventually(&mut client, hi.clone(), "web-0 again, on n2", |r| {
        r.outcome == pb::Outcome::Fits as i32 && r.feasible_nodes == ["n1"]
    })
    .await;
    preemptd
        .wait_metric("preemptd_cache_pods", |pods| pods == Some(1.0))
        .await;

    // Deleted, it is gone.
    pods.delete("web-0", &now)
        .await
        .expect("delete web-0 again");
    eventually(&mut client, hi, "web-0 deleted", |r| {
        r.outcome == pb::Outcome::Fits as i32 && sorted(r.feasible_nodes.clone()) == ["n1", "n2"]
    })
    .await;
    preemptd
        .wait_metric("preemptd_cache_pods", |pods| pods == Some(0.0))
        .await;
    wipe(&kube).await;
}

/// An API server unreachable for longer than a default backoff grows to: once it answers
/// again, preemptd catches up, and its metrics said meanwhile that the watches failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catches_up_soon_after_an_outage() {
    let _one = CLUSTER.lock().await;
    let env = env();
    let kube = admin().await;
    wipe(&kube).await;
    create_cluster(&kube, &priority_class("low", 10)).await;
    create_node(&kube, "n1", "2").await;
    create(
        &kube,
        None,
        &pod("default", "p1", Some("n1"), "low", "1500m"),
    )
    .await;

    let proxy = Proxy::start(apiserver_addr(&env)).await;
    let preemptd = Preemptd::start(kubeconfig(&proxy.url(), &env.ca, &env.token));
    let mut client = preemptd.client().await;
    preemptd.wait_serving().await;
    let healthy = "preemptd_kube_watch_healthy{kind=\"priorityclass\"}";
    preemptd.wait_metric(healthy, |v| v == Some(1.0)).await;
    preemptd
        .wait_metric(
            "preemptd_kube_seconds_since_last_list{kind=\"priorityclass\"}",
            |v| v.is_some(),
        )
        .await;
    let late = preempt_json(preemptor("late-pod", "late", "1"));
    let unknown = client
        .preempt(late.clone())
        .await
        .expect_err("no such class yet");
    assert_eq!(unknown.code(), Code::InvalidArgument, "{unknown:?}");

    // Cut off for 40 s: kube-rs's default backoff would have grown to 25 s and more.
    proxy.cut();
    preemptd.wait_metric(healthy, |v| v == Some(0.0)).await;
    // The outage itself, not a wait for something to happen.
    tokio::time::sleep(Duration::from_secs(40)).await;
    create_cluster(&kube, &priority_class("late", 1000)).await;
    proxy.restore();
    let restored = Instant::now();
    let answer = eventually(&mut client, late, "the class created during the cut", |r| {
        r.outcome == pb::Outcome::Preempt as i32
    })
    .await;
    println!(
        "caught up {:.1} s after the api server was reachable again",
        restored.elapsed().as_secs_f64()
    );
    assert_eq!(victims(&answer), ["p1"]);
    preemptd.wait_metric(healthy, |v| v == Some(1.0)).await;
    wipe(&kube).await;
}

/// deploy/'s RBAC is enough to serve and nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deploy_rbac_lists_and_watches_the_mirrored_kinds_and_nothing_more() {
    let _one = CLUSTER.lock().await;
    let env = env();
    let kube = admin().await;
    wipe(&kube).await;
    let rbac = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/base/rbac.yaml"
    ))
    .expect("deploy/base/rbac.yaml");
    let mut documents = rbac.split("\n---\n");
    let role: ClusterRole =
        serde_yaml_ng::from_str(documents.next().unwrap()).expect("ClusterRole");
    let binding: ClusterRoleBinding =
        serde_yaml_ng::from_str(documents.next().unwrap()).expect("ClusterRoleBinding");
    let namespace = binding.subjects.as_ref().unwrap()[0]
        .namespace
        .clone()
        .unwrap();
    let ns: Namespace = from(json!({"metadata": {"name": namespace, "labels": {"e2e": "true"}}}));
    let _ = Api::<Namespace>::all(kube.clone())
        .create(&PostParams::default(), &ns)
        .await;
    let accounts: Api<ServiceAccount> = Api::namespaced(kube.clone(), &namespace);
    let account: ServiceAccount = from(json!({"metadata": {"name": "preemptd"}}));
    let _ = accounts.create(&PostParams::default(), &account).await;
    let roles: Api<ClusterRole> = Api::all(kube.clone());
    let _ = roles.delete("preemptd", &DeleteParams::default()).await;
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("ClusterRole");
    let bindings: Api<ClusterRoleBinding> = Api::all(kube.clone());
    let _ = bindings.delete("preemptd", &DeleteParams::default()).await;
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("ClusterRoleBinding");

    // A token for the account, as the kubelet would mount it.
    let request: k8s_openapi::api::authentication::v1::TokenRequest =
        from(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}));
    let token = accounts
        .create_token_request("preemptd", &PostParams::default(), &request)
        .await
        .expect("token request")
        .status
        .and_then(|status| status.token)
        .expect("token");

    create_cluster(&kube, &priority_class("low", 10)).await;
    create_node(&kube, "n1", "2").await;
    create(
        &kube,
        None,
        &pod("default", "p1", Some("n1"), "low", "1500m"),
    )
    .await;
    let preemptd = Preemptd::start(kubeconfig(&env.server, &env.ca, &token));
    let mut client = preemptd.client().await;
    preemptd.wait_serving().await;
    let answer = eventually(
        &mut client,
        preempt_json(preemptor("hi", "system-cluster-critical", "1")),
        "serving with the deploy RBAC",
        |r| r.outcome == pb::Outcome::Preempt as i32,
    )
    .await;
    assert_eq!(victims(&answer), ["p1"]);

    // What the account may do: list and watch the kinds it mirrors, nothing else (the
    // v1.35 API server serves no PodGroups: preemptd serves without watching them).
    let user = format!("system:serviceaccount:{namespace}:preemptd");
    let reviews: Api<SubjectAccessReview> = Api::all(kube.clone());
    for (group, resource, verb, allowed) in [
        ("", "nodes", "list", true),
        ("", "nodes", "watch", true),
        ("", "pods", "watch", true),
        ("", "namespaces", "list", true),
        ("policy", "poddisruptionbudgets", "watch", true),
        ("scheduling.k8s.io", "priorityclasses", "list", true),
        ("scheduling.k8s.io", "podgroups", "watch", true),
        ("scheduling.k8s.io", "workloads", "list", true),
        ("scheduling.k8s.io", "podgroups", "create", false),
        ("", "pods", "get", false),
        ("", "pods", "create", false),
        ("", "pods", "delete", false),
        ("", "nodes", "patch", false),
        ("", "secrets", "list", false),
        ("", "configmaps", "watch", false),
    ] {
        let review: SubjectAccessReview = from(json!({"spec": {
            "user": user,
            "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{namespace}")],
            "resourceAttributes": {"group": group, "resource": resource, "verb": verb}
        }}));
        let status = reviews
            .create(&PostParams::default(), &review)
            .await
            .expect("SubjectAccessReview")
            .status
            .expect("status");
        assert_eq!(status.allowed, allowed, "{verb} {group}/{resource}");
    }
    wipe(&kube).await;
}

/// The watches are the one writer: a committing Preempt is refused and preemptd's copy
/// stays as the cluster is (the preemptor is still decided on as before, not held back as
/// NOT_ELIGIBLE by a victim only preemptd thinks terminating), and a bound pod named by
/// pod_ref is no preemptor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_a_committing_preempt_and_keeps_its_copy_as_the_cluster_is() {
    let _one = CLUSTER.lock().await;
    let env = env();
    let kube = admin().await;
    wipe(&kube).await;
    create_cluster(&kube, &priority_class("low", 10)).await;
    create_cluster(&kube, &priority_class("high", 1000)).await;
    create_node(&kube, "n1", "2").await;
    create(
        &kube,
        None,
        &pod("default", "busy", Some("n1"), "low", "1500m"),
    )
    .await;
    create(&kube, None, &pod("default", "waiting", None, "high", "1")).await;

    let preemptd = Preemptd::start(kubeconfig(&env.server, &env.ca, &env.token));
    let mut client = preemptd.client().await;
    preemptd.wait_serving().await;

    let by_ref = |name: &str, dry_run: bool| pb::PreemptRequest {
        preemptor: Some(pb::preempt_request::Preemptor::PodRef(pb::PodRef {
            namespace: "default".into(),
            name: name.into(),
            uid: String::new(),
        })),
        dry_run,
        explain: false,
        pdb_mode: pb::PdbMode::Unspecified.into(),
    };
    let decided = eventually(&mut client, by_ref("waiting", true), "the dry run", |r| {
        r.outcome == pb::Outcome::Preempt as i32
    })
    .await;
    assert_eq!(decided.nominated_node_name, "n1");
    assert_eq!(victims(&decided), ["busy"]);
    let listed = client
        .list_nominations(pb::ListNominationsRequest {})
        .await
        .expect("list nominations")
        .into_inner();

    let refused = client
        .preempt(by_ref("waiting", false))
        .await
        .expect_err("a committing preempt");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(refused.message().contains("dry_run"), "{refused:?}");

    // Nothing changed: no nomination, and the same decision as before.
    let after = client
        .list_nominations(pb::ListNominationsRequest {})
        .await
        .expect("list nominations")
        .into_inner();
    assert_eq!(after.nominations, listed.nominations);
    assert!(after.nominations.is_empty(), "{after:?}");
    assert_eq!(after.revision, listed.revision);
    let again = client
        .preempt(by_ref("waiting", true))
        .await
        .expect("dry run")
        .into_inner();
    assert_eq!(again.outcome, pb::Outcome::Preempt as i32, "{again:?}");
    assert_eq!(again.nominated_node_name, "n1");
    assert_eq!(victims(&again), ["busy"]);

    // A bound pod is no preemptor, dry run or not.
    let bound = client
        .preempt(by_ref("busy", true))
        .await
        .expect_err("a bound preemptor");
    assert_eq!(bound.code(), Code::FailedPrecondition, "{bound:?}");
    assert_eq!(
        bound.message(),
        "pod default/busy is bound to node n1: preemption is only for pending pods"
    );
    wipe(&kube).await;
}
