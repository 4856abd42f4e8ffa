//! Offline decisions: load a cluster (a Kubernetes v1 List) and a preemptor from files,
//! decide, and render the decision as the proto3-JSON form of `PreemptResponse`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cache::ClusterCache;
use crate::engine::{self, Code, DecideOptions, Decision, Status};
use crate::model::decode::{self, DecodeError, Object};
use crate::model::{Pod, PodRef};

/// Why a simulation could not run; names the file and, for bad content, the field.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("{path}: cannot read: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {error}")]
    Invalid { path: PathBuf, error: DecodeError },
}

impl SimulateError {
    /// sysexits-style exit code: 66 for unreadable input, 65 for invalid data.
    pub fn exit_code(&self) -> i32 {
        match self {
            SimulateError::Unreadable { .. } => 66,
            SimulateError::Invalid { .. } => 65,
        }
    }
}

fn read_document(path: &Path) -> Result<Value, SimulateError> {
    let text = std::fs::read_to_string(path).map_err(|source| SimulateError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    decode::parse_document(&text).map_err(|error| SimulateError::Invalid {
        path: path.to_path_buf(),
        error,
    })
}

/// Loads every object of a decoded List into a new cache. Errors carry `items[N]`.
pub fn load_cluster(objects: Vec<Object>) -> Result<ClusterCache, DecodeError> {
    let cache = ClusterCache::new();
    for (index, object) in objects.into_iter().enumerate() {
        match object {
            Object::Node(node) => {
                cache.upsert_node(node);
            }
            Object::Pod(pod) => {
                cache.upsert_pod(pod).map_err(|e| DecodeError {
                    path: format!("items[{index}]"),
                    message: e.to_string(),
                })?;
            }
            Object::Pdb(pdb) => {
                cache.upsert_pdb(pdb);
            }
        }
    }
    Ok(cache)
}

/// The preemptor as decided on: when it carries no nomination, the one the cache holds
/// for its uid applies (upstream re-reads the pod before preempting).
pub fn resolve_preemptor(cache: &ClusterCache, mut pod: Pod) -> Pod {
    if pod.nomination().is_none()
        && pod.node_name.is_none()
        && let Some(cached) = cache.get_pod(pod.uid())
        && let Some(node) = cached.nomination()
    {
        pod.nominated_node_name = Some(node.clone());
    }
    pod
}

/// Reads both files and decides.
pub fn simulate(cluster: &Path, pod: &Path, explain: bool) -> Result<Decision, SimulateError> {
    let cluster_doc = read_document(cluster)?;
    let objects = decode::decode_list(&cluster_doc).map_err(|error| SimulateError::Invalid {
        path: cluster.to_path_buf(),
        error,
    })?;
    let cache = load_cluster(objects).map_err(|error| SimulateError::Invalid {
        path: cluster.to_path_buf(),
        error,
    })?;
    let pod_doc = read_document(pod)?;
    let preemptor = decode::decode_pod(&pod_doc).map_err(|error| SimulateError::Invalid {
        path: pod.to_path_buf(),
        error,
    })?;
    let preemptor = resolve_preemptor(&cache, preemptor);
    let snapshot = cache.snapshot();
    Ok(engine::decide(
        &snapshot,
        &preemptor,
        &DecideOptions {
            explain,
            ..DecideOptions::default()
        },
    ))
}

fn pod_refs(refs: &[PodRef]) -> Value {
    Value::Array(
        refs.iter()
            .map(|r| json!({"namespace": &*r.namespace, "name": &*r.name, "uid": &*r.uid}))
            .collect(),
    )
}

fn code_name(code: Code) -> &'static str {
    match code {
        Code::Success => "CODE_SUCCESS",
        Code::Unschedulable => "CODE_UNSCHEDULABLE",
        Code::UnschedulableAndUnresolvable => "CODE_UNSCHEDULABLE_AND_UNRESOLVABLE",
    }
}

fn status_json(status: &Status) -> Value {
    json!({
        "code": code_name(status.code),
        "plugin": status.plugin,
        "reasons": status.reasons.as_slice(),
    })
}

/// The decision in the proto3-JSON form of `preemptd.v1.PreemptResponse` (every field
/// emitted, defaults included, so scripts need no special cases).
pub fn decision_json(decision: &Decision) -> Value {
    let mut out = json!({
        "outcome": decision.outcome.as_str(),
        "nominatedNodeName": decision.nominated_node.as_deref().unwrap_or(""),
        "victims": pod_refs(&decision.victims),
        "nominatedPodsToClear": pod_refs(&decision.nominated_pods_to_clear),
        "pdbViolations": decision.pdb_violations,
        "message": decision.message,
        "feasibleNodes": decision.feasible_nodes.iter().map(|n| &**n).collect::<Vec<_>>(),
    });
    if !decision.diagnostics.is_empty() {
        out["diagnostics"] = Value::Array(
            decision
                .diagnostics
                .iter()
                .map(|d| {
                    let mut v = json!({
                        "node": &*d.node,
                        "filter": status_json(&d.filter),
                        "candidate": d.candidate,
                        "victims": pod_refs(&d.victims),
                        "pdbViolations": d.pdb_violations,
                    });
                    if let Some(p) = &d.preemption {
                        v["preemption"] = status_json(p);
                    }
                    v
                })
                .collect(),
        );
    }
    out
}
