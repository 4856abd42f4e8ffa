//! The `preemptd plan-drain` binary on the example cluster of docs/drain-plans.md: the text
//! it prints, its proto3 JSON, and exit 64 naming the flag for bad usage.

use std::path::{Path, PathBuf};
use std::process::Command;

use preemptd::server::pb;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Runs `plan-drain` with `args`: exit code, stdout, stderr.
fn plan_drain(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_preemptd"))
        .arg("plan-drain")
        .args(args)
        .output()
        .expect("run preemptd");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn example_args(extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--cluster".to_string(),
        repo("examples/drain-cluster.yaml").display().to_string(),
        "--policy".to_string(),
        repo("examples/drain-policy.yaml").display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_example(extra: &[&str]) -> (i32, String, String) {
    let args = example_args(extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    plan_drain(&args)
}

/// Parses `text` with protobuf's proto3 JSON mapping (unknown fields and enum names
/// refused), as any protobuf library would read the output.
fn parse_plan(text: &str) -> pb::PlanDrainResponse {
    let pool = prost_reflect::DescriptorPool::decode(pb::FILE_DESCRIPTOR_SET).expect("descriptors");
    let descriptor = pool
        .get_message_by_name("preemptd.v1.PlanDrainResponse")
        .expect("PlanDrainResponse descriptor");
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let message = prost_reflect::DynamicMessage::deserialize(descriptor, &mut deserializer)
        .unwrap_or_else(|e| panic!("not proto3 JSON of PlanDrainResponse: {e}\n{text}"));
    deserializer.end().expect("one JSON value");
    message.transcode_to().expect("transcode")
}

#[test]
fn the_example_plan_is_printed_as_text_and_is_the_chapters() {
    let (code, out, err) = run_example(&["--nodes", "spot-1"]);
    assert_eq!(code, 0, "{err}");
    for line in [
        "      1000  payments/api-0  spot-1  fits on od-1 (critical)",
        "      1000  payments/api-1  spot-1  preempts on od-1: batch/report-1 (critical)",
        "       100  shop/web-1      spot-1  fits on spot-2",
        "  1: payments/api-0, shop/web-1",
        "  2: payments/api-1, shop/web-2",
        "blocked: shop/cache-0 (PodDisruptionBudget shop/cache allows no disruption)",
        "not a target: spot-3 (taint karpenter.sh/disrupted)",
    ] {
        assert!(out.lines().any(|l| l == line), "{line:?} not in\n{out}");
    }
    assert!(out.contains("shop/cache-0    spot-1  nowhere: 0/3 nodes are available"));
    // docs/drain-plans.md shows this very output.
    let chapter =
        std::fs::read_to_string(repo("docs/drain-plans.md")).expect("docs/drain-plans.md");
    let shown = chapter
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section's text example");
    assert_eq!(out, shown);
}

#[test]
fn json_output_is_a_plan_drain_response() {
    let (code, out, err) = run_example(&["--nodes", "spot-1", "--output", "json"]);
    assert_eq!(code, 0, "{err}");
    let plan = parse_plan(&out);
    let outcomes: Vec<(String, pb::DrainOutcome, String)> = plan
        .pods
        .iter()
        .map(|p| {
            let pod = p.pod.clone().unwrap_or_default();
            (pod.name, p.outcome(), p.node_name.clone())
        })
        .collect();
    let expected = [
        ("api-0", pb::DrainOutcome::Fits, "od-1"),
        ("api-1", pb::DrainOutcome::Preempt, "od-1"),
        ("web-1", pb::DrainOutcome::Fits, "spot-2"),
        ("web-2", pb::DrainOutcome::Fits, "spot-2"),
        ("cache-0", pb::DrainOutcome::Nowhere, ""),
    ]
    .map(|(pod, outcome, node)| (pod.to_string(), outcome, node.to_string()));
    assert_eq!(outcomes, expected);
    assert_eq!(plan.batches.len(), 2);
    assert_eq!(plan.pods[4].batch, 0);
    assert_eq!(
        plan.pods[4]
            .blocked_by_pdb
            .as_ref()
            .map(|b| b.name.as_str()),
        Some("cache")
    );
    assert_eq!(plan.noticed_nodes.len(), 1);
    // Every field is emitted, defaults included.
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(json["pods"][0]["victims"], serde_json::json!([]));
    assert_eq!(json["epoch"], "");
}

#[test]
fn without_the_policy_upstream_decides() {
    let cluster = repo("examples/drain-cluster.yaml");
    let (code, out, err) = plan_drain(&[
        "--cluster",
        cluster.to_str().expect("path"),
        "--nodes",
        "spot-1",
        "--output",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let plan = parse_plan(&out);
    // Nothing keeps the critical api-1 off spot: it fits on spot-2.
    let api1 = &plan.pods[1];
    assert_eq!(api1.pod.as_ref().map(|p| p.name.as_str()), Some("api-1"));
    assert_eq!(
        (api1.outcome(), api1.node_name.as_str(), api1.critical),
        (pb::DrainOutcome::Fits, "spot-2", false)
    );
    assert!(plan.noticed_nodes.is_empty());
}

#[test]
fn bad_usage_exits_64_naming_the_flag() {
    for (extra, words) in [
        (
            vec!["--nodes", "spot-1,ghost"],
            vec!["--nodes", "unknown node \"ghost\""],
        ),
        (vec!["--nodes", "spot-1,,od-1"], vec!["--nodes"]),
        (vec![], vec!["--nodes"]),
        (
            vec!["--nodes", "spot-1", "--output", "xml"],
            vec!["--output", "xml"],
        ),
    ] {
        let (code, out, err) = run_example(&extra);
        assert_eq!(code, 64, "{extra:?}: {err}");
        assert!(out.is_empty(), "{extra:?}: {out}");
        for word in words {
            assert!(err.contains(word), "{word:?} not in {err}");
        }
    }
    let (code, _, err) = plan_drain(&["--nodes", "a"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--cluster"), "{err}");
}

#[test]
fn an_unreadable_cluster_file_exits_66_naming_it() {
    let (code, _, err) = plan_drain(&["--cluster", "/nonexistent/cluster.yaml", "--nodes", "a"]);
    assert_eq!(code, 66, "{err}");
    assert!(err.contains("/nonexistent/cluster.yaml"), "{err}");
}
