//! PriorityClasses and Namespaces: the cluster-scoped objects that give pods their
//! priority and their namespace's labels.

use super::super::namespace::Namespace;
use super::super::priority::PriorityClass;
use super::input::Pairs;
use super::path::OBJECT;
use super::{BuildError, Memo, in_key_order, rules};

/// A scheduling.k8s.io/v1 PriorityClass (`metadata`, `value`, `globalDefault`,
/// `preemptionPolicy`).
#[derive(Debug, Default)]
pub struct PriorityClassInput<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `metadata.resourceVersion`, as a number.
    pub resource_version: u64,
    /// `value`.
    pub value: i32,
    /// `globalDefault`.
    pub global_default: bool,
    /// `preemptionPolicy`.
    pub preemption_policy: &'a str,
}

/// A v1 Namespace (`metadata`).
#[derive(Debug, Default)]
pub struct NamespaceInput<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `metadata.resourceVersion`, as a number.
    pub resource_version: u64,
    /// `metadata.labels`.
    pub labels: Pairs<'a, 8>,
}

/// The class `c` describes; a class without a policy leaves pods the default one.
pub fn priority_class(c: &PriorityClassInput<'_>) -> Result<PriorityClass, BuildError> {
    OBJECT
        .field("metadata.name")
        .check(rules::required(c.name))?;
    let preemption_policy = if c.preemption_policy.is_empty() {
        None
    } else {
        Some(
            OBJECT
                .field("preemptionPolicy")
                .check(rules::preemption_policy(c.preemption_policy))?,
        )
    };
    Ok(PriorityClass {
        name: c.name.into(),
        uid: if c.uid.is_empty() { c.name } else { c.uid }.into(),
        resource_version: c.resource_version,
        value: c.value,
        global_default: c.global_default,
        preemption_policy,
    })
}

/// The namespace `n` describes, with the name label the API server keeps on it.
pub fn namespace(n: &NamespaceInput<'_>, memo: &mut Memo) -> Result<Namespace, BuildError> {
    OBJECT
        .field("metadata.name")
        .check(rules::required(n.name))?;
    let labels = memo.labels_of_strings(&in_key_order(&n.labels));
    Ok(Namespace::new(
        n.name.into(),
        if n.uid.is_empty() { n.name } else { n.uid }.into(),
        n.resource_version,
        &labels,
    ))
}
