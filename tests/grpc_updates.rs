//! Update semantics over gRPC: resource versions (stale updates are reported, not
//! errors), deletes, typed messages and Kubernetes JSON meaning the same thing, and
//! `explain` diagnostics.

mod grpc_support;

use grpc_support::*;
use preemptd::server::pb;
use preemptd::server::pb::update_node_request::Change as NodeChange;
use preemptd::server::pb::update_pod_disruption_budget_request::Change as PdbChange;
use preemptd::server::pb::update_pod_request::Change as PodChange;
use tokio::time::timeout;
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_updates_are_reported_and_not_applied() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        let mut n = node("n1", "4");
        n.resource_version = 5;
        let first = upsert_node(&mut client, n.clone()).await;
        assert!(first.applied && first.stale.is_empty());
        assert_eq!((first.resource_version, first.epoch.as_str()), (5, server.epoch()));

        n.resource_version = 3;
        n.allocatable.insert("cpu".into(), "1".into());
        let stale = upsert_node(&mut client, n.clone()).await;
        assert!(!stale.applied);
        assert_eq!(stale.resource_version, 5);
        assert_eq!(stale.revision, first.revision, "nothing moved");
        assert_eq!(
            stale.stale,
            "resource_version 3 is older than resource_version 5 held by the cache"
        );
        // The node still has its 4 cpu: a 3-cpu pod fits.
        let fits = preempt(&mut client, pod("p", 1, "3", ""), true).await;
        assert_eq!(outcome(&fits), pb::Outcome::Fits, "{}", fits.message);

        // Pods from JSON carry metadata.resourceVersion.
        let json = |rv: &str, cpu: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"namespace":"default","name":"web","uid":"u-web","resourceVersion":"{rv}"}},"spec":{{"nodeName":"n1","priority":5,"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"{cpu}"}}}}}}]}},"status":{{"phase":"Running"}}}}"#
            )
        };
        let put = |text: String| pb::UpdatePodRequest {
            change: Some(PodChange::UpsertJson(text)),
        };
        let applied = client.update_pod(put(json("7", "1"))).await.expect("pod").into_inner();
        assert!(applied.applied);
        assert_eq!(applied.resource_version, 7);
        let older = client.update_pod(put(json("6", "3"))).await.expect("pod").into_inner();
        assert!(!older.applied);
        assert_eq!(older.resource_version, 7);
        assert!(older.stale.contains("resource_version 6 is older"));

        // Deletes: applied, then NOT_FOUND.
        let deleted = delete_pod(&mut client, "web").await;
        assert!(deleted.applied);
        assert_eq!(deleted.resource_version, 0);
        let again = client
            .update_pod(pb::UpdatePodRequest {
                change: Some(PodChange::Delete(pb::ObjectRef {
                    name: "web".into(),
                    ..Default::default()
                })),
            })
            .await
            .expect_err("already deleted");
        assert_eq!(again.code(), Code::NotFound);
        let node_gone = client
            .update_node(pb::UpdateNodeRequest {
                change: Some(NodeChange::Delete(pb::ObjectRef {
                    name: "n1".into(),
                    uid: Some("n1".into()),
                    ..Default::default()
                })),
            })
            .await
            .expect("delete node")
            .into_inner();
        assert!(node_gone.applied);
        let pdb = client
            .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest {
                change: Some(PdbChange::Upsert(pb::PodDisruptionBudget {
                    name: "budget".into(),
                    selector: Some(pb::LabelSelector {
                        match_labels: map(&[("app", "web")]),
                        ..Default::default()
                    }),
                    ..Default::default()
                })),
            })
            .await
            .expect("pdb")
            .into_inner();
        assert!(pdb.applied);
        assert_eq!(pdb.epoch, server.epoch());
        let pdb_gone = client
            .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest {
                change: Some(PdbChange::Delete(pb::ObjectRef {
                    name: "budget".into(),
                    ..Default::default()
                })),
            })
            .await
            .expect("delete pdb")
            .into_inner();
        assert!(pdb_gone.applied && pdb_gone.revision > pdb.revision);
    })
    .await
    .expect("test timed out");
}

/// The same tainted, labelled node and the same pods, once typed and once as JSON, give
/// the same answers; the typed fields (taints, tolerations, node selector) take effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_and_json_objects_mean_the_same() {
    timeout(TEST_TIMEOUT, async {
        let (_typed_server, mut typed) = start().await;
        let (_json_server, mut json) = start().await;

        let mut n = node("gpu", "4");
        n.labels.insert("pool".into(), "gpu".into());
        n.taints.push(pb::Taint {
            key: "dedicated".into(),
            value: "ml".into(),
            effect: "NoSchedule".into(),
        });
        upsert_node(&mut typed, n).await;
        upsert_node(&mut typed, node("plain", "4")).await;
        let node_json = |name: &str, extra_meta: &str, spec: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}","labels":{{"kubernetes.io/hostname":"{name}"{extra_meta}}}}},"spec":{spec},"status":{{"allocatable":{{"cpu":"4","memory":"64Gi","pods":"110"}}}}}}"#
            )
        };
        for text in [
            node_json("gpu", r#","pool":"gpu""#, r#"{"taints":[{"key":"dedicated","value":"ml","effect":"NoSchedule"}]}"#),
            node_json("plain", "", "{}"),
        ] {
            json.update_node(pb::UpdateNodeRequest {
                change: Some(NodeChange::UpsertJson(text)),
            })
            .await
            .expect("json node");
        }

        let mut tolerating = pod("trainer", 100, "1", "");
        tolerating.node_selector = map(&[("pool", "gpu")]);
        tolerating.tolerations.push(pb::Toleration {
            key: "dedicated".into(),
            operator: "Equal".into(),
            value: "ml".into(),
            effect: "NoSchedule".into(),
            toleration_seconds: None,
        });
        let mut intolerant = tolerating.clone();
        intolerant.name = "intolerant".into();
        intolerant.uid = "uid-intolerant".into();
        intolerant.tolerations.clear();
        let pod_json = |name: &str, tolerations: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"namespace":"default","name":"{name}","uid":"uid-{name}"}},"spec":{{"priority":100,"nodeSelector":{{"pool":"gpu"}},"tolerations":{tolerations},"containers":[{{"name":"app","resources":{{"requests":{{"cpu":"1"}}}}}}]}}}}"#
            )
        };
        let tolerating_json = pod_json(
            "trainer",
            r#"[{"key":"dedicated","operator":"Equal","value":"ml","effect":"NoSchedule"}]"#,
        );
        let intolerant_json = pod_json("intolerant", "[]");

        let ask = |preemptor: pb::preempt_request::Preemptor| pb::PreemptRequest {
            preemptor: Some(preemptor),
            dry_run: true,
            explain: true,
            pdb_mode: pb::PdbMode::Unspecified.into(),
        };
        use pb::preempt_request::Preemptor;
        let mut answers = Vec::new();
        for (use_json, request) in [
            (false, ask(Preemptor::Pod(tolerating))),
            (true, ask(Preemptor::PodJson(tolerating_json))),
            (false, ask(Preemptor::Pod(intolerant))),
            (true, ask(Preemptor::PodJson(intolerant_json))),
        ] {
            let client = if use_json { &mut json } else { &mut typed };
            answers.push(client.preempt(request).await.expect("preempt").into_inner());
        }
        assert_eq!(outcome(&answers[0]), pb::Outcome::Fits);
        assert_eq!(answers[0].feasible_nodes, vec!["gpu".to_string()]);
        assert_ne!(outcome(&answers[2]), pb::Outcome::Fits, "{}", answers[2].message);
        for pair in [(0, 1), (2, 3)] {
            let (a, b) = (&answers[pair.0], &answers[pair.1]);
            assert_eq!(
                (a.outcome, &a.feasible_nodes, &a.message, &a.diagnostics),
                (b.outcome, &b.feasible_nodes, &b.message, &b.diagnostics),
                "typed and JSON answers differ"
            );
        }
        // explain: one diagnostic per node, with the failing plugin named.
        let diagnostics = &answers[2].diagnostics;
        assert_eq!(diagnostics.len(), 2);
        let gpu = diagnostics.iter().find(|d| d.node == "gpu").expect("gpu diagnostic");
        let filter = gpu.filter.as_ref().expect("filter status");
        assert_eq!(filter.code, pb::StatusCode::UnschedulableAndUnresolvable as i32);
        assert_eq!(filter.plugin, "TaintToleration");
    })
    .await
    .expect("test timed out");
}

/// A commit must not record the preemptor under a name another uid holds: the request is
/// refused and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preemptor_whose_name_belongs_to_another_uid_is_refused() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        upsert_node(&mut client, node("n1", "1")).await;
        upsert_pod(&mut client, pod("low", 0, "1", "n1")).await;
        // "high" exists already as a pending pod with another uid.
        let mut other = pod("high", 0, "100m", "");
        other.uid = "someone-else".into();
        upsert_pod(&mut client, other).await;
        let before = list(&mut client).await;
        let err = client
            .preempt(pb::PreemptRequest {
                preemptor: Some(pb::preempt_request::Preemptor::Pod(pod(
                    "high", 10, "1", "",
                ))),
                dry_run: false,
                explain: false,
                pdb_mode: pb::PdbMode::Unspecified.into(),
            })
            .await
            .expect_err("name conflict");
        assert!(
            matches!(
                err.code(),
                Code::AlreadyExists | Code::InvalidArgument | Code::FailedPrecondition
            ),
            "{err:?}"
        );
        assert!(err.message().contains("default/high"), "{}", err.message());
        let after = list(&mut client).await;
        assert_eq!(before.revision, after.revision, "nothing was committed");
        // A dry run still answers.
        let dry = preempt(&mut client, pod("high", 10, "1", ""), true).await;
        assert_eq!(outcome(&dry), pb::Outcome::Preempt);
    })
    .await
    .expect("test timed out");
}

/// `UpdatePod` reads an upsert straight from its encoding: an upsert split in two parts
/// (prost merges them) is one pod. (What prost refuses: `grpc_bad_input`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upsert_in_two_parts_is_one_pod() {
    use prost::Message as _;
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        upsert_node(&mut client, node("n1", "4")).await;
        let request = |p: pb::Pod| pb::UpdatePodRequest {
            change: Some(PodChange::Upsert(p)),
        };
        // The name in the first part, the rest in the second.
        let whole = pod("split", 0, "1", "n1");
        let first = request(pb::Pod {
            name: whole.name.clone(),
            ..Default::default()
        })
        .encode_to_vec();
        let second = request(pb::Pod {
            name: String::new(),
            ..whole.clone()
        })
        .encode_to_vec();
        let merged = pb::UpdatePodRequest::decode(&[first.clone(), second.clone()].concat()[..])
            .expect("prost merges the parts");
        assert_eq!(merged, request(whole));
        let answer = raw_update_pod(&server, [first, second].concat())
            .await
            .expect("applied");
        assert!(answer.applied);
        // Only the split pod was stored: a 4-cpu preemptor must evict it.
        let decision = preempt(&mut client, pod("big", 100, "4", ""), true).await;
        assert_eq!(
            outcome(&decision),
            pb::Outcome::Preempt,
            "{}",
            decision.message
        );
        let victims: Vec<_> = decision.victims.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(victims, ["split"]);
    })
    .await
    .expect("test timed out");
}
