//! The JSON of k8s.io/kube-scheduler/extender/v1. Its Go types have no json tags, so keys
//! are the Go field names; kube-scheduler's decoder matches keys without case, and so do
//! we (an exact match first, as Go's does). Replies use the exact Go names, and `null`
//! where Go would send a nil field.
//!
//! Reading a request has two steps: [`parse_args`] / [`parse_preemption_args`] take the
//! body apart (failing: a malformed request, HTTP 400), then `build` turns the Kubernetes
//! objects in it into model objects through the one builder ([`decode`]; failing: trouble
//! inside the decision, which `/filter` reports in its reply's `Error`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::envelope::{self, Read};
use crate::model::decode::{self, DecodeError};
use crate::model::{Node, Pod, Str};
use crate::server::errors::ApiError;

/// `ExtenderArgs` taken apart: the pod and the nodes, still JSON.
#[derive(Debug)]
pub struct ArgsJson {
    pod: Value,
    nodes: NodesJson,
}

#[derive(Debug)]
enum NodesJson {
    /// `NodeNames` (nodeCacheCapable).
    Names(Vec<Str>),
    /// `Nodes.items` (a v1 NodeList).
    Full(Vec<Value>),
}

/// `ExtenderArgs` built: the nodes by name, or built with their JSON kept to echo back.
#[derive(Debug)]
pub struct ExtenderArgs {
    pub pod: Pod,
    pub nodes: NodesGiven,
}

#[derive(Debug)]
pub enum NodesGiven {
    Names(Vec<Str>),
    Full(Vec<(Node, Value)>),
}

/// `ExtenderPreemptionArgs` taken apart.
#[derive(Debug)]
pub struct PreemptionArgsJson {
    pod: Value,
    candidates: Vec<(Str, VictimsJson)>,
}

#[derive(Debug)]
enum VictimsJson {
    /// `NodeNameToMetaVictims`: victim UIDs.
    Uids(Vec<Str>),
    /// `NodeNameToVictims`: full pods.
    Pods(Vec<Value>),
}

/// `ExtenderPreemptionArgs` built: each candidate node with the UIDs of the victims the
/// scheduler chose there, in the request's order.
#[derive(Debug)]
pub struct PreemptionArgs {
    pub pod: Pod,
    pub candidates: Vec<(Str, Vec<Str>)>,
}

fn invalid(path: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::invalid(path, message)
}

/// Reads a body as envelope `V`: malformed JSON and JSON other than an object are
/// refused for the whole body.
fn envelope<T, V: for<'de> envelope::Shape<'de, Item = T>>(body: &[u8]) -> Result<T, ApiError> {
    match envelope::read_body::<T, V>(body) {
        Ok(Some(envelope)) => Ok(envelope),
        Ok(None) => Err(invalid("body", "expected a JSON object")),
        Err(e) => Err(invalid(
            "body",
            format!(
                "invalid JSON at line {} column {}: {}",
                e.line(),
                e.column(),
                without_position(&e.to_string())
            ),
        )),
    }
}

/// serde_json's message without its trailing " at line L column C" (said before it).
fn without_position(text: &str) -> &str {
    text.rfind(" at line ").map_or(text, |cut| &text[..cut])
}

/// A field as read, its misfit refused under `field`.
fn field<T>(read: Read<T>, field: &str) -> Result<Option<T>, ApiError> {
    read.map_err(|misfit| invalid(format!("{field}{}", misfit.path), misfit.message))
}

fn required_pod(pod: Read<Value>) -> Result<Value, ApiError> {
    field(pod, "Pod")?.ok_or_else(|| invalid("Pod", "is required"))
}

/// Takes an `ExtenderArgs` body apart (`/filter`, `/prioritize`).
pub fn parse_args(body: &[u8]) -> Result<ArgsJson, ApiError> {
    let args = envelope::<_, envelope::ArgsShape>(body)?;
    let pod = required_pod(args.pod)?;
    // nodeCacheCapable sends `NodeNames`, otherwise `Nodes`; names win if both come.
    let nodes = if let Some(names) = field(args.node_names, "NodeNames")? {
        NodesJson::Names(names)
    } else if let Some(items) = field(args.nodes, "Nodes")? {
        NodesJson::Full(items)
    } else {
        return Err(invalid(
            "NodeNames",
            "one of NodeNames or Nodes is required",
        ));
    };
    Ok(ArgsJson { pod, nodes })
}

/// Takes an `ExtenderPreemptionArgs` body apart (`/preempt`).
pub fn parse_preemption_args(body: &[u8]) -> Result<PreemptionArgsJson, ApiError> {
    let args = envelope::<_, envelope::PreemptionArgsShape>(body)?;
    let pod = required_pod(args.pod)?;
    let candidates = if let Some(meta) = field(args.meta_victims, "NodeNameToMetaVictims")? {
        meta.into_iter()
            .map(|(node, uids)| (node, VictimsJson::Uids(uids.unwrap_or_default())))
            .collect()
    } else if let Some(full) = field(args.victims, "NodeNameToVictims")? {
        full.into_iter()
            .map(|(node, pods)| (node, VictimsJson::Pods(pods.unwrap_or_default())))
            .collect()
    } else {
        Vec::new()
    };
    Ok(PreemptionArgsJson { pod, candidates })
}

/// The pod of a request, built.
fn build_pod(value: &Value) -> Result<Pod, ApiError> {
    decode::decode_pod(value).map_err(|e| ApiError::from_decode("Pod", e))
}

fn build_error(path: String, e: DecodeError) -> ApiError {
    ApiError::from_decode(&path, e)
}

impl ArgsJson {
    /// Builds the pod and (full-node requests) the nodes.
    pub fn build(self) -> Result<ExtenderArgs, ApiError> {
        let pod = build_pod(&self.pod)?;
        let nodes = match self.nodes {
            NodesJson::Names(names) => NodesGiven::Names(names),
            NodesJson::Full(items) => NodesGiven::Full(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let node = decode::decode_node(&item)
                            .map_err(|e| build_error(format!("Nodes.items[{i}]"), e))?;
                        Ok((node, item))
                    })
                    .collect::<Result<_, ApiError>>()?,
            ),
        };
        Ok(ExtenderArgs { pod, nodes })
    }
}

impl PreemptionArgsJson {
    /// Builds the preemptor and (full-pod requests) the victims, keeping their UIDs.
    pub fn build(self) -> Result<PreemptionArgs, ApiError> {
        let pod = build_pod(&self.pod)?;
        let candidates = self
            .candidates
            .into_iter()
            .map(|(node, victims)| {
                let uids = match victims {
                    VictimsJson::Uids(uids) => uids,
                    VictimsJson::Pods(pods) => pods
                        .iter()
                        .enumerate()
                        .map(|(i, value)| {
                            let path = format!("NodeNameToVictims[{node}].Pods[{i}]");
                            let victim =
                                decode::decode_pod(value).map_err(|e| build_error(path, e))?;
                            Ok(Str::from(victim.uid()))
                        })
                        .collect::<Result<_, ApiError>>()?,
                };
                Ok((node, uids))
            })
            .collect::<Result<_, ApiError>>()?;
        Ok(PreemptionArgs { pod, candidates })
    }
}

/// A shared string of a reply, written as a JSON string (without a copy; the model's
/// `Arc<str>` has no `Serialize`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Text(pub Str);

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Text(Str::from(text))
    }
}

/// `ExtenderFilterResult`.
#[derive(Debug, Default, Serialize)]
pub struct FilterResult {
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeList>,
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<Text>>,
    #[serde(rename = "FailedNodes")]
    pub failed_nodes: BTreeMap<Text, String>,
    #[serde(rename = "FailedAndUnresolvableNodes")]
    pub failed_and_unresolvable_nodes: BTreeMap<Text, String>,
    #[serde(rename = "Error")]
    pub error: String,
}

/// A v1 NodeList as Go marshals one: `metadata` and `items`.
#[derive(Debug, Default, Serialize)]
pub struct NodeList {
    pub metadata: Map<String, Value>,
    pub items: Vec<Value>,
}

/// `HostPriority`; a `HostPriorityList` is a bare array of them.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct HostPriority {
    #[serde(rename = "Host")]
    pub host: Text,
    #[serde(rename = "Score")]
    pub score: i64,
}

/// `ExtenderPreemptionResult`: the kept candidates, by node name.
#[derive(Debug, Default, Serialize)]
pub struct PreemptionResult {
    #[serde(rename = "NodeNameToMetaVictims")]
    pub node_name_to_meta_victims: BTreeMap<Text, MetaVictims>,
}

/// `MetaVictims`.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct MetaVictims {
    #[serde(rename = "Pods")]
    pub pods: Vec<MetaPod>,
    #[serde(rename = "NumPDBViolations")]
    pub num_pdb_violations: i64,
}

/// `MetaPod`.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct MetaPod {
    #[serde(rename = "UID")]
    pub uid: Text,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_without_case_exact_first() {
        let args = parse_args(br#"{"pod":{"metadata":{"name":"p"}},"nodenames":["a","b"]}"#)
            .expect("lower-case keys");
        assert!(matches!(&args.nodes, NodesJson::Names(n) if n.len() == 2));
        for body in [
            &br#"{"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"exact","uid":"lower"}]}}}"#[..],
            br#"{"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":[{"uid":"lower","UID":"exact"}]}}}"#,
        ] {
            let args = parse_preemption_args(body).expect("meta victims");
            assert!(
                matches!(&args.candidates[..], [(node, VictimsJson::Uids(uids))]
                    if &**node == "n" && uids.len() == 1 && &*uids[0] == "exact"),
                "{args:?}"
            );
        }
    }

    #[test]
    fn unknown_and_escaped_keys_and_nulls_read_as_go_does() {
        let args = parse_args(
            br#"{"Extra":{"x":[1,{}]},"Node\u004eames":["a","b\"c"],"Nodes":null,"Pod":{"metadata":{}}}"#,
        )
        .expect("escaped key");
        assert!(
            matches!(&args.nodes, NodesJson::Names(n) if n.iter().map(|n| &**n).eq(["a", "b\"c"])),
            "{args:?}"
        );
        let args = parse_args(br#"{"Pod":{},"NodeNames":null,"nodes":{"items":[{"a":1}]}}"#)
            .expect("full nodes");
        assert!(matches!(&args.nodes, NodesJson::Full(items) if items.len() == 1));
        let args = parse_preemption_args(
            br#"{"Pod":{},"NodeNameToMetaVictims":{"b":{"Pods":[{"UID":"u1"}]},"a":null}}"#,
        )
        .expect("meta victims");
        let nodes: Vec<(&str, usize)> = args
            .candidates
            .iter()
            .map(|(node, victims)| match victims {
                VictimsJson::Uids(uids) => (&**node, uids.len()),
                VictimsJson::Pods(_) => ("pods", 0),
            })
            .collect();
        assert_eq!(nodes, [("b", 1), ("a", 0)], "the body's order");
    }

    #[test]
    fn malformed_bodies_name_the_field() {
        for (body, message) in [
            (
                &b"{"[..],
                "body: invalid JSON at line 1 column 1: EOF while parsing an object",
            ),
            (b"[]", "body: expected a JSON object"),
            (br#"{"NodeNames":[]}"#, "Pod: is required"),
            (
                br#"{"Pod":{}}"#,
                "NodeNames: one of NodeNames or Nodes is required",
            ),
            (
                br#"{"Pod":{},"NodeNames":[1]}"#,
                "NodeNames[0]: expected a string",
            ),
            (br#"{"Pod":{},"Nodes":[]}"#, "Nodes: expected an object"),
        ] {
            assert_eq!(
                parse_args(body).expect_err("malformed").to_string(),
                message
            );
        }
        let err =
            parse_preemption_args(br#"{"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":[{}]}}}"#)
                .expect_err("no uid");
        assert_eq!(
            err.to_string(),
            "NodeNameToMetaVictims[n].Pods[0].UID: expected a non-empty string"
        );
        for (body, message) in [
            (
                &br#"{"Pod":{},"NodeNameToMetaVictims":{"a":null,"n":[]}}"#[..],
                "NodeNameToMetaVictims[n]: expected an object",
            ),
            (
                br#"{"Pod":{},"NodeNameToMetaVictims":{"n":{"pods":[{"UID":"u"},7]}}}"#,
                "NodeNameToMetaVictims[n].Pods[1]: expected an object",
            ),
            (
                br#"{"Pod":{},"NodeNameToVictims":{"n":{"Pods":{}}}}"#,
                "NodeNameToVictims[n].Pods: expected an array",
            ),
            (br#"{"Pod":"p"}"#, "Pod: expected an object"),
        ] {
            assert_eq!(
                parse_preemption_args(body)
                    .expect_err("malformed")
                    .to_string(),
                message
            );
        }
        for (body, message) in [
            (
                &br#"{"Pod":{},"NodeNames":["a",null,"b"]}"#[..],
                "NodeNames[1]: expected a string",
            ),
            (
                br#"{"Pod":{},"Nodes":{"items":{"a":1}}}"#,
                "Nodes.items: expected an array",
            ),
        ] {
            assert_eq!(
                parse_args(body).expect_err("malformed").to_string(),
                message
            );
        }
    }

    #[test]
    fn replies_use_the_go_names_and_null() {
        let reply = FilterResult {
            node_names: Some(vec!["a".into()]),
            ..FilterResult::default()
        };
        assert_eq!(
            serde_json::to_string(&reply).expect("json"),
            r#"{"Nodes":null,"NodeNames":["a"],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}"#
        );
    }
}
