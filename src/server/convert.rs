//! Proto ↔ model conversion. Typed messages get the same defaulting and validation the
//! Kubernetes-JSON decoder applies (limits default missing requests, empty enum strings
//! take Kubernetes' defaults, unknown ones are rejected), and every error names the
//! proto field path, map keys in brackets: `upsert.containers[0].requests[cpu]`.

use std::collections::BTreeMap;

use smallvec::SmallVec;
use triomphe::Arc;

use crate::engine::{Code, Decision, NodeDiagnostic, Outcome, Status as FilterStatus};
use crate::model::build::{self, ExpressionField, ExpressionInput, Invalid, PortField};
use crate::model::quantity::Quantity;
use crate::model::resources::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS};
use crate::model::{
    Container, ContainerResources, InclusionPolicy, LabelSelector, Labels, Node, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, Pod, PodAffinityTerm, PodCondition, PodDetails,
    PodDisruptionBudget, PodRef, PreemptionPolicy, Resources, Str, Taint, TaintEffect, Toleration,
    TolerationOperator, TopologySpreadConstraint, WhenUnsatisfiable,
};
use crate::nominations::{Event, EventKind};

use super::errors::ApiError;
use super::memo::ConvertMemo;
use super::pb;

type Result<T, E = ApiError> = std::result::Result<T, E>;

/// A field path, written out only when an error names it: formatting one for every
/// field converted cost a tenth of a bulk load.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root(&'a str),
    /// `parent.name`
    Field(&'a Path<'a>, &'a str),
    /// `parent[i]`
    Index(&'a Path<'a>, usize),
    /// `parent[key]`
    Key(&'a Path<'a>, &'a str),
}

impl<'a> Path<'a> {
    fn field(&'a self, name: &'a str) -> Path<'a> {
        Path::Field(self, name)
    }

    fn index(&'a self, i: usize) -> Path<'a> {
        Path::Index(self, i)
    }

    fn key(&'a self, key: &'a str) -> Path<'a> {
        Path::Key(self, key)
    }
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root(name) => f.write_str(name),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
            Path::Key(parent, key) => write!(f, "{parent}[{key}]"),
        }
    }
}

impl From<Path<'_>> for String {
    fn from(path: Path<'_>) -> String {
        path.to_string()
    }
}

/// A builder rule's verdict on the field at `path`.
fn rule<T>(path: Path<'_>, verdict: Result<T, Invalid>) -> Result<T> {
    verdict.map_err(|Invalid(message)| ApiError::invalid(path, message))
}

fn resource_list(
    path: Path<'_>,
    pairs: &[(&str, &str)],
    memo: &mut ConvertMemo,
) -> Result<Vec<(Str, Quantity)>> {
    // In key order, so the first bad entry reported is always the same one.
    pairs
        .iter()
        .map(|&(name, value)| {
            let entry = path.key(name);
            rule(entry, build::resource_name(name))?;
            let parsed = memo.quantity(value, |text| rule(entry, build::quantity(text)))?;
            Ok((memo.str(name), parsed))
        })
        .collect()
}

/// Requests with Kubernetes' defaulting: a limit without a request becomes the request.
fn requests_with_limits(
    path: Path<'_>,
    requests: &[(&str, &str)],
    limits: &[(&str, &str)],
    memo: &mut ConvertMemo,
) -> Result<ContainerResources> {
    Ok(crate::model::resources::requests_defaulted_from_limits(
        resource_list(path.field("requests"), requests, memo)?,
        resource_list(path.field("limits"), limits, memo)?,
    ))
}

/// A proto map's entries, borrowed, in key order (each key once, as a map holds it).
pub(super) type Pairs<'a, const N: usize> = SmallVec<[(&'a str, &'a str); N]>;

fn pairs<const N: usize>(map: &BTreeMap<String, String>) -> Pairs<'_, N> {
    map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// A container's fields, borrowed from a `pb::Container` or from its encoding.
pub(super) struct ContainerFields<'a> {
    pub name: &'a str,
    pub requests: Pairs<'a, 4>,
    pub limits: Pairs<'a, 4>,
    pub ports: SmallVec<[PortFields<'a>; 2]>,
    pub restart_policy: &'a str,
}

/// A container port's fields, borrowed (`container_port` is informational: left out).
#[derive(Clone, Copy, Default)]
pub(super) struct PortFields<'a> {
    pub host_port: i32,
    pub protocol: &'a str,
    pub host_ip: &'a str,
}

impl<'a> PortFields<'a> {
    fn of(p: &'a pb::ContainerPort) -> Self {
        PortFields {
            host_port: p.host_port,
            protocol: &p.protocol,
            host_ip: &p.host_ip,
        }
    }
}

/// A toleration's fields, borrowed (`toleration_seconds` is informational: left out).
#[derive(Clone, Copy, Default)]
pub(super) struct TolerationFields<'a> {
    pub key: &'a str,
    pub operator: &'a str,
    pub value: &'a str,
    pub effect: &'a str,
}

impl<'a> TolerationFields<'a> {
    fn of(t: &'a pb::Toleration) -> Self {
        TolerationFields {
            key: &t.key,
            operator: &t.operator,
            value: &t.value,
            effect: &t.effect,
        }
    }
}

impl<'a> ContainerFields<'a> {
    fn of(c: &'a pb::Container) -> Self {
        ContainerFields {
            name: &c.name,
            requests: pairs(&c.requests),
            limits: pairs(&c.limits),
            ports: c.ports.iter().map(PortFields::of).collect(),
            restart_policy: &c.restart_policy,
        }
    }
}

/// A pod's fields, borrowed from a `pb::Pod` or from its encoding (see `wire`): the
/// fields every pod of a load sets, and the rest as a decoded message when there is one.
#[derive(Default)]
pub(super) struct PodFields<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub resource_version: u64,
    pub labels: Pairs<'a, 8>,
    pub node_name: &'a str,
    pub scheduler_name: &'a str,
    pub priority: Option<i32>,
    pub preemption_policy: &'a str,
    pub containers: SmallVec<[ContainerFields<'a>; 2]>,
    pub tolerations: SmallVec<[TolerationFields<'a>; 2]>,
    pub node_selector: Pairs<'a, 4>,
    pub start_time: &'a str,
    pub deletion_timestamp: &'a str,
    pub nominated_node_name: &'a str,
    pub phase: &'a str,
    /// Init containers, overhead, pod-level resources, affinity, spread constraints and
    /// conditions: `None` when the pod sets none of them.
    pub rest: Option<&'a pb::Pod>,
    /// Where the details come from. The memo keeps those of encoded fields (`rest` is
    /// then `None`) finished and without their specs, as `Pod::compact` leaves them.
    pub details: Source<'a, Arc<PodDetails>>,
    /// Where the label set comes from.
    pub label_set: Source<'a, Labels>,
}

/// Where a value of a pod comes from, and whether the memo keeps it by its encoding (see
/// [`ConvertMemo::details`], [`ConvertMemo::encoded_labels`]).
#[derive(Default)]
pub(super) enum Source<'a, V> {
    /// Converted from the fields above, as they are.
    #[default]
    Decoded,
    /// Converted from the fields above, read from these fields of an encoding (each
    /// whole, in order): the memo keeps the value by them.
    Encoded(SmallVec<[&'a [u8]; 4]>),
    /// Made before from the same encoded fields (left out above).
    Remembered(V),
}

impl<'a> PodFields<'a> {
    fn of(p: &'a pb::Pod) -> Self {
        PodFields {
            namespace: &p.namespace,
            name: &p.name,
            uid: &p.uid,
            resource_version: p.resource_version,
            labels: pairs(&p.labels),
            node_name: &p.node_name,
            scheduler_name: &p.scheduler_name,
            priority: p.priority,
            preemption_policy: &p.preemption_policy,
            containers: p.containers.iter().map(ContainerFields::of).collect(),
            tolerations: p.tolerations.iter().map(TolerationFields::of).collect(),
            node_selector: pairs(&p.node_selector),
            start_time: &p.start_time,
            deletion_timestamp: &p.deletion_timestamp,
            nominated_node_name: &p.nominated_node_name,
            phase: &p.phase,
            rest: Some(p),
            details: Source::Decoded,
            label_set: Source::Decoded,
        }
    }
}

fn labels(map: &BTreeMap<String, String>) -> Labels {
    map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn strings(values: &[String]) -> Vec<Str> {
    values.iter().map(|v| Str::from(v.as_str())).collect()
}

fn timestamp(path: Path<'_>, text: &str) -> Result<Option<i64>> {
    rule(path, build::timestamp(text))
}

// ---------------------------------------------------------------------------------------
// Proto → model.

/// A typed node; `path` is the request field (`upsert`).
pub fn node(path: &str, n: &pb::Node) -> Result<Node> {
    node_with_memo(path, n, &mut ConvertMemo::disabled())
}

/// [`node`], its strings and quantities from `memo`: a load's nodes repeat label keys,
/// zones, taints and capacities, and a node's hostname label is its name.
pub fn node_with_memo(path: &str, n: &pb::Node, memo: &mut ConvertMemo) -> Result<Node> {
    node_from_fields(path, &NodeFields::of(n), memo)
}

/// A node's fields, borrowed from a `pb::Node` or from its encoding (see `wire`).
#[derive(Default)]
pub(super) struct NodeFields<'a> {
    pub name: &'a str,
    pub uid: &'a str,
    pub resource_version: u64,
    /// In key order, each key once, as a map holds them.
    pub labels: Pairs<'a, 16>,
    pub taints: SmallVec<[TaintFields<'a>; 2]>,
    pub unschedulable: bool,
    /// In key order, each key once.
    pub allocatable: Pairs<'a, 8>,
}

#[derive(Clone, Copy, Default)]
pub(super) struct TaintFields<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub effect: &'a str,
}

impl<'a> NodeFields<'a> {
    fn of(n: &'a pb::Node) -> Self {
        NodeFields {
            name: &n.name,
            uid: &n.uid,
            resource_version: n.resource_version,
            labels: pairs(&n.labels),
            taints: n
                .taints
                .iter()
                .map(|t| TaintFields {
                    key: &t.key,
                    value: &t.value,
                    effect: &t.effect,
                })
                .collect(),
            unschedulable: n.unschedulable,
            allocatable: pairs(&n.allocatable),
        }
    }
}

/// The node of `n`, however its fields were read.
pub(super) fn node_from_fields(
    path: &str,
    n: &NodeFields<'_>,
    memo: &mut ConvertMemo,
) -> Result<Node> {
    let path = Path::Root(path);
    rule(path.field("name"), build::required(n.name))?;
    let taints = each(path.field("taints"), &n.taints, |p, t| {
        rule(p.field("key"), build::required(t.key))?;
        Ok(Taint {
            key: memo.str(t.key),
            value: memo.str(t.value),
            effect: rule(p.field("effect"), build::taint_effect(t.effect))?,
        })
    })?;
    let allocatable = resource_list(path.field("allocatable"), &n.allocatable, memo)?;
    let name = memo.str(n.name);
    Ok(Node {
        uid: if n.uid.is_empty() {
            name.clone()
        } else {
            n.uid.into()
        },
        name,
        resource_version: n.resource_version,
        labels: memo.labels_of_strings(&n.labels),
        taints,
        unschedulable: n.unschedulable,
        allocatable: ContainerResources::new(allocatable).to_resources(),
    })
}

/// A typed PodDisruptionBudget. A selector upstream cannot convert is kept and makes
/// upstream skip the budget (see [`build::pdb_selector`]).
pub fn pdb(path: &str, p: &pb::PodDisruptionBudget) -> Result<PodDisruptionBudget> {
    let path = Path::Root(path);
    rule(path.field("name"), build::required(&p.name))?;
    let namespace = build::namespace_or_default(&p.namespace);
    let selector = p
        .selector
        .as_ref()
        .map(|s| build::pdb_selector(labels(&s.match_labels), expressions(s)));
    Ok(PodDisruptionBudget {
        namespace: namespace.into(),
        name: p.name.as_str().into(),
        uid: if p.uid.is_empty() {
            build::namespaced_uid(namespace, &p.name).into()
        } else {
            p.uid.as_str().into()
        },
        resource_version: p.resource_version,
        selector,
        disruptions_allowed: p.disruptions_allowed,
        disrupted_pods: strings(&p.disrupted_pods),
    })
}

fn expressions(s: &pb::LabelSelector) -> Vec<ExpressionInput<'_>> {
    s.match_expressions
        .iter()
        .map(|r| ExpressionInput {
            key: &r.key,
            operator: &r.operator,
            values: strings(&r.values),
        })
        .collect()
}

/// A pod's selector, validated as the API server validates it.
fn optional_selector(
    path: Path<'_>,
    s: Option<&pb::LabelSelector>,
) -> Result<Option<LabelSelector>> {
    let Some(s) = s else {
        return Ok(None);
    };
    build::pod_selector(labels(&s.match_labels), expressions(s))
        .map(Some)
        .map_err(|e| {
            let list = path.field("match_expressions");
            let item = list.index(e.index);
            let field = match e.field {
                ExpressionField::Operator => "operator",
                ExpressionField::Values => "values",
            };
            ApiError::invalid(item.field(field), e.invalid.0)
        })
}

fn container(
    path: Path<'_>,
    c: &ContainerFields<'_>,
    init: bool,
    memo: &mut ConvertMemo,
) -> Result<Container> {
    let requests = requests_with_limits(path, &c.requests, &c.limits, memo)?;
    let mut ports = Vec::new();
    for (i, port) in c.ports.iter().enumerate() {
        let ports_path = path.field("ports");
        let p = ports_path.index(i);
        // Typed pods carry no hostNetwork: their host ports are given as they are.
        match build::host_port(port.host_port, 0, port.protocol, port.host_ip, false) {
            Ok(host_port) => ports.extend(host_port),
            Err((PortField::HostPort, Invalid(message))) => {
                return Err(ApiError::invalid(p.field("host_port"), message));
            }
            Err((PortField::Protocol, Invalid(message))) => {
                return Err(ApiError::invalid(p.field("protocol"), message));
            }
        }
    }
    let restart_always = rule(
        path.field("restart_policy"),
        build::restart_always(c.restart_policy, init),
    )?;
    Ok(Container {
        name: memo.str(c.name),
        requests,
        ports,
        restart_always,
    })
}

/// Pod-level requests with upstream `defaultPodRequests` (see the decoder): a supported
/// resource with a pod-level limit and no request takes the limit, unless it is cpu or
/// memory that some container requests (then the container aggregate applies).
fn pod_level_requests(
    path: Path<'_>,
    r: &pb::ResourceRequirements,
    details: &PodDetails,
    memo: &mut ConvertMemo,
) -> Result<ContainerResources> {
    Ok(crate::model::resources::pod_level_requests_defaulted(
        resource_list(path.field("requests"), &pairs::<4>(&r.requests), memo)?,
        resource_list(path.field("limits"), &pairs::<4>(&r.limits), memo)?,
        details,
    ))
}

fn toleration(path: Path<'_>, t: &TolerationFields<'_>) -> Result<Toleration> {
    Ok(Toleration {
        key: t.key.into(),
        operator: rule(
            path.field("operator"),
            build::toleration_operator(t.operator),
        )?,
        value: t.value.into(),
        effect: rule(path.field("effect"), build::toleration_effect(t.effect))?,
    })
}

fn node_selector_requirements(
    path: Path<'_>,
    reqs: &[pb::NodeSelectorRequirement],
) -> Result<Vec<NodeSelectorRequirement>> {
    reqs.iter()
        .enumerate()
        .map(|(i, r)| {
            Ok(NodeSelectorRequirement {
                key: r.key.as_str().into(),
                operator: rule(
                    path.index(i).field("operator"),
                    build::node_selector_operator(&r.operator),
                )?,
                values: strings(&r.values),
            })
        })
        .collect()
}

fn node_selector(path: Path<'_>, s: &pb::NodeSelector) -> Result<NodeSelector> {
    let terms = each(
        path.field("node_selector_terms"),
        &s.node_selector_terms,
        |p, term| {
            Ok(NodeSelectorTerm {
                match_expressions: node_selector_requirements(
                    p.field("match_expressions"),
                    &term.match_expressions,
                )?,
                match_fields: node_selector_requirements(
                    p.field("match_fields"),
                    &term.match_fields,
                )?,
            })
        },
    )?;
    Ok(NodeSelector { terms })
}

fn pod_affinity_terms(
    path: Path<'_>,
    terms: &[pb::PodAffinityTerm],
) -> Result<Vec<PodAffinityTerm>> {
    each(path, terms, |p, t| {
        rule(p.field("topology_key"), build::required(&t.topology_key))?;
        Ok(PodAffinityTerm {
            label_selector: optional_selector(
                p.field("label_selector"),
                t.label_selector.as_ref(),
            )?,
            namespaces: strings(&t.namespaces),
            namespace_selector: optional_selector(
                p.field("namespace_selector"),
                t.namespace_selector.as_ref(),
            )?,
            topology_key: t.topology_key.as_str().into(),
        })
    })
}

fn spread_constraint(
    path: Path<'_>,
    c: &pb::TopologySpreadConstraint,
) -> Result<TopologySpreadConstraint> {
    let max_skew = rule(path.field("max_skew"), build::max_skew(c.max_skew))?;
    rule(path.field("topology_key"), build::required(&c.topology_key))?;
    let when_unsatisfiable = rule(
        path.field("when_unsatisfiable"),
        build::when_unsatisfiable(&c.when_unsatisfiable),
    )?;
    Ok(TopologySpreadConstraint {
        max_skew,
        topology_key: c.topology_key.as_str().into(),
        when_unsatisfiable,
        label_selector: optional_selector(path.field("label_selector"), c.label_selector.as_ref())?,
        min_domains: c.min_domains,
        match_label_keys: strings(&c.match_label_keys),
        node_affinity_policy: rule(
            path.field("node_affinity_policy"),
            build::inclusion_policy(&c.node_affinity_policy, InclusionPolicy::Honor),
        )?,
        node_taints_policy: rule(
            path.field("node_taints_policy"),
            build::inclusion_policy(&c.node_taints_policy, InclusionPolicy::Ignore),
        )?,
    })
}

/// A typed pod; `path` is the request field (`upsert`, `pod`).
pub fn pod(path: &str, p: &pb::Pod) -> Result<Pod> {
    pod_with_memo(path, p, &mut ConvertMemo::disabled())
}

/// As [`pod`], taking repeated strings and label sets from `memo` (a stream's bulk load).
pub fn pod_with_memo(path: &str, p: &pb::Pod, memo: &mut ConvertMemo) -> Result<Pod> {
    pod_from_fields(path, &PodFields::of(p), memo)
}

/// The conversion itself, from borrowed fields: a decoded message's or, in a bulk load,
/// those read straight from the pod's encoding.
pub(super) fn pod_from_fields(
    path: &str,
    p: &PodFields<'_>,
    memo: &mut ConvertMemo,
) -> Result<Pod> {
    let path = Path::Root(path);
    rule(path.field("name"), build::required(p.name))?;
    let namespace = build::namespace_or_default(p.namespace);
    let uid = if p.uid.is_empty() {
        std::borrow::Cow::Owned(build::namespaced_uid(namespace, p.name))
    } else {
        std::borrow::Cow::Borrowed(p.uid)
    };
    let mut pod = Pod::new_in(memo.str(namespace), p.name, &uid);
    pod.resource_version = p.resource_version;
    pod.labels = match &p.label_set {
        Source::Decoded => memo.labels(&p.labels),
        Source::Encoded(fields) => {
            let labels = memo.labels(&p.labels);
            memo.remember_labels(fields, &labels);
            labels
        }
        Source::Remembered(labels) => labels.clone(),
    };
    pod.node_name = (!p.node_name.is_empty()).then(|| memo.str(p.node_name));
    pod.priority = p.priority.unwrap_or(0);
    pod.preemption_policy = rule(
        path.field("preemption_policy"),
        build::preemption_policy(p.preemption_policy),
    )?;
    pod.details = match &p.details {
        Source::Remembered(details) => details.clone(),
        _ => Arc::new(pod_details(path, p, memo)?),
    };
    pod.start_time = timestamp(path.field("start_time"), p.start_time)?.into();
    pod.terminating = timestamp(path.field("deletion_timestamp"), p.deletion_timestamp)?.is_some();
    pod.nominated_node_name =
        (!p.nominated_node_name.is_empty()).then(|| memo.str(p.nominated_node_name));
    pod.phase = rule(path.field("phase"), build::phase(p.phase))?;
    Ok(match &p.details {
        Source::Decoded => pod.finish(),
        Source::Encoded(fields) => {
            let details = pod.details_mut();
            details.finish();
            details.drop_specs();
            memo.remember_details(fields, &pod.details);
            pod
        }
        Source::Remembered(_) => pod,
    })
}

/// Each item of a repeated field converted, under its index in `field`.
fn each<T, U>(
    field: Path<'_>,
    items: &[T],
    mut convert: impl FnMut(Path<'_>, &T) -> Result<U>,
) -> Result<Vec<U>> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| convert(field.index(i), item))
        .collect()
}

/// The details of `p`, before `finish`. Fields are checked in field-number order, so of
/// several invalid ones the same is reported whichever path the pod came by.
fn pod_details(path: Path<'_>, p: &PodFields<'_>, memo: &mut ConvertMemo) -> Result<PodDetails> {
    let mut details = PodDetails {
        scheduler_name: (!p.scheduler_name.is_empty()
            && p.scheduler_name != crate::model::DEFAULT_SCHEDULER)
            .then(|| memo.str(p.scheduler_name)),
        containers: each(path.field("containers"), &p.containers, |p, c| {
            container(p, c, false, memo)
        })?,
        node_selector: memo.labels(&p.node_selector),
        ..PodDetails::default()
    };
    if let Some(rest) = p.rest {
        details.init_containers = each(
            path.field("init_containers"),
            &rest.init_containers,
            |p, c| container(p, &ContainerFields::of(c), true, memo),
        )?;
        details.overhead = ContainerResources::new(resource_list(
            path.field("overhead"),
            &pairs::<4>(&rest.overhead),
            memo,
        )?);
        if let Some(resources) = &rest.resources {
            details.pod_requests =
                pod_level_requests(path.field("resources"), resources, &details, memo)?;
        }
    }
    details.tolerations = each(path.field("tolerations"), &p.tolerations, toleration)?;
    let Some(rest) = p.rest else {
        return Ok(details);
    };
    if let Some(affinity) = &rest.affinity {
        let a = path.field("affinity");
        if let Some(required) = affinity.node_affinity.as_ref().and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        }) {
            details.required_node_affinity = Some(node_selector(
                a.field("node_affinity.required_during_scheduling_ignored_during_execution"),
                required,
            )?);
        }
        if let Some(pa) = &affinity.pod_affinity {
            details.pod_affinity = pod_affinity_terms(
                a.field("pod_affinity.required_during_scheduling_ignored_during_execution"),
                &pa.required_during_scheduling_ignored_during_execution,
            )?;
        }
        if let Some(paa) = &affinity.pod_anti_affinity {
            details.pod_anti_affinity = pod_affinity_terms(
                a.field("pod_anti_affinity.required_during_scheduling_ignored_during_execution"),
                &paa.required_during_scheduling_ignored_during_execution,
            )?;
        }
    }
    details.topology_spread = each(
        path.field("topology_spread_constraints"),
        &rest.topology_spread_constraints,
        spread_constraint,
    )?;
    details.conditions = rest
        .conditions
        .iter()
        .map(|c| PodCondition {
            type_: c.r#type.as_str().into(),
            status: c.status.as_str().into(),
            reason: c.reason.as_str().into(),
        })
        .collect();
    Ok(details)
}

// ---------------------------------------------------------------------------------------
// Model → proto.

pub fn pod_ref(r: &PodRef) -> pb::PodRef {
    pb::PodRef {
        namespace: r.namespace.to_string(),
        name: r.name.to_string(),
        uid: r.uid.to_string(),
    }
}

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
        ..Default::default()
    }
}

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
    }
}

/// Model → proto for the objects themselves: what a client (the load generator) sends.
/// `node(_, &node_message(n))` gives `n` back, and likewise for pods and budgets.
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
    if p.details.required_node_affinity.is_none()
        && p.details.pod_affinity.is_empty()
        && p.details.pod_anti_affinity.is_empty()
    {
        return None;
    }
    Some(pb::Affinity {
        node_affinity: p
            .details
            .required_node_affinity
            .as_ref()
            .map(|s| pb::NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(pb::NodeSelector {
                    node_selector_terms: s
                        .terms
                        .iter()
                        .map(|t| pb::NodeSelectorTerm {
                            match_expressions: node_requirements(&t.match_expressions),
                            match_fields: node_requirements(&t.match_fields),
                        })
                        .collect(),
                }),
            }),
        pod_affinity: (!p.details.pod_affinity.is_empty()).then(|| pb::PodAffinity {
            required_during_scheduling_ignored_during_execution: affinity_terms(
                &p.details.pod_affinity,
            ),
        }),
        pod_anti_affinity: (!p.details.pod_anti_affinity.is_empty()).then(|| pb::PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: affinity_terms(
                &p.details.pod_anti_affinity,
            ),
        }),
    })
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
        priority: Some(p.priority),
        preemption_policy: match p.preemption_policy {
            PreemptionPolicy::PreemptLowerPriority => "PreemptLowerPriority",
            PreemptionPolicy::Never => "Never",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BIND_ALL_IP, PodPhase};

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
            "upsert.allocatable[cpu]: invalid quantity \"lots\""
        );
        assert!(build::quantity("1e9999999999").is_err());
        assert!(build::quantity("-1").is_err());
        assert_eq!(build::quantity("500m").unwrap(), Quantity::from_millis(500));
    }

    #[test]
    fn nodes_converted_with_a_memo_equal_those_without_and_share_strings() {
        let cluster = crate::generate::generate(&crate::generate::ClusterSpec {
            nodes: 4,
            pods_per_node: 0,
            seed: 3,
        });
        let mut memo = ConvertMemo::new(64);
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
    fn paths_are_written_out_as_fields_indexes_and_keys() {
        let root = Path::Root("upsert");
        let containers = root.field("containers");
        let container = containers.index(2);
        let requests = container.field("requests");
        assert_eq!(
            requests.key("example.com/gpu").to_string(),
            "upsert.containers[2].requests[example.com/gpu]"
        );
        assert_eq!(String::from(root.index(0)), "upsert[0]");
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
            err.starts_with("pod.tolerations[0].effect: unsupported value \"Sometimes\""),
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
            let mut memo = ConvertMemo::new(capacity);
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
        let mut memo = ConvertMemo::new(16);
        assert_eq!(
            message(pod_with_memo("upsert", &bad, &mut memo).unwrap_err()),
            message(pod("upsert", &bad).unwrap_err())
        );
    }
}
