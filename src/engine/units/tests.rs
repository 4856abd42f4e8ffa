use super::*;
use crate::engine::KubernetesVersion;
use crate::engine::test_support::*;
use crate::engine::victims::PdbIndex;
use crate::model::{DisruptionMode, LabelSelector, PodDisruptionBudget};

/// Pods on n1 at `priority`, by name and start (seconds).
fn started_pods(priority: i32, pods: &[(&str, i64)]) -> Vec<Arc<Pod>> {
    pods.iter()
        .map(|(name, start)| Arc::new(started(pod(name, priority, 100, GI, Some("n1")), *start)))
        .collect()
}

/// A unit of `pods` (at their priority) of `kind`.
fn unit(pods: &[Arc<Pod>], kind: UnitKind) -> VictimUnit<'_> {
    let priority = pods.first().map_or(0, |p| p.priority);
    VictimUnit::new(pods.iter().collect(), priority, kind, 1_000 * 1_000_000_000)
}

fn names(units: &[VictimUnit<'_>]) -> Vec<Vec<String>> {
    units
        .iter()
        .map(|u| u.pods.iter().map(|p| p.name().to_string()).collect())
        .collect()
}

#[test]
fn importance_is_priority_then_kind_then_size_then_earliest_start() {
    let pods = [
        (started_pods(5, &[("low-pod", 1)]), UnitKind::Pod),
        (started_pods(10, &[("pod-early", 1)]), UnitKind::Pod),
        (started_pods(10, &[("small-late", 9)]), UnitKind::PodGroup),
        (
            started_pods(10, &[("big-1", 50), ("big-2", 60)]),
            UnitKind::PodGroup,
        ),
        (started_pods(10, &[("small-early", 2)]), UnitKind::PodGroup),
        (started_pods(20, &[("high-pod", 99)]), UnitKind::Pod),
    ];
    let mut units: Vec<VictimUnit<'_>> = pods.iter().map(|(p, kind)| unit(p, *kind)).collect();
    units.sort_by(importance);
    assert_eq!(
        names(&units),
        vec![
            vec!["high-pod"],
            vec!["big-1", "big-2"],
            vec!["small-early"],
            vec!["small-late"],
            vec!["pod-early"],
            vec!["low-pod"],
        ]
    );
}

#[test]
fn a_unit_starts_when_its_earliest_pod_did() {
    let pods = started_pods(1, &[("a", 30), ("b", 10), ("c", 20)]);
    let u = unit(&pods, UnitKind::PodGroup);
    assert_eq!(u.earliest_start, 10 * 1_000_000_000);
}

/// Two nodes: an `all` group spanning both, a `single` group's member, a pod naming a
/// missing group and a plain pod on n1; then `more`.
fn groups_on_two_nodes(more: Vec<Pod>) -> Snapshot {
    let mut pods = vec![
        member(pod("inf-b", 1, 1000, GI, Some("n2")), "inference"),
        member(pod("inf-a", 1, 1000, GI, Some("n1")), "inference"),
        member(pod("web-1", 1, 1000, GI, Some("n1")), "web"),
        member(pod("orphan", 3, 1000, GI, Some("n1")), "missing"),
        pod("plain", 4, 1000, GI, Some("n1")),
    ];
    pods.extend(more);
    snapshot_with_groups(
        vec![node("n1", 4000, 8 * GI), node("n2", 4000, 8 * GI)],
        pods,
        vec![
            pod_group("inference", 50, DisruptionMode::All, Some(2)),
            pod_group("web", 40, DisruptionMode::Single, None),
        ],
    )
}

#[test]
fn an_all_group_is_one_unit_across_nodes_and_members_rank_at_their_group_s_priority() {
    let snapshot = groups_on_two_nodes(Vec::new());
    let all = AllModeMembers::of(&snapshot);
    let n1 = snapshot.node("n1").expect("n1");
    let mut units = units_of(n1.pods.iter(), i32::MAX, &snapshot.pod_groups, &all, 0);
    units.sort_by(importance);
    assert_eq!(
        names(&units),
        vec![
            vec!["inf-a", "inf-b"],
            vec!["web-1"],
            vec!["plain"],
            vec!["orphan"]
        ]
    );
    let summary: Vec<(i32, UnitKind)> = units.iter().map(|u| (u.priority, u.kind)).collect();
    assert_eq!(
        summary,
        vec![
            (50, UnitKind::PodGroup),
            (40, UnitKind::PodGroup),
            (4, UnitKind::Pod),
            // A missing group: the pod's own priority, still ranked as a group's member.
            (3, UnitKind::PodGroup),
        ]
    );
    assert_eq!(victim_priority(&n1.pods[0], &snapshot.pod_groups), 50);
}

/// The whole cluster's units in one pass are what each node's units are, every `all`
/// group once, and their positions name exactly their pods.
#[test]
fn units_below_are_every_node_s_units_once_with_their_positions() {
    let snapshot = groups_on_two_nodes(vec![
        member(pod("web-2", 1, 1000, GI, Some("n2")), "web"),
        pod("plain-2", 4, 1000, GI, Some("n2")),
        pod("high", 60, 1000, GI, Some("n1")),
    ]);
    let all = AllModeMembers::of(&snapshot);
    for below in [i32::MAX, 45, 4] {
        let (mut whole, positions) = units_below(&snapshot, below, 0);
        let mut per_node: Vec<VictimUnit> = Vec::new();
        for info in snapshot.nodes.iter() {
            for unit in units_of(info.pods.iter(), below, &snapshot.pod_groups, &all, 0) {
                if !per_node
                    .iter()
                    .any(|u| names(std::slice::from_ref(u)) == names(std::slice::from_ref(&unit)))
                {
                    per_node.push(unit);
                }
            }
        }
        whole.sort_by(importance);
        per_node.sort_by(importance);
        assert_eq!(names(&whole), names(&per_node), "below {below}");
        let summary = |units: &[VictimUnit]| -> Vec<(i32, UnitKind, i64)> {
            units
                .iter()
                .map(|u| (u.priority, u.kind, u.earliest_start))
                .collect()
        };
        assert_eq!(summary(&whole), summary(&per_node), "below {below}");
        let mut at: Vec<String> = positions
            .iter()
            .map(|&(n, p)| snapshot.nodes[n].pods[p].name().to_string())
            .collect();
        let mut pods: Vec<String> = whole
            .iter()
            .flat_map(|u| u.pods.iter().map(|p| p.name().to_string()))
            .collect();
        at.sort();
        pods.sort();
        assert_eq!(at, pods, "below {below}");
    }
}

#[test]
fn a_unit_violates_when_any_of_its_pods_does_and_counts_each() {
    let labelled = |name: &str| {
        let mut p = pod(name, 1, 100, GI, Some("n1"));
        p.labels = [("app", "inf")].into_iter().collect();
        Arc::new(p)
    };
    let budget = PodDisruptionBudget {
        namespace: "default".into(),
        name: "inf".into(),
        uid: "inf".into(),
        resource_version: 0,
        selector: Some(LabelSelector {
            match_labels: [("app", "inf")].into_iter().collect(),
            match_expressions: Vec::new(),
        }),
        disruptions_allowed: 1,
        disrupted_pods: Vec::new(),
    };
    let pdbs = vec![Arc::new(budget)];
    let index = PdbIndex::new(&pdbs, KubernetesVersion::V1_37);
    let grouped = [labelled("a"), labelled("b"), labelled("c")];
    let lone = [Arc::new(pod("d", 1, 100, GI, Some("n1")))];
    let group = VictimUnit::new(grouped.iter().collect(), 1, UnitKind::PodGroup, 0);
    let other = VictimUnit::new(lone.iter().collect(), 1, UnitKind::Pod, 0);
    let (violating, non_violating) = split_units_by_violation(vec![group, other], &index);
    assert_eq!(violating.len(), 1);
    assert_eq!(
        violating[0].1, 2,
        "a uses the one disruption; b and c violate"
    );
    assert_eq!(names(&non_violating), vec![vec!["d"]]);
}

#[test]
fn per_pod_preemption_evicts_an_all_group_on_every_node_it_runs_on() {
    // `inference` (all) runs on n1 and n2; `web-1` of a single-mode group sits on n3 at
    // the same pod priority but ranks at its group's priority, above the preemptor.
    let snapshot = snapshot_with_groups(
        vec![
            node("n1", 2000, 4 * GI),
            node("n2", 2000, 4 * GI),
            node("n3", 2000, 4 * GI),
        ],
        vec![
            member(pod("inf-a", 10, 2000, GI, Some("n1")), "inference"),
            member(pod("inf-b", 10, 2000, GI, Some("n2")), "inference"),
            member(pod("web-1", 10, 2000, GI, Some("n3")), "web"),
        ],
        vec![
            pod_group("inference", 10, DisruptionMode::All, Some(2)),
            pod_group("web", 5000, DisruptionMode::Single, None),
        ],
    );
    let preemptor = pod("p", 1000, 2000, GI, None);
    let decide_with = |gates: Option<&str>| {
        let options = crate::engine::DecideOptions {
            now: Some(0),
            feature_gates: gates.map(|g| {
                crate::engine::FeatureGates::parse(KubernetesVersion::V1_37, g).expect("gates")
            }),
            ..crate::engine::DecideOptions::default()
        };
        crate::engine::decide(&snapshot, &preemptor, &options)
    };
    let victims = |d: &crate::engine::Decision| -> Vec<String> {
        d.victims.iter().map(|v| v.name.to_string()).collect()
    };

    let units = decide_with(Some("GenericWorkload=true"));
    assert_eq!(
        units.outcome,
        crate::engine::Outcome::Preempt,
        "{}",
        units.message
    );
    assert_eq!(victims(&units), vec!["inf-a", "inf-b"]);
    assert_ne!(
        units.nominated_node.as_deref(),
        Some("n3"),
        "web-1 ranks at 5000"
    );

    // Pods are pods with the gate off, or without it set.
    for gates in [None, Some("GenericWorkload=false")] {
        let pods = decide_with(gates);
        assert_eq!(pods.outcome, crate::engine::Outcome::Preempt);
        assert_eq!(victims(&pods).len(), 1, "{gates:?}: one pod on one node");
    }
}

#[test]
fn a_preemptor_waits_for_a_terminating_member_ranked_below_it_by_its_group() {
    // `going` has pod priority 2000 but its group's is 10: with units it is a lower-
    // priority victim still terminating on the nominated node.
    let snapshot = snapshot_with_groups(
        vec![node("n1", 2000, 4 * GI)],
        vec![terminating_by_preemption(member(
            pod("going", 2000, 2000, GI, Some("n1")),
            "inference",
        ))],
        vec![pod_group("inference", 10, DisruptionMode::All, Some(1))],
    );
    let mut preemptor = pod("p", 1000, 2000, GI, None);
    preemptor.nominated_node_name = Some("n1".into());
    let options = crate::engine::DecideOptions {
        now: Some(0),
        feature_gates: Some(
            crate::engine::FeatureGates::parse(KubernetesVersion::V1_37, "GenericWorkload=true")
                .expect("gates"),
        ),
        ..crate::engine::DecideOptions::default()
    };
    let decision = crate::engine::decide(&snapshot, &preemptor, &options);
    assert_eq!(
        decision.outcome,
        crate::engine::Outcome::NotEligible,
        "{}",
        decision.message
    );
    let without = crate::engine::decide(
        &snapshot,
        &preemptor,
        &crate::engine::DecideOptions {
            now: Some(0),
            ..crate::engine::DecideOptions::default()
        },
    );
    assert_ne!(without.outcome, crate::engine::Outcome::NotEligible);
}

#[test]
fn removing_an_all_group_elsewhere_clears_the_preemptor_s_anti_affinity() {
    // n1 and n3 share zone a. The preemptor must not share a zone with `app=inf` pods:
    // on n1 only removing the whole gang, its pod on n3 included, clears zone a — which
    // Filter on n1 sees through the anti-affinity counts, not through n1's own pods.
    let zoned = |name: &str, zone: &str| {
        let mut n = node(name, 2000, 4 * GI);
        n.labels = [("kubernetes.io/hostname", name), ("zone", zone)]
            .into_iter()
            .collect();
        n
    };
    let inf = |name: &str, on: &str| {
        let mut p = member(pod(name, 10, 1000, GI, Some(on)), "inference");
        p.labels = [("app", "inf")].into_iter().collect();
        p
    };
    let snapshot = snapshot_with_groups(
        vec![zoned("n1", "a"), zoned("n3", "a")],
        vec![inf("inf-a", "n1"), inf("inf-b", "n3")],
        vec![pod_group("inference", 10, DisruptionMode::All, Some(2))],
    );
    let mut preemptor = pod("p", 1000, 1500, GI, None);
    preemptor.details_mut().pod_anti_affinity = vec![crate::model::PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: [("app", "inf")].into_iter().collect(),
            match_expressions: Vec::new(),
        }),
        namespaces: Vec::new(),
        namespace_selector: None,
        topology_key: "zone".into(),
    }];
    let gated = |text: &str| crate::engine::DecideOptions {
        now: Some(0),
        feature_gates: Some(
            crate::engine::FeatureGates::parse(KubernetesVersion::V1_37, text).expect("gates"),
        ),
        ..crate::engine::DecideOptions::default()
    };
    let decision = crate::engine::decide(&snapshot, &preemptor, &gated("GenericWorkload=true"));
    assert_eq!(
        decision.outcome,
        crate::engine::Outcome::Preempt,
        "{}",
        decision.message
    );
    let victims: Vec<&str> = decision.victims.iter().map(|v| &*v.name).collect();
    assert_eq!(victims, vec!["inf-a", "inf-b"]);
    // Pods one by one, the other zone-a pod always remains.
    let pods = crate::engine::decide(&snapshot, &preemptor, &gated("GenericWorkload=false"));
    assert_eq!(
        pods.outcome,
        crate::engine::Outcome::NoCandidate,
        "{}",
        pods.message
    );
}

#[test]
fn a_terminating_victim_taken_off_counts_in_spread_as_upstreams_updates_count_it() {
    // Zone a holds two `batch` pods on n5 and a terminating one, `old`, on n1 (which
    // PreFilter's count skips): 2 against zone b's 1, so the preemptor (skew 1) fits zone
    // a only with one fewer. Upstream's RemovePod still takes `old` off zone a's count,
    // so evicting `old` makes n1 fit. The gang on n1 and n5 (mode all) makes the dry run
    // span nodes: the same answer as on n1 alone.
    let zoned = |name: &str, cpu: i64, zone: &str| {
        let mut n = node(name, cpu, 4 * GI);
        n.labels = [("kubernetes.io/hostname", name), ("zone", zone)]
            .into_iter()
            .collect();
        n
    };
    let batch = |mut p: Pod| {
        p.labels = [("app", "batch")].into_iter().collect();
        p
    };
    let mut old = batch(pod("old", 0, 0, 0, Some("n1")));
    old.terminating = true;
    let snapshot = snapshot_with_groups(
        vec![
            zoned("n1", 2000, "a"),
            zoned("n2", 0, "b"),
            zoned("n5", 0, "a"),
        ],
        vec![
            old,
            batch(pod("b-1", 2000, 0, 0, Some("n5"))),
            batch(pod("b-2", 2000, 0, 0, Some("n5"))),
            batch(pod("b-3", 2000, 0, 0, Some("n2"))),
            member(pod("g-1", 0, 0, 0, Some("n1")), "gang"),
            member(pod("g-2", 0, 0, 0, Some("n5")), "gang"),
        ],
        vec![pod_group("gang", 0, DisruptionMode::All, Some(2))],
    );
    let mut preemptor = pod("p", 1000, 100, GI, None);
    preemptor.labels = [("app", "cache")].into_iter().collect();
    preemptor.details_mut().topology_spread = vec![crate::model::TopologySpreadConstraint {
        max_skew: 1,
        topology_key: "zone".into(),
        when_unsatisfiable: crate::model::WhenUnsatisfiable::DoNotSchedule,
        label_selector: Some(LabelSelector {
            match_labels: Default::default(),
            match_expressions: vec![crate::model::labels::Requirement {
                key: "app".into(),
                operator: crate::model::labels::Operator::In,
                values: vec!["batch".into(), "cache".into()],
            }],
        }),
        min_domains: None,
        match_label_keys: Vec::new(),
        node_affinity_policy: crate::model::InclusionPolicy::Honor,
        node_taints_policy: crate::model::InclusionPolicy::Ignore,
    }];
    for gates in ["GenericWorkload=true", "GenericWorkload=false"] {
        let options = crate::engine::DecideOptions {
            now: Some(0),
            feature_gates: Some(
                crate::engine::FeatureGates::parse(KubernetesVersion::V1_37, gates).expect("gates"),
            ),
            ..crate::engine::DecideOptions::default()
        };
        let decision = crate::engine::decide(&snapshot, &preemptor, &options);
        assert_eq!(
            decision.outcome,
            crate::engine::Outcome::Preempt,
            "{gates}: {}",
            decision.message
        );
        assert_eq!(decision.nominated_node.as_deref(), Some("n1"), "{gates}");
        let victims: Vec<&str> = decision.victims.iter().map(|v| &*v.name).collect();
        assert_eq!(victims, vec!["old"], "{gates}");
    }
}
