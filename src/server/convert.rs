//! Proto ↔ model. A typed message is read into the builder's input and built by
//! [`crate::model::build`], which owns every default and rule and names a refused field
//! as the Kubernetes object's JSON does; the request field goes before it:
//! `upsert.spec.containers[0].resources.requests[cpu]`. Responses (decisions, nomination
//! events) are written from the model here too.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::app::ObjectKey;
use crate::engine::drain::{DrainPlan, Eviction, Placement, PodPlan};
use crate::engine::placement::{self, NodeScores, PLUGINS};
use crate::engine::{Code, Decision, NodeDiagnostic, Outcome, PdbMode, Status as FilterStatus};
use crate::model::build::{
    self, AffinityInput, AffinityTermInput, ConditionInput, ContainerInput, ImageInput, Memo,
    NodeConditionInput, NodeInput, NodeSelectorTermInput, Pairs, PdbInput, PodInput, PortInput,
    PreferredTermInput, Quantities, RequirementInput, ResourcesInput, SelectorInput, Source,
    SpreadInput, TaintInput, TolerationInput, UncommonPodFields, WeightedAffinityTermInput,
};
use crate::model::namespace::Namespace;
use crate::model::priority::PriorityClass;
use crate::model::{Node, Pod, PodDisruptionBudget, PodRef};
use crate::nominations::{Event, EventKind};

use super::errors::ApiError;
use super::pb;

mod pod_group;

pub use pod_group::{pod_group, workload};

type Result<T, E = ApiError> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------------------
// Proto → model.

/// A typed node; `field` is the request field (`upsert`).
pub fn node(field: &str, n: &pb::Node) -> Result<Node> {
    node_with_memo(field, n, &mut Memo::disabled())
}

/// [`node`], its strings and quantities from `memo` (a stream's bulk load).
pub fn node_with_memo(field: &str, n: &pb::Node, memo: &mut Memo) -> Result<Node> {
    build::node(&node_input(n), memo).map_err(|e| ApiError::from_build(field, e))
}

/// A typed pod; `field` is the request field (`upsert`, `pod`).
pub fn pod(field: &str, p: &pb::Pod) -> Result<Pod> {
    pod_with_memo(field, p, &mut Memo::disabled())
}

/// [`pod`], its repeated strings and label sets from `memo` (a stream's bulk load).
pub fn pod_with_memo(field: &str, p: &pb::Pod, memo: &mut Memo) -> Result<Pod> {
    build::pod(&pod_input(p), memo).map_err(|e| ApiError::from_build(field, e))
}

/// A typed PodDisruptionBudget; `field` is the request field (`upsert`).
pub fn pdb(field: &str, b: &pb::PodDisruptionBudget) -> Result<PodDisruptionBudget> {
    build::pdb(&pdb_input(b), &mut Memo::disabled()).map_err(|e| ApiError::from_build(field, e))
}

/// A typed PriorityClass.
pub fn priority_class(field: &str, c: &pb::PriorityClass) -> Result<PriorityClass> {
    let input = build::PriorityClassInput {
        name: &c.name,
        uid: &c.uid,
        resource_version: c.resource_version,
        value: c.value,
        global_default: c.global_default,
        preemption_policy: &c.preemption_policy,
    };
    build::priority_class(&input).map_err(|e| ApiError::from_build(field, e))
}

/// A typed Namespace.
pub fn namespace(field: &str, n: &pb::Namespace) -> Result<Namespace> {
    let input = build::NamespaceInput {
        name: &n.name,
        uid: &n.uid,
        resource_version: n.resource_version,
        labels: pairs(&n.labels),
    };
    build::namespace(&input, &mut Memo::disabled()).map_err(|e| ApiError::from_build(field, e))
}

/// A proto map's entries, borrowed, in key order.
fn pairs<const N: usize>(map: &BTreeMap<String, String>) -> Pairs<'_, N> {
    map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn quantities<const N: usize>(map: &BTreeMap<String, String>) -> Quantities<'_, N> {
    map.iter()
        .map(|(k, v)| (k.as_str(), Cow::Borrowed(v.as_str())))
        .collect()
}

fn strs(values: &[String]) -> Vec<&str> {
    values.iter().map(String::as_str).collect()
}

fn node_input(n: &pb::Node) -> NodeInput<'_> {
    NodeInput {
        name: &n.name,
        uid: &n.uid,
        resource_version: n.resource_version,
        labels: pairs(&n.labels),
        taints: n
            .taints
            .iter()
            .map(|t| TaintInput {
                key: &t.key,
                value: &t.value,
                effect: &t.effect,
            })
            .collect(),
        unschedulable: n.unschedulable,
        allocatable: quantities(&n.allocatable),
        annotations: pairs(&n.annotations),
        conditions: n
            .conditions
            .iter()
            .map(|c| NodeConditionInput {
                type_: &c.r#type,
                status: &c.status,
                reason: &c.reason,
                message: &c.message,
            })
            .collect(),
        images: n
            .images
            .iter()
            .map(|image| ImageInput {
                names: strs(&image.names),
                size_bytes: image.size_bytes,
            })
            .collect(),
    }
}

fn pdb_input(b: &pb::PodDisruptionBudget) -> PdbInput<'_> {
    PdbInput {
        namespace: &b.namespace,
        name: &b.name,
        uid: &b.uid,
        resource_version: b.resource_version,
        selector: b.selector.as_ref().map(selector),
        disruptions_allowed: b.disruptions_allowed,
        disrupted_pods: strs(&b.disrupted_pods),
    }
}

fn pod_input(p: &pb::Pod) -> PodInput<'_> {
    PodInput {
        namespace: &p.namespace,
        name: &p.name,
        uid: &p.uid,
        resource_version: p.resource_version,
        labels: pairs(&p.labels),
        deletion_timestamp: &p.deletion_timestamp,
        node_name: &p.node_name,
        scheduler_name: &p.scheduler_name,
        priority: p.priority,
        priority_class_name: &p.priority_class_name,
        preemption_policy: &p.preemption_policy,
        // Typed pods carry no hostNetwork: their host ports are given as they are.
        host_network: false,
        containers: p.containers.iter().map(container).collect(),
        tolerations: p
            .tolerations
            .iter()
            .map(|t| TolerationInput {
                key: &t.key,
                operator: &t.operator,
                value: &t.value,
                effect: &t.effect,
            })
            .collect(),
        node_selector: pairs(&p.node_selector),
        scheduling_group: p
            .scheduling_group
            .as_ref()
            .map_or("", |g| g.pod_group_name.as_str()),
        start_time: &p.start_time,
        nominated_node_name: &p.nominated_node_name,
        phase: &p.phase,
        uncommon: uncommon(p).boxed_unless_empty(),
        details: Source::Fields,
        label_set: Source::Fields,
    }
}

fn uncommon(p: &pb::Pod) -> UncommonPodFields<'_> {
    let affinity = p.affinity.as_ref();
    UncommonPodFields {
        init_containers: p.init_containers.iter().map(container).collect(),
        overhead: quantities(&p.overhead),
        resources: p.resources.as_ref().map(resources).unwrap_or_default(),
        affinity: AffinityInput {
            required_node_affinity: affinity
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|n| {
                    n.required_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .map(|s| {
                    s.node_selector_terms
                        .iter()
                        .map(|t| NodeSelectorTermInput {
                            match_expressions: node_requirements(&t.match_expressions),
                            match_fields: node_requirements(&t.match_fields),
                        })
                        .collect()
                }),
            pod_affinity: affinity
                .and_then(|a| a.pod_affinity.as_ref())
                .map(|a| affinity_terms(&a.required_during_scheduling_ignored_during_execution))
                .unwrap_or_default(),
            pod_anti_affinity: affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .map(|a| affinity_terms(&a.required_during_scheduling_ignored_during_execution))
                .unwrap_or_default(),
            preferred_node_affinity: affinity
                .and_then(|a| a.node_affinity.as_ref())
                .map(|n| {
                    n.preferred_during_scheduling_ignored_during_execution
                        .iter()
                        .map(|t| PreferredTermInput {
                            weight: t.weight,
                            preference: NodeSelectorTermInput {
                                match_expressions: node_requirements(
                                    t.preference
                                        .as_ref()
                                        .map_or(&[], |p| &p.match_expressions[..]),
                                ),
                                match_fields: node_requirements(
                                    t.preference.as_ref().map_or(&[], |p| &p.match_fields[..]),
                                ),
                            },
                        })
                        .collect()
                })
                .unwrap_or_default(),
            preferred_pod_affinity: affinity
                .and_then(|a| a.pod_affinity.as_ref())
                .map(|a| weighted_terms(&a.preferred_during_scheduling_ignored_during_execution))
                .unwrap_or_default(),
            preferred_pod_anti_affinity: affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .map(|a| weighted_terms(&a.preferred_during_scheduling_ignored_during_execution))
                .unwrap_or_default(),
        },
        topology_spread_constraints: p
            .topology_spread_constraints
            .iter()
            .map(|c| SpreadInput {
                max_skew: c.max_skew,
                topology_key: &c.topology_key,
                when_unsatisfiable: &c.when_unsatisfiable,
                label_selector: c.label_selector.as_ref().map(selector),
                min_domains: c.min_domains,
                match_label_keys: strs(&c.match_label_keys),
                node_affinity_policy: &c.node_affinity_policy,
                node_taints_policy: &c.node_taints_policy,
            })
            .collect(),
        conditions: p
            .conditions
            .iter()
            .map(|c| ConditionInput {
                type_: &c.r#type,
                status: &c.status,
                reason: &c.reason,
            })
            .collect(),
    }
}

fn resources(r: &pb::ResourceRequirements) -> ResourcesInput<'_> {
    ResourcesInput {
        requests: quantities(&r.requests),
        limits: quantities(&r.limits),
    }
}

fn container(c: &pb::Container) -> ContainerInput<'_> {
    ContainerInput {
        name: &c.name,
        resources: ResourcesInput {
            requests: quantities(&c.requests),
            limits: quantities(&c.limits),
        },
        ports: c
            .ports
            .iter()
            .map(|p| PortInput {
                host_port: p.host_port,
                container_port: p.container_port,
                protocol: &p.protocol,
                host_ip: &p.host_ip,
            })
            .collect(),
        restart_policy: &c.restart_policy,
        image: &c.image,
    }
}

fn node_requirements(requirements: &[pb::NodeSelectorRequirement]) -> Vec<RequirementInput<'_>> {
    requirements
        .iter()
        .map(|r| RequirementInput {
            key: &r.key,
            operator: &r.operator,
            values: strs(&r.values),
        })
        .collect()
}

fn affinity_terms(terms: &[pb::PodAffinityTerm]) -> Vec<AffinityTermInput<'_>> {
    terms.iter().map(affinity_term).collect()
}

fn affinity_term(t: &pb::PodAffinityTerm) -> AffinityTermInput<'_> {
    AffinityTermInput {
        label_selector: t.label_selector.as_ref().map(selector),
        namespaces: strs(&t.namespaces),
        namespace_selector: t.namespace_selector.as_ref().map(selector),
        topology_key: &t.topology_key,
    }
}

/// Preferred pod (anti-)affinity terms; a term without `podAffinityTerm` is read as an
/// empty one (refused for its missing topology key).
fn weighted_terms(terms: &[pb::WeightedPodAffinityTerm]) -> Vec<WeightedAffinityTermInput<'_>> {
    terms
        .iter()
        .map(|t| WeightedAffinityTermInput {
            weight: t.weight,
            term: t
                .pod_affinity_term
                .as_ref()
                .map(affinity_term)
                .unwrap_or_default(),
        })
        .collect()
}

fn selector(s: &pb::LabelSelector) -> SelectorInput<'_> {
    SelectorInput {
        match_labels: pairs(&s.match_labels),
        match_expressions: s
            .match_expressions
            .iter()
            .map(|r| RequirementInput {
                key: &r.key,
                operator: &r.operator,
                values: strs(&r.values),
            })
            .collect(),
    }
}

/// An object reference as the core's key.
pub fn object_key(r: &pb::ObjectRef) -> ObjectKey {
    ObjectKey {
        namespace: r.namespace.clone(),
        name: r.name.clone(),
        uid: r.uid.clone(),
    }
}

/// A pod reference as the core's key (an empty uid matches any).
pub fn pod_key(r: &pb::PodRef) -> ObjectKey {
    ObjectKey {
        namespace: r.namespace.clone(),
        name: r.name.clone(),
        uid: Some(r.uid.clone()).filter(|u| !u.is_empty()),
    }
}

// ---------------------------------------------------------------------------------------
// Model → proto.

/// The proto form of a pod reference.
pub fn pod_ref(r: &PodRef) -> pb::PodRef {
    pb::PodRef {
        namespace: r.namespace.to_string(),
        name: r.name.to_string(),
        uid: r.uid.to_string(),
    }
}

/// The proto form of a decision's outcome.
pub fn outcome(o: Outcome) -> pb::Outcome {
    match o {
        Outcome::Preempt => pb::Outcome::Preempt,
        Outcome::Fits => pb::Outcome::Fits,
        Outcome::NotEligible => pb::Outcome::NotEligible,
        Outcome::NoCandidate => pb::Outcome::NoCandidate,
    }
}

fn filter_status(s: &FilterStatus) -> pb::FilterStatus {
    let code = match s.code {
        Code::Success => pb::StatusCode::Success,
        Code::Unschedulable => pb::StatusCode::Unschedulable,
        Code::UnschedulableAndUnresolvable => pb::StatusCode::UnschedulableAndUnresolvable,
    };
    pb::FilterStatus {
        code: code.into(),
        plugin: s.plugin.to_string(),
        reasons: s.reasons.iter().map(|r| r.to_string()).collect(),
    }
}

fn diagnostic(d: &NodeDiagnostic) -> pb::NodeDiagnostic {
    pb::NodeDiagnostic {
        node: d.node.to_string(),
        filter: Some(filter_status(&d.filter)),
        preemption: d.preemption.as_ref().map(filter_status),
        victims: d.victims.iter().map(pod_ref).collect(),
        pdb_violations: d.pdb_violations,
        candidate: d.candidate,
        notes: d.notes.clone(),
    }
}

/// `PreemptRequest.pdb_mode`: `None` when unset (the server's policy decides); a number
/// the enum does not have is refused.
pub fn pdb_mode(value: i32) -> Result<Option<PdbMode>> {
    match pb::PdbMode::try_from(value) {
        Ok(pb::PdbMode::Unspecified) => Ok(None),
        Ok(pb::PdbMode::Prefer) => Ok(Some(PdbMode::Prefer)),
        Ok(pb::PdbMode::Strict) => Ok(Some(PdbMode::Strict)),
        Err(_) => Err(ApiError::invalid(
            "pdb_mode",
            format!("unknown enum value {value}"),
        )),
    }
}

/// The decision; `epoch` and revisions are filled by the caller.
pub fn decision(d: &Decision) -> pb::PreemptResponse {
    pb::PreemptResponse {
        outcome: outcome(d.outcome).into(),
        nominated_node_name: d
            .nominated_node
            .as_ref()
            .map(|n| n.to_string())
            .unwrap_or_default(),
        victims: d.victims.iter().map(pod_ref).collect(),
        nominated_pods_to_clear: d.nominated_pods_to_clear.iter().map(pod_ref).collect(),
        pdb_violations: d.pdb_violations,
        message: d.message.clone(),
        feasible_nodes: d.feasible_nodes.iter().map(|n| n.to_string()).collect(),
        diagnostics: d.diagnostics.iter().map(diagnostic).collect(),
        kubernetes_version: d.kubernetes_version.as_str().to_string(),
        placement: d.placement.as_ref().map(placement),
        ..Default::default()
    }
}

/// A placement: the chosen node's scores and the runner-up's.
fn placement(p: &placement::Placement) -> pb::Placement {
    let node_score = |s: &NodeScores| pb::NodeScore {
        node_name: s.node.to_string(),
        total: s.total,
        plugins: PLUGINS
            .iter()
            .zip(s.plugins)
            .map(|(&(plugin, weight), score)| pb::PluginScore {
                plugin: plugin.to_string(),
                score,
                weight,
            })
            .collect(),
    };
    pb::Placement {
        node_name: p.node.as_deref().unwrap_or_default().to_string(),
        score: p.total,
        tied_nodes: p.tied.iter().map(|n| n.to_string()).collect(),
        node_scores: p.scores.iter().take(2).map(node_score).collect(),
        feasible_nodes: i32::try_from(p.feasible).unwrap_or(i32::MAX),
    }
}

/// The drain plan; `epoch` and `revision` are filled by the caller.
pub fn drain_plan(plan: &DrainPlan) -> pb::PlanDrainResponse {
    pb::PlanDrainResponse {
        pods: plan.pods.iter().map(pod_drain_plan).collect(),
        batches: plan
            .batches
            .iter()
            .map(|batch| pb::DrainBatch {
                pods: batch
                    .iter()
                    .filter_map(|&index| plan.pods.get(index))
                    .map(|p| pod_ref(&p.pod))
                    .collect(),
            })
            .collect(),
        noticed_nodes: plan
            .noticed_nodes
            .iter()
            .map(|(node, signal)| pb::NoticedNode {
                node: node.to_string(),
                signal: signal.clone(),
            })
            .collect(),
        ..Default::default()
    }
}

fn pod_drain_plan(p: &PodPlan) -> pb::PodDrainPlan {
    let mut out = pb::PodDrainPlan {
        pod: Some(pod_ref(&p.pod)),
        priority: p.priority,
        from_node: p.from_node.to_string(),
        critical: p.critical,
        diagnostics: p.diagnostics.iter().map(diagnostic).collect(),
        ..Default::default()
    };
    match &p.placement {
        Placement::Fits { node } => {
            out.set_outcome(pb::DrainOutcome::Fits);
            out.node_name = node.to_string();
        }
        Placement::Preempt { node, victims } => {
            out.set_outcome(pb::DrainOutcome::Preempt);
            out.node_name = node.to_string();
            out.victims = victims.iter().map(pod_ref).collect();
        }
        Placement::Nowhere { reason } => {
            out.set_outcome(pb::DrainOutcome::Nowhere);
            out.reason = reason.clone();
        }
    }
    match &p.eviction {
        Eviction::Batch(index) => out.batch = u32::try_from(*index + 1).unwrap_or(u32::MAX),
        Eviction::BlockedBy { namespace, name } => {
            out.blocked_by_pdb = Some(pb::ObjectRef {
                namespace: namespace.to_string(),
                name: name.to_string(),
                uid: None,
            });
        }
    }
    out
}

/// The proto form of a nomination event, stamped with `epoch`.
pub fn event(e: &Event, epoch: &str) -> pb::WatchNominationsResponse {
    let kind = match e.kind {
        EventKind::Nominated => pb::NominationEventType::Nominated,
        EventKind::Cleared => pb::NominationEventType::Cleared,
        EventKind::VictimMarked => pb::NominationEventType::VictimMarked,
    };
    pb::WatchNominationsResponse {
        revision: e.revision,
        r#type: kind.into(),
        pod: Some(pod_ref(&e.pod)),
        node: e.node.to_string(),
        priority: e.priority,
        initial: e.initial,
        epoch: epoch.to_string(),
        batch_revision: e.batch,
    }
}

#[cfg(test)]
mod tests {
    use super::super::messages::{node_message, pdb_message, pod_message};
    use super::*;
    use crate::model::{BIND_ALL_IP, PodPhase, Str};

    fn message(err: ApiError) -> String {
        err.to_string()
    }

    #[test]
    fn quantities_name_the_map_key() {
        let n = pb::Node {
            name: "n1".into(),
            allocatable: [("cpu".to_string(), "lots".to_string())].into(),
            ..Default::default()
        };
        assert_eq!(
            message(node("upsert", &n).unwrap_err()),
            "upsert.status.allocatable[cpu]: invalid quantity \"lots\""
        );
    }

    #[test]
    fn nodes_converted_with_a_memo_equal_those_without_and_share_strings() {
        let cluster = crate::generate::generate(&crate::generate::ClusterSpec {
            nodes: 4,
            pods_per_node: 0,
            seed: 3,
        });
        let mut memo = Memo::new(64);
        let converted: Vec<Node> = cluster
            .nodes
            .iter()
            .map(|n| {
                let message = node_message(n);
                let with_memo = node_with_memo("upsert", &message, &mut memo).unwrap();
                assert_eq!(with_memo, node("upsert", &message).unwrap());
                assert_eq!(&with_memo, n);
                with_memo
            })
            .collect();
        let [first, second, ..] = &converted[..] else {
            panic!("four nodes were generated")
        };
        let hostname = |n: &Node| n.labels.get("kubernetes.io/hostname").unwrap().clone();
        assert!(Str::ptr_eq(&hostname(first), &first.name));
        let key = |n: &Node| {
            let hostname = n
                .labels
                .iter()
                .find(|(k, _)| &***k == "kubernetes.io/hostname");
            hostname.unwrap().0.clone()
        };
        assert!(Str::ptr_eq(&key(first), &key(second)));
        // A bad node is reported as without a memo, at the same path.
        let bad = pb::Node {
            name: "n1".into(),
            taints: vec![pb::Taint::default()],
            ..Default::default()
        };
        assert_eq!(
            message(node_with_memo("upsert", &bad, &mut memo).unwrap_err()),
            message(node("upsert", &bad).unwrap_err())
        );
    }

    #[test]
    fn typed_pod_defaults_like_kubernetes() {
        let p = pb::Pod {
            name: "p".into(),
            containers: vec![pb::Container {
                name: "c".into(),
                limits: [("cpu".to_string(), "2".to_string())].into(),
                ports: vec![pb::ContainerPort {
                    host_port: 80,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let pod = pod("upsert", &p).unwrap();
        assert_eq!(&*pod.namespace, "default");
        assert_eq!(pod.uid(), "default/p");
        assert_eq!(pod.requests().milli_cpu, 2000);
        assert_eq!(pod.details.host_ports.len(), 1);
        assert_eq!(&*pod.details.host_ports[0].ip, BIND_ALL_IP);
        assert_eq!(pod.phase, PodPhase::Pending);
    }

    #[test]
    fn unknown_enum_strings_are_rejected_with_their_path() {
        let p = pb::Pod {
            name: "p".into(),
            tolerations: vec![pb::Toleration {
                effect: "Sometimes".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let err = message(pod("pod", &p).unwrap_err());
        assert!(
            err.starts_with("pod.spec.tolerations[0].effect: unsupported value \"Sometimes\""),
            "{err}"
        );
    }

    #[test]
    fn scheduler_name_defaults_and_round_trips() {
        let unset = pod(
            "p",
            &pb::Pod {
                name: "a".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(unset.scheduler_name(), "default-scheduler");
        assert_eq!(pod_message(&unset).scheduler_name, "default-scheduler");
        let explicit = pb::Pod {
            name: "a".into(),
            scheduler_name: "default-scheduler".into(),
            ..Default::default()
        };
        // Spelled out or not, the default is the same pod (and shares its details).
        assert_eq!(pod("p", &explicit).unwrap(), unset);
        let custom = pb::Pod {
            name: "b".into(),
            scheduler_name: "batch".into(),
            ..Default::default()
        };
        let custom = pod("p", &custom).unwrap();
        assert_eq!(custom.scheduler_name(), "batch");
        assert_eq!(pod_message(&custom).scheduler_name, "batch");
    }

    #[test]
    fn model_to_proto_round_trips() {
        use crate::generate::{self, ClusterSpec};
        let cluster = generate::generate(&ClusterSpec {
            nodes: 40,
            pods_per_node: 6,
            seed: 3,
        });
        for n in &cluster.nodes {
            assert_eq!(&node("n", &node_message(n)).unwrap(), n);
        }
        for b in &cluster.pdbs {
            assert_eq!(&pdb("b", &pdb_message(b)).unwrap(), b);
        }
        let mut pods = cluster.pods.clone();
        pods.push(generate::resource_preemptor(1));
        pods.push(generate::affinity_preemptor(2));
        for p in &pods {
            assert_eq!(&pod("p", &pod_message(p)).unwrap(), p);
        }
    }

    #[test]
    fn a_memo_changes_no_pod_and_shares_repeated_values() {
        let pods = crate::generate::mixed_pods(30, 8, 5);
        // A tiny memo drops old values many times on the way.
        for capacity in [4, 1 << 16] {
            let mut memo = Memo::new(capacity);
            let converted: Vec<Pod> = pods
                .iter()
                .map(|p| pod_with_memo("p", &pod_message(p), &mut memo).unwrap())
                .collect();
            assert_eq!(converted, pods);
            if capacity > 4 {
                let (a, b) = (&converted[0], &converted[1]);
                let same_namespace = converted
                    .iter()
                    .skip(1)
                    .find(|p| p.namespace == a.namespace)
                    .expect("generated pods repeat namespaces");
                assert!(Str::ptr_eq(&same_namespace.namespace, &a.namespace));
                assert!(Str::ptr_eq(
                    a.node_name.as_ref().unwrap(),
                    b.node_name.as_ref().unwrap()
                ));
                let same_labels = converted
                    .iter()
                    .skip(1)
                    .find(|p| p.labels == a.labels)
                    .expect("generated pods repeat label sets");
                assert!(same_labels.labels.ptr_eq(&a.labels));
            }
        }
        // Errors are the same as without a memo.
        let bad = pb::Pod {
            name: "p".into(),
            containers: vec![pb::Container {
                requests: [("cpu".to_string(), "lots".to_string())].into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut memo = Memo::new(16);
        assert_eq!(
            message(pod_with_memo("upsert", &bad, &mut memo).unwrap_err()),
            message(pod("upsert", &bad).unwrap_err())
        );
    }
}
