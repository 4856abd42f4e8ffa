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

/// The body as a JSON object.
fn object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(invalid("body", "expected a JSON object")),
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

/// Removes and returns field `name`, matched as Go's decoder does: exactly, else without
/// case. `null` counts as missing.
fn take(map: &mut Map<String, Value>, name: &str) -> Option<Value> {
    let value = match map.remove(name) {
        Some(value) => value,
        None => {
            let key = map.keys().find(|k| k.eq_ignore_ascii_case(name))?.clone();
            map.remove(&key)?
        }
    };
    (!value.is_null()).then_some(value)
}

fn take_object(
    map: &mut Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<Option<Map<String, Value>>, ApiError> {
    match take(map, name) {
        None => Ok(None),
        Some(Value::Object(inner)) => Ok(Some(inner)),
        Some(_) => Err(invalid(path, "expected an object")),
    }
}

fn take_array(
    map: &mut Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<Option<Vec<Value>>, ApiError> {
    match take(map, name) {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(_) => Err(invalid(path, "expected an array")),
    }
}

fn strings(items: Vec<Value>, path: &str) -> Result<Vec<Str>, ApiError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(Str::from(s)),
            _ => Err(invalid(format!("{path}[{i}]"), "expected a string")),
        })
        .collect()
}

fn required_pod(map: &mut Map<String, Value>) -> Result<Value, ApiError> {
    match take(map, "Pod") {
        Some(pod @ Value::Object(_)) => Ok(pod),
        Some(_) => Err(invalid("Pod", "expected an object")),
        None => Err(invalid("Pod", "is required")),
    }
}

/// Takes an `ExtenderArgs` body apart (`/filter`, `/prioritize`).
pub fn parse_args(body: &[u8]) -> Result<ArgsJson, ApiError> {
    let mut map = object(body)?;
    let pod = required_pod(&mut map)?;
    // nodeCacheCapable sends `NodeNames`, otherwise `Nodes`; names win if both come.
    let nodes = if let Some(names) = take_array(&mut map, "NodeNames", "NodeNames")? {
        NodesJson::Names(strings(names, "NodeNames")?)
    } else if let Some(mut list) = take_object(&mut map, "Nodes", "Nodes")? {
        NodesJson::Full(take_array(&mut list, "items", "Nodes.items")?.unwrap_or_default())
    } else {
        return Err(invalid(
            "NodeNames",
            "one of NodeNames or Nodes is required",
        ));
    };
    Ok(ArgsJson { pod, nodes })
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

/// Takes an `ExtenderPreemptionArgs` body apart (`/preempt`).
pub fn parse_preemption_args(body: &[u8]) -> Result<PreemptionArgsJson, ApiError> {
    let mut map = object(body)?;
    let pod = required_pod(&mut map)?;
    let mut candidates = Vec::new();
    if let Some(meta) = take_object(&mut map, "NodeNameToMetaVictims", "NodeNameToMetaVictims")? {
        for (node, victims) in meta {
            let path = format!("NodeNameToMetaVictims[{node}]");
            let pods = victim_pods(victims, &path)?;
            let uids = pods
                .into_iter()
                .enumerate()
                .map(|(i, pod)| meta_pod_uid(pod, &format!("{path}.Pods[{i}]")))
                .collect::<Result<_, _>>()?;
            candidates.push((Str::from(node), VictimsJson::Uids(uids)));
        }
    } else if let Some(full) = take_object(&mut map, "NodeNameToVictims", "NodeNameToVictims")? {
        for (node, victims) in full {
            let pods = victim_pods(victims, &format!("NodeNameToVictims[{node}]"))?;
            candidates.push((Str::from(node), VictimsJson::Pods(pods)));
        }
    }
    Ok(PreemptionArgsJson { pod, candidates })
}

/// The `Pods` of a `Victims` or `MetaVictims` (a nil one, or nil `Pods`: none).
fn victim_pods(victims: Value, path: &str) -> Result<Vec<Value>, ApiError> {
    match victims {
        Value::Null => Ok(Vec::new()),
        Value::Object(mut victims) => {
            Ok(take_array(&mut victims, "Pods", &format!("{path}.Pods"))?.unwrap_or_default())
        }
        _ => Err(invalid(path, "expected an object")),
    }
}

fn meta_pod_uid(pod: Value, path: &str) -> Result<Str, ApiError> {
    let Value::Object(mut pod) = pod else {
        return Err(invalid(path, "expected an object"));
    };
    match take(&mut pod, "UID") {
        Some(Value::String(uid)) if !uid.is_empty() => Ok(Str::from(uid)),
        _ => Err(invalid(
            format!("{path}.UID"),
            "expected a non-empty string",
        )),
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

/// `ExtenderFilterResult`.
#[derive(Debug, Default, Serialize)]
pub struct FilterResult {
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeList>,
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<String>>,
    #[serde(rename = "FailedNodes")]
    pub failed_nodes: BTreeMap<String, String>,
    #[serde(rename = "FailedAndUnresolvableNodes")]
    pub failed_and_unresolvable_nodes: BTreeMap<String, String>,
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
    pub host: String,
    #[serde(rename = "Score")]
    pub score: i64,
}

/// `ExtenderPreemptionResult`: the kept candidates, by node name.
#[derive(Debug, Default, Serialize)]
pub struct PreemptionResult {
    #[serde(rename = "NodeNameToMetaVictims")]
    pub node_name_to_meta_victims: BTreeMap<String, MetaVictims>,
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
    pub uid: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_without_case_exact_first() {
        let args = parse_args(br#"{"pod":{"metadata":{"name":"p"}},"nodenames":["a","b"]}"#)
            .expect("lower-case keys");
        assert!(matches!(&args.nodes, NodesJson::Names(n) if n.len() == 2));
        let mut map: Map<String, Value> =
            serde_json::from_str(r#"{"uid":"lower","UID":"exact"}"#).expect("json");
        assert_eq!(take(&mut map, "UID"), Some(Value::from("exact")));
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
