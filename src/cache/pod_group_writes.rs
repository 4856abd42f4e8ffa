//! PodGroup and Workload writes, and the membership of groups (bound and pending pods) as
//! pods come, move and go (every pod write path calls
//! [`ClusterCache::follow_membership`]).

use triomphe::Arc;

use crate::model::priority::{PriorityClasses, UnknownPriorityClass};
use crate::model::{Pod, PodGroup, Str, Workload};

use super::{CacheError, ClusterCache, PodGroupIndex, Table, UpdateOutcome, is_stale};

/// What a pod counts as in [`PodGroupIndex`]: a member of its group, bound to its node
/// or pending.
fn membership(pod: Option<&Pod>) -> Option<(&Str, &Str, Option<&Str>, &str)> {
    let pod = pod?;
    let group = pod.details.scheduling_group.as_ref()?;
    Some((&pod.namespace, group, pod.node_name.as_ref(), pod.uid()))
}

impl ClusterCache {
    /// Keeps the groups' bound and pending members current as a pod goes from `before` to `after`
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
            let uid = Str::from(uid);
            match node {
                Some(node) => index.remove_bound(namespace, group, node, &uid),
                None => index.remove_pending(namespace, group, &uid),
            }
        }
        if let Some((namespace, group, node, uid)) = is {
            let uid = Str::from(uid);
            match node {
                Some(node) => index.add_bound(namespace, group, node, &uid),
                None => index.add_pending(namespace, group, &uid),
            }
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
    pub fn delete_workload(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<UpdateOutcome, CacheError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::priority::PriorityClass;
    use crate::model::{DisruptionMode, PodPhase, SchedulingPolicy};

    fn group(name: &str, resource_version: u64, priority: Option<i32>, class: &str) -> PodGroup {
        PodGroup {
            namespace: "ml".into(),
            name: name.into(),
            uid: format!("uid-{name}").into(),
            resource_version,
            creation_time: None,
            policy: SchedulingPolicy::Gang { min_count: 2 },
            disruption_mode: DisruptionMode::All,
            priority_class_name: (!class.is_empty()).then(|| class.into()),
            priority: priority.unwrap_or(0),
            priority_unset: priority.is_none(),
            preemption_policy: None,
            parent: None,
            workload: None,
        }
    }

    fn class(name: &str, value: i32, global_default: bool) -> PriorityClass {
        PriorityClass {
            name: name.into(),
            uid: name.into(),
            resource_version: 0,
            value,
            global_default,
            preemption_policy: None,
        }
    }

    fn member(name: &str, group: Option<&str>, node: Option<&str>) -> Pod {
        let mut pod = Pod::new("ml", name, &format!("uid-{name}"));
        pod.node_name = node.map(Str::from);
        pod.details_mut().scheduling_group = group.map(Str::from);
        pod
    }

    fn members(cache: &ClusterCache, group: &str) -> Vec<String> {
        cache
            .snapshot()
            .pod_groups
            .bound_members("ml", group)
            .map(|m| format!("{}/{}", m.node, m.uid))
            .collect()
    }

    #[test]
    fn bound_members_follow_binds_moves_group_changes_and_deletes() {
        let cache = ClusterCache::new();
        cache.upsert_pod(member("a", Some("g"), None)).unwrap();
        assert!(
            members(&cache, "g").is_empty(),
            "pending pods are not bound members"
        );
        cache
            .upsert_pod(member("a", Some("g"), Some("n1")))
            .unwrap();
        // One batch, as Sync and the watches write.
        let results = cache.upsert_pods([
            member("b", Some("g"), Some("n2")),
            member("c", None, Some("n1")),
            member("d", Some("other"), Some("n1")),
        ]);
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(members(&cache, "g"), ["n1/uid-a", "n2/uid-b"]);
        // A move.
        cache
            .upsert_pod(member("a", Some("g"), Some("n3")))
            .unwrap();
        assert_eq!(members(&cache, "g"), ["n2/uid-b", "n3/uid-a"]);
        // A change of group.
        cache
            .upsert_pod(member("b", Some("other"), Some("n2")))
            .unwrap();
        assert_eq!(members(&cache, "g"), ["n3/uid-a"]);
        assert_eq!(members(&cache, "other"), ["n1/uid-d", "n2/uid-b"]);
        // Leaving a group, finishing and being deleted.
        cache.upsert_pod(member("d", None, Some("n1"))).unwrap();
        let mut done = member("b", Some("other"), Some("n2"));
        done.phase = PodPhase::Succeeded;
        cache.upsert_pod(done).unwrap();
        assert!(members(&cache, "other").is_empty());
        let before = cache.snapshot();
        cache.delete_pod("ml", "a", None).unwrap();
        assert!(members(&cache, "g").is_empty());
        assert_eq!(
            before.pod_groups.bound_members("ml", "g").count(),
            1,
            "an earlier snapshot keeps what it saw"
        );
        // A stale write changes nothing.
        let mut newer = member("e", Some("g"), Some("n1"));
        newer.resource_version = 5;
        cache.upsert_pod(newer).unwrap();
        let mut older = member("e", Some("g"), Some("n2"));
        older.resource_version = 4;
        assert!(!cache.upsert_pod(older).unwrap().applied);
        assert_eq!(members(&cache, "g"), ["n1/uid-e"]);
    }

    #[test]
    fn pending_members_follow_arrivals_binds_group_changes_and_deletes() {
        let cache = ClusterCache::new();
        let pending = |group: &str| -> Vec<String> {
            let snapshot = cache.snapshot();
            snapshot
                .pod_groups
                .pending_members("ml", group)
                .map(|uid| uid.to_string())
                .collect()
        };
        let results = cache.upsert_pods([
            member("a", Some("g"), None),
            member("b", Some("g"), None),
            member("c", None, None),
            member("d", Some("g"), Some("n1")),
        ]);
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(pending("g"), ["uid-a", "uid-b"]);
        let mut nominated = member("b", Some("g"), None);
        nominated.nominated_node_name = Some("n2".into());
        cache.upsert_pod(nominated).unwrap();
        assert_eq!(
            pending("g"),
            ["uid-a", "uid-b"],
            "a nomination keeps it pending"
        );
        cache
            .upsert_pod(member("a", Some("g"), Some("n1")))
            .unwrap();
        assert_eq!(pending("g"), ["uid-b"], "bound, it is no longer pending");
        cache.upsert_pod(member("b", Some("other"), None)).unwrap();
        assert!(pending("g").is_empty());
        assert_eq!(pending("other"), ["uid-b"]);
        cache.delete_pod("ml", "b", None).unwrap();
        assert!(pending("other").is_empty());
        let mut failed = member("e", Some("g"), None);
        cache.upsert_pod(failed.clone()).unwrap();
        failed.phase = PodPhase::Failed;
        cache.upsert_pod(failed).unwrap();
        assert!(pending("g").is_empty(), "a finished pod leaves");
    }

    #[test]
    fn group_and_workload_writes_move_the_revision_and_stale_ones_do_not() {
        let cache = ClusterCache::new();
        let (outcome, unknown) = cache.upsert_pod_group(group("g", 5, Some(10), ""));
        assert!(outcome.applied && unknown.is_none());
        assert_eq!(outcome.revision, 1);
        let (stale, _) = cache.upsert_pod_group(group("g", 4, Some(20), ""));
        assert!(!stale.applied);
        assert_eq!((stale.resource_version, stale.revision), (5, 1));
        assert_eq!(
            cache
                .pod_groups()
                .group(&"ml".into(), &"g".into())
                .unwrap()
                .priority,
            10
        );
        let workload = Workload {
            namespace: "ml".into(),
            name: "w".into(),
            uid: "w".into(),
            resource_version: 3,
            pod_group_templates: vec!["workers".into()],
        };
        assert_eq!(cache.upsert_workload(workload.clone()).revision, 2);
        let older = Workload {
            resource_version: 2,
            ..workload
        };
        assert!(!cache.upsert_workload(older).applied);
        let counts = cache.counts();
        assert_eq!((counts.pod_groups, counts.workloads), (1, 1));
        assert_eq!(cache.delete_pod_group("ml", "g").unwrap().revision, 3);
        assert_eq!(cache.delete_workload("ml", "w").unwrap().revision, 4);
        assert!(matches!(
            cache.delete_pod_group("ml", "g"),
            Err(CacheError::NotFound {
                kind: "podgroup",
                ..
            })
        ));
        assert!(matches!(
            cache.delete_workload("ml", "w"),
            Err(CacheError::NotFound {
                kind: "workload",
                ..
            })
        ));
        assert_eq!(cache.counts().pod_groups, 0);
    }

    #[test]
    fn a_group_without_priority_takes_its_class_and_follows_it() {
        let cache = ClusterCache::new();
        let priority = |name: &str| {
            cache
                .pod_groups()
                .group(&"ml".into(), &name.into())
                .unwrap()
                .priority
        };
        let (_, unknown) = cache.upsert_pod_group(group("named", 1, None, "training"));
        assert_eq!(
            unknown.map(|u| u.to_string()),
            Some("no PriorityClass with name \"training\" was found".into())
        );
        assert_eq!(priority("named"), 0);
        cache.upsert_pod_group(group("defaulted", 1, None, ""));
        cache.upsert_pod_group(group("explicit", 1, Some(7), "training"));
        cache.upsert_pod_group(group("built-in", 1, None, "system-node-critical"));
        assert_eq!(priority("built-in"), 2_000_001_000);
        cache.upsert_priority_class(class("training", 1000, false));
        cache.upsert_priority_class(class("everyday", 50, true));
        assert_eq!(priority("named"), 1000);
        assert_eq!(priority("defaulted"), 50);
        assert_eq!(priority("explicit"), 7, "a set priority is kept");
        cache.upsert_priority_class(class("training", 2000, false));
        assert_eq!(priority("named"), 2000);
        cache.delete_priority_class("everyday", None).unwrap();
        assert_eq!(priority("defaulted"), 0);
        // A group arriving after its class takes it at once.
        cache.upsert_pod_group(group("late", 1, None, "training"));
        assert_eq!(priority("late"), 2000);
    }
}
