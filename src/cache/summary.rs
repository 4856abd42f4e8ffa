//! A fixed-size digest of each node entry, kept in a persistent vector beside the entries.
//!
//! A decision's filter pass visits every node. Reading `NodeInfo`, its `Node` and the
//! node's taints costs several cache misses per node; the digest packs what the resource
//! filters and the candidate bounds need into one contiguous array, so a preemptor that
//! only asks for resources is filtered from the digests alone, and only nodes the digest
//! cannot answer for (nominated pods that count) are read in full. A tainted or
//! unschedulable node's digest names its interned [`HardTaints`] set: a decision checks
//! each distinct set once, not each node.

use super::{NodeInfo, PriorityLevel};
use crate::model::{Node, Taint, TaintEffect};

/// [`NodeSummary::taint_set`] of a schedulable node without NoSchedule or NoExecute taint.
pub const NO_HARD_TAINTS: u16 = 0;
/// [`NodeSummary::taint_set`] of a node whose hard taints must be read from the node: it
/// has not arrived, or more than [`MAX_TAINT_SETS`] distinct sets exist.
pub const READ_NODE: u16 = u16::MAX;
/// Most distinct hard-taint sets interned (a cluster has a handful; a client sending a
/// new set per node only makes decisions read those nodes in full).
pub const MAX_TAINT_SETS: usize = 4096;

/// What the node-only filters read of a node for a preemptor that names no node and has
/// no node selector or affinity: whether it is unschedulable, and its NoSchedule and
/// NoExecute taints in node order (the first untolerated one is reported). Interned by the
/// cache: nodes with equal sets share an id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HardTaints {
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// Its NoSchedule and NoExecute taints, in node order.
    pub taints: Vec<Taint>,
}

impl HardTaints {
    /// `None` for a schedulable node without NoSchedule or NoExecute taint.
    pub fn of(node: &Node) -> Option<Self> {
        let hard =
            |t: &&Taint| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute);
        if !node.unschedulable && !node.taints.iter().any(|t| hard(&t)) {
            return None;
        }
        Some(HardTaints {
            unschedulable: node.unschedulable,
            taints: node.taints.iter().filter(hard).cloned().collect(),
        })
    }
}

/// Priority levels held inline; nodes with more also keep `next_priority`.
pub const INLINE_LEVELS: usize = 4;

/// A node's compact digest, read for every node by each decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeSummary {
    /// Allocatable milli-CPU, memory, ephemeral storage and pod slots.
    pub allocatable: [i64; 4],
    /// Requested milli-CPU, memory and ephemeral storage of the bound pods.
    pub requested: [i64; 3],
    /// Bound pods.
    pub pods: u32,
    /// The node's [`HardTaints`]: [`NO_HARD_TAINTS`], [`READ_NODE`], or an id (from 1) of
    /// the snapshot's interned sets, so a decision checks each distinct set once instead of
    /// reading every tainted node.
    pub taint_set: u16,
    /// Highest priority of the pending pods nominated to the node (`i32::MIN` when none;
    /// their requests are in the node entry): only nominated pods of at least the
    /// preemptor's priority take room, so below it the node entry need not be read.
    pub nominated_priority: i32,
    /// How many of `levels` are held.
    pub level_count: u8,
    /// The lowest `INLINE_LEVELS` priority levels of the bound pods, ascending, in the
    /// digest's compact form (a decision reads every node's digest: its size decides how
    /// much of the array stays in cache).
    pub levels: [LevelDigest; INLINE_LEVELS],
    /// The priority of the first level not held inline (`i32::MAX` when all are;
    /// `i32::MIN` when some inline level has a value the compact form cannot hold).
    pub next_priority: i32,
}

/// What a candidate bound reads of one priority level, from the node entry's exact
/// [`PriorityLevel`] or the digest's [`LevelDigest`]: amounts never below the true ones,
/// and a latest start never before the true one.
pub trait LevelTotals {
    /// The level's priority.
    fn priority(&self) -> i32;
    /// Bound pods at this level.
    fn pods(&self) -> i64;
    /// Summed milli-CPU, memory and ephemeral storage requests.
    fn requested(&self) -> [i64; 3];
    /// The largest single pod's milli-CPU, memory and ephemeral storage requests.
    fn largest(&self) -> [i64; 3];
    /// Latest `startTime` in Unix nanoseconds (`i64::MAX`: some pod has none, "now").
    fn latest_start(&self) -> i64;
}

impl LevelTotals for PriorityLevel {
    #[inline(always)]
    fn priority(&self) -> i32 {
        self.priority
    }
    #[inline(always)]
    fn pods(&self) -> i64 {
        self.pods
    }
    #[inline(always)]
    fn requested(&self) -> [i64; 3] {
        [self.milli_cpu, self.memory, self.ephemeral_storage]
    }
    #[inline(always)]
    fn largest(&self) -> [i64; 3] {
        [
            self.max_milli_cpu,
            self.max_memory,
            self.max_ephemeral_storage,
        ]
    }
    #[inline(always)]
    fn latest_start(&self) -> i64 {
        self.latest_start
    }
}

/// A priority level in 36 bytes instead of 72: amounts as `f32` rounded up, the latest
/// start in whole seconds rounded up. It only feeds lower bounds on a node's pick score,
/// which stay valid when amounts are overstated and the latest start is later; the
/// resource filters themselves read the digest's exact totals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LevelDigest {
    /// The priority.
    pub priority: i32,
    /// Bound pods at this priority.
    pub pods: u32,
    /// Private: [`amount`] relies on every value coming from [`ceil_f32`] within
    /// ±[`DIGEST_AMOUNT_LIMIT`].
    requested: [f32; 3],
    largest: [f32; 3],
    /// Seconds since [`START_EPOCH_SECONDS`], rounded up; `u32::MAX` for "now".
    pub latest_start: u32,
}

// Values are finite, non-negative or rounded-up integers: equality is total.
impl Eq for LevelDigest {}

/// Origin of [`LevelDigest::latest_start`]: 2000-01-01T00:00:00Z (earlier starts are
/// stored as this, later than the truth, which keeps the bound valid).
pub(super) const START_EPOCH_SECONDS: i64 = 946_684_800;

impl LevelDigest {
    /// The compact copy of `level`; `None` when a value does not fit (the bound then
    /// reads the node entry).
    pub fn of(level: &PriorityLevel) -> Option<Self> {
        let latest_start = if level.latest_start == i64::MAX {
            u32::MAX
        } else {
            let since = level.latest_start.div_euclid(1_000_000_000) - START_EPOCH_SECONDS
                + i64::from(level.latest_start.rem_euclid(1_000_000_000) != 0);
            u32::try_from(since.max(0))
                .ok()
                .filter(|&s| s != u32::MAX)?
        };
        let amounts = [
            level.milli_cpu,
            level.memory,
            level.ephemeral_storage,
            level.max_milli_cpu,
            level.max_memory,
            level.max_ephemeral_storage,
        ];
        if amounts
            .iter()
            .any(|a| a.unsigned_abs() > DIGEST_AMOUNT_LIMIT as u64)
        {
            return None;
        }
        Some(LevelDigest {
            priority: level.priority,
            pods: u32::try_from(level.pods).ok()?,
            requested: [level.milli_cpu, level.memory, level.ephemeral_storage].map(ceil_f32),
            largest: [
                level.max_milli_cpu,
                level.max_memory,
                level.max_ephemeral_storage,
            ]
            .map(ceil_f32),
            latest_start,
        })
    }
}

/// Largest amount (in magnitude) a digest holds: its `f32`, rounded up, still converts
/// back to an `i64` (2^63 would not).
pub(super) const DIGEST_AMOUNT_LIMIT: i64 = 1 << 62;

/// The least `f32` not below `value`.
fn ceil_f32(value: i64) -> f32 {
    let rounded = value as f32;
    // Every f32 of magnitude ≥ 2^24 is an integer and smaller integers convert exactly,
    // so the comparison is exact: a `rounded` of 2^63 saturates to i64::MAX, not below
    // any `value`, and one below `value` is within i64. (Through i128 it would be a
    // software conversion, six per priority level of every node summarized.)
    if (rounded as i64) < value {
        rounded.next_up()
    } else {
        rounded
    }
}

/// An `f32` amount back as an integer (the value is an integer already).
#[inline(always)]
fn amount(value: f32) -> i64 {
    // SAFETY: `value` is a `LevelDigest` amount: 0.0 by default, else `ceil_f32` of an
    // integer within ±2^62 (`LevelDigest::of` refuses larger ones), so finite and at most
    // 2^62 in magnitude after rounding up: it converts exactly. The checked `as` costs the
    // saturation fix-ups on all 24 conversions of every node a decision reads
    // (`examples/profile_decide`: see docs/performance.md).
    unsafe { value.to_int_unchecked::<i64>() }
}

impl LevelTotals for LevelDigest {
    #[inline(always)]
    fn priority(&self) -> i32 {
        self.priority
    }
    #[inline(always)]
    fn pods(&self) -> i64 {
        i64::from(self.pods)
    }
    #[inline(always)]
    fn requested(&self) -> [i64; 3] {
        self.requested.map(amount)
    }
    #[inline(always)]
    fn largest(&self) -> [i64; 3] {
        self.largest.map(amount)
    }
    #[inline(always)]
    fn latest_start(&self) -> i64 {
        if self.latest_start == u32::MAX {
            i64::MAX
        } else {
            (START_EPOCH_SECONDS + i64::from(self.latest_start)) * 1_000_000_000
        }
    }
}

impl NodeSummary {
    /// The digest of `info`, whose node's hard taints have id `taint_set` (ignored, and
    /// [`READ_NODE`] kept, when the node has not arrived).
    pub fn of(info: &NodeInfo, taint_set: u16) -> Self {
        let mut summary = NodeSummary {
            requested: [
                info.requested.milli_cpu,
                info.requested.memory,
                info.requested.ephemeral_storage,
            ],
            pods: info.pods.len() as u32,
            nominated_priority: info
                .nominated
                .iter()
                .map(|p| p.priority)
                .max()
                .unwrap_or(i32::MIN),
            level_count: info.levels.len().min(INLINE_LEVELS) as u8,
            next_priority: info
                .levels
                .get(INLINE_LEVELS)
                .map_or(i32::MAX, |l| l.priority),
            ..NodeSummary::default()
        };
        for (slot, level) in summary.levels.iter_mut().zip(&info.levels) {
            match LevelDigest::of(level) {
                Some(digest) => *slot = digest,
                None => summary.next_priority = i32::MIN,
            }
        }
        match info.node.as_deref() {
            Some(node) => {
                let a = &node.allocatable;
                summary.allocatable = [a.milli_cpu, a.memory, a.ephemeral_storage, a.pods];
                summary.taint_set = taint_set;
            }
            None => summary.taint_set = READ_NODE,
        }
        summary
    }

    /// Whether the node is unschedulable, has a NoSchedule or NoExecute taint, or has not
    /// arrived: the node-only filters have something to check.
    pub fn hard_taints(&self) -> bool {
        self.taint_set != NO_HARD_TAINTS
    }

    /// Whether the resource filters for a preemptor of `priority` need more than the
    /// digest and its taint set: the node itself or nominated pods that count for it.
    pub fn needs_full_read(&self, priority: i32) -> bool {
        self.taint_set == READ_NODE || self.counts_nominated(priority)
    }

    /// Whether some pod nominated to the node takes room from a preemptor of `priority`.
    pub fn counts_nominated(&self, priority: i32) -> bool {
        self.nominated_priority >= priority
    }

    /// The inline levels with priority below `priority`; `None` when some level below it
    /// is not held inline.
    pub fn levels_below(&self, priority: i32) -> Option<&[LevelDigest]> {
        if self.next_priority < priority {
            return None;
        }
        let levels = &self.levels[..self.level_count as usize];
        Some(&levels[..levels.partition_point(|l| l.priority < priority)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_round_up_to_the_least_f32_not_below() {
        let reference = |value: i64| {
            let rounded = value as f32;
            if (rounded as i128) < i128::from(value) {
                rounded.next_up()
            } else {
                rounded
            }
        };
        let mut values = vec![0, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
        for shift in [23, 24, 25, 31, 32, 53, 61, 62] {
            let p = 1i64 << shift;
            values.extend([p - 1, p, p + 1, -p - 1, -p, -p + 1]);
        }
        // A fixed walk over magnitudes and bit patterns (xorshift).
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push((x >> (x % 64)) as i64);
            values.push(x as i64);
        }
        for value in values {
            let rounded = ceil_f32(value);
            assert_eq!(rounded.to_bits(), reference(value).to_bits(), "{value}");
            assert!(rounded as i128 >= i128::from(value), "{value}");
        }
    }
}
