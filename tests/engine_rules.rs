//! One test per rule an implementation of upstream's preemption is most likely to get
//! wrong, through the library.

mod common;

use common::*;
use preemptd::engine::{Code, Outcome};
use preemptd::model::{PreemptionPolicy, Protocol};

const GI: i64 = 1 << 30;

#[test]
fn unresolvable_nodes_are_never_tried() {
    // node-a: taint; node-b: request exceeds allocatable; node-c: only U node.
    let cluster = Cluster::new(
        vec![
            tainted(node("node-a", 1000, GI), "dedicated", "x"),
            node("node-b", 400, GI),
            node("node-c", 1000, GI),
        ],
        vec![
            pod("low-a", 0, 1000, 0, Some("node-a")),
            pod("low-b", 0, 400, 0, Some("node-b")),
            pod("low-c", 0, 1000, 0, Some("node-c")),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 500, 0, None));
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(d.nominated_node.as_deref(), Some("node-c"));
    let b = d.diagnostics.iter().find(|n| &*n.node == "node-b").unwrap();
    assert_eq!(b.filter.code, Code::UnschedulableAndUnresolvable);
    assert!(b.preemption.is_none(), "a UU node must not be dry-run");
    let a = d.diagnostics.iter().find(|n| &*n.node == "node-a").unwrap();
    assert_eq!(
        a.filter.reasons.as_slice(),
        ["node(s) had untolerated taint {dedicated: x}"]
    );
}

#[test]
fn victims_are_removed_then_reprieved_greedily_by_importance() {
    // Needs 600m; the node holds 3×300m of lower priority. Reprieve keeps the most
    // important one (priority 5), then the next (priority 3) no longer fits.
    let cluster = Cluster::new(
        vec![node("n", 1000, GI)],
        vec![
            pod("p5", 5, 300, 0, Some("n")),
            pod("p3", 3, 300, 0, Some("n")),
            pod("p1", 1, 300, 0, Some("n")),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 600, 0, None));
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(victim_names(&d), vec!["p3", "p1"]);
}

#[test]
fn pdb_protected_pods_are_reprieved_before_higher_priority_unprotected_ones() {
    let cluster = Cluster::new(
        vec![node("n", 1000, GI)],
        vec![
            pod("mid", 5, 500, 0, Some("n")),
            labelled(pod("guarded", 1, 500, 0, Some("n")), &[("app", "db")]),
        ],
        vec![pdb("db", &[("app", "db")], 0)],
    );
    let d = cluster.decide(&pod("high", 10, 500, 0, None));
    assert_eq!(victim_names(&d), vec!["mid"]);
    assert_eq!(d.pdb_violations, 0);
}

#[test]
fn pdb_budget_is_consumed_in_importance_order_and_disrupted_pods_are_skipped() {
    // Budget 1 covers a (older) and b (newer): a consumes it, b violates. Both must go.
    let cluster = Cluster::new(
        vec![node("n", 1000, GI)],
        vec![
            started(
                labelled(pod("a", 1, 500, 0, Some("n")), &[("app", "x")]),
                10,
            ),
            started(
                labelled(pod("b", 1, 500, 0, Some("n")), &[("app", "x")]),
                20,
            ),
        ],
        vec![pdb("x", &[("app", "x")], 1)],
    );
    let d = cluster.decide(&pod("high", 10, 1000, 0, None));
    assert_eq!(victim_names(&d), vec!["a", "b"]);
    assert_eq!(d.pdb_violations, 1);

    let mut budget = pdb("x", &[("app", "x")], 1);
    budget.disrupted_pods.push("a".into());
    let cluster = Cluster::new(
        vec![node("n", 1000, GI)],
        vec![
            started(
                labelled(pod("a", 1, 500, 0, Some("n")), &[("app", "x")]),
                10,
            ),
            started(
                labelled(pod("b", 1, 500, 0, Some("n")), &[("app", "x")]),
                20,
            ),
        ],
        vec![budget],
    );
    let d = cluster.decide(&pod("high", 10, 1000, 0, None));
    assert_eq!(
        d.pdb_violations, 0,
        "a is already disrupted, b uses the budget"
    );
}

#[test]
fn pdb_budgets_reset_for_every_node() {
    // Each node has one covered pod; the budget of 1 is not shared across nodes, so both
    // candidates are non-violating.
    let cluster = Cluster::new(
        vec![node("n1", 1000, GI), node("n2", 1000, GI)],
        vec![
            labelled(pod("a", 1, 1000, 0, Some("n1")), &[("app", "x")]),
            labelled(pod("b", 1, 1000, 0, Some("n2")), &[("app", "x")]),
        ],
        vec![pdb("x", &[("app", "x")], 1)],
    );
    let d = cluster.decide(&pod("high", 10, 1000, 0, None));
    assert_eq!(d.pdb_violations, 0);
    assert!(
        d.diagnostics
            .iter()
            .all(|n| n.candidate && n.pdb_violations == 0)
    );
}

#[test]
fn equal_priority_is_never_a_victim() {
    let cluster = Cluster::new(
        vec![node("n", 1000, GI)],
        vec![pod("peer", 10, 1000, 0, Some("n"))],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 500, 0, None));
    assert_eq!(d.outcome, Outcome::NoCandidate);
    assert!(
        d.message
            .contains("No preemption victims found for incoming pod"),
        "{}",
        d.message
    );
}

#[test]
fn unset_start_time_counts_as_newest() {
    // Same priority: the pod without startTime is the least important, evicted first.
    let cluster = Cluster::new(
        vec![node("n", 1000, GI)],
        vec![
            started(pod("old", 1, 500, 0, Some("n")), 100),
            pod("new", 1, 500, 0, Some("n")),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 500, 0, None));
    assert_eq!(victim_names(&d), vec!["new"]);
}

#[test]
fn nominated_pods_of_higher_or_equal_priority_occupy_room() {
    // A 600m nominated pod of equal priority holds room on n1, so n1 cannot fit 500m
    // even after preempting its 400m low pod; n2 is chosen.
    let cluster = Cluster::new(
        vec![node("n1", 1000, GI), node("n2", 1000, GI)],
        vec![
            pod("low1", 0, 400, 0, Some("n1")),
            nominated(pod("waiting", 10, 600, 0, None), "n1"),
            pod("low2", 0, 800, 0, Some("n2")),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 500, 0, None));
    assert_eq!(d.nominated_node.as_deref(), Some("n2"));
    assert!(d.nominated_pods_to_clear.is_empty());
}

#[test]
fn lower_priority_nominations_are_ignored_and_cleared_on_the_chosen_node() {
    let cluster = Cluster::new(
        vec![node("n", 1000, GI)],
        vec![
            pod("low", 0, 600, 0, Some("n")),
            nominated(pod("medium", 5, 600, 0, None), "n"),
            nominated(pod("peer", 10, 100, 0, None), "n"),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 500, 0, None));
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(victim_names(&d), vec!["low"]);
    let cleared: Vec<_> = d
        .nominated_pods_to_clear
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(
        cleared,
        vec!["medium"],
        "equal priority nominations are kept"
    );
}

#[test]
fn node_pick_follows_the_criteria_in_order() {
    // n1: victim priority 5; n2: two victims of priority 1 — lower highest priority wins.
    let cluster = Cluster::new(
        vec![node("n1", 1000, GI), node("n2", 1000, GI)],
        vec![
            pod("n1-mid", 5, 1000, 0, Some("n1")),
            pod("n2-a", 1, 500, 0, Some("n2")),
            pod("n2-b", 1, 500, 0, Some("n2")),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 1000, 0, None));
    assert_eq!(d.nominated_node.as_deref(), Some("n2"));

    // Same highest priority and sum: fewer victims... here equal count too, so the latest
    // start time of the highest-priority victims wins (evict young pods).
    let cluster = Cluster::new(
        vec![node("n1", 1000, GI), node("n2", 1000, GI)],
        vec![
            started(pod("old", 1, 1000, 0, Some("n1")), 10),
            started(pod("young", 1, 1000, 0, Some("n2")), 500),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 1000, 0, None));
    assert_eq!(d.nominated_node.as_deref(), Some("n2"));

    // Full tie: the deterministic tie-break picks the first name.
    let cluster = Cluster::new(
        vec![node("b", 1000, GI), node("a", 1000, GI)],
        vec![
            started(pod("x", 1, 1000, 0, Some("a")), 10),
            started(pod("y", 1, 1000, 0, Some("b")), 10),
        ],
        vec![],
    );
    assert_eq!(
        cluster
            .decide(&pod("high", 10, 1000, 0, None))
            .nominated_node
            .as_deref(),
        Some("a")
    );
}

#[test]
fn adjusted_priority_sum_prefers_fewer_negative_priority_victims() {
    // n1: one victim of priority -10; n2: two victims of priority -1 each; highest victim
    // priority on n1 (-10) is lower, so n1 wins at criterion 2 already.
    let cluster = Cluster::new(
        vec![node("n1", 1000, GI), node("n2", 1000, GI)],
        vec![
            pod("a", -10, 1000, 0, Some("n1")),
            pod("b", -1, 500, 0, Some("n2")),
            pod("c", -1, 500, 0, Some("n2")),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 1000, 0, None));
    assert_eq!(d.nominated_node.as_deref(), Some("n1"));

    // Equal highest priority (-1): n1 has 1 victim, n2 has 2: the +2^31 shift makes the
    // single victim's sum smaller.
    let cluster = Cluster::new(
        vec![node("n1", 1000, GI), node("n2", 1000, GI)],
        vec![
            pod("a", -1, 1000, 0, Some("n1")),
            pod("b", -1, 500, 0, Some("n2")),
            pod("c", -1, 500, 0, Some("n2")),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 1000, 0, None));
    assert_eq!(d.nominated_node.as_deref(), Some("n1"));
}

#[test]
fn preemption_policy_never_is_not_eligible() {
    let cluster = Cluster::new(
        vec![node("n", 1000, GI)],
        vec![pod("low", 0, 1000, 0, Some("n"))],
        vec![],
    );
    let mut p = pod("high", 10, 500, 0, None);
    p.preemption_policy = PreemptionPolicy::Never;
    let d = cluster.decide(&p);
    assert_eq!(d.outcome, Outcome::NotEligible);
    assert!(d.message.contains("preemptionPolicy=Never"));
}

#[test]
fn terminating_victim_on_nominated_node_blocks_unless_node_is_unresolvable() {
    let victim = terminating_by_preemption(pod("going", 0, 1000, 0, Some("n")));
    let cluster = Cluster::new(vec![node("n", 1000, GI)], vec![victim.clone()], vec![]);
    let p = nominated(pod("high", 10, 500, 0, None), "n");
    assert_eq!(cluster.decide(&p).outcome, Outcome::NotEligible);

    // Terminating for another reason: no block.
    let mut other = victim.clone();
    other.details_mut().conditions.clear();
    let cluster = Cluster::new(vec![node("n", 1000, GI)], vec![other], vec![]);
    assert_eq!(cluster.decide(&p).outcome, Outcome::Preempt);

    // The nominated node became unresolvable (tainted): eligible again, and with no other
    // node there is no candidate.
    let cluster = Cluster::new(
        vec![tainted(node("n", 1000, GI), "k", "v"), node("m", 1000, GI)],
        vec![victim, pod("low-m", 0, 1000, 0, Some("m"))],
        vec![],
    );
    let d = cluster.decide(&p);
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(d.nominated_node.as_deref(), Some("m"));
}

#[test]
fn pod_count_includes_terminating_and_nominated_pods() {
    let mut n = node("n", 10_000, GI);
    n.allocatable.pods = 2;
    let mut going = pod("going", 20, 0, 0, Some("n"));
    going.terminating = true;
    let cluster = Cluster::new(
        vec![n],
        vec![going, nominated(pod("waiting", 20, 0, 0, None), "n")],
        vec![],
    );
    let d = cluster.decide(&pod("high", 10, 100, 0, None));
    assert_eq!(d.outcome, Outcome::NoCandidate);
    assert!(d.message.contains("Too many pods"), "{}", d.message);
}

#[test]
fn host_ports_wildcard_conflicts_and_protocols_are_distinct() {
    let n = || node("n", 10_000, GI);
    let used = with_host_port(
        pod("web", 20, 0, 0, Some("n")),
        "10.0.0.1",
        Protocol::Tcp,
        80,
    );
    // 0.0.0.0 wanted conflicts with a specific IP on the same protocol and port.
    let cluster = Cluster::new(vec![n()], vec![used.clone()], vec![]);
    let want = with_host_port(pod("p", 10, 0, 0, None), "0.0.0.0", Protocol::Tcp, 80);
    assert_eq!(cluster.decide(&want).outcome, Outcome::NoCandidate);
    // UDP on the same port does not conflict.
    let want = with_host_port(pod("p", 10, 0, 0, None), "0.0.0.0", Protocol::Udp, 80);
    assert_eq!(cluster.decide(&want).outcome, Outcome::Fits);
    // Another specific IP does not conflict.
    let want = with_host_port(pod("p", 10, 0, 0, None), "10.0.0.2", Protocol::Tcp, 80);
    assert_eq!(cluster.decide(&want).outcome, Outcome::Fits);
    // A lower-priority holder of the port is a victim.
    let low = with_host_port(
        pod("low", 0, 0, 0, Some("n")),
        "0.0.0.0",
        Protocol::Tcp,
        8080,
    );
    let cluster = Cluster::new(vec![n()], vec![low], vec![]);
    let want = with_host_port(pod("p", 10, 0, 0, None), "10.0.0.9", Protocol::Tcp, 8080);
    let d = cluster.decide(&want);
    assert_eq!(victim_names(&d), vec!["low"]);
}

#[test]
fn host_ports_are_a_set_so_removing_one_of_two_holders_frees_the_port() {
    // Upstream's `HostPortInfo` keeps each (IP, protocol, port) once; `RemovePod` deletes
    // the entry although a higher-priority pod still binds the same port. Its dry run
    // then sees the port free, so the one lower-priority holder is enough of a victim.
    let holder = |name, priority| {
        with_host_port(
            pod(name, priority, 100, 0, Some("n")),
            "0.0.0.0",
            Protocol::Tcp,
            80,
        )
    };
    let cluster = Cluster::new(
        vec![node("n", 2000, GI)],
        vec![holder("high", 10), holder("low", -5)],
        vec![],
    );
    let want = with_host_port(pod("p", 0, 100, 0, None), "10.0.0.1", Protocol::Tcp, 80);
    let d = cluster.decide(&want);
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(d.nominated_node.as_deref(), Some("n"));
    assert_eq!(victim_names(&d), vec!["low"]);
}

#[test]
fn existing_pods_anti_affinity_is_symmetric() {
    // A higher-priority pod on n1 refuses pods labelled app=web in its hostname domain.
    let guard = anti_affinity(
        pod("guard", 20, 100, 0, Some("n1")),
        &[("app", "web")],
        "kubernetes.io/hostname",
    );
    let cluster = Cluster::new(
        vec![node("n1", 1000, GI), node("n2", 1000, GI)],
        vec![
            guard,
            pod("low", 0, 1000, 0, Some("n2")),
            pod("low1", 0, 900, 0, Some("n1")),
        ],
        vec![],
    );
    let p = labelled(pod("web", 10, 500, 0, None), &[("app", "web")]);
    let d = cluster.decide(&p);
    assert_eq!(d.nominated_node.as_deref(), Some("n2"));
    let n1 = d.diagnostics.iter().find(|n| &*n.node == "n1").unwrap();
    assert!(!n1.candidate);
}

#[test]
fn anti_affinity_victim_is_preempted() {
    // The preemptor refuses app=db in its zone; the only db pod is lower priority.
    let cluster = Cluster::new(
        vec![with_labels(node("n1", 1000, GI), &[("zone", "a")])],
        vec![
            labelled(pod("db", 0, 100, 0, Some("n1")), &[("app", "db")]),
            pod("other", 0, 100, 0, Some("n1")),
        ],
        vec![],
    );
    let p = anti_affinity(pod("p", 10, 100, 0, None), &[("app", "db")], "zone");
    let d = cluster.decide(&p);
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(victim_names(&d), vec!["db"]);
}

#[test]
fn topology_spread_ignores_terminating_pods() {
    use preemptd::model::{InclusionPolicy, TopologySpreadConstraint, WhenUnsatisfiable};
    let zone = |n, z| with_labels(node(n, 1000, GI), &[("zone", z)]);
    let web =
        |name: &str, node: &str| labelled(pod(name, 20, 100, 0, Some(node)), &[("app", "web")]);
    let mut gone = web("gone", "b");
    gone.terminating = true;
    let cluster = Cluster::new(
        vec![zone("a", "a"), zone("b", "b")],
        vec![web("w1", "a"), gone],
        vec![],
    );
    let mut p = labelled(pod("p", 10, 100, 0, None), &[("app", "web")]);
    p.details_mut()
        .topology_spread
        .push(TopologySpreadConstraint {
            max_skew: 1,
            topology_key: "zone".into(),
            when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
            label_selector: Some(selector(&[("app", "web")])),
            min_domains: None,
            match_label_keys: Vec::new(),
            node_affinity_policy: InclusionPolicy::Honor,
            node_taints_policy: InclusionPolicy::Ignore,
        });
    // Counts: a=1, b=0 (terminating ignored) → only b fits.
    let d = cluster.decide(&p);
    assert_eq!(d.outcome, Outcome::Fits);
    assert_eq!(
        d.feasible_nodes
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>(),
        vec!["b"]
    );
}

#[test]
fn a_pod_that_fits_its_nominated_node_is_feasible_there_alone() {
    // Upstream evaluates the nominated node first and filters no other node when it passes.
    let cluster = Cluster::new(
        vec![node("node-a", 1000, GI), node("node-b", 1000, GI)],
        vec![],
        vec![],
    );
    let d = cluster.decide(&nominated(pod("high", 10, 500, 0, None), "node-b"));
    assert_eq!(d.outcome, Outcome::Fits);
    assert_eq!(names(&d.feasible_nodes), ["node-b"]);

    // Not fitting the nominated node: every feasible node counts.
    let full = Cluster::new(
        vec![
            node("node-a", 1000, GI),
            node("node-b", 1000, GI),
            node("node-c", 1000, GI),
        ],
        vec![pod("big", 20, 1000, 0, Some("node-b"))],
        vec![],
    );
    let d = full.decide(&nominated(pod("high", 10, 500, 0, None), "node-b"));
    assert_eq!(d.outcome, Outcome::Fits);
    assert_eq!(names(&d.feasible_nodes), ["node-a", "node-c"]);
}

fn names(nodes: &[preemptd::model::Str]) -> Vec<&str> {
    nodes.iter().map(|n| &**n).collect()
}
