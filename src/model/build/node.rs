//! Nodes.

use super::super::{ContainerImage, ContainerResources, Node, NodeCondition, Taint};
use super::input::{NodeInput, Quantities};
use super::path::{OBJECT, Path};
use super::{BuildError, Memo, in_key_order, labels_of, rules};
use crate::model::Str;
use crate::model::quantity::Quantity;

/// The node `n` describes. Its strings and quantities come from `memo`: a load's nodes
/// repeat label keys, zones, taints and capacities, and a node's hostname label is its
/// name.
pub fn node(n: &NodeInput<'_>, memo: &mut Memo) -> Result<Node, BuildError> {
    OBJECT
        .field("metadata.name")
        .check(rules::required(n.name))?;
    let taints_path = OBJECT.field("spec.taints");
    let mut taints = Vec::with_capacity(n.taints.len());
    for (i, t) in n.taints.iter().enumerate() {
        let path = taints_path.index(i);
        path.field("key").check(rules::required(t.key))?;
        taints.push(Taint {
            key: memo.str(t.key),
            value: memo.str(t.value),
            effect: path.field("effect").check(rules::taint_effect(t.effect))?,
        });
    }
    let allocatable = resource_list(OBJECT.field("status.allocatable"), &n.allocatable, memo)?;
    let conditions_path = OBJECT.field("status.conditions");
    let mut conditions = Vec::with_capacity(n.conditions.len());
    for (i, c) in n.conditions.iter().enumerate() {
        conditions_path
            .index(i)
            .field("type")
            .check(rules::required(c.type_))?;
        conditions.push(NodeCondition {
            kind: memo.str(c.type_),
            status: memo.str(c.status),
            reason: memo.str(c.reason),
            message: c.message.into(),
        });
    }
    let images_path = OBJECT.field("status.images");
    let mut images = Vec::with_capacity(n.images.len());
    for (i, image) in n.images.iter().enumerate() {
        let size_bytes = images_path
            .index(i)
            .field("sizeBytes")
            .check(rules::image_size(image.size_bytes))?;
        images.push(ContainerImage {
            names: image.names.iter().map(|&name| memo.str(name)).collect(),
            size_bytes,
        });
    }
    let name = memo.str(n.name);
    Ok(Node {
        uid: if n.uid.is_empty() {
            name.clone()
        } else {
            n.uid.into()
        },
        name,
        resource_version: n.resource_version,
        labels: memo.labels_of_strings(&in_key_order(&n.labels)),
        taints,
        unschedulable: n.unschedulable,
        allocatable: ContainerResources::new(allocatable)
            .to_resources()
            .map_err(|e| {
                let resource = e.resource().clone();
                OBJECT
                    .field("status.allocatable")
                    .key(&resource)
                    .error(e.to_string())
            })?,
        // Not through the memo: annotation values are mostly unique to their node.
        annotations: labels_of(&n.annotations),
        conditions,
        images,
    })
}

/// A resource list (`status.allocatable`, a container's requests, ...), in key order, so
/// the first bad entry reported is always the same one.
pub(super) fn resource_list<const N: usize>(
    path: Path<'_>,
    list: &Quantities<'_, N>,
    memo: &mut Memo,
) -> Result<Vec<(Str, Quantity)>, BuildError> {
    in_key_order(list)
        .iter()
        .map(|(name, text)| {
            let entry = path.key(name);
            entry.check(rules::resource_name(name))?;
            let quantity = memo.quantity(text, |text| entry.check(rules::quantity(text)))?;
            let name = memo.str(name);
            entry.check(rules::scheduler_reading(&name, quantity))?;
            Ok((name, quantity))
        })
        .collect()
}
