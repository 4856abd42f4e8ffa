//! PodGroup and Workload writes, and the bound membership of groups as pods come, move
//! and go (every pod write path calls [`ClusterCache::follow_membership`]).

use triomphe::Arc;

use crate::model::priority::{PriorityClasses, UnknownPriorityClass};
use crate::model::{Pod, PodGroup, Str, Workload};

use super::{CacheError, ClusterCache, PodGroupIndex, Table, UpdateOutcome, is_stale};

/// What a pod counts as in [`PodGroupIndex`]: a bound member of its group.
fn membership(pod: Option<&Pod>) -> Option<(&Str, &Str, &Str, &str)> {
    let pod = pod?;
    let group = pod.details.scheduling_group.as_ref()?;
    let node = pod.node_name.as_ref()?;
    Some((&pod.namespace, group, node, pod.uid()))
}

impl ClusterCache {
    /// Keeps the groups' bound members current as a pod goes from `before` to `after`
    /// (`None`: not held). Called under the table lock, so snapshots see both together.
    pub(super) fn follow_membership(
        &self,
        _table: &Table<'_>,
        before: Option<&Pod>,
        after: Option<&Pod>,
    ) {
        let (was, is) = (membership(before), membership(after));
        if was == is {
            return;
        }
        let mut index = self.pod_groups.write();
        if let Some((namespace, group, node, uid)) = was {
            index.remove_bound(namespace, group, node, &Str::from(uid));
        }
        if let Some((namespace, group, node, uid)) = is {
            index.add_bound(namespace, group, node, &Str::from(uid));
        }
    }

    /// Adds or replaces a PodGroup (unless the one held is newer); a group whose
    /// `spec.priority` is unset takes its class's priority (see [`PodGroup::admit`]),
    /// 0 when the class does not exist (the error says which).
    pub fn upsert_pod_group(
        &self,
        mut group: PodGroup,
    ) -> (UpdateOutcome, Option<UnknownPriorityClass>) {
        let table = self.table.lock();
        let mut index = self.pod_groups.write();
        if let Some(held) = index.group(&group.namespace, &group.name)
            && is_stale(group.resource_version, held.resource_version)
        {
            let outcome = UpdateOutcome {
                applied: false,
                resource_version: held.resource_version,
                revision: self.revision(),
            };
            return (outcome, None);
        }
        let unknown = admit_group(&mut group, &self.priority_classes.read());
        let resource_version = group.resource_version;
        index.upsert_group(Arc::new(group));
        let outcome = UpdateOutcome {
            applied: true,
            resource_version,
            revision: self.bump(&table),
        };
        (outcome, unknown)
    }

    /// Deletes a PodGroup by namespace/name; its members keep naming it.
    pub fn delete_pod_group(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<UpdateOutcome, CacheError> {
        let table = self.table.lock();
        self.pod_groups
            .write()
            .delete_group(namespace, name)
            .ok_or_else(|| CacheError::NotFound {
                kind: "podgroup",
                name: format!("{namespace}/{name}"),
            })?;
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(&table),
        })
    }

    /// Adds or replaces a Workload (unless the one held is newer).
    pub fn upsert_workload(&self, workload: Workload) -> UpdateOutcome {
        let table = self.table.lock();
        let mut index = self.pod_groups.write();
        if let Some(held) = index.workload(&workload.namespace, &workload.name)
            && is_stale(workload.resource_version, held.resource_version)
        {
            return UpdateOutcome {
                applied: false,
                resource_version: held.resource_version,
                revision: self.revision(),
            };
        }
        let resource_version = workload.resource_version;
        index.upsert_workload(Arc::new(workload));
        UpdateOutcome {
            applied: true,
            resource_version,
            revision: self.bump(&table),
        }
    }

    /// Deletes a Workload by namespace/name.
    pub fn delete_workload(&self, namespace: &str, name: &str) -> Result<UpdateOutcome, CacheError> {
        let table = self.table.lock();
        self.pod_groups
            .write()
            .delete_workload(namespace, name)
            .ok_or_else(|| CacheError::NotFound {
                kind: "workload",
                name: format!("{namespace}/{name}"),
            })?;
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(&table),
        })
    }

    /// The PodGroups and Workloads held, with each group's bound members.
    pub fn pod_groups(&self) -> PodGroupIndex {
        self.pod_groups.read().clone()
    }

    /// Gives the groups that take their priority from their class the one `classes` give
    /// now: called under the table lock with every change of the classes.
    pub(super) fn readmit_groups(&self, _table: &Table<'_>, classes: &PriorityClasses) {
        let mut index = self.pod_groups.write();
        let stale: Vec<Arc<PodGroup>> = index
            .groups()
            .filter(|g| g.priority_unset)
            .cloned()
            .collect();
        for held in stale {
            let mut group = PodGroup::clone(&held);
            admit_group(&mut group, classes);
            if group.priority != held.priority {
                index.upsert_group(Arc::new(group));
            }
        }
    }
}

/// [`PodGroup::admit`]; a group naming a class that does not exist gets priority 0, as a
/// held pod does.
fn admit_group(group: &mut PodGroup, classes: &PriorityClasses) -> Option<UnknownPriorityClass> {
    group.admit(classes).err().inspect(|_| group.priority = 0)
}
