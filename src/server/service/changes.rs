//! One dispatch per kind: an `Update*` request — a unary call, or a `Sync` item of its
//! kind — read into the core's change. Typed objects go through `convert`, JSON and YAML
//! documents through the model's Kubernetes reader; both end in the one builder.

use crate::app::{AnyChange, Change, PodArc};
use crate::model::build::Memo;
use crate::model::decode::{self, DecodeError};

use super::super::convert;
use super::super::errors::ApiError;
use super::super::pb;

/// The kinds an update names: each one's `Sync` item field and counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Node,
    Pod,
    Pdb,
    PriorityClass,
    Namespace,
    PodGroup,
    Workload,
}

impl Kind {
    /// The `Sync` item field of the kind, the prefix of its rejections' field paths.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Pod => "pod",
            Kind::Pdb => "pdb",
            Kind::PriorityClass => "priority_class",
            Kind::Namespace => "namespace",
            Kind::PodGroup => "pod_group",
            Kind::Workload => "workload",
        }
    }

    /// The kind's counter in a `Sync` answer.
    pub(crate) fn count(self, counts: &mut pb::SyncCounts) -> &mut u64 {
        match self {
            Kind::Node => &mut counts.nodes,
            Kind::Pod => &mut counts.pods,
            Kind::Pdb => &mut counts.pdbs,
            Kind::PriorityClass => &mut counts.priority_classes,
            Kind::Namespace => &mut counts.namespaces,
            Kind::PodGroup => &mut counts.pod_groups,
            Kind::Workload => &mut counts.workloads,
        }
    }
}

/// An update request of one kind.
pub(crate) trait UpdateRequest: Send + 'static {
    /// The request's kind.
    const KIND: Kind;
    /// The change's JSON/YAML document, if it is one (parsing one can be work for the
    /// blocking pool).
    fn document(&self) -> Option<&str>;
    /// The change in the core's terms, typed objects converted with `memo`.
    fn read(self, memo: &mut Memo) -> Result<AnyChange, ApiError>;
}

pub(crate) fn missing_change() -> ApiError {
    ApiError::invalid("change", "one of upsert, upsert_json or delete is required")
}

/// Parses and decodes the document of field `field`. Blocking for large documents.
pub(crate) fn decode_document<T>(
    field: &str,
    text: &str,
    decode: fn(&serde_json::Value) -> Result<T, DecodeError>,
) -> Result<T, ApiError> {
    let value = decode::parse_document(text).map_err(|e| ApiError::from_decode(field, e))?;
    decode(&value).map_err(|e| ApiError::from_decode(field, e))
}

/// Implements [`UpdateRequest`] for a kind's request: its oneof, its typed converter,
/// its document decoder and how its object becomes an [`AnyChange`].
macro_rules! update_request {
    ($request:ty, $oneof:ident, $kind:ident, $any:ident, $typed:expr, $document:expr) => {
        impl UpdateRequest for $request {
            const KIND: Kind = Kind::$kind;

            fn document(&self) -> Option<&str> {
                match &self.change {
                    Some(pb::$oneof::Change::UpsertJson(text)) => Some(text),
                    _ => None,
                }
            }

            fn read(self, memo: &mut Memo) -> Result<AnyChange, ApiError> {
                use pb::$oneof::Change as Requested;
                let change = match self.change {
                    None => return Err(missing_change()),
                    Some(Requested::Upsert(typed)) => Change::Upsert(($typed)(&typed, memo)?),
                    Some(Requested::UpsertJson(text)) => {
                        Change::Upsert(decode_document("upsert_json", &text, $document)?)
                    }
                    Some(Requested::Delete(r)) => Change::Delete(convert::object_key(&r)),
                };
                Ok(AnyChange::$any(change))
            }
        }
    };
}

update_request!(
    pb::UpdateNodeRequest,
    update_node_request,
    Node,
    Node,
    |n, memo| convert::node_with_memo("upsert", n, memo),
    decode::decode_node
);
update_request!(
    pb::UpdatePodRequest,
    update_pod_request,
    Pod,
    Pod,
    |p, memo| convert::pod_with_memo("upsert", p, memo).map(PodArc::new),
    |value| decode::decode_pod(value).map(PodArc::new)
);
update_request!(
    pb::UpdatePodDisruptionBudgetRequest,
    update_pod_disruption_budget_request,
    Pdb,
    Pdb,
    |b, _: &mut Memo| convert::pdb("upsert", b),
    decode::decode_pdb
);
update_request!(
    pb::UpdatePriorityClassRequest,
    update_priority_class_request,
    PriorityClass,
    PriorityClass,
    |c, _: &mut Memo| convert::priority_class("upsert", c),
    decode::decode_priority_class
);
update_request!(
    pb::UpdateNamespaceRequest,
    update_namespace_request,
    Namespace,
    Namespace,
    |n, _: &mut Memo| convert::namespace("upsert", n),
    decode::decode_namespace
);
update_request!(
    pb::UpdatePodGroupRequest,
    update_pod_group_request,
    PodGroup,
    PodGroup,
    |g, _: &mut Memo| convert::pod_group("upsert", g),
    decode::decode_pod_group
);
update_request!(
    pb::UpdateWorkloadRequest,
    update_workload_request,
    Workload,
    Workload,
    |w, _: &mut Memo| convert::workload("upsert", w),
    decode::decode_workload
);

/// A `Sync` item read as the unary update of its kind: its kind (when it names one)
/// and its change.
pub(crate) fn read_sync_item(
    item: Option<pb::sync_request::Item>,
    memo: &mut Memo,
) -> (Option<Kind>, Result<AnyChange, ApiError>) {
    use pb::sync_request::Item;
    fn read<R: UpdateRequest>(
        r: R,
        memo: &mut Memo,
    ) -> (Option<Kind>, Result<AnyChange, ApiError>) {
        (Some(R::KIND), r.read(memo))
    }
    match item {
        None => (
            None,
            Err(ApiError::invalid(
                "item",
                "one of node, pod, pdb, priority_class, namespace, pod_group or workload is required",
            )),
        ),
        Some(Item::Node(r)) => read(r, memo),
        Some(Item::Pod(r)) => read(r, memo),
        Some(Item::Pdb(r)) => read(r, memo),
        Some(Item::PriorityClass(r)) => read(r, memo),
        Some(Item::Namespace(r)) => read(r, memo),
        Some(Item::PodGroup(r)) => read(r, memo),
        Some(Item::Workload(r)) => read(r, memo),
    }
}
