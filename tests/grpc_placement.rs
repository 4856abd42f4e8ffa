//! `Preempt` with `explain` on a pod that fits names where the kube-scheduler would bind
//! it, and why: the scoring inputs (preferred node affinity, node images, container
//! images) arrive typed and as Kubernetes JSON and score alike.

mod grpc_support;

use grpc_support::*;
use preemptd::server::pb;
use tokio::time::timeout;

async fn explain(client: &mut Client, preemptor: pb::preempt_request::Preemptor) -> pb::Placement {
    let response = client
        .preempt(pb::PreemptRequest {
            preemptor: Some(preemptor),
            dry_run: true,
            explain: true,
            pdb_mode: pb::PdbMode::Unspecified.into(),
        })
        .await
        .expect("preempt")
        .into_inner();
    assert_eq!(outcome(&response), pb::Outcome::Fits, "{response:?}");
    response
        .placement
        .expect("a FITS answer with explain carries the placement")
}

fn plugin(score: &pb::NodeScore, name: &str) -> (i64, i64) {
    let p = score
        .plugins
        .iter()
        .find(|p| p.plugin == name)
        .unwrap_or_else(|| panic!("no {name} in {score:?}"));
    (p.score, p.weight)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_on_a_fitting_pod_names_the_node_the_scheduler_would_bind_and_why() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        for (name, zone) in [("n1", "a"), ("n2", "b"), ("n3", "a")] {
            let mut n = node(name, "4");
            n.labels.insert("zone".into(), zone.into());
            if name == "n3" {
                n.images = vec![pb::ContainerImage {
                    names: vec!["registry.example/trainer:v1".into()],
                    size_bytes: 2000 * 1024 * 1024,
                }];
            }
            upsert_node(&mut client, n).await;
        }

        // Preferred zone b (NodeAffinity 100 × 2 on n2 only) outweighs n3's image
        // (ImageLocality: 2000 MiB on 1 of 3 nodes = 666 MiB; 100 × (666 − 23) / 977 = 65).
        let mut typed = pod("trainer", 100, "1", "");
        typed.containers[0].image = "registry.example/trainer:v1".into();
        typed.affinity = Some(pb::Affinity {
            node_affinity: Some(pb::NodeAffinity {
                preferred_during_scheduling_ignored_during_execution: vec![
                    pb::PreferredSchedulingTerm {
                        weight: 50,
                        preference: Some(pb::NodeSelectorTerm {
                            match_expressions: vec![pb::NodeSelectorRequirement {
                                key: "zone".into(),
                                operator: "In".into(),
                                values: vec!["b".into()],
                            }],
                            ..Default::default()
                        }),
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        });
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"default","name":"trainer","uid":"uid-trainer"},"spec":{"priority":100,"containers":[{"name":"app","image":"registry.example/trainer:v1","resources":{"requests":{"cpu":"1"}}}],"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":50,"preference":{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]}}]}}}}"#;

        let from_typed = explain(&mut client, pb::preempt_request::Preemptor::Pod(typed)).await;
        let from_json =
            explain(&mut client, pb::preempt_request::Preemptor::PodJson(json.into())).await;
        assert_eq!(from_typed, from_json);

        let placement = from_typed;
        assert_eq!(placement.node_name, "n2");
        assert_eq!(placement.tied_nodes, vec!["n2".to_string()]);
        assert_eq!(placement.feasible_nodes, 3);
        let [chosen, runner_up] = &placement.node_scores[..] else {
            panic!("chosen and runner-up scores: {placement:?}");
        };
        assert_eq!(chosen.node_name, "n2");
        assert_eq!(chosen.total, placement.score);
        assert_eq!(plugin(chosen, "NodeAffinity"), (100, 2));
        assert_eq!(plugin(chosen, "ImageLocality"), (0, 1));
        assert_eq!(runner_up.node_name, "n3");
        assert_eq!(plugin(runner_up, "NodeAffinity"), (0, 2));
        assert_eq!(plugin(runner_up, "ImageLocality"), (65, 1));
        let weighted = |s: &pb::NodeScore| s.plugins.iter().map(|p| p.score * p.weight).sum::<i64>();
        assert_eq!(weighted(chosen), chosen.total);
        assert_eq!(chosen.total - runner_up.total, 200 - 65);

        // Without explain the FITS answer is as before: no placement.
        let plain = preempt(&mut client, pod("plain", 100, "1", ""), true).await;
        assert_eq!(outcome(&plain), pb::Outcome::Fits);
        assert_eq!(plain.placement, None);
    })
    .await
    .expect("test timed out");
}
