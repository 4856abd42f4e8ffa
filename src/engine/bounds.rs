//! Lower bounds on a node's pick score from resources alone, so the exhaustive candidate
//! search can skip nodes that provably cannot win, without changing the decision.
//!
//! For the resource filters, removing pods never hurts. So if the victims V make the
//! preemptor fit, removing every lower-priority pod with priority ≤ max(V) also frees
//! enough: the smallest priority level whose removal frees the deficit bounds the highest
//! victim priority from below. The deficit over the largest single request bounds the
//! victim count, and both bound the shifted priority sum.

use super::filters::{Occupied, PreFilter};
use crate::cache::{NodeInfo, NodeSummary, PriorityLevel};
use crate::model::{Pod, Resources};

/// Component-wise lower bounds of (highest victim priority, shifted sum, victim count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Bound {
    pub highest: i64,
    pub sum: i64,
    pub count: i64,
    /// Upper bound of criterion 5 (earliest start among the highest-priority victims) when
    /// the highest victim priority is `highest`: the latest start at that priority.
    pub latest_start: i64,
}

impl Bound {
    /// As a pick-score key (PDB violations ≥ 0 first), comparable with
    /// [`super::score_key`]: a node whose bound key is greater than the best candidate's
    /// key cannot win.
    pub fn key(&self) -> [i64; 4] {
        [0, self.highest, self.sum, self.count]
    }

    /// Whether a node with this bound provably loses to a candidate with `best` key and
    /// criterion-5 value `best_start` (`now` stands for unset start times).
    pub fn loses_to(&self, best: [i64; 4], best_start: i64, now: i64) -> bool {
        let key = self.key();
        let latest = if self.latest_start == i64::MAX {
            now
        } else {
            self.latest_start
        };
        key > best || (key == best && latest < best_start)
    }

    /// Sort key: most promising first.
    pub fn order(&self) -> ([i64; 4], std::cmp::Reverse<i64>) {
        (self.key(), std::cmp::Reverse(self.latest_start))
    }
}

const SHIFT: i64 = i32::MAX as i64 + 1;

fn ceil_div(a: i64, b: i64) -> i64 {
    if b <= 0 { i64::MAX } else { (a + b - 1) / b }
}

/// `None` when the preemptor cannot fit on the node even with every lower-priority pod
/// gone (or there is no lower-priority pod): the node is no candidate.
pub(crate) fn bound(pre: &PreFilter<'_>, info: &NodeInfo) -> Option<Bound> {
    let pod = pre.pod;
    let node = info.node.as_deref()?;
    let alloc = &node.allocatable;
    let mut used = [
        info.requested.milli_cpu,
        info.requested.memory,
        info.requested.ephemeral_storage,
    ];
    let mut pods = info.pods.len() as i64;
    for n in pre.nominated_pods(info) {
        used[0] += n.requests.milli_cpu;
        used[1] += n.requests.memory;
        used[2] += n.requests.ephemeral_storage;
        pods += 1;
    }
    let below = info.levels.partition_point(|l| l.priority < pod.priority);
    bound_from(
        &pod.requests,
        [
            alloc.milli_cpu,
            alloc.memory,
            alloc.ephemeral_storage,
            alloc.pods,
        ],
        used,
        pods,
        &info.levels[..below],
    )
}

/// [`bound`] from a node digest and the room its nominated pods take; `None` inside when the digest does not hold every level
/// below the preemptor (the caller then reads the node entry).
// Inlined (as `bound_from`) so the bound stays in registers up to the caller's push:
// returned through the stack it cost a store-forwarding stall per node.
#[inline(always)]
pub(crate) fn bound_of_summary(
    pod: &Pod,
    summary: &NodeSummary,
    nominated: &Occupied,
) -> Option<Option<Bound>> {
    let lower = summary.levels_below(pod.priority)?;
    let [cpu, memory, storage] = summary.requested;
    let [add_cpu, add_memory, add_storage] = nominated.requested;
    Some(bound_from(
        &pod.requests,
        summary.allocatable,
        [cpu + add_cpu, memory + add_memory, storage + add_storage],
        summary.pods as i64 + nominated.pods,
        lower,
    ))
}

/// The bound for a preemptor requesting `want` on a node with `allocatable` (milli-CPU,
/// memory, ephemeral storage, pod slots), `used` by `pods` pods (bound and nominated), whose
/// lower-priority pods' requests are `lower` (ascending by priority).
#[inline(always)]
fn bound_from(
    want: &Resources,
    allocatable: [i64; 4],
    used: [i64; 3],
    pods: i64,
    lower: &[PriorityLevel],
) -> Option<Bound> {
    let cpu = used[0] + want.milli_cpu;
    let memory = used[1] + want.memory;
    let storage = used[2] + want.ephemeral_storage;
    let slots = pods + 1;
    // Only resources the preemptor requests are checked (and none when it requests
    // nothing but a pod slot).
    let checked = !want.is_zero_request();
    let deficit = |used: i64, have: i64, requested: i64| {
        if checked && requested > 0 {
            (used - have).max(0)
        } else {
            0
        }
    };
    let d_cpu = deficit(cpu, allocatable[0], want.milli_cpu);
    let d_memory = deficit(memory, allocatable[1], want.memory);
    let d_storage = deficit(storage, allocatable[2], want.ephemeral_storage);
    let d_slots = (slots - allocatable[3]).max(0);

    let lowest = lower.first()?.priority as i64;
    if d_cpu == 0 && d_memory == 0 && d_storage == 0 && d_slots == 0 {
        // Resources fit already; some other filter needs at least one victim.
        return Some(Bound {
            highest: lowest,
            sum: lowest + SHIFT,
            count: 1,
            latest_start: lower[0].latest_start,
        });
    }
    let (mut f_cpu, mut f_memory, mut f_storage, mut f_slots) = (0, 0, 0, 0);
    let mut highest = None;
    let mut latest_start = i64::MAX;
    // The largest single request below the preemptor, and (in the same pass) the
    // smallest level whose removal with every level under it frees the deficit.
    let (mut max_cpu, mut max_memory, mut max_storage) = (0, 0, 0);
    for level in lower {
        max_cpu = max_cpu.max(level.max_milli_cpu);
        max_memory = max_memory.max(level.max_memory);
        max_storage = max_storage.max(level.max_ephemeral_storage);
        if highest.is_some() {
            continue;
        }
        f_cpu += level.milli_cpu;
        f_memory += level.memory;
        f_storage += level.ephemeral_storage;
        f_slots += level.pods;
        if f_cpu >= d_cpu && f_memory >= d_memory && f_storage >= d_storage && f_slots >= d_slots {
            highest = Some(level.priority as i64);
            latest_start = level.latest_start;
        }
    }
    let highest = highest?;
    let mut count = 1.max(d_slots);
    for (deficit, largest) in [
        (d_cpu, max_cpu),
        (d_memory, max_memory),
        (d_storage, max_storage),
    ] {
        if deficit > 0 {
            count = count.max(ceil_div(deficit, largest));
        }
    }
    Some(Bound {
        highest,
        sum: (highest + SHIFT) + (count - 1) * (lowest + SHIFT),
        count,
        latest_start,
    })
}
