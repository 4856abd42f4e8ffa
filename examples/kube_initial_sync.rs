//! Kubernetes mode's initial sync against a real API server (a target in
//! docs/performance.md): preemptd's time to SERVING beside the time a bare list of the
//! same objects takes, and preemptd's resident memory per pod.
//!
//! ```sh
//! preemptd bench --nodes 5000 --pods-per-node 30 --write-scenarios /tmp/s   # the bench's cluster as a v1 List
//! KUBE_APISERVER_EXTRA_ARGS="--watch-cache=true --etcd-compaction-interval=5m" \
//!   ./upstream/with-kube-apiserver cargo run --release --example kube_initial_sync -- \
//!     --load /tmp/s/5000x30/cluster.json --preemptd target/release/preemptd
//! ```
//!
//! `--load FILE` creates every object of a v1 List in the cluster first (skip it to measure
//! a cluster loaded before). Each figure is the median of `--runs` runs.
//!
//! RSS per pod is charged as `preemptd bench` charges it in push mode: with `--load`, the
//! objects other than pods are created first and preemptd's RSS serving them is the
//! baseline; without it, an idle server's. `rss_over_idle_bytes_per_pod` charges
//! everything above an idle push-mode server to the pods.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use serde_json::Value;

/// The page size of preemptd's watches (kube-rs's default) and of the bare list.
const PAGE: u32 = 500;
/// Creates in flight while loading.
const CONCURRENT_CREATES: usize = 48;

fn resource(kind: &str) -> Option<(ApiResource, bool)> {
    use k8s_openapi::api::{core::v1, policy::v1 as policy, scheduling::v1 as scheduling};
    Some(match kind {
        "Node" => (ApiResource::erase::<v1::Node>(&()), false),
        "Pod" => (ApiResource::erase::<v1::Pod>(&()), true),
        "PodDisruptionBudget" => (ApiResource::erase::<policy::PodDisruptionBudget>(&()), true),
        "PriorityClass" => (ApiResource::erase::<scheduling::PriorityClass>(&()), false),
        "Namespace" => (ApiResource::erase::<v1::Namespace>(&()), false),
        _ => return None,
    })
}

fn kind_of(list_kind: &str, item: &Value) -> String {
    item.get("kind")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| list_kind.trim_end_matches("List").to_string())
}

/// The objects of a v1 List file, ready to create: pods name a class for their priority,
/// and every namespace and class they need is added.
fn prepare(path: &PathBuf) -> anyhow::Result<Vec<(String, Value)>> {
    let text = std::fs::read_to_string(path)?;
    let list: Value = serde_json::from_str(&text)?;
    let list_kind = list
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("List")
        .to_string();
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut ordered: Vec<(String, Value)> = items
        .into_iter()
        .map(|i| (kind_of(&list_kind, &i), i))
        .collect();
    // Admission refuses a pod's own spec.priority unless its class gives that value: each
    // priority becomes a class the pod names.
    let mut priorities = std::collections::BTreeSet::new();
    let mut namespaces = std::collections::BTreeSet::new();
    for (kind, item) in &mut ordered {
        if let Some(namespace) = item["metadata"]["namespace"].as_str() {
            namespaces.insert(namespace.to_string());
        }
        if kind != "Pod" {
            continue;
        }
        if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("deletionTimestamp");
        }
        // The API server requires an image; the model keeps none.
        for list in ["containers", "initContainers"] {
            if let Some(containers) = item["spec"][list].as_array_mut() {
                for container in containers {
                    container["image"] = Value::from("registry.k8s.io/pause:3.10");
                }
            }
        }
        if let Some(spec) = item.get_mut("spec").and_then(Value::as_object_mut)
            && let Some(priority) = spec.remove("priority").and_then(|p| p.as_i64())
        {
            priorities.insert(priority);
            spec.insert(
                "priorityClassName".into(),
                Value::from(format!("p{priority}")),
            );
        }
    }
    for namespace in namespaces {
        ordered.push((
            "Namespace".into(),
            serde_json::json!({"metadata": {"name": namespace}}),
        ));
    }
    for priority in priorities {
        ordered.push((
            "PriorityClass".into(),
            serde_json::json!({"metadata": {"name": format!("p{priority}")}, "value": priority}),
        ));
    }
    Ok(ordered)
}

/// Creates `objects` in the cluster.
async fn load(client: &kube::Client, objects: Vec<(String, Value)>) -> anyhow::Result<()> {
    let ordered = objects;
    // Namespaces and classes, then nodes, then the rest: each stage names the one before.
    let stage = |kind: &str| match kind {
        "Namespace" | "PriorityClass" => 0,
        "Node" => 1,
        _ => 2,
    };
    let total = ordered.len();
    let started = Instant::now();
    let mut done = 0usize;
    for current in 0..3 {
        let batch: Vec<(String, Value)> = ordered
            .iter()
            .filter(|(kind, _)| stage(kind) == current)
            .cloned()
            .collect();
        let mut creates = futures::stream::iter(
            batch
                .into_iter()
                .map(|(kind, item)| create(client.clone(), kind, item)),
        )
        .buffer_unordered(CONCURRENT_CREATES);
        while let Some(result) = creates.next().await {
            result?;
            done += 1;
            if done.is_multiple_of(10_000) || done == total {
                let elapsed = started.elapsed().as_secs_f64();
                eprintln!(
                    "loaded {done}/{total} objects ({:.0}/s)",
                    done as f64 / elapsed.max(1e-9)
                );
            }
        }
    }
    Ok(())
}

/// Creates one object of `kind` (an existing one is left as it is).
async fn create(client: kube::Client, kind: String, mut item: Value) -> anyhow::Result<()> {
    let Some((resource, namespaced)) = resource(&kind) else {
        return Ok(());
    };
    if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("uid");
        meta.remove("resourceVersion");
        meta.remove("creationTimestamp");
    }
    item["apiVersion"] = Value::from(resource.api_version.clone());
    item["kind"] = Value::from(kind.clone());
    let namespace = item["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let api: Api<DynamicObject> = if namespaced {
        Api::namespaced_with(client, &namespace, &resource)
    } else {
        Api::all_with(client, &resource)
    };
    let object: DynamicObject = serde_json::from_value(item)?;
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(anyhow::Error::from(e)),
    }
}

/// A bare list of the five kinds, concurrently, in pages, into typed objects: what an
/// informer's initial list costs.
async fn bare_list(client: &kube::Client) -> anyhow::Result<(Duration, usize, usize)> {
    use k8s_openapi::api::{core::v1, policy::v1 as policy, scheduling::v1 as scheduling};
    async fn all<K>(api: Api<K>) -> anyhow::Result<usize>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let mut params = ListParams::default().limit(PAGE);
        let mut count = 0;
        loop {
            let page = api.list(&params).await?;
            count += page.items.len();
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(count),
            }
        }
    }
    let started = Instant::now();
    let (nodes, pods, pdbs, classes, namespaces) = tokio::try_join!(
        all(Api::<v1::Node>::all(client.clone())),
        all(Api::<v1::Pod>::all(client.clone())),
        all(Api::<policy::PodDisruptionBudget>::all(client.clone())),
        all(Api::<scheduling::PriorityClass>::all(client.clone())),
        all(Api::<v1::Namespace>::all(client.clone())),
    )?;
    Ok((
        started.elapsed(),
        nodes + pods + pdbs + classes + namespaces,
        pods,
    ))
}

/// The pods the cluster holds, when no bare list counted them.
async fn count_pods(client: &kube::Client) -> anyhow::Result<usize> {
    let api: Api<k8s_openapi::api::core::v1::Pod> = Api::all(client.clone());
    let mut params = ListParams::default().limit(PAGE);
    let mut count = 0;
    loop {
        let page = api.list_metadata(&params).await?;
        count += page.items.len();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(count),
        }
    }
}

fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn free_addr() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

fn serving(binary: &PathBuf, addr: std::net::SocketAddr) -> bool {
    Command::new(binary)
        .args(["health", "--addr", &addr.to_string(), "--timeout", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The CPU time (user and system) the process has used: less noisy than wall-clock time
/// on a shared machine.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command, which may hold spaces: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some(ticks as f64 / per_second.max(1) as f64)
}

/// Starts `preemptd serve` with `args`, waits for SERVING; the time, the CPU time and the
/// RSS then.
fn time_to_serving(binary: &PathBuf, args: &[&str]) -> anyhow::Result<(Duration, f64, u64)> {
    let addr = free_addr();
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args([
            "serve",
            "--listen",
            &addr.to_string(),
            "--metrics-listen",
            "off",
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = started + Duration::from_secs(600);
    while !serving(binary, addr) {
        if Instant::now() > deadline {
            let _ = child.kill();
            anyhow::bail!("preemptd not SERVING after 600 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = started.elapsed();
    let cpu = cpu_seconds(child.id()).unwrap_or(0.0);
    // Let the allocator settle what the list's pages used.
    std::thread::sleep(Duration::from_secs(2));
    let rss = rss_bytes(child.id()).unwrap_or(0);
    let _ = child.kill();
    let _ = child.wait();
    Ok((elapsed, cpu, rss))
}

fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut load_file, mut binary, mut runs) = (None, PathBuf::from("target/release/preemptd"), 3);
    let mut list_runs = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--load" => load_file = args.next().map(PathBuf::from),
            "--preemptd" => binary = args.next().map(PathBuf::from).unwrap_or(binary),
            "--runs" => runs = args.next().and_then(|r| r.parse().ok()).unwrap_or(runs),
            // Bare lists (default: as many as --runs); 0 skips them while iterating.
            "--lists" => list_runs = args.next().and_then(|r| r.parse().ok()),
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    let kubeconfig = std::env::var("KUBECONFIG").map_err(|_| {
        anyhow::anyhow!("KUBECONFIG is not set: run through ./upstream/with-kube-apiserver")
    })?;
    let client = kube::Client::try_default().await?;
    // Pods are charged as the push-mode bench charges them: the RSS of preemptd serving
    // the cluster without its pods (nodes, budgets, classes, namespaces, the Kubernetes
    // client) is the baseline. A cluster loaded before has no such state to measure:
    // the baseline is then an idle server.
    let mut without_pods_rss = None;
    if let Some(path) = &load_file {
        let (pod_objects, others): (Vec<_>, Vec<_>) = prepare(path)?
            .into_iter()
            .partition(|(kind, _)| kind == "Pod");
        load(&client, others).await?;
        let (_, _, rss) = time_to_serving(&binary, &["--kubeconfig", &kubeconfig])?;
        eprintln!("without pods: RSS {} MiB", rss >> 20);
        without_pods_rss = Some(rss);
        load(&client, pod_objects).await?;
    }
    let mut lists = Vec::new();
    let (mut objects, mut pods) = (0, 0);
    for _ in 0..list_runs.unwrap_or(runs) {
        let (elapsed, count, pod_count) = bare_list(&client).await?;
        (objects, pods) = (count, pod_count);
        lists.push(elapsed.as_secs_f64());
    }
    if lists.is_empty() {
        pods = count_pods(&client).await?;
    }
    let (_, _, empty_rss) = time_to_serving(&binary, &[])?;
    let baseline_rss = without_pods_rss.unwrap_or(empty_rss);
    let mut servings = Vec::new();
    let mut cpus = Vec::new();
    let mut rsses = Vec::new();
    for run in 0..runs {
        let (elapsed, cpu, rss) = time_to_serving(&binary, &["--kubeconfig", &kubeconfig])?;
        eprintln!(
            "run {run}: SERVING after {:.2} s ({cpu:.2} s of CPU), RSS {} MiB ({:.0} B a pod)",
            elapsed.as_secs_f64(),
            rss >> 20,
            rss.saturating_sub(baseline_rss) as f64 / pods.max(1) as f64
        );
        servings.push(elapsed.as_secs_f64());
        cpus.push(cpu);
        rsses.push(rss);
    }
    let list = if lists.is_empty() {
        f64::NAN
    } else {
        median(lists)
    };
    let serving = median(servings);
    let cpu = median(cpus);
    let rss = median(rsses);
    let per_pod = |baseline: u64| rss.saturating_sub(baseline) as f64 / pods.max(1) as f64;
    println!(
        "{}",
        serde_json::json!({
            "objects": objects,
            "pods": pods,
            "bare_list_seconds": list,
            "time_to_serving_seconds": serving,
            "cpu_to_serving_seconds": cpu,
            "serving_over_list": serving / list,
            "rss_bytes": rss,
            "rss_empty_bytes": empty_rss,
            "rss_without_pods_bytes": without_pods_rss,
            "rss_bytes_per_pod": per_pod(baseline_rss),
            "rss_over_idle_bytes_per_pod": per_pod(empty_rss),
        })
    );
    Ok(())
}
