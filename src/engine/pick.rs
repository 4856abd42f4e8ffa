//! Phase 5, the pick: upstream `pickOneNodeForPreemption` over the candidates, and the
//! pods nominated to the chosen node that lose their nomination.

use triomphe::Arc;

use super::candidate::{Candidate, earliest_start_of_highest, score_key};
use super::victims::importance;
use crate::cache::NodeInfo;
use crate::model::{Pod, PodRef};

/// Upstream `pickOneNodeForPreemption` with a deterministic last tie-break (node name):
/// the position of the chosen one in `candidates` (0 when there is none).
pub(super) fn pick_one(
    candidates: &[Candidate],
    nodes: &imbl::Vector<Arc<NodeInfo>>,
    now: i64,
) -> usize {
    // Scores where higher is better, in upstream's criteria order.
    let score = |c: &Candidate| -> [i64; 5] {
        let [violations, first, sum, count] = score_key(c);
        [
            -violations,
            -first,
            -sum,
            -count,
            earliest_start_of_highest(c, now),
        ]
    };
    let scores: Vec<[i64; 5]> = candidates.iter().map(score).collect();
    (0..candidates.len())
        .max_by(|&a, &b| {
            scores[a].cmp(&scores[b]).then_with(|| {
                // Lower name wins the final tie: reverse so max_by picks it.
                nodes[candidates[b].index]
                    .name
                    .cmp(&nodes[candidates[a].index].name)
            })
        })
        .unwrap_or(0)
}

/// The pods nominated to the chosen node that the preemptor displaces (lower priority,
/// itself excepted), in importance order: their nominations are cleared.
pub(super) fn nominated_pods_to_clear(info: &NodeInfo, preemptor: &Pod, now: i64) -> Vec<PodRef> {
    let mut to_clear: Vec<&Arc<Pod>> = info
        .nominated
        .iter()
        .filter(|p| p.priority < preemptor.priority && p.uid() != preemptor.uid())
        .collect();
    to_clear.sort_by(|a, b| importance(a, b, now));
    to_clear.iter().map(|p| p.pod_ref()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::test_support::*;

    const NOW: i64 = 1_000_000 * 1_000_000_000;

    /// A victim of `priority` started at `start` seconds.
    fn victim(priority: i32, start: i64) -> Arc<Pod> {
        let name = format!("v{priority}-{start}");
        Arc::new(started(pod(&name, priority, 100, 0, None), start))
    }

    fn candidate(index: usize, pdb_violations: i32, victims: Vec<Arc<Pod>>) -> Candidate {
        Candidate {
            index,
            victims,
            pdb_violations,
        }
    }

    /// The name of the node picked among `on_a` (on node a) and `on_b` (on node b), offered
    /// in both orders.
    fn picked(on_a: (i32, Vec<Arc<Pod>>), on_b: (i32, Vec<Arc<Pod>>)) -> String {
        let snapshot = snapshot(vec![node("a", 1000, GI), node("b", 1000, GI)], vec![]);
        let (a, b) = (
            snapshot.node_index("a").unwrap(),
            snapshot.node_index("b").unwrap(),
        );
        let reversed = [
            candidate(b, on_b.0, on_b.1.clone()),
            candidate(a, on_a.0, on_a.1.clone()),
        ];
        let candidates = [candidate(a, on_a.0, on_a.1), candidate(b, on_b.0, on_b.1)];
        let first = pick_one(&candidates, &snapshot.nodes, NOW);
        let second = pick_one(&reversed, &snapshot.nodes, NOW);
        let name = |c: &Candidate| snapshot.nodes[c.index].name.to_string();
        assert_eq!(
            name(&candidates[first]),
            name(&reversed[second]),
            "order matters"
        );
        name(&candidates[first])
    }

    #[test]
    fn pick_follows_the_criteria_in_order() {
        let min = i32::MIN;
        // 1. Fewer PDB violations, though every later criterion says otherwise.
        assert_eq!(
            picked(
                (1, vec![victim(1, 9)]),
                (0, vec![victim(100, 1), victim(100, 1)])
            ),
            "b"
        );
        // 2. A lower highest victim priority, though more victims with a larger sum.
        assert_eq!(
            picked((0, vec![victim(50, 9)]), (0, vec![victim(10, 1); 3])),
            "b"
        );
        // 3. A smaller shifted priority sum, though more victims.
        assert_eq!(
            picked(
                (0, vec![victim(10, 1), victim(min, 1), victim(min, 1)]),
                (0, vec![victim(10, 1), victim(5, 1)])
            ),
            "a"
        );
        // 4. Fewer victims at an equal sum.
        let low = -2_147_483_643;
        assert_eq!(
            picked(
                (0, vec![victim(10, 1), victim(10, 1)]),
                (0, vec![victim(10, 1), victim(5, 1), victim(low, 1)])
            ),
            "a"
        );
        // 5. The later earliest start among the highest-priority victims.
        assert_eq!(
            picked(
                (0, vec![victim(10, 100), victim(5, 900)]),
                (0, vec![victim(10, 200), victim(5, 1)])
            ),
            "b"
        );
        // 6. All equal: the lower node name.
        assert_eq!(
            picked((0, vec![victim(10, 100)]), (0, vec![victim(10, 100)])),
            "a"
        );
    }

    #[test]
    fn an_unset_start_counts_as_now() {
        let unset = Arc::new(pod("unset", 10, 100, 0, None));
        assert_eq!(
            picked(
                (0, vec![unset.clone()]),
                (0, vec![victim(10, NOW / 1_000_000_000 - 1)])
            ),
            "a"
        );
        assert_eq!(
            picked(
                (0, vec![unset]),
                (0, vec![victim(10, NOW / 1_000_000_000 + 1)])
            ),
            "b"
        );
    }

    #[test]
    fn lower_priority_nominated_pods_lose_their_nomination_in_importance_order() {
        let preemptor = pod("preemptor", 100, 100, 0, None);
        let nominated = |name: &str, priority: i32, start: i64| {
            let mut p = started(pod(name, priority, 100, 0, None), start);
            p.nominated_node_name = Some("a".into());
            p
        };
        let mut itself = preemptor.clone();
        itself.priority = 10;
        itself.nominated_node_name = Some("a".into());
        let snapshot = snapshot(
            vec![node("a", 1000, GI)],
            vec![
                nominated("old-low", 10, 5),
                nominated("higher", 200, 1),
                nominated("equal", 100, 1),
                nominated("mid", 50, 9),
                nominated("new-low", 10, 7),
                itself,
            ],
        );
        let info = &snapshot.nodes[snapshot.node_index("a").unwrap()];
        let cleared: Vec<String> = nominated_pods_to_clear(info, &preemptor, NOW)
            .iter()
            .map(|p| p.name.to_string())
            .collect();
        assert_eq!(cleared, ["mid", "old-low", "new-low"]);
    }
}
