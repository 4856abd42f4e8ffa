//! PodDisruptionBudgets.

use super::super::PodDisruptionBudget;
use super::input::PdbInput;
use super::path::OBJECT;
use super::{BuildError, Memo, rules};

/// The budget `b` describes. A selector upstream cannot convert is kept and makes
/// upstream skip the budget (see [`rules::pdb_selector`]).
pub fn pdb(b: &PdbInput<'_>, memo: &mut Memo) -> Result<PodDisruptionBudget, BuildError> {
    OBJECT
        .field("metadata.name")
        .check(rules::required(b.name))?;
    let namespace = rules::namespace_or_default(b.namespace);
    Ok(PodDisruptionBudget {
        namespace: memo.str(namespace),
        name: b.name.into(),
        uid: if b.uid.is_empty() {
            rules::namespaced_uid(namespace, b.name).into()
        } else {
            b.uid.into()
        },
        resource_version: b.resource_version,
        selector: b.selector.as_ref().map(rules::pdb_selector),
        disruptions_allowed: b.disruptions_allowed,
        disrupted_pods: b.disrupted_pods.iter().map(|&p| p.into()).collect(),
    })
}
