//! The sizes at which the phases change how they work: on the calling thread or the
//! pool, every potential node dry-run or the search pruned.

/// Below this many nodes a decision runs on the calling thread.
pub(super) const PARALLEL_THRESHOLD: usize = 256;
/// Up to this many potential nodes every one is dry-run; above, bounds prune the search.
pub(super) const PRUNE_THRESHOLD: usize = 64;
/// Nodes dry-run before the first pruning check (one per worker thread and some), then
/// twice as many each round up to the search's largest chunk: the most promising nodes
/// usually hold the winner, so the first rounds are small.
pub(super) const PRUNE_CHUNK_FIRST: usize = 4;
