//! NodeAffinity: the pod's nodeSelector and required node affinity.

use crate::model::{
    Node, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Pod,
};

/// The plugin's name in statuses and diagnostics.
pub const NODE_AFFINITY: &str = "NodeAffinity";

fn requirement_matches(req: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = &req.values;
    let parse_single = || -> Option<i64> {
        if values.len() == 1 {
            values[0].parse::<i64>().ok()
        } else {
            None
        }
    };
    match req.operator {
        NodeSelectorOperator::In => {
            !values.is_empty() && value.is_some_and(|v| values.iter().any(|x| &**x == v))
        }
        NodeSelectorOperator::NotIn => {
            !values.is_empty() && value.is_none_or(|v| !values.iter().any(|x| &**x == v))
        }
        NodeSelectorOperator::Exists => values.is_empty() && value.is_some(),
        NodeSelectorOperator::DoesNotExist => values.is_empty() && value.is_none(),
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            let (Some(bound), Some(v)) = (parse_single(), value) else {
                return false;
            };
            let Ok(v) = v.parse::<i64>() else {
                return false;
            };
            if req.operator == NodeSelectorOperator::Gt {
                v > bound
            } else {
                v < bound
            }
        }
    }
}

fn field_matches(req: &NodeSelectorRequirement, node: &Node) -> bool {
    // Only `metadata.name` is a node field; In/NotIn with exactly one value are the only
    // valid forms (anything else makes the term invalid, i.e. not matching).
    let field = if &*req.key == "metadata.name" {
        &*node.name
    } else {
        ""
    };
    if req.values.len() != 1 {
        return false;
    }
    match req.operator {
        NodeSelectorOperator::In => field == &*req.values[0],
        NodeSelectorOperator::NotIn => field != &*req.values[0],
        _ => false,
    }
}

/// Required node affinity: OR over terms, AND within; empty terms match nothing.
pub fn node_selector_matches(selector: &NodeSelector, node: &Node) -> bool {
    selector.terms.iter().any(|term| term_matches(term, node))
}

/// One node selector term: every requirement holds; an empty term matches nothing.
pub fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    (!term.match_expressions.is_empty() || !term.match_fields.is_empty())
        && term
            .match_expressions
            .iter()
            .all(|r| requirement_matches(r, node.labels.get(&r.key).map(|v| &**v)))
        && term.match_fields.iter().all(|r| field_matches(r, node))
}

/// nodeSelector and required node affinity (upstream `RequiredNodeAffinity.Match`).
pub fn required_node_affinity_matches(pod: &Pod, node: &Node) -> bool {
    pod.details.node_selector.is_subset_of(&node.labels)
        && pod
            .details
            .required_node_affinity
            .as_ref()
            .is_none_or(|s| node_selector_matches(s, node))
}
