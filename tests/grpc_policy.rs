//! The placement policy over gRPC: a server started with a policy applies it to every
//! `Preempt` and names its rulings in the diagnostics; `PreemptRequest.pdb_mode` sets the
//! PDB mode of one decision, over the server's.

mod grpc_support;

use std::sync::Arc;

use grpc_support::*;
use preemptd::engine::Policy;
use preemptd::server::pb;
use preemptd::server::pb::update_pod_disruption_budget_request::Change as PdbChange;
use tokio::time::timeout;

const POLICY: &str = "
criticalPods:
  priorityAtLeast: 1000
pdbMode: strict
";

fn policy_config(text: &str) -> preemptd::server::ServeConfig {
    preemptd::server::ServeConfig {
        policy: Some(Arc::new(Policy::from_yaml(text).expect("valid policy"))),
        ..loopback_config()
    }
}

fn labelled_node(name: &str, labels: &[(&str, &str)]) -> pb::Node {
    let mut n = node(name, "1");
    n.labels.extend(map(labels));
    n
}

async fn ask(
    client: &mut Client,
    pod: pb::Pod,
    pdb_mode: pb::PdbMode,
) -> Result<pb::PreemptResponse, tonic::Status> {
    client
        .preempt(pb::PreemptRequest {
            preemptor: Some(pb::preempt_request::Preemptor::Pod(pod)),
            dry_run: true,
            explain: true,
            pdb_mode: pdb_mode.into(),
        })
        .await
        .map(tonic::Response::into_inner)
}

/// Node `spot-a` holds a priority-1 pod, `od-b` a priority-5 one, both full; `guarded`
/// (priority 0, under a budget allowing no disruption) fills `od-c`.
async fn load(client: &mut Client) {
    upsert_node(
        client,
        labelled_node("spot-a", &[("karpenter.sh/capacity-type", "spot")]),
    )
    .await;
    upsert_node(
        client,
        labelled_node("od-b", &[("karpenter.sh/capacity-type", "on-demand")]),
    )
    .await;
    upsert_node(
        client,
        labelled_node("od-c", &[("karpenter.sh/capacity-type", "on-demand")]),
    )
    .await;
    upsert_pod(client, pod("low", 1, "1", "spot-a")).await;
    upsert_pod(client, pod("mid", 5, "1", "od-b")).await;
    let mut guarded = pod("guarded", 0, "1", "od-c");
    guarded.labels = map(&[("app", "db")]);
    upsert_pod(client, guarded).await;
    client
        .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest {
            change: Some(PdbChange::Upsert(pb::PodDisruptionBudget {
                namespace: "default".into(),
                name: "db".into(),
                selector: Some(pb::LabelSelector {
                    match_labels: map(&[("app", "db")]),
                    ..Default::default()
                }),
                disruptions_allowed: 0,
                ..Default::default()
            })),
        })
        .await
        .expect("pdb");
}

fn diagnostic<'r>(response: &'r pb::PreemptResponse, node: &str) -> &'r pb::NodeDiagnostic {
    response
        .diagnostics
        .iter()
        .find(|d| d.node == node)
        .unwrap_or_else(|| panic!("no diagnostic for {node}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_server_keeps_critical_pods_off_spot_and_budgets_whole() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start_with(policy_config(POLICY)).await;
        load(&mut client).await;

        // A batch pod preempts the cheapest victim, on spot: upstream's answer.
        let batch = ask(
            &mut client,
            pod("batch", 10, "500m", ""),
            pb::PdbMode::Unspecified,
        )
        .await
        .expect("preempt");
        assert_eq!(outcome(&batch), pb::Outcome::Preempt, "{}", batch.message);
        assert_eq!(batch.nominated_node_name, "spot-a");

        // A critical pod: spot ruled out (named), od-c's victim would break the budget
        // (strict by the server's policy, named): od-b.
        let critical = ask(
            &mut client,
            pod("critical", 1000, "500m", ""),
            pb::PdbMode::Unspecified,
        )
        .await
        .expect("preempt");
        assert_eq!(
            outcome(&critical),
            pb::Outcome::Preempt,
            "{}",
            critical.message
        );
        assert_eq!(critical.nominated_node_name, "od-b");
        assert_eq!(names(&critical.victims), ["default/mid"]);
        let spot = diagnostic(&critical, "spot-a")
            .filter
            .clone()
            .expect("filter status");
        assert_eq!(
            spot.code,
            pb::StatusCode::UnschedulableAndUnresolvable as i32
        );
        assert_eq!(spot.plugin, "PlacementPolicy");
        assert_eq!(
            spot.reasons,
            ["node(s) were spot capacity, which critical pods avoid"]
        );
        let c = diagnostic(&critical, "od-c");
        assert!(!c.candidate);
        let dropped = c.preemption.clone().expect("preemption status");
        assert_eq!(
            dropped.reasons,
            ["preemption would violate a PodDisruptionBudget (pdbMode strict)"]
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdb_mode_of_the_request_wins_over_the_servers() {
    timeout(TEST_TIMEOUT, async {
        // Only od-c is open to this pod (it tolerates nothing, the others get a taint).
        for config in [loopback_config(), policy_config(POLICY)] {
            let strict_server = config.policy.is_some();
            let (_server, mut client) = start_with(config).await;
            load(&mut client).await;
            for name in ["spot-a", "od-b"] {
                let mut n = labelled_node(name, &[]);
                n.taints.push(pb::Taint {
                    key: "dedicated".into(),
                    value: "other".into(),
                    effect: "NoSchedule".into(),
                });
                upsert_node(&mut client, n).await;
            }
            let preemptor = || pod("high", 10, "500m", "");
            let prefer = ask(&mut client, preemptor(), pb::PdbMode::Prefer)
                .await
                .expect("preempt");
            assert_eq!(outcome(&prefer), pb::Outcome::Preempt, "{}", prefer.message);
            assert_eq!(
                (prefer.nominated_node_name.as_str(), prefer.pdb_violations),
                ("od-c", 1)
            );
            let strict = ask(&mut client, preemptor(), pb::PdbMode::Strict)
                .await
                .expect("preempt");
            assert_eq!(
                outcome(&strict),
                pb::Outcome::NoCandidate,
                "{}",
                strict.message
            );
            assert!(
                strict
                    .message
                    .contains("preemption would violate a PodDisruptionBudget"),
                "{}",
                strict.message
            );
            let unset = ask(&mut client, preemptor(), pb::PdbMode::Unspecified)
                .await
                .expect("preempt");
            let expected = if strict_server {
                pb::Outcome::NoCandidate
            } else {
                pb::Outcome::Preempt
            };
            assert_eq!(outcome(&unset), expected, "{}", unset.message);
        }
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_pdb_mode_is_refused_naming_the_field() {
    timeout(TEST_TIMEOUT, async {
        let (_server, mut client) = start().await;
        upsert_node(&mut client, node("n", "1")).await;
        let error = client
            .preempt(pb::PreemptRequest {
                preemptor: Some(pb::preempt_request::Preemptor::Pod(pod("p", 1, "1", ""))),
                dry_run: true,
                explain: false,
                pdb_mode: 7,
            })
            .await
            .expect_err("unknown enum value");
        assert_eq!(error.code(), tonic::Code::InvalidArgument);
        assert!(error.message().contains("pdb_mode"), "{}", error.message());
    })
    .await
    .expect("test timed out");
}
