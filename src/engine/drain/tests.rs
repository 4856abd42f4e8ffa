use std::sync::Arc;

use super::*;
use crate::cache::ClusterCache;
use crate::engine::policy::CriticalPods;
use crate::engine::test_support::{GI, node, pod};
use crate::model::{LabelSelector, Labels, Taint, TaintEffect};

fn labelled(mut p: Pod, app: &str) -> Pod {
    p.labels = [("app", app)].into_iter().collect();
    p
}

fn with_label(mut n: Node, key: &str, value: &str) -> Node {
    let mut pairs: Vec<(Str, Str)> = n
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    pairs.push((key.into(), value.into()));
    n.labels = Labels::new(pairs);
    n
}

fn noticed(mut n: Node) -> Node {
    n.taints.push(Taint {
        key: "karpenter.sh/disrupted".into(),
        value: "".into(),
        // PreferNoSchedule: only the policy keeps pods off (a NoSchedule taint would too).
        effect: TaintEffect::PreferNoSchedule,
    });
    n
}

fn pdb(name: &str, app: &str, disruptions_allowed: i32) -> PodDisruptionBudget {
    PodDisruptionBudget {
        namespace: "default".into(),
        name: name.into(),
        uid: name.into(),
        resource_version: 0,
        selector: Some(LabelSelector {
            match_labels: [("app", app)].into_iter().collect(),
            match_expressions: Vec::new(),
        }),
        disruptions_allowed,
        disrupted_pods: Vec::new(),
    }
}

fn cluster(nodes: Vec<Node>, pods: Vec<Pod>, pdbs: Vec<PodDisruptionBudget>) -> Snapshot {
    let cache = ClusterCache::new();
    for n in nodes {
        cache.upsert_node(n);
    }
    for p in pods {
        cache.upsert_pod(p).expect("pod loads");
    }
    for b in pdbs {
        cache.upsert_pdb(b);
    }
    cache.snapshot()
}

fn drain(snapshot: &Snapshot, nodes: &[&str], policy: Option<Policy>) -> DrainPlan {
    let options = DrainOptions {
        policy: policy.map(Arc::new),
        now: Some(0),
        ..DrainOptions::default()
    };
    plan(snapshot, nodes, &options).expect("plan")
}

/// (pod name, placement) in plan order.
fn placements(plan: &DrainPlan) -> Vec<(String, Placement)> {
    plan.pods
        .iter()
        .map(|p| (p.pod.name.to_string(), p.placement.clone()))
        .collect()
}

fn fits(node: &str) -> Placement {
    Placement::Fits { node: node.into() }
}

fn batch_names(plan: &DrainPlan) -> Vec<Vec<String>> {
    plan.batches
        .iter()
        .map(|batch| {
            batch
                .iter()
                .map(|&i| plan.pods[i].pod.name.to_string())
                .collect()
        })
        .collect()
}

#[test]
fn pods_are_placed_highest_priority_first_counting_earlier_placements() {
    let snapshot = cluster(
        vec![
            node("drained", 8000, 8 * GI),
            node("b", 4000, 8 * GI),
            node("c", 3500, 8 * GI),
        ],
        vec![
            pod("low", 50, 3000, GI, Some("drained")),
            pod("high", 100, 3000, GI, Some("drained")),
        ],
        vec![],
    );
    let plan = drain(&snapshot, &["drained"], None);
    // high: b keeps the larger share of cpu free; low: b has 1000m left once high is there.
    assert_eq!(
        placements(&plan),
        vec![
            ("high".to_string(), fits("b")),
            ("low".to_string(), fits("c"))
        ]
    );
    assert_eq!(plan.pods[0].from_node, Str::from("drained"));
    assert_eq!(plan.pods[0].priority, 100);
}

#[test]
fn equal_candidates_go_to_the_lowest_name_and_ties_in_priority_by_name() {
    let snapshot = cluster(
        vec![
            node("drained", 8000, 8 * GI),
            node("y", 4000, 8 * GI),
            node("x", 4000, 8 * GI),
        ],
        vec![
            pod("p2", 10, 1000, GI, Some("drained")),
            pod("p1", 10, 1000, GI, Some("drained")),
        ],
        vec![],
    );
    let plan = drain(&snapshot, &["drained"], None);
    // p1 first (name); x and y are equal for it: x. Then y has more free for p2.
    assert_eq!(
        placements(&plan),
        vec![("p1".to_string(), fits("x")), ("p2".to_string(), fits("y"))]
    );
}

#[test]
fn a_pod_that_fits_nowhere_needs_preemption_and_its_victims_leave_the_plan_state() {
    let snapshot = cluster(
        vec![node("drained", 8000, 8 * GI), node("b", 4000, 8 * GI)],
        vec![
            pod("web", 100, 3000, GI, Some("drained")),
            pod("batch", 50, 1000, GI, Some("drained")),
            pod("victim", 1, 2000, GI, Some("b")),
        ],
        vec![],
    );
    let plan = drain(&snapshot, &["drained"], None);
    let victim = snapshot.node("b").expect("b").pods[0].pod_ref();
    assert_eq!(
        placements(&plan),
        vec![
            (
                "web".to_string(),
                Placement::Preempt {
                    node: "b".into(),
                    victims: vec![victim],
                }
            ),
            // The victim's 2000m went, web took 3000m: 1000m left for batch.
            ("batch".to_string(), fits("b")),
        ]
    );
}

#[test]
fn a_pod_no_node_can_take_says_why() {
    let snapshot = cluster(
        vec![node("drained", 16000, 8 * GI), node("b", 4000, 8 * GI)],
        vec![pod("huge", 100, 8000, GI, Some("drained"))],
        vec![],
    );
    let plan = drain(&snapshot, &["drained"], None);
    let Placement::Nowhere { reason } = &plan.pods[0].placement else {
        panic!("expected nowhere, got {:?}", plan.pods[0].placement);
    };
    assert!(reason.contains("0/1 nodes are available"), "{reason}");
    assert!(reason.contains("Insufficient cpu"), "{reason}");
}

#[test]
fn under_a_policy_critical_pods_go_to_on_demand_and_the_others_to_spot() {
    let spot = with_label(
        node("spot", 16000, 16 * GI),
        "node.kubernetes.io/capacity",
        "spot",
    );
    let on_demand = with_label(
        node("on-demand", 4000, 8 * GI),
        "node.kubernetes.io/capacity",
        "on-demand",
    );
    let snapshot = cluster(
        vec![node("drained", 16000, 16 * GI), spot, on_demand],
        vec![
            pod("critical", 1000, 1000, GI, Some("drained")),
            pod("ordinary", 10, 1000, GI, Some("drained")),
        ],
        vec![],
    );
    let policy = Policy {
        critical: CriticalPods {
            priority_at_least: Some(1000),
            selector: None,
        },
        ..Policy::default()
    };
    let plan = drain(&snapshot, &["drained"], Some(policy));
    assert_eq!(
        placements(&plan),
        vec![
            ("critical".to_string(), fits("on-demand")),
            ("ordinary".to_string(), fits("spot")),
        ]
    );
    assert!(plan.pods[0].critical);
    assert!(!plan.pods[1].critical);

    // Without the policy the spot node's larger free share wins for both.
    let plan = drain(&snapshot, &["drained"], None);
    assert_eq!(plan.pods[0].placement, fits("spot"));
    assert!(!plan.pods[0].critical);
}

#[test]
fn a_critical_pod_with_only_spot_room_goes_nowhere_naming_the_policy() {
    let spot = with_label(
        node("spot", 16000, 16 * GI),
        "node.kubernetes.io/capacity",
        "spot",
    );
    let snapshot = cluster(
        vec![node("drained", 16000, 16 * GI), spot],
        vec![pod("critical", 1000, 1000, GI, Some("drained"))],
        vec![],
    );
    let policy = Policy {
        critical: CriticalPods {
            priority_at_least: Some(1000),
            selector: None,
        },
        ..Policy::default()
    };
    let plan = drain(&snapshot, &["drained"], Some(policy));
    let Placement::Nowhere { reason } = &plan.pods[0].placement else {
        panic!("expected nowhere, got {:?}", plan.pods[0].placement);
    };
    assert!(reason.contains("critical pods avoid"), "{reason}");
}

#[test]
fn under_a_policy_nodes_with_a_termination_notice_take_no_pod() {
    let spot_noticed = noticed(with_label(
        node("spot-noticed", 16000, 16 * GI),
        "node.kubernetes.io/capacity",
        "spot",
    ));
    let on_demand_noticed = noticed(with_label(
        node("on-demand-noticed", 16000, 16 * GI),
        "node.kubernetes.io/capacity",
        "on-demand",
    ));
    let snapshot = cluster(
        vec![
            node("drained", 16000, 16 * GI),
            spot_noticed,
            on_demand_noticed,
            node("plain", 2000, 4 * GI),
        ],
        vec![pod("app", 10, 1000, GI, Some("drained"))],
        vec![],
    );
    let plan = drain(&snapshot, &["drained"], Some(Policy::default()));
    assert_eq!(plan.pods[0].placement, fits("plain"));
    let noticed: Vec<&str> = plan.noticed_nodes.iter().map(|(n, _)| &**n).collect();
    assert_eq!(noticed, vec!["on-demand-noticed", "spot-noticed"]);
    assert_eq!(plan.noticed_nodes[0].1, "taint karpenter.sh/disrupted");

    // Without a policy the notice means nothing: the larger node wins.
    let plan = drain(&snapshot, &["drained"], None);
    assert_ne!(plan.pods[0].placement, fits("plain"));
    assert!(plan.noticed_nodes.is_empty());
}

#[test]
fn batches_stay_within_every_budget_and_a_zero_budget_blocks() {
    let on_drained = |name: &str, app: &str, priority: i32| {
        labelled(pod(name, priority, 100, GI / 8, Some("drained")), app)
    };
    let snapshot = cluster(
        vec![node("drained", 8000, 8 * GI), node("b", 8000, 8 * GI)],
        vec![
            on_drained("web-1", "web", 30),
            on_drained("web-2", "web", 20),
            on_drained("web-3", "web", 10),
            on_drained("db-1", "db", 40),
            on_drained("free", "none", 5),
        ],
        vec![pdb("web", "web", 2), pdb("db", "db", 0)],
    );
    let plan = drain(&snapshot, &["drained"], None);
    assert_eq!(
        batch_names(&plan),
        vec![vec!["web-1", "web-2", "free"], vec!["web-3"],]
    );
    assert_eq!(plan.pods[0].pod.name, Str::from("db-1"));
    assert_eq!(
        plan.pods[0].eviction,
        Eviction::BlockedBy {
            namespace: "default".into(),
            name: "db".into()
        }
    );
    // Blocked or not, every pod is placed.
    assert!(plan.pods.iter().all(|p| p.placement == fits("b")));
    assert_eq!(plan.pods[1].eviction, Eviction::Batch(0));
    assert_eq!(plan.pods[3].eviction, Eviction::Batch(1));
}

#[test]
fn a_pod_that_fits_nowhere_uses_its_budget_for_good() {
    let on_drained = |name: &str, priority: i32, cpu_milli: i64| {
        labelled(
            pod(name, priority, cpu_milli, GI / 8, Some("drained")),
            "web",
        )
    };
    let pods = vec![
        on_drained("web-1", 40, 16000),
        on_drained("web-2", 30, 100),
        on_drained("web-3", 20, 100),
        on_drained("web-4", 10, 100),
    ];
    let nodes = || vec![node("drained", 32000, 8 * GI), node("b", 8000, 8 * GI)];
    let snapshot = cluster(nodes(), pods.clone(), vec![pdb("web", "web", 2)]);
    let plan = drain(&snapshot, &["drained"], None);
    assert!(matches!(plan.pods[0].placement, Placement::Nowhere { .. }));
    // web-1 never runs again: after its batch the budget allows one at a time.
    assert_eq!(
        batch_names(&plan),
        vec![vec!["web-1", "web-2"], vec!["web-3"], vec!["web-4"]]
    );

    // With one disruption allowed, web-1's leaves none for the others.
    let snapshot = cluster(nodes(), pods, vec![pdb("web", "web", 1)]);
    let plan = drain(&snapshot, &["drained"], None);
    assert_eq!(batch_names(&plan), vec![vec!["web-1"]]);
    let blocked = Eviction::BlockedBy {
        namespace: "default".into(),
        name: "web".into(),
    };
    assert!(plan.pods[1..].iter().all(|p| p.eviction == blocked));
}

#[test]
fn pods_of_other_nodes_and_several_drained_nodes() {
    let snapshot = cluster(
        vec![
            node("a", 4000, 8 * GI),
            node("b", 4000, 8 * GI),
            node("c", 4000, 8 * GI),
        ],
        vec![
            pod("on-a", 20, 2000, GI, Some("a")),
            pod("on-b", 10, 2000, GI, Some("b")),
            pod("on-c", 10, 1000, GI, Some("c")),
        ],
        vec![],
    );
    // a and b both go: nothing lands on either; c holds 1000m already, so the second
    // pod does not fit after the first.
    let plan = drain(&snapshot, &["b", "a", "a"], None);
    assert_eq!(plan.pods.len(), 2);
    assert_eq!(plan.pods[0].placement, fits("c"));
    assert_eq!(plan.pods[0].from_node, Str::from("a"));
    assert!(matches!(plan.pods[1].placement, Placement::Nowhere { .. }));
}

#[test]
fn unknown_or_missing_nodes_are_refused() {
    let snapshot = cluster(vec![node("a", 4000, 8 * GI)], vec![], vec![]);
    let options = DrainOptions::default();
    assert_eq!(
        plan(&snapshot, &["a", "ghost"], &options).unwrap_err(),
        DrainError::UnknownNode {
            index: 1,
            name: "ghost".to_string()
        }
    );
    assert_eq!(
        plan(&snapshot, &[] as &[&str], &options).unwrap_err(),
        DrainError::NoNodes
    );
    let empty = plan(&snapshot, &["a"], &options).expect("plan");
    assert!(empty.pods.is_empty() && empty.batches.is_empty());
}

#[test]
fn explain_keeps_each_decisions_diagnostics() {
    let snapshot = cluster(
        vec![node("drained", 8000, 8 * GI), node("b", 4000, 8 * GI)],
        vec![pod("app", 10, 1000, GI, Some("drained"))],
        vec![],
    );
    let options = DrainOptions {
        explain: true,
        ..DrainOptions::default()
    };
    let explained = plan(&snapshot, &["drained"], &options).expect("plan");
    let nodes: Vec<&str> = explained.pods[0]
        .diagnostics
        .iter()
        .map(|d| &*d.node)
        .collect();
    assert_eq!(nodes, vec!["b"]);
    assert!(
        drain(&snapshot, &["drained"], None).pods[0]
            .diagnostics
            .is_empty()
    );
}
