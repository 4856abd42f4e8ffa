//! The cache's sums stay exact: any sequence of pod upserts and deletes, with quantities
//! from the ordinary to far beyond int64, leaves every node's totals, priority levels and
//! digest equal to those of a cache built from the surviving pods alone.

use std::collections::BTreeMap;

use preemptd::cache::ClusterCache;
use preemptd::model::Pod;
use preemptd::model::decode::{decode_node, decode_pod};
use proptest::prelude::*;
use serde_json::json;

const NODES: [&str; 2] = ["n1", "n2"];

#[derive(Clone, Debug)]
enum Op {
    Upsert {
        pod: usize,
        node: usize,
        priority: i32,
        cpu: String,
        memory: String,
        storage: String,
    },
    Delete {
        pod: usize,
    },
}

/// Quantities the API server accepts, weighted towards the ones whose readings or sums
/// leave int64.
fn quantity() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "1",
            "250m",
            "2Gi",
            "1E",
            "8Ei",
            "1e30",
            "1e40",
            "9223372036854775",
            "9223372036854775807",
            "4611686018427387904",
            "12345678901234567890",
            "0.000000000000000000001",
        ])
        .prop_map(String::from),
        any::<u64>().prop_map(|v| v.to_string()),
        (any::<u32>(), 0u32..40).prop_map(|(m, e)| format!("{m}e{e}")),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..6, 0usize..2, prop::sample::select(vec![0, 5, 100]), quantity(), quantity(), quantity())
            .prop_map(|(pod, node, priority, cpu, memory, storage)| Op::Upsert {
                pod,
                node,
                priority,
                cpu,
                memory,
                storage,
            }),
        1 => (0usize..6).prop_map(|pod| Op::Delete { pod }),
    ]
}

fn pod(
    index: usize,
    node: usize,
    priority: i32,
    cpu: &str,
    memory: &str,
    storage: &str,
) -> Option<Pod> {
    decode_pod(&json!({
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": format!("p{index}"), "uid": format!("u{index}")},
        "spec": {
            "nodeName": NODES[node],
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {
                "cpu": cpu, "memory": memory, "ephemeral-storage": storage,
            }}}],
        },
        "status": {"phase": "Running"},
    }))
    .ok()
}

fn cache_with_nodes() -> ClusterCache {
    let cache = ClusterCache::new();
    for name in NODES {
        let node = decode_node(&json!({
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }))
        .expect("node");
        cache.upsert_node(node);
    }
    cache
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn upserts_and_deletes_leave_the_sums_of_the_survivors(ops in prop::collection::vec(op(), 1..40)) {
        let cache = cache_with_nodes();
        let mut survivors = BTreeMap::new();
        for op in &ops {
            match op {
                Op::Upsert { pod: index, node, priority, cpu, memory, storage } => {
                    // A pod the builder refuses is not applied (its old version stays).
                    if let Some(pod) = pod(*index, *node, *priority, cpu, memory, storage) {
                        cache.upsert_pod(pod.clone()).expect("upsert");
                        survivors.insert(*index, pod);
                    }
                }
                Op::Delete { pod: index } => {
                    let deleted = cache.delete_pod("default", &format!("p{index}"), None);
                    prop_assert_eq!(deleted.is_ok(), survivors.remove(index).is_some());
                }
            }
        }
        let rebuilt = cache_with_nodes();
        for pod in survivors.into_values() {
            rebuilt.upsert_pod(pod).expect("upsert");
        }
        let (after, fresh) = (cache.snapshot(), rebuilt.snapshot());
        for name in NODES {
            let (a, b) = (after.node(name).expect("node"), fresh.node(name).expect("node"));
            prop_assert_eq!(&a.requested, &b.requested, "{} totals", name);
            prop_assert_eq!(&a.levels, &b.levels, "{} levels", name);
            let (i, j) = (after.node_index(name).unwrap(), fresh.node_index(name).unwrap());
            prop_assert_eq!(after.summaries[i], fresh.summaries[j], "{} digest", name);
        }
    }
}
