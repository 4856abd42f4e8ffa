//! `PlanDrain` over real loopback gRPC: where the pods of drained nodes would go, the
//! eviction batches within every PodDisruptionBudget, the policy's part, and the errors.

mod grpc_support;

use std::sync::Arc;

use grpc_support::*;
use preemptd::engine::Policy;
use preemptd::server::pb;
use preemptd::server::pb::update_pod_disruption_budget_request::Change as PdbChange;
use tokio::time::timeout;

fn labelled(mut p: pb::Pod, app: &str) -> pb::Pod {
    p.labels = map(&[("app", app)]);
    p
}

fn labelled_node(name: &str, cpu: &str, labels: &[(&str, &str)]) -> pb::Node {
    let mut n = node(name, cpu);
    n.labels.extend(map(labels));
    n
}

async fn upsert_pdb(client: &mut Client, app: &str, disruptions_allowed: i32) {
    client
        .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest {
            change: Some(PdbChange::Upsert(pb::PodDisruptionBudget {
                namespace: "default".into(),
                name: app.into(),
                selector: Some(pb::LabelSelector {
                    match_labels: map(&[("app", app)]),
                    ..Default::default()
                }),
                disruptions_allowed,
                ..Default::default()
            })),
        })
        .await
        .expect("pdb");
}

async fn plan(client: &mut Client, nodes: &[&str]) -> Result<pb::PlanDrainResponse, tonic::Status> {
    client
        .plan_drain(pb::PlanDrainRequest {
            node_names: nodes.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        })
        .await
        .map(tonic::Response::into_inner)
}

fn pod_name(plan: &pb::PodDrainPlan) -> &str {
    plan.pod.as_ref().map_or("", |p| p.name.as_str())
}

/// Drained `a` holds web-1, web-2 (budget `web` allows 1), db (budget `db` allows 0) and
/// big; `b` is empty, `c` holds a priority-1 pod.
async fn load(client: &mut Client) {
    for (name, cpu) in [("a", "8"), ("b", "2"), ("c", "2")] {
        upsert_node(client, node(name, cpu)).await;
    }
    upsert_pod(client, labelled(pod("web-1", 100, "1500m", "a"), "web")).await;
    upsert_pod(client, labelled(pod("web-2", 100, "1500m", "a"), "web")).await;
    upsert_pod(client, labelled(pod("db", 50, "100m", "a"), "db")).await;
    upsert_pod(client, pod("big", 10, "3", "a")).await;
    upsert_pod(client, pod("low", 1, "1", "c")).await;
    upsert_pdb(client, "web", 1).await;
    upsert_pdb(client, "db", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_places_every_pod_and_batches_evictions_within_budgets() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        load(&mut client).await;
        let response = plan(&mut client, &["a"]).await.expect("plan");

        let order: Vec<&str> = response.pods.iter().map(pod_name).collect();
        assert_eq!(order, ["web-1", "web-2", "db", "big"]);
        let [web1, web2, db, big] = &response.pods[..] else {
            panic!("four pods expected");
        };
        // web-1 fits on b; with it there, web-2 fits nowhere as things are and preempts
        // low on c; db fits in what is left.
        assert_eq!(web1.outcome(), pb::DrainOutcome::Fits);
        assert_eq!(web1.node_name, "b");
        assert_eq!(web1.from_node, "a");
        assert_eq!(web1.priority, 100);
        assert_eq!(web2.outcome(), pb::DrainOutcome::Preempt);
        assert_eq!(web2.node_name, "c");
        assert_eq!(names(&web2.victims), ["default/low"]);
        assert_eq!(db.outcome(), pb::DrainOutcome::Fits);
        assert_eq!(db.node_name, "b");
        assert_eq!(big.outcome(), pb::DrainOutcome::Nowhere);
        assert!(big.reason.contains("Insufficient cpu"), "{}", big.reason);
        assert!(big.node_name.is_empty());

        // Budget web allows one at a time; db's allows none.
        let batches: Vec<Vec<String>> = response
            .batches
            .iter()
            .map(|b| b.pods.iter().map(|p| p.name.clone()).collect())
            .collect();
        assert_eq!(batches, [vec!["web-1", "big"], vec!["web-2"]]);
        assert_eq!((web1.batch, web2.batch, big.batch, db.batch), (1, 2, 1, 0));
        let blocked = db.blocked_by_pdb.as_ref().expect("db is blocked");
        assert_eq!(
            (blocked.namespace.as_str(), blocked.name.as_str()),
            ("default", "db")
        );
        assert!(web1.blocked_by_pdb.is_none());

        assert!(!response.epoch.is_empty());
        assert!(web1.diagnostics.is_empty());
        // Nothing was evicted or changed: the same plan again, on the same revision.
        let again = plan(&mut client, &["a"]).await.expect("plan again");
        assert_eq!(again, response);
        assert!(list(&mut client).await.nominations.is_empty());
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_adds_each_pods_node_diagnostics() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        load(&mut client).await;
        let response = client
            .plan_drain(pb::PlanDrainRequest {
                node_names: vec!["a".into()],
                explain: true,
                pdb_mode: pb::PdbMode::Strict.into(),
            })
            .await
            .expect("plan")
            .into_inner();
        let nodes: Vec<&str> = response.pods[0]
            .diagnostics
            .iter()
            .map(|d| d.node.as_str())
            .collect();
        assert_eq!(nodes, ["b", "c"]);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_or_missing_nodes_are_invalid_arguments_naming_the_field() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        load(&mut client).await;
        let status = plan(&mut client, &["a", "ghost"])
            .await
            .expect_err("unknown");
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert_eq!(status.message(), "node_names[1]: unknown node \"ghost\"");
        let status = plan(&mut client, &[]).await.expect_err("no nodes");
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert_eq!(
            status.message(),
            "node_names: at least one node name is required"
        );
        let status = client
            .plan_drain(pb::PlanDrainRequest {
                node_names: vec!["a".into()],
                pdb_mode: 42,
                ..Default::default()
            })
            .await
            .expect_err("bad enum");
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(
            status.message().starts_with("pdb_mode: "),
            "{}",
            status.message()
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_server_keeps_critical_pods_on_demand_and_off_noticed_nodes() {
    timeout(TEST_TIMEOUT, async {
        let policy = Policy::from_yaml("criticalPods:\n  priorityAtLeast: 1000\n").expect("policy");
        let config = preemptd::server::ServeConfig {
            policy: Some(Arc::new(policy)),
            ..loopback_config()
        };
        let (_server, mut client) = start_with(config).await;
        upsert_node(&mut client, node("a", "8")).await;
        let spot = [("karpenter.sh/capacity-type", "spot")];
        upsert_node(&mut client, labelled_node("spot", "8", &spot)).await;
        let on_demand = [("karpenter.sh/capacity-type", "on-demand")];
        upsert_node(&mut client, labelled_node("od", "2", &on_demand)).await;
        let mut noticed = labelled_node("reclaimed", "8", &spot);
        noticed.taints.push(pb::Taint {
            key: "karpenter.sh/disrupted".into(),
            effect: "PreferNoSchedule".into(),
            ..Default::default()
        });
        upsert_node(&mut client, noticed).await;
        upsert_pod(&mut client, pod("critical", 1000, "1", "a")).await;
        upsert_pod(&mut client, pod("ordinary", 10, "1", "a")).await;

        let response = plan(&mut client, &["a"]).await.expect("plan");
        let placed: Vec<(&str, &str, bool)> = response
            .pods
            .iter()
            .map(|p| (pod_name(p), p.node_name.as_str(), p.critical))
            .collect();
        assert_eq!(
            placed,
            [("critical", "od", true), ("ordinary", "spot", false)]
        );
        assert_eq!(response.noticed_nodes.len(), 1);
        assert_eq!(response.noticed_nodes[0].node, "reclaimed");
        assert_eq!(
            response.noticed_nodes[0].signal,
            "taint karpenter.sh/disrupted"
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_shed_with_preempt_calls_when_the_decision_slots_are_taken() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start_with(preemptd::server::ServeConfig {
            max_concurrent_preempts: 1,
            ..loopback_config()
        })
        .await;
        // A plan of a few hundred decisions holds the one slot for a while.
        upsert_node(&mut client, node("drained", "1000")).await;
        for n in 0..20 {
            upsert_node(&mut client, node(&format!("n{n}"), "100")).await;
        }
        for p in 0..300 {
            upsert_pod(&mut client, pod(&format!("p{p}"), p % 7, "100m", "drained")).await;
        }
        // Rounds repeat in the unlikely case no two plans overlapped.
        let mut shed = None;
        for _round in 0..20 {
            let calls: Vec<_> = (0..6)
                .map(|_| {
                    let mut client = client.clone();
                    tokio::spawn(async move { plan(&mut client, &["drained"]).await })
                })
                .collect();
            let mut served = 0;
            for call in calls {
                match call.await.expect("join") {
                    Ok(response) => {
                        assert_eq!(response.pods.len(), 300);
                        served += 1;
                    }
                    Err(status) => {
                        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
                        shed = Some(status);
                    }
                }
            }
            assert!(served >= 1, "at least the first plan is served");
            if shed.is_some() {
                break;
            }
        }
        let shed = shed.expect("no plan was shed");
        assert!(
            shed.message()
                .contains("too many concurrent preempt calls and drain plans (limit 1)"),
            "{}",
            shed.message()
        );
        // The slot is free again once the plans are done.
        plan(&mut client, &["drained"]).await.expect("plan after");
    })
    .await
    .expect("test timed out");
}
