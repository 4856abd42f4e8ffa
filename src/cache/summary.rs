//! A fixed-size digest of each node entry, kept in a persistent vector beside the entries.
//!
//! A decision's filter pass visits every node. Reading `NodeInfo`, its `Node` and the
//! node's taints costs several cache misses per node; the digest packs what the resource
//! filters and the candidate bounds need into one contiguous array, so a preemptor that
//! only asks for resources is filtered from the digests alone, and only nodes the digest
//! cannot answer for (taints, unschedulable, nominated pods) are read in full.

use super::{NodeInfo, PriorityLevel};
use crate::model::TaintEffect;

/// Priority levels held inline; nodes with more also keep `next_priority`.
pub const INLINE_LEVELS: usize = 4;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeSummary {
    /// Allocatable milli-CPU, memory, ephemeral storage and pod slots.
    pub allocatable: [i64; 4],
    /// Requested milli-CPU, memory and ephemeral storage of the bound pods.
    pub requested: [i64; 3],
    /// Bound pods.
    pub pods: u32,
    /// The node is unschedulable, has a NoSchedule or NoExecute taint, or has not arrived:
    /// the node-only filters need the node itself.
    pub hard_taints: bool,
    /// Pending pods nominated to the node (their requests are in the node entry).
    pub nominated: u32,
    pub level_count: u8,
    /// The lowest `INLINE_LEVELS` priority levels of the bound pods, ascending.
    pub levels: [PriorityLevel; INLINE_LEVELS],
    /// The priority of the first level not held inline (`i32::MAX` when all are).
    pub next_priority: i32,
}

impl NodeSummary {
    pub fn of(info: &NodeInfo) -> Self {
        let mut summary = NodeSummary {
            requested: [
                info.requested.milli_cpu,
                info.requested.memory,
                info.requested.ephemeral_storage,
            ],
            pods: info.pods.len() as u32,
            nominated: info.nominated.len() as u32,
            level_count: info.levels.len().min(INLINE_LEVELS) as u8,
            next_priority: info
                .levels
                .get(INLINE_LEVELS)
                .map_or(i32::MAX, |l| l.priority),
            ..NodeSummary::default()
        };
        for (slot, level) in summary.levels.iter_mut().zip(&info.levels) {
            *slot = *level;
        }
        match info.node.as_deref() {
            Some(node) => {
                let a = &node.allocatable;
                summary.allocatable = [a.milli_cpu, a.memory, a.ephemeral_storage, a.pods];
                summary.hard_taints = node.unschedulable
                    || node.taints.iter().any(|t| {
                        matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
                    });
            }
            None => summary.hard_taints = true,
        }
        summary
    }

    /// Whether the resource filters need more than the digest: the node itself (taints)
    /// or its nominated pods.
    pub fn needs_full_read(&self) -> bool {
        self.hard_taints || self.nominated > 0
    }

    /// The inline levels with priority below `priority`; `None` when some level below it
    /// is not held inline.
    pub fn levels_below(&self, priority: i32) -> Option<&[PriorityLevel]> {
        if self.next_priority < priority {
            return None;
        }
        let levels = &self.levels[..self.level_count as usize];
        Some(&levels[..levels.partition_point(|l| l.priority < priority)])
    }
}
