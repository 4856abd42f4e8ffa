//! The commit flow and its nominations-log events over gRPC: PREEMPT commits and its
//! events, NO_CANDIDATE clearing, dry runs recording nothing, watch from 0 and resume
//! after a revision, OUT_OF_RANGE for revisions no longer held, and a stalled subscriber
//! cut off with RESOURCE_EXHAUSTED while another keeps receiving.

mod grpc_support;

use std::time::Duration;

use grpc_support::*;
use preemptd::server::pb;
use preemptd::server::pb::NominationEventType as Ev;
use tokio::time::timeout;
use tonic::Code;

type Watch = tonic::Streaming<pb::WatchNominationsResponse>;

async fn watch(client: &mut Client, after: u64) -> Result<Watch, tonic::Status> {
    client
        .watch_nominations(pb::WatchNominationsRequest {
            after_revision: after,
        })
        .await
        .map(|r| r.into_inner())
}

async fn next(w: &mut Watch) -> pb::WatchNominationsResponse {
    timeout(Duration::from_secs(10), w.message())
        .await
        .expect("watch event timed out")
        .expect("watch failed")
        .expect("watch ended")
}

/// (type, pod name, node, revision, initial)
fn summary(e: &pb::WatchNominationsResponse) -> (Ev, String, String, u64, bool) {
    (
        Ev::try_from(e.r#type).unwrap_or(Ev::Unspecified),
        e.pod.as_ref().map(|p| p.name.clone()).unwrap_or_default(),
        e.node.clone(),
        e.revision,
        e.initial,
    )
}

/// n1 (4 cpu) full with two priority-10 pods of 2 cpu; `low-nom` (priority 50) nominated
/// to n1; n2 (1 cpu) too small for anything.
async fn small_cluster(client: &mut Client) {
    upsert_node(client, node("n1", "4")).await;
    upsert_node(client, node("n2", "1")).await;
    upsert_pod(client, pod("v1", 10, "2", "n1")).await;
    upsert_pod(client, pod("v2", 10, "2", "n1")).await;
    let mut low = pod("low-nom", 50, "1", "");
    low.nominated_node_name = "n1".into();
    upsert_pod(client, low).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_emits_one_event_per_change_and_watch_resumes_exactly() {
    timeout(TEST_TIMEOUT, async {
        let (server, mut client) = start().await;
        small_cluster(&mut client).await;

        let listed = list(&mut client).await;
        assert_eq!(listed.epoch, server.epoch());
        assert_eq!(listed.nominations.len(), 1);
        let r0 = listed.revision;
        assert_eq!(r0, 1, "the low-nom upsert was the one event so far");

        let mut from_zero = watch(&mut client, 0).await.expect("watch from 0");
        let initial = next(&mut from_zero).await;
        assert_eq!(
            summary(&initial),
            (Ev::Nominated, "low-nom".into(), "n1".into(), r0, true)
        );
        assert_eq!(initial.epoch, server.epoch());

        // A dry run records nothing.
        let dry = preempt(&mut client, pod("high", 100, "2", ""), true).await;
        assert_eq!(outcome(&dry), pb::Outcome::Preempt);
        assert_eq!(dry.nominations_revision, r0);
        assert_eq!(list(&mut client).await.revision, r0);
        assert_eq!(list(&mut client).await.nominations.len(), 1);

        let committed = preempt(&mut client, pod("high", 100, "2", ""), false).await;
        assert_eq!(outcome(&committed), pb::Outcome::Preempt);
        assert_eq!(committed.epoch, server.epoch());
        assert_eq!(committed.nominated_node_name, "n1");
        assert_eq!(names(&committed.victims), vec!["default/v2"]);
        assert_eq!(
            names(&committed.nominated_pods_to_clear),
            vec!["default/low-nom"]
        );
        assert!(committed.revision > dry.revision);
        assert_eq!(committed.nominations_revision, r0 + 3);

        let live: Vec<_> = [
            next(&mut from_zero).await,
            next(&mut from_zero).await,
            next(&mut from_zero).await,
        ]
        .iter()
        .map(summary)
        .collect();
        assert_eq!(
            live,
            vec![
                (Ev::VictimMarked, "v2".into(), "n1".into(), r0 + 1, false),
                (Ev::Cleared, "low-nom".into(), "n1".into(), r0 + 2, false),
                (Ev::Nominated, "high".into(), "n1".into(), r0 + 3, false),
            ]
        );

        let listed = list(&mut client).await;
        assert_eq!(listed.revision, r0 + 3);
        let nominated: Vec<_> = listed
            .nominations
            .iter()
            .map(|n| {
                (
                    n.pod.as_ref().map(|p| p.name.clone()),
                    n.node.clone(),
                    n.priority,
                )
            })
            .collect();
        assert_eq!(nominated, vec![(Some("high".into()), "n1".into(), 100)]);

        // The request carries no nomination: the cache's (n1, with a terminating victim of
        // this preemption on it) applies, so the pod is not eligible to preempt again.
        let again = preempt(&mut client, pod("high", 100, "2", ""), true).await;
        assert_eq!(
            outcome(&again),
            pb::Outcome::NotEligible,
            "{}",
            again.message
        );

        // NO_CANDIDATE clears the preemptor's own nomination, with an event.
        let mut huge = pod("huge", 100, "64", "");
        huge.nominated_node_name = "n2".into();
        upsert_pod(&mut client, huge.clone()).await;
        huge.nominated_node_name.clear();
        let none = preempt(&mut client, huge, false).await;
        assert_eq!(outcome(&none), pb::Outcome::NoCandidate, "{}", none.message);
        assert_eq!(none.nominations_revision, r0 + 5);
        assert_eq!(
            summary(&next(&mut from_zero).await),
            (Ev::Nominated, "huge".into(), "n2".into(), r0 + 4, false)
        );
        assert_eq!(
            summary(&next(&mut from_zero).await),
            (Ev::Cleared, "huge".into(), "n2".into(), r0 + 5, false)
        );

        // Resume after r0 + 1: exactly the events after it, in order, then live ones.
        let mut resumed = watch(&mut client, r0 + 1).await.expect("resume");
        let replay: Vec<u64> = [
            next(&mut resumed).await,
            next(&mut resumed).await,
            next(&mut resumed).await,
            next(&mut resumed).await,
        ]
        .iter()
        .map(|e| e.revision)
        .collect();
        assert_eq!(replay, vec![r0 + 2, r0 + 3, r0 + 4, r0 + 5]);
        delete_pod(&mut client, "high").await;
        let cleared = summary(&next(&mut resumed).await);
        assert_eq!(
            cleared,
            (Ev::Cleared, "high".into(), "n1".into(), r0 + 6, false)
        );
        assert_eq!(summary(&next(&mut from_zero).await), cleared);

        // Resuming at the current revision gives live events only.
        let current = list(&mut client).await.revision;
        let mut live_only = watch(&mut client, current).await.expect("watch current");
        let mut p = pod("late", 5, "1", "");
        p.nominated_node_name = "n2".into();
        upsert_pod(&mut client, p).await;
        assert_eq!(
            summary(&next(&mut live_only).await),
            (
                Ev::Nominated,
                "late".into(),
                "n2".into(),
                current + 1,
                false
            )
        );

        // Shutdown ends open watches with UNAVAILABLE.
        server.shutdown().await.expect("shutdown");
        let end = timeout(Duration::from_secs(10), live_only.message())
            .await
            .expect("watch end timed out");
        assert_eq!(end.expect_err("watch must fail").code(), Code::Unavailable);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_no_longer_held_are_out_of_range() {
    timeout(TEST_TIMEOUT, async {
        let mut config = loopback_config();
        config.history_capacity = 4;
        let (_server, mut client) = start_with(config).await;
        upsert_node(&mut client, node("n1", "4")).await;
        for i in 0..10 {
            let mut p = pod("toggler", 5, "1", "");
            if i % 2 == 0 {
                p.nominated_node_name = "n1".into();
            }
            upsert_pod(&mut client, p).await;
        }
        assert_eq!(list(&mut client).await.revision, 10);

        let err = watch(&mut client, 2).await.expect_err("revision 2 is gone");
        assert_eq!(err.code(), Code::OutOfRange);
        assert!(
            err.message().contains("oldest revision still held is 7"),
            "{}",
            err.message()
        );
        let err = watch(&mut client, 11)
            .await
            .expect_err("revision 11 is ahead");
        assert_eq!(err.code(), Code::OutOfRange);

        // The oldest resumable point still works, and replays 7..=10.
        let mut w = watch(&mut client, 6).await.expect("resume after 6");
        for want in 7..=10 {
            assert_eq!(next(&mut w).await.revision, want);
        }
    })
    .await
    .expect("test timed out");
}

/// Long names make events big, so the transport's buffers fill after fewer events.
fn long_name(i: usize) -> String {
    format!("{i}-{}", "x".repeat(240))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_subscriber_is_cut_off_while_others_keep_receiving() {
    const WRITERS: usize = 4;
    const TOGGLES: usize = 800;
    const EVENTS: u64 = (WRITERS * TOGGLES) as u64;
    timeout(TEST_TIMEOUT, async {
        let mut config = loopback_config();
        config.subscriber_buffer = 256;
        let (server, mut client) = start_with(config).await;
        upsert_node(&mut client, node("n1", "4")).await;

        // The stalled watcher has a connection of its own, with small receive windows: a
        // stream nobody reads would otherwise eat a shared connection's window, and hyper's
        // default 2 MiB window would buffer every event of this test client-side.
        let mut stalled_client = Client::new(small_window_channel(&server).await);
        let mut stalled = watch(&mut stalled_client, 0).await.expect("stalled watch");
        let mut reader_stream = watch(&mut client, 0).await.expect("reader watch");
        let reader = tokio::spawn(async move {
            let mut revisions = Vec::new();
            while (revisions.len() as u64) < EVENTS {
                match timeout(Duration::from_secs(20), reader_stream.message()).await {
                    Ok(Ok(Some(e))) => revisions.push(e.revision),
                    other => panic!("reader stopped after {}: {other:?}", revisions.len()),
                }
            }
            revisions
        });

        let mut writers = tokio::task::JoinSet::new();
        for w in 0..WRITERS {
            let mut c = client.clone();
            writers.spawn(async move {
                for i in 0..TOGGLES {
                    let mut p = pod(&long_name(w), 5, "1", "");
                    p.uid = format!("uid-{}", long_name(w));
                    if i % 2 == 0 {
                        p.nominated_node_name = "n1".into();
                    }
                    upsert_pod(&mut c, p).await;
                }
            });
        }
        while let Some(done) = writers.join_next().await {
            done.expect("writer");
        }
        let revisions = reader.await.expect("reader");
        assert_eq!(revisions, (1..=EVENTS).collect::<Vec<_>>());

        // Now read the stalled stream: what was queued, then RESOURCE_EXHAUSTED.
        let mut got = Vec::new();
        let status = loop {
            match timeout(Duration::from_secs(10), stalled.message()).await {
                Ok(Ok(Some(e))) => got.push(e.revision),
                Ok(Ok(None)) => panic!("stalled stream ended without an error"),
                Ok(Err(status)) => break status,
                Err(_) => panic!(
                    "stalled stream neither ended nor delivered after {} events",
                    got.len()
                ),
            }
        };
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        let last = *got.last().expect("some events before the cut");
        assert!(
            last < EVENTS,
            "the stalled watcher was cut off before the end"
        );
        assert!(
            status.message().contains(&format!("after revision {last}")),
            "{}",
            status.message()
        );
        assert_eq!(got, (1..=last).collect::<Vec<_>>());

        // It resumes from its last revision with nothing lost or repeated.
        let mut resumed = watch(&mut stalled_client, last).await.expect("resume");
        for want in last + 1..=EVENTS {
            assert_eq!(next(&mut resumed).await.revision, want);
        }
    })
    .await
    .expect("test timed out");
}
