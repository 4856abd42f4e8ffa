//! InterPodAffinity's score: per topology domain, the weights of the pod's preferred
//! terms matching the pods there (anti-affinity subtracts), of existing pods' required
//! affinity terms matching the pod (hardPodAffinityWeight 1) and of their preferred
//! terms matching the pod. Skipped (0 everywhere) when no term touched any domain.

use ahash::AHashMap as HashMap;

use super::ScoreInput;
use crate::cache::NodeInfo;
use crate::engine::filters::AffinityTerm;
use crate::model::{Node, Pod, Str, WeightedPodAffinityTerm};

/// The plugin's name in explanations.
pub(super) const NAME: &str = "InterPodAffinity";

/// The default profile's hardPodAffinityWeight.
const HARD_POD_AFFINITY_WEIGHT: i64 = 1;

/// Topology key → value → summed weight (upstream's `scoreMap`).
#[derive(Default)]
pub(super) struct TopologyScores(HashMap<Str, HashMap<Str, i64>>);

impl TopologyScores {
    fn add(&mut self, node: &Node, key: &Str, weight: i64) {
        if let Some(value) = node.labels.get(key) {
            *self
                .0
                .entry(key.clone())
                .or_default()
                .entry(value.clone())
                .or_insert(0) += weight;
        }
    }

    /// The plugin skips the pod: no term touched any domain.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Gathers the domains' weights over every node of the cluster.
    pub(super) fn gather(input: &ScoreInput<'_>) -> Self {
        let pod = input.pod;
        let namespaces = &input.snapshot.namespaces;
        let resolve =
            |terms: &[WeightedPodAffinityTerm], owner: &Str| -> Vec<(i64, AffinityTerm)> {
                terms
                    .iter()
                    .map(|t| {
                        (
                            i64::from(t.weight),
                            AffinityTerm::new(&t.term, owner, namespaces),
                        )
                    })
                    .collect()
            };
        let affinity = resolve(&pod.details.preferred_pod_affinity, &pod.namespace);
        let anti_affinity = resolve(&pod.details.preferred_pod_anti_affinity, &pod.namespace);
        let own_terms = !affinity.is_empty() || !anti_affinity.is_empty();
        let mut scores = TopologyScores::default();
        for info in input.snapshot.nodes.iter() {
            let Some(node) = info.node.as_deref() else {
                continue;
            };
            if node.labels.is_empty() {
                continue;
            }
            for existing in &info.pods {
                if own_terms {
                    for (weight, term) in &affinity {
                        if term.matches(existing) {
                            scores.add(node, &term.topology_key, *weight);
                        }
                    }
                    for (weight, term) in &anti_affinity {
                        if term.matches(existing) {
                            scores.add(node, &term.topology_key, -*weight);
                        }
                    }
                }
                scores.add_existing_terms(input, existing, node);
            }
        }
        scores
    }

    /// An existing pod's required affinity and preferred terms matching the pod.
    fn add_existing_terms(&mut self, input: &ScoreInput<'_>, existing: &Pod, node: &Node) {
        let d = &existing.details;
        if d.pod_affinity.is_empty()
            && d.preferred_pod_affinity.is_empty()
            && d.preferred_pod_anti_affinity.is_empty()
        {
            return;
        }
        let namespaces = &input.snapshot.namespaces;
        for term in &d.pod_affinity {
            let term = AffinityTerm::new(term, &existing.namespace, namespaces);
            if term.matches(input.pod) {
                self.add(node, &term.topology_key, HARD_POD_AFFINITY_WEIGHT);
            }
        }
        for (terms, sign) in [
            (&d.preferred_pod_affinity, 1),
            (&d.preferred_pod_anti_affinity, -1),
        ] {
            for t in terms {
                let term = AffinityTerm::new(&t.term, &existing.namespace, namespaces);
                if term.matches(input.pod) {
                    self.add(node, &term.topology_key, sign * i64::from(t.weight));
                }
            }
        }
    }

    /// One node's score: the weights of its domains.
    pub(super) fn score(&self, info: &NodeInfo) -> i64 {
        let Some(node) = info.node.as_deref() else {
            return 0;
        };
        self.0
            .iter()
            .filter_map(|(key, values)| node.labels.get(key).and_then(|v| values.get(v)))
            .sum()
    }
}

/// Upstream's NormalizeScore: min–max scaled to 0–100 (0 everywhere when all equal).
pub(super) fn normalize(scores: &mut [i64]) {
    let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
        return;
    };
    let diff = max - min;
    for score in scores.iter_mut() {
        *score = if diff > 0 {
            (super::MAX_NODE_SCORE as f64 * ((*score - min) as f64 / diff as f64)) as i64
        } else {
            0
        };
    }
}
