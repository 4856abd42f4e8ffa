//! The proto3 JSON mapping of `preemptd.v1` messages, derived from the proto's own
//! descriptors (the set reflection serves): every JSON rendering of a proto message goes
//! through here, so field names, enum names and 64-bit integers are as protobuf's own
//! JSON parsers read them.

use std::sync::LazyLock;

use prost_reflect::{DescriptorPool, DynamicMessage, SerializeOptions};

use super::pb;

/// Why a message could not be rendered; only a descriptor set out of step with the
/// generated code gets here.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    /// The compiled descriptor set could not be read.
    #[error("invalid descriptor set: {0}")]
    Descriptors(String),
    /// The descriptor set has no message of this name.
    #[error("no descriptor for message {0}")]
    UnknownMessage(String),
    /// The encoded message could not be decoded again.
    #[error("cannot re-read message {name}: {source}")]
    Decode {
        /// The message's full name.
        name: String,
        /// Why.
        source: prost::DecodeError,
    },
    /// The message could not be written as JSON.
    #[error("cannot render message {name}: {source}")]
    Render {
        /// The message's full name.
        name: String,
        /// Why.
        source: serde_json::Error,
    },
}

/// A generated `preemptd.v1` message and its full proto name.
pub trait ProtoName: prost::Message {
    /// The message's full proto name.
    const FULL_NAME: &'static str;
}

/// The full name comes from the type's own name, so the two cannot drift apart.
macro_rules! proto_names {
    ($($message:ident),* $(,)?) => {
        $(impl ProtoName for pb::$message {
            const FULL_NAME: &'static str = concat!("preemptd.v1.", stringify!($message));
        })*
    };
}

proto_names!(
    PreemptResponse,
    PreemptGroupResponse,
    PlanDrainResponse,
    ListNominationsResponse,
    WatchNominationsResponse
);

static POOL: LazyLock<Result<DescriptorPool, String>> = LazyLock::new(|| {
    DescriptorPool::decode(pb::FILE_DESCRIPTOR_SET).map_err(|error| error.to_string())
});

/// `message` as proto3 JSON, every field emitted (defaults included: empty lists, zero
/// counts), so scripts need no special cases for absent keys.
pub fn to_json<M: ProtoName>(message: &M) -> Result<serde_json::Value, JsonError> {
    let name = M::FULL_NAME.to_string();
    let pool = POOL
        .as_ref()
        .map_err(|error| JsonError::Descriptors(error.clone()))?;
    let descriptor = pool
        .get_message_by_name(&name)
        .ok_or_else(|| JsonError::UnknownMessage(name.clone()))?;
    let dynamic = DynamicMessage::decode(descriptor, message.encode_to_vec().as_slice()).map_err(
        |source| JsonError::Decode {
            name: name.clone(),
            source,
        },
    )?;
    dynamic
        .serialize_with_options(
            serde_json::value::Serializer,
            &SerializeOptions::new().skip_default_fields(false),
        )
        .map_err(|source| JsonError::Render { name, source })
}

/// A decision as `preemptd.v1.PreemptResponse` in proto3 JSON, every field emitted
/// (offline there is no server: `epoch` is empty and the revisions are 0).
pub fn decision_json(decision: &crate::engine::Decision) -> Result<serde_json::Value, JsonError> {
    to_json(&super::convert::decision(decision))
}

/// A group decision as `preemptd.v1.PreemptGroupResponse` in proto3 JSON, every field
/// emitted (offline there is no server: `epoch` is empty and the revisions are 0).
pub fn group_decision_json(
    decision: &crate::engine::GroupDecision,
) -> Result<serde_json::Value, JsonError> {
    to_json(&super::service::group::group_decision(decision))
}

/// A drain plan as `preemptd.v1.PlanDrainResponse` in proto3 JSON, every field emitted
/// (offline there is no server: `epoch` is empty and `revision` 0).
pub fn plan_json(plan: &crate::engine::drain::DrainPlan) -> Result<serde_json::Value, JsonError> {
    to_json(&super::convert::drain_plan(plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_render_by_their_proto_names_and_64_bit_integers_as_strings() {
        let response = pb::PreemptResponse {
            outcome: pb::Outcome::Preempt.into(),
            revision: 7,
            diagnostics: vec![pb::NodeDiagnostic {
                node: "n1".to_string(),
                filter: Some(pb::FilterStatus {
                    code: pb::StatusCode::Unschedulable.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        let json = to_json(&response).expect("render");
        assert_eq!(json["outcome"], "OUTCOME_PREEMPT");
        assert_eq!(json["revision"], "7");
        assert_eq!(
            json["diagnostics"][0]["filter"]["code"],
            "STATUS_CODE_UNSCHEDULABLE"
        );
        assert_eq!(json["victims"], serde_json::json!([]));
        assert_eq!(json["pdbViolations"], 0);
    }

    #[test]
    fn every_named_message_has_a_descriptor() {
        let pool = POOL.as_ref().expect("descriptor set");
        for name in [
            pb::PreemptResponse::FULL_NAME,
            pb::PlanDrainResponse::FULL_NAME,
            pb::ListNominationsResponse::FULL_NAME,
            pb::WatchNominationsResponse::FULL_NAME,
        ] {
            assert!(pool.get_message_by_name(name).is_some(), "{name}");
        }
    }
}
