//! Each plugin's scores worked out by hand from upstream's formulas, and the view against
//! snapshots built with the same pods.

use triomphe::Arc;

use super::*;
use crate::engine::test_support::{GI, node, pod, snapshot};
use crate::model::{
    BIND_ALL_IP, ContainerImage, HostPort, LabelSelector, Labels, Node, NodeSelectorOperator,
    NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, PreferredSchedulingTerm, Protocol,
    Taint, TaintEffect, TopologySpreadConstraint, WeightedPodAffinityTerm, WhenUnsatisfiable,
};

const MB: i64 = 1024 * 1024;

fn labelled(mut n: Node, pairs: &[(&str, &str)]) -> Node {
    let mut all: Vec<(Str, Str)> = n
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    all.extend(pairs.iter().map(|(k, v)| (Str::from(*k), Str::from(*v))));
    n.labels = Labels::new(all);
    n
}

fn with_labels(mut p: Pod, pairs: &[(&str, &str)]) -> Pod {
    p.labels = pairs.iter().copied().collect();
    p
}

fn selector(key: &str, value: &str) -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: [(key, value)].into_iter().collect(),
        match_expressions: Vec::new(),
    })
}

fn term(key: &str, value: &str, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: selector(key, value),
        namespaces: Vec::new(),
        namespace_selector: None,
        topology_key: topology_key.into(),
    }
}

fn column(placement: &Placement, plugin: &str) -> Vec<(String, i64)> {
    let at = PLUGINS
        .iter()
        .position(|(name, _)| *name == plugin)
        .unwrap();
    let mut scores: Vec<(String, i64)> = placement
        .scores
        .iter()
        .map(|s| (s.node.to_string(), s.plugins[at]))
        .collect();
    scores.sort();
    scores
}

fn place(snapshot: &Snapshot, pod: &Pod) -> Placement {
    ClusterView::new(snapshot, KubernetesVersion::V1_37).place(pod)
}

fn pairs(expected: &[(&str, i64)]) -> Vec<(String, i64)> {
    expected.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

#[test]
fn least_allocated_and_balanced_allocation_follow_the_integer_formulas() {
    // Fit: (free × 100 / allocatable) per resource, then the mean: n1 (75 + 75) / 2 = 75,
    // n2 (50 + 75) / 2 = 62. Balanced (v1.36 on): 50 + (50 + with − without) / 2 with
    // (1 − |f_cpu − f_mem| / 2) × 100 truncated: n1 50 + (50 + 100 − 100) / 2 = 75,
    // n2 with 87 (fractions .5, .25), without 100: 50 + 37 / 2 = 68.
    let s = snapshot(
        vec![node("n1", 4000, 8 * GI), node("n2", 2000, 8 * GI)],
        vec![],
    );
    let p = pod("p", 0, 1000, 2 * GI, None);
    let placed = place(&s, &p);
    assert_eq!(
        column(&placed, resources_fit::NAME),
        pairs(&[("n1", 75), ("n2", 62)])
    );
    assert_eq!(
        column(&placed, balanced_allocation::NAME),
        pairs(&[("n1", 75), ("n2", 68)])
    );
    // TaintToleration: no taint anywhere, reversed normalisation gives 100 × weight 3.
    assert_eq!(placed.node.as_deref(), Some("n1"));
    assert_eq!(placed.total, 300 + 75 + 75);
    assert_eq!(placed.scores[1].total, 300 + 62 + 68);
    // v1.35 scores the balance with the pod alone: 100 and 87.
    let v135 = ClusterView::new(&s, KubernetesVersion::V1_35).place(&p);
    assert_eq!(
        column(&v135, balanced_allocation::NAME),
        pairs(&[("n1", 100), ("n2", 87)])
    );
}

#[test]
fn requests_left_unset_count_at_the_non_zero_defaults_for_least_allocated_only() {
    // A container without requests counts 100m and 200 MiB: with one such pod on the node
    // and the pod itself, 200m of 4000m → 95, 400 MiB of 8 GiB → 779200 / 8192 = 95.
    let mut empty = pod("e", 0, 0, 0, Some("n1"));
    empty.details_mut().containers[0].requests = Default::default();
    let empty = empty.finish();
    assert_eq!(empty.details.non_zero_requests.milli_cpu, 100);
    assert_eq!(empty.details.non_zero_requests.memory, 200 * MB);
    let s = snapshot(
        vec![node("n1", 4000, 8 * GI), node("n2", 4000, 8 * GI)],
        vec![empty.clone()],
    );
    let mut p = empty.clone().renamed("p", "p");
    p.node_name = None;
    let placed = place(&s, &p);
    assert_eq!(
        column(&placed, resources_fit::NAME)[0],
        ("n1".to_string(), 95)
    );
    // BalancedAllocation reads real requests: a pod requesting nothing is skipped.
    assert_eq!(
        column(&placed, balanced_allocation::NAME),
        pairs(&[("n1", 0), ("n2", 0)])
    );
}

#[test]
fn untolerated_prefer_no_schedule_taints_score_in_reverse() {
    // Raw counts 2, 1, 0; max 2: 100 − 100 × c / 2.
    let prefer = |mut n: Node, keys: &[&str]| {
        for key in keys {
            n.taints.push(Taint {
                key: (*key).into(),
                value: "".into(),
                effect: TaintEffect::PreferNoSchedule,
            });
        }
        n
    };
    let s = snapshot(
        vec![
            prefer(node("n1", 4000, 8 * GI), &["a", "b"]),
            prefer(node("n2", 4000, 8 * GI), &["a"]),
            node("n3", 4000, 8 * GI),
        ],
        vec![],
    );
    let placed = place(&s, &pod("p", 0, 100, GI, None));
    assert_eq!(
        column(&placed, taint_toleration::NAME),
        pairs(&[("n1", 0), ("n2", 50), ("n3", 100)])
    );
    assert_eq!(placed.node.as_deref(), Some("n3"));
}

#[test]
fn preferred_node_affinity_sums_matching_weights_scaled_to_the_largest() {
    // n1 matches both terms (15), n2 one (10), n3 none: 100, 100 × 10 / 15 = 66, 0.
    let s = snapshot(
        vec![
            labelled(node("n1", 4000, 8 * GI), &[("zone", "a"), ("disk", "ssd")]),
            labelled(node("n2", 4000, 8 * GI), &[("zone", "a")]),
            node("n3", 4000, 8 * GI),
        ],
        vec![],
    );
    let mut p = pod("p", 0, 100, GI, None);
    let preferred = |weight, key: &str, value: &str| PreferredSchedulingTerm {
        weight,
        preference: NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement {
                key: key.into(),
                operator: NodeSelectorOperator::In,
                values: vec![value.into()],
            }],
            match_fields: Vec::new(),
        },
    };
    p.details_mut().preferred_node_affinity =
        vec![preferred(10, "zone", "a"), preferred(5, "disk", "ssd")];
    let placed = place(&s, &p);
    assert_eq!(
        column(&placed, node_affinity::NAME),
        pairs(&[("n1", 100), ("n2", 66), ("n3", 0)])
    );
    // Without preferred terms the plugin skips: 0 everywhere.
    let plain = place(&s, &pod("q", 0, 100, GI, None));
    assert!(
        column(&plain, node_affinity::NAME)
            .iter()
            .all(|(_, s)| *s == 0)
    );
}

#[test]
fn inter_pod_affinity_weighs_own_and_existing_terms_per_domain() {
    // Domains: zone a −5 (anti-affinity to db), hostname n1 +10 (affinity to db), zone b
    // +1 (the cache pod's required affinity to web, hardPodAffinityWeight 1). Node sums
    // n1 5, n2 −5, n3 1; min–max scaled: 100, 0, 100 × 6 / 10 = 60.
    let nodes = vec![
        labelled(node("n1", 4000, 8 * GI), &[("zone", "a")]),
        labelled(node("n2", 4000, 8 * GI), &[("zone", "a")]),
        labelled(node("n3", 4000, 8 * GI), &[("zone", "b")]),
    ];
    let db = with_labels(pod("db", 0, 100, GI, Some("n1")), &[("app", "db")]);
    let mut cache = pod("cache", 0, 100, GI, Some("n3"));
    cache.details_mut().pod_affinity = vec![term("app", "web", "zone")];
    let s = snapshot(nodes, vec![db, cache]);
    let mut p = with_labels(pod("p", 0, 100, GI, None), &[("app", "web")]);
    p.details_mut().preferred_pod_affinity = vec![WeightedPodAffinityTerm {
        weight: 10,
        term: term("app", "db", "kubernetes.io/hostname"),
    }];
    p.details_mut().preferred_pod_anti_affinity = vec![WeightedPodAffinityTerm {
        weight: 5,
        term: term("app", "db", "zone"),
    }];
    let placed = place(&s, &p);
    assert_eq!(
        column(&placed, inter_pod_affinity::NAME),
        pairs(&[("n1", 100), ("n2", 0), ("n3", 60)])
    );
}

#[test]
fn schedule_anyway_spread_scores_fewer_matching_pods_higher() {
    // Zone a holds 2 matching pods, b none; 2 domains: weight ln(4). Raw n1 = n2 =
    // round(2 × 1.386) = 3, n3 = 0; normalised 100 × (3 + 0 − s) / 3: 0, 0, 100. n4 lacks
    // the zone label: ignored, 0.
    let nodes = vec![
        labelled(node("n1", 4000, 8 * GI), &[("zone", "a")]),
        labelled(node("n2", 4000, 8 * GI), &[("zone", "a")]),
        labelled(node("n3", 4000, 8 * GI), &[("zone", "b")]),
        node("n4", 4000, 8 * GI),
    ];
    let web = |name: &str| with_labels(pod(name, 0, 100, GI, Some("n1")), &[("app", "web")]);
    let s = snapshot(nodes, vec![web("w1"), web("w2")]);
    let mut p = with_labels(pod("p", 0, 100, GI, None), &[("app", "web")]);
    p.details_mut().topology_spread = vec![TopologySpreadConstraint {
        max_skew: 1,
        topology_key: "zone".into(),
        when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
        label_selector: selector("app", "web"),
        min_domains: None,
        match_label_keys: Vec::new(),
        node_affinity_policy: crate::model::InclusionPolicy::Honor,
        node_taints_policy: crate::model::InclusionPolicy::Ignore,
    }];
    let placed = place(&s, &p);
    assert_eq!(
        column(&placed, pod_topology_spread::NAME),
        pairs(&[("n1", 0), ("n2", 0), ("n3", 100), ("n4", 0)])
    );
}

#[test]
fn image_locality_scales_sizes_by_spread_between_the_thresholds() {
    // nginx (normalised nginx:latest), 500 MiB on one node of two: 250 MiB;
    // 100 × (250 − 23) / (1000 − 23) = 23.
    let mut n1 = node("n1", 4000, 8 * GI);
    n1.images = vec![ContainerImage {
        names: vec!["nginx:latest".into()],
        size_bytes: 500 * MB,
    }];
    let s = snapshot(vec![n1, node("n2", 4000, 8 * GI)], vec![]);
    let mut p = pod("p", 0, 100, GI, None);
    p.details_mut().containers[0].image = "nginx".into();
    let p = p.finish();
    assert_eq!(p.details.images, vec![Str::from("nginx:latest")]);
    let placed = place(&s, &p);
    assert_eq!(
        column(&placed, image_locality::NAME),
        pairs(&[("n1", 23), ("n2", 0)])
    );
    assert_eq!(image_locality::calculate_priority(5000 * MB, 2), 100);
    assert_eq!(image_locality::calculate_priority(0, 1), 0);
}

#[test]
fn equal_totals_go_to_the_lowest_name_and_are_listed() {
    let s = snapshot(
        vec![
            node("n2", 4000, 8 * GI),
            node("n1", 4000, 8 * GI),
            node("n3", 2000, GI),
        ],
        vec![],
    );
    let placed = place(&s, &pod("p", 0, 100, GI / 2, None));
    assert_eq!(placed.node.as_deref(), Some("n1"));
    assert_eq!(placed.tied, vec![Str::from("n1"), Str::from("n2")]);
    assert_eq!(placed.feasible, 3);
}

#[test]
fn a_fitting_nominated_node_or_a_single_feasible_node_is_taken_unscored() {
    let s = snapshot(
        vec![node("n1", 4000, 8 * GI), node("n2", 4000, 8 * GI)],
        vec![],
    );
    let mut p = pod("p", 0, 100, GI, None);
    p.nominated_node_name = Some("n2".into());
    let placed = place(&s, &p);
    assert_eq!(placed.node.as_deref(), Some("n2"));
    assert!(placed.scores.is_empty());
    let big = pod("big", 0, 3000, GI, None);
    let small = snapshot(
        vec![node("n1", 4000, 8 * GI), node("n2", 2000, 8 * GI)],
        vec![],
    );
    let placed = place(&small, &big);
    assert_eq!((placed.node.as_deref(), placed.feasible), (Some("n1"), 1));
    let none = place(&small, &pod("huge", 0, 9000, GI, None));
    assert_eq!(none.node, None);
    assert_eq!(none.message, "0/2 nodes are available: 2 Insufficient cpu.");
}

/// A cluster whose pods exercise every filter and score that reads other pods.
fn busy_cluster() -> (Vec<Node>, Vec<Pod>) {
    let nodes = (0..6)
        .map(|i| {
            labelled(
                node(&format!("n{i}"), 4000, 8 * GI),
                &[("zone", if i % 2 == 0 { "a" } else { "b" })],
            )
        })
        .collect();
    let mut pods = Vec::new();
    for i in 0..10 {
        let mut p = with_labels(
            pod(
                &format!("w{i}"),
                i % 3,
                300,
                GI / 2,
                Some(&format!("n{}", i % 4)),
            ),
            &[("app", if i % 2 == 0 { "web" } else { "db" })],
        );
        if i % 3 == 0 {
            p.details_mut().pod_anti_affinity =
                vec![term("app", "batch", "kubernetes.io/hostname")];
        }
        if i % 4 == 1 {
            p.details_mut().preferred_pod_affinity = vec![WeightedPodAffinityTerm {
                weight: 7,
                term: term("app", "web", "zone"),
            }];
        }
        pods.push(p);
    }
    (nodes, pods)
}

fn preemptor() -> Pod {
    let mut p = with_labels(pod("p", 5, 500, GI, None), &[("app", "web")]);
    p.details_mut().topology_spread = vec![TopologySpreadConstraint {
        max_skew: 1,
        topology_key: "zone".into(),
        when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
        label_selector: selector("app", "web"),
        min_domains: None,
        match_label_keys: Vec::new(),
        node_affinity_policy: crate::model::InclusionPolicy::Honor,
        node_taints_policy: crate::model::InclusionPolicy::Ignore,
    }];
    p.details_mut().preferred_pod_anti_affinity = vec![WeightedPodAffinityTerm {
        weight: 3,
        term: term("app", "db", "kubernetes.io/hostname"),
    }];
    p
}

#[test]
fn a_view_with_pods_removed_filters_and_scores_as_a_snapshot_without_them() {
    let (nodes, pods) = busy_cluster();
    let full = snapshot(nodes.clone(), pods.clone());
    let gone: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.name().ends_with(['1', '2', '6']))
        .collect();
    let mut view = ClusterView::new(&full, KubernetesVersion::V1_37);
    assert_eq!(view.remove_pods(gone.iter().copied()), gone.len());
    assert_eq!(view.remove_pods(gone.iter().copied()), 0, "gone already");
    let kept: Vec<Pod> = pods
        .iter()
        .filter(|p| !gone.iter().any(|g| g.uid() == p.uid()))
        .cloned()
        .collect();
    let expected = ClusterView::new(&snapshot(nodes, kept), KubernetesVersion::V1_37);
    let p = preemptor();
    assert_eq!(view.place(&p), expected.place(&p));
    for i in 0..6 {
        let name = format!("n{i}");
        assert_eq!(view.fits(&p, &name), expected.fits(&p, &name), "{name}");
    }
}

#[test]
fn a_view_with_pods_added_filters_and_scores_as_a_snapshot_with_them() {
    let (nodes, pods) = busy_cluster();
    let base = snapshot(nodes.clone(), pods.clone());
    // A pending member assumed on n5, with a label no pod in the cache carries.
    let mut member = with_labels(pod("m", 5, 500, GI, None), &[("app", "batch")]);
    member.nominated_node_name = Some("n4".into());
    let mut view = ClusterView::new(&base, KubernetesVersion::V1_37);
    assert!(view.add_pod(Arc::new(member.clone()), &Str::from("n5")));
    let mut bound = member;
    bound.node_name = Some("n5".into());
    let mut all = pods;
    all.push(bound);
    let expected = ClusterView::new(&snapshot(nodes, all), KubernetesVersion::V1_37);
    // The anti-affinity terms of the cluster's pods now see a batch pod on n5.
    let mut batch = preemptor();
    batch.labels = [("app", "batch")].into_iter().collect();
    for p in [preemptor(), batch] {
        assert_eq!(view.place(&p), expected.place(&p));
        for i in 0..6 {
            let name = format!("n{i}");
            assert_eq!(view.fits(&p, &name), expected.fits(&p, &name), "{name}");
        }
    }
}

#[test]
fn a_view_forgets_a_host_port_another_pod_still_binds_as_upstreams_port_set_does() {
    // `a` and `b` both bind 8080 on n1 (bound by name, past the scheduler). Taking `a`
    // off deletes 8080 from upstream's port set though `b` holds it: a pod asking for it
    // fits; putting `a` back restores the port.
    let with_port = |mut p: Pod| {
        p.details_mut().containers[0].ports = vec![HostPort {
            ip: BIND_ALL_IP.into(),
            protocol: Protocol::Tcp,
            port: 8080,
        }];
        p.finish()
    };
    let a = with_port(pod("a", 0, 100, GI, Some("n1")));
    let b = with_port(pod("b", 0, 100, GI, Some("n1")));
    let base = snapshot(vec![node("n1", 4000, 8 * GI)], vec![a.clone(), b]);
    let wants = with_port(pod("p", 10, 100, GI, None));
    let mut view = ClusterView::new(&base, KubernetesVersion::V1_37);
    assert!(view.fits(&wants, "n1").is_err(), "8080 is bound");
    assert_eq!(view.remove_pods([&a]), 1);
    assert_eq!(view.fits(&wants, "n1"), Ok(()), "forgotten with `a`");
    assert!(view.add_pod(Arc::new(a), &Str::from("n1")));
    assert!(view.fits(&wants, "n1").is_err(), "bound again");
}

#[test]
fn members_placed_in_turn_with_a_memo_go_where_fresh_placements_send_them() {
    // A gang on the busy cluster: each member assumed where it goes, so nodes fill up and
    // the memo must re-read every node the view changed. `batch` members are seen by the
    // cluster's anti-affinity (the memo is not used for them, and is cleared), `web` ones
    // are weighed by pods' preferred affinity, and a nominated pod on n2 counts for each
    // member but not for itself.
    let (nodes, mut pods) = busy_cluster();
    let mut nominated = with_labels(pod("held", 9, 2000, GI, None), &[("app", "train")]);
    nominated.nominated_node_name = Some("n2".into());
    pods.push(nominated);
    let base = snapshot(nodes, pods);
    let mut view = ClusterView::new(&base, KubernetesVersion::V1_37);
    let mut memo = PlacementMemo::default();
    let member = |i: usize, app: &str| {
        with_labels(pod(&format!("m{i}"), 9, 1500, GI, None), &[("app", app)])
    };
    let members: Vec<Pod> = (0..12)
        .map(|i| {
            let app = match i {
                4 | 5 => "batch",
                6..=9 => "web",
                _ => "train",
            };
            member(i, app)
        })
        .collect();
    // Between the `web` members, the pods whose preferred affinity weighs `web` pods'
    // zones leave and come back: InterPodAffinity's weights follow them.
    let weighing: Vec<Arc<Pod>> = base
        .nodes
        .iter()
        .flat_map(|info| info.pods.iter())
        .filter(|p| !p.details.preferred_pod_affinity.is_empty())
        .cloned()
        .collect();
    assert!(!weighing.is_empty());
    let mut placed = 0;
    for m in members {
        match m.name() {
            "m7" => {
                let gone = view.remove_pods(weighing.iter().map(|p| &**p));
                assert_eq!(gone, weighing.len());
            }
            "m9" => {
                for p in &weighing {
                    assert!(view.add_pod(p.clone(), p.node_name.as_ref().unwrap()));
                }
            }
            _ => {}
        }
        let fresh = view.place(&m);
        let remembered = view.place_remembering(&m, &mut memo, true);
        assert_eq!(
            (
                &remembered.node,
                remembered.total,
                &remembered.tied,
                remembered.feasible
            ),
            (&fresh.node, fresh.total, &fresh.tied, fresh.feasible),
            "{}",
            m.name()
        );
        assert_eq!(remembered.message, fresh.message, "{}", m.name());
        assert!(remembered.scores.is_empty());
        let chosen_only = view.place_remembering(&m, &mut memo, false);
        assert_eq!(chosen_only.tied, Vec::from_iter(fresh.node.clone()));
        if let Some(node) = fresh.node {
            view.assume(Arc::new(m), &node);
            placed += 1;
        }
    }
    assert!(
        (1..12).contains(&placed),
        "some members fit, not all: {placed}"
    );
}
