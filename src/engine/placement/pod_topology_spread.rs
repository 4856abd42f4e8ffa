//! PodTopologySpread's score: the pod's ScheduleAnyway constraints, fewer matching pods
//! in a node's domains being better. Without such constraints the plugin skips (0
//! everywhere): the default profile's system-default constraints apply only to pods a
//! Service, ReplicationController, ReplicaSet or StatefulSet selects, which preemptd does
//! not know.

use ahash::{AHashMap as HashMap, AHashSet as HashSet};

use super::{MAX_NODE_SCORE, ScoreInput};
use crate::cache::NodeInfo;
use crate::engine::filters::{required_node_affinity_matches, untolerated_taint};
use crate::model::{
    InclusionPolicy, LabelSelector, Node, Pod, Str, WhenUnsatisfiable, labels::optional_matches,
};

/// The plugin's name in explanations.
pub(super) const NAME: &str = "PodTopologySpread";

const HOSTNAME: &str = "kubernetes.io/hostname";

struct Constraint {
    max_skew: i64,
    topology_key: Str,
    selector: Option<LabelSelector>,
    honor_node_affinity: bool,
    honor_taints: bool,
}

/// What PreScore gathers.
pub(super) struct SpreadScores {
    constraints: Vec<Constraint>,
    /// Feasible nodes without every topology key: they score 0.
    ignored: HashSet<Str>,
    /// Per constraint: matching pods per domain of the feasible nodes.
    counts: Vec<HashMap<Str, i64>>,
    weights: Vec<f64>,
}

fn has_all_keys(constraints: &[Constraint], node: &Node) -> bool {
    constraints
        .iter()
        .all(|c| node.labels.contains_key(&c.topology_key))
}

fn count_matching(info: &NodeInfo, selector: Option<&LabelSelector>, namespace: &Str) -> i64 {
    info.pods
        .iter()
        .filter(|p| {
            !p.terminating && p.namespace == *namespace && optional_matches(selector, &p.labels)
        })
        .count() as i64
}

impl Constraint {
    fn includes(&self, pod: &Pod, node: &Node) -> bool {
        (!self.honor_node_affinity || required_node_affinity_matches(pod, node))
            && (!self.honor_taints || untolerated_taint(&node.taints, pod).is_none())
    }
}

impl SpreadScores {
    /// `None` when the plugin skips the pod.
    pub(super) fn gather(input: &ScoreInput<'_>, feasible: &[&NodeInfo]) -> Option<Self> {
        let pod = input.pod;
        let constraints: Vec<Constraint> = pod
            .details
            .topology_spread
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway)
            .map(|c| {
                let extra: Vec<(Str, Str)> = c
                    .match_label_keys
                    .iter()
                    .filter_map(|k| pod.labels.get(k).map(|v| (k.clone(), v.clone())))
                    .collect();
                Constraint {
                    max_skew: i64::from(c.max_skew),
                    topology_key: c.topology_key.clone(),
                    selector: c.label_selector.as_ref().map(|s| s.with_labels(&extra)),
                    honor_node_affinity: c.node_affinity_policy == InclusionPolicy::Honor,
                    honor_taints: c.node_taints_policy == InclusionPolicy::Honor,
                }
            })
            .collect();
        if constraints.is_empty() || input.snapshot.nodes.is_empty() {
            return None;
        }
        let mut ignored = HashSet::default();
        let mut counts = vec![HashMap::<Str, i64>::default(); constraints.len()];
        for info in feasible {
            let Some(node) = info.node.as_deref() else {
                continue;
            };
            if !has_all_keys(&constraints, node) {
                ignored.insert(info.name.clone());
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if &*c.topology_key == HOSTNAME {
                    continue;
                }
                if let Some(value) = node.labels.get(&c.topology_key) {
                    counts[i].entry(value.clone()).or_insert(0);
                }
            }
        }
        let weights = constraints
            .iter()
            .zip(&counts)
            .map(|(c, domains)| {
                let size = if &*c.topology_key == HOSTNAME {
                    feasible.len() - ignored.len()
                } else {
                    domains.len()
                };
                ((size + 2) as f64).ln()
            })
            .collect();
        for info in input.snapshot.nodes.iter() {
            let Some(node) = info.node.as_deref() else {
                continue;
            };
            if !has_all_keys(&constraints, node) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.includes(pod, node) {
                    continue;
                }
                let Some(value) = node.labels.get(&c.topology_key) else {
                    continue;
                };
                if let Some(count) = counts[i].get_mut(value) {
                    *count += count_matching(info, c.selector.as_ref(), &pod.namespace);
                }
            }
        }
        Some(SpreadScores {
            constraints,
            ignored,
            counts,
            weights,
        })
    }

    /// One node's raw score: Σ count × ln(domains + 2) + (maxSkew − 1), rounded; `None`
    /// for an ignored node.
    pub(super) fn score(&self, input: &ScoreInput<'_>, info: &NodeInfo) -> Option<i64> {
        let node = info.node.as_deref()?;
        if self.ignored.contains(&info.name) {
            return None;
        }
        let mut score = 0.0;
        for (i, c) in self.constraints.iter().enumerate() {
            let Some(value) = node.labels.get(&c.topology_key) else {
                continue;
            };
            let count = if &*c.topology_key == HOSTNAME {
                count_matching(info, c.selector.as_ref(), &input.pod.namespace)
            } else {
                self.counts[i].get(value).copied().unwrap_or(0)
            };
            score += count as f64 * self.weights[i] + (c.max_skew - 1) as f64;
        }
        Some(score.round() as i64)
    }
}

/// Upstream's NormalizeScore: ignored nodes 0; otherwise fewer is better, scaled by the
/// largest; 100 everywhere when the largest is 0.
pub(super) fn normalize(raw: &[Option<i64>]) -> Vec<i64> {
    let scored = raw.iter().flatten();
    let min = scored.clone().copied().min().unwrap_or(i64::MAX);
    let max = scored.copied().max().unwrap_or(0).max(0);
    raw.iter()
        .map(|score| match *score {
            None => 0,
            Some(_) if max == 0 => MAX_NODE_SCORE,
            Some(s) => MAX_NODE_SCORE * (max + min - s) / max,
        })
        .collect()
}
