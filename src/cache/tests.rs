use super::*;
use crate::model::{Labels, Resources};

/// The prefetching walk visits exactly the entries of its range, in snapshot order,
/// across the persistent vector's leaves and past its end.
#[test]
fn prefetched_walk_visits_the_range_in_order() {
    let cluster = crate::generate::generate(&crate::generate::ClusterSpec {
        nodes: 300,
        pods_per_node: 1,
        seed: 3,
    });
    let snapshot = cluster.into_cache().snapshot();
    let all: Vec<Str> = snapshot.nodes.iter().map(|n| n.name.clone()).collect();
    for range in [0..300, 0..0, 5..6, 63..65, 100..250, 290..400, 400..500] {
        let mut seen = Vec::new();
        snapshot.for_each_node_prefetched(range.clone(), |n| seen.push(n.name.clone()));
        let end = range.end.min(all.len());
        let expected = &all[range.start.min(end)..end];
        assert_eq!(seen, expected, "range {range:?}");
    }
}

/// Digests name nodes' hard taints by interned id: pod changes keep it, a node change
/// moves it, and past `MAX_TAINT_SETS` distinct sets nodes are read instead.
#[test]
fn taint_sets_are_interned_up_to_the_cap() {
    use crate::model::{Taint, TaintEffect};
    let cluster = crate::generate::generate(&crate::generate::ClusterSpec {
        nodes: 2,
        pods_per_node: 2,
        seed: 5,
    });
    let cache = ClusterCache::new();
    let tainted = |name: &str, value: &str| {
        let mut node = cluster.nodes[0].clone();
        node.name = name.into();
        node.uid = format!("uid-{name}").into();
        node.taints = vec![Taint {
            key: "dedicated".into(),
            value: value.into(),
            effect: TaintEffect::NoSchedule,
        }];
        node
    };
    let set_of = |name: &str| {
        let snapshot = cache.snapshot();
        snapshot.summaries[snapshot.node_index(name).unwrap()].taint_set
    };
    cache.upsert_node(tainted("a", "x"));
    cache.upsert_node(tainted("b", "x"));
    let mut plain = cluster.nodes[1].clone();
    plain.taints.clear();
    plain.unschedulable = false;
    cache.upsert_node(plain.clone());
    assert_eq!(set_of("a"), 1);
    assert_eq!(set_of("b"), 1);
    assert_eq!(set_of(&plain.name), NO_HARD_TAINTS);
    let mut pod = cluster.pods[0].clone();
    pod.node_name = Some("a".into());
    cache.upsert_pod(pod).unwrap();
    assert_eq!(set_of("a"), 1);
    cache.upsert_node(tainted("a", "y"));
    assert_eq!(set_of("a"), 2);
    assert_eq!(set_of("b"), 1);
    for i in 0..MAX_TAINT_SETS {
        cache.upsert_node(tainted(&format!("n{i}"), &format!("v{i}")));
    }
    // "x" and "y" took two ids: the last two new sets find the table full.
    assert_eq!(
        set_of(&format!("n{}", MAX_TAINT_SETS - 3)),
        MAX_TAINT_SETS as u16
    );
    assert_eq!(set_of(&format!("n{}", MAX_TAINT_SETS - 2)), READ_NODE);
    assert_eq!(set_of(&format!("n{}", MAX_TAINT_SETS - 1)), READ_NODE);
    // Known sets still get their id.
    cache.upsert_node(tainted("c", "x"));
    assert_eq!(set_of("c"), 1);
    let snapshot = cache.snapshot();
    assert_eq!(snapshot.taint_sets.len(), MAX_TAINT_SETS);
    assert_eq!(&*snapshot.taint_sets[1].taints[0].value, "y");
}

/// Held pods share their common strings and details and keep the derived requests, not the
/// container specs they came from.
#[test]
fn held_pods_share_strings_and_details_and_keep_derived_requests() {
    let cluster = crate::generate::generate(&crate::generate::ClusterSpec {
        nodes: 2,
        pods_per_node: 2,
        seed: 5,
    });
    let cache = cluster.into_cache();
    let fresh = |name: &str| {
        let mut pod = Pod::new(&String::from("team-a"), name, &format!("uid-{name}"));
        pod.labels = [("app", "web")].into_iter().collect();
        pod.node_name = Some(String::from("node-000000").into());
        pod.details_mut().tolerations = vec![crate::model::Toleration {
            key: "dedicated".into(),
            operator: crate::model::TolerationOperator::Exists,
            value: "".into(),
            effect: None,
        }]
        .into();
        pod.details_mut().containers = vec![crate::model::Container {
            name: "main".into(),
            requests: crate::model::ContainerResources::new(vec![(
                "cpu".into(),
                crate::model::quantity::Quantity::parse("250m").unwrap(),
            )]),
            ports: Vec::new(),
            restart_always: false,
            image: "".into(),
        }];
        pod.finish()
    };
    let (a, b) = (fresh("a"), fresh("b"));
    let requests = a.requests().clone();
    assert!(!Arc::ptr_eq(&a.namespace, &b.namespace));
    cache.upsert_pod(a).unwrap();
    cache.upsert_pod(b).unwrap();
    let (a, b) = (
        cache.get_pod("uid-a").unwrap(),
        cache.get_pod("uid-b").unwrap(),
    );
    assert!(Arc::ptr_eq(&a.namespace, &b.namespace));
    assert!(a.labels.ptr_eq(&b.labels));
    let (ka, va) = a.labels.iter().next().unwrap();
    let (kb, vb) = b.labels.iter().next().unwrap();
    assert!(Arc::ptr_eq(ka, kb) && Arc::ptr_eq(va, vb));
    assert!(Arc::ptr_eq(
        a.node_name.as_ref().unwrap(),
        b.node_name.as_ref().unwrap()
    ));
    assert!(a.details.containers.is_empty());
    assert!(Arc::ptr_eq(&a.details, &b.details));
    assert_eq!(&*a.details.tolerations[0].key, "dedicated");
    assert_eq!(a.requests(), &requests);
    assert_eq!(a.requests().milli_cpu, 250);
}

/// A batch gives the same results and the same node entries as one call per pod,
/// including a pod moving between nodes and a stale version within the batch.
#[test]
fn batched_pod_upserts_equal_single_upserts() {
    let cluster = crate::generate::generate(&crate::generate::ClusterSpec {
        nodes: 20,
        pods_per_node: 6,
        seed: 5,
    });
    let mut pods = cluster.pods.clone();
    let mut moved = pods[0].clone();
    moved.node_name = Some(cluster.nodes[3].name.clone());
    moved.resource_version = 2;
    let mut stale = pods[1].clone();
    stale.resource_version = 0;
    stale.labels = Labels::default();
    let mut older = pods[2].clone();
    older.resource_version = 1;
    let mut anti = crate::generate::affinity_preemptor(1);
    anti.node_name = Some(cluster.nodes[4].name.clone());
    // Within one run of the indexes' locking (a pod and then its update, a name then
    // another uid under it): each looked up after the change before it.
    let mut again = pods[100].clone();
    again.resource_version = 7;
    let mut clash = Pod::new(&pods[101].namespace, pods[101].name(), "uid-clash");
    clash.node_name = pods[101].node_name.clone();
    pods.extend([
        moved,
        stale,
        older,
        pods[2].clone(),
        anti,
        again,
        clash.finish(),
    ]);
    // Pods before their node (orphans), then the nodes, then more pods.
    let (single, batched) = (ClusterCache::new(), ClusterCache::new());
    let (early, late) = pods.split_at(10);
    let mut single_results: Vec<_> = early
        .iter()
        .map(|p| single.upsert_pod_with_nominations(p.clone()))
        .collect();
    let mut batched_results = batched.upsert_pods(early.to_vec());
    for n in &cluster.nodes {
        single.upsert_node(n.clone());
        batched.upsert_node(n.clone());
    }
    single_results.extend(
        late.iter()
            .map(|p| single.upsert_pod_with_nominations(p.clone())),
    );
    batched_results.extend(batched.upsert_pods(late.to_vec()));
    assert!(late.len() > INDEX_RUN, "the batch spans runs");
    assert!(matches!(
        batched_results.last(),
        Some(Err(CacheError::NameConflict { .. }))
    ));
    assert_eq!(single_results, batched_results);
    let (a, b) = (single.snapshot(), batched.snapshot());
    assert_eq!(a.nodes.len(), b.nodes.len());
    assert_eq!(a.revision, b.revision);
    for node in &a.nodes {
        let other = b.node(&node.name).expect("same nodes");
        let uids = |n: &NodeInfo| {
            let mut v: Vec<Str> = n.pods.iter().map(|p| Str::from(p.uid())).collect();
            v.sort();
            v
        };
        assert_eq!(uids(node), uids(other));
        assert_eq!(node.requested, other.requested);
        assert_eq!(node.levels, other.levels);
        assert_eq!(node.label_counts, other.label_counts);
        assert_eq!(node.nominated.len(), other.nominated.len());
    }
    assert_eq!(single.counts(), batched.counts());
    let anti_nodes = |c: &ClusterCache| c.table.lock().anti_affinity_nodes;
    assert_eq!(anti_nodes(&single), 1);
    assert_eq!(anti_nodes(&batched), 1);
}

#[test]
fn label_index_counts_pods_by_label_id() {
    let mut pod = Pod::new("ns", "p", "u");
    pod.labels = [("app", "web")].into_iter().collect();
    pod.node_name = Some("n".into());
    let cache = ClusterCache::new();
    cache.upsert_pod(pod.clone()).unwrap();
    let mut gone = Pod::new("ns", "q", "v");
    gone.labels = [("app", "web")].into_iter().collect();
    gone.node_name = Some("n".into());
    gone.terminating = true;
    cache.upsert_pod(gone).unwrap();
    let count = |live: bool| {
        let table = cache.table.lock();
        let id = table.labels.read().get("ns", "app", "web");
        id.map_or(0, |id| table.get("n").unwrap().count_label(id, live))
    };
    assert_eq!(count(false), 2);
    assert_eq!(count(true), 1);
    assert_eq!(
        cache.table.lock().labels.read().get("other", "app", "web"),
        None
    );
    cache.delete_pod("ns", "p", None).unwrap();
    assert_eq!(count(true), 0);
    assert_eq!(count(false), 1);
    cache.delete_pod("ns", "q", None).unwrap();
    let table = cache.table.lock();
    assert_eq!(
        table.labels.read().get("ns", "app", "web"),
        None,
        "forgotten"
    );
    assert!(table.get("n").is_none_or(|n| n.label_counts.is_empty()));
}

#[test]
fn pods_wait_for_their_node_and_moves_update_both_nodes() {
    let cache = ClusterCache::new();
    let mut pod = Pod::new("ns", "p", "u");
    pod.node_name = Some("a".into());
    cache.upsert_pod(pod.clone().finish()).unwrap();
    assert!(cache.snapshot().nodes.is_empty(), "no node yet");
    let node = |name: &str| Node {
        name: name.into(),
        uid: name.into(),
        resource_version: 0,
        labels: Labels::default(),
        taints: vec![],
        unschedulable: false,
        annotations: Default::default(),
        conditions: Vec::new(),
        images: Vec::new(),
        allocatable: Resources::default(),
    };
    cache.upsert_node(node("a"));
    cache.upsert_node(node("b"));
    assert_eq!(cache.snapshot().node("a").unwrap().pods.len(), 1);
    pod.node_name = Some("b".into());
    cache.upsert_pod(pod.finish()).unwrap();
    let snap = cache.snapshot();
    assert_eq!(snap.node("a").unwrap().pods.len(), 0);
    assert_eq!(snap.node("b").unwrap().pods.len(), 1);
    cache.delete_node("a").unwrap();
    assert!(cache.snapshot().node("a").is_none());
    assert!(matches!(
        cache.delete_node("a"),
        Err(CacheError::NotFound { .. })
    ));
    assert_eq!(cache.snapshot().node("b").unwrap().pods.len(), 1);
}

#[test]
fn stale_updates_are_not_applied_and_terminal_pods_leave() {
    let cache = ClusterCache::new();
    let mut pod = Pod::new("ns", "p", "u");
    pod.resource_version = 5;
    assert!(cache.upsert_pod(pod.clone()).unwrap().applied);
    pod.resource_version = 4;
    let outcome = cache.upsert_pod(pod.clone()).unwrap();
    assert!(!outcome.applied);
    assert_eq!(outcome.resource_version, 5);
    pod.resource_version = 6;
    pod.phase = crate::model::PodPhase::Succeeded;
    assert!(cache.upsert_pod(pod).unwrap().applied);
    assert!(cache.get_pod("u").is_none());
    // A different uid under the same name is refused.
    let mut first = Pod::new("ns", "x", "1");
    first.resource_version = 1;
    cache.upsert_pod(first).unwrap();
    assert!(matches!(
        cache.upsert_pod(Pod::new("ns", "x", "2")),
        Err(CacheError::NameConflict { .. })
    ));
}

/// Compacting leaves no spare room in node entries' lists and changes nothing else a
/// decision reads.
#[test]
fn compacted_node_lists_are_exact() {
    let cluster = crate::generate::generate(&crate::generate::ClusterSpec {
        nodes: 1100,
        pods_per_node: 5,
        seed: 9,
    });
    let cache = ClusterCache::new();
    for node in &cluster.nodes {
        cache.upsert_node(node.clone());
    }
    // Small batches, as a watch delivers them: each copies its entries, then grows them.
    for batch in cluster.pods.chunks(7) {
        cache.upsert_pods(batch.to_vec());
    }
    let before = cache.snapshot();
    let spare = |s: &Snapshot| s.nodes.iter().filter(|n| n.has_spare_capacity()).count();
    assert!(spare(&before) > 0, "the batches left room to compact");
    cache.compact_nodes();
    let after = cache.snapshot();
    assert_eq!(spare(&after), 0);
    assert_eq!(before.revision, after.revision);
    for (old, new) in before.nodes.iter().zip(after.nodes.iter()) {
        assert_eq!(old.name, new.name);
        assert_eq!(old.generation, new.generation);
        assert_eq!(old.pods.len(), new.pods.len());
        assert!(
            old.pods
                .iter()
                .zip(&new.pods)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        );
        assert_eq!(old.label_counts, new.label_counts);
        assert_eq!(old.levels, new.levels);
        assert_eq!(old.requested, new.requested);
    }
}
