use super::*;
use crate::engine::test_support::*;
use crate::model::{DisruptionMode, LabelSelector, PodDisruptionBudget};

const TRAINING: i32 = 1000;

/// A pending member of the training gang asking for `cpu_milli`.
fn trainer(name: &str, cpu_milli: i64) -> Pod {
    member(pod(name, TRAINING, cpu_milli, GI, None), "training")
}

fn training(min_count: i32) -> PodGroup {
    pod_group("training", TRAINING, DisruptionMode::All, Some(min_count))
}

fn gates(text: &str) -> FeatureGates {
    FeatureGates::parse(KubernetesVersion::V1_37, text).expect("gates")
}

fn options() -> GroupOptions {
    GroupOptions {
        now: Some(0),
        gates: gates("GenericWorkload=true"),
        ..GroupOptions::default()
    }
}

fn victim_names(decision: &GroupDecision) -> Vec<&str> {
    decision.victims.iter().map(|v| &*v.name).collect()
}

fn nominated(decision: &GroupDecision) -> Vec<(&str, &str)> {
    decision
        .nominations
        .iter()
        .map(|(p, n)| (&*p.name, &**n))
        .collect()
}

#[test]
fn a_group_that_fits_is_placed_without_preemption() {
    let snapshot = snapshot_with_groups(
        vec![node("n1", 2000, 4 * GI), node("n2", 2000, 4 * GI)],
        vec![],
        vec![training(2)],
    );
    let members = [trainer("t-1", 2000), trainer("t-0", 2000)];
    let decision = decide_group(&snapshot, &training(2), &members, &options());
    assert_eq!(decision.outcome, Outcome::Fits, "{}", decision.message);
    assert_eq!(nominated(&decision), vec![("t-0", "n1"), ("t-1", "n2")]);
    assert!(decision.victims.is_empty());
}

#[test]
fn any_member_with_preemption_policy_never_makes_the_group_not_eligible() {
    let snapshot = snapshot_with_groups(
        vec![node("n1", 2000, 4 * GI)],
        vec![pod("low", 1, 2000, GI, Some("n1"))],
        vec![training(1)],
    );
    let mut never = trainer("t-1", 2000);
    never.preemption_policy = PreemptionPolicy::Never;
    let members = [trainer("t-0", 2000), never];
    let decision = decide_group(&snapshot, &training(1), &members, &options());
    assert_eq!(decision.outcome, Outcome::NotEligible);
    assert!(
        decision
            .message
            .ends_with("preemption: not eligible due to preemptionPolicy=Never."),
        "{}",
        decision.message
    );

    // With PodGroupPreemptionPolicy the group's own policy decides instead.
    let gated = GroupOptions {
        gates: gates("GenericWorkload=true,PodGroupPreemptionPolicy=true"),
        ..options()
    };
    let decision = decide_group(&snapshot, &training(1), &members, &gated);
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    let mut never_group = training(1);
    never_group.preemption_policy = Some(PreemptionPolicy::Never);
    let decision = decide_group(&snapshot, &never_group, &[trainer("t-0", 2000)], &gated);
    assert_eq!(decision.outcome, Outcome::NotEligible);
}

#[test]
fn no_candidate_without_lower_priority_victims_or_when_the_minimum_cannot_be_met() {
    let snapshot = snapshot_with_groups(
        vec![node("n1", 2000, 4 * GI), node("n2", 2000, 4 * GI)],
        vec![
            pod("high", 5000, 2000, GI, Some("n1")),
            pod("low", 1, 2000, GI, Some("n2")),
        ],
        vec![training(2)],
    );
    // Two members of a whole node each: only n2 can be freed.
    let members = [trainer("t-0", 2000), trainer("t-1", 2000)];
    let decision = decide_group(&snapshot, &training(2), &members, &options());
    assert_eq!(
        decision.outcome,
        Outcome::NoCandidate,
        "{}",
        decision.message
    );
    assert!(
        decision
            .message
            .contains("minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"),
        "{}",
        decision.message
    );
    assert!(decision.victims.is_empty() && decision.nominations.is_empty());

    let only_high = snapshot_with_groups(
        vec![node("n1", 2000, 4 * GI)],
        vec![pod("high", 5000, 2000, GI, Some("n1"))],
        vec![training(1)],
    );
    let decision = decide_group(&only_high, &training(1), &members[..1], &options());
    assert_eq!(decision.outcome, Outcome::NoCandidate);
    assert!(
        decision
            .message
            .ends_with("No preemption victims found for incoming preemptor"),
        "{}",
        decision.message
    );
}

#[test]
fn a_gang_preempts_the_minimum_and_places_as_many_members_as_it_can() {
    // Three members, at least two: n3 holds a pod of higher priority, so the third member
    // has nowhere to go; the gang still preempts for two.
    let snapshot = snapshot_with_groups(
        vec![
            node("n1", 2000, 4 * GI),
            node("n2", 2000, 4 * GI),
            node("n3", 2000, 4 * GI),
        ],
        vec![
            pod("low-1", 1, 2000, GI, Some("n1")),
            pod("low-2", 2, 2000, GI, Some("n2")),
            pod("high", 5000, 2000, GI, Some("n3")),
        ],
        vec![training(2)],
    );
    let members = [
        trainer("t-0", 2000),
        trainer("t-1", 2000),
        trainer("t-2", 2000),
    ];
    let decision = decide_group(&snapshot, &training(2), &members, &options());
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    assert_eq!(nominated(&decision), vec![("t-0", "n1"), ("t-1", "n2")]);
    assert_eq!(victim_names(&decision), vec!["low-2", "low-1"]);
    assert_eq!(
        decision
            .node_generations
            .iter()
            .map(|(n, _)| &**n)
            .collect::<Vec<_>>(),
        vec!["n1", "n2"]
    );
}

#[test]
fn an_all_mode_victim_spanning_two_nodes_is_evicted_on_both() {
    // The inference gang runs on n1 and n2; the trainer needs n1 only, but the gang goes
    // whole. `batch` on n3 is lower still and stays: returning it changes nothing.
    let snapshot = snapshot_with_groups(
        vec![
            node("n1", 2000, 4 * GI),
            node("n2", 2000, 4 * GI),
            node("n3", 2000, 4 * GI),
        ],
        vec![
            member(pod("inf-a", 10, 2000, GI, Some("n1")), "inference"),
            member(pod("inf-b", 10, 2000, GI, Some("n2")), "inference"),
            pod("batch", 1, 2000, GI, Some("n3")),
        ],
        vec![
            training(1),
            pod_group("inference", 100, DisruptionMode::All, Some(2)),
        ],
    );
    let decision = decide_group(&snapshot, &training(1), &[trainer("t-0", 2000)], &options());
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    assert_eq!(nominated(&decision), vec![("t-0", "n1")]);
    assert_eq!(victim_names(&decision), vec!["inf-a", "inf-b"]);
    assert_eq!(decision.pod_group_disruptions, 1);
}

#[test]
fn budget_violating_units_are_reprieved_first() {
    let mut guarded = pod("guarded", 5, 1000, GI, Some("n1"));
    guarded.labels = [("app", "db")].into_iter().collect();
    let mut snapshot = snapshot_with_groups(
        vec![node("n1", 3000, 8 * GI)],
        vec![
            guarded,
            pod("important", 8, 1000, GI, Some("n1")),
            pod("least", 3, 1000, GI, Some("n1")),
        ],
        vec![training(1)],
    );
    let budget = PodDisruptionBudget {
        namespace: "default".into(),
        name: "db".into(),
        uid: "db".into(),
        resource_version: 0,
        selector: Some(LabelSelector {
            match_labels: [("app", "db")].into_iter().collect(),
            match_expressions: Vec::new(),
        }),
        disruptions_allowed: 0,
        disrupted_pods: Vec::new(),
    };
    snapshot.pdbs = triomphe::Arc::new(vec![triomphe::Arc::new(budget)]);
    let decision = decide_group(&snapshot, &training(1), &[trainer("t-0", 2000)], &options());
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    // `guarded` is tried first and kept; then only 1000m are left for two pods.
    assert_eq!(victim_names(&decision), vec!["important", "least"]);
    assert_eq!(decision.pdb_violations, 0);

    let strict = GroupOptions {
        pdb_mode: PdbMode::Strict,
        ..options()
    };
    let decision = decide_group(&snapshot, &training(1), &[trainer("t-0", 3000)], &strict);
    assert_eq!(
        decision.outcome,
        Outcome::NoCandidate,
        "{}",
        decision.message
    );
}

#[test]
fn a_preemption_under_way_keeps_the_current_nominations() {
    let snapshot = snapshot_with_groups(
        vec![node("n1", 2000, 4 * GI)],
        vec![terminating_by_preemption(pod(
            "going",
            1,
            2000,
            GI,
            Some("n1"),
        ))],
        vec![training(1)],
    );
    let mut nominated_member = trainer("t-0", 2000);
    nominated_member.nominated_node_name = Some("n1".into());
    let decision = decide_group(&snapshot, &training(1), &[nominated_member], &options());
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    assert!(decision.victims.is_empty(), "nothing more is evicted");
    assert_eq!(nominated(&decision), vec![("t-0", "n1")]);
    assert!(
        decision.message.contains("ongoing preemption"),
        "{}",
        decision.message
    );
}

#[test]
fn a_unit_no_member_can_see_is_kept_without_filtering_and_the_answer_is_the_same() {
    // `far` sits on n2, where no member goes: kept. With anti-affinity it could see the
    // member and is filtered; the member ignores it, so it is kept all the same.
    let far = pod("far", 1, 500, GI, Some("n2"));
    let snapshot = snapshot_with_groups(
        vec![node("n1", 2000, 4 * GI), node("n2", 2000, 4 * GI)],
        vec![pod("near", 1, 2000, GI, Some("n1")), far],
        vec![training(1)],
    );
    let decision = decide_group(&snapshot, &training(1), &[trainer("t-0", 2000)], &options());
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    assert_eq!(nominated(&decision), vec![("t-0", "n1")]);
    assert_eq!(victim_names(&decision), vec!["near"]);
}

#[test]
fn the_placed_member_is_counted_once_when_units_are_reprieved() {
    // 3 GiB: the member (1.5 GiB) fits beside the older pod (1.25 GiB) but not beside both.
    const MI: i64 = 1 << 20;
    let mut older = pod("older", 0, 0, 1280 * MI, Some("n1"));
    older.start_time = Some(1).into();
    let mut newer = pod("newer", 0, 0, 640 * MI, Some("n1"));
    newer.start_time = Some(2).into();
    let snapshot = snapshot_with_groups(
        vec![node("n1", 4000, 3 * GI)],
        vec![older, newer],
        vec![training(1)],
    );
    let member = member(pod("t-0", TRAINING, 0, 1536 * MI, None), "training");
    let decision = decide_group(&snapshot, &training(1), &[member], &options());
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    assert_eq!(
        victim_names(&decision),
        ["newer"],
        "the older pod is reprieved"
    );
    assert_eq!(nominated(&decision), vec![("t-0", "n1")]);
}

/// A required anti-affinity term against `selector`'s pods in `default`, per zone.
fn zone_anti_affinity(selector: LabelSelector) -> crate::model::PodAffinityTerm {
    crate::model::PodAffinityTerm {
        label_selector: Some(selector),
        namespaces: Vec::new(),
        namespace_selector: None,
        topology_key: "zone".into(),
    }
}

#[test]
fn a_member_whose_placement_skipped_inter_pod_affinity_ignores_returned_anti_affinity() {
    // `guard` (on n2, same zone) has anti-affinity against every pod. With all victims
    // out nobody's anti-affinity matches the member, so upstream's InterPodAffinity
    // PreFilter skips, and the member's re-checks, in that cycle state, never read
    // `guard`: it is reprieved. A member with a term of its own runs the filter: `guard`
    // stays a victim.
    let zoned = |name: &str, cpu_milli: i64| {
        let mut n = node(name, cpu_milli, 4 * GI);
        n.labels = [("kubernetes.io/hostname", name), ("zone", "a")]
            .into_iter()
            .collect();
        n
    };
    let mut guard = started(pod("guard", 1, 100, GI, Some("n2")), 2);
    guard.details_mut().pod_anti_affinity = vec![zone_anti_affinity(LabelSelector::everything())];
    let guard = guard.finish();
    let snapshot = snapshot_with_groups(
        vec![zoned("n1", 2000), zoned("n2", 100)],
        vec![started(pod("near", 1, 2000, GI, Some("n1")), 1), guard],
        vec![training(1)],
    );
    let plain = trainer("t-0", 2000);
    let decision = decide_group(
        &snapshot,
        &training(1),
        std::slice::from_ref(&plain),
        &options(),
    );
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    assert_eq!(nominated(&decision), vec![("t-0", "n1")]);
    assert_eq!(victim_names(&decision), vec!["near"]);

    let mut wary = plain;
    let nobody = LabelSelector {
        match_labels: [("app", "none")].into_iter().collect(),
        match_expressions: Vec::new(),
    };
    wary.details_mut().pod_anti_affinity = vec![zone_anti_affinity(nobody)];
    let decision = decide_group(&snapshot, &training(1), &[wary.finish()], &options());
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    assert_eq!(victim_names(&decision), vec!["near", "guard"]);
}

#[test]
fn reprieve_checks_see_the_members_nominations_back() {
    // Both members are nominated to n6 (room for one). Placing, t-0 goes to n5 (once `big`
    // is out) and its nomination is withdrawn, so t-1 takes n6. For the reprieve upstream
    // has the nominations back: t-1's check on n6 counts t-0's nomination there and fails
    // whatever is returned, so `far` (on n4, where no member goes) stays a victim too.
    const MI: i64 = 1 << 20;
    let nominated_trainer = |name: &str| {
        let mut p = member(pod(name, TRAINING, 0, 1792 * MI, None), "training");
        p.nominated_node_name = Some("n6".into());
        p
    };
    let members = [nominated_trainer("t-0"), nominated_trainer("t-1")];
    let mut pods = vec![
        started(pod("big", 1, 0, 3328 * MI, Some("n5")), 1),
        started(pod("far", 1, 0, 0, Some("n4")), 2),
    ];
    pods.extend(members.iter().cloned());
    let snapshot = snapshot_with_groups(
        vec![
            node("n4", 0, 0),
            node("n5", 4000, 4 * GI),
            node("n6", 4000, 2 * GI),
        ],
        pods,
        vec![training(1)],
    );
    let decision = decide_group(&snapshot, &training(1), &members, &options());
    assert_eq!(decision.outcome, Outcome::Preempt, "{}", decision.message);
    assert_eq!(nominated(&decision), vec![("t-0", "n5"), ("t-1", "n6")]);
    assert_eq!(victim_names(&decision), vec!["big", "far"]);
}

#[test]
fn explain_names_a_few_tied_nodes_and_counts_the_rest() {
    let nodes = (0..12)
        .map(|i| node(&format!("n{i:02}"), 2000, 4 * GI))
        .collect();
    let snapshot = snapshot_with_groups(nodes, vec![], vec![training(1)]);
    let explained = GroupOptions {
        explain: true,
        ..options()
    };
    let decision = decide_group(&snapshot, &training(1), &[trainer("t-0", 500)], &explained);
    assert_eq!(decision.outcome, Outcome::Fits, "{}", decision.message);
    assert_eq!(
        decision.notes,
        vec![
            "member t-0 goes to n00 (score 450 of 12 feasible nodes; tied: n00, n01, n02, n03, \
             n04, n05, n06, n07, and 4 more)"
                .to_string()
        ]
    );
}
