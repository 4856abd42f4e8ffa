//! The `preemptd simulate` binary: output form, every conformance scenario through the
//! real command line, YAML input, and clear errors for bad files.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_preemptd"))
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
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
    // docs/simulate.md shows this very output.
    let chapter = std::fs::read_to_string(repo("docs/simulate.md")).unwrap();
    let shown = chapter
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the chapter's JSON example");
    let shown: Value = serde_json::from_str(shown).expect("the example is JSON");
    assert_eq!(out, shown);
}

#[test]
fn every_conformance_scenario_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in [
        "tests/conformance",
        "tests/conformance/random",
        "tests/conformance-by-version",
    ] {
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
        // A scenario naming its version is answered as that version, the others as the
        // default one.
        let (code, out, stderr) = match scenario["kubernetesVersion"].as_str() {
            Some(version) => {
                let (code, stdout, stderr) =
                    simulate_with(&cluster, &pod, &["--kubernetes-version", version]);
                let out = serde_json::from_str(&stdout).unwrap_or(Value::Null);
                let version_shown = out["kubernetesVersion"] == version;
                (if version_shown { code } else { -2 }, out, stderr)
            }
            None => simulate(&cluster, &pod),
        };
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
            "bad.json: items[3].spec.containers[0].resources.requests[cpu]: invalid quantity \"12x\""
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

/// Runs `simulate` with extra flags; exit code, stdout and stderr come back.
fn simulate_with(cluster: &Path, pod: &Path, flags: &[&str]) -> (i32, String, String) {
    let out = bin()
        .args(["simulate", "--cluster"])
        .arg(cluster)
        .arg("--pod")
        .arg(pod)
        .args(flags)
        .output()
        .expect("run preemptd");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Parses `text` with protobuf's proto3 JSON mapping (unknown fields and enum names
/// refused), as any protobuf library would read the output.
fn parse_preempt_response(text: &str) -> preemptd::server::pb::PreemptResponse {
    let pool = prost_reflect::DescriptorPool::decode(preemptd::server::pb::FILE_DESCRIPTOR_SET)
        .expect("descriptor set");
    let descriptor = pool
        .get_message_by_name("preemptd.v1.PreemptResponse")
        .expect("PreemptResponse descriptor");
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let message = prost_reflect::DynamicMessage::deserialize(descriptor, &mut deserializer)
        .unwrap_or_else(|e| panic!("not proto3 JSON of PreemptResponse: {e}\n{text}"));
    deserializer.end().expect("one JSON value");
    message.transcode_to().expect("transcode")
}

#[test]
fn output_parses_back_as_a_preempt_response_with_and_without_explain() {
    use preemptd::server::pb::{Outcome, StatusCode};
    let (cluster, pod) = (repo("examples/cluster.json"), repo("examples/pod.json"));
    let (code, stdout, stderr) = simulate_with(&cluster, &pod, &[]);
    assert_eq!(code, 0, "{stderr}");
    let plain = parse_preempt_response(&stdout);
    assert_eq!(plain.outcome(), Outcome::Preempt);
    assert_eq!(plain.nominated_node_name, "node-b");
    let victims: Vec<_> = plain.victims.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(victims, ["batch-2"]);
    assert!(plain.diagnostics.is_empty());

    let (code, stdout, stderr) = simulate_with(&cluster, &pod, &["--explain"]);
    assert_eq!(code, 0, "{stderr}");
    let explained = parse_preempt_response(&stdout);
    assert_eq!(explained.outcome(), Outcome::Preempt);
    assert_eq!(explained.victims, plain.victims);
    let nodes: Vec<_> = explained
        .diagnostics
        .iter()
        .map(|d| d.node.as_str())
        .collect();
    assert_eq!(nodes.len(), 3, "{stdout}");
    for diagnostic in &explained.diagnostics {
        let filter = diagnostic.filter.as_ref().expect("filter status");
        assert_ne!(filter.code(), StatusCode::Unspecified, "{stdout}");
    }
    // The tainted node can never be a candidate: preemption cannot help there.
    let tainted = explained
        .diagnostics
        .iter()
        .find(|d| d.node == "node-c")
        .expect("node-c");
    assert_eq!(
        tainted.filter.as_ref().map(|f| f.code()),
        Some(StatusCode::UnschedulableAndUnresolvable)
    );
    assert!(!tainted.candidate);
    let raw: Value = serde_json::from_str(&stdout).expect("JSON");
    assert!(
        raw["diagnostics"][0]["filter"]["code"]
            .as_str()
            .is_some_and(|c| c.starts_with("STATUS_CODE_")),
        "{stdout}"
    );
}

const NODE_YAML: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable:\n    cpu: \"1\"\n    memory: 1Gi\n    pods: \"10\"\n";
const LOW_POD_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: low\n  namespace: default\n  uid: low\nspec:\n  nodeName: n1\n  priority: 1\n  containers:\n  - name: c\n    resources:\n      requests:\n        cpu: 800m\nstatus:\n  phase: Running\n";
const SERVICE_YAML: &str =
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n";
const HIGH_POD_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: high\n  namespace: default\n  uid: high\nspec:\n  priority: 100\n  containers:\n  - name: c\n    resources:\n      requests:\n        cpu: 500m\n";

/// `kubectl get all -o yaml`-style output: several documents, a List among them, and
/// kinds preemptd does not use.
fn mixed_cluster_yaml() -> String {
    let indented = |doc: &str| {
        doc.lines()
            .enumerate()
            .map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " }))
            .collect::<String>()
    };
    format!(
        "# a comment before the first document\n---\n{NODE_YAML}---\n{SERVICE_YAML}---\napiVersion: v1\nkind: List\nitems:\n{}{}---\n{SERVICE_YAML}---\n",
        indented(LOW_POD_YAML),
        indented("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"),
    )
}

#[test]
fn multi_document_yaml_is_read_and_unused_kinds_are_skipped_and_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    let pod = dir.path().join("pod.yaml");
    std::fs::write(&cluster, mixed_cluster_yaml()).unwrap();
    // The pod file may hold other kinds too.
    std::fs::write(&pod, format!("{SERVICE_YAML}---\n{HIGH_POD_YAML}")).unwrap();
    let (code, stdout, stderr) = simulate_with(&cluster, &pod, &[]);
    assert_eq!(code, 0, "{stderr}");
    let response = parse_preempt_response(&stdout);
    assert_eq!(
        response.outcome(),
        preemptd::server::pb::Outcome::Preempt,
        "{stdout}"
    );
    let victims: Vec<_> = response.victims.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(victims, ["low"]);
    let cluster_note = format!(
        "{}: skipped 3 objects of kinds preemptd does not use: Service (2), ConfigMap (1)",
        cluster.display()
    );
    assert_eq!(stderr.matches(&cluster_note).count(), 1, "{stderr}");
    let pod_note = format!(
        "{}: skipped 1 object of kinds preemptd does not use: Service (1)",
        pod.display()
    );
    assert_eq!(stderr.matches(&pod_note).count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
}

#[test]
fn strict_refuses_unused_kinds_and_errors_name_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    let pod = dir.path().join("pod.yaml");
    std::fs::write(&cluster, mixed_cluster_yaml()).unwrap();
    std::fs::write(&pod, HIGH_POD_YAML).unwrap();
    let (code, stdout, stderr) = simulate_with(&cluster, &pod, &["--strict"]);
    assert_eq!(code, 65, "{stdout}");
    assert!(
        stderr.contains(&format!(
            "{} (document 2): kind: unsupported kind \"Service\"",
            cluster.display()
        )),
        "{stderr}"
    );
    // Without --strict a bad field is still an error, named by document and item.
    std::fs::write(
        &cluster,
        mixed_cluster_yaml().replacen("cpu: 800m", "cpu: 12x", 1),
    )
    .unwrap();
    let (code, _, stderr) = simulate_with(&cluster, &pod, &[]);
    assert_eq!(code, 65);
    assert!(
        stderr.contains(&format!(
            "{} (document 3): items[0].spec.containers[0].resources.requests[cpu]: invalid quantity \"12x\"",
            cluster.display()
        )),
        "{stderr}"
    );
    // A pod file without exactly one Pod.
    std::fs::write(&pod, format!("{HIGH_POD_YAML}---\n{HIGH_POD_YAML}")).unwrap();
    std::fs::write(&cluster, NODE_YAML).unwrap();
    let (code, _, stderr) = simulate_with(&cluster, &pod, &[]);
    assert_eq!(code, 65);
    assert!(
        stderr.contains("expected one object of kind Pod or PodGroup, found Pod (2)"),
        "{stderr}"
    );
}

/// The example cluster with node-b (where the example preempts) labelled spot.
fn cluster_with_spot_node_b(dir: &Path) -> PathBuf {
    let mut cluster: Value =
        serde_json::from_str(&std::fs::read_to_string(repo("examples/cluster.json")).unwrap())
            .unwrap();
    let items = cluster["items"].as_array_mut().unwrap();
    let node_b = items
        .iter_mut()
        .find(|o| o["kind"] == "Node" && o["metadata"]["name"] == "node-b")
        .expect("node-b");
    node_b["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot".into();
    let path = dir.join("cluster.json");
    std::fs::write(&path, cluster.to_string()).unwrap();
    path
}

#[test]
fn policy_keeps_a_critical_pod_off_spot_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster_with_spot_node_b(dir.path());
    let pod = repo("examples/pod.json");
    let (code, out, err) = simulate_with(&cluster, &pod, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(parse_preempt_response(&out).nominated_node_name, "node-b");

    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "criticalPods:\n  priorityAtLeast: 1000\n").unwrap();
    let flags = ["--explain", "--policy", policy.to_str().unwrap()];
    let (code, out, err) = simulate_with(&cluster, &pod, &flags);
    assert_eq!(code, 0, "{err}");
    let response = parse_preempt_response(&out);
    assert_ne!(response.nominated_node_name, "node-b", "{out}");
    let node_b = response
        .diagnostics
        .iter()
        .find(|d| d.node == "node-b")
        .expect("node-b diagnostic");
    let filter = node_b.filter.as_ref().expect("filter status");
    assert_eq!(filter.plugin, "PlacementPolicy");
    assert_eq!(
        filter.reasons,
        ["node(s) were spot capacity, which critical pods avoid"]
    );
}

#[test]
fn a_bad_policy_file_exits_64_naming_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "pdbMode: sometimes\n").unwrap();
    let (code, _, err) = simulate_with(
        &repo("examples/cluster.json"),
        &repo("examples/pod.json"),
        &["--policy", policy.to_str().unwrap()],
    );
    assert_eq!(code, 64, "{err}");
    for word in ["--policy", "policy.yaml", "pdbMode", "\"sometimes\""] {
        assert!(err.contains(word), "{word:?} not in {err}");
    }
}

#[test]
fn a_pod_that_fits_is_placed_where_the_scheduler_would_bind_it() {
    // The example's checkout pod, shrunk to 100m: it fits on node-a and node-b, and
    // `placement` names the kube-scheduler's pick without --explain.
    let mut pod: Value =
        serde_json::from_str(&std::fs::read_to_string(repo("examples/pod.json")).unwrap()).unwrap();
    pod["spec"]["containers"][0]["resources"]["requests"] = serde_json::json!({"cpu": "100m"});
    let dir = std::env::temp_dir().join(format!("preemptd-place-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pod_path = dir.join("pod.json");
    std::fs::write(&pod_path, pod.to_string()).unwrap();
    let (code, out, stderr) = simulate(&repo("examples/cluster.json"), &pod_path);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["outcome"], "OUTCOME_FITS");
    let placement = &out["placement"];
    let node = placement["nodeName"].as_str().expect("placement node");
    assert!(
        out["feasibleNodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == node),
        "{out}"
    );
    assert_eq!(placement["nodeScores"][0]["nodeName"], node);
    assert_eq!(placement["nodeScores"][0]["total"], placement["score"]);
    assert_eq!(placement["feasibleNodes"], 2);
    assert_eq!(
        placement["nodeScores"][0]["plugins"]
            .as_array()
            .map(Vec::len),
        Some(7)
    );
}
