//! Node selectors: required node affinity's terms.

use super::Str;

/// Operators of node-selector requirements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeSelectorOperator {
    /// The label's value is one of `values`.
    In,
    /// The label is absent or its value is none of `values`.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label's value, as an integer, is greater than the one value.
    Gt,
    /// The label's value, as an integer, is less than the one value.
    Lt,
}

impl NodeSelectorOperator {
    /// The operator named `value` in the API; `None` for any other text.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "In" => Some(Self::In),
            "NotIn" => Some(Self::NotIn),
            "Exists" => Some(Self::Exists),
            "DoesNotExist" => Some(Self::DoesNotExist),
            "Gt" => Some(Self::Gt),
            "Lt" => Some(Self::Lt),
            _ => None,
        }
    }

    /// The operator's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "In",
            Self::NotIn => "NotIn",
            Self::Exists => "Exists",
            Self::DoesNotExist => "DoesNotExist",
            Self::Gt => "Gt",
            Self::Lt => "Lt",
        }
    }
}

/// One requirement of a node selector term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeSelectorRequirement {
    /// The label (or field) key.
    pub key: Str,
    /// How the key's value is compared.
    pub operator: NodeSelectorOperator,
    /// The values compared against.
    pub values: Vec<Str>,
}

/// A node selector term: every requirement must hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NodeSelectorTerm {
    /// Requirements on the node's labels.
    pub match_expressions: Vec<NodeSelectorRequirement>,
    /// Requirements on the node's fields (`metadata.name` only).
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// `requiredDuringSchedulingIgnoredDuringExecution` of node affinity: OR over terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NodeSelector {
    /// The terms; the selector matches when any term does.
    pub terms: Vec<NodeSelectorTerm>,
}
