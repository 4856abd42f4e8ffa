//! Property tests over small random clusters (resources, host ports, priorities, start
//! times, PDBs and nominations — filters that are monotone in the set of pods present).

mod common;

use common::*;
use preemptd::engine::Outcome;
use preemptd::model::{Pod, PodDisruptionBudget, Protocol};
use proptest::prelude::*;

const GI: i64 = 1 << 30;

#[derive(Clone, Debug)]
struct Scenario {
    nodes: Vec<preemptd::model::Node>,
    pods: Vec<Pod>,
    pdbs: Vec<PodDisruptionBudget>,
    preemptor: Pod,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let node_count = 1usize..4;
    node_count
        .prop_flat_map(|nodes| {
            let pod = (
                0..nodes,
                prop_oneof![Just(-5), Just(0), Just(5), Just(10)],
                1i64..12,
                prop::option::of(0i64..4),
                prop::option::of(prop_oneof![Just("a"), Just("b")]),
                prop::bool::weighted(0.15),
                prop::bool::weighted(0.1),
            );
            (
                Just(nodes),
                prop::collection::vec(2i64..9, nodes),
                prop::collection::vec(pod, 0..12),
                prop::collection::vec((prop_oneof![Just("a"), Just("b")], 0i32..3), 0..3),
                (
                    prop_oneof![Just(0), Just(5), Just(10), Just(15)],
                    1i64..20,
                    prop::bool::weighted(0.2),
                ),
            )
        })
        .prop_map(|(_, capacities, pods, pdbs, (prio, cpu, port))| {
            let nodes: Vec<_> = capacities
                .iter()
                .enumerate()
                .map(|(i, c)| node(&format!("n{i}"), c * 250, GI))
                .collect();
            // At most one pod a node binds the host port: upstream's NodePorts filter never
            // places a second one, and its set-valued `HostPortInfo` makes the invariants below
            // false for that state (engine_rules pins what upstream answers there).
            let mut port_taken = vec![false; nodes.len()];
            let pods = pods
                .into_iter()
                .enumerate()
                .map(
                    |(i, (n, priority, cpu, start, app, with_port, is_nominated))| {
                        let n = n.min(nodes.len() - 1);
                        let with_port = with_port && !std::mem::replace(&mut port_taken[n], true);
                        let name = format!("p{i}");
                        let node_name = format!("n{n}");
                        let mut p = if is_nominated {
                            nominated(pod(&name, priority, cpu * 100, 0, None), &node_name)
                        } else {
                            pod(&name, priority, cpu * 100, 0, Some(&node_name))
                        };
                        if let Some(s) = start {
                            p = started(p, s);
                        }
                        if let Some(app) = app {
                            p = labelled(p, &[("app", app)]);
                        }
                        if with_port {
                            p = with_host_port(p, "0.0.0.0", Protocol::Tcp, 80);
                        }
                        p
                    },
                )
                .collect();
            let pdbs = pdbs
                .into_iter()
                .enumerate()
                .map(|(i, (app, allowed))| pdb(&format!("pdb{i}"), &[("app", app)], allowed))
                .collect();
            let mut preemptor = pod("preemptor", prio, cpu * 100, 0, None);
            if port {
                preemptor = with_host_port(preemptor, "10.0.0.1", Protocol::Tcp, 80);
            }
            Scenario {
                nodes,
                pods,
                pdbs,
                preemptor,
            }
        })
}

fn cluster(s: &Scenario, pods: &[Pod]) -> Cluster {
    Cluster::new(s.nodes.clone(), pods.to_vec(), s.pdbs.clone())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn preemption_invariants(s in scenario()) {
        let d = cluster(&s, &s.pods).decide(&s.preemptor);
        if d.outcome != Outcome::Preempt {
            return Ok(());
        }
        let node = d.nominated_node.clone().unwrap();
        prop_assert!(!d.victims.is_empty(), "never PREEMPT with zero victims");
        for v in &d.victims {
            let victim = s.pods.iter().find(|p| p.uid() == &*v.uid).unwrap();
            prop_assert!(victim.priority < s.preemptor.priority, "victim {} not lower priority", v.name);
            prop_assert_eq!(victim.node_name.as_deref(), Some(&*node));
        }
        // With the victims gone the preemptor fits on the chosen node.
        let remaining: Vec<Pod> = s.pods.iter().filter(|p| !d.victims.iter().any(|v| &*v.uid == p.uid())).cloned().collect();
        let after = cluster(&s, &remaining).decide(&s.preemptor);
        prop_assert_eq!(after.outcome, Outcome::Fits);
        prop_assert!(after.feasible_nodes.contains(&node));
        // No victim could have been kept: putting any one back makes the pod not fit there.
        for v in &d.victims {
            let mut with_one_back = remaining.clone();
            with_one_back.push(s.pods.iter().find(|p| p.uid() == &*v.uid).unwrap().clone());
            let again = cluster(&s, &with_one_back).decide(&s.preemptor);
            prop_assert!(!again.feasible_nodes.contains(&node), "victim {} could have been reprieved", v.name);
        }
    }

    #[test]
    fn decision_does_not_depend_on_load_order(s in scenario(), seed in any::<u64>()) {
        let first = cluster(&s, &s.pods).decide(&s.preemptor);
        let mut shuffled = s.pods.clone();
        // Deterministic Fisher-Yates from the seed.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let mut nodes = s.nodes.clone();
        nodes.reverse();
        let second = Cluster::new(nodes, shuffled, s.pdbs.clone()).decide(&s.preemptor);
        prop_assert_eq!(first.outcome, second.outcome);
        prop_assert_eq!(first.nominated_node, second.nominated_node);
        prop_assert_eq!(first.victims, second.victims);
        prop_assert_eq!(first.nominated_pods_to_clear, second.nominated_pods_to_clear);
        prop_assert_eq!(first.feasible_nodes, second.feasible_nodes);
        prop_assert_eq!(first.message, second.message);
    }
}

/// Guards the generator: the invariants above only mean something if a good share of the
/// random scenarios actually preempt.
#[test]
fn generator_produces_preemptions() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = scenario();
    let mut preempt = 0;
    for _ in 0..200 {
        let s = strategy.new_tree(&mut runner).unwrap().current();
        if cluster(&s, &s.pods).decide(&s.preemptor).outcome == Outcome::Preempt {
            preempt += 1;
        }
    }
    assert!(preempt >= 30, "only {preempt} of 200 scenarios preempt");
}
