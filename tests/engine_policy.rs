//! The placement policy through the library: each rule changes the decision as it says
//! and names the change in the diagnostics; without a policy, or where no rule applies,
//! decisions are upstream's.

mod common;

use std::sync::Arc;

use common::*;
use preemptd::cache::ClusterCache;
use preemptd::engine::policy::{CriticalPods, PLUGIN};
use preemptd::engine::{self, Code, DecideOptions, Decision, Outcome, PdbMode, Policy};
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::{Node, Pod, TaintEffect, Toleration, TolerationOperator};

const GI: i64 = 1 << 30;
const NOW: i64 = 1_000_000 * 1_000_000_000;

fn decide_with(cache: &ClusterCache, preemptor: &Pod, policy: Option<Policy>) -> Decision {
    decide_opts(cache, preemptor, policy, None, true)
}

fn decide_opts(
    cache: &ClusterCache,
    preemptor: &Pod,
    policy: Option<Policy>,
    pdb_mode: Option<PdbMode>,
    explain: bool,
) -> Decision {
    engine::decide(
        &cache.snapshot(),
        preemptor,
        &DecideOptions {
            explain,
            now: Some(NOW),
            policy: policy.map(Arc::new),
            pdb_mode,
            ..DecideOptions::default()
        },
    )
}

fn spot(node: Node) -> Node {
    with_labels(node, &[("karpenter.sh/capacity-type", "spot")])
}

fn on_demand(node: Node) -> Node {
    with_labels(node, &[("karpenter.sh/capacity-type", "on-demand")])
}

/// Tolerates every taint, as DaemonSet-like and blanket-tolerating pods do.
fn tolerating_all(mut p: Pod) -> Pod {
    p.details_mut().tolerations.push(Toleration {
        key: "".into(),
        operator: TolerationOperator::Exists,
        value: "".into(),
        effect: None,
    });
    p
}

fn diagnostic<'d>(d: &'d Decision, node: &str) -> &'d engine::NodeDiagnostic {
    d.diagnostics
        .iter()
        .find(|n| &*n.node == node)
        .unwrap_or_else(|| panic!("no diagnostic for {node}"))
}

fn critical_at(priority: i32) -> Policy {
    Policy {
        critical: CriticalPods {
            priority_at_least: Some(priority),
            selector: None,
        },
        ..Policy::default()
    }
}

/// Two full nodes: `cheap` holds a priority-1 pod, `dear` a priority-5 one; upstream
/// preempts on `cheap`.
fn two_full_nodes(cheap: Node, dear: Node) -> ClusterCache {
    let (a, b) = (cheap.name.to_string(), dear.name.to_string());
    Cluster::new(
        vec![cheap, dear],
        vec![
            pod("low", 1, 1000, 0, Some(&a)),
            pod("mid", 5, 1000, 0, Some(&b)),
        ],
        vec![],
    )
    .cache
}

#[test]
fn a_spot_node_with_a_termination_notice_is_dropped_and_named() {
    let noticed = tainted(spot(node("spot-a", 1000, GI)), "karpenter.sh/disrupted", "");
    let cache = two_full_nodes(noticed, on_demand(node("od-b", 1000, GI)));
    let preemptor = tolerating_all(pod("high", 10, 500, 0, None));

    let upstream = decide_with(&cache, &preemptor, None);
    assert_eq!(upstream.nominated_node.as_deref(), Some("spot-a"));

    let d = decide_with(&cache, &preemptor, Some(Policy::default()));
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(d.nominated_node.as_deref(), Some("od-b"));
    assert_eq!(victim_names(&d), ["mid"]);
    let a = diagnostic(&d, "spot-a");
    assert_eq!(a.filter.code, Code::UnschedulableAndUnresolvable);
    assert_eq!(a.filter.plugin, PLUGIN);
    assert_eq!(
        a.filter.reasons.as_slice(),
        ["node(s) were spot capacity with a termination notice (taint karpenter.sh/disrupted)"]
    );
    assert!(!a.candidate && a.preemption.is_none());
    assert!(diagnostic(&d, "od-b").candidate);
    // The policy's rulings come without explain too.
    let quiet = decide_opts(&cache, &preemptor, Some(Policy::default()), None, false);
    assert_eq!(quiet.nominated_node.as_deref(), Some("od-b"));
}

#[test]
fn a_noticed_spot_node_does_not_count_as_room_either() {
    // The pod would fit on the noticed node: under the policy it does not, and the
    // message says why.
    let noticed = tainted(
        spot(node("spot-a", 1000, GI)),
        "aws-node-termination-handler/spot-itn",
        "e1",
    );
    let cache = Cluster::new(
        vec![noticed, on_demand(node("od-b", 1000, GI))],
        vec![pod("mid", 5, 1000, 0, Some("od-b"))],
        vec![],
    )
    .cache;
    let preemptor = tolerating_all(pod("high", 10, 500, 0, None));
    assert_eq!(decide_with(&cache, &preemptor, None).outcome, Outcome::Fits);
    let d = decide_with(&cache, &preemptor, Some(Policy::default()));
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(d.nominated_node.as_deref(), Some("od-b"));
    assert!(
        d.message.contains(
            "1 node(s) were spot capacity with a termination notice \
             (taint aws-node-termination-handler/spot-itn)"
        ),
        "{}",
        d.message
    );
}

#[test]
fn notice_labels_rule_out_spot_nodes_without_any_toleration() {
    let marked = with_labels(
        spot(node("spot-a", 1000, GI)),
        &[("example.com/reclaim", "now")],
    );
    let cache = two_full_nodes(marked, node("plain-b", 1000, GI));
    let policy = Policy {
        notice_labels: vec![preemptd::engine::policy::NoticeLabel {
            key: "example.com/reclaim".into(),
            value: None,
        }],
        ..Policy::default()
    };
    let preemptor = pod("high", 10, 500, 0, None);
    let d = decide_with(&cache, &preemptor, Some(policy));
    assert_eq!(d.nominated_node.as_deref(), Some("plain-b"));
    assert_eq!(
        diagnostic(&d, "spot-a").filter.reasons.as_slice(),
        ["node(s) were spot capacity with a termination notice (label example.com/reclaim=now)"]
    );
}

#[test]
fn a_noticed_on_demand_node_and_a_quiet_spot_node_stay_candidates() {
    let noticed = tainted(
        on_demand(node("od-a", 1000, GI)),
        "karpenter.sh/disrupted",
        "",
    );
    let cache = two_full_nodes(noticed, spot(node("spot-b", 1000, GI)));
    let preemptor = tolerating_all(pod("high", 10, 500, 0, None));
    let upstream = decide_with(&cache, &preemptor, None);
    let d = decide_with(&cache, &preemptor, Some(Policy::default()));
    assert_eq!(d.nominated_node.as_deref(), Some("od-a"));
    assert_eq!(d.nominated_node, upstream.nominated_node);
    assert_eq!(d.diagnostics, upstream.diagnostics);
}

#[test]
fn a_critical_pod_is_never_nominated_to_spot() {
    // Every default capacity label: each spot node holds the cheapest victims.
    for (key, spot_value, on_demand_value) in [
        ("node.kubernetes.io/capacity", "spot", "on-demand"),
        ("karpenter.sh/capacity-type", "spot", "on-demand"),
        ("eks.amazonaws.com/capacityType", "SPOT", "ON_DEMAND"),
        ("cloud.google.com/gke-spot", "true", "false"),
        ("cloud.google.com/gke-preemptible", "true", "false"),
        ("kubernetes.azure.com/scalesetpriority", "spot", "regular"),
    ] {
        let cache = two_full_nodes(
            with_labels(node("a", 1000, GI), &[(key, spot_value)]),
            with_labels(node("b", 1000, GI), &[(key, on_demand_value)]),
        );
        let policy = critical_at(1000);
        let batch = pod("batch", 10, 500, 0, None);
        let d = decide_with(&cache, &batch, Some(policy.clone()));
        assert_eq!(
            d.nominated_node.as_deref(),
            Some("a"),
            "{key}: batch pods may use spot"
        );
        let critical = pod("critical", 1000, 500, 0, None);
        assert_eq!(
            decide_with(&cache, &critical, None)
                .nominated_node
                .as_deref(),
            Some("a")
        );
        let d = decide_with(&cache, &critical, Some(policy));
        assert_eq!(d.nominated_node.as_deref(), Some("b"), "{key}");
        let a = diagnostic(&d, "a");
        assert_eq!(a.filter.plugin, PLUGIN);
        assert_eq!(
            a.filter.reasons.as_slice(),
            ["node(s) were spot capacity, which critical pods avoid"]
        );
    }
}

#[test]
fn a_critical_pod_does_not_fit_on_spot_and_finds_no_candidate_with_only_spot() {
    let cache = Cluster::new(
        vec![
            spot(node("spot-free", 1000, GI)),
            spot(node("spot-full", 1000, GI)),
        ],
        vec![pod("low", 1, 1000, 0, Some("spot-full"))],
        vec![],
    )
    .cache;
    let mut critical = pod("critical", 0, 500, 0, None);
    critical.labels = [("tier", "critical")].into_iter().collect();
    let policy = Policy {
        critical: CriticalPods {
            priority_at_least: None,
            selector: Some(selector(&[("tier", "critical")])),
        },
        ..Policy::default()
    };
    assert_eq!(decide_with(&cache, &critical, None).outcome, Outcome::Fits);
    let d = decide_with(&cache, &critical, Some(policy));
    assert_eq!(d.outcome, Outcome::NoCandidate);
    assert!(
        d.message.starts_with(
            "0/2 nodes are available: 2 node(s) were spot capacity, which critical pods avoid."
        ),
        "{}",
        d.message
    );
    assert!(
        d.diagnostics
            .iter()
            .all(|n| !n.candidate && n.filter.plugin == PLUGIN)
    );
}

#[test]
fn node_filters_keep_their_reason_over_the_policys() {
    let mut cordoned = spot(node("spot-a", 1000, GI));
    cordoned.unschedulable = true;
    let cache = two_full_nodes(cordoned, on_demand(node("od-b", 1000, GI)));
    let d = decide_with(
        &cache,
        &pod("critical", 1000, 500, 0, None),
        Some(critical_at(1)),
    );
    assert_eq!(
        diagnostic(&d, "spot-a").filter.reasons.as_slice(),
        ["node(s) were unschedulable"]
    );
}

/// `guarded` (priority 1, budget 0) fills node a, `mid` (priority 5) fills node b when
/// `with_free_node`; upstream prefers the node without a violation.
fn guarded_cluster(with_free_node: bool) -> ClusterCache {
    let mut nodes = vec![node("a", 1000, GI)];
    let mut pods = vec![labelled(
        pod("guarded", 1, 1000, 0, Some("a")),
        &[("app", "db")],
    )];
    if with_free_node {
        nodes.push(node("b", 1000, GI));
        pods.push(pod("mid", 5, 1000, 0, Some("b")));
    }
    Cluster::new(nodes, pods, vec![pdb("db", &[("app", "db")], 0)]).cache
}

#[test]
fn strict_pdb_mode_finds_no_candidate_where_prefer_would_violate() {
    let cache = guarded_cluster(false);
    let preemptor = pod("high", 10, 500, 0, None);
    let prefer = decide_opts(&cache, &preemptor, None, Some(PdbMode::Prefer), true);
    assert_eq!(prefer.nominated_node.as_deref(), Some("a"));
    assert_eq!(prefer.pdb_violations, 1);
    for (policy, mode) in [
        (None, Some(PdbMode::Strict)),
        (
            Some(Policy {
                pdb_mode: PdbMode::Strict,
                ..Policy::default()
            }),
            None,
        ),
    ] {
        let d = decide_opts(&cache, &preemptor, policy, mode, true);
        assert_eq!(d.outcome, Outcome::NoCandidate);
        assert!(
            d.message
                .contains("1 preemption would violate a PodDisruptionBudget (pdbMode strict)"),
            "{}",
            d.message
        );
        let a = diagnostic(&d, "a");
        assert!(!a.candidate);
        let preemption = a.preemption.as_ref().expect("dry-run failure");
        assert_eq!(preemption.plugin, PLUGIN);
    }
    // The request's mode wins over the policy's.
    let policy = Policy {
        pdb_mode: PdbMode::Strict,
        ..Policy::default()
    };
    let d = decide_opts(
        &cache,
        &preemptor,
        Some(policy),
        Some(PdbMode::Prefer),
        true,
    );
    assert_eq!(d.nominated_node.as_deref(), Some("a"));
}

#[test]
fn strict_pdb_mode_picks_a_node_without_violations_as_upstream_does() {
    let cache = guarded_cluster(true);
    let preemptor = pod("high", 10, 500, 0, None);
    let prefer = decide_opts(&cache, &preemptor, None, None, true);
    let strict = decide_opts(&cache, &preemptor, None, Some(PdbMode::Strict), true);
    assert_eq!(prefer.nominated_node.as_deref(), Some("b"));
    assert_eq!(strict.nominated_node, prefer.nominated_node);
    assert_eq!(victim_names(&strict), ["mid"]);
    // Only the explanation of node a differs: dropped rather than a worse candidate.
    assert!(diagnostic(&prefer, "a").candidate);
    assert!(!diagnostic(&strict, "a").candidate);
}

/// What a decision answers, without its counters.
fn answer(d: &Decision) -> impl PartialEq + std::fmt::Debug {
    (
        d.outcome,
        d.nominated_node.clone(),
        d.victims.clone(),
        d.nominated_pods_to_clear.clone(),
        d.pdb_violations,
        d.message.clone(),
        d.feasible_nodes.clone(),
        d.diagnostics.clone(),
    )
}

#[test]
fn a_policy_no_rule_applies_to_changes_no_answer() {
    // Generated clusters carry no capacity labels: the default policy (and PDB mode
    // prefer said outright) leaves every decision as upstream's, large enough for the
    // bounded search.
    let cluster = generate::generate(&ClusterSpec {
        nodes: 300,
        pods_per_node: 8,
        seed: 11,
    });
    let cache = cluster.into_cache();
    let preemptors = (0..12)
        .map(generate::resource_preemptor)
        .chain((0..4).map(generate::affinity_preemptor));
    for (i, preemptor) in preemptors.enumerate() {
        for explain in [false, true] {
            let upstream = decide_opts(&cache, &preemptor, None, None, explain);
            let policy = Policy {
                critical: CriticalPods {
                    priority_at_least: Some(0),
                    selector: None,
                },
                ..Policy::default()
            };
            let under_policy = decide_opts(
                &cache,
                &preemptor,
                Some(policy),
                Some(PdbMode::Prefer),
                explain,
            );
            assert_eq!(answer(&under_policy), answer(&upstream), "preemptor {i}");
        }
    }
}

#[test]
fn on_a_large_half_spot_cluster_critical_pods_stay_on_demand() {
    let mut cluster = generate::generate(&ClusterSpec {
        nodes: 300,
        pods_per_node: 8,
        seed: 5,
    });
    for (i, n) in cluster.nodes.iter_mut().enumerate() {
        let capacity = if i % 2 == 0 { "spot" } else { "on-demand" };
        *n = with_labels(n.clone(), &[("node.kubernetes.io/capacity", capacity)]);
        if i % 6 == 1 {
            n.taints.push(preemptd::model::Taint {
                key: "karpenter.sh/disrupted".into(),
                value: "".into(),
                effect: TaintEffect::NoSchedule,
            });
        }
    }
    let spot_nodes: Vec<String> = cluster
        .nodes
        .iter()
        .step_by(2)
        .map(|n| n.name.to_string())
        .collect();
    let cache = cluster.into_cache();
    let mut preempted = 0;
    for i in 0..16 {
        let mut preemptor = generate::resource_preemptor(i);
        preemptor.priority = preemptor.priority.max(1);
        let policy = critical_at(preemptor.priority);
        for explain in [false, true] {
            let d = decide_opts(&cache, &preemptor, Some(policy.clone()), None, explain);
            if let Some(node) = &d.nominated_node {
                preempted += 1;
                assert!(!spot_nodes.contains(&node.to_string()), "{node} is spot");
            }
            for name in &d.feasible_nodes {
                assert!(
                    !spot_nodes.contains(&name.to_string()),
                    "fits on spot {name}"
                );
            }
        }
    }
    assert!(
        preempted > 0,
        "some preemptor must preempt for the test to mean anything"
    );
}
