//! Bounded stress over gRPC: concurrent non-dry-run Preempts racing with node and pod
//! updates on a small full cluster. Afterwards no node is over-committed by nominations
//! (checked with the engine itself: once the victims are gone, every nominated pod fits
//! its node next to the others), no victim is marked by two commits, and the number of
//! successful preemptions is exactly what the room allows.

mod grpc_support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use grpc_support::*;
use preemptd::server::pb;
use preemptd::server::pb::NominationEventType as Ev;
use tokio::task::JoinSet;
use tokio::time::timeout;

const NODES: usize = 4;
/// Per node: 8 cpu, filled by four priority-10 pods of 2 cpu.
const LOW_PER_NODE: usize = 4;
/// Priority-100 preemptors of 2 cpu: room for exactly NODES * 4 of them.
const PREEMPTORS: usize = 24;
const ROUNDS: usize = 3;

fn node_name(i: usize) -> String {
    format!("n{i}")
}

async fn round(round: usize) {
    let (server, mut client) = start().await;
    for n in 0..NODES {
        upsert_node(&mut client, node(&node_name(n), "8")).await;
        for l in 0..LOW_PER_NODE {
            upsert_pod(
                &mut client,
                pod(&format!("low-{n}-{l}"), 10, "2", &node_name(n)),
            )
            .await;
        }
    }
    let mut events = client
        .watch_nominations(pb::WatchNominationsRequest { after_revision: 0 })
        .await
        .expect("watch")
        .into_inner();

    let mut tasks: JoinSet<Result<pb::PreemptResponse, tonic::Status>> = JoinSet::new();
    for i in 0..PREEMPTORS {
        let mut c = client.clone();
        tasks.spawn(async move {
            c.preempt(pb::PreemptRequest {
                preemptor: Some(pb::preempt_request::Preemptor::Pod(pod(
                    &format!("hi-{i}"),
                    100,
                    "2",
                    "",
                ))),
                dry_run: false,
                explain: false,
                pdb_mode: pb::PdbMode::Unspecified.into(),
            })
            .await
            .map(|r| r.into_inner())
        });
    }
    // Updates racing with the commits: re-upserting a node bumps its generation (so
    // commits on it conflict and decide again); unrelated pending pods come and go.
    let mut noise: JoinSet<()> = JoinSet::new();
    for w in 0..2 {
        let mut c = client.clone();
        noise.spawn(async move {
            for k in 0..60 {
                let n = (k + w) % NODES;
                let r = upsert_node(&mut c, node(&node_name(n), "8")).await;
                assert!(r.applied);
                let name = format!("pending-{w}-{}", k % 5);
                upsert_pod(&mut c, pod(&name, 1, "100m", "")).await;
                if k % 3 == 0 {
                    delete_pod(&mut c, &name).await;
                }
            }
        });
    }

    let mut responses: Vec<pb::PreemptResponse> = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let response = joined.expect("join").expect("preempt must not fail");
        assert_eq!(response.epoch, server.epoch());
        let victims = names(&response.victims);
        for v in &victims {
            let node = &response.nominated_node_name;
            assert!(
                v.starts_with(&format!("default/low-{}-", node.trim_start_matches('n'))),
                "victim {v} is not on {node}"
            );
        }
        responses.push(response);
    }
    while let Some(joined) = noise.join_next().await {
        joined.expect("noise writer");
    }

    let outcomes: Vec<pb::Outcome> = responses.iter().map(outcome).collect();
    let preempted = outcomes
        .iter()
        .filter(|o| **o == pb::Outcome::Preempt)
        .count();
    let no_candidate = outcomes
        .iter()
        .filter(|o| **o == pb::Outcome::NoCandidate)
        .count();
    assert_eq!(
        (preempted, no_candidate),
        (NODES * LOW_PER_NODE, PREEMPTORS - NODES * LOW_PER_NODE),
        "round {round}: outcomes {outcomes:?}"
    );

    let listed = list(&mut client).await;
    assert_eq!(listed.epoch, server.epoch());
    assert_eq!(listed.nominations.len(), NODES * LOW_PER_NODE);
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for n in &listed.nominations {
        *per_node.entry(n.node.clone()).or_default() += 1;
    }
    assert!(
        per_node.values().all(|c| *c <= LOW_PER_NODE),
        "{per_node:?}"
    );

    // The log: every change once; no pod marked as a victim twice.
    let mut marked: Vec<String> = Vec::new();
    let mut nominated_events = 0;
    while marked.len() + nominated_events < 2 * NODES * LOW_PER_NODE {
        let e = timeout(Duration::from_secs(10), events.message())
            .await
            .expect("event timed out")
            .expect("watch failed")
            .expect("watch ended");
        match Ev::try_from(e.r#type) {
            Ok(Ev::VictimMarked) => marked.push(e.pod.map(|p| p.name).unwrap_or_default()),
            Ok(Ev::Nominated) => nominated_events += 1,
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(nominated_events, NODES * LOW_PER_NODE);
    let distinct: BTreeSet<&String> = marked.iter().collect();
    assert_eq!(
        distinct.len(),
        marked.len(),
        "a victim was marked twice: {marked:?}"
    );
    assert_eq!(marked.len(), NODES * LOW_PER_NODE);

    // Over-commit check with the engine: delete the victims, then every nominated pod
    // must fit its nominated node with the other nominations counted.
    for v in &marked {
        delete_pod(&mut client, v).await;
    }
    for n in &listed.nominations {
        let name = n.pod.as_ref().map(|p| p.name.clone()).unwrap_or_default();
        let answer = preempt(&mut client, pod(&name, 100, "2", ""), true).await;
        assert_eq!(
            outcome(&answer),
            pb::Outcome::Fits,
            "{name}: {}",
            answer.message
        );
        assert!(
            answer.feasible_nodes.contains(&n.node),
            "{name} no longer fits its node {}: feasible {:?}",
            n.node,
            answer.feasible_nodes
        );
    }
    // And nothing else fits anywhere: the room is exactly used up.
    let extra = preempt(&mut client, pod("extra", 100, "2", ""), true).await;
    assert_ne!(outcome(&extra), pb::Outcome::Fits, "{}", extra.message);
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_preemptions_never_count_freed_room_twice() {
    timeout(TEST_TIMEOUT, async {
        for r in 0..ROUNDS {
            round(r).await;
        }
    })
    .await
    .expect("test timed out");
}
