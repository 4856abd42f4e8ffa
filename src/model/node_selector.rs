//! Node selectors: required node affinity's terms.

use super::Str;

/// Operators of node-selector requirements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeSelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl NodeSelectorOperator {
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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeSelectorRequirement {
    pub key: Str,
    pub operator: NodeSelectorOperator,
    pub values: Vec<Str>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NodeSelectorTerm {
    pub match_expressions: Vec<NodeSelectorRequirement>,
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// `requiredDuringSchedulingIgnoredDuringExecution` of node affinity: OR over terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NodeSelector {
    pub terms: Vec<NodeSelectorTerm>,
}
