//! Every conformance scenario (tests/conformance/*.json, random/*.json and
//! tests/conformance-by-version/*.json, each answered as its version) through the
//! gRPC API twice: a fresh server per pass, the cluster loaded object by object, then a
//! dry-run `Preempt`; once as Kubernetes JSON (`upsert_json`, `pod_json`), once as typed
//! messages (`upsert`, `pod`) mapped from the same objects by the test's own mapping. Both
//! answers must be identical and match `expect`.

mod grpc_support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use grpc_support::{Client, TEST_TIMEOUT, loopback_config, names, outcome, start_with, typed};
use preemptd::engine::{FeatureGates, KubernetesVersion};
use preemptd::server::ServeConfig;
use preemptd::server::pb;
use serde_json::Value;
use tokio::sync::Semaphore;

/// Scenarios run at once (each with its own server).
const CONCURRENCY: usize = 8;

fn scenario_files() -> Vec<PathBuf> {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let root = tests.join("conformance");
    let mut files = Vec::new();
    // conformance-by-version/ holds scenarios answered differently by different versions,
    // each naming its `kubernetesVersion` (kept apart from the scenarios every client and
    // the upstream harness run as they are).
    for dir in [
        root.clone(),
        root.join("random"),
        tests.join("conformance-by-version"),
    ] {
        for entry in std::fs::read_dir(&dir).expect("read conformance dir") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Which member of the request oneofs carries the objects.
#[derive(Clone, Copy, Debug)]
enum Form {
    Json,
    Typed,
}

async fn load(client: &mut Client, item: &Value, form: Form) -> Result<(), String> {
    use pb::update_node_request::Change as NodeChange;
    use pb::update_pod_disruption_budget_request::Change as PdbChange;
    use pb::update_pod_request::Change as PodChange;
    let json = item.to_string();
    let kind = item["kind"].as_str().unwrap_or_default();
    let result = match kind {
        "Node" => client
            .update_node(pb::UpdateNodeRequest {
                change: Some(match form {
                    Form::Json => NodeChange::UpsertJson(json),
                    Form::Typed => NodeChange::Upsert(typed::node(item)),
                }),
            })
            .await
            .map(|r| (r.get_ref().applied, r.get_ref().epoch.clone())),
        "Pod" => client
            .update_pod(pb::UpdatePodRequest {
                change: Some(match form {
                    Form::Json => PodChange::UpsertJson(json),
                    Form::Typed => PodChange::Upsert(typed::pod(item)),
                }),
            })
            .await
            .map(|r| (r.get_ref().applied, r.get_ref().epoch.clone())),
        "PodDisruptionBudget" => client
            .update_pod_disruption_budget(pb::UpdatePodDisruptionBudgetRequest {
                change: Some(match form {
                    Form::Json => PdbChange::UpsertJson(json),
                    Form::Typed => PdbChange::Upsert(typed::pdb(item)),
                }),
            })
            .await
            .map(|r| (r.get_ref().applied, r.get_ref().epoch.clone())),
        other => return Err(format!("unexpected kind {other:?}")),
    };
    match result {
        Ok((true, epoch)) if !epoch.is_empty() => Ok(()),
        Ok((applied, epoch)) => Err(format!(
            "{kind} {}: applied={applied} epoch={epoch:?}",
            item["metadata"]["name"]
        )),
        Err(status) => Err(format!("{kind} {}: {status}", item["metadata"]["name"])),
    }
}

fn string_set(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

async fn run_scenario(path: PathBuf) -> Result<(), String> {
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let scenario: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut json = run_form(&scenario, Form::Json).await?;
    let mut typed = run_form(&scenario, Form::Typed).await?;
    // Each pass has its own server, hence its own epoch.
    json.epoch.clear();
    typed.epoch.clear();
    if json != typed {
        return Err(format!(
            "json and typed answers differ:\n{json:?}\n{typed:?}"
        ));
    }
    Ok(())
}

/// One pass over a fresh server; the answer once checked against `expect`.
async fn run_form(scenario: &Value, form: Form) -> Result<pb::PreemptResponse, String> {
    use pb::preempt_request::Preemptor;
    // A scenario naming a version is answered by a server of that version; the others
    // hold for every version and meet the default server.
    let version: KubernetesVersion = match scenario["kubernetesVersion"].as_str() {
        Some(version) => version.parse()?,
        None => KubernetesVersion::default(),
    };
    let (server, mut client) = start_with(ServeConfig {
        feature_gates: FeatureGates::defaults(version),
        ..loopback_config()
    })
    .await;
    let items = scenario["cluster"]["items"]
        .as_array()
        .ok_or("cluster.items missing")?;
    for item in items {
        load(&mut client, item, form)
            .await
            .map_err(|e| format!("{form:?}: {e}"))?;
    }
    let response = client
        .preempt(pb::PreemptRequest {
            preemptor: Some(match form {
                Form::Json => Preemptor::PodJson(scenario["preemptor"].to_string()),
                Form::Typed => Preemptor::Pod(typed::pod(&scenario["preemptor"])),
            }),
            dry_run: true,
            explain: false,
            pdb_mode: pb::PdbMode::Unspecified.into(),
        })
        .await
        .map_err(|s| format!("preempt: {s}"))?
        .into_inner();
    let expect = &scenario["expect"];
    let check = || -> Result<(), String> {
        if response.epoch != server.epoch() {
            return Err(format!(
                "epoch {:?} != {:?}",
                response.epoch,
                server.epoch()
            ));
        }
        if response.kubernetes_version != version.as_str() {
            return Err(format!(
                "answered as kubernetes {:?}, want {version}",
                response.kubernetes_version
            ));
        }
        let want = format!("OUTCOME_{}", expect["outcome"].as_str().unwrap_or_default());
        let got = outcome(&response).as_str_name();
        if got != want {
            return Err(format!("outcome {got}, want {want}: {}", response.message));
        }
        match got {
            "OUTCOME_PREEMPT" => {
                let node = &response.nominated_node_name;
                if !string_set(&expect["nominatedNodeNameAnyOf"]).contains(node) {
                    return Err(format!(
                        "nominated {node:?}, want one of {}",
                        expect["nominatedNodeNameAnyOf"]
                    ));
                }
                let victims: BTreeSet<String> = names(&response.victims).into_iter().collect();
                let want_victims = string_set(&expect["victimsByNode"][node]);
                if victims != want_victims {
                    return Err(format!("victims {victims:?}, want {want_victims:?}"));
                }
                let clear: BTreeSet<String> = names(&response.nominated_pods_to_clear)
                    .into_iter()
                    .collect();
                let want_clear = string_set(&expect["nominatedPodsToClearByNode"][node]);
                if clear != want_clear {
                    return Err(format!("to clear {clear:?}, want {want_clear:?}"));
                }
            }
            "OUTCOME_FITS" => {
                if let Some(feasible) = expect.get("feasibleNodes") {
                    let got: BTreeSet<String> = response.feasible_nodes.iter().cloned().collect();
                    if got != string_set(feasible) {
                        return Err(format!("feasible nodes {got:?}, want {feasible}"));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    };
    let result = check().map_err(|e| format!("{form:?}: {e}"));
    server.shutdown().await.map_err(|e| e.to_string())?;
    result.map(|()| response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conformance_scenario_over_grpc() {
    let files = scenario_files();
    assert!(files.len() >= 150, "found only {} scenarios", files.len());
    let limit = Arc::new(Semaphore::new(CONCURRENCY));
    let mut tasks = tokio::task::JoinSet::new();
    for path in files.clone() {
        let limit = limit.clone();
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await.expect("semaphore");
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            (name, run_scenario(path).await)
        });
    }
    let mut failures = Vec::new();
    let mut passed = 0;
    let all = async {
        while let Some(joined) = tasks.join_next().await {
            match joined.expect("scenario task") {
                (_, Ok(())) => passed += 1,
                (name, Err(e)) => failures.push(format!("{name}: {e}")),
            }
        }
    };
    tokio::time::timeout(TEST_TIMEOUT, all)
        .await
        .expect("conformance scenarios timed out");
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    assert_eq!(passed, files.len());
}
