//! Node accounting over gRPC under the quantities the API server accepts: amounts far
//! beyond int64 are read as kube-scheduler reads them, sums wrap as its int64 sums do
//! (so a delete undoes an upsert exactly), and what it would read as negative is refused
//! with the field's path.

mod grpc_support;

use grpc_support::*;
use preemptd::server::pb;
use preemptd::server::pb::update_pod_request::Change as PodChange;
use tokio::time::timeout;
use tonic::Code;

/// The repro: n1 has 4 cpu, `low` takes 3; a priority-100 pod asking for 2 preempts it.
async fn node_with_low_pod(client: &mut Client) {
    upsert_node(client, node("n1", "4")).await;
    upsert_pod(client, pod("low", 0, "3", "n1")).await;
    expect_low_preempted(client).await;
}

async fn expect_low_preempted(client: &mut Client) {
    let answer = preempt(client, pod("high", 100, "2", ""), true).await;
    assert_eq!(outcome(&answer), pb::Outcome::Preempt, "{}", answer.message);
    assert_eq!(names(&answer.victims), ["default/low"]);
    assert_eq!(answer.nominated_node_name, "n1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_quantities_leave_the_node_as_it_was() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        node_with_low_pod(&mut client).await;

        // kube-scheduler reads cpu 2^63-1 as -1000 millicores (int64 overflow): refused,
        // with the field's path, and nothing changes.
        for name in ["huge-a", "huge-b"] {
            let refused = client
                .update_pod(pb::UpdatePodRequest {
                    change: Some(PodChange::Upsert(pod(name, 0, "9223372036854775807", "n1"))),
                })
                .await
                .expect_err("a negative reading is refused");
            assert_eq!(refused.code(), Code::InvalidArgument);
            assert!(
                refused
                    .message()
                    .contains("containers[0].resources.requests[cpu]"),
                "{}",
                refused.message()
            );
        }
        expect_low_preempted(&mut client).await;

        // Two pods of 9223372036854775 cpu each: their millicores sum past int64 and
        // wrap to 1384 in use, as upstream's do (kube-scheduler v1.35.4 answers FITS).
        // Deleting them gives the node back exactly.
        for name in ["big-a", "big-b"] {
            let applied = upsert_pod(&mut client, pod(name, 0, "9223372036854775", "n1")).await;
            assert!(applied.applied);
        }
        let answer = preempt(&mut client, pod("high", 100, "2", ""), true).await;
        assert_eq!(outcome(&answer), pb::Outcome::Fits, "{}", answer.message);
        for name in ["big-a", "big-b"] {
            assert!(delete_pod(&mut client, name).await.applied);
        }
        expect_low_preempted(&mut client).await;
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quantities_beyond_int64_read_as_kube_scheduler_reads_them() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        node_with_low_pod(&mut client).await;

        // apimachinery keeps 1e30 and 1e40 as int64 amounts of scale 30 and 40, whose
        // `Value()` overflows to 0: the scheduler sees no memory and no storage asked.
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"default","name":"vast","uid":"uid-vast"},"spec":{"priority":100,"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"1e30","ephemeral-storage":"1e40"}}}]},"status":{"phase":"Pending"}}"#;
        let answer = client
            .preempt(pb::PreemptRequest {
                preemptor: Some(pb::preempt_request::Preemptor::PodJson(json.into())),
                dry_run: true,
                ..Default::default()
            })
            .await
            .expect("accepted")
            .into_inner();
        assert_eq!(outcome(&answer), pb::Outcome::Fits, "{}", answer.message);

        // Such a pod bound in place of `low`, with a phase the scheduler does not know,
        // counts as an ordinary running pod: its cpu is taken and it can be preempted.
        assert!(delete_pod(&mut client, "low").await.applied);
        let bound = json
            .replace("\"vast\"", "\"vast-bound\"")
            .replace("uid-vast", "uid-vast-bound")
            .replace("\"cpu\":\"1\"", "\"cpu\":\"3\"")
            .replace("\"priority\":100", "\"priority\":0,\"nodeName\":\"n1\"")
            .replace("\"Pending\"", "\"Bogus\"");
        let applied = client
            .update_pod(pb::UpdatePodRequest {
                change: Some(PodChange::UpsertJson(bound)),
            })
            .await
            .expect("a pod the API server accepts is accepted")
            .into_inner();
        assert!(applied.applied);
        let answer = preempt(&mut client, pod("high", 100, "2", ""), true).await;
        assert_eq!(outcome(&answer), pb::Outcome::Preempt, "{}", answer.message);
        assert_eq!(names(&answer.victims), ["default/vast-bound"]);
    })
    .await
    .expect("test timed out");
}
