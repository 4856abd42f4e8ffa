//! Editing a snapshot: pods taken off or put on its nodes, for "what if" views (victims
//! gone, members assumed). The edits go through the same per-node bookkeeping the cache
//! keeps (requests, priority levels, label counts, anti-affinity counts, node digests), so
//! every reader of a snapshot reads an edited one exactly as it would a cache's. The group
//! digests are dropped instead: only the per-pod filter pass reads them, and it filters
//! every node of a snapshot without them. Only the copy changes: node entries are shared
//! until edited, so an edit copies one entry.

use triomphe::Arc;

use crate::model::{Pod, Str};

use super::{LabelId, NodeInfo, NodeSummary, Snapshot};

impl Snapshot {
    /// Takes the pod with `uid` off node `node`; `None` when the node does not hold it.
    pub fn remove_bound_pod(&mut self, node: &str, uid: &str) -> Option<Arc<Pod>> {
        let index = self.node_index(node)?;
        let info = &self.nodes[index];
        let pod = info.pods.iter().find(|p| p.uid() == uid)?.clone();
        let ids: Vec<Option<LabelId>> = pod
            .labels
            .iter()
            .map(|(key, value)| self.labels.get(&pod.namespace, key, value))
            .collect();
        self.edit_node(index, |info| {
            info.remove_pod(uid, &ids);
            forget_ports(info, &pod);
        });
        Some(pod)
    }

    /// Takes every pod of `pods` off the node its `nodeName` names, each node edited once
    /// (its entry rebuilt from the pods it keeps); how many were there.
    pub fn remove_bound_pods<'p>(&mut self, pods: impl IntoIterator<Item = &'p Pod>) -> usize {
        let mut positions: Vec<(usize, usize)> = pods
            .into_iter()
            .filter_map(|pod| {
                let index = self.node_index(pod.node_name.as_deref()?)?;
                let held = &self.nodes[index].pods;
                // The pods come from the snapshot itself as a rule: the pointer settles it.
                let position = held
                    .iter()
                    .position(|p| std::ptr::eq(&**p, pod))
                    .or_else(|| held.iter().position(|p| p.uid() == pod.uid()))?;
                Some((index, position))
            })
            .collect();
        positions.sort_unstable();
        positions.dedup();
        self.remove_positions(&positions, |_| {})
    }

    /// Takes the pods at `positions` (node index, position among its pods; sorted,
    /// distinct) off their nodes, rebuilding each node's entry once from the pods it
    /// keeps; `removed` sees each pod taken off. How many were.
    pub fn remove_positions(
        &mut self,
        positions: &[(usize, usize)],
        mut removed: impl FnMut(&Arc<Pod>),
    ) -> usize {
        let mut count = 0;
        for chunk in positions.chunk_by(|a, b| a.0 == b.0) {
            let index = chunk[0].0;
            let Some(info) = self.nodes.get(index) else {
                continue;
            };
            let taken: smallvec::SmallVec<[usize; 16]> = chunk.iter().map(|(_, p)| *p).collect();
            let kept_label_ids: Vec<Vec<LabelId>> = info
                .pods
                .iter()
                .enumerate()
                .filter(|(i, _)| !taken.contains(i))
                .map(|(_, p)| {
                    p.labels
                        .iter()
                        .filter_map(|(key, value)| self.labels.get(&p.namespace, key, value))
                        .collect()
                })
                .collect();
            let mut kept = info.without(&taken, &kept_label_ids);
            for pod in taken.iter().filter_map(|&i| info.pods.get(i)) {
                forget_ports(&mut kept, pod);
                removed(pod);
                count += 1;
            }
            self.store_node(index, kept);
        }
        count
    }

    /// Puts `pod` on node `node` as bound there (its `nodeName` set to the node; a
    /// nomination it holds stays, as upstream's snapshot `AddPod` leaves the nominator
    /// alone); `false` when the snapshot has no such node.
    pub fn add_bound_pod(&mut self, pod: Arc<Pod>, node: &Str) -> bool {
        let Some(index) = self.node_index(node) else {
            return false;
        };
        let pod = if pod.node_name.as_ref() == Some(node) {
            pod
        } else {
            let mut bound = (*pod).clone();
            bound.node_name = Some(node.clone());
            Arc::new(bound)
        };
        let ids: Vec<LabelId> = pod
            .labels
            .iter()
            .map(|(key, value)| self.labels.get_or_add(&pod.namespace, key, value))
            .collect();
        self.edit_node(index, |info| {
            info.forgotten_ports
                .retain(|port| !pod.details.host_ports.contains(port));
            info.add_pod(pod, &ids);
        });
        true
    }

    /// Nominates the pending `pod` to the node its `nominatedNodeName` names again;
    /// `false` when it names none the snapshot has, or the node holds it already.
    pub fn add_nominated_pod(&mut self, pod: Arc<Pod>) -> bool {
        let Some(index) = pod.nomination().and_then(|node| self.node_index(node)) else {
            return false;
        };
        if self.nodes[index]
            .nominated
            .iter()
            .any(|p| p.uid() == pod.uid())
        {
            return false;
        }
        self.edit_node(index, |info| info.nominated.push(pod));
        true
    }

    /// Withdraws the nomination of the pod with `uid` to node `node`: the pod it held, or
    /// `None` when the node holds no such nomination.
    pub fn remove_nominated_pod(&mut self, node: &str, uid: &str) -> Option<Arc<Pod>> {
        let index = self.node_index(node)?;
        if !self.nodes[index].nominated.iter().any(|p| p.uid() == uid) {
            return None;
        }
        self.edit_node(index, |info| info.remove_nominated(uid))
    }

    /// Applies `change` to a copy of node entry `index`, then refreshes what digests it.
    fn edit_node<R>(&mut self, index: usize, change: impl FnOnce(&mut NodeInfo) -> R) -> R {
        let mut info = (*self.nodes[index]).clone();
        let result = change(&mut info);
        self.store_node(index, info);
        result
    }

    /// Puts `info` in place of node entry `index`, and refreshes what digests it.
    fn store_node(&mut self, index: usize, info: NodeInfo) {
        let old = &self.nodes[index];
        let had_anti = old.node.is_some() && old.anti_affinity_pods > 0;
        let has_anti = info.node.is_some() && info.anti_affinity_pods > 0;
        self.anti_affinity_nodes = self.anti_affinity_nodes + has_anti as usize - had_anti as usize;
        if let Some(summary) = self.summaries.get(index) {
            let taint_set = summary.taint_set;
            self.summaries.set(index, NodeSummary::of(&info, taint_set));
        }
        self.nodes.set(index, Arc::new(info));
        self.groups = imbl::Vector::new();
    }
}

/// Upstream's `RemovePod` deletes the removed pod's host ports from the node's port set,
/// even those another pod there still binds: those are forgotten.
fn forget_ports(info: &mut NodeInfo, removed: &Pod) {
    for port in removed.details.host_ports.iter().filter(|p| p.port > 0) {
        let still_bound = info
            .pods
            .iter()
            .any(|p| p.details.host_ports.contains(port));
        if still_bound && !info.forgotten_ports.contains(port) {
            info.forgotten_ports.push(port.clone());
        }
    }
}
