//! A candidate node of the search and the pick criteria's keys that the screening, the
//! bounds, the search and the pick compare.

use triomphe::Arc;

use crate::model::Pod;

/// A candidate node with its victims.
pub(crate) struct Candidate {
    pub index: usize,
    /// Importance order (most important first).
    pub victims: Vec<Arc<Pod>>,
    pub pdb_violations: i32,
}

/// Added to each victim priority in the sum criterion, so every term is non-negative.
pub(super) const SHIFT: i64 = i32::MAX as i64 + 1;

/// The first four pick criteria as a key where smaller is better: PDB violations, the
/// highest victim priority, the sum of priorities shifted by 2^31, the victim count.
pub(super) fn score_key(c: &Candidate) -> [i64; 4] {
    [
        c.pdb_violations as i64,
        c.victims.first().map(|p| p.priority as i64).unwrap_or(0),
        c.victims.iter().map(|p| p.priority as i64 + SHIFT).sum(),
        c.victims.len() as i64,
    ]
}

/// Criterion 5: the earliest start time among the victims of the highest priority (unset
/// start = now); a later one is better.
pub(super) fn earliest_start_of_highest(c: &Candidate, now: i64) -> i64 {
    let highest = c.victims.iter().map(|p| p.priority).max().unwrap_or(0);
    c.victims
        .iter()
        .filter(|p| p.priority == highest)
        .map(|p| p.start_time.unwrap_or(now))
        .min()
        .unwrap_or(i64::MIN)
}
