//! A stand-in for the placement API (a cluster view with pods removed and assumed, Filter
//! on one node, and the choice of a node for a pod) with Filter only: the lowest-named
//! feasible node wins, the pod's nominated node first. The scored placement replaces this
//! file; its callers use only the names below.
//!
//! Every change re-materializes the whole cluster into a fresh cache on the next read:
//! exact, and slow on large clusters.

use std::cell::OnceCell;

use ahash::AHashSet as HashSet;
use triomphe::Arc;

use super::filter_pass::FilterPass;
use super::filters::{PreFilter, Status, static_filters};
use super::version::{FeatureGates, KubernetesVersion};
use crate::cache::{ClusterCache, Snapshot};
use crate::model::{Pod, PodPhase, Str};

/// `snapshot` minus removed pods plus added (assumed or returned) pods.
pub(crate) struct ClusterView<'s> {
    base: &'s Snapshot,
    removed: HashSet<Str>,
    added: Vec<(Arc<Pod>, Str)>,
    materialized: OnceCell<Snapshot>,
}

/// Where a pod would go.
#[derive(Clone, Debug)]
pub(crate) struct Placement {
    /// The node, if any fits.
    pub node: Option<Str>,
    /// The node's total score (always 0 here: no Score plugins).
    pub total: i64,
    /// The other nodes with the same total.
    pub tied: Vec<Str>,
    /// Per node, each plugin's score (with `explain`; empty here).
    pub scores: Vec<(Str, Vec<(&'static str, i64)>)>,
    /// Why no node fits (the FitError text); empty when one does.
    pub status: String,
}

impl<'s> ClusterView<'s> {
    /// The view of `snapshot` as it is; nominated pods are the snapshot's.
    pub(crate) fn new(
        snapshot: &'s Snapshot,
        _version: KubernetesVersion,
        _gates: &FeatureGates,
    ) -> Self {
        ClusterView {
            base: snapshot,
            removed: HashSet::default(),
            added: Vec::new(),
            materialized: OnceCell::new(),
        }
    }

    /// A pod (bound, or added earlier) leaves its node.
    pub(crate) fn remove_pod(&mut self, pod: &Arc<Pod>) {
        let before = self.added.len();
        self.added.retain(|(p, _)| p.uid() != pod.uid());
        if self.added.len() == before {
            self.removed.insert(Str::from(pod.uid()));
        }
        self.materialized = OnceCell::new();
    }

    /// A pod runs on `node`: a victim back, or an assumed member.
    pub(crate) fn add_pod(&mut self, pod: Arc<Pod>, node: &Str) {
        let returns_home = pod.node_name.as_ref() == Some(node) && self.removed.remove(pod.uid());
        if !returns_home {
            self.added.push((pod, node.clone()));
        }
        self.materialized = OnceCell::new();
    }

    fn snapshot(&self) -> &Snapshot {
        self.materialized.get_or_init(|| {
            let cache = ClusterCache::new();
            for info in self.base.nodes.iter() {
                if let Some(node) = &info.node {
                    cache.upsert_node((**node).clone());
                }
            }
            let kept = self.base.nodes.iter().flat_map(|info| {
                info.pods
                    .iter()
                    .chain(&info.nominated)
                    .filter(|p| !self.removed.contains(p.uid()))
                    .cloned()
            });
            let assumed = self.added.iter().map(|(pod, node)| {
                let mut pod = (**pod).clone();
                pod.node_name = Some(node.clone());
                pod.nominated_node_name = None;
                pod.phase = PodPhase::Running;
                Arc::new(pod)
            });
            let _ = cache.upsert_pods(kept.chain(assumed).collect::<Vec<_>>());
            let mut snapshot = cache.snapshot();
            snapshot.pdbs = self.base.pdbs.clone();
            snapshot.namespaces = self.base.namespaces.clone();
            snapshot.pod_groups = self.base.pod_groups.clone();
            snapshot
        })
    }

    /// Filter (with nominated pods) for `pod` on `node`.
    pub(crate) fn fits(&self, pod: &Pod, node: &Str) -> Result<(), Status> {
        let snapshot = self.snapshot();
        let Some((info, node_object)) = snapshot
            .node(node)
            .and_then(|info| Some((info, info.node.as_deref()?)))
        else {
            return Err(Status {
                code: super::Code::UnschedulableAndUnresolvable,
                plugin: "",
                reasons: smallvec::smallvec![format!("node {node} not found").into()],
            });
        };
        let status = static_filters(pod, node_object);
        if !status.is_success() {
            return Err(status);
        }
        let pre = PreFilter::new(pod, snapshot);
        let Some(mut scratch) = pre.scratch(info) else {
            return Err(status);
        };
        let status = pre.fits_with_nominated(&mut scratch);
        if status.is_success() {
            Ok(())
        } else {
            Err(status)
        }
    }

    /// The node the pod would go to: its nominated node when it fits there, else the
    /// lowest-named feasible node.
    pub(crate) fn place(&self, pod: &Pod) -> Placement {
        let snapshot = self.snapshot();
        let pre = PreFilter::new(pod, snapshot);
        let pass = FilterPass::new(snapshot, &pre, false);
        let mut filtered = pass.run(false, super::now_nanos());
        let feasible = filtered.tally.take_feasible(&snapshot.nodes);
        let nominated = pod.nominated_node_name.as_ref().filter(|n| !n.is_empty());
        let node = match nominated {
            Some(n) if feasible.contains(n) => Some(n.clone()),
            _ => feasible.iter().min().cloned(),
        };
        let status = if node.is_none() {
            pass.failure_message(filtered.tally, filtered.screened.waiting())
        } else {
            String::new()
        };
        Placement {
            node,
            total: 0,
            tied: Vec::new(),
            scores: Vec::new(),
            status,
        }
    }
}
