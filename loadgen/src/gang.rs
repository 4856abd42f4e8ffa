//! `preemptd bench --gang`: dry-run `PreemptGroup` latency on kubernetes#140651's shape
//! (1,000 nodes, 10,000 potential victims — plain pods and members of `single`- and
//! `all`-mode gangs) for pending gangs of 8, 32 and 64 members, against a server answering as
//! kubernetes 1.37 with GenericWorkload on. With `--write-scenarios DIR` it writes the same
//! objects as Kubernetes JSON instead (`DIR/gang/`, the layout `upstream/bench-vs-upstream
//! --gang` reads), so upstream's PodGroupPostFilter is timed on exactly what preemptd is.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use prost::Message as _;
use serde_json::{Map, Value, json};

use pb::preemption_client::PreemptionClient;
use preemptd::generate::gangs::{self, GangClusterSpec, PendingGang};
use preemptd::model::{DisruptionMode, PodGroup, SchedulingPolicy};
use preemptd::server::{messages, pb};

use crate::BenchArgs;
use crate::client::{check_sync, connect, sync_stream};
use crate::grpc;
use crate::report::{Latency, histogram};
use crate::scenarios::{node_json, pod_json, write_list};
use crate::server_process::ChildServer;

/// The gang sizes of kubernetes#140651.
pub const GANG_SIZES: [usize; 3] = [8, 32, 64];

/// The server flags group preemption needs.
const SERVER_FLAGS: [&str; 4] = [
    "--kubernetes-version",
    "1.37",
    "--feature-gates",
    "GenericWorkload=true",
];

/// Pending gangs of each size: the calls cycle over them (a dry run changes nothing, so
/// each answers the same way every time; several keep the cache lines honest).
fn gangs_per_size(args: &BenchArgs) -> u64 {
    args.gang_count.max(1)
}

fn spec(args: &BenchArgs) -> GangClusterSpec {
    GangClusterSpec {
        nodes: args.gang_nodes,
        pods_per_node: args.gang_pods_per_node,
        seed: args.seed,
    }
}

fn pending(args: &BenchArgs) -> Vec<(usize, Vec<PendingGang>)> {
    GANG_SIZES
        .iter()
        .map(|&size| {
            let gangs = (0..gangs_per_size(args))
                .map(|i| gangs::pending_gang(size, i))
                .collect();
            (size, gangs)
        })
        .collect()
}

/// Measures every gang size; prints a line per size and, last, one JSON object.
pub(super) async fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let spec = spec(args);
    println!(
        "== gang preemption: {} nodes x {} running pods per node (seed {}), gangs of {:?}",
        spec.nodes, spec.pods_per_node, spec.seed, GANG_SIZES
    );
    let server = ChildServer::start_with(&SERVER_FLAGS.map(String::from)).await?;
    let channel = connect(server.addr).await?;
    let cluster = gangs::gang_cluster(&spec);
    let pending = pending(args);
    let items = sync_items(&cluster, &pending);
    let connection = grpc::Connection::open(server.addr).await?;
    let t = Instant::now();
    let response = sync_stream(&connection, &items, "sync gang cluster").await?;
    check_sync(&response, items.len())?;
    println!(
        "loaded {} objects in {:.1}s",
        items.len(),
        t.elapsed().as_secs_f64()
    );

    let mut client = PreemptionClient::new(channel);
    let mut json = Map::new();
    let mut all = histogram();
    for (size, gangs) in &pending {
        let (latency, outcome, victims) = measure_size(&mut client, args, gangs).await?;
        println!(
            "gangs of {size:>2}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {} calls ({outcome}, {victims} victims)",
            latency.0.p50_ms, latency.0.p99_ms, latency.0.max_ms, latency.0.count
        );
        json.insert(
            format!("gang_preempt_{size}_p50_ms"),
            json!(latency.0.p50_ms),
        );
        json.insert(
            format!("gang_preempt_{size}_p99_ms"),
            json!(latency.0.p99_ms),
        );
        json.insert(format!("gang_preempt_{size}_victims"), json!(victims));
        all.add(&latency.1).context("merge histograms")?;
    }
    let overall = Latency::from_histogram(&all, 0.0);
    json.insert("gang_preempt_p50_ms".into(), json!(overall.p50_ms));
    json.insert("gang_preempt_p99_ms".into(), json!(overall.p99_ms));
    json.insert("nodes".into(), json!(spec.nodes));
    json.insert("potential_victims".into(), json!(cluster.pods.len()));
    println!(
        "all gangs: p50 {:.2} ms, p99 {:.2} ms",
        overall.p50_ms, overall.p99_ms
    );
    println!("{}", Value::Object(json));
    Ok(())
}

/// Dry-run calls for one size, cycling over its gangs, up to `--preempts` calls or
/// `--duration`. Every answer must be a preemption: anything else means the shape no
/// longer measures what it claims to.
async fn measure_size(
    client: &mut PreemptionClient<tonic::transport::Channel>,
    args: &BenchArgs,
    gangs: &[PendingGang],
) -> anyhow::Result<((Latency, hdrhistogram::Histogram<u64>), String, usize)> {
    let request = |i: u64| {
        let group = &gangs[(i % gangs.len() as u64) as usize].group;
        pb::PreemptGroupRequest {
            group: Some(pb::preempt_group_request::Group::GroupRef(
                pb::PodGroupRef {
                    namespace: group.namespace.to_string(),
                    name: group.name.to_string(),
                    uid: String::new(),
                },
            )),
            dry_run: true,
            ..Default::default()
        }
    };
    let first = client
        .preempt_group(request(0))
        .await
        .context("preempt group (warm-up)")?
        .into_inner();
    let outcome = pb::Outcome::try_from(first.outcome).map_or("UNKNOWN", |o| o.as_str_name());
    if first.outcome != pb::Outcome::Preempt as i32 {
        bail!(
            "a pending gang of {} answered {outcome} ({}): the bench expects a preemption",
            gangs[0].members.len(),
            first.message
        );
    }
    let mut hist = histogram();
    let cap = Duration::from_secs_f64(args.duration);
    let started = Instant::now();
    for i in 0..args.preempts {
        if started.elapsed() >= cap {
            break;
        }
        let t = Instant::now();
        client
            .preempt_group(request(i))
            .await
            .context("preempt group")?;
        hist.saturating_record(t.elapsed().as_micros() as u64);
    }
    let latency = Latency::from_histogram(&hist, started.elapsed().as_secs_f64());
    Ok(((latency, hist), outcome.to_string(), first.victims.len()))
}

/// Nodes, PodGroups (running and pending), running pods, then pending members, each as
/// an encoded `SyncRequest`.
fn sync_items(cluster: &gangs::GangCluster, pending: &[(usize, Vec<PendingGang>)]) -> Vec<Bytes> {
    use pb::sync_request::Item;
    let encode = |item: Item| Bytes::from(pb::SyncRequest { item: Some(item) }.encode_to_vec());
    let group_item = |g: &PodGroup| {
        encode(Item::PodGroup(pb::UpdatePodGroupRequest {
            change: Some(pb::update_pod_group_request::Change::Upsert(
                messages::pod_group_message(g),
            )),
        }))
    };
    let pod_item = |p: &preemptd::model::Pod| {
        encode(Item::Pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(
                messages::pod_message(p),
            )),
        }))
    };
    let gangs = pending.iter().flat_map(|(_, gangs)| gangs);
    cluster
        .nodes
        .iter()
        .map(|n| {
            encode(Item::Node(pb::UpdateNodeRequest {
                change: Some(pb::update_node_request::Change::Upsert(
                    messages::node_message(n),
                )),
            }))
        })
        .chain(cluster.pod_groups.iter().map(group_item))
        .chain(gangs.clone().map(|g| group_item(&g.group)))
        .chain(cluster.pods.iter().map(pod_item))
        .chain(gangs.flat_map(|g| g.members.iter().map(pod_item)))
        .collect()
}

/// Writes `DIR/gang/cluster.json` (Nodes, PodGroups, running pods, pending members) and
/// `DIR/gang/groups-SIZE.json` (the PodGroup preemptors of each size, in call order).
pub(super) fn write_scenarios(args: &BenchArgs, dir: &Path) -> anyhow::Result<()> {
    let out = dir.join("gang");
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    let cluster = gangs::gang_cluster(&spec(args));
    let pending = pending(args);
    let gangs = pending.iter().flat_map(|(_, gangs)| gangs);
    let items = cluster
        .nodes
        .iter()
        .map(node_json)
        .chain(cluster.pod_groups.iter().map(pod_group_json))
        .chain(cluster.pods.iter().map(pod_json))
        .chain(gangs.flat_map(|g| g.members.iter().map(pod_json)));
    write_list(&out.join("cluster.json"), items)?;
    for (size, gangs) in &pending {
        let groups = gangs.iter().map(|g| pod_group_json(&g.group));
        write_list(&out.join(format!("groups-{size}.json")), groups)?;
    }
    println!("gang scenarios written to {}", out.display());
    Ok(())
}

/// A scheduling.k8s.io/v1beta1 PodGroup.
pub(crate) fn pod_group_json(group: &PodGroup) -> Value {
    let policy = match group.policy {
        SchedulingPolicy::Basic => json!({"basic": {}}),
        SchedulingPolicy::Gang { min_count } => json!({"gang": {"minCount": min_count}}),
    };
    let mode = match group.disruption_mode {
        DisruptionMode::Single => json!({"single": {}}),
        DisruptionMode::All => json!({"all": {}}),
    };
    let mut spec = json!({"schedulingPolicy": policy, "disruptionMode": mode});
    if !group.priority_unset {
        spec["priority"] = json!(group.priority);
    }
    if let Some(class) = &group.priority_class_name {
        spec["priorityClassName"] = json!(&**class);
    }
    json!({
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "namespace": &*group.namespace,
            "name": &*group.name,
            "uid": &*group.uid,
            "resourceVersion": group.resource_version.to_string(),
        },
        "spec": spec,
    })
}
