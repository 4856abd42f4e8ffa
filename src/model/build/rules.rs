//! The verdicts on single values: accepted values, enum tables, required keys, selector
//! validity and Kubernetes' defaulting of a value. The walk over an object (`node`, `pod`,
//! `pdb`) applies them and names the field a verdict is about.
//!
//! A rule returns [`Invalid`]: the lowercase message only, the walk adds the path.

use super::super::quantity::Quantity;
use super::super::{
    BIND_ALL_IP, HostPort, InclusionPolicy, LabelSelector, NodeSelectorOperator, Operator,
    PodPhase, PreemptionPolicy, Protocol, Requirement, TaintEffect, TolerationOperator,
    WhenUnsatisfiable,
};
use super::super::{Str, resources};
use super::input::SelectorInput;

/// Why a field's value is refused; the walk names the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Invalid(pub String);

impl Invalid {
    fn new(message: impl Into<String>) -> Self {
        Invalid(message.into())
    }
}

pub(super) type Rule<T> = Result<T, Invalid>;

pub(super) const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
pub(super) const SELECTOR_OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];
pub(super) const NODE_SELECTOR_OPERATORS: &[&str] =
    &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];
pub(super) const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];
pub(super) const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
pub(super) const TOLERATION_OPERATORS: &[&str] = &["Equal", "Exists"];
pub(super) const WHEN_UNSATISFIABLE: &[&str] = &["DoNotSchedule", "ScheduleAnyway"];
pub(super) const INCLUSION_POLICIES: &[&str] = &["Honor", "Ignore"];
pub(super) const PREEMPTION_POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];

/// The message for an enum value outside `supported`.
pub(super) fn unsupported(value: &str, supported: &[&str]) -> Invalid {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    Invalid(format!(
        "unsupported value {value:?}: supported values are {}",
        list.join(", ")
    ))
}

fn one_of<T>(value: &str, parse: impl Fn(&str) -> Option<T>, supported: &[&str]) -> Rule<T> {
    parse(value).ok_or_else(|| unsupported(value, supported))
}

/// Object names, taint keys, resource names and topology keys: required.
pub(super) fn required(value: &str) -> Rule<()> {
    if value.is_empty() {
        Err(Invalid::new("must not be empty"))
    } else {
        Ok(())
    }
}

/// A non-negative quantity under upstream `resource.ParseQuantity`'s grammar (see
/// [`Quantity::parse`]: a decimal exponent is accepted when it fits in an int64).
pub(super) fn quantity(text: &str) -> Rule<Quantity> {
    let q = Quantity::parse(text).map_err(|e| Invalid(e.to_string()))?;
    if q.is_negative() {
        return Err(Invalid::new("must be non-negative"));
    }
    Ok(q)
}

/// A resource amount the scheduler reads as int64 overflow makes negative is refused (see
/// [`resources::scheduler_reading`]).
pub(super) fn scheduler_reading(name: &Str, q: Quantity) -> Rule<()> {
    resources::scheduler_reading(name, q)
        .map(drop)
        .map_err(|e| Invalid(e.to_string()))
}

/// A resource list's key (`cpu`, `nvidia.com/gpu`): required.
pub(super) fn resource_name(name: &str) -> Rule<()> {
    required(name)
}

/// Where an object without a namespace lives.
pub(super) fn namespace_or_default(namespace: &str) -> &str {
    if namespace.is_empty() {
        "default"
    } else {
        namespace
    }
}

/// A namespaced object's uid when none is given: `namespace/name`, stable across updates.
pub(super) fn namespaced_uid(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// RFC 3339 → Unix nanoseconds; empty → `None`.
pub(super) fn timestamp(text: &str) -> Rule<Option<i64>> {
    if text.is_empty() {
        return Ok(None);
    }
    super::super::rfc3339_nanos(text)
        .map(Some)
        .ok_or_else(|| Invalid(format!("invalid RFC 3339 timestamp {text:?}")))
}

pub(super) fn taint_effect(text: &str) -> Rule<TaintEffect> {
    one_of(text, TaintEffect::parse, TAINT_EFFECTS)
}

/// A toleration's effect; empty tolerates every effect.
pub(super) fn toleration_effect(text: &str) -> Rule<Option<TaintEffect>> {
    if text.is_empty() {
        Ok(None)
    } else {
        taint_effect(text).map(Some)
    }
}

/// A toleration's operator; empty means `Equal`.
pub(super) fn toleration_operator(text: &str) -> Rule<TolerationOperator> {
    one_of(
        text,
        |s| match s {
            "" | "Equal" => Some(TolerationOperator::Equal),
            "Exists" => Some(TolerationOperator::Exists),
            _ => None,
        },
        TOLERATION_OPERATORS,
    )
}

/// A pod's preemption policy; empty means `PreemptLowerPriority`.
pub(super) fn preemption_policy(text: &str) -> Rule<PreemptionPolicy> {
    one_of(
        text,
        |s| match s {
            "" | "PreemptLowerPriority" => Some(PreemptionPolicy::PreemptLowerPriority),
            "Never" => Some(PreemptionPolicy::Never),
            _ => None,
        },
        PREEMPTION_POLICIES,
    )
}

/// A pod's phase; empty means `Pending`. The API server accepts any phase, and the
/// scheduler only sets `Succeeded` and `Failed` pods apart: another phase is an ordinary
/// pod that is not terminal, read as `Unknown`.
pub(super) fn phase(text: &str) -> Rule<PodPhase> {
    Ok(PodPhase::parse(text).unwrap_or(PodPhase::Unknown))
}

/// A container's restart policy (empty allowed); an init container with `Always` is a
/// sidecar.
pub(super) fn restart_always(text: &str, init: bool) -> Rule<bool> {
    if !text.is_empty() && !RESTART_POLICIES.contains(&text) {
        return Err(unsupported(text, RESTART_POLICIES));
    }
    Ok(init && text == "Always")
}

/// Which field of a container port a rule refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PortField {
    HostPort,
    Protocol,
}

/// A container port as the scheduler sees it: `None` without a host port. With
/// `host_network`, a port without `hostPort` takes its `containerPort` (API defaulting).
pub(super) fn host_port(
    host_port: i32,
    container_port: i32,
    protocol: &str,
    host_ip: &str,
    host_network: bool,
) -> Result<Option<HostPort>, (PortField, Invalid)> {
    let port = if host_network && host_port == 0 {
        container_port
    } else {
        host_port
    };
    if !(0..=65_535).contains(&port) {
        return Err((
            PortField::HostPort,
            Invalid::new("must be between 0 and 65535"),
        ));
    }
    let protocol =
        one_of(protocol, Protocol::parse, PROTOCOLS).map_err(|e| (PortField::Protocol, e))?;
    Ok((port > 0).then(|| HostPort {
        ip: if host_ip.is_empty() {
            BIND_ALL_IP
        } else {
            host_ip
        }
        .into(),
        protocol,
        port,
    }))
}

pub(super) fn node_selector_operator(text: &str) -> Rule<NodeSelectorOperator> {
    one_of(text, NodeSelectorOperator::parse, NODE_SELECTOR_OPERATORS)
}

pub(super) fn max_skew(value: i32) -> Rule<i32> {
    if value < 1 {
        Err(Invalid::new("must be greater than zero"))
    } else {
        Ok(value)
    }
}

/// A preferred term's `weight`, as the API server validates it.
pub(super) fn term_weight(value: i32) -> Rule<i32> {
    if (1..=100).contains(&value) {
        Ok(value)
    } else {
        Err(Invalid::new("must be in the range 1-100"))
    }
}

/// An image's `sizeBytes`.
pub(super) fn image_size(value: i64) -> Rule<i64> {
    if value < 0 {
        Err(Invalid::new("must be greater than or equal to 0"))
    } else {
        Ok(value)
    }
}

pub(super) fn when_unsatisfiable(text: &str) -> Rule<WhenUnsatisfiable> {
    one_of(
        text,
        |s| match s {
            "DoNotSchedule" => Some(WhenUnsatisfiable::DoNotSchedule),
            "ScheduleAnyway" => Some(WhenUnsatisfiable::ScheduleAnyway),
            _ => None,
        },
        WHEN_UNSATISFIABLE,
    )
}

/// A spread constraint's node affinity or taints policy; empty takes `default`.
pub(super) fn inclusion_policy(text: &str, default: InclusionPolicy) -> Rule<InclusionPolicy> {
    one_of(
        text,
        |s| match s {
            "" => Some(default),
            "Honor" => Some(InclusionPolicy::Honor),
            "Ignore" => Some(InclusionPolicy::Ignore),
            _ => None,
        },
        INCLUSION_POLICIES,
    )
}

// ---------------------------------------------------------------------------------------
// Label selectors.

pub(super) fn selector_operator(text: &str) -> Rule<Operator> {
    one_of(text, Operator::parse, SELECTOR_OPERATORS)
}

/// A pod selector's value list for `operator`: the API server validates pods' selectors
/// before the scheduler sees them, so a misplaced value list is an error.
pub(super) fn selector_values(operator: Operator, values: &[&str]) -> Rule<()> {
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => Err(Invalid::new(
            "must be specified when operator is In or NotIn",
        )),
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => Err(Invalid::new(
            "may not be specified when operator is Exists or DoesNotExist",
        )),
        _ => Ok(()),
    }
}

/// A PodDisruptionBudget's selector, never refused: what upstream's
/// `LabelSelectorAsSelector` cannot convert (an unknown operator, a key or value that is
/// not a label, In without values) becomes a requirement `is_valid()` rejects, so the
/// budget is kept and skipped as upstream skips it.
pub(super) fn pdb_selector(selector: &SelectorInput<'_>) -> LabelSelector {
    let match_labels = super::labels_of(&selector.match_labels);
    let mut match_expressions = Vec::with_capacity(selector.match_expressions.len());
    for (k, v) in match_labels.iter() {
        if !is_qualified_name(k) || !is_label_value(v) {
            match_expressions.push(invalid_requirement(k));
        }
    }
    for e in &selector.match_expressions {
        let requirement = match Operator::parse(e.operator) {
            Some(operator)
                if is_qualified_name(e.key) && e.values.iter().all(|v| is_label_value(v)) =>
            {
                Requirement {
                    key: e.key.into(),
                    operator,
                    values: e.values.iter().map(|&v| v.into()).collect(),
                }
            }
            _ => invalid_requirement(e.key),
        };
        match_expressions.push(requirement);
    }
    LabelSelector {
        match_labels,
        match_expressions,
    }
}

/// A requirement `is_valid()` rejects, standing for what upstream cannot convert.
fn invalid_requirement(key: &str) -> Requirement {
    Requirement {
        key: key.into(),
        operator: Operator::In,
        values: Vec::new(),
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Upstream `IsValidLabelValue`: empty, or a label name.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

/// Upstream `IsDNS1123Subdomain`.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            b.first()
                .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && b.last()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// Upstream `IsQualifiedName` (label keys): `[prefix/]name`.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        None => is_label_name(s),
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_label_name(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_follow_parse_quantity() {
        assert!(quantity("1.5e-2147483648").is_ok());
        assert!(
            quantity("1e9999999999999999999").is_err(),
            "exponent beyond int64"
        );
        // Within int64 the exponent is cut to int32, as upstream cuts it: 2^32 is 0.
        assert_eq!(quantity("1e4294967296").map(Quantity::value), Ok(1));
        assert_eq!(quantity("-1").unwrap_err().0, "must be non-negative");
        assert_eq!(quantity("12x").unwrap_err().0, "invalid quantity \"12x\"");
    }

    #[test]
    fn huge_exponents_do_not_overflow() {
        // An int64 amount of scale 2^31-1: `Value()` overflows to 0 and `MilliValue()`'s
        // int32 shift wraps, leaving the 1.
        let vast = quantity("1e2147483647").unwrap();
        assert_eq!((vast.value(), vast.milli_value()), (0, 1));
        assert!(quantity("0e2147483647").unwrap().is_zero());
        assert_eq!(
            quantity("1.5e-2147483648").map(Quantity::milli_value),
            Ok(1),
            "rounded up to 1n"
        );
        assert!(quantity("1e9223372036854775808").is_err(), "beyond int64");
        assert_eq!(
            Quantity::parse("-1e-99999999").map(Quantity::is_negative),
            Ok(true)
        );
        assert!(quantity(&"1".repeat(300)).is_err());
        assert_eq!(quantity("12e3").map(Quantity::value), Ok(12_000));
    }

    #[test]
    fn readings_kube_scheduler_sees_as_negative_are_refused() {
        let reading =
            |name: &str, text: &str| scheduler_reading(&name.into(), quantity(text).unwrap());
        assert_eq!(
            reading("cpu", "9223372036854775807").unwrap_err().0,
            "kube-scheduler reads this cpu amount as -1000 (int64 overflow)"
        );
        assert!(reading("memory", "9223372036854775807").is_ok());
        assert!(reading("memory", "9223372036854775808").is_err());
        assert!(reading("memory", "1e30").is_ok(), "read as 0");
        assert!(reading("ephemeral-storage", "1e40").is_ok(), "read as 0");
        assert!(reading("example.com/gpu", "12345678901234567890").is_err());
        assert!(
            reading("unknown", "12345678901234567890").is_ok(),
            "not read"
        );
    }

    #[test]
    fn any_phase_is_accepted_and_only_succeeded_and_failed_are_terminal() {
        assert_eq!(phase("Bogus"), Ok(PodPhase::Unknown));
        assert_eq!(phase(""), Ok(PodPhase::Pending));
        assert!(!phase("Bogus").unwrap().is_terminal());
        assert!(phase("Failed").unwrap().is_terminal());
    }

    #[test]
    fn host_ports_default_and_range() {
        assert_eq!(host_port(0, 80, "", "", false).unwrap(), None);
        let p = host_port(0, 80, "UDP", "", true).unwrap().unwrap();
        assert_eq!((p.port, p.protocol), (80, Protocol::Udp));
        assert_eq!(
            host_port(70_000, 0, "", "", false).unwrap_err().0,
            PortField::HostPort
        );
        assert_eq!(
            host_port(1, 0, "ICMP", "", false).unwrap_err().0,
            PortField::Protocol
        );
    }

    #[test]
    fn pdb_selectors_keep_what_upstream_cannot_convert_as_invalid() {
        let selector = |key: &'static str, operator: &'static str| SelectorInput {
            match_labels: Default::default(),
            match_expressions: vec![super::super::input::RequirementInput {
                key,
                operator,
                values: vec!["a"],
            }],
        };
        assert!(pdb_selector(&selector("app", "In")).is_valid());
        assert!(!pdb_selector(&selector("app", "Near")).is_valid());
        assert!(!pdb_selector(&selector("-bad", "In")).is_valid());
        assert!(selector_operator("Near").is_err());
        assert!(selector_values(Operator::In, &[]).is_err());
        assert!(selector_values(Operator::Exists, &["a"]).is_err());
        assert!(selector_values(Operator::NotIn, &["a"]).is_ok());
    }
}
