//! Every scenario of `tests/conformance-gangs/`: a PodGroup preemptor, with the answer
//! upstream kube-scheduler v1.37.2 gives with GenericWorkload=true (PodGroupPostFilter),
//! decided through the library as a dry-run `PreemptGroup`. They are the differential's
//! shrunk gang cases; the harness pins what upstream leaves to chance (score ties go to the
//! lowest node name, an `all`-mode victim's pods are read in (namespace, name) order), as
//! preemptd decides them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use preemptd::app::AppConfig;
use preemptd::engine::{FeatureGates, KubernetesVersion, Outcome};
use preemptd::model::decode;
use preemptd::model::decode::Object;
use preemptd::simulate::{decide_group, load_cluster};
use serde_json::Value;

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance-gangs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/conformance-gangs")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn pod_name(value: &Value) -> String {
    format!(
        "{}/{}",
        value["namespace"].as_str().unwrap_or(""),
        value["name"].as_str().unwrap_or("")
    )
}

fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let scenario: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let version: KubernetesVersion = scenario["kubernetesVersion"]
        .as_str()
        .unwrap_or_default()
        .parse()?;
    let gates = FeatureGates::parse(version, scenario["featureGates"].as_str().unwrap_or(""))
        .map_err(|e| format!("featureGates: {e}"))?;
    let config = AppConfig {
        feature_gates: gates,
        ..AppConfig::default()
    };
    let objects = decode::decode_list(&scenario["cluster"]).map_err(|e| format!("cluster: {e}"))?;
    let app = load_cluster(objects, &config).map_err(|e| format!("cluster: {e}"))?;
    let group = match decode::decode_object(&scenario["preemptor"]) {
        Ok(Object::PodGroup(group)) => group,
        Ok(_) => return Err("preemptor: not a PodGroup".to_string()),
        Err(e) => return Err(format!("preemptor: {e}")),
    };
    let decision = decide_group(&app, group, false).map_err(|e| format!("decide: {e}"))?;
    let expect = &scenario["expect"];
    let outcome = match decision.outcome {
        Outcome::Preempt => "PREEMPT",
        Outcome::Fits => "FITS",
        Outcome::NotEligible => "NOT_ELIGIBLE",
        Outcome::NoCandidate => "NO_CANDIDATE",
    };
    if expect["outcome"] != outcome {
        return Err(format!(
            "outcome {outcome}, upstream {} ({})",
            expect["outcome"], decision.message
        ));
    }
    let victims: BTreeSet<String> = decision
        .victims
        .iter()
        .map(|v| format!("{}/{}", v.namespace, v.name))
        .collect();
    let expected: BTreeSet<String> = expect["victims"]
        .as_array()
        .into_iter()
        .flatten()
        .map(pod_name)
        .collect();
    if victims != expected {
        return Err(format!("victims {victims:?}, upstream {expected:?}"));
    }
    let nominations: BTreeSet<(String, String)> = decision
        .nominations
        .iter()
        .map(|(pod, node)| (format!("{}/{}", pod.namespace, pod.name), node.to_string()))
        .collect();
    let expected: BTreeSet<(String, String)> = expect["nominations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            (
                pod_name(&n["pod"]),
                n["nodeName"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    if nominations != expected {
        return Err(format!(
            "nominations {nominations:?}, upstream {expected:?}"
        ));
    }
    let violations = expect["pdbViolations"].as_i64().unwrap_or(0);
    if i64::from(decision.pdb_violations) != violations {
        return Err(format!(
            "pdbViolations {}, upstream {violations}",
            decision.pdb_violations
        ));
    }
    Ok(())
}

#[test]
fn every_gang_scenario_gets_upstreams_answer() {
    let files = scenario_files();
    assert!(
        files.len() >= 10,
        "expected the gang scenarios, found {}",
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
