//! `--kubernetes-version` and `--feature-gates` through the real binary: refused values exit
//! 64 naming the flag (and the environment variable), `simulate` answers as the version it
//! is given (flag or environment), a server shows its version in its startup log line and
//! in `preemptd_build_info`, and in Kubernetes mode it compares the API server's
//! `/version` with its own and warns when the minors differ or `/version` cannot be read.

mod support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::{free_port, preemptd, run, scrape};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// (arguments, environment, words the error must contain)
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn version_names_the_kubernetes_releases_and_the_default() {
    let (code, stdout, _) = run(preemptd().arg("--version"));
    assert_eq!(code, 0);
    assert_eq!(
        stdout.trim(),
        format!(
            "preemptd {} (answers as Kubernetes 1.35, 1.36, 1.37; default 1.37)",
            env!("CARGO_PKG_VERSION")
        )
    );
}

#[test]
fn refused_versions_and_gates_exit_64_naming_them() {
    let offline = ["--cluster", "cluster.json"];
    let serve = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--metrics-listen",
        "off",
    ];
    let cases: &[Case] = &[
        (
            &["serve", "--kubernetes-version", "1.34"],
            &[],
            &["--kubernetes-version", "1.34", "1.35, 1.36, 1.37"],
        ),
        (
            &["serve"],
            &[("PREEMPTD_KUBERNETES_VERSION", "v1.37")],
            &[
                "--kubernetes-version",
                "PREEMPTD_KUBERNETES_VERSION",
                "1.35, 1.36, 1.37",
            ],
        ),
        (
            &[
                "simulate",
                "--pod",
                "pod.json",
                "--kubernetes-version",
                "1.38",
            ],
            &[],
            &["--kubernetes-version", "1.35, 1.36, 1.37"],
        ),
        (
            &["plan-drain", "--nodes", "n1"],
            &[("PREEMPTD_KUBERNETES_VERSION", "latest")],
            &["PREEMPTD_KUBERNETES_VERSION", "1.35, 1.36, 1.37"],
        ),
        (
            &["--feature-gates", "NoSuchGate=true"],
            &[],
            &["--feature-gates", "NoSuchGate", "1.37"],
        ),
        (
            &[
                "--kubernetes-version",
                "1.37",
                "--feature-gates",
                "WorkloadAwarePreemption=false",
            ],
            &[],
            &[
                "--feature-gates",
                "WorkloadAwarePreemption",
                "1.37",
                "GenericWorkload",
            ],
        ),
        (
            &[
                "--kubernetes-version",
                "1.35",
                "--feature-gates",
                "CompositePodGroup=false",
            ],
            &[],
            &["CompositePodGroup", "1.35", "exists in 1.37"],
        ),
        (
            &[],
            &[("PREEMPTD_FEATURE_GATES", "DRAExtendedResource=false")],
            &[
                "--feature-gates",
                "PREEMPTD_FEATURE_GATES",
                "DRAExtendedResource",
                "locked",
                "1.37",
            ],
        ),
        (
            &[
                "--kubernetes-version",
                "1.36",
                "--feature-gates",
                "GenericWorkload=true",
            ],
            &[],
            &["GenericWorkload=true", "not supported yet", "1.36"],
        ),
        (
            &[],
            &[
                ("PREEMPTD_KUBERNETES_VERSION", "1.36"),
                ("PREEMPTD_FEATURE_GATES", "WorkloadAwarePreemption=true"),
            ],
            &["WorkloadAwarePreemption=true", "not supported yet", "1.36"],
        ),
        (
            &["--feature-gates", "SchedulerAsyncPreemption=maybe"],
            &[],
            &["--feature-gates", "SchedulerAsyncPreemption", "maybe"],
        ),
        (
            &["--feature-gates", "SchedulerAsyncPreemption"],
            &[],
            &["--feature-gates", "malformed"],
        ),
    ];
    for (args, envs, words) in cases {
        // Cases without a command run on each of the three.
        let commands: Vec<Vec<&str>> = if args.first().is_some_and(|a| !a.starts_with("--")) {
            vec![args.to_vec()]
        } else {
            let mut simulate = vec!["simulate", "--pod", "pod.json"];
            simulate.extend(offline);
            let mut plan_drain = vec!["plan-drain", "--nodes", "n1"];
            plan_drain.extend(offline);
            [serve.to_vec(), simulate, plan_drain]
                .into_iter()
                .map(|mut command| {
                    command.extend(args.iter());
                    command
                })
                .collect()
        };
        for command in commands {
            let mut command = command;
            if matches!(command[0], "simulate" | "plan-drain") && !command.contains(&"--cluster") {
                command.extend(offline);
            }
            let (code, _, err) = run(preemptd().args(&command).envs(envs.iter().copied()));
            assert_eq!(code, 64, "{command:?} {envs:?}: {err}");
            for word in *words {
                assert!(
                    err.contains(word),
                    "{command:?} {envs:?}: {word:?} not in {err}"
                );
            }
        }
    }
}

/// The scenario whose answer differs between versions: a victim covered by two budgets.
fn two_budget_files(dir: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(repo(
        "tests/conformance-by-version/version-1.37-victim-covered-by-two-budgets.json",
    ))
    .expect("scenario");
    let scenario: Value = serde_json::from_str(&text).expect("scenario json");
    let (cluster, pod) = (dir.join("cluster.json"), dir.join("pod.json"));
    std::fs::write(&cluster, scenario["cluster"].to_string()).expect("write cluster");
    std::fs::write(&pod, scenario["preemptor"].to_string()).expect("write pod");
    (cluster, pod)
}

#[test]
fn simulate_answers_as_the_version_of_the_flag_or_the_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cluster, pod) = two_budget_files(dir.path());
    let simulate = |flags: &[&str], envs: &[(&str, &str)]| -> Value {
        let (code, out, err) = run(preemptd()
            .args(["simulate", "--explain", "--cluster"])
            .arg(&cluster)
            .arg("--pod")
            .arg(&pod)
            .args(flags)
            .envs(envs.iter().copied()));
        assert_eq!(code, 0, "{flags:?} {envs:?}: {err}");
        serde_json::from_str(&out).expect("json output")
    };
    let notes = |out: &Value, node: &str| -> Vec<String> {
        out["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .find(|d| d["node"] == node)
            .map(|d| {
                d["notes"]
                    .as_array()
                    .expect("notes")
                    .iter()
                    .map(|n| n.as_str().expect("note").to_string())
                    .collect()
            })
            .expect("node's diagnostic")
    };

    // The default, 1.37: web-1's budgets walked in (namespace, name) order, a-gold first.
    let newest = simulate(&[], &[]);
    assert_eq!(newest["kubernetesVersion"], "1.37");
    assert_eq!(newest["nominatedNodeName"], "node-a");
    assert_eq!(newest["pdbViolations"], 1);
    let explained = notes(&newest, "node-a");
    assert_eq!(explained.len(), 1, "{explained:?}");
    assert!(
        explained[0].contains("default/web-1")
            && explained[0].contains("(namespace, name) order")
            && explained[0].contains("a-gold, b-web"),
        "{explained:?}"
    );

    for (flags, envs, version) in [
        (&["--kubernetes-version", "1.35"][..], &[][..], "1.35"),
        (
            &[][..],
            &[("PREEMPTD_KUBERNETES_VERSION", "1.36")][..],
            "1.36",
        ),
        (
            &["--kubernetes-version", "1.35"][..],
            &[("PREEMPTD_KUBERNETES_VERSION", "1.37")][..],
            "1.35",
        ),
    ] {
        let out = simulate(flags, envs);
        assert_eq!(out["kubernetesVersion"], version, "{flags:?} {envs:?}");
        // Every budget charged: node-a costs two violations, node-b one.
        assert_eq!(out["nominatedNodeName"], "node-b", "{flags:?} {envs:?}");
        assert_eq!(out["pdbViolations"], 1);
        assert!(notes(&out, "node-a").is_empty(), "{out}");
    }
}

/// The server's stderr, line by line, as it comes.
fn stderr_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().expect("piped stderr");
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    received
}

/// Waits (up to a generous deadline) for a line `wanted` accepts; every line read so far
/// comes back for the failure message.
fn wait_for_line(
    lines: &mpsc::Receiver<String>,
    wanted: impl Fn(&str) -> bool,
) -> Result<String, Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if wanted(&line) => return Ok(line),
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    Err(seen)
}

#[test]
fn a_server_shows_its_version_in_its_log_line_and_metrics() {
    let (grpc, metrics) = (free_port(), free_port());
    let mut server = preemptd()
        .arg("serve")
        .env("PREEMPTD_LISTEN", grpc.to_string())
        .env("PREEMPTD_METRICS_LISTEN", metrics.to_string())
        .env("PREEMPTD_LOG_FORMAT", "json")
        .env("PREEMPTD_KUBERNETES_VERSION", "1.36")
        .env("PREEMPTD_FEATURE_GATES", "SchedulerAsyncPreemption=false")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server");
    let lines = stderr_lines(&mut server);
    let serving = wait_for_line(&lines, |line| line.contains("\"serving\""));
    let scraped = serving.is_ok().then(|| scrape(metrics));
    let _ = server.kill();
    let _ = server.wait();

    let serving = serving.unwrap_or_else(|seen| panic!("no serving line: {seen:#?}"));
    let line: Value = serde_json::from_str(&serving).expect("json log line");
    let fields = line.get("fields").unwrap_or(&line);
    assert_eq!(fields["kubernetes_version"], "1.36", "{serving}");
    let gates = fields["feature_gates"]
        .as_str()
        .expect("feature_gates field");
    assert!(
        gates.contains("SchedulerAsyncPreemption=false")
            && gates.contains("DRAExtendedResource=true"),
        "{serving}"
    );
    let body = scraped.expect("scraped").expect("scrape metrics");
    let info = body
        .lines()
        .find(|l| l.starts_with("preemptd_build_info{"))
        .unwrap_or_else(|| panic!("no preemptd_build_info in {body}"));
    assert!(
        info.contains("kubernetes_version=\"1.36\"")
            && info.contains(concat!("version=\"", env!("CARGO_PKG_VERSION"), "\""))
            && info.ends_with(" 1"),
        "{info}"
    );
}

/// A stand-in API server over plain HTTP: `/version` answers with `version` (or fails
/// with 500 when `None`); everything else is 404, so the watches keep retrying.
fn fake_api_server(version: Option<&'static str>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            std::thread::spawn(move || answer(stream, version));
        }
    });
    addr
}

fn answer(mut stream: TcpStream, version: Option<&str>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // The rest of the head.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or_default();
    let (status, body) = match (path, version) {
        ("/version", Some(git_version)) => {
            let minor = git_version.split('.').nth(1).unwrap_or_default();
            (
                "200 OK",
                serde_json::json!({
                    "major": "1", "minor": minor, "gitVersion": git_version,
                    "gitCommit": "0", "gitTreeState": "clean", "buildDate": "2026-08-01T00:00:00Z",
                    "goVersion": "go1.26", "compiler": "gc", "platform": "linux/amd64",
                })
                .to_string(),
            )
        }
        ("/version", None) => ("500 Internal Server Error", "{}".to_string()),
        _ => (
            "404 Not Found",
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#
                .to_string(),
        ),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Serves in Kubernetes mode against `api` and returns the first log line `wanted`
/// accepts.
fn kubernetes_mode_line(api: SocketAddr, extra: &[&str], wanted: impl Fn(&str) -> bool) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig.yaml");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: test\n\
             clusters:\n  - name: test\n    cluster:\n      server: http://{api}\n\
             users:\n  - name: test\n    user: {{}}\n\
             contexts:\n  - name: test\n    context:\n      cluster: test\n      user: test\n"
        ),
    )
    .expect("write kubeconfig");
    let mut server = preemptd()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "off",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server");
    let lines = stderr_lines(&mut server);
    let found = wait_for_line(&lines, wanted);
    let _ = server.kill();
    let _ = server.wait();
    found.unwrap_or_else(|seen| panic!("no such line: {seen:#?}"))
}

#[test]
fn kubernetes_mode_warns_when_the_api_server_runs_another_minor() {
    let api = fake_api_server(Some("v1.35.4"));
    let warning = kubernetes_mode_line(api, &[], |line| line.contains("v1.35.4"));
    assert!(warning.contains("WARN"), "{warning}");
    assert!(
        warning.contains("answers as kubernetes 1.37") && warning.contains("--kubernetes-version"),
        "{warning}"
    );

    // The same minor: said, not warned about.
    let api = fake_api_server(Some("v1.36.3"));
    let line = kubernetes_mode_line(api, &["--kubernetes-version", "1.36"], |line| {
        line.contains("v1.36.3")
    });
    assert!(!line.contains("WARN") && line.contains("matches"), "{line}");
}

#[test]
fn kubernetes_mode_warns_and_keeps_serving_when_version_cannot_be_read() {
    let api = fake_api_server(None);
    let warning = kubernetes_mode_line(api, &["--kubernetes-version", "1.35"], |line| {
        line.contains("cannot read the api server's version")
    });
    assert!(
        warning.contains("WARN") && warning.contains("1.35"),
        "{warning}"
    );
}
