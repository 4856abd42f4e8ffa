//! One test (or a few) per filter plugin, through the library: the status code and reason
//! of each failure, and what it means for preemption.

mod common;

use common::*;
use preemptd::engine::{Code, Decision, Outcome};
use preemptd::model::quantity::Quantity;
use preemptd::model::{
    ContainerResources, InclusionPolicy, LabelSelector, NodeSelector, NodeSelectorOperator,
    NodeSelectorRequirement, NodeSelectorTerm, Operator, PodAffinityTerm, Requirement, Str,
    Toleration, TolerationOperator, TopologySpreadConstraint, WhenUnsatisfiable,
};

const GI: i64 = 1 << 30;

fn filter_of<'a>(d: &'a Decision, node: &str) -> &'a preemptd::engine::Status {
    &d.diagnostics
        .iter()
        .find(|n| &*n.node == node)
        .expect("node diagnosed")
        .filter
}

fn requirement(key: &str, op: NodeSelectorOperator, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: op,
        values: values.iter().map(|v| Str::from(*v)).collect(),
    }
}

fn affinity_term(
    exprs: Vec<NodeSelectorRequirement>,
    fields: Vec<NodeSelectorRequirement>,
) -> NodeSelector {
    NodeSelector {
        terms: vec![NodeSelectorTerm {
            match_expressions: exprs,
            match_fields: fields,
        }],
    }
}

#[test]
fn node_unschedulable_is_unresolvable_unless_tolerated() {
    let mut cordoned = node("n", 1000, GI);
    cordoned.unschedulable = true;
    let cluster = Cluster::new(vec![cordoned], vec![], vec![]);
    let p = pod("p", 0, 100, 0, None);
    let d = cluster.decide(&p);
    assert_eq!(filter_of(&d, "n").code, Code::UnschedulableAndUnresolvable);
    assert_eq!(
        filter_of(&d, "n").reasons.as_slice(),
        ["node(s) were unschedulable"]
    );
    let mut tolerant = p.clone();
    tolerant.details_mut().tolerations.push(Toleration {
        key: "node.kubernetes.io/unschedulable".into(),
        operator: TolerationOperator::Exists,
        value: "".into(),
        effect: None,
    });
    assert_eq!(cluster.decide(&tolerant).outcome, Outcome::Fits);
}

#[test]
fn node_name_pins_the_pod() {
    let cluster = Cluster::new(
        vec![node("a", 1000, GI), node("b", 1000, GI)],
        vec![],
        vec![],
    );
    let mut p = pod("p", 0, 100, 0, None);
    p.node_name = Some("b".into());
    let d = cluster.decide(&p);
    assert_eq!(d.feasible_nodes, vec![Str::from("b")]);
    assert_eq!(
        filter_of(&d, "a").reasons.as_slice(),
        ["node(s) didn't match the requested node name"]
    );
}

#[test]
fn tolerations_follow_upstream_matching() {
    let taint_node = tainted(node("n", 1000, GI), "k", "v");
    let cluster = Cluster::new(vec![taint_node], vec![], vec![]);
    let with = |key: &str, op, value: &str| {
        let mut p = pod("p", 0, 100, 0, None);
        p.details_mut().tolerations.push(Toleration {
            key: key.into(),
            operator: op,
            value: value.into(),
            effect: None,
        });
        p
    };
    assert_eq!(
        cluster
            .decide(&with("k", TolerationOperator::Equal, "v"))
            .outcome,
        Outcome::Fits
    );
    assert_eq!(
        cluster
            .decide(&with("k", TolerationOperator::Exists, ""))
            .outcome,
        Outcome::Fits
    );
    assert_eq!(
        cluster
            .decide(&with("", TolerationOperator::Exists, ""))
            .outcome,
        Outcome::Fits
    );
    assert_eq!(
        cluster
            .decide(&with("k", TolerationOperator::Equal, "other"))
            .outcome,
        Outcome::NoCandidate
    );
    // PreferNoSchedule taints never filter.
    let mut soft = node("s", 1000, GI);
    soft.taints.push(preemptd::model::Taint {
        key: "k".into(),
        value: "v".into(),
        effect: preemptd::model::TaintEffect::PreferNoSchedule,
    });
    let cluster = Cluster::new(vec![soft], vec![], vec![]);
    assert_eq!(
        cluster.decide(&pod("p", 0, 100, 0, None)).outcome,
        Outcome::Fits
    );
}

#[test]
fn node_affinity_operators() {
    let n = with_labels(node("n", 1000, GI), &[("gen", "5"), ("zone", "a")]);
    let cluster = Cluster::new(vec![n], vec![], vec![]);
    let fits = |sel: NodeSelector| {
        let mut p = pod("p", 0, 100, 0, None);
        p.details_mut().required_node_affinity = Some(sel);
        cluster.decide(&p).outcome == Outcome::Fits
    };
    use NodeSelectorOperator::*;
    assert!(fits(affinity_term(
        vec![requirement("gen", Gt, &["4"])],
        vec![]
    )));
    assert!(!fits(affinity_term(
        vec![requirement("gen", Gt, &["5"])],
        vec![]
    )));
    assert!(fits(affinity_term(
        vec![requirement("gen", Lt, &["6"])],
        vec![]
    )));
    assert!(
        !fits(affinity_term(vec![requirement("zone", Gt, &["1"])], vec![])),
        "non-integer label"
    );
    assert!(fits(affinity_term(
        vec![requirement("missing", NotIn, &["x"])],
        vec![]
    )));
    assert!(fits(affinity_term(
        vec![requirement("missing", DoesNotExist, &[])],
        vec![]
    )));
    assert!(!fits(affinity_term(
        vec![requirement("zone", In, &["b"])],
        vec![]
    )));
    assert!(fits(affinity_term(
        vec![],
        vec![requirement("metadata.name", In, &["n"])]
    )));
    assert!(!fits(affinity_term(
        vec![],
        vec![requirement("metadata.name", NotIn, &["n"])]
    )));
    assert!(
        !fits(affinity_term(vec![], vec![])),
        "an empty term matches nothing"
    );
    assert!(
        !fits(NodeSelector { terms: vec![] }),
        "no terms match nothing"
    );
    // OR over terms.
    let mut either = affinity_term(vec![requirement("zone", In, &["b"])], vec![]);
    either.terms.push(NodeSelectorTerm {
        match_expressions: vec![requirement("zone", In, &["a"])],
        match_fields: vec![],
    });
    assert!(fits(either));
    // nodeSelector must hold too.
    let mut p = pod("p", 0, 100, 0, None);
    p.details_mut().node_selector = [("zone", "b")].into_iter().collect();
    let d = cluster.decide(&p);
    assert_eq!(
        filter_of(&d, "n").reasons.as_slice(),
        ["node(s) didn't match Pod's node affinity/selector"]
    );
}

#[test]
fn resources_fit_is_unresolvable_only_when_the_request_exceeds_allocatable() {
    let cluster = Cluster::new(
        vec![node("small", 500, GI), node("busy", 1000, GI)],
        vec![
            pod("low", 0, 800, 0, Some("busy")),
            pod("low2", 0, 100, 0, Some("small")),
        ],
        vec![],
    );
    let d = cluster.decide(&pod("p", 10, 600, 0, None));
    assert_eq!(
        filter_of(&d, "small").code,
        Code::UnschedulableAndUnresolvable
    );
    assert_eq!(filter_of(&d, "busy").code, Code::Unschedulable);
    assert_eq!(
        filter_of(&d, "busy").reasons.as_slice(),
        ["Insufficient cpu"]
    );
    assert_eq!(d.nominated_node.as_deref(), Some("busy"));
}

#[test]
fn extended_resources_are_checked_and_missing_ones_mean_zero() {
    let mut gpu_node = node("gpu", 1000, GI);
    gpu_node.allocatable.scalars = vec![("example.com/gpu".into(), 2)];
    let cluster = Cluster::new(vec![gpu_node, node("plain", 1000, GI)], vec![], vec![]);
    let mut p = pod("p", 0, 100, 0, None);
    p.details_mut().containers[0].requests = ContainerResources::new(vec![
        ("cpu".into(), Quantity::from_millis(100)),
        ("example.com/gpu".into(), Quantity::from_units(1)),
    ]);
    let p = p.finish();
    let d = cluster.decide(&p);
    assert_eq!(d.feasible_nodes, vec![Str::from("gpu")]);
    assert_eq!(
        filter_of(&d, "plain").reasons.as_slice(),
        ["Insufficient example.com/gpu"]
    );
    assert_eq!(
        filter_of(&d, "plain").code,
        Code::UnschedulableAndUnresolvable
    );
}

#[test]
fn a_pod_requesting_nothing_only_needs_a_pod_slot() {
    // Over-committed node (by an existing pod) still takes a pod that requests nothing.
    let cluster = Cluster::new(
        vec![node("n", 100, GI)],
        vec![pod("big", 20, 500, 0, Some("n"))],
        vec![],
    );
    assert_eq!(
        cluster.decide(&pod("empty", 0, 0, 0, None)).outcome,
        Outcome::Fits
    );
}

fn spread(key: &str, max_skew: i32, app: &str) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
        label_selector: Some(selector(&[("app", app)])),
        min_domains: None,
        match_label_keys: Vec::new(),
        node_affinity_policy: InclusionPolicy::Honor,
        node_taints_policy: InclusionPolicy::Ignore,
    }
}

fn zoned(name: &str, zone: &str) -> preemptd::model::Node {
    with_labels(node(name, 1000, GI), &[("zone", zone)])
}

fn web(name: &str, priority: i32, node: &str) -> preemptd::model::Pod {
    labelled(pod(name, priority, 100, 0, Some(node)), &[("app", "web")])
}

#[test]
fn topology_spread_skew_and_missing_key() {
    let cluster = Cluster::new(
        vec![zoned("a1", "a"), zoned("b1", "b"), node("nokey", 1000, GI)],
        vec![web("w1", 20, "a1"), web("w2", 20, "a1")],
        vec![],
    );
    let mut p = labelled(pod("p", 10, 100, 0, None), &[("app", "web")]);
    p.details_mut()
        .topology_spread
        .push(spread("zone", 1, "web"));
    let d = cluster.decide(&p);
    assert_eq!(d.feasible_nodes, vec![Str::from("b1")]);
    assert_eq!(filter_of(&d, "a1").code, Code::Unschedulable);
    assert_eq!(
        filter_of(&d, "nokey").code,
        Code::UnschedulableAndUnresolvable
    );
    assert_eq!(
        filter_of(&d, "nokey").reasons.as_slice(),
        ["node(s) didn't match pod topology spread constraints (missing required label)"]
    );
    // ScheduleAnyway never filters.
    let mut soft = p.clone();
    soft.details_mut().topology_spread[0].when_unsatisfiable = WhenUnsatisfiable::ScheduleAnyway;
    assert_eq!(cluster.decide(&soft).feasible_nodes.len(), 3);
}

#[test]
fn topology_spread_preempts_lower_priority_pods_in_the_crowded_domain() {
    // Zone b is full (cpu), zone a has two lower-priority web pods; skew forces the pod to
    // b... unless preemption in a removes a web pod — but b has no web pods, so a only
    // works after removing enough lower-priority web pods.
    let mut b = zoned("b1", "b");
    b.allocatable.milli_cpu = 100;
    let cluster = Cluster::new(
        vec![zoned("a1", "a"), b],
        vec![
            web("w1", 0, "a1"),
            web("w2", 0, "a1"),
            pod("filler", 20, 100, 0, Some("b1")),
        ],
        vec![],
    );
    let mut p = labelled(pod("p", 10, 100, 0, None), &[("app", "web")]);
    p.details_mut()
        .topology_spread
        .push(spread("zone", 1, "web"));
    let d = cluster.decide(&p);
    assert_eq!(d.outcome, Outcome::Preempt);
    assert_eq!(d.nominated_node.as_deref(), Some("a1"));
    // a=2, b=0: to place in a with maxSkew 1 both must go (count a + 1 − 0 ≤ 1).
    assert_eq!(victim_names(&d), vec!["w1", "w2"]);
}

#[test]
fn topology_spread_min_domains_forces_global_minimum_to_zero() {
    let cluster = Cluster::new(
        vec![zoned("a1", "a"), zoned("b1", "b")],
        vec![web("w1", 20, "a1"), web("w2", 20, "b1")],
        vec![],
    );
    let mut p = labelled(pod("p", 10, 100, 0, None), &[("app", "web")]);
    p.details_mut()
        .topology_spread
        .push(spread("zone", 1, "web"));
    assert_eq!(cluster.decide(&p).outcome, Outcome::Fits);
    // Two domains < minDomains 3: global minimum 0, skew 1 + 1 − 0 = 2 > 1 everywhere.
    p.details_mut().topology_spread[0].min_domains = Some(3);
    assert_eq!(cluster.decide(&p).outcome, Outcome::NoCandidate);
}

#[test]
fn topology_spread_match_label_keys_narrow_the_selector() {
    let cluster = Cluster::new(
        vec![zoned("a1", "a"), zoned("b1", "b")],
        vec![
            labelled(
                pod("old1", 20, 100, 0, Some("a1")),
                &[("app", "web"), ("rev", "1")],
            ),
            labelled(
                pod("old2", 20, 100, 0, Some("a1")),
                &[("app", "web"), ("rev", "1")],
            ),
        ],
        vec![],
    );
    let mut p = labelled(pod("p", 10, 100, 0, None), &[("app", "web"), ("rev", "2")]);
    p.details_mut()
        .topology_spread
        .push(spread("zone", 1, "web"));
    assert_eq!(cluster.decide(&p).feasible_nodes, vec![Str::from("b1")]);
    // Counting only rev=2 pods: both zones are empty, both fit.
    p.details_mut().topology_spread[0]
        .match_label_keys
        .push("rev".into());
    assert_eq!(cluster.decide(&p).feasible_nodes.len(), 2);
}

#[test]
fn topology_spread_honours_node_affinity_when_counting() {
    // Zone c only matches nodes the pod's nodeSelector excludes: it is not counted.
    let cluster = Cluster::new(
        vec![
            with_labels(zoned("a1", "a"), &[("tier", "x")]),
            with_labels(zoned("c1", "c"), &[("tier", "y")]),
        ],
        vec![web("w1", 20, "a1")],
        vec![],
    );
    let mut p = labelled(pod("p", 10, 100, 0, None), &[("app", "web")]);
    p.details_mut().node_selector = [("tier", "x")].into_iter().collect();
    p.details_mut()
        .topology_spread
        .push(spread("zone", 1, "web"));
    // Eligible domains: only a (count 1) → min 1 → skew 1 + 1 − 1 = 1 fits.
    assert_eq!(cluster.decide(&p).feasible_nodes, vec![Str::from("a1")]);
    // Ignoring node affinity, zone c (0) counts → skew 2 → no fit on a1.
    p.details_mut().topology_spread[0].node_affinity_policy = InclusionPolicy::Ignore;
    assert_eq!(cluster.decide(&p).outcome, Outcome::NoCandidate);
}

fn pod_affinity(match_labels: &[(&str, &str)], key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector(match_labels)),
        namespaces: Vec::new(),
        namespace_selector: None,
        topology_key: key.into(),
    }
}

#[test]
fn pod_affinity_requires_a_matching_pod_in_the_domain() {
    let cluster = Cluster::new(
        vec![zoned("a1", "a"), zoned("b1", "b")],
        vec![labelled(
            pod("db", 20, 100, 0, Some("a1")),
            &[("app", "db")],
        )],
        vec![],
    );
    let mut p = pod("p", 10, 100, 0, None);
    p.details_mut()
        .pod_affinity
        .push(pod_affinity(&[("app", "db")], "zone"));
    let d = cluster.decide(&p);
    assert_eq!(d.feasible_nodes, vec![Str::from("a1")]);
    assert_eq!(filter_of(&d, "b1").code, Code::UnschedulableAndUnresolvable);
    assert_eq!(
        filter_of(&d, "b1").reasons.as_slice(),
        ["node(s) didn't match pod affinity rules"]
    );
}

#[test]
fn pod_affinity_first_pod_of_a_self_affine_group_is_admitted() {
    let cluster = Cluster::new(vec![zoned("a1", "a")], vec![], vec![]);
    let mut p = labelled(pod("p", 10, 100, 0, None), &[("app", "cache")]);
    p.details_mut()
        .pod_affinity
        .push(pod_affinity(&[("app", "cache")], "zone"));
    assert_eq!(cluster.decide(&p).outcome, Outcome::Fits);
    // Not self-matching: no escape.
    let mut q = pod("q", 10, 100, 0, None);
    q.details_mut()
        .pod_affinity
        .push(pod_affinity(&[("app", "cache")], "zone"));
    assert_eq!(cluster.decide(&q).outcome, Outcome::NoCandidate);
}

#[test]
fn pod_affinity_to_a_lower_priority_pod_is_lost_in_the_dry_run() {
    // The only db pod is lower priority and on the same node as the cpu hog: removing all
    // lower-priority pods removes the affinity target, so the node cannot be used.
    let cluster = Cluster::new(
        vec![zoned("a1", "a")],
        vec![
            labelled(pod("db", 0, 100, 0, Some("a1")), &[("app", "db")]),
            pod("hog", 0, 900, 0, Some("a1")),
        ],
        vec![],
    );
    let mut p = pod("p", 10, 500, 0, None);
    p.details_mut()
        .pod_affinity
        .push(pod_affinity(&[("app", "db")], "zone"));
    let d = cluster.decide(&p);
    assert_eq!(d.outcome, Outcome::NoCandidate, "{}", d.message);
}

#[test]
fn pod_anti_affinity_terms_respect_namespaces() {
    let mut other_ns = labelled(pod("db", 20, 100, 0, Some("a1")), &[("app", "db")]);
    other_ns.namespace = "other".into();
    let name = other_ns.name().to_owned();
    let other_ns = other_ns.renamed(&name, "other-db");
    let cluster = Cluster::new(vec![zoned("a1", "a")], vec![other_ns], vec![]);
    let mut p = anti_affinity(pod("p", 10, 100, 0, None), &[("app", "db")], "zone");
    // Default: own namespace only → the db pod in "other" does not count.
    assert_eq!(cluster.decide(&p).outcome, Outcome::Fits);
    // Listing the namespace makes it count.
    p.details_mut().pod_anti_affinity[0]
        .namespaces
        .push("other".into());
    assert_eq!(cluster.decide(&p).outcome, Outcome::NoCandidate);
    // An empty namespace selector selects every namespace.
    p.details_mut().pod_anti_affinity[0].namespaces.clear();
    p.details_mut().pod_anti_affinity[0].namespace_selector = Some(LabelSelector::everything());
    assert_eq!(cluster.decide(&p).outcome, Outcome::NoCandidate);
    // A selector on the automatic name label.
    p.details_mut().pod_anti_affinity[0].namespace_selector = Some(LabelSelector {
        match_labels: Default::default(),
        match_expressions: vec![Requirement {
            key: "kubernetes.io/metadata.name".into(),
            operator: Operator::In,
            values: vec!["default".into()],
        }],
    });
    assert_eq!(cluster.decide(&p).outcome, Outcome::Fits);
}

#[test]
fn missing_and_empty_label_selectors_differ() {
    let cluster = Cluster::new(
        vec![zoned("a1", "a")],
        vec![labelled(
            pod("any", 20, 100, 0, Some("a1")),
            &[("app", "x")],
        )],
        vec![],
    );
    let mut p = pod("p", 10, 100, 0, None);
    p.details_mut().pod_anti_affinity.push(PodAffinityTerm {
        label_selector: None,
        namespaces: Vec::new(),
        namespace_selector: None,
        topology_key: "zone".into(),
    });
    assert_eq!(
        cluster.decide(&p).outcome,
        Outcome::Fits,
        "a missing selector matches no pod"
    );
    p.details_mut().pod_anti_affinity[0].label_selector = Some(LabelSelector::everything());
    assert_eq!(
        cluster.decide(&p).outcome,
        Outcome::NoCandidate,
        "{{}} matches every pod"
    );
}

#[test]
fn sidecar_host_ports_count() {
    let mut holder = pod("holder", 20, 0, 0, Some("n"));
    holder
        .details_mut()
        .init_containers
        .push(preemptd::model::Container {
            name: "proxy".into(),
            requests: ContainerResources::default(),
            ports: vec![preemptd::model::HostPort {
                ip: "0.0.0.0".into(),
                protocol: preemptd::model::Protocol::Tcp,
                port: 15001,
            }],
            restart_always: true,
            image: "".into(),
        });
    let holder = holder.finish();
    let cluster = Cluster::new(vec![node("n", 1000, GI)], vec![holder], vec![]);
    let p = with_host_port(
        pod("p", 10, 0, 0, None),
        "",
        preemptd::model::Protocol::Tcp,
        15001,
    );
    let d = cluster.decide(&p);
    assert_eq!(
        filter_of(&d, "n").reasons.as_slice(),
        ["node(s) didn't have free ports for the requested pod ports"]
    );
}

/// Anti-affinity on a key whose values name one node each is checked per node; once two
/// nodes share a value, a pod on either counts for both, as one topology domain.
#[test]
fn anti_affinity_domains_follow_shared_topology_values() {
    const HOST: &str = "kubernetes.io/hostname";
    let host = |name: &str, value: &str| {
        let mut n = node(name, 1000, GI);
        n.labels = [(HOST, value)].into_iter().collect();
        n
    };
    let db = labelled(pod("db", 20, 100, 0, Some("n1")), &[("app", "db")]);
    let cluster = Cluster::new(vec![host("n1", "n1"), host("n2", "n2")], vec![db], vec![]);
    let p = anti_affinity(pod("p", 10, 100, 0, None), &[("app", "db")], HOST);
    assert!(cluster.cache.snapshot().key_is_node_unique(HOST));
    let d = cluster.decide(&p);
    assert_eq!(d.outcome, Outcome::Fits);
    assert_eq!(d.feasible_nodes, vec![preemptd::model::Str::from("n2")]);

    // n2 now carries n1's hostname value: one domain, and the db pod is in it.
    cluster.cache.upsert_node(host("n2", "n1"));
    assert!(!cluster.cache.snapshot().key_is_node_unique(HOST));
    let d = cluster.decide(&p);
    assert_ne!(d.outcome, Outcome::Fits, "{}", d.message);
    assert!(
        d.message
            .contains("2 node(s) didn't match pod anti-affinity rules"),
        "{}",
        d.message
    );

    // Relabelled apart again, and after a delete and re-add: per node once more.
    cluster.cache.upsert_node(host("n2", "n2"));
    assert!(cluster.cache.snapshot().key_is_node_unique(HOST));
    cluster.cache.delete_node("n2").unwrap();
    cluster.cache.upsert_node(host("n3", "n1"));
    assert!(!cluster.cache.snapshot().key_is_node_unique(HOST));
    cluster.cache.delete_node("n3").unwrap();
    cluster.cache.upsert_node(host("n2", "n2"));
    assert!(cluster.cache.snapshot().key_is_node_unique(HOST));
    assert_eq!(cluster.decide(&p).outcome, Outcome::Fits);

    // A victim removed in a dry run no longer counts on its own node: with n2 held by a
    // pod of higher priority, evicting db is the only way in.
    cluster
        .cache
        .upsert_pod(pod("filler", 40, 1000, 0, Some("n2")))
        .unwrap();
    let d = cluster.decide(&anti_affinity(
        pod("q", 30, 1000, 0, None),
        &[("app", "db")],
        HOST,
    ));
    assert_eq!(d.outcome, Outcome::Preempt, "{}", d.message);
    assert_eq!(d.nominated_node.as_deref(), Some("n1"));
}
