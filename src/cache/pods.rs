//! Pod writes: placing pods on their nodes' entries, single and batched upserts, bulk
//! loads and deletes.

use triomphe::Arc;

use crate::model::Pod;

use super::pod_index;
use super::table::Place;
use super::{
    CacheError, ClusterCache, INDEX_RUN, NodeInfo, PodUpsert, Table, UpdateOutcome, is_stale,
    nominated,
};

/// Node entries compacted under one hold of the table's lock once a watch's lists are done
/// (a few milliseconds of copying).
const COMPACTED_PER_LOCK: usize = 1024;

impl ClusterCache {
    fn unplace(table: &mut Table<'_>, pod: &Pod) {
        match &Place::of(pod) {
            Place::Bound(node) => {
                let ids = table.labels.ids_of(pod);
                let removed = table.edit(node, |info| info.remove_pod(pod.uid(), &ids));
                if removed.is_some() {
                    table.labels.release(ids.into_iter().flatten());
                }
            }
            Place::Nominated(node) => {
                table.edit(node, |info| info.remove_nominated(pod.uid()));
            }
            Place::Pending => {}
        }
    }

    /// Replaces `old` with `pod` where `old` is placed (the same place).
    fn replace(table: &mut Table<'_>, old: &Pod, pod: &Arc<Pod>) {
        match &Place::of(old) {
            Place::Bound(node) => {
                // Acquire before release: labels the pod keeps keep their ids.
                let ids = table.labels.acquire(pod);
                let old_ids = table.labels.ids_of(old);
                let removed = table.edit(node, |info| {
                    let removed = info.remove_pod(old.uid(), &old_ids);
                    info.add_pod(pod.clone(), &ids);
                    removed
                });
                if removed.is_some() {
                    table.labels.release(old_ids.into_iter().flatten());
                }
            }
            Place::Nominated(node) => table.edit(node, |info| {
                info.remove_nominated(old.uid());
                info.nominated.push(pod.clone());
            }),
            Place::Pending => {}
        }
    }

    fn place(table: &mut Table<'_>, pod: &Arc<Pod>, place: Place<'_>) {
        match place {
            Place::Bound(node) => {
                let ids = table.labels.acquire(pod);
                table.edit(node, |info| info.add_pod(pod.clone(), &ids));
            }
            Place::Nominated(node) => table.edit(node, |info| info.nominated.push(pod.clone())),
            Place::Pending => {}
        }
    }

    /// Inserts or replaces a pod. Succeeded/Failed pods are removed (the scheduler never
    /// sees them).
    ///
    /// The pod comes in its final allocation (its only handle), so a bulk load allocates
    /// and first touches it on the thread that converted it rather than the applier's.
    pub(super) fn put_pod(
        &self,
        table: &mut Table<'_>,
        pod: Arc<Pod>,
    ) -> Result<PodUpsert, CacheError> {
        let slots = self.pods.slots(&pod);
        self.put_pod_in(table, slots, pod)
    }

    /// `put_pod`, with the pod's index slots looked up by the caller.
    fn put_pod_in(
        &self,
        table: &mut Table<'_>,
        slots: pod_index::Slots<'_>,
        mut pod: Arc<Pod>,
    ) -> Result<PodUpsert, CacheError> {
        // Before the pod is filed, so the indexes hold the shared strings too. (Never
        // copies: the callers hand over the only handle.)
        table.compact_pod(Arc::make_mut(&mut pod));
        if let Some(existing) = slots.by_name()
            && existing.uid() != pod.uid()
        {
            return Err(CacheError::NameConflict {
                name: format!("{}/{}", pod.namespace, pod.name()),
                existing: existing.uid().to_string(),
            });
        }
        let old = slots.by_uid().cloned();
        if let Some(old) = &old {
            if (&old.namespace, &old.name()) != (&pod.namespace, &pod.name()) {
                return Err(CacheError::UidConflict {
                    uid: pod.uid().to_string(),
                    existing: format!("{}/{}", old.namespace, old.name()),
                });
            }
            if is_stale(pod.resource_version, old.resource_version) {
                let nominated = nominated(Some(old.clone()));
                return Ok(PodUpsert {
                    outcome: UpdateOutcome {
                        applied: false,
                        resource_version: old.resource_version,
                        revision: self.revision(),
                    },
                    nominated_before: nominated.clone(),
                    nominated_after: nominated,
                });
            }
        }
        let rv = pod.resource_version;
        let nominated_after = if pod.phase.is_terminal() {
            if let Some(old) = &old {
                Self::unplace(table, old);
                self.follow_membership(table, Some(old), None);
            }
            slots.empty();
            None
        } else {
            let place = Place::of(&pod);
            match &old {
                // An update in place (the usual case): one copy of the node entry.
                Some(old) if Place::of(old) == place => Self::replace(table, old, &pod),
                Some(old) => {
                    Self::unplace(table, old);
                    Self::place(table, &pod, place);
                }
                None => Self::place(table, &pod, place),
            }
            self.follow_membership(table, old.as_deref(), Some(&pod));
            let nominated = pod.nomination().is_some().then(|| pod.clone());
            slots.fill(pod);
            nominated
        };
        Ok(PodUpsert {
            outcome: UpdateOutcome {
                applied: true,
                resource_version: rv,
                revision: self.bump(table),
            },
            nominated_before: nominated(old),
            nominated_after,
        })
    }

    /// Adds or replaces a pod; what changed, without the nominations it moved.
    pub fn upsert_pod(&self, pod: impl Into<Arc<Pod>>) -> Result<UpdateOutcome, CacheError> {
        self.upsert_pod_with_nominations(pod).map(|u| u.outcome)
    }

    /// As [`ClusterCache::upsert_pod`], saying too how the pod's nomination moved.
    pub fn upsert_pod_with_nominations(
        &self,
        pod: impl Into<Arc<Pod>>,
    ) -> Result<PodUpsert, CacheError> {
        let pod = pod.into();
        let mut table = self.table.lock();
        self.put_pod(&mut table, pod)
    }

    /// Upserts pods in order under one writer lock, with the results
    /// `upsert_pod_with_nominations` would give each. Bulk loads use it: every node entry a
    /// batch touches is copied once (pods, label index, levels) instead of once per pod,
    /// which dominates a load.
    pub fn upsert_pods<P: Into<Arc<Pod>>>(
        &self,
        pods: impl IntoIterator<Item = P>,
    ) -> Vec<Result<PodUpsert, CacheError>> {
        let mut table = self.table.lock();
        table.staged = Some(hashbrown::HashMap::new());
        let mut pods = pods.into_iter().map(Into::into);
        let mut results = Vec::with_capacity(pods.size_hint().0);
        let mut run = Vec::with_capacity(INDEX_RUN);
        loop {
            run.extend(pods.by_ref().take(INDEX_RUN));
            if run.is_empty() {
                break;
            }
            let mut index = self.pods.lock();
            index.warm(&run);
            for pod in run.drain(..) {
                let slots = index.slots(&pod);
                results.push(self.put_pod_in(&mut table, slots, pod));
            }
        }
        table.unstage();
        results
    }

    /// Says a bulk load is over: the handles its conversions shared (see `server::memo`)
    /// will not be asked about again, so the answers remembered for them are dropped, and
    /// with them the handles.
    pub fn end_bulk_load(&self) {
        let mut table = self.table.lock();
        table.interned.strings.forget_recent();
        table.interned.label_sets.forget_recent();
        table.interned.pod_details.forget_recent();
    }

    /// Copies the node entries whose lists hold spare room (a copy is exact). A watch's
    /// list arrives in many small batches, and each batch copies the entries it edits and
    /// grows their lists by doubling, so after it the lists hold up to twice their
    /// length. The table is locked for [`COMPACTED_PER_LOCK`] entries at a time;
    /// milliseconds a thousand nodes, so call it on a blocking thread.
    pub fn compact_nodes(&self) {
        let mut start = 0;
        loop {
            let mut table = self.table.lock();
            let end = (start + COMPACTED_PER_LOCK).min(table.nodes.len());
            if start >= end {
                return;
            }
            for i in start..end {
                if table.nodes[i].has_spare_capacity() {
                    let exact = Arc::new(NodeInfo::clone(&table.nodes[i]));
                    table.nodes.set(i, exact);
                }
            }
            start = end;
        }
    }

    /// Deletes a pod by namespace/name (and uid when given, which must then match).
    pub fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<UpdateOutcome, CacheError> {
        let mut table = self.table.lock();
        let not_found = || CacheError::NotFound {
            kind: "pod",
            name: format!("{namespace}/{name}"),
        };
        let held = self
            .pods
            .get_by_name(namespace, name)
            .ok_or_else(not_found)?;
        if uid.is_some_and(|u| !u.is_empty() && u != held.uid()) {
            return Err(not_found());
        }
        self.pods.remove(&held);
        Self::unplace(&mut table, &held);
        self.follow_membership(&table, Some(&held), None);
        Ok(UpdateOutcome {
            applied: true,
            resource_version: 0,
            revision: self.bump(&table),
        })
    }
}
