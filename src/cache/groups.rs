//! Column digests of fixed groups of [`GROUP_NODES`] node digests.
//!
//! At 50,000 nodes a decision's filter pass reads 50,000 digests, yet only a handful of
//! nodes can hold the winning candidate. A group's columns answer, for a preemptor the
//! digests decide resources for, which NodeResourcesFit reasons each of its nodes fails
//! with (a few compares per node, no digest read) and a lower bound on the pick score of
//! any candidate among them. A decision reads every group, filters in full only the groups
//! that may hold a fitting node or a winner, and counts the rest from their columns.

use super::summary::{LevelTotals, NO_HARD_TAINTS, NodeSummary, READ_NODE};

/// Nodes per group: group `g` holds the nodes at indexes `g * GROUP_NODES ..` (the last
/// group may hold fewer).
pub const GROUP_NODES: usize = 64;

/// Columns of a few nodes' digests, so a decision can rule the group out at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeGroup {
    /// Nodes in the group, 1 to [`GROUP_NODES`].
    pub len: usize,
    /// Allocatable minus requested milli-CPU, memory and ephemeral storage of each node
    /// (wrapping, as NodeResourcesFit's subtraction on the digest).
    pub free: [[i64; GROUP_NODES]; 3],
    /// Nodes whose bound pods take every pod slot (one more pod does not fit), as bits.
    pub full: u64,
    /// Nodes with hard taints, unschedulable or not arrived (a taint set other than
    /// [`NO_HARD_TAINTS`]), as bits; `taint_sets` holds each node's set.
    pub tainted: u64,
    /// Each node's hard-taint set, as an index into the snapshot's interned sets.
    pub taint_sets: [u16; GROUP_NODES],
    /// Each node's highest nominated priority, and the group's.
    pub nominated_priority: [i32; GROUP_NODES],
    /// The highest of `nominated_priority`.
    pub max_nominated_priority: i32,
    /// Some node's digest cannot answer for it (its node must be read, or a priority
    /// level did not fit the digest's compact form).
    pub read_node: bool,
    /// The lowest priority of any bound pod in the group (`i32::MAX` when there is none):
    /// no candidate here has a lower highest victim priority.
    pub lowest: i32,
    /// Among the nodes with pods at `lowest`, the latest start time of those pods, in the
    /// digest's rounding (never earlier than the truth): finite ones, and whether some
    /// pod has none ("now").
    pub lowest_latest_start: i64,
    /// Some pod at `lowest` has no start time.
    pub lowest_start_unset: bool,
    /// Per node, for a finer bound: the lowest priority of its bound pods (`i32::MAX`
    /// when none), the latest start of the pods at it (as above; `i64::MAX` when some
    /// has none), and the largest single milli-CPU, memory and ephemeral storage request
    /// of any of its pods (`i64::MAX` when some level is not held inline).
    pub node_lowest: [i32; GROUP_NODES],
    /// Each node's latest start of its pods at `node_lowest`.
    pub node_lowest_start: [i64; GROUP_NODES],
    /// Each resource's largest single request, per node.
    pub largest: [[i64; GROUP_NODES]; 3],
    /// Nodes whose `free` amounts are exact (no subtraction overflowed), as bits.
    pub exact_free: u64,
}

impl NodeGroup {
    /// The group of the digests `summaries` (at most [`GROUP_NODES`]).
    pub fn of<'a>(summaries: impl IntoIterator<Item = &'a NodeSummary>) -> Self {
        let mut group = NodeGroup {
            len: 0,
            free: [[0; GROUP_NODES]; 3],
            full: 0,
            tainted: 0,
            taint_sets: [NO_HARD_TAINTS; GROUP_NODES],
            nominated_priority: [i32::MIN; GROUP_NODES],
            max_nominated_priority: i32::MIN,
            read_node: false,
            lowest: i32::MAX,
            lowest_latest_start: i64::MIN,
            lowest_start_unset: false,
            node_lowest: [i32::MAX; GROUP_NODES],
            node_lowest_start: [i64::MAX; GROUP_NODES],
            largest: [[i64::MAX; GROUP_NODES]; 3],
            exact_free: 0,
        };
        for (slot, summary) in summaries.into_iter().take(GROUP_NODES).enumerate() {
            group.len = slot + 1;
            let bit = 1u64 << slot;
            let [cpu, memory, storage, slots] = summary.allocatable;
            let [used_cpu, used_memory, used_storage] = summary.requested;
            group.free[0][slot] = cpu.wrapping_sub(used_cpu);
            group.free[1][slot] = memory.wrapping_sub(used_memory);
            group.free[2][slot] = storage.wrapping_sub(used_storage);
            if cpu.checked_sub(used_cpu).is_some()
                && memory.checked_sub(used_memory).is_some()
                && storage.checked_sub(used_storage).is_some()
            {
                group.exact_free |= bit;
            }
            if i64::from(summary.pods) + 1 > slots {
                group.full |= bit;
            }
            if summary.taint_set != NO_HARD_TAINTS {
                group.tainted |= bit;
            }
            group.taint_sets[slot] = summary.taint_set;
            group.nominated_priority[slot] = summary.nominated_priority;
            group.max_nominated_priority =
                group.max_nominated_priority.max(summary.nominated_priority);
            // `next_priority` is `i32::MIN` when an inline level is not exact.
            if summary.taint_set == READ_NODE || summary.next_priority == i32::MIN {
                group.read_node = true;
            }
            let levels = &summary.levels[..usize::from(summary.level_count)];
            if summary.next_priority == i32::MAX {
                for (r, column) in group.largest.iter_mut().enumerate() {
                    column[slot] = levels.iter().map(|l| l.largest()[r]).max().unwrap_or(0);
                }
            }
            let Some(level) = levels.first() else {
                continue;
            };
            group.node_lowest[slot] = level.priority;
            group.node_lowest_start[slot] = level.latest_start();
            if level.priority < group.lowest {
                group.lowest = level.priority;
                group.lowest_latest_start = i64::MIN;
                group.lowest_start_unset = false;
            }
            if level.priority == group.lowest {
                match level.latest_start() {
                    i64::MAX => group.lowest_start_unset = true,
                    start => group.lowest_latest_start = group.lowest_latest_start.max(start),
                }
            }
        }
        group
    }

    /// The nodes of the group, as bits.
    pub fn members(&self) -> u64 {
        if self.len >= GROUP_NODES {
            u64::MAX
        } else {
            (1u64 << self.len) - 1
        }
    }

    /// The latest start of the pods at `lowest`, an unset one read as `now`.
    pub fn lowest_latest_start_at(&self, now: i64) -> i64 {
        if self.lowest_start_unset {
            self.lowest_latest_start.max(now)
        } else {
            self.lowest_latest_start
        }
    }
}
