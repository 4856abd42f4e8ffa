//! InterPodAffinity: the pod's required pod affinity and anti-affinity, and existing pods'
//! required anti-affinity against it, counted per topology pair once per decision.

use triomphe::Arc;

use ahash::AHashMap as HashMap;

use super::{NodeScratch, PreFilter, Status, single_label};
use crate::cache::{LabelId, NodeInfo, Snapshot};
use crate::model::namespace::Namespaces;
use crate::model::{LabelSelector, Node, Pod, PodAffinityTerm, Str, labels::optional_matches};

/// The plugin's name in statuses and diagnostics.
pub const INTER_POD_AFFINITY: &str = "InterPodAffinity";

/// An affinity term with its namespace set resolved.
#[derive(Clone, Debug)]
pub struct AffinityTerm {
    selector: Option<LabelSelector>,
    namespace_names: Vec<Str>,
    /// `Some` selects namespaces by their labels (an empty selector selects all).
    namespace_selector: Option<LabelSelector>,
    /// The labels a non-empty `namespace_selector` is matched against.
    namespaces: Option<Arc<Namespaces>>,
    /// The node label whose values are the term's topology domains.
    pub topology_key: Str,
    /// For a one-label selector over listed namespaces: the label's id in each namespace
    /// where some pod carries it (see [`AffinityTerm::resolve_labels`]).
    label_ids: Option<smallvec::SmallVec<[LabelId; 2]>>,
    /// The topology key names one node per value (see [`Snapshot::key_is_node_unique`]):
    /// a domain's count is the node's own, read when the node is checked instead of
    /// gathered over the cluster beforehand.
    node_local: bool,
}

impl AffinityTerm {
    /// The term as the filter reads it.
    pub fn new(
        term: &PodAffinityTerm,
        owner_namespace: &Str,
        namespaces: &Arc<Namespaces>,
    ) -> Self {
        let mut namespaces_listed =
            if term.namespaces.is_empty() && term.namespace_selector.is_none() {
                vec![owner_namespace.clone()]
            } else {
                term.namespaces.clone()
            };
        // A set upstream: a namespace listed twice still counts its pods once.
        namespaces_listed.sort_unstable();
        namespaces_listed.dedup();
        AffinityTerm {
            selector: term.label_selector.clone(),
            namespace_names: namespaces_listed,
            namespace_selector: term.namespace_selector.clone(),
            namespaces: term
                .namespace_selector
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|_| namespaces.clone()),
            topology_key: term.topology_key.clone(),
            label_ids: None,
            node_local: false,
        }
    }

    /// Marks the term node-local when its topology key names one node per value.
    pub(super) fn with_locality(mut self, snapshot: &Snapshot) -> Self {
        self.node_local = snapshot.key_is_node_unique(&self.topology_key);
        self
    }

    /// Resolves a one-label selector to label ids so [`Self::count_on`] reads each node's
    /// label index instead of its pods.
    pub(super) fn resolve_labels(mut self, snapshot: &Snapshot) -> Self {
        if self.namespace_selector.is_none()
            && let Some((key, value)) = self.selector.as_ref().and_then(single_label)
        {
            self.label_ids = Some(
                self.namespace_names
                    .iter()
                    .filter_map(|ns| snapshot.label_id(ns, key, value))
                    .collect(),
            );
        }
        self
    }

    /// Upstream `AffinityTerm.Matches`.
    pub fn matches(&self, pod: &Pod) -> bool {
        let in_namespace = self.namespace_names.contains(&pod.namespace)
            || self.namespace_selector.as_ref().is_some_and(|s| {
                s.is_empty()
                    || self
                        .namespaces
                        .as_ref()
                        .is_some_and(|all| s.matches(&all.labels(&pod.namespace)))
            });
        in_namespace && optional_matches(self.selector.as_ref(), &pod.labels)
    }
}

impl AffinityTerm {
    /// Pods on the node this term matches; O(1) through the node's label index when the
    /// term is one label over listed namespaces.
    fn count_on(&self, info: &NodeInfo) -> i64 {
        if let Some(ids) = &self.label_ids {
            return ids
                .iter()
                .map(|&id| info.count_label(id, false) as i64)
                .sum();
        }
        info.pods.iter().filter(|p| self.matches(p)).count() as i64
    }

    /// Whether [`Self::count_on`] is zero on every node of the snapshot it was resolved on.
    fn matches_nothing(&self) -> bool {
        self.label_ids.as_ref().is_some_and(|ids| ids.is_empty())
    }
}

type Pair = (Str, Str);

/// Counts keyed by (topology key, value), as upstream's `topologyToMatchedTermCount` map
/// (which deletes entries that drop to zero, so "empty" means "no non-zero entry").
#[derive(Clone, Debug, Default)]
pub struct PairCounts {
    counts: HashMap<Str, HashMap<Str, i64>>,
    nonzero: usize,
}

impl PairCounts {
    fn add(&mut self, key: &Str, node: &Node, delta: i64) {
        if let Some(value) = node.labels.get(key) {
            self.add_pair(key.clone(), value.clone(), delta);
        }
    }

    fn add_pair(&mut self, key: Str, value: Str, delta: i64) {
        // Look up by reference first: most pairs exist already, so no `Arc` is cloned.
        let values = match self.counts.get_mut(&*key) {
            Some(values) => values,
            None => self.counts.entry(key).or_default(),
        };
        let entry = match values.get_mut(&*value) {
            Some(entry) => entry,
            None => values.entry(value).or_insert(0),
        };
        let before = *entry;
        *entry += delta;
        match (before != 0, *entry != 0) {
            (false, true) => self.nonzero += 1,
            (true, false) => self.nonzero -= 1,
            _ => {}
        }
    }

    fn merge(mut self, other: PairCounts) -> Self {
        for (key, values) in other.counts {
            for (value, count) in values {
                self.add_pair(key.clone(), value, count);
            }
        }
        self
    }

    fn get(&self, key: &str, value: &str) -> i64 {
        self.counts
            .get(key)
            .and_then(|values| values.get(value))
            .copied()
            .unwrap_or(0)
    }

    /// Whether every count is zero.
    pub fn is_empty(&self) -> bool {
        self.nonzero == 0
    }
}

/// The cluster-wide inter-pod counts, gathered over the nodes (in parallel on large
/// clusters).
#[derive(Default)]
pub(super) struct InterPodCounts {
    existing_anti: PairCounts,
    affinity: PairCounts,
    anti: PairCounts,
}

impl InterPodCounts {
    pub(super) fn merge(self, other: InterPodCounts) -> Self {
        InterPodCounts {
            existing_anti: self.existing_anti.merge(other.existing_anti),
            affinity: self.affinity.merge(other.affinity),
            anti: self.anti.merge(other.anti),
        }
    }
}

/// Local changes of pair counts during one node's dry run (only pairs of that node).
#[derive(Clone, Debug, Default)]
struct PairDelta(Vec<(Pair, i64)>);

impl PairDelta {
    fn add(&mut self, key: &Str, node: &Node, delta: i64) {
        if let Some(value) = node.labels.get(key) {
            if let Some(entry) = self.0.iter_mut().find(|((k, v), _)| k == key && v == value) {
                entry.1 += delta;
            } else {
                self.0.push(((key.clone(), value.clone()), delta));
            }
        }
    }

    fn count(&self, global: &PairCounts, key: &str, value: &str) -> i64 {
        global.get(key, value)
            + self
                .0
                .iter()
                .find(|((k, v), _)| &**k == key && &**v == value)
                .map(|(_, d)| *d)
                .unwrap_or(0)
    }

    /// Whether `global + self` has no non-zero entry.
    fn is_empty_with(&self, global: &PairCounts) -> bool {
        let mut nonzero = global.nonzero as i64;
        for ((k, v), d) in &self.0 {
            let before = global.get(k, v);
            let after = before + d;
            nonzero += (after != 0) as i64 - (before != 0) as i64;
        }
        nonzero == 0
    }
}

/// Changes to the inter-pod affinity counts from pods added or removed.
#[derive(Clone, Debug, Default)]
pub struct InterPodDelta {
    affinity: PairDelta,
    anti: PairDelta,
    existing_anti: PairDelta,
}

impl PreFilter<'_> {
    /// One node's share of the inter-pod counts.
    pub(super) fn count_inter_pod(
        &self,
        info: &NodeInfo,
        node: &Node,
        scan_affinity: bool,
        scan_anti: &[&AffinityTerm],
        counts: &mut InterPodCounts,
    ) {
        // Existing pods' anti-affinity terms that match the preemptor.
        if info.anti_affinity_pods > 0 {
            for existing in info.pods.iter().filter(|p| p.has_required_anti_affinity()) {
                for term in &existing.details.pod_anti_affinity {
                    let term = AffinityTerm::new(term, &existing.namespace, &self.namespaces);
                    if term.matches(self.pod) {
                        counts.existing_anti.add(&term.topology_key, node, 1);
                    }
                }
            }
        }
        // The preemptor's affinity: pods matching all its terms count for every term.
        if scan_affinity {
            let count = match self.affinity.as_slice() {
                [only] => only.count_on(info),
                terms => info
                    .pods
                    .iter()
                    .filter(|p| terms.iter().all(|t| t.matches(p)))
                    .count() as i64,
            };
            if count > 0 {
                for term in &self.affinity {
                    counts.affinity.add(&term.topology_key, node, count);
                }
            }
        }
        for term in scan_anti {
            let count = term.count_on(info);
            if count > 0 {
                counts.anti.add(&term.topology_key, node, count);
            }
        }
    }

    pub(super) fn update_inter_pod_local(
        &self,
        other: &Pod,
        node: &Node,
        multiplier: i64,
        l: &mut InterPodDelta,
    ) {
        let pod = self.pod;
        for term in &other.details.pod_anti_affinity {
            let term = AffinityTerm::new(term, &other.namespace, &self.namespaces);
            if term.matches(pod) {
                l.existing_anti.add(&term.topology_key, node, multiplier);
            }
        }
        if !self.affinity.is_empty() && self.affinity.iter().all(|t| t.matches(other)) {
            for term in &self.affinity {
                l.affinity.add(&term.topology_key, node, multiplier);
            }
        }
        for term in &self.anti_affinity {
            if term.matches(other) {
                l.anti.add(&term.topology_key, node, multiplier);
            }
        }
    }

    pub(super) fn inter_pod_fits(&self, scratch: &NodeScratch<'_>) -> Status {
        let node = scratch.node;
        let local = &scratch.inter_pod;
        // Required affinity of the preemptor.
        let mut pods_exist = true;
        for term in &self.affinity {
            match node.labels.get(&term.topology_key) {
                Some(value) => {
                    if local
                        .affinity
                        .count(&self.affinity_counts, &term.topology_key, value)
                        <= 0
                    {
                        pods_exist = false;
                    }
                }
                None => {
                    return Status::unresolvable(
                        INTER_POD_AFFINITY,
                        "node(s) didn't match pod affinity rules",
                    );
                }
            }
        }
        // A pod may be the first of a group affine to itself: it passes when nothing in the
        // cluster matches yet and it matches its own terms.
        let first_of_group =
            local.affinity.is_empty_with(&self.affinity_counts) && self.self_affine;
        if !pods_exist && !first_of_group {
            return Status::unresolvable(
                INTER_POD_AFFINITY,
                "node(s) didn't match pod affinity rules",
            );
        }
        // Required anti-affinity of the preemptor. Node-local terms count this node's
        // pods now (every term of the same key is node-local too).
        for term in &self.anti_affinity {
            let Some(value) = node.labels.get(&term.topology_key) else {
                continue;
            };
            let here: i64 = if term.node_local {
                self.anti_affinity
                    .iter()
                    .filter(|t| t.topology_key == term.topology_key)
                    .map(|t| t.count_on(scratch.info))
                    .sum()
            } else {
                0
            };
            if here
                + local
                    .anti
                    .count(&self.anti_affinity_counts, &term.topology_key, value)
                > 0
            {
                return Status::unschedulable(
                    INTER_POD_AFFINITY,
                    "node(s) didn't match pod anti-affinity rules",
                );
            }
        }
        // Existing pods' anti-affinity against the preemptor.
        for (key, value) in node.labels.iter() {
            if local
                .existing_anti
                .count(&self.existing_anti_affinity_counts, key, value)
                > 0
            {
                return Status::unschedulable(
                    INTER_POD_AFFINITY,
                    "node(s) didn't satisfy existing pods anti-affinity rules",
                );
            }
        }
        Status::success()
    }

    /// Takes the cluster-wide counts the node scan gathered.
    pub(super) fn set_inter_pod_counts(&mut self, counts: InterPodCounts) {
        self.existing_anti_affinity_counts = counts.existing_anti;
        self.affinity_counts = counts.affinity;
        self.anti_affinity_counts = counts.anti;
    }

    /// What the node scan must count for the preemptor's own terms: whether its affinity
    /// (terms whose label no pod carries count zero everywhere, so need no visit), and
    /// which anti-affinity terms (node-local ones are counted when a node is checked).
    pub(super) fn inter_pod_scan(&self) -> (bool, Vec<&AffinityTerm>) {
        let scan_affinity = match self.affinity.as_slice() {
            [] => false,
            [only] => !only.matches_nothing(),
            _ => true,
        };
        let scan_anti = self
            .anti_affinity
            .iter()
            .filter(|t| !t.matches_nothing() && !t.node_local)
            .collect();
        (scan_affinity, scan_anti)
    }
}
