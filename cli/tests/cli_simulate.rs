//! The `preemptd simulate` binary: output form, every conformance scenario through the
//! real command line, YAML input, and clear errors for bad files.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_preemptd"))
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn simulate(cluster: &Path, pod: &Path) -> (i32, Value, String) {
    let out = bin()
        .args(["simulate", "--cluster"])
        .arg(cluster)
        .arg("--pod")
        .arg(pod)
        .output()
        .expect("run preemptd");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, stderr)
}

#[test]
fn example_decision_is_printed_as_proto3_json() {
    let (code, out, stderr) = simulate(&repo("examples/cluster.json"), &repo("examples/pod.json"));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["outcome"], "OUTCOME_PREEMPT");
    assert_eq!(out["nominatedNodeName"], "node-b");
    assert_eq!(
        out["victims"],
        serde_json::json!([{"namespace": "shop", "name": "batch-2", "uid": "uid-batch-2"}])
    );
    assert_eq!(out["nominatedPodsToClear"], serde_json::json!([]));
    assert_eq!(out["pdbViolations"], 0);
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .starts_with("0/3 nodes are available: ")
    );
}

#[test]
fn every_conformance_scenario_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in ["tests/conformance", "tests/conformance/random"] {
        for entry in std::fs::read_dir(repo(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 150);
    let mut failures = Vec::new();
    for file in &files {
        let scenario: Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let cluster = dir.path().join("cluster.json");
        let pod = dir.path().join("pod.json");
        std::fs::write(&cluster, scenario["cluster"].to_string()).unwrap();
        std::fs::write(&pod, scenario["preemptor"].to_string()).unwrap();
        let (code, out, stderr) = simulate(&cluster, &pod);
        let expect = &scenario["expect"];
        let wanted = format!("OUTCOME_{}", expect["outcome"].as_str().unwrap());
        let ok = code == 0
            && out["outcome"] == wanted.as_str()
            && (wanted != "OUTCOME_PREEMPT" || {
                let node = out["nominatedNodeName"].as_str().unwrap_or("");
                let names = |v: &Value| {
                    let mut n: Vec<String> = v
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| {
                            format!(
                                "{}/{}",
                                r["namespace"].as_str().unwrap(),
                                r["name"].as_str().unwrap()
                            )
                        })
                        .collect();
                    n.sort();
                    n
                };
                let expected = |v: &Value| {
                    let mut n: Vec<String> = v
                        .as_array()
                        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                        .unwrap_or_default();
                    n.sort();
                    n
                };
                expect["nominatedNodeNameAnyOf"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n == node)
                    && names(&out["victims"]) == expected(&expect["victimsByNode"][node])
                    && names(&out["nominatedPodsToClear"])
                        == expected(&expect["nominatedPodsToClearByNode"][node])
            });
        if !ok {
            failures.push(format!("{}: exit {code}, {out}, {stderr}", file.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn yaml_input_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    let pod = dir.path().join("pod.yaml");
    std::fs::write(
        &cluster,
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n1\n  status:\n    allocatable:\n      cpu: \"1\"\n      memory: 1Gi\n      pods: \"10\"\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: low\n    namespace: default\n    uid: low\n  spec:\n    nodeName: n1\n    priority: 1\n    containers:\n    - name: c\n      resources:\n        requests:\n          cpu: 800m\n  status:\n    phase: Running\n",
    )
    .unwrap();
    std::fs::write(
        &pod,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: high\n  namespace: default\n  uid: high\nspec:\n  priority: 100\n  containers:\n  - name: c\n    resources:\n      requests:\n        cpu: 500m\n",
    )
    .unwrap();
    let (code, out, stderr) = simulate(&cluster, &pod);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["outcome"], "OUTCOME_PREEMPT");
    assert_eq!(out["victims"][0]["name"], "low");
}

#[test]
fn bad_files_exit_non_zero_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let pod = repo("examples/pod.json");
    // Missing file.
    let (code, _, stderr) = simulate(&dir.path().join("missing.json"), &pod);
    assert_eq!(code, 66);
    assert!(stderr.contains("missing.json: cannot read"), "{stderr}");
    // Bad quantity inside the list.
    let text = std::fs::read_to_string(repo("examples/cluster.json")).unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, text.replacen("\"1500m\"", "\"12x\"", 1)).unwrap();
    let (code, _, stderr) = simulate(&bad, &pod);
    assert_eq!(code, 65);
    assert!(
        stderr.contains(
            "bad.json: items[3].spec.containers[0].resources.requests.cpu: invalid quantity \"12x\""
        ),
        "{stderr}"
    );
    // Malformed JSON.
    std::fs::write(&bad, "{\"kind\": \"List\", \"items\": [").unwrap();
    let (code, _, stderr) = simulate(&bad, &pod);
    assert_eq!(code, 65);
    assert!(stderr.contains("bad.json"), "{stderr}");
    // A pod file that is not a pod.
    let (code, _, stderr) = simulate(
        &repo("examples/cluster.json"),
        &repo("examples/cluster.json"),
    );
    assert_eq!(code, 65);
    assert!(stderr.contains("kind"), "{stderr}");
}
