//! PodGroups and Workloads by (namespace, name), with each group's bound members: what
//! group preemption reads. Persistent maps, so a snapshot takes them in O(1).

use triomphe::Arc;

use crate::model::{PodGroup, Str, Workload};

/// A (namespace, name) key.
pub type NamedKey = (Str, Str);

/// A persistent map by (namespace, name), hashed with ahash: victim units look a group up
/// for each of thousands of pods.
type NamedMap<V> =
    imbl::GenericHashMap<NamedKey, V, ahash::RandomState, imbl::shared_ptr::DefaultSharedPtr>;

/// A bound member of a group: the node it runs on and its uid.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BoundMember {
    /// `spec.nodeName`.
    pub node: Str,
    /// `metadata.uid`.
    pub uid: Str,
}

/// PodGroups and Workloads by (namespace, name), and the bound pods naming each group.
/// A pod may name a group that does not exist (yet): its membership is kept all the same,
/// and counts once the group arrives.
#[derive(Clone, Debug, Default)]
pub struct PodGroupIndex {
    groups: NamedMap<Arc<PodGroup>>,
    workloads: NamedMap<Arc<Workload>>,
    bound: NamedMap<imbl::OrdSet<BoundMember>>,
    /// The uids of the pending pods naming each group.
    pending: NamedMap<imbl::OrdSet<Str>>,
}

impl PodGroupIndex {
    /// The PodGroup `namespace/name`.
    pub fn group(&self, namespace: &Str, name: &Str) -> Option<&Arc<PodGroup>> {
        self.groups.get(&(namespace.clone(), name.clone()))
    }

    /// The Workload `namespace/name`.
    pub fn workload(&self, namespace: &Str, name: &Str) -> Option<&Arc<Workload>> {
        self.workloads.get(&(namespace.clone(), name.clone()))
    }

    /// Every PodGroup, in no particular order.
    pub fn groups(&self) -> impl Iterator<Item = &Arc<PodGroup>> {
        self.groups.values()
    }

    /// Every Workload, in no particular order.
    pub fn workloads(&self) -> impl Iterator<Item = &Arc<Workload>> {
        self.workloads.values()
    }

    /// The bound pods naming group `namespace/name`, in (node, uid) order.
    pub fn bound_members(&self, namespace: &str, name: &str) -> impl Iterator<Item = &BoundMember> {
        self.bound.get(&key(namespace, name)).into_iter().flatten()
    }

    /// The uids of the pending pods naming group `namespace/name`, in order.
    pub fn pending_members(&self, namespace: &str, name: &str) -> impl Iterator<Item = &Str> {
        self.pending
            .get(&key(namespace, name))
            .into_iter()
            .flatten()
    }

    /// How many PodGroups and Workloads are held.
    pub fn counts(&self) -> (usize, usize) {
        (self.groups.len(), self.workloads.len())
    }

    /// Inserts or replaces a PodGroup.
    pub fn upsert_group(&mut self, group: Arc<PodGroup>) {
        self.groups
            .insert((group.namespace.clone(), group.name.clone()), group);
    }

    /// Removes a PodGroup; its members' membership stays (they still name it).
    pub fn delete_group(&mut self, namespace: &str, name: &str) -> Option<Arc<PodGroup>> {
        self.groups.remove(&key(namespace, name))
    }

    /// Inserts or replaces a Workload.
    pub fn upsert_workload(&mut self, workload: Arc<Workload>) {
        self.workloads.insert(
            (workload.namespace.clone(), workload.name.clone()),
            workload,
        );
    }

    /// Removes a Workload.
    pub fn delete_workload(&mut self, namespace: &str, name: &str) -> Option<Arc<Workload>> {
        self.workloads.remove(&key(namespace, name))
    }

    /// Records that the pod `uid` on `node` names group `namespace/group`.
    pub fn add_bound(&mut self, namespace: &Str, group: &Str, node: &Str, uid: &Str) {
        self.bound
            .entry((namespace.clone(), group.clone()))
            .or_default()
            .insert(BoundMember {
                node: node.clone(),
                uid: uid.clone(),
            });
    }

    /// Records that the pending pod `uid` names group `namespace/group`.
    pub fn add_pending(&mut self, namespace: &Str, group: &Str, uid: &Str) {
        self.pending
            .entry((namespace.clone(), group.clone()))
            .or_default()
            .insert(uid.clone());
    }

    /// Forgets what [`PodGroupIndex::add_pending`] recorded.
    pub fn remove_pending(&mut self, namespace: &Str, group: &Str, uid: &Str) {
        let group_key = (namespace.clone(), group.clone());
        let Some(members) = self.pending.get_mut(&group_key) else {
            return;
        };
        members.remove(uid);
        if members.is_empty() {
            self.pending.remove(&group_key);
        }
    }

    /// Forgets what [`PodGroupIndex::add_bound`] recorded.
    pub fn remove_bound(&mut self, namespace: &Str, group: &Str, node: &Str, uid: &Str) {
        let group_key = (namespace.clone(), group.clone());
        let Some(members) = self.bound.get_mut(&group_key) else {
            return;
        };
        members.remove(&BoundMember {
            node: node.clone(),
            uid: uid.clone(),
        });
        if members.is_empty() {
            self.bound.remove(&group_key);
        }
    }
}

fn key(namespace: &str, name: &str) -> NamedKey {
    (Str::from(namespace), Str::from(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DisruptionMode, SchedulingPolicy};

    fn group(name: &str) -> Arc<PodGroup> {
        Arc::new(PodGroup {
            namespace: "ns".into(),
            name: name.into(),
            uid: format!("uid-{name}").into(),
            resource_version: 1,
            creation_time: None,
            policy: SchedulingPolicy::Gang { min_count: 2 },
            disruption_mode: DisruptionMode::All,
            priority_class_name: None,
            priority: 10,
            priority_unset: false,
            preemption_policy: None,
            parent: None,
            workload: None,
        })
    }

    #[test]
    fn bound_members_are_kept_per_group_in_node_then_uid_order_and_outlive_the_group() {
        let mut index = PodGroupIndex::default();
        index.upsert_group(group("g"));
        let (ns, g) = (Str::from("ns"), Str::from("g"));
        index.add_bound(&ns, &g, &"n2".into(), &"b".into());
        index.add_bound(&ns, &g, &"n1".into(), &"c".into());
        index.add_bound(&ns, &g, &"n2".into(), &"a".into());
        let before = index.clone();
        index.remove_bound(&ns, &g, &"n1".into(), &"c".into());
        let listed: Vec<_> = before
            .bound_members("ns", "g")
            .map(|m| format!("{}/{}", m.node, m.uid))
            .collect();
        assert_eq!(listed, ["n1/c", "n2/a", "n2/b"], "the clone is unchanged");
        assert_eq!(index.bound_members("ns", "g").count(), 2);
        assert!(index.delete_group("ns", "g").is_some());
        assert!(index.group(&"ns".into(), &"g".into()).is_none());
        assert_eq!(index.bound_members("ns", "g").count(), 2);
        index.remove_bound(&ns, &g, &"n2".into(), &"a".into());
        index.remove_bound(&ns, &g, &"n2".into(), &"b".into());
        assert_eq!(index.bound_members("ns", "g").count(), 0);
    }
}
