//! The cluster cache: a sharded concurrent store of nodes with their pods, pending
//! nominated pods and PodDisruptionBudgets.
//!
//! Readers never block writers for long: every node's state is an immutable
//! `Arc<NodeInfo>` replaced copy-on-write, so a [`Snapshot`] is a list of `Arc` clones
//! (the kube-rs reflector pattern). Writers are serialized by one mutex so that changes
//! touching several maps (a pod moving between nodes) are atomic for other writers and
//! for snapshots, which take the same mutex only while collecting the `Arc`s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;
use parking_lot::Mutex;

use crate::model::{Node, Pod, PodDisruptionBudget, PodRef, Resources, Str};

/// What the cache holds for one node name: the node (once it arrived), the pods bound to
/// it and the pending pods nominated to it.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub name: Str,
    pub node: Option<Arc<Node>>,
    /// Pods bound to this node (non-terminal phases only).
    pub pods: Vec<Arc<Pod>>,
    /// Σ effective requests of `pods`.
    pub requested: Resources,
    /// Pending pods whose `nominatedNodeName` is this node.
    pub nominated: Vec<Arc<Pod>>,
    /// Bumped on every change to this entry; a commit re-checks it.
    pub generation: u64,
    /// Number of `pods` with required pod anti-affinity terms.
    pub anti_affinity_pods: usize,
}

impl NodeInfo {
    fn empty(name: Str) -> Self {
        NodeInfo {
            name,
            node: None,
            pods: Vec::new(),
            requested: Resources::default(),
            nominated: Vec::new(),
            generation: 0,
            anti_affinity_pods: 0,
        }
    }

    fn is_vacant(&self) -> bool {
        self.node.is_none() && self.pods.is_empty() && self.nominated.is_empty()
    }

    fn add_pod(&mut self, pod: Arc<Pod>) {
        self.requested.add(&pod.requests);
        if pod.has_required_anti_affinity() {
            self.anti_affinity_pods += 1;
        }
        self.pods.push(pod);
    }

    fn remove_pod(&mut self, uid: &str) -> Option<Arc<Pod>> {
        let index = self.pods.iter().position(|p| &*p.uid == uid)?;
        let pod = self.pods.swap_remove(index);
        self.requested.sub(&pod.requests);
        if pod.has_required_anti_affinity() {
            self.anti_affinity_pods -= 1;
        }
        Some(pod)
    }

    fn remove_nominated(&mut self, uid: &str) -> Option<Arc<Pod>> {
        let index = self.nominated.iter().position(|p| &*p.uid == uid)?;
        Some(self.nominated.swap_remove(index))
    }
}

/// Where a cached pod lives.
#[derive(Clone, Debug)]
struct PodEntry {
    pod: Arc<Pod>,
    place: Place,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Place {
    Bound(Str),
    Nominated(Str),
    Pending,
}

impl Place {
    fn of(pod: &Pod) -> Place {
        match (&pod.node_name, pod.nomination()) {
            (Some(node), _) => Place::Bound(node.clone()),
            (None, Some(node)) => Place::Nominated(node.clone()),
            (None, None) => Place::Pending,
        }
    }
}

/// The result of an upsert or delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// False when the update carried an older `resource_version` than the cache holds.
    pub applied: bool,
    /// The resource version the cache holds for the object afterwards (0 once deleted).
    pub resource_version: u64,
    /// The cache revision after the update.
    pub revision: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    #[error("{kind} {name} not found")]
    NotFound { kind: &'static str, name: String },
    #[error("pod uid {uid} is already used by {existing}")]
    UidConflict { uid: String, existing: String },
    #[error("pod {name} already exists with uid {existing}")]
    NameConflict { name: String, existing: String },
}

/// A consistent read view for one decision.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Every node that exists, sorted by name.
    pub nodes: Vec<Arc<NodeInfo>>,
    pub pdbs: Vec<Arc<PodDisruptionBudget>>,
    pub revision: u64,
}

impl Snapshot {
    pub fn node(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.nodes
            .binary_search_by(|n| (*n.name).cmp(name))
            .ok()
            .map(|i| &self.nodes[i])
    }
}

/// Counts for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    pub nodes: usize,
    pub pods: usize,
    pub nominated_pods: usize,
    pub pdbs: usize,
}

/// A nomination as listed or streamed: the pending pod and the node it is nominated to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nomination {
    pub pod: PodRef,
    pub priority: i32,
    pub node: Str,
}

/// One change a commit made, for the nominations log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitChange {
    /// The preemptor is now nominated to `node`.
    Nominated(Nomination),
    /// A lower-priority pod's nomination was cleared.
    NominationCleared { pod: PodRef, node: Str },
    /// A victim is now terminating by preemption.
    VictimMarked { pod: PodRef, node: Str },
}

/// What a `Preempt` commit writes into the cache.
#[derive(Clone, Debug)]
pub struct Commit {
    /// The preemptor as decided on (its nomination is set to `node`).
    pub preemptor: Pod,
    pub node: Str,
    /// The generation of `node` the decision was made on.
    pub node_generation: u64,
    pub victims: Vec<PodRef>,
    pub nominations_to_clear: Vec<PodRef>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node {node} changed since the decision")]
pub struct CommitConflict {
    pub node: Str,
}

#[derive(Default)]
pub struct ClusterCache {
    nodes: DashMap<Str, Arc<NodeInfo>>,
    pods: DashMap<Str, PodEntry>,
    /// namespace/name → uid
    pod_names: DashMap<(Str, Str), Str>,
    pdbs: DashMap<(Str, Str), Arc<PodDisruptionBudget>>,
    node_count: AtomicU64,
    revision: AtomicU64,
    writer: Mutex<()>,
}

/// `rv == 0` means the client does not version its objects: always applied.
fn is_stale(incoming: u64, held: u64) -> bool {
    incoming != 0 && incoming < held
}

impl ClusterCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }

    fn bump(&self) -> u64 {
        self.revision.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Applies `change` to the entry for `name`, creating it if needed and dropping it when
    /// it becomes vacant. Caller holds the writer lock.
    fn edit_node<R>(&self, name: &Str, change: impl FnOnce(&mut NodeInfo) -> R) -> R {
        let mut entry = self
            .nodes
            .entry(name.clone())
            .or_insert_with(|| Arc::new(NodeInfo::empty(name.clone())));
        let info = Arc::make_mut(entry.value_mut());
        let result = change(info);
        info.generation += 1;
        let vacant = info.is_vacant();
        drop(entry);
        if vacant {
            self.nodes.remove(name);
        }
        result
    }

    pub fn upsert_node(&self, node: Node) -> UpdateOutcome {
        let _w = self.writer.lock();
        let name = node.name.clone();
        let held = self
            .nodes
            .get(&name)
            .and_then(|n| n.node.as_ref().map(|n| n.resource_version));
        if let Some(held) = held
            && is_stale(node.resource_version, held)
        {
            return UpdateOutcome {
                applied: false,
                resource_version: held,
                revision: self.revision(),
            };
        }
        let rv = node.resource_version;
        self.edit_node(&name, |info| info.node = Some(Arc::new(node)));
        if held.is_none() {
            self.node_count.fetch_add(1, Ordering::Relaxed);
        }
        UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(),
        }
    }

    pub fn delete_node(&self, name: &str) -> Result<UpdateOutcome, CacheError> {
        let _w = self.writer.lock();
        let key: Str = name.into();
        if self.nodes.get(&key).is_none_or(|n| n.node.is_none()) {
            return Err(CacheError::NotFound {
                kind: "node",
                name: name.to_string(),
            });
        }
        // Pods stay, as in the scheduler cache: they come back with the node.
        self.edit_node(&key, |info| info.node = None);
        self.node_count.fetch_sub(1, Ordering::Relaxed);
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(),
        })
    }

    fn unplace(&self, entry: &PodEntry) {
        match &entry.place {
            Place::Bound(node) => {
                self.edit_node(node, |info| info.remove_pod(&entry.pod.uid));
            }
            Place::Nominated(node) => {
                self.edit_node(node, |info| info.remove_nominated(&entry.pod.uid));
            }
            Place::Pending => {}
        }
    }

    fn place(&self, pod: &Arc<Pod>, place: &Place) {
        match place {
            Place::Bound(node) => self.edit_node(node, |info| info.add_pod(pod.clone())),
            Place::Nominated(node) => self.edit_node(node, |info| info.nominated.push(pod.clone())),
            Place::Pending => {}
        }
    }

    /// Inserts or replaces a pod. Succeeded/Failed pods are removed (the scheduler never
    /// sees them). Caller holds the writer lock.
    fn put_pod(&self, pod: Pod) -> Result<UpdateOutcome, CacheError> {
        let uid = pod.uid.clone();
        let name_key = (pod.namespace.clone(), pod.name.clone());
        if let Some(existing) = self.pod_names.get(&name_key)
            && *existing != uid
        {
            return Err(CacheError::NameConflict {
                name: format!("{}/{}", pod.namespace, pod.name),
                existing: existing.to_string(),
            });
        }
        let old = self.pods.get(&uid).map(|e| e.clone());
        if let Some(old) = &old {
            if (old.pod.namespace.clone(), old.pod.name.clone()) != name_key {
                return Err(CacheError::UidConflict {
                    uid: uid.to_string(),
                    existing: format!("{}/{}", old.pod.namespace, old.pod.name),
                });
            }
            if is_stale(pod.resource_version, old.pod.resource_version) {
                return Ok(UpdateOutcome {
                    applied: false,
                    resource_version: old.pod.resource_version,
                    revision: self.revision(),
                });
            }
            self.unplace(old);
        }
        let rv = pod.resource_version;
        if pod.phase.is_terminal() {
            if old.is_some() {
                self.pods.remove(&uid);
                self.pod_names.remove(&name_key);
            }
        } else {
            let place = Place::of(&pod);
            let pod = Arc::new(pod);
            self.place(&pod, &place);
            self.pods.insert(uid.clone(), PodEntry { pod, place });
            self.pod_names.insert(name_key, uid);
        }
        Ok(UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(),
        })
    }

    pub fn upsert_pod(&self, pod: Pod) -> Result<UpdateOutcome, CacheError> {
        let _w = self.writer.lock();
        self.put_pod(pod)
    }

    /// Deletes a pod by namespace/name (and uid when given, which must then match).
    pub fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<UpdateOutcome, CacheError> {
        let _w = self.writer.lock();
        let not_found = || CacheError::NotFound {
            kind: "pod",
            name: format!("{namespace}/{name}"),
        };
        let key: (Str, Str) = (namespace.into(), name.into());
        let held_uid = self
            .pod_names
            .get(&key)
            .map(|u| u.clone())
            .ok_or_else(not_found)?;
        if uid.is_some_and(|u| !u.is_empty() && u != &*held_uid) {
            return Err(not_found());
        }
        let (_, entry) = self.pods.remove(&held_uid).ok_or_else(not_found)?;
        self.pod_names.remove(&key);
        self.unplace(&entry);
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(),
        })
    }

    pub fn upsert_pdb(&self, pdb: PodDisruptionBudget) -> UpdateOutcome {
        let _w = self.writer.lock();
        let key = (pdb.namespace.clone(), pdb.name.clone());
        if let Some(held) = self.pdbs.get(&key)
            && is_stale(pdb.resource_version, held.resource_version)
        {
            return UpdateOutcome {
                applied: false,
                resource_version: held.resource_version,
                revision: self.revision(),
            };
        }
        let rv = pdb.resource_version;
        self.pdbs.insert(key, Arc::new(pdb));
        UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(),
        }
    }

    pub fn delete_pdb(&self, namespace: &str, name: &str) -> Result<UpdateOutcome, CacheError> {
        let _w = self.writer.lock();
        let key: (Str, Str) = (namespace.into(), name.into());
        self.pdbs.remove(&key).ok_or_else(|| CacheError::NotFound {
            kind: "poddisruptionbudget",
            name: format!("{namespace}/{name}"),
        })?;
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(),
        })
    }

    pub fn get_pod(&self, uid: &str) -> Option<Arc<Pod>> {
        self.pods.get(uid).map(|e| e.pod.clone())
    }

    pub fn get_pod_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        let uid = self
            .pod_names
            .get(&(namespace.into(), name.into()))?
            .clone();
        self.get_pod(&uid)
    }

    pub fn get_node(&self, name: &str) -> Option<Arc<Node>> {
        self.nodes.get(name).and_then(|n| n.node.clone())
    }

    /// A consistent view of every node and PDB.
    pub fn snapshot(&self) -> Snapshot {
        let _w = self.writer.lock();
        let mut nodes: Vec<Arc<NodeInfo>> = self
            .nodes
            .iter()
            .filter(|e| e.node.is_some())
            .map(|e| e.value().clone())
            .collect();
        let pdbs = self.pdbs.iter().map(|e| e.value().clone()).collect();
        let revision = self.revision();
        drop(_w);
        nodes.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Snapshot {
            nodes,
            pdbs,
            revision,
        }
    }

    /// Every current nomination, sorted by node then pod.
    pub fn nominations(&self) -> Vec<Nomination> {
        let mut out: Vec<Nomination> = self
            .nodes
            .iter()
            .flat_map(|e| {
                let node = e.name.clone();
                e.nominated
                    .iter()
                    .map(|p| Nomination {
                        pod: p.pod_ref(),
                        priority: p.priority,
                        node: node.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_by(|a, b| (&a.node, &a.pod).cmp(&(&b.node, &b.pod)));
        out
    }

    pub fn counts(&self) -> CacheCounts {
        CacheCounts {
            nodes: self.node_count.load(Ordering::Relaxed) as usize,
            pods: self.pods.len(),
            nominated_pods: self
                .pods
                .iter()
                .filter(|e| matches!(e.place, Place::Nominated(_)))
                .count(),
            pdbs: self.pdbs.len(),
        }
    }

    /// Applies a preemption decision atomically: the preemptor becomes a pending pod
    /// nominated to the node, each victim is marked terminating by preemption (it keeps its
    /// resources until deleted), and the lower-priority nominations on the node are
    /// cleared. Fails without changing anything when the node changed since the decision.
    pub fn commit(&self, commit: &Commit) -> Result<(Vec<CommitChange>, u64), CommitConflict> {
        let _w = self.writer.lock();
        let current = self.nodes.get(&commit.node).map(|n| n.generation);
        if current != Some(commit.node_generation) {
            return Err(CommitConflict {
                node: commit.node.clone(),
            });
        }
        let mut changes = Vec::new();
        for victim in &commit.victims {
            let Some(entry) = self.pods.get(&victim.uid).map(|e| e.clone()) else {
                continue;
            };
            if entry.pod.terminating {
                continue;
            }
            let mut pod = (*entry.pod).clone();
            pod.terminating = true;
            pod.conditions
                .retain(|c| &*c.type_ != crate::model::DISRUPTION_TARGET);
            pod.conditions.insert(
                0,
                crate::model::PodCondition {
                    type_: crate::model::DISRUPTION_TARGET.into(),
                    status: "True".into(),
                    reason: crate::model::PREEMPTION_BY_SCHEDULER.into(),
                },
            );
            let node = pod.node_name.clone().unwrap_or_default();
            if self.put_pod(pod).is_ok() {
                changes.push(CommitChange::VictimMarked {
                    pod: victim.clone(),
                    node,
                });
            }
        }
        for cleared in &commit.nominations_to_clear {
            let Some(entry) = self.pods.get(&cleared.uid).map(|e| e.clone()) else {
                continue;
            };
            let mut pod = (*entry.pod).clone();
            pod.nominated_node_name = None;
            if self.put_pod(pod).is_ok() {
                changes.push(CommitChange::NominationCleared {
                    pod: cleared.clone(),
                    node: commit.node.clone(),
                });
            }
        }
        let mut preemptor = commit.preemptor.clone();
        preemptor.node_name = None;
        preemptor.nominated_node_name = Some(commit.node.clone());
        if let Some(held) = self.pods.get(&preemptor.uid) {
            preemptor.resource_version = held.pod.resource_version;
        }
        let nomination = Nomination {
            pod: preemptor.pod_ref(),
            priority: preemptor.priority,
            node: commit.node.clone(),
        };
        if self.put_pod(preemptor).is_ok() {
            changes.push(CommitChange::Nominated(nomination));
        }
        Ok((changes, self.revision()))
    }

    /// Clears the preemptor's own nomination (a NO_CANDIDATE outcome). Returns the node it
    /// was nominated to, if it was.
    pub fn clear_nomination(&self, uid: &str) -> Option<(PodRef, Str)> {
        let _w = self.writer.lock();
        let entry = self.pods.get(uid).map(|e| e.clone())?;
        let Place::Nominated(node) = entry.place.clone() else {
            return None;
        };
        let mut pod = (*entry.pod).clone();
        pod.nominated_node_name = None;
        self.put_pod(pod).ok()?;
        Some((entry.pod.pod_ref(), node))
    }
}
