//! PodTopologySpread: the pod's hard spread constraints (DoNotSchedule), each domain's
//! matching pods counted over the cluster once per decision.

use ahash::AHashMap as HashMap;

use super::{
    NodeScratch, PreFilter, Status, required_node_affinity_matches, single_label, untolerated_taint,
};
use crate::cache::{LabelId, NodeInfo, Snapshot};
use crate::model::{
    InclusionPolicy, LabelSelector, Node, Pod, Str, WhenUnsatisfiable, labels::optional_matches,
};

/// The plugin's name in statuses and diagnostics.
pub const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";

/// One topologySpreadConstraint of a pod, as the filter reads it.
#[derive(Clone, Debug)]
pub struct SpreadConstraint {
    max_skew: i64,
    /// The node label whose values are the constraint's domains.
    pub topology_key: Str,
    selector: Option<LabelSelector>,
    min_domains: i64,
    honor_node_affinity: bool,
    honor_taints: bool,
    self_match: bool,
    /// For a one-label selector: the label's id in the preemptor's namespace (`None`
    /// inside when no pod carries it).
    label_id: Option<Option<LabelId>>,
    /// Eligible domains and their matching-pod counts.
    counts: HashMap<Str, i64>,
    /// The two smallest (value, count), for the global minimum with one domain changed.
    smallest: [Option<(Str, i64)>; 2],
}

impl SpreadConstraint {
    fn min_excluding(&self, value: &str) -> Option<i64> {
        match &self.smallest {
            [Some((v, _)), second] if &**v == value => second.as_ref().map(|(_, c)| *c),
            [Some((_, c)), _] => Some(*c),
            _ => None,
        }
    }
}

/// Adds `count` to the domain `value`, registering the domain if new.
pub(super) fn add_count(counts: &mut HashMap<Str, i64>, value: &Str, count: i64) {
    match counts.get_mut(&**value) {
        Some(n) => *n += count,
        None => {
            counts.insert(value.clone(), count);
        }
    }
}

impl PreFilter<'_> {
    /// The preemptor's hard spread constraints, without counts yet.
    pub(super) fn build_spread(&mut self, snapshot: &Snapshot) {
        let pod = self.pod;
        let hard: Vec<_> = pod
            .details
            .topology_spread
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
            .collect();
        self.spread = hard
            .iter()
            .map(|c| {
                let extra: Vec<(Str, Str)> = c
                    .match_label_keys
                    .iter()
                    .filter_map(|k| pod.labels.get(k).map(|v| (k.clone(), v.clone())))
                    .collect();
                let selector = c.label_selector.as_ref().map(|s| s.with_labels(&extra));
                let self_match = optional_matches(selector.as_ref(), &pod.labels);
                let label_id = selector
                    .as_ref()
                    .and_then(single_label)
                    .map(|(key, value)| snapshot.label_id(&pod.namespace, key, value));
                SpreadConstraint {
                    label_id,
                    max_skew: c.max_skew as i64,
                    topology_key: c.topology_key.clone(),
                    selector,
                    min_domains: c.min_domains.unwrap_or(1) as i64,
                    honor_node_affinity: c.node_affinity_policy == InclusionPolicy::Honor,
                    honor_taints: c.node_taints_policy == InclusionPolicy::Honor,
                    self_match,
                    counts: HashMap::default(),
                    smallest: [None, None],
                }
            })
            .collect();
    }

    pub(super) fn has_all_spread_keys(&self, node: &Node) -> bool {
        self.spread
            .iter()
            .all(|c| node.labels.contains_key(&c.topology_key))
    }

    pub(super) fn spread_node_included(&self, i: usize, node: &Node) -> bool {
        let c = &self.spread[i];
        (!c.honor_node_affinity || required_node_affinity_matches(self.pod, node))
            && (!c.honor_taints || untolerated_taint(&node.taints, self.pod).is_none())
    }

    /// One node's matching pods per eligible domain, for the cluster-wide counts.
    pub(super) fn count_spread(
        &self,
        info: &NodeInfo,
        node: &Node,
        counts: &mut [HashMap<Str, i64>],
    ) {
        let pod = self.pod;
        if !self.spread.is_empty() && self.has_all_spread_keys(node) {
            for (i, c) in self.spread.iter().enumerate() {
                if !self.spread_node_included(i, node) {
                    continue;
                }
                let count = match c.label_id {
                    Some(id) => id.map_or(0, |id| info.count_label(id, true) as i64),
                    None => info
                        .pods
                        .iter()
                        .filter(|p| {
                            !p.terminating
                                && p.namespace == pod.namespace
                                && optional_matches(c.selector.as_ref(), &p.labels)
                        })
                        .count() as i64,
                };
                if let Some(value) = node.labels.get(&c.topology_key) {
                    add_count(&mut counts[i], value, count);
                }
            }
        }
    }

    /// Upstream updates PodTopologySpread's state pod by pod once PreFilter made it
    /// (AddPod, RemovePod), and the updates count a terminating pod, which PreFilter's own
    /// count skips: `moved` (pod, its node, +1 put on / −1 taken off) changes the counts
    /// as those updates do.
    pub fn count_moved_terminating<'p>(
        &mut self,
        snapshot: &Snapshot,
        moved: impl IntoIterator<Item = (&'p Pod, &'p str, i64)>,
    ) {
        if self.spread.is_empty() {
            return;
        }
        let mut counts: Vec<HashMap<Str, i64>> =
            self.spread.iter().map(|c| c.counts.clone()).collect();
        let mut changed = false;
        for (pod, node, sign) in moved {
            let Some(node) = snapshot.node(node).and_then(|info| info.node.as_deref()) else {
                continue;
            };
            if !pod.terminating
                || pod.namespace != self.pod.namespace
                || !self.has_all_spread_keys(node)
            {
                continue;
            }
            for (i, c) in self.spread.iter().enumerate() {
                if self.spread_node_included(i, node)
                    && optional_matches(c.selector.as_ref(), &pod.labels)
                    && let Some(value) = node.labels.get(&c.topology_key)
                {
                    add_count(&mut counts[i], value, sign);
                    changed = true;
                }
            }
        }
        if changed {
            self.set_spread_counts(counts);
        }
    }

    /// Takes the cluster-wide counts of [`Self::count_spread`].
    pub(super) fn set_spread_counts(&mut self, counts: Vec<HashMap<Str, i64>>) {
        for (c, counts) in self.spread.iter_mut().zip(counts) {
            c.counts = counts;
            let mut all: Vec<(Str, i64)> = c.counts.iter().map(|(v, n)| (v.clone(), *n)).collect();
            all.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            c.smallest = [all.first().cloned(), all.get(1).cloned()];
        }
    }

    /// Counts `pod` added (`sign` 1) to or removed (-1) from the scratch node.
    pub(super) fn update_spread_local(&self, scratch: &mut NodeScratch<'_>, pod: &Pod, sign: i64) {
        if pod.namespace == self.pod.namespace {
            for (i, c) in self.spread.iter().enumerate() {
                if scratch.spread_included[i] && optional_matches(c.selector.as_ref(), &pod.labels)
                {
                    scratch.spread_delta[i] += sign;
                }
            }
        }
    }

    pub(super) fn spread_fits(&self, scratch: &NodeScratch<'_>) -> Status {
        let node = scratch.node;
        for (i, c) in self.spread.iter().enumerate() {
            let Some(value) = node.labels.get(&c.topology_key) else {
                return Status::unresolvable(
                    POD_TOPOLOGY_SPREAD,
                    "node(s) didn't match pod topology spread constraints (missing required label)",
                );
            };
            let base = c.counts.get(value).copied();
            let here = base.unwrap_or(0) + scratch.spread_delta[i];
            let domains = c.counts.len() as i64;
            let min = if domains < c.min_domains {
                0
            } else {
                let others = c.min_excluding(value);
                match (base, others) {
                    // This node's domain is an eligible one: its count may have changed.
                    (Some(_), Some(o)) => here.min(o),
                    (Some(_), None) => here,
                    (None, Some(o)) => o,
                    (None, None) => 0,
                }
            };
            let skew = here + c.self_match as i64 - min;
            if skew > c.max_skew {
                return Status::unschedulable(
                    POD_TOPOLOGY_SPREAD,
                    "node(s) didn't match pod topology spread constraints",
                );
            }
        }
        Status::success()
    }
}
