//! PriorityClasses and Namespaces over gRPC (push mode): a pod's priority is what the
//! Priority admission plugin would set, namespaceSelector matches the real Namespace
//! labels, and Preempt can name a held pod by reference.

mod grpc_support;

use grpc_support::*;
use preemptd::server::pb;
use preemptd::server::pb::preempt_request::Preemptor;
use preemptd::server::pb::update_namespace_request::Change as NamespaceChange;
use preemptd::server::pb::update_priority_class_request::Change as ClassChange;
use tokio::time::timeout;
use tonic::Code;

fn class(name: &str, value: i32, global_default: bool, policy: &str) -> pb::PriorityClass {
    pb::PriorityClass {
        name: name.into(),
        value,
        global_default,
        preemption_policy: policy.into(),
        ..Default::default()
    }
}

async fn upsert_class(client: &mut Client, class: pb::PriorityClass) {
    let response = client
        .update_priority_class(pb::UpdatePriorityClassRequest {
            change: Some(ClassChange::Upsert(class)),
        })
        .await
        .expect("class")
        .into_inner();
    assert!(response.applied);
}

/// A preemptor that names `class` and sets no priority of its own.
fn classed(name: &str, class: &str, cpu: &str) -> pb::Pod {
    let mut p = pod(name, 0, cpu, "");
    p.priority = None;
    p.priority_class_name = class.into();
    p
}

/// One 2-cpu node running a 1.5-cpu pod of priority 100.
async fn one_full_node(client: &mut Client) {
    upsert_node(client, node("n1", "2")).await;
    upsert_pod(client, pod("low", 100, "1500m", "n1")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preemptor_takes_its_priority_and_policy_from_its_class() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        one_full_node(&mut client).await;
        upsert_class(&mut client, class("high", 1000, false, "")).await;
        upsert_class(&mut client, class("lower", 50, false, "")).await;
        upsert_class(&mut client, class("polite", 1000, false, "Never")).await;

        let high = preempt(&mut client, classed("a", "high", "1"), true).await;
        assert_eq!(outcome(&high), pb::Outcome::Preempt, "{}", high.message);
        assert_eq!(names(&high.victims), ["default/low"]);
        // Below the running pod: nothing to preempt.
        let lower = preempt(&mut client, classed("b", "lower", "1"), true).await;
        assert_eq!(
            outcome(&lower),
            pb::Outcome::NoCandidate,
            "{}",
            lower.message
        );
        // The class's policy applies when the pod sets none.
        let polite = preempt(&mut client, classed("c", "polite", "1"), true).await;
        assert_eq!(
            outcome(&polite),
            pb::Outcome::NotEligible,
            "{}",
            polite.message
        );
        // A pod's own priority wins over its class's value.
        let mut own = classed("d", "lower", "1");
        own.priority = Some(5000);
        let own = preempt(&mut client, own, true).await;
        assert_eq!(outcome(&own), pb::Outcome::Preempt, "{}", own.message);
        // The built-in classes always exist.
        let critical = preempt(&mut client, classed("e", "system-node-critical", "1"), true).await;
        assert_eq!(outcome(&critical), pb::Outcome::Preempt);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_global_default_is_the_lowest_marked_class_and_unknown_classes_are_refused() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        one_full_node(&mut client).await;
        // Without a class: priority 0, below the running pod.
        let plain = preempt(&mut client, classed("a", "", "1"), true).await;
        assert_eq!(outcome(&plain), pb::Outcome::NoCandidate);
        upsert_class(&mut client, class("default-high", 2000, true, "")).await;
        upsert_class(&mut client, class("default-mid", 500, true, "")).await;
        let defaulted = preempt(&mut client, classed("b", "", "1"), true).await;
        assert_eq!(outcome(&defaulted), pb::Outcome::Preempt, "{}", defaulted.message);
        // The lowest of the marked (500) is used: a class of 400 on the running pod's
        // side would still lose to it, one of 600 would not be preempted.
        upsert_pod(&mut client, pod("low", 600, "1500m", "n1")).await;
        let defaulted = preempt(&mut client, classed("c", "", "1"), true).await;
        assert_eq!(outcome(&defaulted), pb::Outcome::NoCandidate, "{}", defaulted.message);

        let unknown = client
            .preempt(pb::PreemptRequest {
                preemptor: Some(Preemptor::Pod(classed("x", "missing", "1"))),
                dry_run: true,
                explain: false,
                pdb_mode: pb::PdbMode::Unspecified.into(),
            })
            .await
            .expect_err("unknown class");
        assert_eq!(unknown.code(), Code::InvalidArgument);
        assert_eq!(
            unknown.message(),
            "pod.spec.priorityClassName: no PriorityClass with name \"missing\" was found"
        );
        let json = r#"{"kind":"Pod","metadata":{"name":"j"},"spec":{"priorityClassName":"missing","containers":[{"name":"c"}]}}"#;
        let unknown = client
            .preempt(pb::PreemptRequest {
                preemptor: Some(Preemptor::PodJson(json.into())),
                dry_run: true,
                explain: false,
                pdb_mode: pb::PdbMode::Unspecified.into(),
            })
            .await
            .expect_err("unknown class");
        assert_eq!(
            unknown.message(),
            "pod_json: spec.priorityClassName: no PriorityClass with name \"missing\" was found"
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_pods_are_admitted_on_arrival_and_keep_their_priority_after() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        upsert_node(&mut client, node("n1", "2")).await;
        upsert_class(&mut client, class("batch", 100, false, "")).await;
        // Admitted from its class (100), then the class changes: the pod keeps 100.
        let mut held = classed("held", "batch", "1500m");
        held.node_name = "n1".into();
        upsert_pod(&mut client, held).await;
        upsert_class(&mut client, class("batch", 10_000, false, "")).await;
        let preemptor = preempt(&mut client, pod("p", 500, "1", ""), true).await;
        assert_eq!(
            outcome(&preemptor),
            pb::Outcome::Preempt,
            "{}",
            preemptor.message
        );
        assert_eq!(names(&preemptor.victims), ["default/held"]);

        // A held pod naming no class that exists is kept, with priority 0.
        let mut orphan = classed("orphan", "gone", "1500m");
        orphan.node_name = "n1".into();
        delete_pod(&mut client, "held").await;
        upsert_pod(&mut client, orphan).await;
        let low = preempt(&mut client, pod("q", 1, "1", ""), true).await;
        assert_eq!(outcome(&low), pb::Outcome::Preempt, "{}", low.message);
        assert_eq!(names(&low.victims), ["default/orphan"]);

        // Deleting a class: NOT_FOUND the second time.
        let delete = || pb::UpdatePriorityClassRequest {
            change: Some(ClassChange::Delete(pb::ObjectRef {
                name: "batch".into(),
                ..Default::default()
            })),
        };
        client
            .update_priority_class(delete())
            .await
            .expect("deleted");
        let again = client
            .update_priority_class(delete())
            .await
            .expect_err("gone");
        assert_eq!(again.code(), Code::NotFound);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_selectors_match_the_namespace_labels() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        upsert_node(&mut client, node("n1", "4")).await;
        upsert_node(&mut client, node("n2", "4")).await;
        let mut db = pod("db", 100, "1", "n2");
        db.namespace = "team-a".into();
        db.labels = map(&[("app", "db")]);
        upsert_pod(&mut client, db).await;
        let mut affine = pod("affine", 1000, "100m", "");
        affine.affinity = Some(pb::Affinity {
            pod_affinity: Some(pb::PodAffinity {
                required_during_scheduling_ignored_during_execution: vec![pb::PodAffinityTerm {
                    label_selector: Some(pb::LabelSelector {
                        match_labels: map(&[("app", "db")]),
                        ..Default::default()
                    }),
                    namespace_selector: Some(pb::LabelSelector {
                        match_labels: map(&[("team", "a")]),
                        ..Default::default()
                    }),
                    topology_key: "kubernetes.io/hostname".into(),
                    namespaces: Vec::new(),
                }],
                ..Default::default()
            }),
            ..Default::default()
        });
        // No Namespace object: team-a has only its name label, so nothing matches.
        let before = preempt(&mut client, affine.clone(), true).await;
        assert_ne!(outcome(&before), pb::Outcome::Fits, "{before:?}");
        // Labelled team=a as JSON, the selector matches db's namespace: only n2 qualifies.
        let labelled = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a","labels":{"team":"a"}}}"#;
        client
            .update_namespace(pb::UpdateNamespaceRequest {
                change: Some(NamespaceChange::UpsertJson(labelled.into())),
            })
            .await
            .expect("namespace");
        let after = preempt(&mut client, affine.clone(), true).await;
        assert_eq!(outcome(&after), pb::Outcome::Fits, "{}", after.message);
        assert_eq!(after.feasible_nodes, ["n2"]);
        // Relabelled through Sync (typed), it no longer matches.
        let relabel = pb::SyncRequest {
            item: Some(pb::sync_request::Item::Namespace(pb::UpdateNamespaceRequest {
                change: Some(NamespaceChange::Upsert(pb::Namespace {
                    name: "team-a".into(),
                    labels: map(&[("team", "b")]),
                    ..Default::default()
                })),
            })),
        };
        let synced = client
            .sync(tokio_stream::iter(vec![relabel]))
            .await
            .expect("sync")
            .into_inner();
        assert_eq!(synced.applied.map(|c| c.namespaces), Some(1));
        let relabelled = preempt(&mut client, affine, true).await;
        assert_ne!(outcome(&relabelled), pb::Outcome::Fits);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempt_by_reference_decides_for_the_held_pod() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        one_full_node(&mut client).await;
        upsert_pod(&mut client, pod("pending", 1000, "1", "")).await;
        let by_ref = |name: &str, uid: &str| pb::PreemptRequest {
            preemptor: Some(Preemptor::PodRef(pb::PodRef {
                namespace: String::new(),
                name: name.into(),
                uid: uid.into(),
            })),
            dry_run: true,
            explain: false,
            pdb_mode: pb::PdbMode::Unspecified.into(),
        };
        let answer = client
            .preempt(by_ref("pending", ""))
            .await
            .expect("held")
            .into_inner();
        assert_eq!(outcome(&answer), pb::Outcome::Preempt);
        assert_eq!(names(&answer.victims), ["default/low"]);
        for (name, uid) in [("absent", ""), ("pending", "another-uid")] {
            let missing = client
                .preempt(by_ref(name, uid))
                .await
                .expect_err("not held");
            assert_eq!(missing.code(), Code::NotFound, "{name} {uid}");
        }
        let empty = client.preempt(by_ref("", "")).await.expect_err("no name");
        assert_eq!(empty.code(), Code::InvalidArgument);
        assert_eq!(empty.message(), "pod_ref.name: must not be empty");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_carries_classes_and_counts_them() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        let item = |change| pb::SyncRequest {
            item: Some(pb::sync_request::Item::PriorityClass(
                pb::UpdatePriorityClassRequest {
                    change: Some(change),
                },
            )),
        };
        let items = vec![
            item(ClassChange::Upsert(class("high", 1000, false, ""))),
            item(ClassChange::UpsertJson(
                r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"low"},"value":1}"#.into(),
            )),
            item(ClassChange::Upsert(class("", 1, false, ""))),
            item(ClassChange::Upsert(class("bad", 1, false, "Sometimes"))),
        ];
        let synced = client
            .sync(tokio_stream::iter(items))
            .await
            .expect("sync")
            .into_inner();
        assert_eq!(synced.applied.map(|c| c.priority_classes), Some(2));
        let fields: Vec<_> = synced.rejections.iter().map(|r| r.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "priority_class.upsert.metadata.name",
                "priority_class.upsert.preemptionPolicy"
            ]
        );
        one_full_node(&mut client).await;
        let high = preempt(&mut client, classed("a", "high", "1"), true).await;
        assert_eq!(outcome(&high), pb::Outcome::Preempt);
    })
    .await
    .expect("test timed out");
}
