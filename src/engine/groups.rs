//! Group screening, on clusters of many node groups (see [`crate::cache::NodeGroup`]): a
//! group whose columns show that no node in it fits the preemptor waits unfiltered until
//! the search shows whether it may hold the winning candidate.

use rayon::prelude::*;

use super::candidate::SHIFT;
use super::filters::{self, PreFilter};
use super::tally::{FilterTally, NodeOnly};
use crate::cache::{GROUP_NODES, Snapshot};
use crate::model::Pod;

/// Screened node groups filtered with the ones that must be (the most promising), and
/// the first batch of more when the search needs them (then twice as many each time).
pub(super) const SCREEN_FIRST_GROUPS: usize = 4;
/// Node groups per parallel screening task.
const SCREEN_TASK_GROUPS: usize = 128;

/// A node group whose columns answer for it (see [`crate::cache::NodeGroup`]): no node
/// in it fits the preemptor, each node failing the node-only filters or NodeResourcesFit
/// on its digest. Such a group is filtered only if it may hold the winning candidate;
/// otherwise its nodes count towards the filter reasons from the columns alone.
#[derive(Clone, Debug)]
pub(super) struct GroupScreen {
    pub group: usize,
    /// A lower bound of the [`bounds::Bound::key`] of every candidate in the group (all
    /// `i64::MAX` when it can have none).
    key: [i64; 4],
    /// The latest criterion-5 value (an unset start read as now) a candidate here whose
    /// key is `key` can have.
    latest: i64,
    /// Nodes passing the node-only filters and failing NodeResourcesFit for each reason
    /// of [`filters::fit::REASONS`].
    short: [u32; 4],
    /// The nodes passing the node-only filters, as bits.
    pass: u64,
}

impl GroupScreen {
    /// Most promising first, as [`Pending`] orders nodes.
    pub(super) fn order(&self) -> ([i64; 4], std::cmp::Reverse<i64>, usize) {
        (self.key, std::cmp::Reverse(self.latest), self.group)
    }

    /// Whether no candidate in the group can beat (or tie) the best candidate, of key
    /// `key` and criterion-5 value `start`.
    pub(super) fn loses_to(&self, key: [i64; 4], start: i64) -> bool {
        self.key > key || self.key == key && self.latest < start
    }

    /// Every node group's screen, in group order; `None` for a group that must be
    /// filtered (or that the screen cannot answer for).
    pub(super) fn pass(
        pre: &PreFilter<'_>,
        snapshot: &Snapshot,
        now: i64,
        parallel: bool,
    ) -> Vec<Option<GroupScreen>> {
        let screen = |groups: std::ops::Range<usize>| {
            let mut verdicts = Vec::new();
            groups
                .map(|group| Self::of(pre, snapshot, group, now, &mut verdicts))
                .collect::<Vec<_>>()
        };
        let groups = snapshot.groups.len();
        if parallel && groups >= 2 * SCREEN_TASK_GROUPS {
            let tasks = groups.div_ceil(SCREEN_TASK_GROUPS);
            (0..tasks)
                .into_par_iter()
                .map(|task| {
                    screen(task * SCREEN_TASK_GROUPS..((task + 1) * SCREEN_TASK_GROUPS).min(groups))
                })
                .collect::<Vec<_>>()
                .concat()
        } else {
            screen(0..groups)
        }
    }

    fn of<'n>(
        pre: &PreFilter<'_>,
        snapshot: &'n Snapshot,
        index: usize,
        now: i64,
        verdicts: &mut Vec<Option<NodeOnly<'n>>>,
    ) -> Option<GroupScreen> {
        let group = snapshot.groups.get(index)?;
        if group.read_node {
            return None;
        }
        let pod = pre.pod;
        let members = group.members();
        let mut pass = members & !group.tainted;
        let mut tainted = group.tainted & members;
        while tainted != 0 {
            let slot = tainted.trailing_zeros() as usize;
            tainted &= tainted - 1;
            let set = group.taint_sets[slot];
            match NodeOnly::of_set(pod, true, &snapshot.taint_sets, set, Some(verdicts)) {
                NodeOnly::Pass => pass |= 1 << slot,
                NodeOnly::Fail(_) => {}
                NodeOnly::ReadNode => return None,
            }
        }
        // Bits of the nodes short of pod slots, milli-CPU, memory, ephemeral storage.
        let request = pod.requests();
        let mut short = [group.full & members, 0, 0, 0];
        if !request.is_zero_request() {
            let wants = [request.milli_cpu, request.memory, request.ephemeral_storage];
            for ((bits, want), free) in short[1..].iter_mut().zip(wants).zip(&group.free) {
                if want > 0 {
                    for (slot, &free) in free[..group.len].iter().enumerate() {
                        *bits |= u64::from(want > free) << slot;
                    }
                }
            }
        }
        // Nodes with nominated pods that take room from the preemptor: as the pass does.
        if group.max_nominated_priority >= pod.priority {
            for slot in 0..group.len {
                if group.nominated_priority[slot] < pod.priority || pass & (1 << slot) == 0 {
                    continue;
                }
                let node = index * GROUP_NODES + slot;
                let nominated = pre.nominated_occupancy(snapshot.nodes.get(node)?);
                let mask = pre.digest_fit_mask_with(snapshot.summaries.get(node)?, &nominated);
                for (bits, (bit, _)) in short.iter_mut().zip(filters::fit::REASONS) {
                    if mask & bit != 0 {
                        *bits |= 1 << slot;
                    } else {
                        *bits &= !(1 << slot);
                    }
                }
            }
        }
        if pass & !(short[0] | short[1] | short[2] | short[3]) != 0 {
            // Some node may fit, or needs the filters after NodeResourcesFit.
            return None;
        }
        let (key, latest) = if pass == 0 || group.lowest >= pod.priority {
            ([i64::MAX; 4], i64::MIN)
        } else {
            // A candidate's highest victim priority is at least the lowest priority of
            // its node's pods, at least one victim.
            let lowest = i64::from(group.lowest);
            (
                [0, lowest, lowest + SHIFT, 1],
                group.lowest_latest_start_at(now),
            )
        };
        Some(GroupScreen {
            group: index,
            key,
            latest,
            short: short.map(|bits| (bits & pass).count_ones()),
            pass,
        })
    }

    /// [`Self::loses_to`] node by node, from each node's own lowest priority and a victim
    /// count from its largest requests: when the best candidate needs several victims,
    /// the group's key alone (one victim) cannot tell.
    pub(super) fn each_node_loses_to(
        &self,
        snapshot: &Snapshot,
        pod: &Pod,
        key: [i64; 4],
        start: i64,
        now: i64,
    ) -> bool {
        let Some(group) = snapshot.groups.get(self.group) else {
            return false;
        };
        if key[0] != 0 {
            return false;
        }
        let request = pod.requests();
        let wants = [request.milli_cpu, request.memory, request.ephemeral_storage];
        let checked = !request.is_zero_request();
        let mut nodes = self.pass;
        while nodes != 0 {
            let slot = nodes.trailing_zeros() as usize;
            nodes &= nodes - 1;
            let lowest = group.node_lowest[slot];
            // No pod below the preemptor: no candidate (the search has one already).
            if lowest >= pod.priority || i64::from(lowest) > key[1] {
                continue;
            }
            if i64::from(lowest) < key[1] {
                return false;
            }
            // Removing pods of the lowest priority only: each frees at most the largest
            // request, so a deficit of `d` takes at least `d / largest` victims.
            let mut count = 1i64;
            if checked && group.exact_free & (1 << slot) != 0 {
                for ((want, free), largest) in
                    wants.into_iter().zip(&group.free).zip(&group.largest)
                {
                    let (deficit, largest) = (want.saturating_sub(free[slot]), largest[slot]);
                    if want > 0 && deficit > 0 && largest > 0 {
                        count = count.max(deficit / largest + i64::from(deficit % largest != 0));
                    }
                }
            }
            let lowest = i64::from(lowest);
            let node = [0, lowest, (lowest + SHIFT).saturating_mul(count), count];
            let latest = match group.node_lowest_start[slot] {
                i64::MAX => now,
                latest => latest,
            };
            if node < key || node == key && latest >= start {
                return false;
            }
        }
        true
    }

    /// Adds the filter reasons of the nodes of `skipped` to `tally`.
    pub(super) fn add_reasons<'n>(
        skipped: &[GroupScreen],
        pre: &PreFilter<'_>,
        snapshot: &'n Snapshot,
        tally: &mut FilterTally<'n>,
    ) {
        let mut verdicts = Vec::new();
        for screen in skipped {
            for ((bit, _), count) in filters::fit::REASONS.iter().zip(screen.short) {
                tally.add_digest_failures(*bit, count);
            }
            let Some(group) = snapshot.groups.get(screen.group) else {
                continue;
            };
            let mut tainted = group.tainted & group.members();
            while tainted != 0 {
                let slot = tainted.trailing_zeros() as usize;
                tainted &= tainted - 1;
                let set = group.taint_sets[slot];
                let sets = &snapshot.taint_sets;
                match NodeOnly::of_set(pre.pod, true, sets, set, Some(&mut verdicts)) {
                    NodeOnly::Fail(failure) => tally.add_node_only_failure(failure),
                    NodeOnly::Pass | NodeOnly::ReadNode => {}
                }
            }
        }
    }
}

/// The screened groups the filter pass has not filtered yet, most promising first.
#[derive(Default)]
pub(super) struct ScreenedGroups {
    all: Vec<GroupScreen>,
    /// The first not handed out.
    next: usize,
}

impl ScreenedGroups {
    /// From every group's screen (see [`GroupScreen::pass`]): the groups to filter now —
    /// those without a screen and the `SCREEN_FIRST_GROUPS` most promising screened ones,
    /// ascending — and the other screened groups, waiting.
    pub(super) fn split(screens: Vec<Option<GroupScreen>>) -> (Vec<usize>, Self) {
        let (mut first, mut screened): (Vec<usize>, Vec<GroupScreen>) = (Vec::new(), Vec::new());
        for (group, verdict) in screens.into_iter().enumerate() {
            match verdict {
                Some(verdict) => screened.push(verdict),
                None => first.push(group),
            }
        }
        screened.sort_unstable_by_key(GroupScreen::order);
        let taken = screened.len().min(SCREEN_FIRST_GROUPS);
        first.extend(screened[..taken].iter().map(|s| s.group));
        first.sort_unstable();
        let waiting = ScreenedGroups {
            all: screened,
            next: taken,
        };
        (first, waiting)
    }

    /// The groups still waiting, most promising first.
    pub(super) fn waiting(&self) -> &[GroupScreen] {
        &self.all[self.next..]
    }

    /// Hands out the most promising waiting group.
    pub(super) fn next_group(&mut self) -> Option<&GroupScreen> {
        let group = self.all.get(self.next)?;
        self.next += 1;
        Some(group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(group: usize, lowest: i64, latest: i64) -> GroupScreen {
        GroupScreen {
            group,
            key: [0, lowest, lowest + SHIFT, 1],
            latest,
            short: [0; 4],
            pass: 1,
        }
    }

    #[test]
    fn unscreened_and_the_most_promising_screened_groups_are_filtered_first() {
        // Groups 1, 4 and 8 must be filtered; the others wait by key, then latest start.
        let screens: Vec<Option<GroupScreen>> = (0..10)
            .map(|group| match group {
                1 | 4 | 8 => None,
                _ => Some(screen(group, (group as i64 * 7) % 5, group as i64)),
            })
            .collect();
        let (first, mut waiting) = ScreenedGroups::split(screens);
        // Lowest priorities: 0 → 0, 2 → 4, 3 → 1, 5 → 0, 6 → 2, 7 → 4, 9 → 3.
        // Most promising: 5 (0, later start), 0, 3, 6, then 9, 7 and 2.
        assert_eq!(first, [0, 1, 3, 4, 5, 6, 8]);
        let order = |w: &ScreenedGroups| w.waiting().iter().map(|s| s.group).collect::<Vec<_>>();
        assert_eq!(order(&waiting), [9, 7, 2]);
        assert_eq!(waiting.next_group().map(|s| s.group), Some(9));
        assert_eq!(order(&waiting), [7, 2]);
        assert_eq!(waiting.next_group().map(|s| s.group), Some(7));
        assert_eq!(waiting.next_group().map(|s| s.group), Some(2));
        assert!(waiting.next_group().is_none() && waiting.waiting().is_empty());
    }

    #[test]
    fn a_group_loses_only_to_a_better_key_or_a_later_start() {
        let group = screen(0, 5, 100);
        let key = group.key;
        assert!(
            !group.loses_to(key, 100),
            "a tie may still win on the node name"
        );
        assert!(!group.loses_to(key, 99));
        assert!(group.loses_to(key, 101));
        assert!(group.loses_to([0, 4, i64::MAX, i64::MAX], i64::MIN));
        assert!(!group.loses_to([0, 6, 0, 0], i64::MAX));
    }
}
