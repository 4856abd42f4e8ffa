//! Lower bounds on a node's pick score from resources alone, so the exhaustive candidate
//! search can skip nodes that provably cannot win, without changing the decision.
//!
//! For the resource filters, removing pods never hurts. So if the victims V make the
//! preemptor fit, removing every lower-priority pod with priority ≤ max(V) also frees
//! enough: the smallest priority level whose removal frees the deficit bounds the highest
//! victim priority from below. The deficit over the largest single request bounds the
//! victim count, and both bound the shifted priority sum.

use super::candidate::SHIFT;
use super::filters::{Occupied, PreFilter};
use crate::cache::{LevelTotals, NodeInfo, NodeSummary};
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
    /// [`super::candidate::score_key`]: a node whose bound key is greater than the best candidate's
    /// key cannot win.
    pub(super) fn key(&self) -> [i64; 4] {
        [0, self.highest, self.sum, self.count]
    }

    /// Whether a node with this bound provably loses to a candidate with `best` key and
    /// criterion-5 value `best_start` (`now` stands for unset start times).
    pub(super) fn loses_to(&self, best: [i64; 4], best_start: i64, now: i64) -> bool {
        let key = self.key();
        let latest = if self.latest_start == i64::MAX {
            now
        } else {
            self.latest_start
        };
        key > best || (key == best && latest < best_start)
    }

    /// Sort key: most promising first. (The search orders nodes by a packed form of it:
    /// the engine's `Pending`, checked against this.)
    #[cfg(test)]
    pub(super) fn order(&self) -> ([i64; 4], std::cmp::Reverse<i64>) {
        (self.key(), std::cmp::Reverse(self.latest_start))
    }
}

/// `a / b` rounded up, for `a ≥ 0` (without the overflow of `(a + b - 1) / b`).
fn ceil_div(a: i64, b: i64) -> i64 {
    if b <= 0 {
        i64::MAX
    } else {
        a / b + i64::from(a % b != 0)
    }
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
        used[0] += n.requests().milli_cpu;
        used[1] += n.requests().memory;
        used[2] += n.requests().ephemeral_storage;
        pods += 1;
    }
    let below = info.levels.partition_point(|l| l.priority < pod.priority);
    bound_from(
        pod.requests(),
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
        pod.requests(),
        summary.allocatable,
        [cpu + add_cpu, memory + add_memory, storage + add_storage],
        summary.pods as i64 + nominated.pods,
        lower,
    ))
}

/// The bound for a preemptor requesting `want` on a node with `allocatable` (milli-CPU,
/// memory, ephemeral storage, pod slots), `used` by `pods` pods (bound and nominated), whose
/// lower-priority pods' requests are `lower` (ascending by priority; amounts may be
/// overstated, which only weakens the bound).
#[inline(always)]
fn bound_from<L: LevelTotals>(
    want: &Resources,
    allocatable: [i64; 4],
    used: [i64; 3],
    pods: i64,
    lower: &[L],
) -> Option<Bound> {
    // Saturating: clients may send amounts near the i64 limit.
    let cpu = used[0].saturating_add(want.milli_cpu);
    let memory = used[1].saturating_add(want.memory);
    let storage = used[2].saturating_add(want.ephemeral_storage);
    let slots = pods + 1;
    // Only resources the preemptor requests are checked (and none when it requests
    // nothing but a pod slot).
    let checked = !want.is_zero_request();
    let deficit = |used: i64, have: i64, requested: i64| {
        if checked && requested > 0 {
            used.saturating_sub(have).max(0)
        } else {
            0
        }
    };
    let d_cpu = deficit(cpu, allocatable[0], want.milli_cpu);
    let d_memory = deficit(memory, allocatable[1], want.memory);
    let d_storage = deficit(storage, allocatable[2], want.ephemeral_storage);
    let d_slots = (slots - allocatable[3]).max(0);

    let lowest = lower.first()?.priority() as i64;
    if d_cpu == 0 && d_memory == 0 && d_storage == 0 && d_slots == 0 {
        // Resources fit already; some other filter needs at least one victim.
        return Some(Bound {
            highest: lowest,
            sum: lowest + SHIFT,
            count: 1,
            latest_start: lower[0].latest_start(),
        });
    }
    let (mut f_cpu, mut f_memory, mut f_storage, mut f_slots) = (0i64, 0i64, 0i64, 0);
    let mut highest = None;
    let mut latest_start = i64::MAX;
    // The largest single request below the preemptor, and (in the same pass) the
    // smallest level whose removal with every level under it frees the deficit.
    let (mut max_cpu, mut max_memory, mut max_storage) = (0, 0, 0);
    for level in lower {
        let [largest_cpu, largest_memory, largest_storage] = level.largest();
        max_cpu = max_cpu.max(largest_cpu);
        max_memory = max_memory.max(largest_memory);
        max_storage = max_storage.max(largest_storage);
        if highest.is_some() {
            continue;
        }
        let [cpu, memory, storage] = level.requested();
        f_cpu = f_cpu.saturating_add(cpu);
        f_memory = f_memory.saturating_add(memory);
        f_storage = f_storage.saturating_add(storage);
        f_slots += level.pods();
        if f_cpu >= d_cpu && f_memory >= d_memory && f_storage >= d_storage && f_slots >= d_slots {
            highest = Some(level.priority() as i64);
            latest_start = level.latest_start();
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
        sum: (highest + SHIFT).saturating_add((count - 1).saturating_mul(lowest + SHIFT)),
        count,
        latest_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{LevelDigest, PriorityLevel};
    use crate::generate::Rng;

    /// An amount that is often not a power-of-two multiple (so `f32` must round).
    fn amount(rng: &mut Rng, scale: i64) -> i64 {
        match rng.below(4) {
            0 => 0,
            1 => rng.below(scale as u64) as i64,
            2 => (rng.below(1 << 20) as i64) << 20,
            _ => rng.below(1 << 62) as i64,
        }
    }

    fn level(rng: &mut Rng, priority: i32) -> PriorityLevel {
        let scale = 1 + rng.below(1 << 40) as i64;
        let (cpu, memory, storage) = (amount(rng, scale), amount(rng, scale), amount(rng, scale));
        let part = |rng: &mut Rng, total: i64| {
            if total == 0 {
                0
            } else {
                1 + rng.below(total as u64) as i64
            }
        };
        PriorityLevel {
            priority,
            pods: 1 + rng.below(50) as i64,
            milli_cpu: cpu,
            memory,
            ephemeral_storage: storage,
            max_milli_cpu: part(rng, cpu),
            max_memory: part(rng, memory),
            max_ephemeral_storage: part(rng, storage),
            latest_start: match rng.below(3) {
                0 => i64::MAX,
                1 => 1_700_000_000_000_000_000 + rng.below(1 << 40) as i64,
                _ => rng.below(1 << 60) as i64 - (1 << 59),
            },
        }
    }

    /// The digest's rounded levels give a bound no stronger than the exact levels', so
    /// pruning with it never drops a node the exact bound would keep.
    #[test]
    fn digest_levels_bound_no_higher_than_exact_levels() {
        let mut rng = Rng::new(7);
        let (mut compared, mut rounded) = (0, 0);
        for _ in 0..20_000 {
            let count = 1 + rng.below(4) as usize;
            let exact: Vec<PriorityLevel> = (0..count)
                .map(|i| level(&mut rng, i as i32 * 100 - 50))
                .collect();
            let digest: Vec<LevelDigest> = exact
                .iter()
                .map(|l| LevelDigest::of(l).expect("in range"))
                .collect();
            rounded += exact
                .iter()
                .zip(&digest)
                .filter(|(e, d)| e.memory != d.requested()[1] || e.milli_cpu != d.requested()[0])
                .count();
            let used: [i64; 3] = [0, 1, 2].map(|r| {
                exact
                    .iter()
                    .map(|l| l.requested()[r] / 2)
                    .fold(0i64, i64::saturating_add)
            });
            let want = Resources {
                milli_cpu: 1 + rng.below(1 << 30) as i64,
                memory: 1 + rng.below(1 << 30) as i64,
                ephemeral_storage: 1 + rng.below(1 << 30) as i64,
                ..Resources::default()
            };
            // Deficits on the edges rounding could cross: exactly the sum of the first
            // levels, or a whole number of the largest single request.
            let edge = |r: usize, rng: &mut Rng| -> i64 {
                match rng.below(3) {
                    0 => exact[..1 + rng.below(count as u64) as usize]
                        .iter()
                        .map(|l| l.requested()[r])
                        .fold(0i64, i64::saturating_add),
                    1 => exact
                        .iter()
                        .map(|l| l.largest()[r])
                        .max()
                        .unwrap_or(0)
                        .saturating_mul(1 + rng.below(4) as i64),
                    _ => amount(rng, 1 << 30),
                }
            };
            let want_total = [want.milli_cpu, want.memory, want.ephemeral_storage];
            let allocatable: Vec<i64> = (0..3)
                .map(|r| {
                    let deficit = edge(r, &mut rng);
                    used[r]
                        .saturating_add(want_total[r])
                        .saturating_sub(deficit)
                })
                .chain([110])
                .collect();
            let allocatable: [i64; 4] = allocatable.try_into().expect("four");
            let total = used;
            let pods = rng.below(115) as i64;
            let full = bound_from(&want, allocatable, total, pods, &exact);
            let compact = bound_from(&want, allocatable, total, pods, &digest);
            match (full, compact) {
                (Some(full), Some(compact)) => {
                    compared += 1;
                    assert!(compact.key() <= full.key(), "{compact:?} > {full:?}");
                    if compact.key() == full.key() {
                        assert!(compact.latest_start >= full.latest_start);
                    }
                }
                (Some(full), None) => panic!("the digest lost the bound {full:?}"),
                (None, _) => {}
            }
        }
        assert!(
            compared > 5_000 && rounded > 1_000,
            "{compared} / {rounded}"
        );
    }

    #[test]
    fn digest_levels_round_up_and_refuse_what_they_cannot_hold() {
        let mut rng = Rng::new(11);
        for _ in 0..10_000 {
            let exact = level(&mut rng, 0);
            let digest = LevelDigest::of(&exact).expect("in range");
            for (d, e) in digest.requested().into_iter().zip(exact.requested()) {
                assert!(
                    d >= e && (d - e) as f64 <= e as f64 * 1.2e-7 + 1.0,
                    "{d} {e}"
                );
            }
            for (d, e) in digest.largest().into_iter().zip(exact.largest()) {
                assert!(
                    d >= e && (d - e) as f64 <= e as f64 * 1.2e-7 + 1.0,
                    "{d} {e}"
                );
            }
            let (d, e) = (digest.latest_start(), exact.latest_start);
            assert!(d >= e, "{d} < {e}");
            if e == i64::MAX {
                assert_eq!(d, i64::MAX);
            } else if e > 946_684_800_000_000_000 {
                assert!(d - e < 1_000_000_000);
            }
        }
        let year_2200 = PriorityLevel {
            latest_start: 7_258_118_400_000_000_000,
            ..PriorityLevel::default()
        };
        assert_eq!(LevelDigest::of(&year_2200), None);
        // Amounts up to 2^62 in magnitude are held (and read back exactly); beyond, the
        // digest refuses the level rather than hold an f32 no i64 can take.
        let edge = PriorityLevel {
            memory: 1 << 62,
            max_memory: 1 << 62,
            ..PriorityLevel::default()
        };
        let held = LevelDigest::of(&edge).expect("2^62 is held");
        assert_eq!(held.requested()[1], 1 << 62);
        assert_eq!(held.largest()[1], 1 << 62);
        for beyond in [(1 << 62) + 1, i64::MAX, -(1 << 62) - 1, i64::MIN] {
            let level = PriorityLevel {
                ephemeral_storage: beyond,
                ..PriorityLevel::default()
            };
            assert_eq!(LevelDigest::of(&level), None, "{beyond}");
            let level = PriorityLevel {
                max_milli_cpu: beyond,
                ..PriorityLevel::default()
            };
            assert_eq!(LevelDigest::of(&level), None, "{beyond}");
        }
    }
}
