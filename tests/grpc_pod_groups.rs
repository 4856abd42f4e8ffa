//! PodGroups and Workloads over gRPC: typed and JSON upserts meaning the same, stale
//! updates, deletes, invalid groups refused with their field paths, `Sync` items of both
//! kinds with their counts, and pods naming a group through every pod input.

mod grpc_support;

use grpc_support::*;
use preemptd::server::pb;
use preemptd::server::pb::sync_request::Item;
use preemptd::server::pb::update_pod_group_request::Change as GroupChange;
use preemptd::server::pb::update_pod_request::Change as PodChange;
use preemptd::server::pb::update_workload_request::Change as WorkloadChange;
use tokio::time::timeout;
use tonic::Code;

fn gang(name: &str, resource_version: u64, min_count: i32) -> pb::PodGroup {
    pb::PodGroup {
        namespace: "ml".into(),
        name: name.into(),
        resource_version,
        scheduling_policy: Some(pb::PodGroupSchedulingPolicy {
            gang: Some(pb::GangSchedulingPolicy { min_count }),
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

fn workload(name: &str, resource_version: u64, templates: &[&str]) -> pb::Workload {
    pb::Workload {
        namespace: "ml".into(),
        name: name.into(),
        resource_version,
        pod_group_templates: templates
            .iter()
            .map(|t| pb::PodGroupTemplate {
                name: t.to_string(),
            })
            .collect(),
        ..Default::default()
    }
}

async fn update_group(
    client: &mut Client,
    change: GroupChange,
) -> Result<pb::UpdatePodGroupResponse, tonic::Status> {
    client
        .update_pod_group(pb::UpdatePodGroupRequest {
            change: Some(change),
        })
        .await
        .map(tonic::Response::into_inner)
}

async fn update_workload(
    client: &mut Client,
    change: WorkloadChange,
) -> Result<pb::UpdateWorkloadResponse, tonic::Status> {
    client
        .update_workload(pb::UpdateWorkloadRequest {
            change: Some(change),
        })
        .await
        .map(tonic::Response::into_inner)
}

fn by_name(name: &str) -> pb::ObjectRef {
    pb::ObjectRef {
        namespace: "ml".into(),
        name: name.into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_groups_and_workloads_are_upserted_versioned_and_deleted() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        let first = update_group(&mut client, GroupChange::Upsert(gang("train", 5, 4)))
            .await
            .expect("a gang");
        assert!(first.applied && first.stale.is_empty());
        assert_eq!((first.resource_version, first.epoch.as_str()), (5, server.epoch()));

        let stale = update_group(&mut client, GroupChange::Upsert(gang("train", 3, 2)))
            .await
            .expect("answered");
        assert!(!stale.applied);
        assert_eq!((stale.resource_version, stale.revision), (5, first.revision));
        assert_eq!(
            stale.stale,
            "resource_version 3 is older than resource_version 5 held by the cache"
        );

        // The same group as Kubernetes JSON, newer.
        let json = r#"{"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup",
            "metadata":{"name":"train","namespace":"ml","resourceVersion":"6"},
            "spec":{"schedulingPolicy":{"gang":{"minCount":4}},"disruptionMode":{"all":{}}}}"#;
        let from_json = update_group(&mut client, GroupChange::UpsertJson(json.into()))
            .await
            .expect("json");
        assert!(from_json.applied);
        assert_eq!(from_json.resource_version, 6);
        assert!(from_json.revision > first.revision);

        let deleted = update_group(&mut client, GroupChange::Delete(by_name("train")))
            .await
            .expect("deleted");
        assert!(deleted.applied);
        assert_eq!(deleted.resource_version, 0);
        let again = update_group(&mut client, GroupChange::Delete(by_name("train")))
            .await
            .expect_err("gone");
        assert_eq!(again.code(), Code::NotFound);

        let put = update_workload(
            &mut client,
            WorkloadChange::Upsert(workload("job", 2, &["leader", "workers"])),
        )
        .await
        .expect("a workload");
        assert!(put.applied);
        let older = update_workload(
            &mut client,
            WorkloadChange::Upsert(workload("job", 1, &["workers"])),
        )
        .await
        .expect("answered");
        assert!(!older.applied);
        assert_eq!(older.resource_version, 2);
        let yaml = "apiVersion: scheduling.k8s.io/v1beta1\nkind: Workload\nmetadata: {name: job, namespace: ml, resourceVersion: \"3\"}\nspec:\n  podGroupTemplates:\n  - name: workers\n";
        let from_yaml = update_workload(&mut client, WorkloadChange::UpsertJson(yaml.into()))
            .await
            .expect("yaml");
        assert!(from_yaml.applied);
        assert_eq!(from_yaml.resource_version, 3);
        let gone = update_workload(&mut client, WorkloadChange::Delete(by_name("job")))
            .await
            .expect("deleted");
        assert!(gone.applied);
        let missing = client
            .update_workload(pb::UpdateWorkloadRequest::default())
            .await
            .expect_err("no change");
        assert_eq!(missing.code(), Code::InvalidArgument);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_groups_and_workloads_are_refused_with_their_field_paths() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        let mut basic_all = gang("web", 1, 1);
        basic_all.scheduling_policy = Some(pb::PodGroupSchedulingPolicy {
            basic: Some(pb::BasicSchedulingPolicy {}),
            ..Default::default()
        });
        let refused = update_group(&mut client, GroupChange::Upsert(basic_all))
            .await
            .expect_err("all with basic");
        assert_eq!(refused.code(), Code::InvalidArgument);
        assert!(
            refused.message().contains("upsert.spec.disruptionMode")
                && refused.message().contains("not supported with the basic scheduling policy"),
            "{}",
            refused.message()
        );
        let zero = update_group(&mut client, GroupChange::Upsert(gang("train", 1, 0)))
            .await
            .expect_err("minCount 0");
        assert_eq!(zero.code(), Code::InvalidArgument);
        assert!(
            zero.message()
                .contains("upsert.spec.schedulingPolicy.gang.minCount"),
            "{}",
            zero.message()
        );
        let json = update_group(
            &mut client,
            GroupChange::UpsertJson(
                r#"{"kind":"PodGroup","metadata":{"name":"x"},"spec":{"schedulingPolicy":{"gang":{"minCount":2}},"preemptionPolicy":"Sometimes"}}"#.into(),
            ),
        )
        .await
        .expect_err("bad policy");
        assert_eq!(json.code(), Code::InvalidArgument);
        assert!(
            json.message().contains("upsert_json: spec.preemptionPolicy"),
            "{}",
            json.message()
        );
        let twice = update_workload(
            &mut client,
            WorkloadChange::Upsert(workload("job", 1, &["a", "a"])),
        )
        .await
        .expect_err("duplicate template");
        assert_eq!(twice.code(), Code::InvalidArgument);
        assert!(
            twice.message().contains("upsert.spec.podGroupTemplates[1].name"),
            "{}",
            twice.message()
        );
    })
    .await
    .expect("test timed out");
}

fn group_item(change: GroupChange) -> pb::SyncRequest {
    pb::SyncRequest {
        item: Some(Item::PodGroup(pb::UpdatePodGroupRequest {
            change: Some(change),
        })),
    }
}

fn workload_item(change: WorkloadChange) -> pb::SyncRequest {
    pb::SyncRequest {
        item: Some(Item::Workload(pb::UpdateWorkloadRequest {
            change: Some(change),
        })),
    }
}

fn member(name: &str, group: &str) -> pb::Pod {
    let mut member = pod(name, 10, "1", "n1");
    member.namespace = "ml".into();
    member.resource_version = 2;
    member.scheduling_group = Some(pb::PodSchedulingGroup {
        pod_group_name: group.into(),
    });
    member
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_carries_groups_workloads_and_members_with_their_counts() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        let items = vec![
            sync_pod_item(member("w-0", "train")),
            workload_item(WorkloadChange::Upsert(workload("job", 1, &["workers"]))),
            group_item(GroupChange::Upsert(gang("train", 4, 2))),
            group_item(GroupChange::Upsert(gang("train", 3, 2))),
            group_item(GroupChange::Upsert(gang("bad", 1, 0))),
            group_item(GroupChange::Delete(by_name("missing"))),
            workload_item(WorkloadChange::Delete(by_name("job"))),
            sync_pod_item(member("w-1", "train")),
        ];
        let response = client
            .sync(tokio_stream::iter(items))
            .await
            .expect("sync")
            .into_inner();
        let applied = response.applied.expect("applied counts");
        assert_eq!(
            (applied.pods, applied.pod_groups, applied.workloads),
            (2, 1, 2)
        );
        let stale = response.stale.expect("stale counts");
        assert_eq!((stale.pod_groups, stale.workloads), (1, 0));
        assert_eq!(response.rejected, 2);
        let rejections: Vec<_> = response
            .rejections
            .iter()
            .map(|r| (r.index, r.code.as_str(), r.field.as_str()))
            .collect();
        assert_eq!(
            rejections,
            [
                (
                    4,
                    "INVALID_ARGUMENT",
                    "pod_group.upsert.spec.schedulingPolicy.gang.minCount"
                ),
                (5, "NOT_FOUND", "pod_group"),
            ]
        );
        // The members were held as sent: an older version of either is stale.
        for name in ["w-0", "w-1"] {
            let mut older = member(name, "train");
            older.resource_version = 1;
            assert!(!upsert_pod(&mut client, older).await.applied, "{name}");
        }
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_naming_a_group_are_taken_from_typed_and_json_pods_alike() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        upsert_node(&mut client, node("n1", "4")).await;
        // Typed (the unary fast path reads it from the encoding).
        let typed = upsert_pod(&mut client, member("w-0", "train")).await;
        assert!(typed.applied);
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-1","namespace":"ml","resourceVersion":"2"},
            "spec":{"nodeName":"n1","schedulingGroup":{"podGroupName":"train"},
                    "containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}"#;
        let from_json = client
            .update_pod(pb::UpdatePodRequest {
                change: Some(PodChange::UpsertJson(json.into())),
            })
            .await
            .expect("json pod")
            .into_inner();
        assert!(from_json.applied);
        // Both members take a cpu each of n1's four: a 3-cpu pod does not fit.
        let fits = preempt(&mut client, pod("p", 1, "2", ""), true).await;
        assert_eq!(outcome(&fits), pb::Outcome::Fits, "{}", fits.message);
        let crowded = preempt(&mut client, pod("q", 1, "3", ""), true).await;
        assert_ne!(outcome(&crowded), pb::Outcome::Fits, "{}", crowded.message);
    })
    .await
    .expect("test timed out");
}
