//! Group preemption (kubernetes v1.37 with GenericWorkload on): upstream's
//! PodGroupPostFilter for a pending PodGroup, over the whole cluster.
//!
//! 1. Place the group as it is: when at least its minimum count of members is placed it
//!    schedules without preemption (FITS).
//! 2. Eligibility: preemptionPolicy `Never` (the group's own with PodGroupPreemptionPolicy,
//!    else any member's) is NOT_ELIGIBLE; a lower-priority pod terminating by preemption on
//!    a member's nominated node means a preemption is under way: the members keep their
//!    current nominations.
//! 3. Remove every victim unit ([`super::units`]) below the group's priority and place the
//!    group once; too few members placed is NO_CANDIDATE.
//! 4. Reprieve units in importance order, budget-violating ones first: a unit's pods go
//!    back, and it is kept if every placed member still passes Filter on its node, in
//!    member order with the earlier members assumed.

use ahash::AHashSet as HashSet;

use triomphe::Arc;

use super::decision::Outcome;
use super::placement::{ClusterView, PlacementMemo};
use super::policy::PdbMode;
use super::units::{self, VictimUnit};
use super::version::{FeatureGates, KubernetesVersion};
use super::victims::{Coverage, PdbIndex};
use crate::cache::Snapshot;
use crate::model::{Pod, PodGroup, PodRef, PreemptionPolicy, SchedulingPolicy, Str};

/// How a group decision is made.
#[derive(Clone, Debug, Default)]
pub struct GroupOptions {
    /// Fill [`GroupDecision::notes`] with what each phase found.
    pub explain: bool,
    /// "Now" for pods without `startTime` (Unix nanoseconds); defaults to the clock.
    pub now: Option<i64>,
    /// `Strict`: a decision violating any budget is no candidate.
    pub pdb_mode: PdbMode,
    /// The feature gates in force (their version is the decision's).
    pub gates: FeatureGates,
}

/// What group preemption decided.
#[derive(Clone, Debug)]
pub struct GroupDecision {
    /// What was concluded.
    pub outcome: Outcome,
    /// The pods to evict: units in importance order, each unit's pods in turn.
    pub victims: Vec<PodRef>,
    /// How many victims violate a PodDisruptionBudget (summed over units).
    pub pdb_violations: i32,
    /// Units that are groups among the victims.
    pub pod_group_disruptions: usize,
    /// A node per placed member, in member order.
    pub nominations: Vec<(PodRef, Str)>,
    /// Lower-priority nominations to clear.
    pub nominated_pods_to_clear: Vec<PodRef>,
    /// kube-scheduler style summary.
    pub message: String,
    /// The nodes the decision read, with their generations (the commit re-checks them).
    pub node_generations: Vec<(Str, u64)>,
    /// With `explain`: what each phase found.
    pub notes: Vec<String>,
    /// The kubernetes version whose rules the decision followed.
    pub kubernetes_version: KubernetesVersion,
}

impl GroupDecision {
    fn new(outcome: Outcome, message: String, version: KubernetesVersion) -> Self {
        GroupDecision {
            outcome,
            victims: Vec::new(),
            pdb_violations: 0,
            pod_group_disruptions: 0,
            nominations: Vec::new(),
            nominated_pods_to_clear: Vec::new(),
            message,
            node_generations: Vec::new(),
            notes: Vec::new(),
            kubernetes_version: version,
        }
    }
}

/// Upstream's queue order for a group's pending pods: higher priority first, then (as
/// upstream after scheduling attempts and queue time, which preemptd does not know) by
/// name.
pub fn order_members(members: &mut [Pod]) {
    members.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then_with(|| a.name().cmp(b.name()))
            .then_with(|| a.uid().cmp(b.uid()))
    });
}

/// The group's gang minimum (1 for a basic group), as upstream's PlacementFeasible reads it.
fn min_count(group: &PodGroup) -> usize {
    match group.policy {
        SchedulingPolicy::Gang { min_count } => usize::try_from(min_count).unwrap_or(0),
        SchedulingPolicy::Basic => 1,
    }
}

/// The preemption policy in force for the group (upstream `resolvePreemptionPolicy`).
fn preemption_policy(group: &PodGroup, members: &[Pod], gates: &FeatureGates) -> PreemptionPolicy {
    if gates.pod_group_preemption_policy() {
        return group
            .preemption_policy
            .unwrap_or(PreemptionPolicy::PreemptLowerPriority);
    }
    if members
        .iter()
        .any(|p| p.preemption_policy == PreemptionPolicy::Never)
    {
        PreemptionPolicy::Never
    } else {
        PreemptionPolicy::PreemptLowerPriority
    }
}

/// One placement of the group.
struct Scheduled {
    /// Per member (member order): its node, if placed.
    nodes: Vec<Option<Str>>,
    /// Per member: its placement skipped InterPodAffinity (see
    /// [`super::placement::Placement::inter_pod_skipped`]).
    inter_pod_skipped: Vec<bool>,
    /// Per placed member: how its node was chosen (for `explain`).
    choices: Vec<String>,
    /// At least the minimum count is placed (with the group's bound pods).
    feasible: bool,
    /// Why not, when not.
    message: String,
}

/// Upstream's pod group algorithm: every member in order through placement with the
/// earlier ones assumed, the gang rule checked after each (too few left to reach the
/// minimum stops the loop; reaching it does not: v1.37 places as many as it can). The
/// assumed members are taken out of `view` again, their nominations back, before
/// returning.
fn schedule(
    view: &mut ClusterView,
    members: &[Arc<Pod>],
    min: usize,
    bound: usize,
    explain: bool,
) -> Scheduled {
    let mut nodes = vec![None; members.len()];
    let mut inter_pod_skipped = vec![false; members.len()];
    let mut withdrawn = vec![None; members.len()];
    let mut choices = Vec::new();
    let mut memo = PlacementMemo::default();
    let mut remaining = members.len();
    let mut scheduled = bound;
    let mut first_failure = String::new();
    let mut stopped = remaining + scheduled < min;
    if !stopped {
        for (i, member) in members.iter().enumerate() {
            let placement = view.place_remembering(member, &mut memo, explain);
            inter_pod_skipped[i] = placement.inter_pod_skipped;
            remaining -= 1;
            match placement.node {
                Some(node) => {
                    if explain {
                        choices.push(format!(
                            "member {} goes to {node} (score {} of {} feasible nodes; tied: {})",
                            member.name(),
                            placement.total,
                            placement.feasible,
                            tie_list(&placement.tied)
                        ));
                    }
                    withdrawn[i] = view.assume(member.clone(), &node);
                    nodes[i] = Some(node);
                    scheduled += 1;
                }
                None if first_failure.is_empty() => first_failure = placement.message,
                None => {}
            }
            if remaining + scheduled < min {
                stopped = true;
                break;
            }
        }
    }
    for ((member, node), withdrawn) in members.iter().zip(&nodes).zip(withdrawn) {
        if let Some(node) = node {
            view.forget(member, node, withdrawn);
        }
    }
    let feasible = !stopped && scheduled >= min;
    let message = if feasible {
        String::new()
    } else {
        let count = format!(
            "minCount ({min}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
        );
        if first_failure.is_empty() {
            count
        } else {
            format!("{} {count}", first_failure)
        }
    };
    Scheduled {
        nodes,
        inter_pod_skipped,
        choices,
        feasible,
        message,
    }
}

/// The tied nodes of a member's placement for its note: the first few by name, then how
/// many more (on a large cluster of equal nodes, every member ties on all of them).
fn tie_list(tied: &[Str]) -> String {
    const SHOWN: usize = 8;
    match tied.len() {
        0 => "none".to_string(),
        n if n <= SHOWN => tied.join(", "),
        n => format!("{}, and {} more", tied[..SHOWN].join(", "), n - SHOWN),
    }
}

/// The group's members bound already (they count towards its minimum).
fn bound_members(snapshot: &Snapshot, group: &PodGroup) -> usize {
    snapshot
        .pod_groups
        .bound_members(&group.namespace, &group.name)
        .filter(|member| snapshot.node(&member.node).is_some())
        .count()
}

/// Decides preemption for `group`, whose pending `members` (held nominations filled in)
/// are placed in upstream's order ([`order_members`]).
pub fn decide_group(
    snapshot: &Snapshot,
    group: &PodGroup,
    members: &[Pod],
    options: &GroupOptions,
) -> GroupDecision {
    let span = tracing::info_span!(
        "decide_group",
        group.namespace = %group.namespace,
        group.name = %group.name,
        group.priority = group.priority,
        members = members.len(),
        nodes = snapshot.nodes.len(),
        outcome = tracing::field::Empty,
        victims = tracing::field::Empty,
    );
    let _entered = span.enter();
    let decision = decide_phases(snapshot, group, members, options);
    span.record("outcome", decision.outcome.as_str());
    span.record("victims", decision.victims.len());
    decision
}

fn decide_phases(
    snapshot: &Snapshot,
    group: &PodGroup,
    members: &[Pod],
    options: &GroupOptions,
) -> GroupDecision {
    let version = options.gates.version();
    let now = options.now.unwrap_or_else(super::clock::now_nanos);
    let mut ordered = members.to_vec();
    order_members(&mut ordered);
    let ordered: Vec<Arc<Pod>> = ordered.into_iter().map(Arc::new).collect();
    let min = min_count(group);
    let bound = bound_members(snapshot, group);
    let key = format!("{}/{}", group.namespace, group.name);

    // 1. The group as it is.
    let mut view = ClusterView::new(snapshot, version);
    let as_is = schedule(&mut view, &ordered, min, bound, options.explain);
    if as_is.feasible {
        let placed = as_is.nodes.iter().flatten().count();
        let mut decision = GroupDecision::new(
            Outcome::Fits,
            format!("pod group {key}: {placed}/{} pods placed", ordered.len()),
            version,
        );
        decision.nominations = nominations(&ordered, &as_is.nodes);
        if options.explain {
            decision.notes = as_is.choices;
        }
        return decision;
    }
    let unschedulable = format!("pod group {key} is unschedulable: {}", as_is.message);

    // 2. Eligibility, and a preemption under way.
    if preemption_policy(group, members, &options.gates) == PreemptionPolicy::Never {
        return GroupDecision::new(
            Outcome::NotEligible,
            format!("{unschedulable} preemption: not eligible due to preemptionPolicy=Never."),
            version,
        );
    }
    // Upstream answers success: the members keep their nominations, nothing more is evicted.
    if ongoing_preemption(snapshot, group, &ordered) {
        let mut decision = GroupDecision::new(
            Outcome::Preempt,
            format!("{unschedulable} preemption: ongoing preemption on nominated nodes"),
            version,
        );
        decision.nominations = ordered
            .iter()
            .filter_map(|p| Some((p.pod_ref(), p.nomination()?.clone())))
            .collect();
        return decision;
    }

    // 3. Every lower-priority unit out, the group placed once: on a fresh view of the
    // snapshot (the first placement left the view as it found it), so the units borrow
    // the snapshot's pods and their positions are the view's.
    let (potential, positions) = units::units_below(snapshot, group.priority, now);
    if potential.is_empty() {
        return GroupDecision::new(
            Outcome::NoCandidate,
            format!(
                "{unschedulable} preemption: No preemption victims found for incoming preemptor"
            ),
            version,
        );
    }
    let mut view = ClusterView::new(snapshot, version);
    view.remove_at(&positions);
    let freed = schedule(&mut view, &ordered, min, bound, options.explain);
    view.mark_cycle_states();
    if !freed.feasible {
        return GroupDecision::new(
            Outcome::NoCandidate,
            format!("{unschedulable} preemption: {}", freed.message),
            version,
        );
    }

    // 4. Reprieve.
    let pdbs = PdbIndex::new(&snapshot.pdbs, version);
    let placed: Vec<Placed> = ordered
        .iter()
        .zip(&freed.nodes)
        .zip(&freed.inter_pod_skipped)
        .filter_map(|((pod, node), &inter_pod_skipped)| {
            Some(Placed {
                pod: pod.clone(),
                node: node.clone()?,
                inter_pod_skipped,
            })
        })
        .collect();
    let mut reprieve = Reprieve::new(snapshot, &placed, options.explain);
    // Only the units some member can see or some budget covers need trying in order;
    // the others share one fate, whatever their order.
    let mut coverage = Coverage::default();
    let (mut tried, unseen): (Vec<VictimUnit>, Vec<VictimUnit>) =
        potential.into_iter().partition(|unit| {
            reprieve.sees(unit) || unit.pods.iter().any(|p| pdbs.covers(p, &mut coverage))
        });
    tried.sort_unstable_by(units::importance);
    let (violating, non_violating) = units::split_units_by_violation(tried, &pdbs);
    let mut victims: Vec<VictimUnit> = Vec::new();
    let mut pdb_violations = 0;
    let candidates = violating
        .into_iter()
        .chain(non_violating.into_iter().map(|unit| (unit, 0)));
    for (unit, count) in candidates {
        if !reprieve.try_unit(&mut view, &unit) {
            pdb_violations += count;
            victims.push(unit);
        }
    }
    // No member sees them: they stay out of the view, reprieved unless the members do
    // not fit even without them.
    if !unseen.is_empty() && !reprieve.view_fits(&mut view) {
        for unit in &unseen {
            reprieve.note_unfit(unit);
        }
        victims.extend(unseen);
    }
    victims.sort_unstable_by(units::importance);

    let mut decision = GroupDecision::new(
        Outcome::Preempt,
        format!(
            "{unschedulable} preemption: found a placement for podgroup, preempting {} victims",
            victims.iter().map(|u| u.pods.len()).sum::<usize>()
        ),
        version,
    );
    if options.pdb_mode == PdbMode::Strict && pdb_violations > 0 {
        return GroupDecision::new(
            Outcome::NoCandidate,
            format!(
                "{unschedulable} preemption: preempting would violate {pdb_violations} PodDisruptionBudget(s) and the pdb mode is strict"
            ),
            version,
        );
    }
    decision.pod_group_disruptions = victims.iter().filter(|u| u.is_group()).count();
    decision.victims = victims
        .iter()
        .flat_map(|u| u.pods.iter().map(|p| p.pod_ref()))
        .collect();
    decision.pdb_violations = pdb_violations;
    decision.nominations = nominations(&ordered, &freed.nodes);
    decision.nominated_pods_to_clear = to_clear(snapshot, group.priority);
    decision.node_generations = generations(snapshot, &placed, &victims);
    if options.explain {
        decision.notes = freed.choices;
        decision.notes.extend(reprieve.notes);
    }
    decision
}

/// The placed members' nominations, in member order.
fn nominations(members: &[Arc<Pod>], nodes: &[Option<Str>]) -> Vec<(PodRef, Str)> {
    members
        .iter()
        .zip(nodes)
        .filter_map(|(p, n)| Some((p.pod_ref(), n.clone()?)))
        .collect()
}

/// Upstream clears the lower-priority nominations on the candidate's "node", which for a
/// group is the domain named `cluster`: only pods nominated to a node of that name.
fn to_clear(snapshot: &Snapshot, priority: i32) -> Vec<PodRef> {
    snapshot
        .node(CLUSTER_DOMAIN)
        .map(|info| {
            info.nominated
                .iter()
                .filter(|p| p.priority < priority)
                .map(|p| p.pod_ref())
                .collect()
        })
        .unwrap_or_default()
}

/// The candidate name upstream gives the whole-cluster domain of a group preemption.
const CLUSTER_DOMAIN: &str = "cluster";

/// A lower-priority pod terminating by preemption on a member's nominated node
/// (kubernetes#138710): the group's earlier preemption is still under way.
fn ongoing_preemption(snapshot: &Snapshot, group: &PodGroup, members: &[Arc<Pod>]) -> bool {
    let mut nodes: Vec<&Str> = members.iter().filter_map(|p| p.nomination()).collect();
    nodes.sort();
    nodes.dedup();
    nodes.iter().filter_map(|n| snapshot.node(n)).any(|info| {
        info.pods.iter().any(|p| {
            units::victim_priority(p, &snapshot.pod_groups) < group.priority
                && p.terminating_by_preemption()
        })
    })
}

/// The nodes of the placed members and of the victims, with their generations.
fn generations(snapshot: &Snapshot, placed: &[Placed], victims: &[VictimUnit]) -> Vec<(Str, u64)> {
    let mut names: Vec<&Str> = placed.iter().map(|p| &p.node).collect();
    names.extend(
        victims
            .iter()
            .flat_map(|u| u.pods.iter().filter_map(|p| p.node_name.as_ref())),
    );
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|n| Some((n.clone(), snapshot.node(n)?.generation)))
        .collect()
}

/// A member placed with every potential victim out.
struct Placed {
    pod: Arc<Pod>,
    node: Str,
    /// Its placement skipped InterPodAffinity, so its re-checks do too.
    inter_pod_skipped: bool,
}

/// The reprieve loop's state: the placed members and what can see a unit's pods.
struct Reprieve<'p> {
    placed: &'p [Placed],
    /// Some placed member has inter-pod or spread terms: its Filter reads pods on other
    /// nodes than its own.
    members_look_wide: bool,
    /// The nodes the members are placed on.
    member_nodes: HashSet<&'p str>,
    /// Some pod of the snapshot has required anti-affinity.
    any_anti_affinity: bool,
    /// The snapshot's pods on the members' nodes, by address.
    member_node_pods: HashSet<usize>,
    /// The members' check on the view as it stands, once run.
    view_fits: Option<bool>,
    explain: bool,
    notes: Vec<String>,
}

/// Which placed members' Filter can see a unit's pods.
enum Watchers<'p> {
    /// Any of them: their terms, or the unit's anti-affinity, reach across nodes.
    All,
    /// Only the members on these nodes (none when empty).
    OnNodes(smallvec::SmallVec<[&'p str; 4]>),
}

impl<'p> Reprieve<'p> {
    /// For members `placed` on a view of `snapshot` (whose pods the units hold).
    fn new(snapshot: &Snapshot, placed: &'p [Placed], explain: bool) -> Self {
        let members_look_wide = placed.iter().any(|Placed { pod: p, .. }| {
            !p.details.pod_affinity.is_empty()
                || !p.details.pod_anti_affinity.is_empty()
                || !p.details.topology_spread.is_empty()
        });
        let member_nodes: HashSet<&str> = placed.iter().map(|p| &*p.node).collect();
        Reprieve {
            placed,
            members_look_wide,
            any_anti_affinity: snapshot.anti_affinity_nodes > 0,
            member_node_pods: member_nodes
                .iter()
                .filter_map(|&n| snapshot.node(n))
                .flat_map(|info| info.pods.iter().map(|p| Arc::as_ptr(p) as usize))
                .collect(),
            member_nodes,
            view_fits: None,
            explain,
            notes: Vec::new(),
        }
    }

    /// Whether a placed member's Filter can see `unit`: [`Reprieve::watchers`] are not
    /// none, told without a look at node names.
    fn sees(&self, unit: &VictimUnit) -> bool {
        self.members_look_wide
            || unit.pods.iter().any(|p| {
                (self.any_anti_affinity && p.has_required_anti_affinity())
                    || self.member_node_pods.contains(&(Arc::as_ptr(p) as usize))
            })
    }

    /// Filter on a node reads that node's pods and nominated pods (resources, ports), the
    /// member's own affinity and spread terms over the whole cluster, and the required
    /// anti-affinity of pods anywhere in the cluster. So while no member has affinity or
    /// spread terms and the unit has no pod with anti-affinity, only the members on the
    /// unit's nodes can see it, and returning pods never turns a failing Filter into a
    /// passing one: the other members pass or fail as they do on the view without it.
    fn watchers(&self, unit: &VictimUnit) -> Watchers<'p> {
        if self.members_look_wide
            || unit
                .pods
                .iter()
                .any(|p| !p.details.pod_anti_affinity.is_empty())
        {
            return Watchers::All;
        }
        let mut nodes = smallvec::SmallVec::new();
        for pod in &unit.pods {
            if let Some(&node) = pod
                .node_name
                .as_deref()
                .and_then(|n| self.member_nodes.get(n))
                && !nodes.contains(&node)
            {
                nodes.push(node);
            }
        }
        Watchers::OnNodes(nodes)
    }

    /// Whether every placed member passes Filter on the view as it stands (checked once:
    /// in the cases that ask, only a reprieve changes the answer, and then to yes).
    fn view_fits(&mut self, view: &mut ClusterView) -> bool {
        match self.view_fits {
            Some(fits) => fits,
            None => {
                let fits = self.members_fit(view, None).is_ok();
                self.view_fits = Some(fits);
                fits
            }
        }
    }

    /// With explain, says that `unit` stays a victim because the members do not fit
    /// even without it.
    fn note_unfit(&mut self, unit: &VictimUnit) {
        if self.explain {
            self.notes.push(format!(
                "unit {} stays a victim: the members do not fit even without it",
                describe(unit)
            ));
        }
    }

    /// Returns `unit`'s pods to `view` and keeps them if every placed member still
    /// passes Filter on its node (in order, the earlier ones assumed); else takes them
    /// out again. Whether the unit was reprieved.
    fn try_unit(&mut self, view: &mut ClusterView, unit: &VictimUnit) -> bool {
        let watchers = self.watchers(unit);
        if let Watchers::OnNodes(nodes) = &watchers {
            if !self.view_fits(view) {
                self.note_unfit(unit);
                return false;
            }
            // No member can see it, now or after later reprieves: it stays out of the view.
            if nodes.is_empty() {
                return true;
            }
        }
        for pod in &unit.pods {
            if let Some(node) = &pod.node_name {
                view.add_pod(Arc::clone(pod), node);
            }
        }
        let only = match &watchers {
            Watchers::All => None,
            Watchers::OnNodes(nodes) => Some(nodes.as_slice()),
        };
        let Err((member, node, status)) = self.members_fit(view, only) else {
            // The view now holds the unit, and the members fit on it.
            self.view_fits = Some(true);
            return true;
        };
        if self.explain {
            self.notes.push(format!(
                "unit {} stays a victim: member {} no longer fits on {node}: {}",
                describe(unit),
                member.name(),
                status.reasons.join(", ")
            ));
        }
        view.remove_pods(unit.pods.iter().map(|p| &***p));
        false
    }

    /// Whether every placed member (on `only` nodes, when given) passes Filter on its
    /// node in `view`, in order, the earlier ones assumed (and taken off again); else the
    /// first that does not.
    fn members_fit(
        &self,
        view: &mut ClusterView,
        only: Option<&[&str]>,
    ) -> Result<(), (&'p Pod, &'p Str, super::filters::Status)> {
        let mut failure = None;
        let mut assumed = Vec::new();
        for placed in self.placed {
            if only.is_some_and(|nodes| !nodes.contains(&&*placed.node)) {
                continue;
            }
            let (member, node) = (&placed.pod, &placed.node);
            if let Err(status) = view.fits_as_placed(member, node, placed.inter_pod_skipped) {
                failure = Some((&**member, node, status));
                break;
            }
            view.add_pod(member.clone(), node);
            assumed.push(placed);
        }
        for placed in assumed {
            view.remove_pod_from(&placed.pod, &placed.node);
        }
        failure.map_or(Ok(()), Err)
    }
}

fn describe(unit: &VictimUnit) -> String {
    let names: Vec<String> = unit
        .pods
        .iter()
        .map(|p| format!("{}/{}", p.namespace, p.name()))
        .collect();
    names.join(",")
}

#[cfg(test)]
mod tests;
