//! Model → proto for the objects themselves: what a client (the load generator, tests,
//! benchmarks) sends. `convert::node(_, &node_message(n))` gives `n` back, and likewise
//! for pods, budgets, PodGroups and Workloads. Compiled only with the `generate` feature: the server itself
//! never sends an object.

use std::collections::BTreeMap;

use crate::model::resources::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS};
use crate::model::{
    Container, ContainerResources, DisruptionMode, InclusionPolicy, LabelSelector, Labels, Node,
    NodeSelectorRequirement, NodeSelectorTerm, Pod, PodAffinityTerm, PodDisruptionBudget, PodGroup,
    PreemptionPolicy, Resources, SchedulingPolicy, Str, TaintEffect, TolerationOperator,
    TopologySpreadConstraint, WeightedPodAffinityTerm, WhenUnsatisfiable, Workload,
};

use super::pb;

/// A node as a typed message.
pub fn node_message(n: &Node) -> pb::Node {
    pb::Node {
        name: n.name.to_string(),
        uid: n.uid.to_string(),
        resource_version: n.resource_version,
        labels: label_map(&n.labels),
        taints: n
            .taints
            .iter()
            .map(|t| pb::Taint {
                key: t.key.to_string(),
                value: t.value.to_string(),
                effect: t.effect.as_str().to_string(),
            })
            .collect(),
        unschedulable: n.unschedulable,
        allocatable: allocatable_map(&n.allocatable),
        annotations: label_map(&n.annotations),
        conditions: n
            .conditions
            .iter()
            .map(|c| pb::NodeCondition {
                r#type: c.kind.to_string(),
                status: c.status.to_string(),
                reason: c.reason.to_string(),
                message: c.message.to_string(),
            })
            .collect(),
        images: n
            .images
            .iter()
            .map(|i| pb::ContainerImage {
                names: string_list(&i.names),
                size_bytes: i.size_bytes,
            })
            .collect(),
    }
}

fn label_map(labels: &Labels) -> BTreeMap<String, String> {
    labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn quantity_map(list: &ContainerResources) -> BTreeMap<String, String> {
    list.iter()
        .map(|(k, q)| (k.to_string(), q.to_string()))
        .collect()
}

fn allocatable_map(r: &Resources) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut put = |name: &str, value: String| {
        out.insert(name.to_string(), value);
    };
    if r.milli_cpu != 0 {
        put(CPU, format!("{}m", r.milli_cpu));
    }
    if r.memory != 0 {
        put(MEMORY, r.memory.to_string());
    }
    if r.ephemeral_storage != 0 {
        put(EPHEMERAL_STORAGE, r.ephemeral_storage.to_string());
    }
    if r.pods != 0 {
        put(PODS, r.pods.to_string());
    }
    for (name, value) in &r.scalars {
        put(name, value.to_string());
    }
    out
}

fn selector_message(s: &LabelSelector) -> pb::LabelSelector {
    pb::LabelSelector {
        match_labels: label_map(&s.match_labels),
        match_expressions: s
            .match_expressions
            .iter()
            .map(|r| pb::LabelSelectorRequirement {
                key: r.key.to_string(),
                operator: r.operator.as_str().to_string(),
                values: r.values.iter().map(|v| v.to_string()).collect(),
            })
            .collect(),
    }
}

fn string_list(values: &[Str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

fn container_message(c: &Container, init: bool) -> pb::Container {
    pb::Container {
        name: c.name.to_string(),
        requests: quantity_map(&c.requests),
        limits: BTreeMap::new(),
        ports: c
            .ports
            .iter()
            .map(|p| pb::ContainerPort {
                host_port: p.port,
                protocol: p.protocol.as_str().to_string(),
                host_ip: p.ip.to_string(),
                container_port: p.port,
            })
            .collect(),
        restart_policy: if init && c.restart_always {
            "Always".to_string()
        } else {
            String::new()
        },
        image: c.image.to_string(),
    }
}

fn node_requirements(reqs: &[NodeSelectorRequirement]) -> Vec<pb::NodeSelectorRequirement> {
    reqs.iter()
        .map(|r| pb::NodeSelectorRequirement {
            key: r.key.to_string(),
            operator: r.operator.as_str().to_string(),
            values: string_list(&r.values),
        })
        .collect()
}

fn affinity_terms(terms: &[PodAffinityTerm]) -> Vec<pb::PodAffinityTerm> {
    terms
        .iter()
        .map(|t| pb::PodAffinityTerm {
            label_selector: t.label_selector.as_ref().map(selector_message),
            namespaces: string_list(&t.namespaces),
            namespace_selector: t.namespace_selector.as_ref().map(selector_message),
            topology_key: t.topology_key.to_string(),
        })
        .collect()
}

fn affinity_message(p: &Pod) -> Option<pb::Affinity> {
    let d = &p.details;
    if d.required_node_affinity.is_none()
        && d.pod_affinity.is_empty()
        && d.pod_anti_affinity.is_empty()
        && d.preferred_node_affinity.is_empty()
        && d.preferred_pod_affinity.is_empty()
        && d.preferred_pod_anti_affinity.is_empty()
    {
        return None;
    }
    let term_message = |t: &NodeSelectorTerm| pb::NodeSelectorTerm {
        match_expressions: node_requirements(&t.match_expressions),
        match_fields: node_requirements(&t.match_fields),
    };
    let node_affinity = (d.required_node_affinity.is_some()
        || !d.preferred_node_affinity.is_empty())
    .then(|| pb::NodeAffinity {
        required_during_scheduling_ignored_during_execution: d.required_node_affinity.as_ref().map(
            |s| pb::NodeSelector {
                node_selector_terms: s.terms.iter().map(term_message).collect(),
            },
        ),
        preferred_during_scheduling_ignored_during_execution: d
            .preferred_node_affinity
            .iter()
            .map(|t| pb::PreferredSchedulingTerm {
                weight: t.weight,
                preference: Some(term_message(&t.preference)),
            })
            .collect(),
    });
    Some(pb::Affinity {
        node_affinity,
        pod_affinity: (!d.pod_affinity.is_empty() || !d.preferred_pod_affinity.is_empty()).then(
            || pb::PodAffinity {
                required_during_scheduling_ignored_during_execution: affinity_terms(
                    &d.pod_affinity,
                ),
                preferred_during_scheduling_ignored_during_execution: weighted_terms(
                    &d.preferred_pod_affinity,
                ),
            },
        ),
        pod_anti_affinity: (!d.pod_anti_affinity.is_empty()
            || !d.preferred_pod_anti_affinity.is_empty())
        .then(|| pb::PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: affinity_terms(
                &d.pod_anti_affinity,
            ),
            preferred_during_scheduling_ignored_during_execution: weighted_terms(
                &d.preferred_pod_anti_affinity,
            ),
        }),
    })
}

fn weighted_terms(terms: &[WeightedPodAffinityTerm]) -> Vec<pb::WeightedPodAffinityTerm> {
    terms
        .iter()
        .map(|t| pb::WeightedPodAffinityTerm {
            weight: t.weight,
            pod_affinity_term: affinity_terms(std::slice::from_ref(&t.term)).pop(),
        })
        .collect()
}

fn inclusion_policy_str(policy: InclusionPolicy) -> &'static str {
    match policy {
        InclusionPolicy::Honor => "Honor",
        InclusionPolicy::Ignore => "Ignore",
    }
}

fn spread_message(c: &TopologySpreadConstraint) -> pb::TopologySpreadConstraint {
    pb::TopologySpreadConstraint {
        max_skew: c.max_skew,
        topology_key: c.topology_key.to_string(),
        when_unsatisfiable: match c.when_unsatisfiable {
            WhenUnsatisfiable::DoNotSchedule => "DoNotSchedule",
            WhenUnsatisfiable::ScheduleAnyway => "ScheduleAnyway",
        }
        .to_string(),
        label_selector: c.label_selector.as_ref().map(selector_message),
        min_domains: c.min_domains,
        match_label_keys: string_list(&c.match_label_keys),
        node_affinity_policy: inclusion_policy_str(c.node_affinity_policy).to_string(),
        node_taints_policy: inclusion_policy_str(c.node_taints_policy).to_string(),
    }
}

/// Unix nanoseconds → RFC 3339 (UTC, nanosecond precision when needed).
fn rfc3339(nanos: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(nanos)
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// The deletion time sent for terminating pods; the model keeps only the fact.
const TERMINATING_SINCE: &str = "1970-01-01T00:00:00Z";

/// A pod as a typed message (the derived `requests` and `host_ports` are recomputed by
/// the receiver from the spec fields).
pub fn pod_message(p: &Pod) -> pb::Pod {
    pb::Pod {
        namespace: p.namespace.to_string(),
        name: p.name().to_string(),
        uid: p.uid().to_string(),
        resource_version: p.resource_version,
        labels: label_map(&p.labels),
        node_name: p.node_name.as_deref().unwrap_or_default().to_string(),
        scheduler_name: p.scheduler_name().to_string(),
        priority: (!p.unadmitted.priority).then_some(p.priority),
        priority_class_name: p
            .details
            .priority_class_name
            .as_deref()
            .unwrap_or_default()
            .to_string(),
        preemption_policy: match (p.unadmitted.preemption_policy, p.preemption_policy) {
            (true, _) => "",
            (false, PreemptionPolicy::PreemptLowerPriority) => "PreemptLowerPriority",
            (false, PreemptionPolicy::Never) => "Never",
        }
        .to_string(),
        containers: p
            .details
            .containers
            .iter()
            .map(|c| container_message(c, false))
            .collect(),
        init_containers: p
            .details
            .init_containers
            .iter()
            .map(|c| container_message(c, true))
            .collect(),
        overhead: quantity_map(&p.details.overhead),
        resources: (!p.details.pod_requests.is_empty()).then(|| pb::ResourceRequirements {
            requests: quantity_map(&p.details.pod_requests),
            limits: BTreeMap::new(),
        }),
        tolerations: p
            .details
            .tolerations
            .iter()
            .map(|t| pb::Toleration {
                key: t.key.to_string(),
                operator: match t.operator {
                    TolerationOperator::Equal => "Equal",
                    TolerationOperator::Exists => "Exists",
                }
                .to_string(),
                value: t.value.to_string(),
                effect: t.effect.map(TaintEffect::as_str).unwrap_or("").to_string(),
                toleration_seconds: None,
            })
            .collect(),
        node_selector: label_map(&p.details.node_selector),
        affinity: affinity_message(p),
        topology_spread_constraints: p
            .details
            .topology_spread
            .iter()
            .map(spread_message)
            .collect(),
        start_time: p.start_time.get().map(rfc3339).unwrap_or_default(),
        deletion_timestamp: if p.terminating {
            TERMINATING_SINCE.to_string()
        } else {
            String::new()
        },
        conditions: p
            .details
            .conditions
            .iter()
            .map(|c| pb::PodCondition {
                r#type: c.type_.to_string(),
                status: c.status.to_string(),
                reason: c.reason.to_string(),
            })
            .collect(),
        nominated_node_name: p
            .nominated_node_name
            .as_deref()
            .unwrap_or_default()
            .to_string(),
        phase: p.phase.as_str().to_string(),
        scheduling_group: p
            .details
            .scheduling_group
            .as_ref()
            .map(|group| pb::PodSchedulingGroup {
                pod_group_name: group.to_string(),
            }),
    }
}

/// A PodGroup as a typed message (its priority as given: `spec.priority` only when set).
pub fn pod_group_message(g: &PodGroup) -> pb::PodGroup {
    let (basic, gang) = match g.policy {
        SchedulingPolicy::Basic => (Some(pb::BasicSchedulingPolicy {}), None),
        SchedulingPolicy::Gang { min_count } => {
            (None, Some(pb::GangSchedulingPolicy { min_count }))
        }
    };
    let (single, all) = match g.disruption_mode {
        DisruptionMode::Single => (Some(pb::SingleDisruptionMode {}), None),
        DisruptionMode::All => (None, Some(pb::AllDisruptionMode {})),
    };
    pb::PodGroup {
        namespace: g.namespace.to_string(),
        name: g.name.to_string(),
        uid: g.uid.to_string(),
        resource_version: g.resource_version,
        creation_timestamp: g.creation_time.map(rfc3339).unwrap_or_default(),
        scheduling_policy: Some(pb::PodGroupSchedulingPolicy { basic, gang }),
        disruption_mode: Some(pb::DisruptionMode { single, all }),
        priority_class_name: g
            .priority_class_name
            .as_deref()
            .unwrap_or_default()
            .to_string(),
        priority: (!g.priority_unset).then_some(g.priority),
        preemption_policy: match g.preemption_policy {
            None => "",
            Some(PreemptionPolicy::PreemptLowerPriority) => "PreemptLowerPriority",
            Some(PreemptionPolicy::Never) => "Never",
        }
        .to_string(),
        parent_composite_pod_group_name: g.parent.as_deref().unwrap_or_default().to_string(),
        workload_ref: g
            .workload
            .as_ref()
            .map(|(workload, template)| pb::WorkloadReference {
                workload_name: workload.to_string(),
                template_name: template.to_string(),
            }),
    }
}

/// A Workload as a typed message.
pub fn workload_message(w: &Workload) -> pb::Workload {
    pb::Workload {
        namespace: w.namespace.to_string(),
        name: w.name.to_string(),
        uid: w.uid.to_string(),
        resource_version: w.resource_version,
        pod_group_templates: w
            .pod_group_templates
            .iter()
            .map(|name| pb::PodGroupTemplate {
                name: name.to_string(),
            })
            .collect(),
    }
}

/// A PodDisruptionBudget as a typed message.
pub fn pdb_message(b: &PodDisruptionBudget) -> pb::PodDisruptionBudget {
    pb::PodDisruptionBudget {
        namespace: b.namespace.to_string(),
        name: b.name.to_string(),
        uid: b.uid.to_string(),
        resource_version: b.resource_version,
        selector: b.selector.as_ref().map(selector_message),
        disruptions_allowed: b.disruptions_allowed,
        disrupted_pods: string_list(&b.disrupted_pods),
    }
}
