//! Reading Kubernetes objects (JSON or YAML, as `kubectl get -o json|yaml` prints them):
//! this module finds the fields in the document and fills the builder's input; what they
//! mean, their defaults and their validity are the builder's ([`super::build`]).
//!
//! Unknown fields are ignored; a value of the wrong JSON type is this reader's error, and
//! names the field as the builder's errors do (`spec.containers[0].resources.requests[cpu]:
//! expected a quantity (a string or a number)`). JSON `null` is treated like a missing field
//! everywhere, as Go's decoder does.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{Map, Value};
use smallvec::SmallVec;

use super::build::{
    self, BuildError, ConditionInput, ContainerInput, ImageInput, Memo, NamespaceInput,
    NodeConditionInput, NodeInput, Pairs, PdbInput, PodInput, PortInput, PriorityClassInput,
    Quantities, RequirementInput, ResourcesInput, SelectorInput, Source, TaintInput,
    TolerationInput, UncommonPodFields,
};
use super::namespace::Namespace;
use super::priority::PriorityClass;
use super::{Node, Pod, PodDisruptionBudget, PodGroup, Workload};

mod affinity;
mod document;
mod nesting;
mod pod_group;

pub use pod_group::SCHEDULING_V1BETA1;

pub use document::{
    MAX_JSON_NESTING, MAX_YAML_BYTES, MAX_YAML_NESTING, check_yaml_bounds, parse_document,
    reads_as_json,
};

/// A decoding failure: the field path relative to the decoded value (empty for the value
/// itself or for a parse error) and a lowercase message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}{sep}{message}", sep = separator(.path))]
pub struct DecodeError {
    /// The field path of the refused value.
    pub path: String,
    /// Why it was refused.
    pub message: String,
}

fn separator(path: &str) -> &'static str {
    if path.is_empty() { "" } else { ": " }
}

impl DecodeError {
    fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        DecodeError {
            path: path.into(),
            message: message.into(),
        }
    }
}

type Result<T, E = DecodeError> = std::result::Result<T, E>;

/// One decoded object. Unboxed on purpose: objects are moved straight into the cache.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Object {
    /// A Node.
    Node(Node),
    /// A Pod.
    Pod(Pod),
    /// A PodDisruptionBudget.
    Pdb(PodDisruptionBudget),
    /// A PriorityClass.
    PriorityClass(PriorityClass),
    /// A Namespace.
    Namespace(Namespace),
    /// A PodGroup.
    PodGroup(PodGroup),
    /// A Workload.
    Workload(Workload),
}

/// The `kind` of a Node.
pub const KIND_NODE: &str = "Node";
/// The `kind` of a Pod.
pub const KIND_POD: &str = "Pod";
/// The `kind` of a PodDisruptionBudget.
pub const KIND_PDB: &str = "PodDisruptionBudget";
/// The `kind` of a PriorityClass.
pub const KIND_PRIORITY_CLASS: &str = "PriorityClass";
/// The `kind` of a Namespace.
pub const KIND_NAMESPACE: &str = "Namespace";
/// The `kind` of a PodGroup.
pub const KIND_POD_GROUP: &str = "PodGroup";
/// The `kind` of a Workload.
pub const KIND_WORKLOAD: &str = "Workload";
/// Every kind preemptd reads.
pub const KINDS: [&str; 7] = [
    KIND_NODE,
    KIND_POD,
    KIND_PDB,
    KIND_PRIORITY_CLASS,
    KIND_NAMESPACE,
    KIND_POD_GROUP,
    KIND_WORKLOAD,
];

/// Decodes one object of any of the [`KINDS`] by its `kind`.
pub fn decode_object(value: &Value) -> Result<Object> {
    object_at(&Cur::root(value), None)
}

/// Decodes a list (`kind: List`, `NodeList`, ..., or any object with an `items` array) as
/// `kubectl get nodes,pods,pdb -A -o json` prints it; error paths start with `items[N].`.
/// Items without a `kind` take it from a typed list's kind (`PodList` → `Pod`). A single
/// object that is not a list decodes to one item.
pub fn decode_list(value: &Value) -> Result<Vec<Object>> {
    let cur = Cur::root(value);
    let map = cur.require_object()?;
    let kind_cur = cur.get("kind")?;
    let kind = kind_cur.str()?.unwrap_or("");
    let is_list = kind.ends_with("List") || map.contains_key("items");
    if !is_list {
        return Ok(vec![object_at(&cur, None)?]);
    }
    let item_kind = kind.strip_suffix("List").filter(|k| KINDS.contains(k));
    let items = cur.get("items")?;
    items
        .elements()?
        .map(|item| object_at(&item, item_kind))
        .collect()
}

/// Decodes a Node (`kind`, when present, must be `Node`).
pub fn decode_node(value: &Value) -> Result<Node> {
    decode_node_with(value, &mut Memo::disabled())
}

/// [`decode_node`], its repeated strings and label sets taken from `memo`.
pub fn decode_node_with(value: &Value, memo: &mut Memo) -> Result<Node> {
    node_at(&Cur::root(value), memo)
}

/// Decodes a Pod (`kind`, when present, must be `Pod`); derived fields are computed.
pub fn decode_pod(value: &Value) -> Result<Pod> {
    decode_pod_with(value, &mut Memo::disabled())
}

/// [`decode_pod`], its repeated strings, label sets and quantities taken from `memo`.
pub fn decode_pod_with(value: &Value, memo: &mut Memo) -> Result<Pod> {
    pod_at(&Cur::root(value), memo)
}

/// Decodes a PodDisruptionBudget (`kind`, when present, must be `PodDisruptionBudget`).
pub fn decode_pdb(value: &Value) -> Result<PodDisruptionBudget> {
    pdb_at(&Cur::root(value))
}

// ---------------------------------------------------------------------------------------
// Field paths and a cursor over a JSON value.

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Field(&'a str),
    Index(usize),
    /// A map's entry: `[key]`.
    Key(&'a str),
}

/// A field path as a linked list through the stack; rendered only for errors.
#[derive(Clone, Copy)]
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
}

impl Path<'_> {
    fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(p) = cur {
            segs.push(p.seg);
            cur = p.parent;
        }
        let mut out = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Field(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Seg::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
                Seg::Key(key) => {
                    out.push('[');
                    out.push_str(key);
                    out.push(']');
                }
            }
        }
        out
    }
}

/// A possibly-missing value at a path.
#[derive(Clone, Copy)]
struct Cur<'v, 'p> {
    value: Option<&'v Value>,
    path: Path<'p>,
}

impl<'v> Cur<'v, 'static> {
    fn root(value: &'v Value) -> Self {
        Cur {
            value: Some(value),
            path: Path {
                parent: None,
                seg: Seg::Root,
            },
        }
    }
}

impl<'v, 'p> Cur<'v, 'p> {
    fn err(&self, message: impl Into<String>) -> DecodeError {
        DecodeError::new(self.path.render(), message)
    }

    /// The value unless missing or null.
    fn present(&self) -> Option<&'v Value> {
        self.value.filter(|v| !v.is_null())
    }

    fn object(&self) -> Result<Option<&'v Map<String, Value>>> {
        match self.present() {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(_) => Err(self.err("expected an object")),
        }
    }

    fn require_object(&self) -> Result<&'v Map<String, Value>> {
        self.object()?.ok_or_else(|| self.err("expected an object"))
    }

    /// The field `key`; missing when `self` is missing. Errors when `self` is not an object.
    fn get<'s>(&'s self, key: &'s str) -> Result<Cur<'v, 's>> {
        let value = self.object()?.and_then(|map| map.get(key));
        Ok(Cur {
            value,
            path: Path {
                parent: Some(&self.path),
                seg: Seg::Field(key),
            },
        })
    }

    fn str(&self) -> Result<Option<&'v str>> {
        match self.present() {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err("expected a string")),
        }
    }

    /// A string; missing means empty.
    fn string(&self) -> Result<&'v str> {
        Ok(self.str()?.unwrap_or(""))
    }

    fn bool(&self) -> Result<bool> {
        match self.present() {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.err("expected a boolean")),
        }
    }

    fn int32(&self) -> Result<Option<i32>> {
        match self.present() {
            None => Ok(None),
            Some(Value::Number(n)) if n.is_f64() => Err(self.err("expected an integer")),
            Some(Value::Number(n)) => n
                .as_i64()
                .and_then(|v| i32::try_from(v).ok())
                .map(Some)
                .ok_or_else(|| self.err("expected a 32-bit integer")),
            Some(_) => Err(self.err("expected an integer")),
        }
    }

    /// Entries of a map (missing → none).
    fn entries<'s>(&'s self) -> Result<impl Iterator<Item = (&'v str, Cur<'v, 's>)> + 's> {
        let map = self.object()?;
        Ok(map.into_iter().flat_map(|m| m.iter()).map(move |(k, v)| {
            (
                k.as_str(),
                Cur {
                    value: Some(v),
                    path: Path {
                        parent: Some(&self.path),
                        seg: Seg::Key(k.as_str()),
                    },
                },
            )
        }))
    }

    /// Elements of an array (missing → none).
    fn elements<'s>(&'s self) -> Result<impl Iterator<Item = Cur<'v, 's>> + 's> {
        let items: &'v [Value] = match self.present() {
            None => &[],
            Some(Value::Array(items)) => items,
            Some(_) => return Err(self.err("expected an array")),
        };
        Ok(items.iter().enumerate().map(move |(i, v)| Cur {
            value: Some(v),
            path: Path {
                parent: Some(&self.path),
                seg: Seg::Index(i),
            },
        }))
    }
}

// ---------------------------------------------------------------------------------------
// Small field readers.

/// The builder's verdict on the object at `cur`: its error's path is put after `cur`'s.
fn built<T>(cur: &Cur<'_, '_>, result: std::result::Result<T, BuildError>) -> Result<T> {
    result.map_err(|BuildError { path, message }| {
        let prefix = cur.path.render();
        let path = if prefix.is_empty() {
            path
        } else if path.is_empty() || path.starts_with('[') {
            prefix + &path
        } else {
            prefix + "." + &path
        };
        DecodeError { path, message }
    })
}

/// An array of strings (missing → empty).
fn strings<'v>(cur: &Cur<'v, '_>) -> Result<Vec<&'v str>> {
    cur.elements()?.map(|item| item.string()).collect()
}

/// A map of strings (labels, nodeSelector, matchLabels).
fn string_map<'v, const N: usize>(cur: &Cur<'v, '_>) -> Result<Pairs<'v, N>> {
    cur.entries()?.map(|(k, v)| Ok((k, v.string()?))).collect()
}

/// A quantity given as a string or a JSON number; `null` is zero (as Go's
/// `Quantity.UnmarshalJSON` reads it).
fn quantity<'v>(cur: &Cur<'v, '_>) -> Result<Cow<'v, str>> {
    match cur.present() {
        None => Ok(Cow::Borrowed("0")),
        Some(Value::String(s)) => Ok(Cow::Borrowed(s)),
        Some(Value::Number(n)) => Ok(Cow::Owned(n.to_string())),
        Some(_) => Err(cur.err("expected a quantity (a string or a number)")),
    }
}

fn resource_list<'v, const N: usize>(cur: &Cur<'v, '_>) -> Result<Quantities<'v, N>> {
    cur.entries()?
        .map(|(name, v)| Ok((name, quantity(&v)?)))
        .collect()
}

fn resources<'v>(cur: &Cur<'v, '_>) -> Result<ResourcesInput<'v>> {
    Ok(ResourcesInput {
        requests: resource_list(&cur.get("requests")?)?,
        limits: resource_list(&cur.get("limits")?)?,
    })
}

fn int32_or_zero(cur: &Cur<'_, '_>) -> Result<i32> {
    Ok(cur.int32()?.unwrap_or(0))
}

fn int64_or_zero(cur: &Cur<'_, '_>) -> Result<i64> {
    match cur.present() {
        None => Ok(0),
        Some(Value::Number(n)) if n.is_f64() => Err(cur.err("expected an integer")),
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| cur.err("expected a 64-bit integer")),
        Some(_) => Err(cur.err("expected an integer")),
    }
}

// ---------------------------------------------------------------------------------------
// Metadata.

fn check_type(cur: &Cur<'_, '_>, kind: &str, api_versions: &[&str]) -> Result<()> {
    let kind_cur = cur.get("kind")?;
    if let Some(actual) = kind_cur.str()?
        && !actual.is_empty()
        && actual != kind
    {
        return Err(kind_cur.err(format!("expected kind {kind:?}, got {actual:?}")));
    }
    let version_cur = cur.get("apiVersion")?;
    if let Some(version) = version_cur.str()?
        && !version.is_empty()
        && !api_versions.contains(&version)
    {
        return Err(version_cur.err(format!(
            "unsupported apiVersion {version:?} for kind {kind}"
        )));
    }
    Ok(())
}

struct Meta<'v, const N: usize> {
    name: &'v str,
    namespace: &'v str,
    uid: &'v str,
    resource_version: u64,
    labels: Pairs<'v, N>,
    deletion_timestamp: &'v str,
}

fn metadata<'v, const N: usize>(object: &Cur<'v, '_>) -> Result<Meta<'v, N>> {
    let meta = object.get("metadata")?;
    Ok(Meta {
        name: meta.get("name")?.string()?,
        namespace: meta.get("namespace")?.string()?,
        uid: meta.get("uid")?.string()?,
        resource_version: resource_version(&meta.get("resourceVersion")?)?,
        labels: string_map(&meta.get("labels")?)?,
        deletion_timestamp: meta.get("deletionTimestamp")?.string()?,
    })
}

fn resource_version(cur: &Cur<'_, '_>) -> Result<u64> {
    match cur.present() {
        None => Ok(0),
        Some(Value::String(s)) if s.is_empty() => Ok(0),
        Some(Value::String(s)) => {
            if s.bytes().all(|b| b.is_ascii_digit()) {
                s.parse()
                    .map_err(|_| cur.err(format!("invalid resource version {s:?}")))
            } else {
                Err(cur.err(format!("invalid resource version {s:?}")))
            }
        }
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| cur.err(format!("invalid resource version {n}"))),
        Some(_) => Err(cur.err("expected a string")),
    }
}

// ---------------------------------------------------------------------------------------
// Objects.

fn object_at(cur: &Cur<'_, '_>, default_kind: Option<&str>) -> Result<Object> {
    cur.require_object()?;
    let kind_cur = cur.get("kind")?;
    let kind = kind_cur.str()?.filter(|k| !k.is_empty()).or(default_kind);
    match kind {
        Some(KIND_NODE) => node_at(cur, &mut Memo::disabled()).map(Object::Node),
        Some(KIND_POD) => pod_at(cur, &mut Memo::disabled()).map(Object::Pod),
        Some(KIND_PDB) => pdb_at(cur).map(Object::Pdb),
        Some(KIND_PRIORITY_CLASS) => priority_class_at(cur).map(Object::PriorityClass),
        Some(KIND_NAMESPACE) => namespace_at(cur).map(Object::Namespace),
        Some(KIND_POD_GROUP) => pod_group::pod_group_at(cur).map(Object::PodGroup),
        Some(KIND_WORKLOAD) => pod_group::workload_at(cur).map(Object::Workload),
        Some(other) => Err(kind_cur.err(format!(
            "unsupported kind {other:?}: supported kinds are {}",
            KINDS.map(|k| format!("{k:?}")).join(", ")
        ))),
        None => Err(kind_cur.err("must not be empty")),
    }
}

fn node_at(cur: &Cur<'_, '_>, memo: &mut Memo) -> Result<Node> {
    cur.require_object()?;
    check_type(cur, KIND_NODE, &["v1"])?;
    let meta = metadata(cur)?;
    let spec = cur.get("spec")?;
    let status = cur.get("status")?;
    let taints = spec.get("taints")?;
    let taints = taints
        .elements()?
        .map(|t| {
            t.require_object()?;
            Ok(TaintInput {
                key: t.get("key")?.string()?,
                value: t.get("value")?.string()?,
                effect: t.get("effect")?.string()?,
            })
        })
        .collect::<Result<_>>()?;
    let input = NodeInput {
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        taints,
        unschedulable: spec.get("unschedulable")?.bool()?,
        allocatable: resource_list(&status.get("allocatable")?)?,
        annotations: string_map(&cur.get("metadata")?.get("annotations")?)?,
        conditions: status
            .get("conditions")?
            .elements()?
            .map(|c| {
                c.require_object()?;
                Ok(NodeConditionInput {
                    type_: c.get("type")?.string()?,
                    status: c.get("status")?.string()?,
                    reason: c.get("reason")?.string()?,
                    message: c.get("message")?.string()?,
                })
            })
            .collect::<Result<_>>()?,
        images: status
            .get("images")?
            .elements()?
            .map(|image| {
                image.require_object()?;
                Ok(ImageInput {
                    names: strings(&image.get("names")?)?,
                    size_bytes: int64_or_zero(&image.get("sizeBytes")?)?,
                })
            })
            .collect::<Result<_>>()?,
    };
    built(cur, build::node(&input, memo))
}

fn pdb_at(cur: &Cur<'_, '_>) -> Result<PodDisruptionBudget> {
    cur.require_object()?;
    check_type(cur, KIND_PDB, &["policy/v1", "policy/v1beta1"])?;
    let meta = metadata::<0>(cur)?;
    let status = cur.get("status")?;
    let disrupted = status.get("disruptedPods")?;
    let input = PdbInput {
        namespace: meta.namespace,
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        selector: selector(&cur.get("spec")?.get("selector")?)?,
        disruptions_allowed: int32_or_zero(&status.get("disruptionsAllowed")?)?,
        disrupted_pods: disrupted.entries()?.map(|(name, _)| name).collect(),
    };
    built(cur, build::pdb(&input, &mut Memo::disabled()))
}

fn priority_class_at(cur: &Cur<'_, '_>) -> Result<PriorityClass> {
    cur.require_object()?;
    check_type(cur, KIND_PRIORITY_CLASS, &["scheduling.k8s.io/v1"])?;
    let meta = metadata::<0>(cur)?;
    let input = PriorityClassInput {
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        value: int32_or_zero(&cur.get("value")?)?,
        global_default: cur.get("globalDefault")?.bool()?,
        preemption_policy: cur.get("preemptionPolicy")?.string()?,
    };
    built(cur, build::priority_class(&input))
}

fn namespace_at(cur: &Cur<'_, '_>) -> Result<Namespace> {
    cur.require_object()?;
    check_type(cur, KIND_NAMESPACE, &["v1"])?;
    let meta = metadata(cur)?;
    let input = NamespaceInput {
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
    };
    built(cur, build::namespace(&input, &mut Memo::disabled()))
}

/// Decodes a PriorityClass (`kind`, when present, must be `PriorityClass`).
pub fn decode_priority_class(value: &Value) -> Result<PriorityClass> {
    priority_class_at(&Cur::root(value))
}

/// Decodes a Namespace (`kind`, when present, must be `Namespace`).
pub fn decode_namespace(value: &Value) -> Result<Namespace> {
    namespace_at(&Cur::root(value))
}

/// Decodes a PodGroup (`kind`, when present, must be `PodGroup`).
pub fn decode_pod_group(value: &Value) -> Result<PodGroup> {
    pod_group::pod_group_at(&Cur::root(value))
}

/// Decodes a Workload (`kind`, when present, must be `Workload`).
pub fn decode_workload(value: &Value) -> Result<Workload> {
    pod_group::workload_at(&Cur::root(value))
}

fn pod_at(cur: &Cur<'_, '_>, memo: &mut Memo) -> Result<Pod> {
    // Outlives the input, which may borrow it.
    let detail_key;
    cur.require_object()?;
    check_type(cur, KIND_POD, &["v1"])?;
    let meta = metadata(cur)?;
    let spec = cur.get("spec")?;
    spec.object()?;
    let status = cur.get("status")?;
    let mut input = PodInput {
        namespace: meta.namespace,
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        deletion_timestamp: meta.deletion_timestamp,
        node_name: spec.get("nodeName")?.string()?,
        scheduler_name: spec.get("schedulerName")?.string()?,
        priority: spec.get("priority")?.int32()?,
        priority_class_name: spec.get("priorityClassName")?.string()?,
        preemption_policy: spec.get("preemptionPolicy")?.string()?,
        host_network: spec.get("hostNetwork")?.bool()?,
        containers: containers(&spec.get("containers")?)?,
        tolerations: tolerations(&spec.get("tolerations")?)?,
        node_selector: string_map(&spec.get("nodeSelector")?)?,
        scheduling_group: spec.get("schedulingGroup")?.get("podGroupName")?.string()?,
        start_time: status.get("startTime")?.string()?,
        nominated_node_name: status.get("nominatedNodeName")?.string()?,
        phase: status.get("phase")?.string()?,
        uncommon: UncommonPodFields {
            init_containers: containers(&spec.get("initContainers")?)?,
            overhead: resource_list(&spec.get("overhead")?)?,
            resources: resources(&spec.get("resources")?)?,
            affinity: affinity::affinity(&spec.get("affinity")?)?,
            topology_spread_constraints: affinity::spread_constraints(
                &spec.get("topologySpreadConstraints")?,
            )?,
            conditions: conditions(&status.get("conditions")?)?,
        }
        .boxed_unless_empty(),
        details: Source::Fields,
        label_set: Source::Fields,
    };
    if memo.is_enabled() {
        detail_key = details_key(&input);
        input.details = match memo.details(&[detail_key.as_bytes()]) {
            Some(details) => Source::Remembered(details),
            None => Source::Encoded(smallvec::smallvec![detail_key.as_bytes()]),
        };
    }
    built(cur, build::pod(&input, memo))
}

/// The input fields a pod's details are built from, spelled out: the memo's key for the
/// details pods of one template share. A JSON object has no encoding of these fields
/// alone (an API server's pods differ in others, such as the volumes it adds), and
/// `Debug` quotes and escapes every string, so equal keys mean equal fields. Building
/// each pod's details only to drop all but one copy in the cache left the slabs of those
/// copies part full: ~100 bytes of RSS a pod of the bench's cluster in Kubernetes mode.
fn details_key(p: &PodInput<'_>) -> String {
    // Every field `build::pod` reads for the details.
    format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        p.scheduler_name,
        p.scheduling_group,
        p.priority_class_name_kept(),
        p.host_network,
        p.containers,
        p.tolerations,
        p.node_selector,
        p.uncommon
    )
}

fn containers<'v, C: FromIterator<ContainerInput<'v>>>(cur: &Cur<'v, '_>) -> Result<C> {
    cur.elements()?.map(|c| container(&c)).collect()
}

fn container<'v>(cur: &Cur<'v, '_>) -> Result<ContainerInput<'v>> {
    cur.require_object()?;
    let ports = cur.get("ports")?;
    let ports = ports
        .elements()?
        .map(|port| {
            port.require_object()?;
            Ok(PortInput {
                host_port: int32_or_zero(&port.get("hostPort")?)?,
                container_port: int32_or_zero(&port.get("containerPort")?)?,
                protocol: port.get("protocol")?.string()?,
                host_ip: port.get("hostIP")?.string()?,
            })
        })
        .collect::<Result<_>>()?;
    Ok(ContainerInput {
        name: cur.get("name")?.string()?,
        resources: resources(&cur.get("resources")?)?,
        ports,
        restart_policy: cur.get("restartPolicy")?.string()?,
        image: cur.get("image")?.string()?,
    })
}

fn tolerations<'v, const N: usize>(
    cur: &Cur<'v, '_>,
) -> Result<SmallVec<[TolerationInput<'v>; N]>> {
    cur.elements()?
        .map(|t| {
            t.require_object()?;
            Ok(TolerationInput {
                key: t.get("key")?.string()?,
                operator: t.get("operator")?.string()?,
                value: t.get("value")?.string()?,
                effect: t.get("effect")?.string()?,
            })
        })
        .collect()
}

/// The `matchExpressions` of a label selector, or a node selector term's.
fn requirements<'v>(cur: &Cur<'v, '_>) -> Result<Vec<RequirementInput<'v>>> {
    cur.elements()?
        .map(|r| {
            r.require_object()?;
            Ok(RequirementInput {
                key: r.get("key")?.string()?,
                operator: r.get("operator")?.string()?,
                values: strings(&r.get("values")?)?,
            })
        })
        .collect()
}

fn conditions<'v>(cur: &Cur<'v, '_>) -> Result<Vec<ConditionInput<'v>>> {
    cur.elements()?
        .map(|c| {
            c.require_object()?;
            Ok(ConditionInput {
                type_: c.get("type")?.string()?,
                status: c.get("status")?.string()?,
                reason: c.get("reason")?.string()?,
            })
        })
        .collect()
}

/// A `metav1.LabelSelector`; missing or null → `None`, `{}` → `Some(empty)`.
fn selector<'v>(cur: &Cur<'v, '_>) -> Result<Option<SelectorInput<'v>>> {
    if cur.object()?.is_none() {
        return Ok(None);
    }
    Ok(Some(SelectorInput {
        match_labels: string_map(&cur.get("matchLabels")?)?,
        match_expressions: requirements(&cur.get("matchExpressions")?)?,
    }))
}

#[cfg(test)]
mod tests;
