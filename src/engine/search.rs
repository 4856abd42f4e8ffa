//! Phase 4, the candidate search: dry runs of victim selection (see [`super::victims`]) on
//! the potential nodes. Small searches and `explain` dry-run every one; otherwise the
//! most promising nodes go first, in chunks, and the search stops once no node left can
//! beat (or tie) the best candidate found — by their lower bounds, so the answer is the
//! exhaustive search's. Screened groups are filtered only while they may hold a winner.

use rayon::prelude::*;

use super::candidate::{Candidate, earliest_start_of_highest, score_key};
use super::filter_pass::{FilterPass, Filtered};
use super::filters::Status;
use super::groups::{GroupScreen, SCREEN_FIRST_GROUPS, ScreenedGroups};
use super::potential::{MostPromising, Potential};
use super::tally::FilterTally;
use super::thresholds::{PRUNE_CHUNK_FIRST, PRUNE_THRESHOLD};
use super::units::UnitContext;
use super::version::KubernetesVersion;
use super::victims::{self, Coverage, PdbIndex};
use crate::model::Pod;
use triomphe::Arc;

/// The most nodes dry-run between two pruning checks.
const PRUNE_CHUNK_MAX: usize = 64;
/// Dry runs of fewer nodes than this stay on the calling thread.
const PARALLEL_DRY_RUNS: usize = 8;

/// One node's dry run: its victims and budget violations, or its failure.
type DryRun = Result<(Vec<Arc<Pod>>, i32), Status>;

/// What the search found, and what the filter pass made of the nodes in the end.
pub(super) struct Found {
    pub candidates: Vec<Candidate>,
    /// The nodes whose dry run failed, with the failure.
    pub failures: Vec<(usize, Status)>,
    /// The FitError text of the filter pass over every node.
    pub filter_message: String,
    /// Nodes the filter pass read (the others were answered for by their groups).
    pub nodes_filtered: usize,
}

impl Found {
    /// Nodes dry-run.
    pub(super) fn evaluated(&self) -> usize {
        self.candidates.len() + self.failures.len()
    }
}

/// Phases 3 and 4 in a `candidate_search` span: the potential nodes of the filter pass,
/// searched exhaustively when `explain` is on or when there are few of them on a cluster
/// not `screening` node groups, else by the bounded search.
pub(super) fn find_candidates<'a>(
    pass: &FilterPass<'a>,
    filtered: Filtered<'a>,
    screening: bool,
    strict_pdb: bool,
    version: KubernetesVersion,
    now: i64,
    units: Option<&UnitContext<'_>>,
) -> Found {
    let Filtered {
        mut tally,
        screened,
    } = filtered;
    let potential = std::mem::take(&mut tally.potential);
    let span = tracing::info_span!(
        "candidate_search",
        potential = potential.len(),
        nodes_filtered = tracing::field::Empty,
        nodes_evaluated = tracing::field::Empty,
        candidates = tracing::field::Empty,
    )
    .entered();
    let mut search = CandidateSearch::new(pass, strict_pdb, version, now);
    // With victim units every potential node is dry-run: the bounds reason about pods.
    let (tally, skipped) = if let Some(units) = units {
        search.dry_run_units(&potential.indices(), units);
        (tally, screened.waiting().to_vec())
    } else if pass.explain || !screening && potential.len() <= PRUNE_THRESHOLD {
        search.dry_run(&potential.indices());
        (tally, screened.waiting().to_vec())
    } else {
        search.bounded(potential, tally, screened)
    };
    let found = Found {
        filter_message: pass.failure_message(tally, &skipped),
        nodes_filtered: pass.nodes_filtered(&skipped),
        candidates: search.candidates,
        failures: search.failures,
    };
    span.record("nodes_filtered", found.nodes_filtered);
    span.record("nodes_evaluated", found.evaluated());
    span.record("candidates", found.candidates.len());
    found
}

/// The best candidate so far, as far as pruning needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Best {
    /// [`score_key`]: smaller is better.
    key: [i64; 4],
    /// [`earliest_start_of_highest`]: later is better.
    start: i64,
}

impl Best {
    fn of(candidate: &Candidate, now: i64) -> Self {
        Best {
            key: score_key(candidate),
            start: earliest_start_of_highest(candidate, now),
        }
    }

    /// The better of the two; `self` when they tie.
    fn or(self, other: Best) -> Best {
        let rank = |b: &Best| (b.key, std::cmp::Reverse(b.start));
        if rank(&self) <= rank(&other) {
            self
        } else {
            other
        }
    }
}

/// The dry runs of one decision and what they found.
struct CandidateSearch<'p, 'a> {
    pass: &'p FilterPass<'a>,
    pdbs: PdbIndex<'a>,
    /// PDB mode strict: a dry run whose victims violate a budget is a failure.
    strict_pdb: bool,
    now: i64,
    candidates: Vec<Candidate>,
    failures: Vec<(usize, Status)>,
    /// Of `candidates`, when the search prunes.
    best: Option<Best>,
}

impl<'p, 'a> CandidateSearch<'p, 'a> {
    fn new(
        pass: &'p FilterPass<'a>,
        strict_pdb: bool,
        version: KubernetesVersion,
        now: i64,
    ) -> Self {
        CandidateSearch {
            pass,
            pdbs: PdbIndex::new(&pass.snapshot.pdbs, version),
            strict_pdb,
            now,
            candidates: Vec::new(),
            failures: Vec::new(),
            best: None,
        }
    }

    /// Dry-runs the nodes `indices` (in parallel when there are several).
    fn dry_run(&mut self, indices: &[usize]) {
        let (pre, nodes, pdbs, now) = (
            self.pass.pre,
            &self.pass.snapshot.nodes,
            &self.pdbs,
            self.now,
        );
        let evaluate = |coverage: &mut Coverage, &index: &usize| {
            let result = victims::select_victims_on_node(pre, &nodes[index], pdbs, coverage, now);
            (index, result)
        };
        let results: Vec<_> = if indices.len() >= PARALLEL_DRY_RUNS && self.pass.parallel {
            indices
                .par_iter()
                .map_init(Coverage::default, evaluate)
                .collect()
        } else {
            let mut coverage = Coverage::default();
            indices
                .iter()
                .map(|index| evaluate(&mut coverage, index))
                .collect()
        };
        self.record(results);
    }

    /// [`CandidateSearch::dry_run`] with victim units
    /// ([`super::units::select_unit_victims_on_node`]).
    fn dry_run_units(&mut self, indices: &[usize], units: &UnitContext<'_>) {
        let (pre, nodes, pdbs, now) = (
            self.pass.pre,
            &self.pass.snapshot.nodes,
            &self.pdbs,
            self.now,
        );
        let results: Vec<_> = indices
            .iter()
            .map(|&index| {
                let result =
                    super::units::select_unit_victims_on_node(pre, &nodes[index], units, pdbs, now);
                (index, result)
            })
            .collect();
        self.record(results);
    }

    /// Files the dry runs' results as candidates or failures.
    fn record(&mut self, results: Vec<(usize, DryRun)>) {
        for (index, result) in results {
            match result {
                Ok((_, pdb_violations)) if self.strict_pdb && pdb_violations > 0 => self
                    .failures
                    .push((index, super::policy::strict_pdb_status())),
                Ok((victims, pdb_violations)) => self.candidates.push(Candidate {
                    index,
                    victims,
                    pdb_violations,
                }),
                Err(status) => self.failures.push((index, status)),
            }
        }
    }

    /// The bounded search: rounds of the most promising bounded nodes, then of the
    /// screened groups that may still hold a winner (filtered then, their nodes joining
    /// `potential`), until neither has any left. Nodes that cannot fit even with every
    /// lower-priority pod gone are dry-run only if nothing else is found, for the failure
    /// message. Returns the filter tally of every filtered node and the groups skipped.
    fn bounded(
        &mut self,
        mut potential: Potential,
        mut tally: FilterTally<'a>,
        mut screened: ScreenedGroups,
    ) -> (FilterTally<'a>, Vec<GroupScreen>) {
        let mut skipped = Vec::new();
        let mut chunk_len = PRUNE_CHUNK_FIRST.max(rayon::current_num_threads());
        let mut more_groups = SCREEN_FIRST_GROUPS;
        loop {
            self.dry_run_promising(potential.take_promising(), &mut chunk_len);
            let groups = self.groups_to_filter(&mut screened, more_groups, &mut skipped);
            if groups.is_empty() {
                break;
            }
            more_groups *= 2;
            let mut more = self.pass.filter_groups(&groups);
            potential.append(std::mem::take(&mut more.potential));
            tally = FilterTally::concat(vec![tally, more]);
        }
        if self.candidates.is_empty() {
            self.dry_run(&potential.unbounded);
        }
        (tally, skipped)
    }

    /// Dry-runs `remaining` in chunks, most promising first, until no node left can beat
    /// the best candidate; each chunk twice the last, up to `PRUNE_CHUNK_MAX`.
    fn dry_run_promising(&mut self, mut remaining: MostPromising, chunk_len: &mut usize) {
        let mut open = Vec::with_capacity(PRUNE_CHUNK_MAX);
        loop {
            next_chunk(&mut remaining, self.best, *chunk_len, self.now, &mut open);
            if open.is_empty() {
                return;
            }
            *chunk_len = (*chunk_len * 2).min(PRUNE_CHUNK_MAX);
            let before = self.candidates.len();
            self.dry_run(&open);
            for candidate in &self.candidates[before..] {
                let found = Best::of(candidate, self.now);
                self.best = Some(self.best.map_or(found, |best| best.or(found)));
            }
        }
    }

    /// Up to `at_most` of the waiting screened groups that may still hold a winner,
    /// ascending; those before them that cannot go to `skipped`.
    fn groups_to_filter(
        &self,
        screened: &mut ScreenedGroups,
        at_most: usize,
        skipped: &mut Vec<GroupScreen>,
    ) -> Vec<usize> {
        let (snapshot, preemptor, now) = (self.pass.snapshot, self.pass.preemptor, self.now);
        let mut groups = Vec::new();
        while groups.len() < at_most {
            let Some(group) = screened.next_group() else {
                break;
            };
            if self.best.is_some_and(|best| {
                group.loses_to(best.key, best.start)
                    || group.each_node_loses_to(snapshot, preemptor, best.key, best.start, now)
            }) {
                skipped.push(group.clone());
            } else {
                groups.push(group.group);
            }
        }
        groups.sort_unstable();
        groups
    }
}

/// Fills `open` with up to `len` of the most promising nodes of `remaining` that may still
/// beat (or tie) `best`. Nodes come in bound order, and within a bound by descending
/// latest start (an unset start, "now", first): once one with a known start loses, so
/// does every node after it, and `remaining` is cleared.
fn next_chunk(
    remaining: &mut MostPromising,
    best: Option<Best>,
    len: usize,
    now: i64,
    open: &mut Vec<usize>,
) {
    open.clear();
    while open.len() < len {
        let Some(next) = remaining.pop() else {
            break;
        };
        if let Some(best) = best {
            let bound = next.bound();
            if bound.key() > best.key
                || bound.latest_start != i64::MAX && bound.loses_to(best.key, best.start, now)
            {
                remaining.clear();
                break;
            }
            if bound.loses_to(best.key, best.start, now) {
                continue;
            }
        }
        open.push(next.index());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bounds::Bound;
    use crate::engine::filters::PreFilter;
    use crate::engine::pick::pick_one;
    use crate::engine::test_support::*;

    const NOW: i64 = 1_000;

    /// A splitmix64 stream: reproducible cases without a generator crate.
    fn stream(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut state = seed;
        move |below| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) % below
        }
    }

    fn best(key: [i64; 4], start: i64) -> Best {
        Best { key, start }
    }

    #[test]
    fn the_best_has_the_smaller_key_then_the_later_start_and_the_first_wins_ties() {
        let a = best([0, 5, 9, 1], 10);
        assert_eq!(a.or(best([0, 5, 9, 2], 99)), a);
        assert_eq!(a.or(best([0, 5, 8, 3], 0)), best([0, 5, 8, 3], 0));
        assert_eq!(a.or(best([0, 5, 9, 1], 11)), best([0, 5, 9, 1], 11));
        assert_eq!(a.or(best([0, 5, 9, 1], 9)), a);
        let twin = best([0, 5, 9, 1], 10);
        assert_eq!(a.or(twin), a);
    }

    /// Whatever the best candidate so far, the chunks hand out exactly the nodes whose
    /// bound does not lose to it (so pruning never drops a node that could win or tie),
    /// most promising first.
    #[test]
    fn chunks_hold_every_node_that_may_beat_the_best_in_promising_order() {
        let mut next = stream(5);
        for case in 0..400 {
            let len = next(200) as usize;
            let starts = [i64::MAX, NOW - 5, NOW, NOW + 5, 0];
            let mut tasks: Vec<Potential> =
                (0..1 + next(3)).map(|_| Potential::default()).collect();
            let mut bounds = Vec::new();
            for index in 0..len {
                let bound = Bound {
                    highest: next(4) as i64 - 1,
                    sum: next(3) as i64,
                    count: 1 + next(2) as i64,
                    latest_start: starts[next(5) as usize],
                };
                let task = next(tasks.len() as u64) as usize;
                tasks[task].add(index, Some(bound));
                bounds.push(bound);
            }
            let mut potential = Potential::default();
            for mut task in tasks {
                task.seal();
                potential.append(task);
            }
            let best = (case % 5 != 0).then(|| {
                let key = [0, next(4) as i64 - 1, next(3) as i64, 1 + next(2) as i64];
                best(key, starts[next(5) as usize].min(NOW + 10))
            });
            let mut remaining = potential.take_promising();
            let (mut opened, mut open) = (Vec::new(), Vec::new());
            let chunk = 1 + next(70) as usize;
            loop {
                next_chunk(&mut remaining, best, chunk, NOW, &mut open);
                assert!(open.len() <= chunk);
                if open.is_empty() {
                    break;
                }
                opened.extend_from_slice(&open);
            }
            let mut expected: Vec<usize> = (0..len)
                .filter(|&i| best.is_none_or(|b| !bounds[i].loses_to(b.key, b.start, NOW)))
                .collect();
            expected.sort_by_key(|&i| (bounds[i].order(), i));
            assert_eq!(opened, expected, "case {case}: best {best:?}");
        }
    }

    /// Node `i` of `nodes` is full with two pods of 500m: one at a priority that varies
    /// by node, one at 500 (or 5000 on every third node, out of the preemptor's reach).
    fn full_cluster(nodes: usize) -> crate::cache::Snapshot {
        let names: Vec<String> = (0..nodes).map(|i| format!("node-{i:03}")).collect();
        let mut pods = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let low = (i * 37 % 97) as i32;
            let high = if i % 3 == 0 { 5000 } else { 500 };
            let first = started(
                pod(&format!("low-{i}"), low, 500, GI, Some(name)),
                i as i64 % 7,
            );
            pods.push(first);
            pods.push(pod(&format!("high-{i}"), high, 500, GI, Some(name)));
        }
        let nodes = names.iter().map(|n| node(n, 1000, 4 * GI)).collect();
        snapshot(nodes, pods)
    }

    #[test]
    fn the_bounded_search_finds_the_exhaustive_searchs_pick_with_fewer_dry_runs() {
        let snapshot = full_cluster(3 * PRUNE_THRESHOLD);
        for (priority, cpu) in [
            (1000, 400),
            (1000, 900),
            (60, 400),
            (1, 400),
            (10_000, 1000),
        ] {
            let preemptor = pod("preemptor", priority, cpu, GI, None);
            let pre = PreFilter::new(&preemptor, &snapshot);
            let search = |explain: bool| {
                let pass = FilterPass::new(&snapshot, &pre, explain);
                let filtered = pass.run(false, NOW);
                let found = find_candidates(
                    &pass,
                    filtered,
                    false,
                    false,
                    KubernetesVersion::default(),
                    NOW,
                    None,
                );
                let chosen = (!found.candidates.is_empty())
                    .then(|| &found.candidates[pick_one(&found.candidates, &snapshot.nodes, NOW)])
                    .map(|c| (c.index, c.victims.clone(), c.pdb_violations));
                (chosen, found.evaluated(), found.filter_message)
            };
            let (full, full_runs, full_message) = search(true);
            let (bounded, bounded_runs, bounded_message) = search(false);
            assert_eq!(bounded, full, "priority {priority}, {cpu}m");
            assert_eq!(bounded_message, full_message);
            if full.is_some() {
                assert!(
                    bounded_runs < full_runs,
                    "{bounded_runs} of {full_runs} dry-run"
                );
            }
        }
    }
}
