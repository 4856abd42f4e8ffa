//! Victim units (kubernetes v1.37 with GenericWorkload on): what preemption evicts as one.
//!
//! * A pod of no group is its own unit, at its own priority.
//! * A pod naming a PodGroup ranks at the group's priority (its own when the group is not
//!   held, as upstream falls back to the pod's) and as a PodGroup unit, even alone.
//! * The pods of a group in disruption mode `all` are one unit: every bound pod naming the
//!   group, on whichever node it runs; evicting the unit evicts them all.
//!
//! Importance (upstream `MoreImportantVictim`): higher priority, then the unit's kind
//! (CompositePodGroup > PodGroup > Pod), then more pods, then the earlier start (the
//! earliest of the unit's pods; a pod without `startTime` counts as now). preemptd breaks
//! remaining ties by the first pod's namespace, name and uid so answers are reproducible.

use ahash::AHashSet as HashSet;
use smallvec::{SmallVec, smallvec};
use std::cmp::Ordering;

use ahash::AHashMap as HashMap;
use triomphe::Arc;

use super::filters::{NodeScratch, PreFilter, Status};
use super::placement::ClusterView;
use super::victims::{Coverage, PdbIndex, Remaining};
use crate::cache::{NodeInfo, PodGroupIndex, Snapshot};
use crate::model::{DisruptionMode, Pod, PodGroup, Str};

/// What a unit is, for importance: upstream's entity key types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnitKind {
    /// A pod of no group.
    Pod,
    /// A PodGroup, or a member of one in disruption mode `single`.
    PodGroup,
}

/// A unit's pods, borrowed from the snapshot: most units are one pod, held inline.
pub type UnitPods<'a> = SmallVec<[&'a Arc<Pod>; 1]>;

/// Pods evicted together.
#[derive(Clone, Debug)]
pub struct VictimUnit<'a> {
    /// The pods, on one node or several; (namespace, name) order within an `all` group
    /// (upstream lists a group's pods in map order, i.e. at random).
    pub pods: UnitPods<'a>,
    /// The unit's priority: its group's, else its pod's.
    pub priority: i32,
    /// Its kind.
    pub kind: UnitKind,
    /// The earliest start of its pods (unset: `now`).
    pub earliest_start: i64,
}

impl<'a> VictimUnit<'a> {
    fn new(pods: UnitPods<'a>, priority: i32, kind: UnitKind, now: i64) -> Self {
        let mut unit = VictimUnit {
            pods,
            priority,
            kind,
            earliest_start: now,
        };
        unit.settle(now);
        unit
    }

    /// Puts an `all` group's pods in (namespace, name) order and sets its start.
    fn settle(&mut self, now: i64) {
        if self.pods.len() > 1 {
            self.pods
                .sort_by(|a, b| (&a.namespace, a.name()).cmp(&(&b.namespace, b.name())));
        }
        self.earliest_start = self
            .pods
            .iter()
            .map(|p| p.start_time.unwrap_or(now))
            .min()
            .unwrap_or(now);
    }

    /// The unit is a group (evicting it disrupts a PodGroup).
    pub fn is_group(&self) -> bool {
        self.kind == UnitKind::PodGroup
    }
}

/// [`VictimUnit`] importance, most important first.
pub fn importance(a: &VictimUnit<'_>, b: &VictimUnit<'_>) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| b.kind.cmp(&a.kind))
        .then_with(|| b.pods.len().cmp(&a.pods.len()))
        .then_with(|| a.earliest_start.cmp(&b.earliest_start))
        .then_with(|| {
            fn key<'u>(u: &'u VictimUnit<'_>) -> Option<(&'u str, &'u str, &'u str)> {
                u.pods.first().map(|p| (&*p.namespace, p.name(), p.uid()))
            }
            key(a).cmp(&key(b))
        })
}

/// The priority a pod is preempted at (upstream `GetPodPriority`): its group's when the
/// group is held, else its own.
pub fn victim_priority(pod: &Pod, groups: &PodGroupIndex) -> i32 {
    pod.details
        .scheduling_group
        .as_ref()
        .and_then(|name| groups.group(&pod.namespace, name))
        .map_or(pod.priority, |group| group.priority)
}

/// PodGroup lookups for many pods. The pods of one template share their details (the
/// cache interns them), so a group is looked up once per (details, namespace) met: a
/// pointer pair hashes far faster than two strings. Addresses are sound keys only while
/// the pods are alive: never keep one past a pass over a snapshot.
struct GroupLookup<'g> {
    groups: &'g PodGroupIndex,
    seen: HashMap<(usize, usize), Option<&'g Arc<PodGroup>>>,
}

impl<'g> GroupLookup<'g> {
    fn new(groups: &'g PodGroupIndex) -> Self {
        GroupLookup {
            groups,
            seen: HashMap::new(),
        }
    }

    /// The group `pod` names (`name`, from its details), if held.
    fn group(&mut self, pod: &Pod, name: &Str) -> Option<&'g Arc<PodGroup>> {
        let key = (
            Arc::as_ptr(&pod.details) as usize,
            pod.namespace.as_bytes().as_ptr() as usize,
        );
        let groups = self.groups;
        *self
            .seen
            .entry(key)
            .or_insert_with(|| groups.group(&pod.namespace, name))
    }
}

/// How `pod` is preempted: its unit's priority and kind, and the group in disruption
/// mode `all` whose unit it belongs to, if any.
fn classify<'g>(
    pod: &Pod,
    groups: &mut GroupLookup<'g>,
) -> (i32, UnitKind, Option<&'g Arc<PodGroup>>) {
    let Some(name) = pod.details.scheduling_group.as_ref() else {
        return (pod.priority, UnitKind::Pod, None);
    };
    match groups.group(pod, name) {
        Some(group) => {
            let all = (group.disruption_mode == DisruptionMode::All).then_some(group);
            (group.priority, UnitKind::PodGroup, all)
        }
        None => (pod.priority, UnitKind::PodGroup, None),
    }
}

/// The group in disruption mode `all` whose unit `pod` belongs to, if any.
fn all_mode_group<'p>(pod: &'p Pod, groups: &mut GroupLookup<'_>) -> Option<&'p Str> {
    classify(pod, groups)
        .2
        .and(pod.details.scheduling_group.as_ref())
}

/// The bound pods of every group in disruption mode `all`, by (namespace, group), each
/// list in (namespace, name) order. One pass over the snapshot's pods, skipped when no
/// such group is held.
pub struct AllModeMembers(HashMap<(Str, Str), Vec<Arc<Pod>>>);

impl AllModeMembers {
    /// The members of `snapshot`'s `all` groups.
    pub fn of(snapshot: &Snapshot) -> Self {
        let mut members: HashMap<(Str, Str), Vec<Arc<Pod>>> = HashMap::new();
        let any = snapshot
            .pod_groups
            .groups()
            .any(|g| g.disruption_mode == DisruptionMode::All);
        if any {
            let mut lookup = GroupLookup::new(&snapshot.pod_groups);
            for info in snapshot.nodes.iter() {
                for pod in &info.pods {
                    if let Some(group) = all_mode_group(pod, &mut lookup) {
                        members
                            .entry((pod.namespace.clone(), group.clone()))
                            .or_default()
                            .push(pod.clone());
                    }
                }
            }
            for list in members.values_mut() {
                list.sort_by(|a, b| (&a.namespace, a.name()).cmp(&(&b.namespace, b.name())));
            }
        }
        AllModeMembers(members)
    }

    /// The pods of `namespace/group`.
    fn get(&self, namespace: &Str, group: &Str) -> Option<&Vec<Arc<Pod>>> {
        self.0.get(&(namespace.clone(), group.clone()))
    }
}

/// Groups the pods preempted below priority `below` into units: each `all` group once
/// (with all its members, wherever they run), every other pod alone. `pods` in any
/// order; units in first-seen order.
pub fn units_of<'p>(
    pods: impl IntoIterator<Item = &'p Arc<Pod>>,
    below: i32,
    groups: &PodGroupIndex,
    all_members: &'p AllModeMembers,
    now: i64,
) -> Vec<VictimUnit<'p>> {
    let mut lookup = GroupLookup::new(groups);
    let mut seen_groups: HashSet<usize> = HashSet::new();
    let mut units = Vec::new();
    for pod in pods {
        let (priority, kind, all) = classify(pod, &mut lookup);
        if priority >= below {
            continue;
        }
        let pods = match all {
            Some(group) => {
                if !seen_groups.insert(Arc::as_ptr(group) as usize) {
                    continue;
                }
                all_members
                    .get(&pod.namespace, &group.name)
                    .map_or_else(|| smallvec![pod], |m| m.iter().collect())
            }
            None => smallvec![pod],
        };
        units.push(VictimUnit::new(pods, priority, kind, now));
    }
    units
}

/// Every unit below priority `below` in `snapshot`, in first-seen order (an `all`
/// group with all its pods, in (namespace, name) order, every other pod alone), and
/// where their pods are: (node index, position among the node's pods), in order. One
/// pass, one group lookup per pod.
pub fn units_below(
    snapshot: &Snapshot,
    below: i32,
    now: i64,
) -> (Vec<VictimUnit<'_>>, Vec<(usize, usize)>) {
    let mut lookup = GroupLookup::new(&snapshot.pod_groups);
    let pods = snapshot.nodes.iter().map(|info| info.pods.len()).sum();
    let mut units: Vec<VictimUnit> = Vec::with_capacity(pods);
    // An `all` group's unit, by the group's address (the snapshot holds it).
    let mut all_units: HashMap<usize, usize> = HashMap::new();
    let mut positions = Vec::with_capacity(pods);
    for (index, info) in snapshot.nodes.iter().enumerate() {
        for (position, pod) in info.pods.iter().enumerate() {
            let (priority, kind, all) = classify(pod, &mut lookup);
            if priority >= below {
                continue;
            }
            positions.push((index, position));
            let group_unit = all.map(|group| {
                *all_units
                    .entry(Arc::as_ptr(group) as usize)
                    .or_insert(units.len())
            });
            match group_unit {
                Some(i) if i < units.len() => units[i].pods.push(pod),
                _ => units.push(VictimUnit {
                    pods: smallvec![pod],
                    priority,
                    kind,
                    earliest_start: pod.start_time.unwrap_or(now),
                }),
            }
        }
    }
    for &i in all_units.values() {
        units[i].settle(now);
    }
    (units, positions)
}

/// Splits importance-ordered units into violating ones (with how many of their pods
/// violate a budget) and the others: a unit violates when any pod of it does, every pod
/// charged in turn (upstream `FilterVictimsWithPDBViolation`).
pub(crate) fn split_units_by_violation<'a>(
    units: Vec<VictimUnit<'a>>,
    pdbs: &PdbIndex<'_>,
) -> (Vec<(VictimUnit<'a>, i32)>, Vec<VictimUnit<'a>>) {
    let mut remaining = Remaining::default();
    let mut coverage = Coverage::default();
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for unit in units {
        let count = unit
            .pods
            .iter()
            .filter(|p| pdbs.charge(p, &mut remaining, &mut coverage))
            .count();
        if count > 0 {
            violating.push((unit, i32::try_from(count).unwrap_or(i32::MAX)));
        } else {
            non_violating.push(unit);
        }
    }
    (violating, non_violating)
}

/// What per-pod preemption needs to select units on a node: the snapshot's groups and
/// their `all` members, built once per decision.
pub(crate) struct UnitContext<'s> {
    snapshot: &'s Snapshot,
    all_members: AllModeMembers,
    version: super::version::KubernetesVersion,
}

impl<'s> UnitContext<'s> {
    /// For decisions on `snapshot` with `gates`; `None` when pods are pods (GenericWorkload
    /// off, or no pod names a group).
    pub(crate) fn new(
        snapshot: &'s Snapshot,
        gates: &super::version::FeatureGates,
    ) -> Option<Self> {
        if !gates.generic_workload() {
            return None;
        }
        let any_member = snapshot.nodes.iter().any(|info| {
            info.pods
                .iter()
                .any(|p| p.details.scheduling_group.is_some())
        });
        any_member.then(|| UnitContext {
            snapshot,
            all_members: AllModeMembers::of(snapshot),
            version: gates.version(),
        })
    }

    /// The priority `pod` is preempted at.
    pub(crate) fn priority(&self, pod: &Pod) -> i32 {
        victim_priority(pod, &self.snapshot.pod_groups)
    }
}

/// Upstream `SelectVictimsOnNode` with victim units: every unit on `info` below the
/// preemptor's priority leaves (an `all` group from every node it runs on), the preemptor
/// must fit, then units are reprieved, budget-violating ones first, each in importance
/// order. Returns the victims (units in importance order, flattened) and the violating
/// pods' count, or the node's failure.
///
/// A unit with pods on other nodes changes what the preemptor's PreFilter counted there
/// (spread and inter-pod terms) without changing those nodes: when the preemptor's Filter
/// reads other nodes at all, the node is checked on a view of the cluster without the
/// removed pods. Otherwise only the node's own pods matter and its scratch copy does.
pub(crate) fn select_unit_victims_on_node(
    pre: &PreFilter<'_>,
    info: &NodeInfo,
    context: &UnitContext<'_>,
    pdbs: &PdbIndex<'_>,
    now: i64,
) -> Result<(Vec<Arc<Pod>>, i32), Status> {
    let preemptor = pre.pod;
    let groups = &context.snapshot.pod_groups;
    let potential = units_of(
        info.pods.iter(),
        preemptor.priority,
        groups,
        &context.all_members,
        now,
    );
    if potential.is_empty() {
        return Err(super::victims::no_victims());
    }
    let spans_nodes = pre.reads_other_nodes()
        && potential.iter().any(|u| {
            u.pods
                .iter()
                .any(|p| p.node_name.as_ref() != Some(&info.name))
        });
    let mut checker = if spans_nodes {
        Checker::View(Box::new(ClusterView::new(
            context.snapshot,
            context.version,
        )))
    } else {
        let scratch = pre.scratch(info).ok_or_else(super::victims::no_victims)?;
        Checker::Scratch(Box::new(scratch))
    };
    for unit in &potential {
        checker.remove(pre, info, unit);
    }
    checker.fits(pre, info)?;
    let mut ordered = potential;
    ordered.sort_unstable_by(importance);
    let (violating, non_violating) = split_units_by_violation(ordered, pdbs);
    let both = !violating.is_empty() && !non_violating.is_empty();
    let mut victims: Vec<VictimUnit<'_>> = Vec::new();
    let mut pdb_violations = 0;
    let candidates = violating
        .into_iter()
        .chain(non_violating.into_iter().map(|unit| (unit, 0)));
    for (unit, count) in candidates {
        checker.restore(pre, info, &unit);
        if checker.fits(pre, info).is_err() {
            checker.remove(pre, info, &unit);
            pdb_violations += count;
            victims.push(unit);
        }
    }
    if both {
        victims.sort_unstable_by(importance);
    }
    let pods: Vec<Arc<Pod>> = victims
        .into_iter()
        .flat_map(|u| u.pods)
        .map(Arc::clone)
        .collect();
    if pods.is_empty() {
        return Err(super::victims::no_victims_evicted());
    }
    Ok((pods, pdb_violations))
}

/// Where a dry run's removals and returns are made.
enum Checker<'n> {
    /// Every unit on the node only: its scratch copy.
    Scratch(Box<NodeScratch<'n>>),
    /// Some unit spans nodes: a view of the whole cluster.
    View(Box<ClusterView>),
}

impl Checker<'_> {
    fn remove(&mut self, pre: &PreFilter<'_>, info: &NodeInfo, unit: &VictimUnit<'_>) {
        match self {
            Checker::Scratch(scratch) => {
                for pod in &unit.pods {
                    if let Some(i) = info.pods.iter().position(|p| Arc::ptr_eq(p, pod)) {
                        pre.remove_bound(scratch, i);
                    }
                }
            }
            Checker::View(view) => {
                view.remove_pods(unit.pods.iter().map(|p| &***p));
            }
        }
    }

    fn restore(&mut self, pre: &PreFilter<'_>, info: &NodeInfo, unit: &VictimUnit<'_>) {
        match self {
            Checker::Scratch(scratch) => {
                for pod in &unit.pods {
                    if let Some(i) = info.pods.iter().position(|p| Arc::ptr_eq(p, pod)) {
                        pre.restore_bound(scratch, i);
                    }
                }
            }
            Checker::View(view) => {
                for pod in &unit.pods {
                    if let Some(node) = &pod.node_name {
                        view.add_pod(Arc::clone(pod), node);
                    }
                }
            }
        }
    }

    fn fits(&mut self, pre: &PreFilter<'_>, info: &NodeInfo) -> Result<(), Status> {
        match self {
            Checker::Scratch(scratch) => {
                let status = pre.fits_with_nominated(scratch);
                if status.is_success() {
                    Ok(())
                } else {
                    Err(status)
                }
            }
            Checker::View(view) => view.fits(pre.pod, &info.name),
        }
    }
}

#[cfg(test)]
mod tests;
