use super::*;
use crate::engine::KubernetesVersion;
use crate::engine::test_support::*;
use crate::engine::victims::PdbIndex;
use crate::model::{DisruptionMode, LabelSelector, PodDisruptionBudget};

fn unit(priority: i32, kind: UnitKind, pods: &[(&str, i64)]) -> VictimUnit {
    let pods = pods
        .iter()
        .map(|(name, start)| Arc::new(started(pod(name, priority, 100, GI, Some("n1")), *start)))
        .collect();
    VictimUnit::new(pods, priority, kind, 1_000 * 1_000_000_000)
}

fn names(units: &[VictimUnit]) -> Vec<Vec<String>> {
    units
        .iter()
        .map(|u| u.pods.iter().map(|p| p.name().to_string()).collect())
        .collect()
}

#[test]
fn importance_is_priority_then_kind_then_size_then_earliest_start() {
    let mut units = vec![
        unit(5, UnitKind::Pod, &[("low-pod", 1)]),
        unit(10, UnitKind::Pod, &[("pod-early", 1)]),
        unit(10, UnitKind::PodGroup, &[("small-late", 9)]),
        unit(10, UnitKind::PodGroup, &[("big-1", 50), ("big-2", 60)]),
        unit(10, UnitKind::PodGroup, &[("small-early", 2)]),
        unit(20, UnitKind::Pod, &[("high-pod", 99)]),
    ];
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
    let u = unit(1, UnitKind::PodGroup, &[("a", 30), ("b", 10), ("c", 20)]);
    assert_eq!(u.earliest_start, 10 * 1_000_000_000);
}

#[test]
fn an_all_group_is_one_unit_across_nodes_and_members_rank_at_their_group_s_priority() {
    let snapshot = snapshot_with_groups(
        vec![node("n1", 4000, 8 * GI), node("n2", 4000, 8 * GI)],
        vec![
            member(pod("inf-b", 1, 1000, GI, Some("n2")), "inference"),
            member(pod("inf-a", 1, 1000, GI, Some("n1")), "inference"),
            member(pod("web-1", 1, 1000, GI, Some("n1")), "web"),
            member(pod("orphan", 3, 1000, GI, Some("n1")), "missing"),
            pod("plain", 4, 1000, GI, Some("n1")),
        ],
        vec![
            pod_group("inference", 50, DisruptionMode::All, Some(2)),
            pod_group("web", 40, DisruptionMode::Single, None),
        ],
    );
    let all = AllModeMembers::of(&snapshot);
    let n1 = snapshot.node("n1").expect("n1");
    let mut units = units_of(n1.pods.iter(), &snapshot.pod_groups, &all, 0);
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
    let group = VictimUnit::new(
        vec![labelled("a"), labelled("b"), labelled("c")],
        1,
        UnitKind::PodGroup,
        0,
    );
    let other = VictimUnit::new(
        vec![Arc::new(pod("d", 1, 100, GI, Some("n1")))],
        1,
        UnitKind::Pod,
        0,
    );
    let (violating, non_violating) = split_units_by_violation(vec![group, other], &index);
    assert_eq!(violating.len(), 1);
    assert_eq!(
        violating[0].1, 2,
        "a uses the one disruption; b and c violate"
    );
    assert_eq!(names(&non_violating), vec![vec!["d"]]);
}
