//! Every scenario of `tests/conformance/` (upstream's own preemption tests, and random
//! scenarios answered by upstream kube-scheduler v1.35's code) decided through the library.
//! A scenario naming a `kubernetesVersion` (those of `tests/conformance-by-version/`) is
//! decided as that version; the others hold for every version and are decided as each.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use preemptd::app::AppConfig;
use preemptd::engine::{FeatureGates, KubernetesVersion, Outcome};
use preemptd::model::PodRef;
use preemptd::model::decode;
use preemptd::simulate::{decide, load_cluster};
use serde_json::Value;

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
        for entry in std::fs::read_dir(&dir).expect("conformance directory") {
            let path = entry.expect("directory entry").path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn names(refs: &[PodRef]) -> BTreeSet<String> {
    refs.iter()
        .map(|r| format!("{}/{}", r.namespace, r.name))
        .collect()
}

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks one scenario under each version it holds for; returns a description of the
/// mismatch, if any.
fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let scenario: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let versions = match scenario.get("kubernetesVersion") {
        Some(version) => vec![
            version
                .as_str()
                .unwrap_or_default()
                .parse::<KubernetesVersion>()?,
        ],
        None => KubernetesVersion::ALL.to_vec(),
    };
    for version in versions {
        check_as(&scenario, version).map_err(|e| format!("as kubernetes {version}: {e}"))?;
    }
    Ok(())
}

fn check_as(scenario: &Value, version: KubernetesVersion) -> Result<(), String> {
    let objects = decode::decode_list(&scenario["cluster"]).map_err(|e| format!("cluster: {e}"))?;
    let config = AppConfig {
        feature_gates: FeatureGates::defaults(version),
        ..AppConfig::default()
    };
    let app = load_cluster(objects, &config).map_err(|e| format!("cluster: {e}"))?;
    let pod = decode::decode_pod(&scenario["preemptor"]).map_err(|e| format!("preemptor: {e}"))?;
    let decision = decide(&app, pod, false).map_err(|e| format!("decide: {e}"))?;
    if decision.kubernetes_version != version {
        return Err(format!("decided as {}", decision.kubernetes_version));
    }
    let expect = &scenario["expect"];
    let outcome = match decision.outcome {
        Outcome::Preempt => "PREEMPT",
        Outcome::Fits => "FITS",
        Outcome::NotEligible => "NOT_ELIGIBLE",
        Outcome::NoCandidate => "NO_CANDIDATE",
    };
    let context = || {
        format!(
            "decision {outcome} on {:?}: {}",
            decision.nominated_node, decision.message
        )
    };
    if expect["outcome"] != outcome {
        return Err(format!("expected {}, got {}", expect["outcome"], context()));
    }
    match decision.outcome {
        Outcome::Preempt => {
            let node = decision.nominated_node.as_deref().unwrap_or("");
            if !strings(&expect["nominatedNodeNameAnyOf"]).contains(node) {
                return Err(format!(
                    "node {node} not in {}: {}",
                    expect["nominatedNodeNameAnyOf"],
                    context()
                ));
            }
            let victims = names(&decision.victims);
            let expected = strings(&expect["victimsByNode"][node]);
            if victims != expected {
                return Err(format!("victims {victims:?} != expected {expected:?}"));
            }
            let cleared = names(&decision.nominated_pods_to_clear);
            let expected = strings(&expect["nominatedPodsToClearByNode"][node]);
            if cleared != expected {
                return Err(format!(
                    "nominations to clear {cleared:?} != expected {expected:?}"
                ));
            }
        }
        Outcome::Fits => {
            if let Some(feasible) = expect.get("feasibleNodes") {
                let got: BTreeSet<String> = decision
                    .feasible_nodes
                    .iter()
                    .map(|n| n.to_string())
                    .collect();
                if got != strings(feasible) {
                    return Err(format!("feasible nodes {got:?} != expected {feasible}"));
                }
            }
            if let Some(expected) = expect.get("placementNode").and_then(Value::as_str) {
                let placement = decision.placement.as_ref();
                let node = placement.and_then(|p| p.node.as_deref()).unwrap_or("");
                if node != expected {
                    return Err(format!(
                        "placement {node} != expected {expected} (scores {:?})",
                        placement.map(|p| &p.scores)
                    ));
                }
            }
        }
        Outcome::NotEligible | Outcome::NoCandidate => {}
    }
    Ok(())
}

#[test]
fn every_conformance_scenario_passes_through_the_library() {
    let files = scenario_files();
    assert!(
        files.len() >= 150,
        "expected the shared scenarios, found {}",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| check(f).err().map(|e| format!("{}: {e}", f.display())))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
