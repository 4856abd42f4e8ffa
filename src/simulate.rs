//! Offline decisions: read a cluster and a preemptor from the files people keep (JSON or
//! YAML; a single object, a List, or several YAML documents, in any mix), decide, and
//! render the decision as the proto3 JSON of `preemptd.v1.PreemptResponse`.
//!
//! Objects of kinds preemptd does not use (a Service in `kubectl get all -o yaml` output)
//! are skipped and counted, unless `strict` asks for today's error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize as _;
use serde_json::Value;

use crate::app::{AnyChange, App, AppConfig, AppError, PreemptRequest};
use crate::engine::placement::ClusterView;
use crate::engine::{Decision, Outcome};
use crate::model::Pod;
use crate::model::decode::{self, DecodeError, Object};

/// Why a simulation could not run; names the file, the document when the file holds
/// several, and for bad content the field.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// A file could not be read.
    #[error("{path}: cannot read: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file's content was refused.
    #[error("{path}{}: {error}", document_label(.document))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based index of the YAML document, when the file holds more than one.
        document: Option<usize>,
        /// What was refused, with its field path.
        error: DecodeError,
    },
    /// The live cluster could not be listed.
    #[error("cluster: {0}")]
    Cluster(String),
}

fn document_label(document: &Option<usize>) -> String {
    document.map_or_else(String::new, |n| format!(" (document {n})"))
}

impl SimulateError {
    /// sysexits-style exit code: 66 for unreadable input, 65 for invalid data.
    pub fn exit_code(&self) -> i32 {
        match self {
            SimulateError::Unreadable { .. } => 66,
            SimulateError::Invalid { .. } => 65,
            // EX_UNAVAILABLE: the cluster could not be reached or listed.
            SimulateError::Cluster(_) => 69,
        }
    }

    fn invalid(path: &Path, document: Option<usize>, error: DecodeError) -> Self {
        SimulateError::Invalid {
            path: path.to_path_buf(),
            document,
            error,
        }
    }
}

/// How `simulate` reads and decides.
#[derive(Clone, Debug, Default)]
pub struct SimulateOptions {
    /// Per-node diagnostics in the decision.
    pub explain: bool,
    /// Refuse objects of kinds preemptd does not use instead of skipping them.
    pub strict: bool,
    /// The placement policy to decide under (`simulate --policy`); `None`: upstream's.
    pub policy: Option<std::sync::Arc<crate::engine::Policy>>,
    /// The Kubernetes version (and its feature gates) to decide as.
    pub feature_gates: crate::engine::FeatureGates,
}

impl SimulateOptions {
    /// The application core these options set up.
    fn app_config(&self) -> AppConfig {
        AppConfig {
            policy: self.policy.clone(),
            feature_gates: self.feature_gates.clone(),
            ..AppConfig::default()
        }
    }
}

/// What a simulation decided: for a Pod preemptor as `Preempt` does, for a PodGroup
/// preemptor as `PreemptGroup` does.
#[derive(Debug)]
pub enum Decided {
    /// A Pod preemptor's decision.
    Pod(Box<Decision>),
    /// A PodGroup preemptor's decision.
    Group(Box<crate::engine::GroupDecision>),
}

/// A decision, and a note per file that had objects skipped.
#[derive(Debug)]
pub struct Simulation {
    /// The decision.
    pub decision: Decided,
    /// e.g. `cluster.yaml: skipped 3 objects of kinds preemptd does not use: Service (2),
    /// ConfigMap (1)`.
    pub notes: Vec<String>,
}

/// Objects skipped by kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Skipped(BTreeMap<String, usize>);

impl Skipped {
    fn add(&mut self, kind: &str) {
        *self.0.entry(kind.to_string()).or_default() += 1;
    }

    /// No object was skipped.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One line naming every skipped kind, the most frequent first.
    pub fn summary(&self) -> String {
        let total: usize = self.0.values().sum();
        let mut kinds: Vec<(&String, &usize)> = self.0.iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let kinds = kinds
            .iter()
            .map(|(kind, count)| format!("{kind} ({count})"))
            .collect::<Vec<_>>()
            .join(", ");
        let objects = if total == 1 { "object" } else { "objects" };
        format!("skipped {total} {objects} of kinds preemptd does not use: {kinds}")
    }
}

/// A decoding error with the 1-based number of the document it is in, when a file has several.
pub type DocumentError = (Option<usize>, DecodeError);

/// The objects of a file's text, in order; documents that are only a comment or empty are
/// ignored. An error carries the 1-based document index when the text has several.
pub fn read_objects(text: &str, strict: bool) -> Result<(Vec<Object>, Skipped), DocumentError> {
    let documents = parse_documents(text)?;
    let several = documents.len() > 1;
    let mut objects = Vec::new();
    let mut skipped = Skipped::default();
    for (number, document) in &documents {
        document_objects(document, strict, &mut objects, &mut skipped)
            .map_err(|error| (several.then_some(*number), error))?;
    }
    Ok((objects, skipped))
}

/// JSON (one value) or YAML (one or more `---`-separated documents), each with its
/// 1-based position in the file.
fn parse_documents(text: &str) -> Result<Vec<(usize, Value)>, DocumentError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with(['{', '[']) {
        return decode::parse_document(text)
            .map(|value| vec![(1, value)])
            .map_err(|error| (None, error));
    }
    let mut documents = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document).map_err(|e| (Some(index + 1), yaml_error(&e)))?;
        if !value.is_null() {
            documents.push((index + 1, value));
        }
    }
    if documents.is_empty() {
        return Err((
            None,
            DecodeError {
                path: String::new(),
                message: "empty document".to_string(),
            },
        ));
    }
    Ok(documents)
}

fn yaml_error(error: &serde_yaml_ng::Error) -> DecodeError {
    let message = error.to_string();
    let message = match error.location() {
        Some(loc) if !message.contains(" at line ") => format!(
            "invalid YAML at line {} column {}: {message}",
            loc.line(),
            loc.column()
        ),
        _ => format!("invalid YAML: {message}"),
    };
    DecodeError {
        path: String::new(),
        message,
    }
}

use crate::model::decode::{
    KIND_NAMESPACE, KIND_NODE, KIND_PDB, KIND_POD, KIND_POD_GROUP, KIND_PRIORITY_CLASS,
    KIND_WORKLOAD, KINDS,
};

/// A document's objects: a list's items (`kind: List`, `NodeList`, ..., or any object with
/// `items`; items without a `kind` take a typed list's) or the document itself.
fn document_objects(
    document: &Value,
    strict: bool,
    objects: &mut Vec<Object>,
    skipped: &mut Skipped,
) -> Result<(), DecodeError> {
    let Some(map) = document.as_object() else {
        return decode::decode_object(document).map(|_| ());
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let is_list = kind.ends_with("List") || map.contains_key("items");
    if !is_list {
        return object(document, None, strict, objects, skipped);
    }
    let Some(items) = map.get("items").and_then(Value::as_array) else {
        // Not an array, or absent from a `...List`: the decoder names the field.
        return decode::decode_list(document).map(|_| ());
    };
    let item_kind = kind.strip_suffix("List").filter(|k| KINDS.contains(k));
    for (index, item) in items.iter().enumerate() {
        object(item, item_kind, strict, objects, skipped).map_err(|error| DecodeError {
            path: if error.path.is_empty() {
                format!("items[{index}]")
            } else {
                format!("items[{index}].{}", error.path)
            },
            message: error.message,
        })?;
    }
    Ok(())
}

fn object(
    value: &Value,
    default_kind: Option<&str>,
    strict: bool,
    objects: &mut Vec<Object>,
    skipped: &mut Skipped,
) -> Result<(), DecodeError> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .or(default_kind);
    let decoded = match kind {
        Some(KIND_NODE) => Object::Node(decode::decode_node(value)?),
        Some(KIND_POD) => Object::Pod(decode::decode_pod(value)?),
        Some(KIND_PDB) => Object::Pdb(decode::decode_pdb(value)?),
        Some(KIND_PRIORITY_CLASS) => Object::PriorityClass(decode::decode_priority_class(value)?),
        Some(KIND_NAMESPACE) => Object::Namespace(decode::decode_namespace(value)?),
        Some(KIND_POD_GROUP) => Object::PodGroup(decode::decode_pod_group(value)?),
        Some(KIND_WORKLOAD) => Object::Workload(decode::decode_workload(value)?),
        Some(other) if !strict => {
            skipped.add(other);
            return Ok(());
        }
        // The decoder's error: an unsupported kind, or none.
        _ => decode::decode_object(value)?,
    };
    objects.push(decoded);
    Ok(())
}

/// Reads a file's objects; a note names what was skipped.
pub(crate) fn read_file(
    path: &Path,
    strict: bool,
) -> Result<(Vec<Object>, Option<String>), SimulateError> {
    let text = std::fs::read_to_string(path).map_err(|source| SimulateError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let (objects, skipped) = read_objects(&text, strict)
        .map_err(|(document, error)| SimulateError::invalid(path, document, error))?;
    let note = (!skipped.is_empty()).then(|| format!("{}: {}", path.display(), skipped.summary()));
    Ok((objects, note))
}

/// Loads objects into a new application core set up by `config` (the policy and the
/// Kubernetes version's rules decisions follow; one caller at a time). Errors carry
/// `items[N]`, N counting the objects. PriorityClasses and Namespaces are loaded first,
/// wherever they stand, so every pod is admitted against all the classes (a pod naming
/// none that exists gets priority 0, as the server keeps such a pod).
pub fn load_cluster(objects: Vec<Object>, config: &AppConfig) -> Result<App, DecodeError> {
    let app = App::new(config);
    let (first, rest): (Vec<_>, Vec<_>) = objects
        .into_iter()
        .enumerate()
        .partition(|(_, o)| matches!(o, Object::PriorityClass(_) | Object::Namespace(_)));
    for batch in [first, rest] {
        let indexes: Vec<usize> = batch.iter().map(|(index, _)| *index).collect();
        let mut indexes = indexes.into_iter();
        let mut failed = None;
        app.apply_in_order(
            batch.into_iter().map(|(_, object)| AnyChange::from(object)),
            |result| {
                let index = indexes.next().unwrap_or_default();
                if let Err(error) = result {
                    failed.get_or_insert(DecodeError {
                        path: format!("items[{index}]"),
                        message: error.to_string(),
                    });
                }
            },
        );
        if let Some(error) = failed {
            return Err(error);
        }
    }
    Ok(app)
}

/// Decides for `pod` on `app` as a dry-run `Preempt` does: admitted, with the nomination
/// the core holds for it when it carries none (upstream re-reads the pod).
/// A FITS answer always names where the kube-scheduler would bind the pod (the
/// differential harness compares it), explain or not.
pub fn decide(app: &App, mut pod: Pod, explain: bool) -> Result<Decision, AppError> {
    app.admit(&mut pod, "spec.priorityClassName")?;
    let mut placed = pod.clone();
    let decided = app.preempt_blocking(PreemptRequest {
        pod,
        dry_run: true,
        explain,
        pdb_mode: None,
    })?;
    let mut decision = decided.decision;
    if decision.outcome == Outcome::Fits && decision.placement.is_none() {
        app.cache.fill_held_nomination(&mut placed);
        let view = ClusterView::new(&app.cache.snapshot(), app.kubernetes_version());
        decision.placement = Some(view.place(&placed));
    }
    Ok(decision)
}

/// Decides for a PodGroup preemptor as a dry-run `PreemptGroup` does (kubernetes 1.37
/// with GenericWorkload on): the members are the pending pods `app` holds in the group's
/// namespace that name it; `group` is the scenario's `preemptor` and wins over a PodGroup
/// of the same name among the cluster's objects. The answer renders as the
/// `PreemptGroupResponse` JSON (the server's JSON rendering does that; this layer knows no
/// transport).
pub fn decide_group(
    app: &App,
    group: crate::model::PodGroup,
    explain: bool,
) -> Result<crate::engine::GroupDecision, AppError> {
    let decided = app.preempt_group_blocking(crate::app::PreemptGroupRequest {
        group: crate::app::GroupSource::Inline(group),
        members: None,
        dry_run: true,
        explain,
        pdb_mode: None,
    })?;
    Ok(decided.decision)
}

/// A preemptor file's one object.
enum Preemptor {
    Pod(Pod),
    Group(crate::model::PodGroup),
}

/// The one Pod or PodGroup of a preemptor file.
fn single_preemptor(path: &Path, objects: Vec<Object>) -> Result<Preemptor, SimulateError> {
    let count = objects.len();
    let mut objects = objects.into_iter();
    match (objects.next(), count) {
        (Some(Object::Pod(pod)), 1) => Ok(Preemptor::Pod(pod)),
        (Some(Object::PodGroup(group)), 1) => Ok(Preemptor::Group(group)),
        (first, _) => {
            let mut kinds = Skipped::default();
            for object in first.into_iter().chain(objects) {
                kinds.add(match object {
                    Object::Node(_) => KIND_NODE,
                    Object::Pod(_) => KIND_POD,
                    Object::Pdb(_) => KIND_PDB,
                    Object::PriorityClass(_) => KIND_PRIORITY_CLASS,
                    Object::Namespace(_) => KIND_NAMESPACE,
                    Object::PodGroup(_) => KIND_POD_GROUP,
                    Object::Workload(_) => KIND_WORKLOAD,
                });
            }
            let found = kinds
                .0
                .iter()
                .map(|(kind, n)| format!("{kind} ({n})"))
                .collect::<Vec<_>>()
                .join(", ");
            let found = if found.is_empty() {
                "none".to_string()
            } else {
                found
            };
            Err(SimulateError::invalid(
                path,
                None,
                DecodeError {
                    path: String::new(),
                    message: format!("expected one object of kind Pod or PodGroup, found {found}"),
                },
            ))
        }
    }
}

/// Reads both files and decides.
pub fn simulate(
    cluster: &Path,
    pod: &Path,
    options: SimulateOptions,
) -> Result<Simulation, SimulateError> {
    let (objects, cluster_note) = read_file(cluster, options.strict)?;
    let app = load_cluster(objects, &options.app_config())
        .map_err(|error| SimulateError::invalid(cluster, None, error))?;
    decide_for(&app, cluster_note, pod, options)
}

/// As [`simulate`], the cluster's objects already read (from a live cluster).
pub fn simulate_objects(
    objects: Vec<Object>,
    pod: &Path,
    options: SimulateOptions,
) -> Result<Simulation, SimulateError> {
    let app = load_cluster(objects, &options.app_config())
        .map_err(|error| SimulateError::Cluster(error.to_string()))?;
    decide_for(&app, None, pod, options)
}

fn decide_for(
    app: &App,
    cluster_note: Option<String>,
    pod: &Path,
    options: SimulateOptions,
) -> Result<Simulation, SimulateError> {
    let (objects, pod_note) = read_file(pod, options.strict)?;
    let invalid = |error: AppError| {
        let (path, message) = match error {
            AppError::InvalidArgument { path, message } => (path, message),
            other => (String::new(), other.to_string()),
        };
        SimulateError::invalid(pod, None, DecodeError { path, message })
    };
    let decision = match single_preemptor(pod, objects)? {
        Preemptor::Group(group) => Decided::Group(Box::new(
            decide_group(app, group, options.explain).map_err(invalid)?,
        )),
        Preemptor::Pod(preemptor) => {
            crate::engine::check_pending(&preemptor).map_err(|refused| {
                SimulateError::invalid(
                    pod,
                    None,
                    DecodeError {
                        path: refused.field().to_string(),
                        message: refused.to_string(),
                    },
                )
            })?;
            // Admission refuses a pod naming a class that does not exist.
            Decided::Pod(Box::new(
                decide(app, preemptor, options.explain).map_err(invalid)?,
            ))
        }
    };
    Ok(Simulation {
        decision,
        notes: cluster_note.into_iter().chain(pod_note).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GANG_CLUSTER: &str = r#"
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train, namespace: ml}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
  priorityClassName: training
---
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: job, namespace: ml}
spec:
  podGroupTemplates: [{name: workers}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: training}
value: 1000
"#;

    #[test]
    fn files_take_pod_groups_and_workloads_and_skip_only_unused_kinds() {
        let (objects, skipped) = read_objects(GANG_CLUSTER, false).expect("read");
        assert_eq!(
            skipped.summary(),
            "skipped 1 object of kinds preemptd does not use: Service (1)"
        );
        assert!(matches!(objects[0], Object::PodGroup(_)));
        assert!(matches!(objects[1], Object::Workload(_)));
        let without_service = GANG_CLUSTER.replace(
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n",
            "",
        );
        let (strictly, _) = read_objects(&without_service, true).expect("strict takes both kinds");
        assert_eq!(strictly.len(), 3);
        let app = load_cluster(objects, &AppConfig::default()).expect("loads");
        let index = app.cache.pod_groups();
        // The class came after the group in the file: the group takes its value all the same.
        assert_eq!(
            index
                .group(&"ml".into(), &"train".into())
                .expect("held")
                .priority,
            1000
        );
        assert!(index.workload(&"ml".into(), &"job".into()).is_some());
    }
}
