//! The placement policy (`serve --policy FILE`): which nodes are spot capacity, which of
//! them are about to be reclaimed, which pods are critical, how PodDisruptionBudgets
//! weigh, and the prioritize scores an extender serves.
//!
//! A decision under a policy differs from upstream's only here, and says so: a node the
//! policy rules out gets a filter status of this module's plugin name ([`PLUGIN`]) and a
//! reason naming the rule, a candidate strict PDB mode drops gets a preemption status
//! naming the mode. Without a policy nothing here runs.

mod file;

pub use file::PolicyError;

use super::filters::{Code, Reason, Reasons, Status};
use crate::model::{LabelSelector, Labels, Node, Pod, Str, TaintEffect};

/// The plugin name of the statuses the policy gives.
pub const PLUGIN: &str = "PlacementPolicy";
/// The highest prioritize score (kube-scheduler's `MaxExtenderPriority`).
pub const MAX_SCORE: i64 = 10;

/// Whether a candidate whose victims violate PodDisruptionBudgets may be picked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PdbMode {
    /// Upstream: violations only make a candidate worse (fewest violations wins).
    #[default]
    Prefer,
    /// A candidate that would violate any budget is not a candidate.
    Strict,
}

impl PdbMode {
    /// The mode named `text` (`prefer` or `strict`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "prefer" => Some(Self::Prefer),
            "strict" => Some(Self::Strict),
            _ => None,
        }
    }

    /// The mode's name in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prefer => "prefer",
            Self::Strict => "strict",
        }
    }
}

/// What kind of capacity a node is, by its labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// Spot (reclaimable) capacity.
    Spot,
    /// On-demand capacity.
    OnDemand,
    /// No capacity label the policy knows (treated as on-demand).
    Unknown,
}

/// A capacity-type label: `key` set to `spot` marks spot capacity, to `on_demand` (when
/// given) on-demand capacity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapacityLabel {
    /// The label key.
    pub key: Str,
    /// The value that marks spot capacity.
    pub spot: Str,
    /// The value that marks on-demand capacity, when given.
    pub on_demand: Option<Str>,
}

/// A node taint that announces the node's reclaim: by key, and value and effect when
/// given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeTaint {
    /// The taint key.
    pub key: Str,
    /// The taint value; any when `None`.
    pub value: Option<Str>,
    /// The taint effect; any when `None`.
    pub effect: Option<TaintEffect>,
}

/// A node label or annotation that announces the node's reclaim: by key, and value when
/// given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeLabel {
    /// The label or annotation key.
    pub key: Str,
    /// Its value; any when `None`.
    pub value: Option<Str>,
}

/// A node condition that announces the node's reclaim: by type and status, and by a text
/// its message contains when given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeCondition {
    /// The condition type.
    pub kind: Str,
    /// The condition status.
    pub status: Str,
    /// A text the condition's message contains; any message when `None`.
    pub message_contains: Option<Str>,
}

/// Which pods are critical: at or above a priority, or selected by labels (either).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CriticalPods {
    /// Pods at or above this priority are critical.
    pub priority_at_least: Option<i32>,
    /// Pods these labels select are critical.
    pub selector: Option<LabelSelector>,
}

/// A placement policy. [`Default`] holds the default capacity labels and termination
/// notice taints, no critical pods and PDB mode `prefer`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The first label a node carries with a known value decides its capacity.
    pub capacity_labels: Vec<CapacityLabel>,
    /// Taints that announce a node's reclaim.
    pub notice_taints: Vec<NoticeTaint>,
    /// Labels that announce a node's reclaim.
    pub notice_labels: Vec<NoticeLabel>,
    /// Annotations that announce a node's reclaim.
    pub notice_annotations: Vec<NoticeLabel>,
    /// Conditions that announce a node's reclaim.
    pub notice_conditions: Vec<NoticeCondition>,
    /// Which pods are critical.
    pub critical: CriticalPods,
    /// How PodDisruptionBudgets weigh on candidates.
    pub pdb_mode: PdbMode,
}

/// Capacity-type labels of Karpenter, the clouds' node pools and user manifests.
pub const DEFAULT_CAPACITY_LABELS: &[(&str, &str, Option<&str>)] = &[
    ("node.kubernetes.io/capacity", "spot", Some("on-demand")),
    ("karpenter.sh/capacity-type", "spot", Some("on-demand")),
    ("eks.amazonaws.com/capacityType", "SPOT", Some("ON_DEMAND")),
    ("cloud.google.com/gke-spot", "true", None),
    ("cloud.google.com/gke-preemptible", "true", None),
    ("kubernetes.azure.com/scalesetpriority", "spot", None),
];

/// Taints that reclaim handlers put on a node about to go away: aws-node-termination-handler
/// (spot interruption, scheduled maintenance, ASG termination), Karpenter (v1 and v1beta1)
/// and GKE's node termination handler. A rebalance recommendation is only a hint: left out.
pub const DEFAULT_NOTICE_TAINTS: &[(&str, Option<&str>)] = &[
    ("aws-node-termination-handler/spot-itn", None),
    ("aws-node-termination-handler/scheduled-maintenance", None),
    (
        "aws-node-termination-handler/asg-lifecycle-termination",
        None,
    ),
    ("karpenter.sh/disrupted", None),
    ("karpenter.sh/disruption", Some("disrupting")),
    ("cloud.google.com/impending-node-termination", None),
];

/// The condition the kubelet's graceful node shutdown sets.
pub const DEFAULT_NOTICE_CONDITIONS: &[(&str, &str, Option<&str>)] =
    &[("Ready", "False", Some("node is shutting down"))];

/// The capacity labels of a policy that names none.
pub fn default_capacity_labels() -> Vec<CapacityLabel> {
    DEFAULT_CAPACITY_LABELS
        .iter()
        .map(|&(key, spot, on_demand)| CapacityLabel {
            key: key.into(),
            spot: spot.into(),
            on_demand: on_demand.map(Str::from),
        })
        .collect()
}

/// The notice taints of a policy that names none.
pub fn default_notice_taints() -> Vec<NoticeTaint> {
    DEFAULT_NOTICE_TAINTS
        .iter()
        .map(|&(key, value)| NoticeTaint {
            key: key.into(),
            value: value.map(Str::from),
            effect: None,
        })
        .collect()
}

/// The notice conditions of a policy that names none.
pub fn default_notice_conditions() -> Vec<NoticeCondition> {
    DEFAULT_NOTICE_CONDITIONS
        .iter()
        .map(|&(kind, status, message_contains)| NoticeCondition {
            kind: kind.into(),
            status: status.into(),
            message_contains: message_contains.map(Str::from),
        })
        .collect()
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            capacity_labels: default_capacity_labels(),
            notice_taints: default_notice_taints(),
            notice_labels: Vec::new(),
            notice_annotations: Vec::new(),
            notice_conditions: default_notice_conditions(),
            critical: CriticalPods::default(),
            pdb_mode: PdbMode::Prefer,
        }
    }
}

impl Policy {
    /// The node's capacity by the first of `capacity_labels` it carries with a known value.
    pub fn capacity(&self, node: &Node) -> Capacity {
        self.capacity_labels
            .iter()
            .find_map(|label| {
                let value = node.labels.get(&label.key)?;
                if *value == label.spot {
                    Some(Capacity::Spot)
                } else if label.on_demand.as_ref() == Some(value) {
                    Some(Capacity::OnDemand)
                } else {
                    None
                }
            })
            .unwrap_or(Capacity::Unknown)
    }

    /// The first termination-notice signal the node carries, described (`taint
    /// karpenter.sh/disrupted`).
    pub fn notice(&self, node: &Node) -> Option<String> {
        let taint = self.notice_taints.iter().find_map(|signal| {
            node.taints.iter().find(|t| {
                t.key == signal.key
                    && signal.value.as_ref().is_none_or(|v| *v == t.value)
                    && signal.effect.is_none_or(|e| e == t.effect)
            })
        });
        if let Some(taint) = taint {
            return Some(format!("taint {}", taint.key));
        }
        let keyed = |signals: &[NoticeLabel], on: &Labels, what: &str| {
            signals.iter().find_map(|signal| {
                let value = on.get(&signal.key)?;
                signal
                    .value
                    .as_ref()
                    .is_none_or(|v| v == value)
                    .then(|| format!("{what} {}={value}", signal.key))
            })
        };
        if let Some(found) = keyed(&self.notice_labels, &node.labels, "label") {
            return Some(found);
        }
        if let Some(found) = keyed(&self.notice_annotations, &node.annotations, "annotation") {
            return Some(found);
        }
        self.notice_conditions.iter().find_map(|signal| {
            node.conditions
                .iter()
                .find(|c| {
                    c.kind == signal.kind
                        && c.status == signal.status
                        && signal
                            .message_contains
                            .as_ref()
                            .is_none_or(|text| c.message.contains(&**text))
                })
                .map(|c| format!("condition {}={}", c.kind, c.status))
        })
    }

    /// Whether `pod` runs on on-demand capacity only.
    pub fn is_critical(&self, pod: &Pod) -> bool {
        self.critical
            .priority_at_least
            .is_some_and(|at_least| pod.priority >= at_least)
            || self
                .critical
                .selector
                .as_ref()
                .is_some_and(|s| s.is_valid() && s.matches(&pod.labels))
    }

    /// Whether and why the policy keeps a pod (`critical` or not) off `node`: spot nodes
    /// with a termination notice take no pod, and critical pods take no spot node.
    pub fn excluded(&self, critical: bool, node: &Node) -> Option<Exclusion> {
        if self.capacity(node) != Capacity::Spot {
            return None;
        }
        if let Some(signal) = self.notice(node) {
            return Some(Exclusion::Noticed(signal));
        }
        critical.then_some(Exclusion::CriticalOffSpot)
    }

    /// Why the policy keeps a pod (`critical` or not) off `node`, if it does.
    pub fn exclusion(&self, critical: bool, node: &Node) -> Option<Reason> {
        self.excluded(critical, node).map(Exclusion::reason)
    }

    /// The prioritize score of `node` for `pod`, 0 to [`MAX_SCORE`] (see
    /// [`Policy::score_for`]).
    pub fn score(&self, pod: &Pod, node: &Node) -> i64 {
        self.score_for(self.is_critical(pod), node)
    }

    /// The prioritize score of `node` for a pod that is `critical` or not: the capacity
    /// the pod prefers (on-demand, or unknown, for critical pods; spot for the others)
    /// scores highest; a node with a termination notice scores 0.
    pub fn score_for(&self, critical: bool, node: &Node) -> i64 {
        let spot = self.capacity(node) == Capacity::Spot;
        // The notice only matters on a node the pod would like: checked last.
        if spot != critical && self.notice(node).is_none() {
            MAX_SCORE
        } else {
            0
        }
    }
}

/// Why the policy keeps a pod off a spot node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exclusion {
    /// The node carries a termination notice (the signal, described).
    Noticed(String),
    /// The pod is critical.
    CriticalOffSpot,
}

impl Exclusion {
    /// The reason as a filter status reports it.
    pub fn reason(self) -> Reason {
        match self {
            Exclusion::Noticed(signal) => Reason::Owned(format!(
                "node(s) were spot capacity with a termination notice ({signal})"
            )),
            Exclusion::CriticalOffSpot => {
                Reason::Borrowed("node(s) were spot capacity, which critical pods avoid")
            }
        }
    }
}

/// The policy as one decision applies it: the preemptor's criticality worked out once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Applied<'a> {
    pub policy: &'a Policy,
    pub critical: bool,
}

impl<'a> Applied<'a> {
    pub(crate) fn new(policy: &'a Policy, preemptor: &Pod) -> Self {
        Applied {
            policy,
            critical: policy.is_critical(preemptor),
        }
    }

    /// The filter status of a node the policy rules out.
    pub(crate) fn filter_status(&self, node: &Node) -> Option<Status> {
        let reason = self.policy.exclusion(self.critical, node)?;
        let mut reasons = Reasons::new();
        reasons.push(reason);
        Some(Status {
            code: Code::UnschedulableAndUnresolvable,
            plugin: PLUGIN,
            reasons,
        })
    }
}

/// The preemption status of a candidate strict PDB mode drops.
pub(crate) fn strict_pdb_status() -> Status {
    let mut reasons = Reasons::new();
    reasons.push(Reason::Borrowed(
        "preemption would violate a PodDisruptionBudget (pdbMode strict)",
    ));
    Status {
        code: Code::UnschedulableAndUnresolvable,
        plugin: PLUGIN,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::test_support::*;
    use crate::model::{Labels, NodeCondition, Taint};

    fn labelled(name: &str, labels: &[(&str, &str)]) -> Node {
        let mut n = node(name, 1000, GI);
        n.labels = labels.iter().copied().collect::<Labels>();
        n
    }

    fn with_taint(mut n: Node, key: &str, value: &str) -> Node {
        n.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect: TaintEffect::NoSchedule,
        });
        n
    }

    #[test]
    fn the_default_capacity_labels_are_recognised() {
        let policy = Policy::default();
        for (key, value, capacity) in [
            ("node.kubernetes.io/capacity", "spot", Capacity::Spot),
            (
                "node.kubernetes.io/capacity",
                "on-demand",
                Capacity::OnDemand,
            ),
            ("karpenter.sh/capacity-type", "spot", Capacity::Spot),
            (
                "karpenter.sh/capacity-type",
                "on-demand",
                Capacity::OnDemand,
            ),
            ("karpenter.sh/capacity-type", "reserved", Capacity::Unknown),
            ("eks.amazonaws.com/capacityType", "SPOT", Capacity::Spot),
            (
                "eks.amazonaws.com/capacityType",
                "ON_DEMAND",
                Capacity::OnDemand,
            ),
            ("cloud.google.com/gke-spot", "true", Capacity::Spot),
            ("cloud.google.com/gke-preemptible", "true", Capacity::Spot),
            (
                "kubernetes.azure.com/scalesetpriority",
                "spot",
                Capacity::Spot,
            ),
            (
                "kubernetes.azure.com/scalesetpriority",
                "regular",
                Capacity::Unknown,
            ),
            ("example.com/capacity", "spot", Capacity::Unknown),
        ] {
            let n = labelled("n", &[(key, value)]);
            assert_eq!(policy.capacity(&n), capacity, "{key}={value}");
        }
        assert_eq!(policy.capacity(&labelled("n", &[])), Capacity::Unknown);
    }

    #[test]
    fn the_first_label_with_a_known_value_decides() {
        let policy = Policy::default();
        let n = labelled(
            "n",
            &[
                ("node.kubernetes.io/capacity", "on-demand"),
                ("karpenter.sh/capacity-type", "spot"),
            ],
        );
        assert_eq!(policy.capacity(&n), Capacity::OnDemand);
        let n = labelled(
            "n",
            &[
                ("node.kubernetes.io/capacity", "other"),
                ("karpenter.sh/capacity-type", "spot"),
            ],
        );
        assert_eq!(policy.capacity(&n), Capacity::Spot);
    }

    #[test]
    fn default_notice_taints_match_by_key_and_value_when_given() {
        let policy = Policy::default();
        let spot = || labelled("n", &[("karpenter.sh/capacity-type", "spot")]);
        for (key, value) in [
            ("aws-node-termination-handler/spot-itn", "event-1"),
            ("aws-node-termination-handler/asg-lifecycle-termination", ""),
            ("karpenter.sh/disrupted", ""),
            ("karpenter.sh/disruption", "disrupting"),
            ("cloud.google.com/impending-node-termination", ""),
        ] {
            let n = with_taint(spot(), key, value);
            assert_eq!(policy.notice(&n), Some(format!("taint {key}")), "{key}");
        }
        for (key, value) in [
            ("karpenter.sh/disruption", "candidate"),
            ("aws-node-termination-handler/rebalance-recommendation", ""),
            ("dedicated", "gpu"),
        ] {
            assert_eq!(
                policy.notice(&with_taint(spot(), key, value)),
                None,
                "{key}"
            );
        }
    }

    #[test]
    fn notice_labels_match_by_key_and_value_when_given() {
        let policy = Policy {
            notice_labels: vec![
                NoticeLabel {
                    key: "example.com/reclaim".into(),
                    value: Some("soon".into()),
                },
                NoticeLabel {
                    key: "example.com/draining".into(),
                    value: None,
                },
            ],
            ..Policy::default()
        };
        let n = labelled("n", &[("example.com/reclaim", "soon")]);
        assert_eq!(
            policy.notice(&n).as_deref(),
            Some("label example.com/reclaim=soon")
        );
        assert_eq!(
            policy.notice(&labelled("n", &[("example.com/reclaim", "later")])),
            None
        );
        let n = labelled("n", &[("example.com/draining", "")]);
        assert_eq!(
            policy.notice(&n).as_deref(),
            Some("label example.com/draining=")
        );
    }

    #[test]
    fn notice_annotations_match_by_key_and_value_when_given() {
        let policy = Policy {
            notice_annotations: vec![NoticeLabel {
                key: "example.com/reclaim-at".into(),
                value: None,
            }],
            ..Policy::default()
        };
        let mut n = labelled("n", &[("example.com/reclaim-at", "soon")]);
        assert_eq!(policy.notice(&n), None, "a label is not an annotation");
        n.annotations = [("example.com/reclaim-at", "2026-11-27T05:00:00Z")]
            .into_iter()
            .collect();
        assert_eq!(
            policy.notice(&n).as_deref(),
            Some("annotation example.com/reclaim-at=2026-11-27T05:00:00Z")
        );
    }

    #[test]
    fn the_kubelets_shutdown_condition_is_a_notice_by_default() {
        let policy = Policy::default();
        let condition = |status: &str, message: &str| NodeCondition {
            kind: "Ready".into(),
            status: status.into(),
            reason: "KubeletNotReady".into(),
            message: message.into(),
        };
        let mut n = labelled("n", &[]);
        n.conditions = vec![condition("False", "container runtime is down")];
        assert_eq!(policy.notice(&n), None, "not ready for another reason");
        n.conditions = vec![condition("False", "node is shutting down")];
        assert_eq!(policy.notice(&n).as_deref(), Some("condition Ready=False"));
        n.conditions = vec![condition("True", "node is shutting down")];
        assert_eq!(policy.notice(&n), None);
        let by_type_only = Policy {
            notice_conditions: vec![NoticeCondition {
                kind: "example.com/Reclaiming".into(),
                status: "True".into(),
                message_contains: None,
            }],
            ..Policy::default()
        };
        n.conditions = vec![NodeCondition {
            kind: "example.com/Reclaiming".into(),
            ..condition("True", "")
        }];
        assert_eq!(
            by_type_only.notice(&n).as_deref(),
            Some("condition example.com/Reclaiming=True")
        );
    }

    #[test]
    fn only_spot_nodes_are_ruled_out_for_notices_and_critical_pods() {
        let policy = Policy::default();
        let spot = labelled("s", &[("node.kubernetes.io/capacity", "spot")]);
        let on_demand = labelled("o", &[("node.kubernetes.io/capacity", "on-demand")]);
        let noticed = |n: &Node| with_taint(n.clone(), "karpenter.sh/disrupted", "");
        assert_eq!(policy.exclusion(false, &spot), None);
        assert_eq!(
            policy.exclusion(true, &spot).as_deref(),
            Some("node(s) were spot capacity, which critical pods avoid")
        );
        assert_eq!(
            policy.exclusion(false, &noticed(&spot)).as_deref(),
            Some(
                "node(s) were spot capacity with a termination notice (taint karpenter.sh/disrupted)"
            )
        );
        for critical in [false, true] {
            assert_eq!(policy.exclusion(critical, &on_demand), None);
            assert_eq!(policy.exclusion(critical, &noticed(&on_demand)), None);
            assert_eq!(policy.exclusion(critical, &labelled("u", &[])), None);
        }
    }

    #[test]
    fn critical_pods_by_priority_or_selector() {
        let selector = LabelSelector {
            match_labels: [("tier", "critical")].into_iter().collect(),
            match_expressions: Vec::new(),
        };
        let policy = Policy {
            critical: CriticalPods {
                priority_at_least: Some(1000),
                selector: Some(selector),
            },
            ..Policy::default()
        };
        assert!(policy.is_critical(&pod("p", 1000, 100, 0, None)));
        assert!(!policy.is_critical(&pod("p", 999, 100, 0, None)));
        let mut labelled_pod = pod("p", 0, 100, 0, None);
        labelled_pod.labels = [("tier", "critical")].into_iter().collect();
        assert!(policy.is_critical(&labelled_pod));
        assert!(!Policy::default().is_critical(&pod("p", i32::MAX, 100, 0, None)));
    }

    #[test]
    fn scores_prefer_spot_for_others_and_on_demand_for_critical_pods() {
        let policy = Policy {
            critical: CriticalPods {
                priority_at_least: Some(1000),
                selector: None,
            },
            ..Policy::default()
        };
        let spot = labelled("s", &[("karpenter.sh/capacity-type", "spot")]);
        let on_demand = labelled("o", &[("karpenter.sh/capacity-type", "on-demand")]);
        let unknown = labelled("u", &[]);
        let (batch, critical) = (pod("b", 10, 100, 0, None), pod("c", 1000, 100, 0, None));
        assert_eq!(policy.score(&batch, &spot), MAX_SCORE);
        assert_eq!(policy.score(&batch, &on_demand), 0);
        assert_eq!(policy.score(&batch, &unknown), 0);
        assert_eq!(policy.score(&critical, &spot), 0);
        assert_eq!(policy.score(&critical, &on_demand), MAX_SCORE);
        assert_eq!(policy.score(&critical, &unknown), MAX_SCORE);
        for n in [spot, on_demand, unknown] {
            let noticed = with_taint(n, "aws-node-termination-handler/spot-itn", "e");
            assert_eq!(policy.score(&batch, &noticed), 0);
            assert_eq!(policy.score(&critical, &noticed), 0);
        }
    }
}
