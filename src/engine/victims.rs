//! Victim selection on one node (upstream `SelectVictimsOnNode`) and PDB budget
//! consumption (`filterPodsWithPDBViolation`; from v1.37 `FilterVictimsWithPDBViolation`).

use std::cmp::{Ordering, Reverse};

use ahash::AHashMap as HashMap;
use smallvec::SmallVec;
use triomphe::Arc;

use super::filters::{Code, PreFilter, Status};
use super::version::KubernetesVersion;
use crate::cache::NodeInfo;
use crate::model::{Pod, PodDisruptionBudget, Str};

/// Importance order (upstream `MoreImportantPod`): higher priority first, then earlier
/// start (unset = now); remaining ties by namespace/name so results are reproducible.
pub(crate) fn importance(a: &Pod, b: &Pod, now: i64) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| {
            a.start_time
                .unwrap_or(now)
                .cmp(&b.start_time.unwrap_or(now))
        })
        .then_with(|| a.namespace.cmp(&b.namespace))
        .then_with(|| a.name().cmp(b.name()))
        .then_with(|| a.uid().cmp(b.uid()))
}

/// PDBs grouped by namespace, keeping the cluster order inside each group: (namespace,
/// name), as the cache lists them, so a victim's budgets are walked in name order
/// whatever order they arrived in (v1.37's classification depends on that order).
pub(crate) struct PdbIndex<'a> {
    pdbs: &'a [Arc<PodDisruptionBudget>],
    by_namespace: HashMap<Str, Vec<usize>>,
    version: KubernetesVersion,
}

/// Which budgets cover pods, by (label set, namespace) address, for one decision's dry
/// runs: the cache interns both, so the pods of a workload share one entry. Addresses are
/// sound keys only while the snapshot keeps the pods alive: never keep one past a call.
#[derive(Default)]
pub(crate) struct Coverage(HashMap<(usize, usize), SmallVec<[usize; 2]>>);

impl<'a> PdbIndex<'a> {
    pub(super) fn new(pdbs: &'a [Arc<PodDisruptionBudget>], version: KubernetesVersion) -> Self {
        let mut by_namespace: HashMap<Str, Vec<usize>> = HashMap::new();
        for (i, pdb) in pdbs.iter().enumerate() {
            by_namespace
                .entry(pdb.namespace.clone())
                .or_default()
                .push(i);
        }
        PdbIndex {
            pdbs,
            by_namespace,
            version,
        }
    }

    /// Whether some budget covers `pod`.
    pub(super) fn covers(&self, pod: &Pod, coverage: &mut Coverage) -> bool {
        self.may_cover(pod) && !self.covering(pod, coverage).is_empty()
    }

    /// A budget could cover `pod`: upstream skips pods without labels.
    fn may_cover(&self, pod: &Pod) -> bool {
        !self.pdbs.is_empty() && !pod.labels.is_empty()
    }

    /// The budgets (indices, cluster order) that cover `pod`.
    fn covering<'c>(&self, pod: &Pod, coverage: &'c mut Coverage) -> &'c [usize] {
        let key = (
            pod.labels.addr(),
            pod.namespace.as_bytes().as_ptr() as usize,
        );
        coverage.0.entry(key).or_insert_with(|| {
            self.by_namespace
                .get(&pod.namespace)
                .map(|group| {
                    group
                        .iter()
                        .copied()
                        .filter(|&i| self.pdbs[i].covers(pod))
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// With `explain`, for a candidate node: a note per potential victim (a pod of lower
    /// priority than `priority`) that two or more budgets cover, when the version's
    /// classification depends on the order they are walked in. Upstream walks them in
    /// its informer's (random) order; preemptd in (namespace, name) order.
    pub(super) fn order_notes(&self, info: &NodeInfo, priority: i32) -> Vec<String> {
        if !self.version.stops_at_first_violated_budget() {
            return Vec::new();
        }
        let mut coverage = Coverage::default();
        let mut notes = Vec::new();
        for pod in info.pods.iter().filter(|p| p.priority < priority) {
            let covering = self.covering(pod, &mut coverage);
            if covering.len() < 2 {
                continue;
            }
            let names: Vec<&str> = covering.iter().map(|&i| &*self.pdbs[i].name).collect();
            notes.push(format!(
                "pod {}/{} is covered by {} PodDisruptionBudgets; kubernetes {} stops at the first that goes negative, in an order upstream leaves to chance: walked in (namespace, name) order: {}",
                pod.namespace,
                pod.name(),
                names.len(),
                self.version,
                names.join(", ")
            ));
        }
        notes
    }

    /// Splits importance-ordered pods into (violating, non-violating), consuming a
    /// per-call copy of every matching PDB's `disruptionsAllowed`.
    pub(super) fn split_by_violation<'p>(
        &self,
        pods: &[&'p Arc<Pod>],
        coverage: &mut Coverage,
    ) -> (Vec<&'p Arc<Pod>>, Vec<&'p Arc<Pod>>) {
        let mut remaining = Remaining::default();
        let mut violating = Vec::new();
        let mut non_violating = Vec::with_capacity(pods.len());
        for pod in pods {
            if self.charge(pod, &mut remaining, coverage) {
                violating.push(*pod);
            } else {
                non_violating.push(*pod);
            }
        }
        (violating, non_violating)
    }

    /// Charges `pod`'s eviction to the budgets covering it (`remaining` holds the
    /// per-call copies of their `disruptionsAllowed`); whether it violates one.
    pub(super) fn charge(
        &self,
        pod: &Pod,
        remaining: &mut Remaining,
        coverage: &mut Coverage,
    ) -> bool {
        let mut violated = false;
        if !self.may_cover(pod) {
            return false;
        }
        for &index in self.covering(pod, coverage) {
            let pdb = &self.pdbs[index];
            // Already being disrupted through the API: not a violation, and the
            // budget was already charged for it.
            if pdb.disrupted_pods.iter().any(|n| **n == *pod.name()) {
                continue;
            }
            let slot = match remaining.0.iter().position(|&(i, _)| i == index) {
                Some(slot) => slot,
                None => {
                    remaining.0.push((index, pdb.disruptions_allowed));
                    remaining.0.len() - 1
                }
            };
            remaining.0[slot].1 -= 1;
            if remaining.0[slot].1 < 0 {
                violated = true;
                // v1.37 stops charging the pod's later budgets here; earlier
                // versions charge every one.
                if self.version.stops_at_first_violated_budget() {
                    break;
                }
            }
        }
        violated
    }
}

/// Budgets touched by one classification, copied on first use (few per call).
#[derive(Default)]
pub(crate) struct Remaining(Vec<(usize, i32)>);

/// Remove every lower-priority pod, check the preemptor fits, then reprieve greedily —
/// PDB-violating pods first, then the rest, each in importance order. Returns the victims
/// (importance order) and the number of PDB violations, or the node's failure status.
pub(crate) fn select_victims_on_node(
    pre: &PreFilter<'_>,
    info: &NodeInfo,
    pdbs: &PdbIndex<'_>,
    coverage: &mut Coverage,
    now: i64,
) -> Result<(Vec<Arc<Pod>>, i32), Status> {
    let preemptor = pre.pod;
    let Some(mut scratch) = pre.scratch(info) else {
        return Err(no_victims());
    };
    let mut potential: Vec<usize> = Vec::with_capacity(info.pods.len());
    for (i, pod) in info.pods.iter().enumerate() {
        if pod.priority < preemptor.priority {
            potential.push(i);
            pre.remove_bound(&mut scratch, i);
        }
    }
    if potential.is_empty() {
        return Err(no_victims());
    }
    let status = pre.fits_with_nominated(&mut scratch);
    if !status.is_success() {
        return Err(status);
    }
    sort_by_importance(&mut potential, &info.pods, now);
    let ordered: Vec<&Arc<Pod>> = potential.iter().map(|&i| &info.pods[i]).collect();
    let (violating, non_violating) = pdbs.split_by_violation(&ordered, coverage);
    let index_of = |pod: &Arc<Pod>| -> usize {
        potential
            .iter()
            .copied()
            .find(|&i| Arc::ptr_eq(&info.pods[i], pod))
            .unwrap_or_default()
    };
    let mut victims: Vec<Arc<Pod>> = Vec::new();
    let mut pdb_violations = 0;
    let both = !violating.is_empty() && !non_violating.is_empty();
    for (list, counts) in [(violating, true), (non_violating, false)] {
        for pod in list {
            let index = index_of(pod);
            pre.restore_bound(&mut scratch, index);
            if !pre.fits_with_nominated(&mut scratch).is_success() {
                pre.remove_bound(&mut scratch, index);
                victims.push(pod.clone());
                if counts {
                    pdb_violations += 1;
                }
            }
        }
    }
    if both {
        victims.sort_unstable_by(|a, b| importance(a, b, now));
    }
    if victims.is_empty() {
        return Err(no_victims_evicted());
    }
    Ok((victims, pdb_violations))
}

/// Sorts indices into `pods` by [`importance`], most important first. The priority and
/// start time that decide nearly every comparison are read once per pod rather than
/// through two pointers per comparison. Importance is a total order (the UID breaks
/// ties), so the unstable sort is exact.
fn sort_by_importance(indices: &mut [usize], pods: &[Arc<Pod>], now: i64) {
    let mut keyed: Vec<(Reverse<i32>, i64, usize)> = indices
        .iter()
        .map(|&i| {
            (
                Reverse(pods[i].priority),
                pods[i].start_time.unwrap_or(now),
                i,
            )
        })
        .collect();
    keyed.sort_unstable_by(|a, b| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then_with(|| importance(&pods[a.2], &pods[b.2], now))
    });
    for (slot, (_, _, i)) in indices.iter_mut().zip(keyed) {
        *slot = i;
    }
}

/// Upstream turns success without victims into an error for the node.
pub(crate) fn no_victims_evicted() -> Status {
    Status {
        code: Code::UnschedulableAndUnresolvable,
        plugin: "DefaultPreemption",
        reasons: smallvec::smallvec!["preemption found no victims to evict on this node".into()],
    }
}

pub(crate) fn no_victims() -> Status {
    Status {
        code: Code::UnschedulableAndUnresolvable,
        plugin: "DefaultPreemption",
        reasons: smallvec::smallvec!["No preemption victims found for incoming pod".into()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::ClusterCache;
    use crate::engine::test_support::*;
    use crate::engine::{DecideOptions, Outcome, decide};
    use crate::model::{LabelSelector, Labels};

    /// A budget on `app` pods of `default` with `allowed` disruptions left.
    fn budget(name: &str, app: &str, allowed: i32) -> PodDisruptionBudget {
        PodDisruptionBudget {
            namespace: "default".into(),
            name: name.into(),
            uid: name.into(),
            resource_version: 0,
            selector: Some(LabelSelector {
                match_labels: [("app", app)].into_iter().collect(),
                match_expressions: Vec::new(),
            }),
            disruptions_allowed: allowed,
            disrupted_pods: Vec::new(),
        }
    }

    fn labelled(mut p: Pod, pairs: &[(&str, &str)]) -> Pod {
        p.labels = pairs.iter().copied().collect::<Labels>();
        p
    }

    /// `web-1` (more important) is covered by `a-exhausted` (0 left) and `b-shared` (1
    /// left); `web-2` by `b-shared` only. Every pod must go for the preemptor to fit.
    /// v1.35/v1.36 charge both of web-1's budgets: `b-shared` is spent and web-2
    /// violates it too. v1.37 stops at `a-exhausted`, the first in (namespace, name)
    /// order, so `b-shared` still covers web-2.
    fn two_budget_cluster(budgets_in_reverse: bool) -> crate::cache::Snapshot {
        let cache = ClusterCache::new();
        cache.upsert_node(node("n1", 2000, 4 * GI));
        let web = |name, priority, start, app2: Option<&str>| {
            let mut labels = vec![("app", "web")];
            if let Some(app2) = app2 {
                labels.push(("tier", app2));
            }
            started(
                labelled(pod(name, priority, 1000, GI, Some("n1")), &labels),
                start,
            )
        };
        for p in [web("web-1", 10, 1, Some("gold")), web("web-2", 5, 2, None)] {
            cache.upsert_pod(p).expect("pod loads");
        }
        let mut exhausted = budget("a-exhausted", "web", 0);
        exhausted.selector = Some(LabelSelector {
            match_labels: [("tier", "gold")].into_iter().collect(),
            match_expressions: Vec::new(),
        });
        let mut budgets = vec![exhausted, budget("b-shared", "web", 1)];
        if budgets_in_reverse {
            budgets.reverse();
        }
        for b in budgets {
            cache.upsert_pdb(b);
        }
        cache.snapshot()
    }

    fn split(snapshot: &crate::cache::Snapshot, version: KubernetesVersion) -> [Vec<String>; 2] {
        let index = PdbIndex::new(&snapshot.pdbs, version);
        let info = snapshot.node("n1").expect("node");
        let mut pods: Vec<&Arc<Pod>> = info.pods.iter().collect();
        pods.sort_by(|a, b| importance(a, b, 0));
        let (violating, non_violating) = index.split_by_violation(&pods, &mut Coverage::default());
        let names = |list: Vec<&Arc<Pod>>| list.iter().map(|p| p.name().to_string()).collect();
        [names(violating), names(non_violating)]
    }

    #[test]
    fn v1_37_stops_charging_a_victim_s_budgets_at_the_first_it_violates() {
        for reverse in [false, true] {
            let snapshot = two_budget_cluster(reverse);
            for version in [KubernetesVersion::V1_35, KubernetesVersion::V1_36] {
                assert_eq!(
                    split(&snapshot, version),
                    [vec!["web-1".to_string(), "web-2".to_string()], vec![]],
                    "{version}: every matching budget is charged"
                );
            }
            assert_eq!(
                split(&snapshot, KubernetesVersion::V1_37),
                [vec!["web-1".to_string()], vec!["web-2".to_string()]],
                "1.37, budgets arriving reversed: {reverse}"
            );
        }
    }

    #[test]
    fn per_node_answers_follow_the_version_too() {
        // The extender's `/preempt` asks node by node.
        let snapshot = two_budget_cluster(false);
        let preemptor = pod("p", 1000, 2000, 2 * GI, None);
        let violations = |version| {
            let options = DecideOptions {
                now: Some(0),
                version,
                ..DecideOptions::default()
            };
            let found =
                crate::engine::per_node::victims_on_nodes(&snapshot, &preemptor, &["n1"], &options);
            found[0].as_ref().expect("victims on n1").pdb_violations
        };
        assert_eq!(violations(KubernetesVersion::V1_36), 2);
        assert_eq!(violations(KubernetesVersion::V1_37), 1);
    }

    #[test]
    fn the_decision_counts_violations_by_the_version_s_rule_and_explains_the_order() {
        let snapshot = two_budget_cluster(true);
        let preemptor = pod("p", 1000, 2000, 2 * GI, None);
        let decide_as = |version, explain| {
            let options = DecideOptions {
                now: Some(0),
                version,
                explain,
                ..DecideOptions::default()
            };
            decide(&snapshot, &preemptor, &options)
        };
        let v135 = decide_as(KubernetesVersion::V1_35, true);
        let v137 = decide_as(KubernetesVersion::V1_37, true);
        assert_eq!(v135.outcome, Outcome::Preempt);
        assert_eq!(v137.outcome, Outcome::Preempt);
        assert_eq!(v135.victims.len(), 2);
        assert_eq!((v135.pdb_violations, v137.pdb_violations), (2, 1));

        assert_eq!(v137.kubernetes_version, KubernetesVersion::V1_37);
        let notes = &v137.diagnostics[0].notes;
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("default/web-1") && notes[0].contains("a-exhausted, b-shared"),
            "{notes:?}"
        );
        // Earlier versions charge every budget: the order cannot matter, nothing to say.
        assert!(v135.diagnostics[0].notes.is_empty());
        assert_eq!(v135.kubernetes_version, KubernetesVersion::V1_35);
        assert!(
            decide_as(KubernetesVersion::V1_37, false)
                .diagnostics
                .is_empty(),
            "notes come with explain only"
        );
    }
}
