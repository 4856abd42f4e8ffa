//! The cluster cache: a sharded concurrent store of nodes with their pods, pending
//! nominated pods and PodDisruptionBudgets, and the PodGroups and Workloads.
//!
//! Readers never block writers for long: every node's state is an immutable
//! `Arc<NodeInfo>` replaced copy-on-write (the kube-rs reflector pattern), held in a
//! persistent vector, so a [`Snapshot`] is an O(1) clone of that vector. Writers are
//! serialized by one mutex so that changes touching several maps (a pod moving between
//! nodes) are atomic for other writers and for snapshots. Pods are looked up by uid or
//! name in sharded hash sets (`pod_index`), PDBs in a dashmap, without taking the mutex.

use std::sync::atomic::{AtomicU64, Ordering};
use triomphe::Arc;

use dashmap::DashMap;
use parking_lot::{Mutex, MutexGuard};

use crate::model::named::{ByName, Named};
use crate::model::namespace::{Namespace, Namespaces};
use crate::model::priority::{PriorityClass, PriorityClasses};
use crate::model::{Node, Pod, PodDisruptionBudget, Str};

mod commit;
mod edit;
mod groups;
mod interned;
mod labels;
mod node_info;
mod pod_group_writes;
mod pod_groups;
mod pod_index;
mod pods;
mod shared;
mod snapshot;
mod summary;
mod table;

pub use commit::{Commit, CommitChange, CommitConflict, Nomination};
pub use groups::{GROUP_NODES, NodeGroup};
pub use labels::{LabelId, LabelIds};
pub use node_info::{LabelCount, LabelCounts, NodeInfo, PriorityLevel};
pub use pod_groups::{BoundMember, NamedKey, PodGroupIndex};
pub use snapshot::Snapshot;
pub(crate) use snapshot::prefetch;
pub use summary::{
    HardTaints, INLINE_LEVELS, LevelDigest, LevelTotals, MAX_TAINT_SETS, NO_HARD_TAINTS,
    NodeSummary, READ_NODE,
};
use table::NodeTable;

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

/// A pod upsert's outcome, and the pod as held before and after it when nominated (what
/// the nominations log is told).
#[derive(Clone, Debug, PartialEq)]
pub struct PodUpsert {
    /// What the upsert did.
    pub outcome: UpdateOutcome,
    /// The pod held before, if it was nominated ([`Pod::nomination`]).
    pub nominated_before: Option<Arc<Pod>>,
    /// The pod held after, if it is nominated; the one before when the upsert was stale.
    pub nominated_after: Option<Arc<Pod>>,
}

/// `pod`, if it is nominated.
fn nominated(pod: Option<Arc<Pod>>) -> Option<Arc<Pod>> {
    pod.filter(|p| p.nomination().is_some())
}

/// Why the cache refused a change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    /// No object of this kind and name is held.
    #[error("{kind} {name} not found")]
    NotFound {
        /// The object's kind.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
    /// Another pod holds this uid.
    #[error("pod uid {uid} is already used by {existing}")]
    UidConflict {
        /// The uid.
        uid: String,
        /// The pod that holds it.
        existing: String,
    },
    /// A pod of this name is held under another uid.
    #[error("pod {name} already exists with uid {existing}")]
    NameConflict {
        /// The pod's name.
        name: String,
        /// The uid held.
        existing: String,
    },
}

/// Counts for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Nodes.
    pub nodes: usize,
    /// Pods, bound and pending.
    pub pods: usize,
    /// Pending pods nominated to a node.
    pub nominated_pods: usize,
    /// PodDisruptionBudgets.
    pub pdbs: usize,
    /// PriorityClasses.
    pub priority_classes: usize,
    /// Namespaces.
    pub namespaces: usize,
    /// PodGroups.
    pub pod_groups: usize,
    /// Workloads.
    pub workloads: usize,
}

/// The in-memory cluster: nodes with their pods, PDBs, PriorityClasses and Namespaces.
#[derive(Default)]
pub struct ClusterCache {
    /// The writer lock and the node entries it guards.
    table: Mutex<NodeTable>,
    /// Held pods by uid and by namespace/name. Where a pod is placed follows from the pod
    /// itself ([`table::Place::of`]), so nothing else is stored with it.
    pods: pod_index::PodIndex,
    pdbs: DashMap<(Str, Str), Arc<PodDisruptionBudget>, ahash::RandomState>,
    /// Few and rarely changed: replaced whole on a change, read as a cheap clone.
    priority_classes: parking_lot::RwLock<Arc<PriorityClasses>>,
    namespaces: parking_lot::RwLock<Arc<Namespaces>>,
    /// PodGroups, Workloads and groups' bound members; persistent maps, cloned per snapshot.
    pod_groups: parking_lot::RwLock<PodGroupIndex>,
    revision: AtomicU64,
}

type Table<'a> = MutexGuard<'a, NodeTable>;

/// Pods a batch upserts under one locking of the pod indexes (see
/// [`pod_index::LockedIndex`]): their lookups fit the processor's first-level cache, and
/// readers of the indexes wait ~0.1 ms at most.
const INDEX_RUN: usize = 64;

/// `rv == 0` means the client does not version its objects: always applied.
fn is_stale(incoming: u64, held: u64) -> bool {
    incoming != 0 && incoming < held
}

impl ClusterCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The cache's revision: it grows with every change.
    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }

    /// Moves the revision on. Only the holder of the table lock (`_held`) writes it, so a
    /// load and a store do: a locked add would first wait for every store before it to
    /// land, and a bulk load's applier has cache-missing stores in flight at every pod.
    fn bump(&self, _held: &Table<'_>) -> u64 {
        let next = self.revision.load(Ordering::Relaxed) + 1;
        self.revision.store(next, Ordering::Release);
        next
    }

    /// Adds or replaces a node.
    pub fn upsert_node(&self, mut node: Node) -> UpdateOutcome {
        let mut table = self.table.lock();
        let name = node.name.clone();
        let held = table
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
        table.share_labels(&mut node);
        table.edit(&name, |info| info.node = Some(Arc::new(node)));
        UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(&table),
        }
    }

    /// Deletes node `name`.
    pub fn delete_node(&self, name: &str) -> Result<UpdateOutcome, CacheError> {
        let mut table = self.table.lock();
        let key: Str = name.into();
        if table.get(&key).is_none_or(|n| n.node.is_none()) {
            return Err(CacheError::NotFound {
                kind: "node",
                name: name.to_string(),
            });
        }
        // Pods stay, as in the scheduler cache: they come back with the node.
        table.edit(&key, |info| info.node = None);
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(&table),
        })
    }

    fn refresh_pdb_list(&self, table: &mut Table<'_>) {
        let mut list: Vec<Arc<PodDisruptionBudget>> =
            self.pdbs.iter().map(|e| e.value().clone()).collect();
        // Stable order so the per-node budget walk is reproducible.
        list.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        table.pdbs = Arc::new(list);
    }

    /// Adds or replaces a PodDisruptionBudget.
    pub fn upsert_pdb(&self, pdb: PodDisruptionBudget) -> UpdateOutcome {
        let mut table = self.table.lock();
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
        self.refresh_pdb_list(&mut table);
        UpdateOutcome {
            applied: true,
            resource_version: rv,
            revision: self.bump(&table),
        }
    }

    /// Deletes a PodDisruptionBudget.
    pub fn delete_pdb(&self, namespace: &str, name: &str) -> Result<UpdateOutcome, CacheError> {
        let mut table = self.table.lock();
        let key: (Str, Str) = (namespace.into(), name.into());
        self.pdbs.remove(&key).ok_or_else(|| CacheError::NotFound {
            kind: "poddisruptionbudget",
            name: format!("{namespace}/{name}"),
        })?;
        self.refresh_pdb_list(&mut table);
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(&table),
        })
    }

    /// Adds or replaces a PriorityClass.
    /// Groups that take their priority from their class follow it.
    pub fn upsert_priority_class(&self, class: PriorityClass) -> UpdateOutcome {
        self.upsert_named(&self.priority_classes, class, |table, classes| {
            self.readmit_groups(table, classes)
        })
    }

    /// Deletes a PriorityClass by name (and uid when given, which must then match);
    /// groups that take their priority from their class follow it.
    pub fn delete_priority_class(
        &self,
        name: &str,
        uid: Option<&str>,
    ) -> Result<UpdateOutcome, CacheError> {
        self.delete_named(
            &self.priority_classes,
            "priorityclass",
            name,
            uid,
            |table, classes| self.readmit_groups(table, classes),
        )
    }

    /// Every PriorityClass held.
    pub fn priority_classes(&self) -> Arc<PriorityClasses> {
        self.priority_classes.read().clone()
    }

    /// Adds or replaces a Namespace.
    pub fn upsert_namespace(&self, namespace: Namespace) -> UpdateOutcome {
        self.upsert_named(&self.namespaces, namespace, |_, _| {})
    }

    /// Deletes a Namespace by name (and uid when given, which must then match); its pods
    /// stay until deleted.
    pub fn delete_namespace(
        &self,
        name: &str,
        uid: Option<&str>,
    ) -> Result<UpdateOutcome, CacheError> {
        self.delete_named(&self.namespaces, "namespace", name, uid, |_, _| {})
    }

    /// Adds or replaces an object of a by-name kind (unless the one held is newer), then
    /// hands the objects held to `changed` under the table lock.
    fn upsert_named<T: Named + Clone>(
        &self,
        store: &parking_lot::RwLock<Arc<ByName<T>>>,
        object: T,
        changed: impl FnOnce(&Table<'_>, &ByName<T>),
    ) -> UpdateOutcome {
        let table = self.table.lock();
        let mut held = store.write();
        if let Some(current) = held.get(object.name())
            && is_stale(object.resource_version(), current.resource_version())
        {
            return UpdateOutcome {
                applied: false,
                resource_version: current.resource_version(),
                revision: self.revision(),
            };
        }
        let resource_version = object.resource_version();
        Arc::make_mut(&mut held).insert(object);
        changed(&table, &held);
        UpdateOutcome {
            applied: true,
            resource_version,
            revision: self.bump(&table),
        }
    }

    /// Deletes an object of a by-name kind by name (and uid when given, which must then
    /// match), then hands the objects held to `changed` under the table lock.
    fn delete_named<T: Named + Clone>(
        &self,
        store: &parking_lot::RwLock<Arc<ByName<T>>>,
        kind: &'static str,
        name: &str,
        uid: Option<&str>,
        changed: impl FnOnce(&Table<'_>, &ByName<T>),
    ) -> Result<UpdateOutcome, CacheError> {
        let table = self.table.lock();
        let mut held = store.write();
        let held_uid = held.get(name).map(|object| object.uid().clone());
        match held_uid {
            Some(current) if uid.is_none_or(|u| u.is_empty() || *u == *current) => {
                Arc::make_mut(&mut held).remove(name);
                changed(&table, &held);
                Ok(UpdateOutcome {
                    applied: true,
                    resource_version: 0,
                    revision: self.bump(&table),
                })
            }
            _ => Err(CacheError::NotFound {
                kind,
                name: name.to_string(),
            }),
        }
    }

    /// Every Namespace held.
    pub fn namespaces(&self) -> Arc<Namespaces> {
        self.namespaces.read().clone()
    }

    /// Every held pod, in no particular order.
    pub fn pods(&self) -> Vec<Arc<Pod>> {
        self.pods.all()
    }

    /// The names of every node held.
    pub fn node_names(&self) -> Vec<Str> {
        let table = self.table.lock();
        table
            .all()
            .filter(|info| info.node.is_some())
            .map(|info| info.name.clone())
            .collect()
    }

    /// The namespace and name of every PodDisruptionBudget held.
    pub fn pdb_keys(&self) -> Vec<(Str, Str)> {
        self.pdbs.iter().map(|entry| entry.key().clone()).collect()
    }

    /// The pod with this uid.
    pub fn get_pod(&self, uid: &str) -> Option<Arc<Pod>> {
        self.pods.get(uid)
    }

    /// Gives a preemptor sent without a nomination the one the cache holds for it, as
    /// upstream re-reads the pod before preempting.
    pub fn fill_held_nomination(&self, preemptor: &mut Pod) {
        if preemptor
            .nominated_node_name
            .as_ref()
            .is_none_or(|n| n.is_empty())
        {
            preemptor.nominated_node_name = self
                .get_pod(preemptor.uid())
                .and_then(|held| held.nomination().cloned());
        }
    }

    /// The pod with this namespace and name.
    pub fn get_pod_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods.get_by_name(namespace, name)
    }

    /// Node `name`, once it arrived.
    pub fn get_node(&self, name: &str) -> Option<Arc<Node>> {
        self.table.lock().get(name).and_then(|n| n.node.clone())
    }

    /// A consistent view of every node and PDB, in O(1).
    pub fn snapshot(&self) -> Snapshot {
        let mut table = self.table.lock();
        table.refresh_groups();
        Snapshot {
            nodes: table.nodes.clone(),
            index: table.index.clone(),
            pdbs: table.pdbs.clone(),
            revision: self.revision(),
            anti_affinity_nodes: table.anti_affinity_nodes,
            shared_label_keys: table.shared_label_keys.clone(),
            labels: table.labels.read().clone(),
            summaries: table.summaries.clone(),
            groups: table.groups.clone(),
            taint_sets: table.taint_sets.clone(),
            namespaces: self.namespaces.read().clone(),
            pod_groups: self.pod_groups.read().clone(),
        }
    }

    /// Every current nomination, sorted by node then pod.
    pub fn nominations(&self) -> Vec<Nomination> {
        let table = self.table.lock();
        let mut out: Vec<Nomination> = table
            .all()
            .flat_map(|info| {
                info.nominated.iter().map(|p| Nomination {
                    pod: p.pod_ref(),
                    priority: p.priority,
                    node: info.name.clone(),
                })
            })
            .collect();
        drop(table);
        out.sort_by(|a, b| (&a.node, &a.pod).cmp(&(&b.node, &b.pod)));
        out
    }

    /// How many objects of each kind are held.
    pub fn counts(&self) -> CacheCounts {
        let table = self.table.lock();
        let (pod_groups, workloads) = self.pod_groups.read().counts();
        CacheCounts {
            pod_groups,
            workloads,
            nodes: table.nodes.len(),
            pods: self.pods.len(),
            nominated_pods: table.all().map(|n| n.nominated.len()).sum(),
            pdbs: self.pdbs.len(),
            priority_classes: self.priority_classes.read().len(),
            namespaces: self.namespaces.read().len(),
        }
    }
}

#[cfg(test)]
mod tests;
