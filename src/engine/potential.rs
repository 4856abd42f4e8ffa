//! Phase 3, candidate screening: the potential nodes — those the filter pass found
//! Unschedulable, as upstream's `nodesWherePreemptionMightHelp` (an
//! UnschedulableAndUnresolvable node never becomes a candidate) — each with the lower
//! bound of its pick score where resources give one (see [`bounds`]), handed to the search
//! most promising first. The filter pass adds each node as it filters it.

use std::mem;

use super::bounds;
use super::thresholds::PRUNE_CHUNK_FIRST;

/// The potential nodes of one or more filter tasks.
#[derive(Default)]
pub(super) struct Potential {
    /// The bounded nodes of the filter task still running.
    open: Vec<Pending>,
    /// Each finished task's bounded nodes.
    groups: Vec<BoundedGroup>,
    /// The nodes without a bound: every potential node when no bounds are computed, else
    /// those that cannot fit even with every lower-priority pod gone.
    pub unbounded: Vec<usize>,
}

impl Potential {
    /// Room for a filter task of `nodes` nodes.
    pub(super) fn with_capacity(nodes: usize) -> Self {
        Potential {
            open: Vec::with_capacity(nodes),
            ..Potential::default()
        }
    }

    /// Node `index`, with its lower bound when one was computed.
    #[inline(always)]
    pub(super) fn add(&mut self, index: usize, bound: Option<bounds::Bound>) {
        match bound {
            Some(bound) => self.open.push(Pending::new(bound, index)),
            None => self.unbounded.push(index),
        }
    }

    /// Ends a filter task: its bounded nodes become a group, its most promising ones
    /// picked out where the task runs (in parallel with the others).
    pub(super) fn seal(&mut self) {
        let all = mem::take(&mut self.open);
        if !all.is_empty() {
            self.groups.push(BoundedGroup {
                least: MostPromising::least(&all),
                all,
            });
        }
    }

    /// Adds the sealed nodes of other tasks.
    pub(super) fn append(&mut self, other: Potential) {
        self.groups.extend(other.groups);
        self.unbounded.extend(other.unbounded);
    }

    pub(super) fn len(&self) -> usize {
        self.groups.iter().map(|g| g.all.len()).sum::<usize>() + self.unbounded.len()
    }

    /// Every potential node, ascending.
    pub(super) fn indices(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self
            .groups
            .iter()
            .flat_map(|g| g.all.iter().map(Pending::index))
            .chain(self.unbounded.iter().copied())
            .collect();
        all.sort_unstable();
        all
    }

    /// The bounded nodes added so far, most promising first; the unbounded ones stay.
    pub(super) fn take_promising(&mut self) -> MostPromising {
        MostPromising::new(mem::take(&mut self.groups))
    }
}

/// An Unschedulable node waiting to be dry-run, ordered most promising first: by its
/// bound's [`bounds::Bound::order`], then index. Both are packed into two integers in
/// that order, so picking the most promising of tens of thousands compares two words
/// instead of branching on five fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Pending {
    /// Highest victim priority (offset to unsigned, 32 bits), shifted priority sum (never
    /// negative, 64 bits), victim count (32 bits, a larger one held as `u32::MAX`, still
    /// a lower bound).
    rank: u128,
    /// Latest start, complemented so later sorts first (64 bits), node index (64 bits).
    tie: u128,
}

impl Pending {
    const SIGN: u32 = 1 << 31;
    const SIGN_64: u64 = 1 << 63;

    pub(super) fn new(bound: bounds::Bound, index: usize) -> Self {
        let highest = bound.highest.clamp(i32::MIN.into(), i32::MAX.into()) as i32;
        let sum = u64::try_from(bound.sum).unwrap_or(0);
        let count = u32::try_from(bound.count.max(0)).unwrap_or(u32::MAX);
        let latest = !((bound.latest_start as u64) ^ Self::SIGN_64);
        Pending {
            rank: u128::from((highest as u32) ^ Self::SIGN) << 96
                | u128::from(sum) << 32
                | u128::from(count),
            tie: u128::from(latest) << 64 | index as u128,
        }
    }

    pub(super) fn bound(&self) -> bounds::Bound {
        bounds::Bound {
            highest: (((self.rank >> 96) as u32 ^ Self::SIGN) as i32).into(),
            sum: ((self.rank >> 32) as u64) as i64,
            count: (self.rank as u32).into(),
            latest_start: (!((self.tie >> 64) as u64) ^ Self::SIGN_64) as i64,
        }
    }

    pub(super) fn index(&self) -> usize {
        self.tie as u64 as usize
    }
}

/// The bounded nodes of one filter group, with the group's `MostPromising::FIRST` most
/// promising picked out where the group ran.
pub(super) struct BoundedGroup {
    least: Vec<Pending>,
    all: Vec<Pending>,
}

/// The bounded nodes, handed out most promising first. A search pops a handful of the
/// tens of thousands: the first `FIRST` are picked out in one pass (most nodes cost one
/// comparison), and the rest are ordered only if the search gets that far.
pub(super) struct MostPromising {
    /// The most promising nodes, least promising first (popped from the back).
    first: Vec<Pending>,
    /// Every bounded node, by group; those after `first` are ordered when `first` runs out.
    all: Vec<Vec<Pending>>,
    rest: Option<std::collections::BinaryHeap<std::cmp::Reverse<Pending>>>,
}

impl MostPromising {
    /// Enough for the first rounds of a search, which usually end it. Each group picks out
    /// its own: a heap of `FIRST` over a group's nodes costs ~`FIRST · ln(nodes / FIRST)`
    /// sift-downs besides one comparison a node, so a larger one costs more than the rare
    /// ordering of the rest.
    const FIRST: usize = 8 * PRUNE_CHUNK_FIRST;

    /// The `FIRST` least of `all`, least promising first.
    fn least(all: &[Pending]) -> Vec<Pending> {
        // A max-heap of the `FIRST` least nodes seen so far: its top is the one to beat.
        let mut least: std::collections::BinaryHeap<Pending> =
            std::collections::BinaryHeap::with_capacity(Self::FIRST + 1);
        for pending in all {
            if least.len() < Self::FIRST {
                least.push(*pending);
            } else if least.peek().is_some_and(|top| pending < top) {
                least.pop();
                least.push(*pending);
            }
        }
        let mut first = least.into_sorted_vec();
        first.reverse();
        first
    }

    /// The overall `FIRST` least are among the groups' own `FIRST` least.
    fn new(groups: Vec<BoundedGroup>) -> Self {
        let first = if groups.len() == 1 {
            groups[0].least.clone()
        } else {
            let picked: Vec<Pending> = groups
                .iter()
                .flat_map(|g| g.least.iter().copied())
                .collect();
            Self::least(&picked)
        };
        MostPromising {
            first,
            all: groups.into_iter().map(|g| g.all).collect(),
            rest: None,
        }
    }

    pub(super) fn pop(&mut self) -> Option<Pending> {
        if let Some(next) = self.first.pop() {
            if self.first.is_empty() && self.rest.is_none() {
                // Entries are distinct (their node indexes are), so the rest is exactly
                // what orders after the last one handed out.
                let all = std::mem::take(&mut self.all);
                self.rest = Some(
                    all.into_iter()
                        .flatten()
                        .filter(|p| *p > next)
                        .map(std::cmp::Reverse)
                        .collect(),
                );
            }
            return Some(next);
        }
        self.rest.as_mut()?.pop().map(|std::cmp::Reverse(p)| p)
    }

    pub(super) fn clear(&mut self) {
        self.first.clear();
        self.all.clear();
        self.rest = Some(std::collections::BinaryHeap::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(index: usize, seed: u64) -> Pending {
        // Few distinct bounds, so many entries tie on everything but the index.
        let x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59;
        Pending::new(
            bounds::Bound {
                highest: (x % 3) as i64,
                sum: (x % 5) as i64,
                count: 1,
                latest_start: if x.is_multiple_of(2) {
                    i64::MAX
                } else {
                    x as i64
                },
            },
            index,
        )
    }

    /// Packed, a pending node keeps its bound and index and orders as (bound order,
    /// index) would, extremes included.
    #[test]
    fn pending_nodes_order_as_their_bounds_then_index() {
        let mut rng = crate::generate::Rng::new(11);
        let mut pick = |choices: &[i64]| choices[rng.below(choices.len() as u64) as usize];
        let extremes = [i64::MIN, i64::MIN + 1, -1, 0, 1, 2, i64::MAX - 1, i64::MAX];
        let priorities = [i32::MIN.into(), -5, 0, 7, i32::MAX.into()];
        let all: Vec<(bounds::Bound, usize)> = (0..2000)
            .map(|i| {
                let bound = bounds::Bound {
                    highest: pick(&priorities),
                    sum: pick(&[0, 1, 3, i64::MAX - 1, i64::MAX]),
                    count: pick(&[1, 2, u32::MAX.into()]),
                    latest_start: pick(&extremes),
                };
                (
                    bound,
                    pick(&[0, 1, 5, u32::MAX.into(), i64::MAX]) as usize + i % 2,
                )
            })
            .collect();
        for &(bound, index) in &all {
            let pending = Pending::new(bound, index);
            assert_eq!((pending.bound(), pending.index()), (bound, index));
        }
        for pair in all.windows(2) {
            let [(a, i), (b, j)] = [pair[0], pair[1]];
            assert_eq!(
                Pending::new(a, i).cmp(&Pending::new(b, j)),
                (a.order(), i).cmp(&(b.order(), j)),
                "{a:?} {i} / {b:?} {j}"
            );
        }
    }

    /// `all` dealt round-robin into `count` sealed filter groups.
    fn groups_of(all: &[Pending], count: usize) -> Vec<BoundedGroup> {
        (0..count)
            .map(|g| {
                let all: Vec<Pending> = all.iter().skip(g).step_by(count).copied().collect();
                BoundedGroup {
                    least: MostPromising::least(&all),
                    all,
                }
            })
            .collect()
    }

    #[test]
    fn most_promising_hands_out_every_node_in_order_past_the_first_picks() {
        for len in [
            0,
            1,
            5,
            MostPromising::FIRST - 1,
            MostPromising::FIRST,
            129,
            1000,
        ] {
            // Dealt into several groups, as the parallel filter pass leaves them.
            for groups in [1, 3, 4] {
                let all: Vec<Pending> = (0..len)
                    .map(|i| pending(i * 7 % len.max(1), i as u64 + 1))
                    .collect();
                let mut expected = all.clone();
                expected.sort();
                let mut promising = MostPromising::new(groups_of(&all, groups));
                let popped: Vec<Pending> = std::iter::from_fn(|| promising.pop()).collect();
                assert_eq!(popped, expected, "{len} nodes in {groups} groups");
            }
        }
    }

    #[test]
    fn most_promising_hands_out_nothing_after_clear() {
        let all: Vec<Pending> = (0..300).map(|i| pending(i, i as u64)).collect();
        let mut promising = MostPromising::new(groups_of(&all, 2));
        assert!(promising.pop().is_some());
        promising.clear();
        assert_eq!(promising.pop(), None);
    }

    fn bound(highest: i64) -> bounds::Bound {
        bounds::Bound {
            highest,
            sum: highest + 10,
            count: 1,
            latest_start: i64::MAX,
        }
    }

    #[test]
    fn potential_nodes_of_several_tasks_are_all_kept_and_the_bounded_ones_ranked() {
        let mut first = Potential::with_capacity(3);
        first.add(7, Some(bound(5)));
        first.add(3, None);
        first.add(9, Some(bound(1)));
        first.seal();
        let mut second = Potential::with_capacity(2);
        second.add(2, Some(bound(3)));
        second.add(11, None);
        second.seal();
        let mut empty = Potential::with_capacity(0);
        empty.seal();
        assert!(empty.groups.is_empty());
        let mut all = Potential::default();
        for task in [first, empty, second] {
            all.append(task);
        }
        assert_eq!(all.len(), 5);
        assert_eq!(all.indices(), [2, 3, 7, 9, 11]);
        let mut promising = all.take_promising();
        let order: Vec<usize> = std::iter::from_fn(|| promising.pop())
            .map(|p| p.index())
            .collect();
        assert_eq!(order, [9, 2, 7]);
        // The unbounded nodes stay for the search's last resort.
        assert_eq!(
            (all.unbounded.as_slice(), all.len()),
            ([3, 11].as_slice(), 2)
        );
        assert_eq!(all.take_promising().pop(), None);
    }
}
