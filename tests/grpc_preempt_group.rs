//! `PreemptGroup` over gRPC on loopback: refused without GenericWorkload, a dry run that
//! changes nothing, a group held or sent with the request (typed or JSON), and a commit whose events WatchNominations shows as one batch. The
//! worked example of docs/gangs.md: a training gang of three whole nodes preempting two
//! inference gangs in disruption mode `all`.

mod grpc_support;

use std::time::Duration;

use grpc_support::*;
use preemptd::engine::{FeatureGates, KubernetesVersion};
use preemptd::model::{DisruptionMode, PodGroup, SchedulingPolicy};
use preemptd::server::RunningServer;
use preemptd::server::pb;
use preemptd::server::pb::NominationEventType as Ev;
use tokio::time::timeout;
use tonic::Code;

async fn start_gang_server() -> (RunningServer, Client) {
    let mut config = loopback_config();
    config.feature_gates =
        FeatureGates::parse(KubernetesVersion::V1_37, "GenericWorkload=true").expect("gates");
    start_with(config).await
}

fn pod_group(name: &str, priority: i32, mode: DisruptionMode, min_count: i32) -> PodGroup {
    PodGroup {
        namespace: "default".into(),
        name: name.into(),
        uid: format!("uid-{name}").into(),
        resource_version: 0,
        creation_time: None,
        policy: SchedulingPolicy::Gang { min_count },
        disruption_mode: mode,
        priority_class_name: None,
        priority,
        priority_unset: false,
        preemption_policy: None,
        parent: None,
        workload: None,
    }
}

/// Makes the held pod `name` a member of `group` (the typed Pod has no schedulingGroup
/// field yet: the cache is told directly).
fn join(server: &RunningServer, name: &str, group: &str) {
    let cache = &server.app().cache;
    let mut pod = (*cache.get_pod_by_name("default", name).expect("held")).clone();
    pod.details_mut().scheduling_group = Some(group.into());
    cache.upsert_pod(pod).expect("member upserts");
}

/// n1..n4 (8 cpu each); inference gangs `inf-a` (a-0 on n1, a-1 on n2) and `inf-b`
/// (b-0 on n3, b-1 on n4), priority 100, disruption mode all; the training group
/// (priority 1000, all three members needed).
async fn inference_cluster(server: &RunningServer, client: &mut Client) {
    for n in ["n1", "n2", "n3", "n4"] {
        upsert_node(client, node(n, "8")).await;
    }
    for (name, on, group) in [
        ("a-0", "n1", "inf-a"),
        ("a-1", "n2", "inf-a"),
        ("b-0", "n3", "inf-b"),
        ("b-1", "n4", "inf-b"),
    ] {
        upsert_pod(client, pod(name, 100, "8", on)).await;
        join(server, name, group);
    }
    let cache = &server.app().cache;
    cache.upsert_pod_group(pod_group("inf-a", 100, DisruptionMode::All, 2));
    cache.upsert_pod_group(pod_group("inf-b", 100, DisruptionMode::All, 2));
    cache.upsert_pod_group(pod_group("training", 1000, DisruptionMode::All, 3));
}

fn request(dry_run: bool) -> pb::PreemptGroupRequest {
    pb::PreemptGroupRequest {
        group: Some(pb::preempt_group_request::Group::GroupRef(
            pb::PodGroupRef {
                namespace: "default".into(),
                name: "training".into(),
                uid: String::new(),
            },
        )),
        members: ["t-2", "t-0", "t-1"]
            .into_iter()
            .map(|name| pod(name, 1000, "8", ""))
            .collect(),
        dry_run,
        ..Default::default()
    }
}

fn nominations(response: &pb::PreemptGroupResponse) -> Vec<(String, String)> {
    response
        .nominations
        .iter()
        .map(|n| {
            (
                n.pod.as_ref().map(|p| p.name.clone()).unwrap_or_default(),
                n.node_name.clone(),
            )
        })
        .collect()
}

fn expect_training_answer(response: &pb::PreemptGroupResponse) {
    assert_eq!(
        response.outcome(),
        pb::Outcome::Preempt,
        "{}",
        response.message
    );
    assert_eq!(
        names(&response.victims),
        vec!["default/a-0", "default/a-1", "default/b-0", "default/b-1"]
    );
    assert_eq!(
        nominations(response),
        vec![
            ("t-0".to_string(), "n1".to_string()),
            ("t-1".to_string(), "n2".to_string()),
            ("t-2".to_string(), "n3".to_string()),
        ]
    );
    assert_eq!(response.pod_group_disruptions, 2);
    assert_eq!(response.kubernetes_version, "1.37");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempt_group_is_refused_without_generic_workload() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        let status = client
            .preempt_group(request(true))
            .await
            .expect_err("the gate is off");
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert!(
            status
                .message()
                .contains("--feature-gates GenericWorkload=true")
                && status.message().contains("--kubernetes-version 1.37"),
            "{}",
            status.message()
        );
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_answers_and_changes_nothing() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_gang_server().await;
        inference_cluster(&server, &mut client).await;
        let before = list(&mut client).await;
        let cache_revision = server.app().cache.revision();

        let first = client
            .preempt_group(request(true))
            .await
            .expect("dry run")
            .into_inner();
        expect_training_answer(&first);
        assert_eq!(first.nominations_revision, before.revision);

        let after = list(&mut client).await;
        assert_eq!(after.revision, before.revision);
        assert!(after.nominations.is_empty());
        assert_eq!(server.app().cache.revision(), cache_revision);
        for victim in ["a-0", "a-1", "b-0", "b-1"] {
            let held = server
                .app()
                .cache
                .get_pod_by_name("default", victim)
                .expect("held");
            assert!(!held.terminating, "{victim} is untouched");
        }
        // Deciding again gives the same answer: nothing was recorded.
        let again = client
            .preempt_group(request(true))
            .await
            .expect("dry run")
            .into_inner();
        expect_training_answer(&again);
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_records_every_member_s_nomination_in_one_batch() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_gang_server().await;
        inference_cluster(&server, &mut client).await;
        let listed = list(&mut client).await;
        let mut watch = client
            .watch_nominations(pb::WatchNominationsRequest {
                after_revision: listed.revision,
            })
            .await
            .expect("watch")
            .into_inner();

        let response = client
            .preempt_group(request(false))
            .await
            .expect("commit")
            .into_inner();
        expect_training_answer(&response);

        // Four victims marked and three nominations: one batch ending at the response's
        // nominations revision.
        let mut events = Vec::new();
        while events.len() < 7 {
            let event = timeout(Duration::from_secs(10), watch.message())
                .await
                .expect("watch event timed out")
                .expect("watch failed")
                .expect("watch ended");
            events.push(event);
        }
        let batches: Vec<u64> = events.iter().map(|e| e.batch_revision).collect();
        assert_eq!(batches, vec![response.nominations_revision; 7]);
        assert_eq!(events[6].revision, response.nominations_revision);
        let kinds = |kind: Ev| {
            let mut pods: Vec<(String, String)> = events
                .iter()
                .filter(|e| e.r#type() == kind)
                .map(|e| {
                    (
                        e.pod.as_ref().map(|p| p.name.clone()).unwrap_or_default(),
                        e.node.clone(),
                    )
                })
                .collect();
            pods.sort();
            pods
        };
        assert_eq!(
            kinds(Ev::VictimMarked),
            vec![
                ("a-0".to_string(), "n1".to_string()),
                ("a-1".to_string(), "n2".to_string()),
                ("b-0".to_string(), "n3".to_string()),
                ("b-1".to_string(), "n4".to_string()),
            ]
        );
        assert_eq!(kinds(Ev::Nominated), nominations(&response));

        let now = list(&mut client).await;
        assert_eq!(now.revision, response.nominations_revision);
        let mut held: Vec<(String, String)> = now
            .nominations
            .iter()
            .map(|n| {
                (
                    n.pod.as_ref().map(|p| p.name.clone()).unwrap_or_default(),
                    n.node.clone(),
                )
            })
            .collect();
        held.sort();
        assert_eq!(held, nominations(&response));

        // The preemption is under way: asked again, the members keep their nominations.
        let again = client
            .preempt_group(request(true))
            .await
            .expect("dry run")
            .into_inner();
        assert_eq!(again.outcome(), pb::Outcome::Preempt, "{}", again.message);
        assert!(again.victims.is_empty(), "nothing more is evicted");
        assert_eq!(nominations(&again), nominations(&response));
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_members_are_found_by_the_group_they_name() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_gang_server().await;
        inference_cluster(&server, &mut client).await;
        for name in ["t-0", "t-1", "t-2"] {
            upsert_pod(&mut client, pod(name, 1000, "8", "")).await;
            join(&server, name, "training");
        }
        let mut by_reference = request(true);
        by_reference.members.clear();
        let response = client
            .preempt_group(by_reference)
            .await
            .expect("dry run")
            .into_inner();
        expect_training_answer(&response);

        let mut missing = request(true);
        missing.group = Some(pb::preempt_group_request::Group::GroupRef(
            pb::PodGroupRef {
                namespace: "default".into(),
                name: "nope".into(),
                uid: String::new(),
            },
        ));
        let status = client.preempt_group(missing).await.expect_err("not held");
        assert_eq!(status.code(), Code::NotFound);
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_pod_preempt_lists_an_all_victim_s_pods_on_other_nodes() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_gang_server().await;
        inference_cluster(&server, &mut client).await;
        let response = preempt(&mut client, pod("urgent", 1000, "8", ""), true).await;
        assert_eq!(
            outcome(&response),
            pb::Outcome::Preempt,
            "{}",
            response.message
        );
        let victims = names(&response.victims);
        let gang = if response.nominated_node_name == "n1" || response.nominated_node_name == "n2" {
            ["default/a-0", "default/a-1"]
        } else {
            ["default/b-0", "default/b-1"]
        };
        assert_eq!(
            victims,
            gang.to_vec(),
            "node {}",
            response.nominated_node_name
        );
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_candidate_clears_the_members_own_nominations() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_gang_server().await;
        upsert_node(&mut client, node("n1", "8")).await;
        upsert_pod(&mut client, pod("high", 5000, "8", "n1")).await;
        let mut member = pod("t-0", 1000, "8", "");
        member.nominated_node_name = "n1".into();
        upsert_pod(&mut client, member).await;
        join(&server, "t-0", "training");
        server
            .app()
            .cache
            .upsert_pod_group(pod_group("training", 1000, DisruptionMode::All, 1));
        let listed = list(&mut client).await;
        assert_eq!(listed.nominations.len(), 1);

        let mut by_reference = request(false);
        by_reference.members.clear();
        let response = client
            .preempt_group(by_reference)
            .await
            .expect("decides")
            .into_inner();
        assert_eq!(
            response.outcome(),
            pb::Outcome::NoCandidate,
            "{}",
            response.message
        );
        let now = list(&mut client).await;
        assert!(now.nominations.is_empty(), "{:?}", now.nominations);
        assert_eq!(now.revision, response.nominations_revision);
        assert_eq!(now.revision, listed.revision + 1);
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}

/// The training group as the request sends it: typed, its priority from class `training`.
fn inline_training_group() -> pb::PodGroup {
    pb::PodGroup {
        namespace: "default".into(),
        name: "training".into(),
        scheduling_policy: Some(pb::PodGroupSchedulingPolicy {
            gang: Some(pb::GangSchedulingPolicy { min_count: 3 }),
            ..Default::default()
        }),
        disruption_mode: Some(pb::DisruptionMode {
            all: Some(pb::AllDisruptionMode {}),
            ..Default::default()
        }),
        priority_class_name: "training".into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_group_typed_or_as_json_is_answered_as_the_held_one() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start_gang_server().await;
        inference_cluster(&server, &mut client).await;
        server
            .app()
            .cache
            .upsert_priority_class(preemptd::model::priority::PriorityClass {
                name: "training".into(),
                uid: "uid-training".into(),
                resource_version: 1,
                value: 1000,
                global_default: false,
                preemption_policy: None,
            });

        let mut typed = request(true);
        typed.group = Some(pb::preempt_group_request::Group::PodGroup(
            inline_training_group(),
        ));
        let response = client
            .preempt_group(typed)
            .await
            .expect("typed inline group")
            .into_inner();
        expect_training_answer(&response);

        let json = r#"{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"namespace": "default", "name": "training"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}},
                     "disruptionMode": {"all": {}}, "priorityClassName": "training"}}"#;
        let mut as_json = request(true);
        as_json.group = Some(pb::preempt_group_request::Group::PodGroupJson(
            json.to_string(),
        ));
        let response = client
            .preempt_group(as_json)
            .await
            .expect("inline group as JSON")
            .into_inner();
        expect_training_answer(&response);

        // The held `training` needs 3 members; the one sent needs 4, which 3 cannot meet.
        let mut larger = request(true);
        let mut group = inline_training_group();
        group.scheduling_policy = Some(pb::PodGroupSchedulingPolicy {
            gang: Some(pb::GangSchedulingPolicy { min_count: 4 }),
            ..Default::default()
        });
        larger.group = Some(pb::preempt_group_request::Group::PodGroup(group));
        let response = client
            .preempt_group(larger)
            .await
            .expect("the group sent wins over the held one")
            .into_inner();
        assert_eq!(
            response.outcome(),
            pb::Outcome::NoCandidate,
            "{}",
            response.message
        );

        let mut unknown_class = request(true);
        let mut group = inline_training_group();
        group.priority_class_name = "nope".into();
        unknown_class.group = Some(pb::preempt_group_request::Group::PodGroup(group));
        let status = client
            .preempt_group(unknown_class)
            .await
            .expect_err("unknown class");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status.message().contains("pod_group.priority_class_name"),
            "{}",
            status.message()
        );

        let mut no_group = request(true);
        no_group.group = None;
        let status = client.preempt_group(no_group).await.expect_err("no group");
        assert_eq!(status.code(), Code::InvalidArgument);
        server.shutdown().await.expect("shutdown");
    })
    .await
    .expect("test timed out");
}
