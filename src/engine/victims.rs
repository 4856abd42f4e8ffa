//! Victim selection on one node (upstream `SelectVictimsOnNode`) and PDB budget
//! consumption (`filterPodsWithPDBViolation`).

use std::cmp::{Ordering, Reverse};

use ahash::AHashMap as HashMap;
use smallvec::SmallVec;
use triomphe::Arc;

use super::filters::{Code, PreFilter, Status};
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

/// PDBs grouped by namespace, keeping the cluster order inside each group.
pub(crate) struct PdbIndex<'a> {
    pdbs: &'a [Arc<PodDisruptionBudget>],
    by_namespace: HashMap<Str, Vec<usize>>,
}

/// Which budgets cover pods, by (label set, namespace) address, for one decision's dry
/// runs: the cache interns both, so the pods of a workload share one entry. Addresses are
/// sound keys only while the snapshot keeps the pods alive: never keep one past a call.
#[derive(Default)]
pub(crate) struct Coverage(HashMap<(usize, usize), SmallVec<[usize; 2]>>);

impl<'a> PdbIndex<'a> {
    pub(super) fn new(pdbs: &'a [Arc<PodDisruptionBudget>]) -> Self {
        let mut by_namespace: HashMap<Str, Vec<usize>> = HashMap::new();
        for (i, pdb) in pdbs.iter().enumerate() {
            by_namespace
                .entry(pdb.namespace.clone())
                .or_default()
                .push(i);
        }
        PdbIndex { pdbs, by_namespace }
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

    /// Splits importance-ordered pods into (violating, non-violating), consuming a
    /// per-call copy of every matching PDB's `disruptionsAllowed`.
    pub(super) fn split_by_violation<'p>(
        &self,
        pods: &[&'p Arc<Pod>],
        coverage: &mut Coverage,
    ) -> (Vec<&'p Arc<Pod>>, Vec<&'p Arc<Pod>>) {
        // Budgets touched on this node, copied on first use (few per node).
        let mut remaining: Vec<(usize, i32)> = Vec::new();
        let mut violating = Vec::new();
        let mut non_violating = Vec::with_capacity(pods.len());
        for pod in pods {
            let mut violated = false;
            if !pod.labels.is_empty() {
                for &index in self.covering(pod, coverage) {
                    let pdb = &self.pdbs[index];
                    // Already being disrupted through the API: not a violation, and the
                    // budget was already charged for it.
                    if pdb.disrupted_pods.iter().any(|n| **n == *pod.name()) {
                        continue;
                    }
                    let slot = match remaining.iter().position(|&(i, _)| i == index) {
                        Some(slot) => slot,
                        None => {
                            remaining.push((index, pdb.disruptions_allowed));
                            remaining.len() - 1
                        }
                    };
                    remaining[slot].1 -= 1;
                    if remaining[slot].1 < 0 {
                        violated = true;
                    }
                }
            }
            if violated {
                violating.push(*pod);
            } else {
                non_violating.push(*pod);
            }
        }
        (violating, non_violating)
    }
}

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
        // Upstream turns success without victims into an error for this node.
        return Err(Status {
            code: Code::UnschedulableAndUnresolvable,
            plugin: "DefaultPreemption",
            reasons: smallvec::smallvec![
                "preemption found no victims to evict on this node".into()
            ],
        });
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

fn no_victims() -> Status {
    Status {
        code: Code::UnschedulableAndUnresolvable,
        plugin: "DefaultPreemption",
        reasons: smallvec::smallvec!["No preemption victims found for incoming pod".into()],
    }
}
