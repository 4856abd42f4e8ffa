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

use rayon::prelude::*;
use serde::Serialize;
use serde::ser::SerializeStruct as _;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use triomphe::Arc;

pub use super::envelope::Text;
use super::envelope::{self, Read};
use crate::model::decode::{self, DecodeError};
use crate::model::{Node, Pod};
use crate::server::errors::ApiError;

/// `ExtenderArgs` taken apart: the pod and the nodes, still JSON.
#[derive(Debug)]
pub struct ArgsJson<'de> {
    pod: Value,
    nodes: NodesJson<'de>,
}

#[derive(Debug)]
enum NodesJson<'de> {
    /// `NodeNames` (nodeCacheCapable).
    Names(Vec<Text<'de>>),
    /// `Nodes.items` (a v1 NodeList).
    Full(Vec<Value>),
}

/// `ExtenderArgs` built: the nodes by name, or built with their JSON kept to echo back.
#[derive(Debug)]
pub struct ExtenderArgs<'de> {
    /// The pod to place.
    pub pod: Pod,
    /// The nodes to consider.
    pub nodes: NodesGiven<'de>,
}

/// The nodes of an `ExtenderArgs`, as the scheduler sent them.
#[derive(Debug)]
pub enum NodesGiven<'de> {
    /// By name (`NodeNames`).
    Names(Vec<Text<'de>>),
    /// In full (`Nodes.items`), each with its JSON to echo back.
    Full(Vec<(Node, Value)>),
}

/// `ExtenderPreemptionArgs` taken apart.
#[derive(Debug)]
pub struct PreemptionArgsJson<'de> {
    pod: Value,
    candidates: Vec<(Text<'de>, VictimsJson<'de>)>,
}

#[derive(Debug)]
enum VictimsJson<'de> {
    /// `NodeNameToMetaVictims`: victim UIDs.
    Uids(Vec<Text<'de>>),
    /// `NodeNameToVictims`: full pods.
    Pods(Vec<Value>),
}

/// `ExtenderPreemptionArgs` built: each candidate node with the UIDs of the victims the
/// scheduler chose there, in the request's order.
#[derive(Debug)]
pub struct PreemptionArgs<'de> {
    /// The preemptor.
    pub pod: Pod,
    /// Each candidate node's name and its victims' UIDs.
    pub candidates: Vec<(Text<'de>, Vec<Text<'de>>)>,
}

fn invalid(path: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::invalid(path, message)
}

/// Reads a body as envelope `V`: malformed JSON and JSON other than an object are
/// refused for the whole body.
fn envelope<'de, V: envelope::Shape<'de>>(body: &'de [u8]) -> Result<V::Item, ApiError> {
    match envelope::read_body::<V>(body) {
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
pub fn parse_args(body: &[u8]) -> Result<ArgsJson<'_>, ApiError> {
    let args = envelope::<envelope::ArgsShape>(body)?;
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
pub fn parse_preemption_args(body: &[u8]) -> Result<PreemptionArgsJson<'_>, ApiError> {
    let args = envelope::<envelope::PreemptionArgsShape>(body)?;
    let pod = required_pod(args.pod)?;
    let candidates = if let Some(meta) = field(args.meta_victims, "NodeNameToMetaVictims")? {
        per_node(meta, "NodeNameToMetaVictims", |raw| {
            envelope::meta_victims(raw).map(|uids| VictimsJson::Uids(uids.unwrap_or_default()))
        })?
    } else if let Some(full) = field(args.victims, "NodeNameToVictims")? {
        per_node(full, "NodeNameToVictims", |raw| {
            envelope::victim_pods(raw).map(|pods| VictimsJson::Pods(pods.unwrap_or_default()))
        })?
    } else {
        Vec::new()
    };
    Ok(PreemptionArgsJson { pod, candidates })
}

/// Reads each candidate's victims with `read`, in parallel (a request can name thousands);
/// the first misfit in the body's order is refused under `field[node]`.
fn per_node<'de>(
    nodes: envelope::ByNode<'de>,
    field: &str,
    read: impl Fn(&'de RawValue) -> Result<VictimsJson<'de>, envelope::Misfit> + Sync,
) -> Result<Vec<(Text<'de>, VictimsJson<'de>)>, ApiError> {
    let read = nodes
        .into_par_iter()
        .map(|(node, raw)| match read(raw) {
            Ok(victims) => Ok((node, victims)),
            Err(misfit) => Err(invalid(
                format!("{field}[{node}]{}", misfit.path),
                misfit.message,
            )),
        })
        .collect::<Vec<_>>();
    read.into_iter().collect()
}

/// The pod of a request, built.
fn build_pod(value: &Value) -> Result<Pod, ApiError> {
    decode::decode_pod(value).map_err(|e| ApiError::from_decode("Pod", e))
}

fn build_error(path: String, e: DecodeError) -> ApiError {
    ApiError::from_decode(&path, e)
}

impl<'de> ArgsJson<'de> {
    /// Builds the pod and (full-node requests) the nodes.
    pub fn build(self) -> Result<ExtenderArgs<'de>, ApiError> {
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

impl<'de> PreemptionArgsJson<'de> {
    /// Builds the preemptor and (full-pod requests) the victims, keeping their UIDs.
    pub fn build(self) -> Result<PreemptionArgs<'de>, ApiError> {
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
                            Ok(Text::Owned(victim.uid().to_owned()))
                        })
                        .collect::<Result<_, ApiError>>()?,
                };
                Ok((node, uids))
            })
            .collect::<Result<_, ApiError>>()?;
        Ok(PreemptionArgs { pod, candidates })
    }
}

/// `ExtenderFilterResult`; node names borrowed from the request.
#[derive(Debug, Default, Serialize)]
pub struct FilterResult<'de> {
    /// The nodes that pass, in full, when they were sent in full.
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeList>,
    /// The nodes that pass, by name, when they were sent by name.
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<Text<'de>>>,
    /// Nodes that fail, with why; preemption may help.
    #[serde(rename = "FailedNodes")]
    pub failed_nodes: BTreeMap<Text<'de>, String>,
    /// Nodes that fail, with why; preemption cannot help.
    #[serde(rename = "FailedAndUnresolvableNodes")]
    pub failed_and_unresolvable_nodes: BTreeMap<Text<'de>, String>,
    /// Why the whole call failed; empty when it did not.
    #[serde(rename = "Error")]
    pub error: String,
}

/// A v1 NodeList as Go marshals one: `metadata` and `items`.
#[derive(Debug, Default, Serialize)]
pub struct NodeList {
    /// The list's metadata.
    pub metadata: Map<String, Value>,
    /// The nodes, as the scheduler sent them.
    pub items: Vec<Value>,
}

/// `HostPriority`; a `HostPriorityList` is a bare array of them.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct HostPriority<'de> {
    /// The node's name.
    #[serde(rename = "Host")]
    pub host: Text<'de>,
    /// The node's score.
    #[serde(rename = "Score")]
    pub score: i64,
}

/// `ExtenderPreemptionResult`: the kept candidates, by node name.
#[derive(Debug, Default, Serialize)]
pub struct PreemptionResult<'de> {
    /// Each node kept, with the victims on it.
    #[serde(rename = "NodeNameToMetaVictims")]
    pub node_name_to_meta_victims: BTreeMap<Text<'de>, MetaVictims>,
}

/// `MetaVictims`.
#[derive(Debug, Serialize, PartialEq)]
pub struct MetaVictims {
    /// The victims.
    #[serde(rename = "Pods")]
    pub pods: Vec<MetaPod>,
    /// How many PodDisruptionBudgets the preemption violates.
    #[serde(rename = "NumPDBViolations")]
    pub num_pdb_violations: i64,
}

/// `MetaPod`: a victim of the cache, written as its `UID`.
#[derive(Debug, PartialEq)]
pub struct MetaPod(pub Arc<Pod>);

impl Serialize for MetaPod {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut meta = serializer.serialize_struct("MetaPod", 1)?;
        meta.serialize_field("UID", self.0.uid())?;
        meta.end()
    }
}

/// Elements one rayon task writes at least when a list is written in parts.
const ELEMENTS_PER_PART: usize = 1024;

/// A reply that is a bare JSON array (a `HostPriorityList`), as `serde_json::to_vec`
/// writes it but in parts on the rayon pool (each element by serde_json, the parts joined
/// with the array's commas): thousands of nodes take longer to write than to judge.
pub fn write_array<T: Serialize + Sync>(items: &[T]) -> serde_json::Result<Vec<u8>> {
    let parts: Vec<Vec<u8>> = items
        .par_chunks(ELEMENTS_PER_PART)
        .map(|part| {
            let mut json = Vec::new();
            for (i, item) in part.iter().enumerate() {
                if i > 0 {
                    json.push(b',');
                }
                serde_json::to_writer(&mut json, item)?;
            }
            Ok(json)
        })
        .collect::<serde_json::Result<_>>()?;
    let mut json = Vec::with_capacity(parts.iter().map(Vec::len).sum::<usize>() + parts.len() + 2);
    json.push(b'[');
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            json.push(b',');
        }
        json.extend_from_slice(part);
    }
    json.push(b']');
    Ok(json)
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
            (
                b"{\"Pod\":{},\"NodeNames\":[\"a\xff\"]}",
                "body: invalid JSON at line 1 column 26: invalid unicode code point",
            ),
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
            // Nodes are read in parallel; the first misfit in the body's order is named.
            (
                br#"{"Pod":{},"NodeNameToMetaVictims":{"a":{"Pods":[]},"m":{"Pods":[{"UID":1}]},"n":{"Pods":7}}}"#,
                "NodeNameToMetaVictims[m].Pods[0].UID: expected a non-empty string",
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
    fn arrays_written_in_parts_read_as_written_whole() {
        for len in [0, 1, 2, ELEMENTS_PER_PART, 2 * ELEMENTS_PER_PART + 3] {
            let list: Vec<HostPriority> = (0..len)
                .map(|i| HostPriority {
                    host: Text::Owned(format!("node-{i}\"q\"")),
                    score: i as i64 % 11,
                })
                .collect();
            let whole = serde_json::to_vec(&list).expect("json");
            assert_eq!(write_array(&list).expect("json"), whole, "{len} entries");
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
