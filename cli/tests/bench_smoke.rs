//! `preemptd bench` through the real binary on a tiny cluster: it finishes and its last
//! stdout line is one JSON object with every required figure. Timings are never asserted
//! (benchmarks are never timed assertions), only that they were measured.

mod support;

use std::process::Command;

use serde_json::Value;

#[test]
fn tiny_bench_prints_the_figures_as_json_on_the_last_line() {
    let svg = tempfile::NamedTempFile::new().expect("temp file");
    let out = Command::new(env!("CARGO_BIN_EXE_preemptd"))
        .args([
            "bench",
            "--nodes",
            "50",
            "--pods-per-node",
            "5",
            "--preempts",
            "50",
            "--updates",
            "200",
            "--watchers",
            "5",
            "--watch-rate",
            "50",
            "--watch-seconds",
            "0.5",
            "--watch-runs",
            "2",
            "--duration",
            "30",
            "--svg",
        ])
        .arg(svg.path())
        .output()
        .expect("run preemptd bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let last = stdout.lines().last().expect("some output");
    let json: Value = serde_json::from_str(last).expect("last line is JSON");
    assert!(
        stdout.lines().count() > 1,
        "human-readable lines come first"
    );
    assert_eq!(json["nodes"], 50);
    assert_eq!(json["preempt_count"], 50);
    assert_eq!(json["preempt_affinity_count"], 50);
    assert_eq!(json["watch_missed"], 0);
    for key in [
        "pods",
        "preempt_p50_ms",
        "preempt_p90_ms",
        "preempt_p99_ms",
        "preempt_max_ms",
        "preempt_per_s",
        "preempt_affinity_p99_ms",
        "update_per_s",
        "update_p99_ms",
        "sync_objects_per_s",
    ] {
        let value = json[key].as_f64().unwrap_or(-1.0);
        assert!(value > 0.0, "{key} = {} in {last}", json[key]);
    }
    for key in [
        "rss_bytes_per_pod",
        "rss_bytes_per_node",
        "watch_lag_p99_ms",
        "watch_stalled_lag_p99_ms",
    ] {
        assert!(
            json[key].as_f64().is_some_and(|v| v >= 0.0),
            "{key} in {last}"
        );
    }
    // The server is a process of its own: its CPU per operation is read apart from the
    // bench's.
    for phase in ["sync", "preempt", "preempt_affinity", "update", "watch"] {
        for side in ["server", "bench"] {
            let key = format!("{phase}_{side}_cpu_us");
            assert!(
                json[&key].as_f64().is_some_and(|v| v >= 0.0),
                "{key} in {last}"
            );
        }
    }
    for key in ["watch_runs_p99_ms", "watch_stalled_runs_p99_ms"] {
        assert_eq!(
            json[key].as_array().map(Vec::len),
            Some(2),
            "{key} in {last}"
        );
    }
    assert_eq!(json["rss_source"], "process");
    assert!(json["rss_after_load_bytes"].as_u64().unwrap_or(0) > 0);
    let chart = std::fs::read_to_string(svg.path()).expect("chart written");
    assert!(chart.starts_with("<svg") && chart.contains("<polyline"));
}

#[test]
fn non_loopback_targets_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_preemptd"))
        .args(["bench", "--target", "10.1.2.3:50051"])
        .output()
        .expect("run preemptd bench");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loopback"), "{stderr}");
}

#[test]
fn tiny_extender_bench_measures_every_verb() {
    let out = Command::new(env!("CARGO_BIN_EXE_preemptd"))
        .args([
            "bench",
            "--extender",
            "--nodes",
            "60",
            "--pods-per-node",
            "5",
            "--extender-requests",
            "20",
            "--extender-candidates",
            "10",
            "--duration",
            "30",
        ])
        .output()
        .expect("run preemptd bench --extender");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let last = stdout.lines().last().expect("some output");
    let json: Value = serde_json::from_str(last).expect("last line is JSON");
    let run = &json[0]["extender"];
    assert_eq!(run["nodes"], 60, "{last}");
    assert_eq!(run["candidates"], 10, "{last}");
    for verb in ["filter", "prioritize", "preempt"] {
        assert_eq!(run[verb]["count"], 20, "{verb} in {last}");
        assert!(
            run[verb]["p99_ms"].as_f64().is_some_and(|v| v > 0.0),
            "{verb} in {last}"
        );
    }
}

#[test]
fn a_target_that_holds_cluster_state_is_refused_without_force() {
    use preemptd::server::pb;
    let grpc = support::free_port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_preemptd"))
        .args([
            "serve",
            "--listen",
            &grpc.to_string(),
            "--metrics-listen",
            "off",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn server");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // The server holds one node.
    let loaded = runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut client = loop {
            match pb::preemption_client::PreemptionClient::connect(format!("http://{grpc}")).await
            {
                Ok(client) => break client,
                Err(error) if tokio::time::Instant::now() > deadline => {
                    return Err(format!("server never came up: {error}"));
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
            }
        };
        client
            .update_node(pb::UpdateNodeRequest {
                change: Some(pb::update_node_request::Change::UpsertJson(
                    r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"1","pods":"10"}}}"#
                        .to_string(),
                )),
            })
            .await
            .map(|_| ())
            .map_err(|status| status.to_string())
    });
    let bench = |target: String| {
        Command::new(env!("CARGO_BIN_EXE_preemptd"))
            .args([
                "bench",
                "--target",
                &target,
                "--nodes",
                "5",
                "--pods-per-node",
                "2",
            ])
            .output()
            .expect("run preemptd bench")
    };
    let by_ip = bench(grpc.to_string());
    let by_name = bench(format!("localhost:{}", grpc.port()));
    let _ = server.kill();
    let _ = server.wait();
    loaded.expect("load one node");
    for out in [by_ip, by_name] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("already holds cluster state") && stderr.contains("--force"),
            "{stderr}"
        );
        // Refused before anything was loaded.
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("sync"),
            "{stderr}"
        );
    }
}
