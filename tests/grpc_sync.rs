//! `Sync` over gRPC: per-kind counts of applied, stale and rejected items, rejections with
//! index, code, field path and message, a bad item in the middle not stopping the rest,
//! and a bulk load meaning exactly what the same unary updates mean, nomination events included.

mod grpc_support;

use grpc_support::*;
use preemptd::generate::{self, ClusterSpec};
use preemptd::server::pb::sync_request::Item;
use preemptd::server::pb::update_node_request::Change as NodeChange;
use preemptd::server::pb::update_pod_disruption_budget_request::Change as PdbChange;
use preemptd::server::pb::update_pod_request::Change as PodChange;
use preemptd::server::{messages, pb};
use tokio::time::timeout;

fn node_item(n: pb::Node) -> pb::SyncRequest {
    pb::SyncRequest {
        item: Some(Item::Node(pb::UpdateNodeRequest {
            change: Some(NodeChange::Upsert(n)),
        })),
    }
}

fn pod_item(change: PodChange) -> pb::SyncRequest {
    pb::SyncRequest {
        item: Some(Item::Pod(pb::UpdatePodRequest {
            change: Some(change),
        })),
    }
}

fn pdb_item(b: pb::PodDisruptionBudget) -> pb::SyncRequest {
    pb::SyncRequest {
        item: Some(Item::Pdb(pb::UpdatePodDisruptionBudgetRequest {
            change: Some(PdbChange::Upsert(b)),
        })),
    }
}

async fn sync(client: &mut Client, items: Vec<pb::SyncRequest>) -> pb::SyncResponse {
    client
        .sync(tokio_stream::iter(items))
        .await
        .expect("sync")
        .into_inner()
}

fn counts(nodes: u64, pods: u64, pdbs: u64) -> Option<pb::SyncCounts> {
    Some(pb::SyncCounts {
        nodes,
        pods,
        pdbs,
        ..Default::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_applied_stale_and_rejected_items_with_reasons() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        let mut newer = pod("p1", 0, "1", "n1");
        newer.resource_version = 7;
        let mut older = newer.clone();
        older.resource_version = 3;
        let mut bad_quantity = pod("bad", 0, "1", "n1");
        bad_quantity.containers[0]
            .requests
            .insert("cpu".into(), "lots".into());
        let items = vec![
            node_item(node("n1", "4")),
            pod_item(PodChange::Upsert(newer)),
            // Rejected in the middle: the items after it still apply.
            pod_item(PodChange::Upsert(bad_quantity)),
            pod_item(PodChange::Upsert(older)),
            pb::SyncRequest { item: None },
            pod_item(PodChange::UpsertJson("{not json".into())),
            pod_item(PodChange::Delete(pb::ObjectRef {
                namespace: "default".into(),
                name: "ghost".into(),
                uid: None,
            })),
            pdb_item(pb::PodDisruptionBudget {
                name: "budget".into(),
                disruptions_allowed: 1,
                ..Default::default()
            }),
            pod_item(PodChange::Upsert(pod("p2", 0, "1", "n1"))),
            node_item(node("n2", "8")),
        ];
        let response = sync(&mut client, items).await;
        assert_eq!(response.applied, counts(2, 2, 1));
        assert_eq!(response.stale, counts(0, 1, 0));
        assert_eq!(response.rejected, 4);
        assert_eq!(response.epoch, server.epoch());
        let summary: Vec<(u64, &str, &str)> = response
            .rejections
            .iter()
            .map(|r| (r.index, r.code.as_str(), r.field.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    2,
                    "INVALID_ARGUMENT",
                    "pod.upsert.spec.containers[0].resources.requests[cpu]"
                ),
                (4, "INVALID_ARGUMENT", "item"),
                (5, "INVALID_ARGUMENT", "pod.upsert_json"),
                (6, "NOT_FOUND", "pod"),
            ]
        );
        assert_eq!(response.rejections[0].message, "invalid quantity \"lots\"");
        assert_eq!(
            response.rejections[3].message,
            "pod default/ghost not found"
        );
        for r in &response.rejections {
            assert!(
                r.message.chars().next().is_some_and(|c| !c.is_uppercase()),
                "{r:?}"
            );
        }

        // The cache holds what was applied: p1 at rv 7 and p2, on n1; n2 exists.
        let mut big = pod("big", 1000, "4", "");
        big.uid = "uid-big".into();
        let decision = preempt(&mut client, big, true).await;
        assert_eq!(outcome(&decision), pb::Outcome::Fits);
        assert_eq!(decision.feasible_nodes, ["n2"]);
        assert_eq!(decision.revision, response.revision);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_rejections_are_counted_and_the_first_hundred_listed() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        let items: Vec<pb::SyncRequest> = (0..250)
            .map(|_| pod_item(PodChange::Upsert(pb::Pod::default())))
            .chain([node_item(node("n1", "4"))])
            .collect();
        let response = sync(&mut client, items).await;
        assert_eq!(response.rejected, 250);
        assert_eq!(response.rejections.len(), 100);
        assert_eq!(response.rejections[99].index, 99);
        assert_eq!(response.rejections[0].field, "pod.upsert.metadata.name");
        assert_eq!(response.applied, counts(1, 0, 0));
    })
    .await
    .expect("test timed out");
}

/// A generated cluster (bound, terminating and nominated pods, PDBs, taints) loaded via
/// `Sync` on one server and via unary updates on another gives the same nominations and
/// the same decisions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_load_equals_unary_updates() {
    timeout(TEST_TIMEOUT, async {
        let cluster = generate::generate(&ClusterSpec {
            nodes: 60,
            pods_per_node: 8,
            seed: 11,
        });
        let (_bulk_server, mut bulk) = start().await;
        let (_unary_server, mut unary) = start().await;

        let mut items = Vec::new();
        for n in &cluster.nodes {
            items.push(node_item(messages::node_message(n)));
            upsert_node(&mut unary, messages::node_message(n)).await;
        }
        for b in &cluster.pdbs {
            items.push(pdb_item(messages::pdb_message(b)));
            unary
                .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest {
                    change: Some(PdbChange::Upsert(messages::pdb_message(b))),
                })
                .await
                .expect("update pdb");
        }
        for p in &cluster.pods {
            items.push(pod_item(PodChange::Upsert(messages::pod_message(p))));
            upsert_pod(&mut unary, messages::pod_message(p)).await;
        }
        let total = items.len() as u64;
        let response = sync(&mut bulk, items).await;
        let applied = response.applied.expect("counts");
        assert_eq!(applied.nodes + applied.pods + applied.pdbs, total);
        assert_eq!(response.rejected, 0);

        let (bulk_list, unary_list) = (list(&mut bulk).await, list(&mut unary).await);
        assert!(!bulk_list.nominations.is_empty());
        assert_eq!(bulk_list.nominations, unary_list.nominations);
        assert_eq!(bulk_list.revision, unary_list.revision);

        for i in 0..5 {
            for pod in [
                generate::resource_preemptor(i),
                generate::affinity_preemptor(i),
            ] {
                let a = preempt(&mut bulk, messages::pod_message(&pod), true).await;
                let b = preempt(&mut unary, messages::pod_message(&pod), true).await;
                assert_eq!(outcome(&a), outcome(&b));
                assert_eq!(a.nominated_node_name, b.nominated_node_name);
                assert_eq!(names(&a.victims), names(&b.victims));
                assert_eq!(
                    names(&a.nominated_pods_to_clear),
                    names(&b.nominated_pods_to_clear)
                );
                assert_eq!(a.message, b.message);
            }
        }
    })
    .await
    .expect("test timed out");
}

/// The nomination events of pod changes sent through `Sync` (where runs of upserts are
/// applied as one batch) are those of the same changes sent one by one: nominations made,
/// moved, left alone by a stale version, ended by binding, deletion and a terminal phase.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_publishes_the_nomination_events_of_unary_updates() {
    use pb::NominationEventType as Ev;
    timeout(TEST_TIMEOUT, async {
        let version = |name: &str, rv: u64, nominated: &str| {
            let mut p = pod(name, 50, "1", "");
            p.resource_version = rv;
            p.nominated_node_name = nominated.into();
            PodChange::Upsert(p)
        };
        let mut bound = pod("b", 50, "1", "n1");
        bound.resource_version = 3;
        bound.nominated_node_name = "n1".into();
        let mut succeeded = pod("c", 50, "1", "");
        succeeded.resource_version = 2;
        succeeded.nominated_node_name = "n2".into();
        succeeded.phase = "Succeeded".into();
        let changes = vec![
            version("a", 1, "n1"),
            version("b", 1, ""),
            version("a", 2, "n2"),
            // Stale: the version held stays, and so does its nomination.
            version("a", 1, "n1"),
            version("b", 2, "n1"),
            PodChange::Upsert(bound),
            PodChange::Delete(pb::ObjectRef {
                namespace: "default".into(),
                name: "a".into(),
                uid: None,
            }),
            version("c", 1, "n2"),
            PodChange::Upsert(succeeded),
        ];
        let mut events = Vec::new();
        for bulk in [true, false] {
            let (_server, mut client) = start().await;
            for n in ["n1", "n2"] {
                upsert_node(&mut client, node(n, "4")).await;
            }
            let PodChange::Upsert(first) = version("first", 1, "n1") else {
                unreachable!()
            };
            upsert_pod(&mut client, first).await;
            let start = list(&mut client).await.revision;
            if bulk {
                let items = changes.iter().cloned().map(pod_item).collect();
                let response = sync(&mut client, items).await;
                assert_eq!(response.rejected, 0);
            } else {
                for change in &changes {
                    client
                        .update_pod(pb::UpdatePodRequest {
                            change: Some(change.clone()),
                        })
                        .await
                        .expect("update pod");
                }
            }
            let end = list(&mut client).await.revision;
            let mut watch = client
                .watch_nominations(pb::WatchNominationsRequest {
                    after_revision: start,
                })
                .await
                .expect("watch")
                .into_inner();
            let mut seen = Vec::new();
            // Revisions counted from `start`.
            while seen
                .last()
                .is_none_or(|&(_, _, _, revision)| revision < end - start)
            {
                let event = watch.message().await.expect("watch").expect("event");
                seen.push((
                    Ev::try_from(event.r#type).unwrap_or(Ev::Unspecified),
                    event.pod.map(|p| p.name).unwrap_or_default(),
                    event.node,
                    event.revision - start,
                ));
            }
            events.push(seen);
        }
        let expected: Vec<_> = [
            (Ev::Nominated, "a", "n1"),
            (Ev::Cleared, "a", "n1"),
            (Ev::Nominated, "a", "n2"),
            (Ev::Nominated, "b", "n1"),
            (Ev::Cleared, "b", "n1"),
            (Ev::Cleared, "a", "n2"),
            (Ev::Nominated, "c", "n2"),
            (Ev::Cleared, "c", "n2"),
        ]
        .into_iter()
        .zip(1..)
        .map(|((kind, pod, node), revision)| (kind, pod.to_string(), node.to_string(), revision))
        .collect();
        assert_eq!(events[0], expected, "sync");
        assert_eq!(events[1], expected, "unary updates");
    })
    .await
    .expect("test timed out");
}

/// Streams longer than one chunk keep their order: later versions of a pod win.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_is_kept_across_chunks() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        let mut items = vec![node_item(node("n1", "1000"))];
        for rv in 1..=5000u64 {
            let mut p = pod("p", 0, "1", "n1");
            p.resource_version = rv;
            p.labels = map(&[("rv", &rv.to_string())]);
            items.push(pod_item(PodChange::Upsert(p)));
        }
        let response = sync(&mut client, items).await;
        assert_eq!(response.applied, counts(1, 5000, 0));
        let mut stale = pod("p", 0, "1", "n1");
        stale.resource_version = 4999;
        let reply = upsert_pod(&mut client, stale).await;
        assert!(!reply.applied);
        assert_eq!(reply.resource_version, 5000);
    })
    .await
    .expect("test timed out");
}

/// A bulk load outlasting the server's default rpc timeout still completes: only the
/// client's own deadline bounds a `Sync` stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_stream_is_not_cut_by_the_default_rpc_timeout() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start_with(preemptd::server::ServeConfig {
            rpc_timeout: Some(std::time::Duration::from_millis(200)),
            ..loopback_config()
        })
        .await;
        let items = tokio_stream::StreamExt::throttle(
            tokio_stream::iter((0..6).map(|i| node_item(node(&format!("n{i}"), "4")))),
            std::time::Duration::from_millis(100),
        );
        let response = client.sync(items).await.expect("sync").into_inner();
        assert_eq!(response.applied, counts(6, 0, 0));
    })
    .await
    .expect("test timed out");
}

/// An item on a stream that stays open is applied without waiting for the client's next
/// item or the end of the stream (a sidecar may keep one `Sync` stream as its feed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_are_applied_while_the_stream_stays_open() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        let (items, response) = open_sync_feed(&client);
        let mut held = pod("p", 0, "1", "n1");
        held.resource_version = 5;
        items.send(node_item(node("n1", "4"))).await.unwrap();
        items
            .send(pod_item(PodChange::Upsert(held.clone())))
            .await
            .unwrap();
        wait_until_held(&mut client, &held).await;
        drop(items);
        let response = response.await.unwrap().expect("sync").into_inner();
        assert_eq!(response.applied, counts(1, 1, 0));
    })
    .await
    .expect("test timed out");
}

/// An item whose encoding prost rejects fails the stream with the error tonic would give
/// for the whole request, at once, while the client still holds the stream open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_item_fails_the_stream_while_it_is_open() {
    use prost::Message as _;
    timeout(TEST_TIMEOUT, async {
        let (server, _client) = start().await;
        let valid = pod_item(PodChange::Upsert(pod("undecodable", 0, "1", "n1"))).encode_to_vec();
        let name = valid
            .windows(b"undecodable".len())
            .position(|w| w == b"undecodable")
            .expect("the name");
        let mut bad_utf8_name = valid.clone();
        bad_utf8_name[name] = 0xff;
        let expected = pb::SyncRequest::decode(&bad_utf8_name[..])
            .expect_err("undecodable")
            .to_string();

        // Each message's bytes are sent as they are.
        let (items, feed) = tokio::sync::mpsc::channel::<RawMessage>(4);
        let mut grpc = tonic::client::Grpc::new(channel(&server).await);
        grpc.ready().await.expect("channel ready");
        let codec = tonic_prost::ProstCodec::<RawMessage, pb::SyncResponse>::default();
        let path =
            tonic::codegen::http::uri::PathAndQuery::from_static("/preemptd.v1.Preemption/Sync");
        let call = tokio::spawn(async move {
            grpc.client_streaming(
                tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(feed)),
                path,
                codec,
            )
            .await
        });
        for encoding in [node_item(node("n1", "4")).encode_to_vec(), bad_utf8_name] {
            items.send(RawMessage(encoding)).await.expect("stream open");
        }
        // `items` stays open: the answer must not wait for the end of the stream.
        let status = timeout(std::time::Duration::from_secs(10), call)
            .await
            .expect("answered before the stream ended")
            .expect("call task")
            .expect_err("the stream fails");
        assert_eq!(status.code(), tonic::Code::Internal);
        assert_eq!(status.message(), expected);
        drop(items);
    })
    .await
    .expect("test timed out");
}
