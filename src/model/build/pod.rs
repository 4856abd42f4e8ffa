//! Pods.

use std::borrow::Cow;

use triomphe::Arc;

use super::super::resources::{pod_level_requests_defaulted, requests_defaulted_from_limits};
use super::super::{
    Container, ContainerResources, DEFAULT_SCHEDULER, InclusionPolicy, LabelSelector, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, Pod, PodAffinityTerm, PodCondition, PodDetails,
    PreferredSchedulingTerm, Requirement, Str, Toleration, TopologySpreadConstraint, Unadmitted,
    WeightedPodAffinityTerm,
};
use super::input::{
    AffinityTermInput, ContainerInput, PodInput, PreferredTermInput, RequirementInput,
    SelectorInput, Source, SpreadInput, TolerationInput, UncommonPodFields,
    WeightedAffinityTermInput,
};
use super::node::resource_list;
use super::path::{OBJECT, Path};
use super::rules::{self, PortField};
use super::{BuildError, Memo, in_key_order, labels_of};

type Result<T> = std::result::Result<T, BuildError>;

/// The pod `p` describes, finished (its effective requests and host ports derived). Its
/// repeated strings and label sets come from `memo`; details it made before from the same
/// encoding are taken as they are (see [`Source`]).
pub fn pod(p: &PodInput<'_>, memo: &mut Memo) -> Result<Pod> {
    OBJECT
        .field("metadata.name")
        .check(rules::required(p.name))?;
    let namespace = rules::namespace_or_default(p.namespace);
    let uid = if p.uid.is_empty() {
        Cow::Owned(rules::namespaced_uid(namespace, p.name))
    } else {
        Cow::Borrowed(p.uid)
    };
    let mut pod = Pod::new_in(memo.str(namespace), p.name, &uid);
    pod.resource_version = p.resource_version;
    pod.labels = match &p.label_set {
        Source::Fields => memo.labels(&in_key_order(&p.labels)),
        Source::Encoded(fields) => {
            let labels = memo.labels(&in_key_order(&p.labels));
            memo.remember_labels(fields, &labels);
            labels
        }
        Source::Remembered(labels) => labels.clone(),
    };
    pod.node_name = (!p.node_name.is_empty()).then(|| memo.str(p.node_name));
    pod.priority = p.priority.unwrap_or(0);
    pod.unadmitted = Unadmitted {
        priority: p.priority.is_none(),
        preemption_policy: p.preemption_policy.is_empty(),
    };
    pod.preemption_policy = OBJECT
        .field("spec.preemptionPolicy")
        .check(rules::preemption_policy(p.preemption_policy))?;
    pod.details = match &p.details {
        Source::Remembered(details) => details.clone(),
        _ => Arc::new(details(p, memo)?),
    };
    pod.start_time = OBJECT
        .field("status.startTime")
        .check(rules::timestamp(p.start_time))?
        .into();
    pod.terminating = OBJECT
        .field("metadata.deletionTimestamp")
        .check(rules::timestamp(p.deletion_timestamp))?
        .is_some();
    pod.nominated_node_name =
        (!p.nominated_node_name.is_empty()).then(|| memo.str(p.nominated_node_name));
    pod.phase = OBJECT.field("status.phase").check(rules::phase(p.phase))?;
    let unreadable =
        |e: crate::model::resources::ReadingError| OBJECT.field("spec").error(e.to_string());
    Ok(match &p.details {
        Source::Fields => pod.try_finish().map_err(unreadable)?,
        Source::Encoded(fields) => {
            let details = pod.details_mut();
            details.try_finish().map_err(unreadable)?;
            details.drop_specs();
            memo.remember_details(fields, &pod.details);
            pod
        }
        Source::Remembered(_) => pod,
    })
}

/// The details of `p`, before `finish`.
fn details(p: &PodInput<'_>, memo: &mut Memo) -> Result<PodDetails> {
    let spec = OBJECT.field("spec");
    let mut details = PodDetails {
        scheduler_name: (!p.scheduler_name.is_empty() && p.scheduler_name != DEFAULT_SCHEDULER)
            .then(|| memo.str(p.scheduler_name)),
        priority_class_name: Some(p.priority_class_name_kept())
            .filter(|name| !name.is_empty())
            .map(|name| memo.str(name)),
        containers: containers(
            spec.field("containers"),
            &p.containers,
            false,
            p.host_network,
            memo,
        )?,
        node_selector: memo.labels(&in_key_order(&p.node_selector)),
        scheduling_group: (!p.scheduling_group.is_empty()).then(|| memo.str(p.scheduling_group)),
        ..PodDetails::default()
    };
    let tolerations = p
        .tolerations
        .iter()
        .enumerate()
        .map(|(i, t)| toleration(spec.field("tolerations").index(i), t, memo))
        .collect::<Result<_>>()?;
    details.tolerations = memo.tolerations(tolerations);
    if let Some(uncommon) = &p.uncommon {
        uncommon_details(&mut details, uncommon, p.host_network, memo)?;
    }
    Ok(details)
}

/// The details from the fields most pods leave unset.
fn uncommon_details(
    details: &mut PodDetails,
    u: &UncommonPodFields<'_>,
    host_network: bool,
    memo: &mut Memo,
) -> Result<()> {
    let spec = OBJECT.field("spec");
    details.init_containers = containers(
        spec.field("initContainers"),
        &u.init_containers,
        true,
        host_network,
        memo,
    )?;
    details.overhead =
        ContainerResources::new(resource_list(spec.field("overhead"), &u.overhead, memo)?);
    let resources = spec.field("resources");
    if !(u.resources.requests.is_empty() && u.resources.limits.is_empty()) {
        // Needs the containers: cpu and memory some container requests keep their
        // aggregate (see `pod_level_requests_defaulted`).
        details.pod_requests = pod_level_requests_defaulted(
            resource_list(resources.field("requests"), &u.resources.requests, memo)?,
            resource_list(resources.field("limits"), &u.resources.limits, memo)?,
            details,
        );
    }
    let affinity = spec.field("affinity");
    if let Some(terms) = &u.affinity.required_node_affinity {
        let terms_path = affinity
            .field("nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
        let terms = terms
            .iter()
            .enumerate()
            .map(|(i, term)| {
                let term_path = terms_path.index(i);
                Ok(NodeSelectorTerm {
                    match_expressions: node_selector_requirements(
                        term_path.field("matchExpressions"),
                        &term.match_expressions,
                    )?,
                    match_fields: node_selector_requirements(
                        term_path.field("matchFields"),
                        &term.match_fields,
                    )?,
                })
            })
            .collect::<Result<_>>()?;
        details.required_node_affinity = Some(NodeSelector { terms });
    }
    details.pod_affinity = pod_affinity_terms(
        affinity.field("podAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
        &u.affinity.pod_affinity,
    )?;
    details.pod_anti_affinity = pod_affinity_terms(
        affinity.field("podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
        &u.affinity.pod_anti_affinity,
    )?;
    details.preferred_node_affinity = preferred_node_terms(
        affinity.field("nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
        &u.affinity.preferred_node_affinity,
    )?;
    details.preferred_pod_affinity = weighted_pod_affinity_terms(
        affinity.field("podAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
        &u.affinity.preferred_pod_affinity,
    )?;
    details.preferred_pod_anti_affinity = weighted_pod_affinity_terms(
        affinity.field("podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
        &u.affinity.preferred_pod_anti_affinity,
    )?;
    let spread = spec.field("topologySpreadConstraints");
    details.topology_spread = u
        .topology_spread_constraints
        .iter()
        .enumerate()
        .map(|(i, c)| spread_constraint(spread.index(i), c))
        .collect::<Result<_>>()?;
    details.conditions = u
        .conditions
        .iter()
        .map(|c| PodCondition {
            type_: c.type_.into(),
            status: c.status.into(),
            reason: c.reason.into(),
        })
        .collect();
    Ok(())
}

fn containers(
    path: Path<'_>,
    containers: &[ContainerInput<'_>],
    init: bool,
    host_network: bool,
    memo: &mut Memo,
) -> Result<Vec<Container>> {
    containers
        .iter()
        .enumerate()
        .map(|(i, c)| container(path.index(i), c, init, host_network, memo))
        .collect()
}

/// A container with Kubernetes' defaulting: a limit without a request becomes the
/// request; under `hostNetwork`, a port without `hostPort` binds its `containerPort`.
fn container(
    path: Path<'_>,
    c: &ContainerInput<'_>,
    init: bool,
    host_network: bool,
    memo: &mut Memo,
) -> Result<Container> {
    let resources = path.field("resources");
    let requests = requests_defaulted_from_limits(
        resource_list(resources.field("requests"), &c.resources.requests, memo)?,
        resource_list(resources.field("limits"), &c.resources.limits, memo)?,
    );
    let mut ports = Vec::new();
    let ports_path = path.field("ports");
    for (i, port) in c.ports.iter().enumerate() {
        let verdict = rules::host_port(
            port.host_port,
            port.container_port,
            port.protocol,
            port.host_ip,
            host_network,
        );
        match verdict {
            Ok(host_port) => ports.extend(host_port),
            Err((field, invalid)) => {
                let field = match field {
                    PortField::HostPort => "hostPort",
                    PortField::Protocol => "protocol",
                };
                return ports_path.index(i).field(field).check(Err(invalid));
            }
        }
    }
    let restart_always = path
        .field("restartPolicy")
        .check(rules::restart_always(c.restart_policy, init))?;
    Ok(Container {
        name: memo.str(c.name),
        requests,
        ports,
        restart_always,
        image: memo.str(c.image),
    })
}

fn toleration(path: Path<'_>, t: &TolerationInput<'_>, memo: &mut Memo) -> Result<Toleration> {
    Ok(Toleration {
        key: memo.str(t.key),
        operator: path
            .field("operator")
            .check(rules::toleration_operator(t.operator))?,
        value: memo.str(t.value),
        effect: path
            .field("effect")
            .check(rules::toleration_effect(t.effect))?,
    })
}

/// Required node affinity's requirements, kept as written (the engine judges invalid
/// terms) once their operators are known.
fn node_selector_requirements(
    path: Path<'_>,
    requirements: &[RequirementInput<'_>],
) -> Result<Vec<NodeSelectorRequirement>> {
    requirements
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Ok(NodeSelectorRequirement {
                key: r.key.into(),
                operator: path
                    .index(i)
                    .field("operator")
                    .check(rules::node_selector_operator(r.operator))?,
                values: strs(&r.values),
            })
        })
        .collect()
}

fn pod_affinity_terms(
    path: Path<'_>,
    terms: &[AffinityTermInput<'_>],
) -> Result<Vec<PodAffinityTerm>> {
    terms
        .iter()
        .enumerate()
        .map(|(i, t)| pod_affinity_term(path.index(i), t))
        .collect()
}

fn pod_affinity_term(term: Path<'_>, t: &AffinityTermInput<'_>) -> Result<PodAffinityTerm> {
    term.field("topologyKey")
        .check(rules::required(t.topology_key))?;
    Ok(PodAffinityTerm {
        label_selector: pod_selector(term.field("labelSelector"), t.label_selector.as_ref())?,
        namespaces: strs(&t.namespaces),
        namespace_selector: pod_selector(
            term.field("namespaceSelector"),
            t.namespace_selector.as_ref(),
        )?,
        topology_key: t.topology_key.into(),
    })
}

fn preferred_node_terms(
    path: Path<'_>,
    terms: &[PreferredTermInput<'_>],
) -> Result<Vec<PreferredSchedulingTerm>> {
    terms
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let item = path.index(i);
            let weight = item.field("weight").check(rules::term_weight(t.weight))?;
            let preference = item.field("preference");
            Ok(PreferredSchedulingTerm {
                weight,
                preference: NodeSelectorTerm {
                    match_expressions: node_selector_requirements(
                        preference.field("matchExpressions"),
                        &t.preference.match_expressions,
                    )?,
                    match_fields: node_selector_requirements(
                        preference.field("matchFields"),
                        &t.preference.match_fields,
                    )?,
                },
            })
        })
        .collect()
}

fn weighted_pod_affinity_terms(
    path: Path<'_>,
    terms: &[WeightedAffinityTermInput<'_>],
) -> Result<Vec<WeightedPodAffinityTerm>> {
    terms
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let item = path.index(i);
            let weight = item.field("weight").check(rules::term_weight(t.weight))?;
            Ok(WeightedPodAffinityTerm {
                weight,
                term: pod_affinity_term(item.field("podAffinityTerm"), &t.term)?,
            })
        })
        .collect()
}

fn spread_constraint(path: Path<'_>, c: &SpreadInput<'_>) -> Result<TopologySpreadConstraint> {
    let max_skew = path.field("maxSkew").check(rules::max_skew(c.max_skew))?;
    path.field("topologyKey")
        .check(rules::required(c.topology_key))?;
    let when_unsatisfiable = path
        .field("whenUnsatisfiable")
        .check(rules::when_unsatisfiable(c.when_unsatisfiable))?;
    Ok(TopologySpreadConstraint {
        max_skew,
        topology_key: c.topology_key.into(),
        when_unsatisfiable,
        label_selector: pod_selector(path.field("labelSelector"), c.label_selector.as_ref())?,
        min_domains: c.min_domains,
        match_label_keys: strs(&c.match_label_keys),
        node_affinity_policy: path
            .field("nodeAffinityPolicy")
            .check(rules::inclusion_policy(
                c.node_affinity_policy,
                InclusionPolicy::Honor,
            ))?,
        node_taints_policy: path
            .field("nodeTaintsPolicy")
            .check(rules::inclusion_policy(
                c.node_taints_policy,
                InclusionPolicy::Ignore,
            ))?,
    })
}

/// A pod's label selector (affinity terms, spread constraints), validated as the API
/// server validates it: an unknown operator or a misplaced value list is an error. Missing
/// is `None` (matches no pod); empty is `Some` (matches every pod).
fn pod_selector(path: Path<'_>, s: Option<&SelectorInput<'_>>) -> Result<Option<LabelSelector>> {
    let Some(s) = s else {
        return Ok(None);
    };
    let expressions = path.field("matchExpressions");
    let match_expressions = s
        .match_expressions
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let item = expressions.index(i);
            let operator = item
                .field("operator")
                .check(rules::selector_operator(e.operator))?;
            item.field("values")
                .check(rules::selector_values(operator, &e.values))?;
            Ok(Requirement {
                key: e.key.into(),
                operator,
                values: strs(&e.values),
            })
        })
        .collect::<Result<_>>()?;
    Ok(Some(LabelSelector {
        match_labels: labels_of(&s.match_labels),
        match_expressions,
    }))
}

fn strs(values: &[&str]) -> Vec<Str> {
    values.iter().map(|&v| v.into()).collect()
}
