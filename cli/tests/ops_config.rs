//! The real binary's configuration surface: `--help` shows every flag with its
//! environment variable and default, invalid values exit 64 naming the setting, and a
//! server configured only through environment variables (the deployed example policy
//! included) serves gRPC, health and metrics; with TLS, mTLS and `--authz`, `preemptd
//! health` reaches it with its TLS flags.

mod support;

use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{free_port, preemptd, run, scrape};

#[test]
fn help_lists_every_flag_with_env_and_default() {
    let (code, out, err) = run(preemptd().args(["serve", "--help"]));
    assert_eq!(code, 0, "{err}");
    // Help wraps long lines: compare with whitespace runs collapsed.
    let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for (flag, env, default) in [
        ("--listen", "PREEMPTD_LISTEN", Some("127.0.0.1:50051")),
        (
            "--metrics-listen",
            "PREEMPTD_METRICS_LISTEN",
            Some("127.0.0.1:9464"),
        ),
        (
            "--max-message-bytes",
            "PREEMPTD_MAX_MESSAGE_BYTES",
            Some("16777216"),
        ),
        (
            "--history-capacity",
            "PREEMPTD_HISTORY_CAPACITY",
            Some("65536"),
        ),
        (
            "--subscriber-buffer",
            "PREEMPTD_SUBSCRIBER_BUFFER",
            Some("4096"),
        ),
        ("--log-format", "PREEMPTD_LOG_FORMAT", Some("text")),
        ("--rpc-timeout", "PREEMPTD_RPC_TIMEOUT", Some("10s")),
        (
            "--max-concurrent-preempts",
            "PREEMPTD_MAX_CONCURRENT_PREEMPTS",
            None,
        ),
        ("--max-watchers", "PREEMPTD_MAX_WATCHERS", Some("4096")),
        ("--io-threads", "PREEMPTD_IO_THREADS", None),
        (
            "--max-sync-streams",
            "PREEMPTD_MAX_SYNC_STREAMS",
            Some("64"),
        ),
        (
            "--keepalive-interval",
            "PREEMPTD_KEEPALIVE_INTERVAL",
            Some("30s"),
        ),
        (
            "--keepalive-timeout",
            "PREEMPTD_KEEPALIVE_TIMEOUT",
            Some("20s"),
        ),
        ("--shutdown-grace", "PREEMPTD_SHUTDOWN_GRACE", Some("10s")),
        ("--otlp-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", None),
        ("--otel-service-name", "OTEL_SERVICE_NAME", Some("preemptd")),
        ("--tls-cert", "PREEMPTD_TLS_CERT", None),
        ("--tls-key", "PREEMPTD_TLS_KEY", None),
        ("--tls-client-ca", "PREEMPTD_TLS_CLIENT_CA", None),
        (
            "--tls-reload-interval",
            "PREEMPTD_TLS_RELOAD_INTERVAL",
            Some("10s"),
        ),
        ("--authz", "PREEMPTD_AUTHZ", None),
        ("--policy", "PREEMPTD_POLICY", None),
    ] {
        assert!(out.contains(flag), "{flag} missing:\n{out}");
        assert!(
            out.contains(&format!("[env: {env}=]")),
            "{env} missing:\n{out}"
        );
        if let Some(default) = default {
            assert!(
                out.contains(&format!("[default: {default}]")),
                "default {default} of {flag} missing:\n{out}"
            );
        }
    }
    let (code, out, _) = run(preemptd().arg("--version"));
    assert_eq!(code, 0);
    assert!(out.starts_with("preemptd "), "{out}");
    let (code, out, _) = run(preemptd().args(["health", "--help"]));
    assert_eq!(code, 0);
    let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.contains("[env: PREEMPTD_HEALTH_ADDR=]"), "{out}");
    for env in [
        "PREEMPTD_HEALTH_TLS_CA",
        "PREEMPTD_HEALTH_TLS_CERT",
        "PREEMPTD_HEALTH_TLS_KEY",
        "PREEMPTD_HEALTH_TLS_SERVER_NAME",
        "PREEMPTD_HEALTH_TOKEN_FILE",
    ] {
        assert!(
            out.contains(&format!("[env: {env}=]")),
            "{env} missing:\n{out}"
        );
    }
}

/// (arguments, environment, words the error must contain)
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn invalid_values_exit_64_naming_the_setting() {
    let cases: &[Case] = &[
        (&["serve", "--listen", "nowhere"], &[], &["--listen"]),
        (
            &["serve"],
            &[("PREEMPTD_EXTENDER_LISTEN", "host-without-port")],
            &["--extender-listen", "PREEMPTD_EXTENDER_LISTEN"],
        ),
        (
            &["serve"],
            &[("PREEMPTD_LISTEN", "1.2.3.4")],
            &["--listen", "PREEMPTD_LISTEN"],
        ),
        (
            &["serve"],
            &[("PREEMPTD_MAX_CONCURRENT_PREEMPTS", "lots")],
            &[
                "--max-concurrent-preempts",
                "PREEMPTD_MAX_CONCURRENT_PREEMPTS",
            ],
        ),
        (
            &["serve", "--max-concurrent-preempts", "0"],
            &[],
            &["--max-concurrent-preempts", "at least 1"],
        ),
        (
            &["serve", "--max-sync-streams", "0"],
            &[],
            &["--max-sync-streams", "at least 1"],
        ),
        (
            &["serve"],
            &[("PREEMPTD_IO_THREADS", "0")],
            &["--io-threads", "PREEMPTD_IO_THREADS", "at least 1"],
        ),
        (
            &["serve", "--max-message-bytes", "16MB"],
            &[],
            &["--max-message-bytes"],
        ),
        (
            &["serve", "--log-format", "xml"],
            &[],
            &["--log-format", "xml"],
        ),
        (
            &["serve"],
            &[("PREEMPTD_LOG_FORMAT", "yaml")],
            &["--log-format", "PREEMPTD_LOG_FORMAT"],
        ),
        (
            &["serve", "--rpc-timeout", "5parsecs"],
            &[],
            &["--rpc-timeout", "unknown unit"],
        ),
        (
            &["serve", "--metrics-listen", "localhost"],
            &[],
            &["--metrics-listen"],
        ),
        (
            &["serve"],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")],
            &["--otlp-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", "scheme"],
        ),
        (
            &["serve", "--otlp-endpoint", "http://"],
            &[],
            &["--otlp-endpoint"],
        ),
        (&["serve", "--no-such-flag"], &[], &["--no-such-flag"]),
        (
            &["serve", "--tls-cert", "/nonexistent/tls.crt"],
            &[],
            &["--tls-key"],
        ),
        (
            &[
                "serve",
                "--tls-cert",
                "/nonexistent/tls.crt",
                "--tls-key",
                "/nonexistent/tls.key",
            ],
            &[],
            &["--tls-cert", "/nonexistent/tls.crt"],
        ),
        (
            &["serve"],
            &[("PREEMPTD_AUTHZ", "/nonexistent/authz.yaml")],
            &["--authz", "PREEMPTD_AUTHZ", "/nonexistent/authz.yaml"],
        ),
        (
            &["serve", "--tls-reload-interval", "0s"],
            &[],
            &["--tls-reload-interval"],
        ),
        (
            &["serve", "--policy", "/nonexistent/policy.yaml"],
            &[],
            &["--policy", "/nonexistent/policy.yaml", "cannot read"],
        ),
    ];
    // A policy with a role that does not exist: the entry is named.
    let dir = tempfile::tempdir().expect("tempdir");
    let authz = dir.path().join("authz.yaml");
    std::fs::write(
        &authz,
        "clients:\n  - dns: a\n    role: reader\n  - cn: b\n    role: root\n",
    )
    .expect("write policy");
    let (code, _, err) = run(preemptd().args(["serve", "--authz", authz.to_str().expect("path")]));
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("--authz") && err.contains("clients[1]"),
        "{err}"
    );
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "capacityLabels:\n  - {key: karpenter.sh/capacity-type, spot: spot}\n  - {key: 'no good', spot: spot}\n",
    )
    .expect("write policy");
    let policy = policy.to_str().expect("utf-8 path");
    let policy_cases: &[Case] = &[
        (
            &["serve", "--policy", policy],
            &[],
            &[
                "--policy",
                "policy.yaml",
                "capacityLabels[1].key",
                "not a valid label key",
            ],
        ),
        (
            &["serve"],
            &[("PREEMPTD_POLICY", policy)],
            &["--policy", "PREEMPTD_POLICY", "capacityLabels[1].key"],
        ),
    ];
    for (args, envs, expected) in cases.iter().chain(policy_cases) {
        let mut command = preemptd();
        command.args(*args).envs(envs.iter().copied());
        let (code, out, err) = run(&mut command);
        assert_eq!(code, 64, "{args:?} {envs:?}: {out}{err}");
        for word in *expected {
            assert!(
                err.contains(word),
                "{args:?} {envs:?}: {word:?} not in {err}"
            );
        }
    }
}

#[test]
fn env_configured_server_serves_health_and_metrics_then_stops_on_sigterm() {
    let (grpc, metrics) = (free_port(), free_port());
    let server = preemptd()
        .arg("serve")
        .env("PREEMPTD_LISTEN", grpc.to_string())
        .env("PREEMPTD_METRICS_LISTEN", metrics.to_string())
        .env("PREEMPTD_LOG_FORMAT", "json")
        .env("PREEMPTD_RPC_TIMEOUT", "off")
        .env("PREEMPTD_IO_THREADS", "2")
        .env(
            "PREEMPTD_POLICY",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../deploy/overlays/policy/policy.yaml"
            ),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server");

    let deadline = Instant::now() + Duration::from_secs(90);
    let mut healthy = false;
    while Instant::now() < deadline {
        let (code, out, _) =
            run(preemptd().args(["health", "--addr", &grpc.to_string(), "--timeout", "1s"]));
        if code == 0 {
            assert_eq!(out.trim(), "SERVING");
            healthy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(healthy, "server never became healthy");
    let body = scrape(metrics).expect("scrape");
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(body.contains("grpc_server_handled_total{grpc_service=\"grpc.health.v1.Health\",grpc_method=\"Check\",grpc_code=\"OK\"}"), "{body}");

    let pid = server.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let output = server.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // Without --authz every client is a writer, and the log says so.
    assert!(stderr.contains("every client is a writer"), "{stderr}");
    // JSON logs, one object per line.
    let first = stderr.lines().next().expect("a log line");
    let line: serde_json::Value = serde_json::from_str(first).expect("json log line");
    assert!(line.get("level").is_some(), "{first}");
    // The deployed example policy was read and is in force.
    assert!(
        stderr.contains("placement policy in force") && stderr.contains("\"pdb_mode\":\"prefer\""),
        "{stderr}"
    );

    // Nothing listens any more: health fails with 1.
    let (code, _, err) =
        run(preemptd().args(["health", "--addr", &grpc.to_string(), "--timeout", "500ms"]));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("preemptd: error:"), "{err}");
}

/// A CA, and files in `dir`: the server's certificate (`server.crt`/`.key`, for
/// `localhost`), a client certificate with DNS name `dns` (`client.crt`/`.key`), and the
/// CA (`ca.crt`).
fn write_certificates(dir: &std::path::Path, dns: &str) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "test ca");
    let ca_key = KeyPair::generate().expect("ca key");
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    std::fs::write(dir.join("ca.crt"), ca_cert.pem()).expect("write ca");
    let issuer = Issuer::new(ca_params, ca_key);
    for (name, san) in [("server", "localhost"), ("client", dns)] {
        let params = CertificateParams::new(vec![san.to_string()]).expect("params");
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &issuer).expect("sign");
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).expect("write cert");
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).expect("write key");
    }
}

#[test]
fn health_reaches_a_server_with_mtls_and_authz() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| dir.path().join(name).to_str().expect("path").to_string();
    write_certificates(dir.path(), "probe.preemptd.svc");
    std::fs::write(
        dir.path().join("authz.yaml"),
        "clients:\n  - dns: probe.preemptd.svc\n    role: reader\n",
    )
    .expect("write policy");
    let grpc = free_port();
    let mut server = preemptd()
        .args([
            "serve",
            "--listen",
            &grpc.to_string(),
            "--metrics-listen",
            "off",
        ])
        .args([
            "--tls-cert",
            &path("server.crt"),
            "--tls-key",
            &path("server.key"),
        ])
        .args([
            "--tls-client-ca",
            &path("ca.crt"),
            "--authz",
            &path("authz.yaml"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let health = |extra: &[&str]| {
        let mut command = preemptd();
        command
            .args(["health", "--addr", &grpc.to_string(), "--timeout", "2s"])
            .args([
                "--tls-ca",
                &path("ca.crt"),
                "--tls-server-name",
                "localhost",
            ])
            .args(extra);
        run(&mut command)
    };
    let with_cert = [
        "--tls-cert",
        &path("client.crt"),
        "--tls-key",
        &path("client.key"),
    ];
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut healthy = false;
    while Instant::now() < deadline {
        let (code, out, _) = health(&with_cert);
        if code == 0 {
            assert_eq!(out.trim(), "SERVING");
            healthy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // By host name, without --tls-server-name: the name is the one checked.
    let by_name = run(preemptd()
        .args([
            "health",
            "--addr",
            &format!("localhost:{}", grpc.port()),
            "--timeout",
            "2s",
            "--tls-ca",
            &path("ca.crt"),
        ])
        .args(with_cert));
    // Without a client certificate the handshake is refused; the server's own
    // certificate is signed by the CA but names no authorized identity.
    let without_cert = health(&[]);
    let unauthorized = health(&[
        "--tls-cert",
        &path("server.crt"),
        "--tls-key",
        &path("server.key"),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(healthy, "health never reached the server");
    assert_eq!(by_name.0, 0, "{by_name:?}");
    assert_eq!(without_cert.0, 1, "{without_cert:?}");
    assert_eq!(unauthorized.0, 1, "{unauthorized:?}");
    assert!(
        unauthorized.2.contains("PermissionDenied") || unauthorized.2.contains("permission"),
        "{unauthorized:?}"
    );
}

/// A kubeconfig whose cluster is `server` (an https URL), with a token user.
fn kubeconfig_for(server: SocketAddr) -> String {
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: test\n\
         clusters:\n  - name: test\n    cluster:\n      server: https://{server}\n      insecure-skip-tls-verify: true\n\
         users:\n  - name: test\n    user:\n      token: not-a-real-token\n\
         contexts:\n  - name: test\n    context:\n      cluster: test\n      user: test\n"
    )
}

/// Waits (polling, up to a generous deadline) for a TCP connection on `listener`: the
/// sign that a process used the kubeconfig naming it.
fn wait_for_connection(listener: &TcpListener, what: &str) {
    listener.set_nonblocking(true).expect("nonblocking");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match listener.accept() {
            Ok(_) => return,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    Instant::now() < deadline,
                    "{what}: no connection to the kubeconfig's server"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(error) => panic!("{what}: accept: {error}"),
        }
    }
}

#[test]
fn kubeconfig_without_a_path_reads_kubeconfig_then_the_home_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pod = dir.path().join("pod.json");
    std::fs::write(
        &pod,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c"}]}}"#,
    )
    .expect("write pod");
    let pod = pod.to_str().expect("utf-8 path");
    let commands: [&[&str]; 3] = [
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "off",
            "--kubeconfig",
        ],
        &["simulate", "--kubeconfig", "--pod", pod],
        &["plan-drain", "--nodes", "n1", "--kubeconfig"],
    ];
    for args in commands {
        // KUBECONFIG first, then ~/.kube/config: each names a server of its own.
        let from_env = TcpListener::bind("127.0.0.1:0").expect("bind");
        let env_file = dir.path().join("from-env.yaml");
        std::fs::write(
            &env_file,
            kubeconfig_for(from_env.local_addr().expect("addr")),
        )
        .expect("write kubeconfig");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".kube")).expect("mkdir");
        let from_home = TcpListener::bind("127.0.0.1:0").expect("bind");
        std::fs::write(
            home.join(".kube/config"),
            kubeconfig_for(from_home.local_addr().expect("addr")),
        )
        .expect("write kubeconfig");
        for (envs, listener) in [
            (
                vec![
                    ("KUBECONFIG", env_file.as_os_str()),
                    ("HOME", home.as_os_str()),
                ],
                &from_env,
            ),
            (vec![("HOME", home.as_os_str())], &from_home),
        ] {
            let mut child = preemptd()
                .args(args)
                .envs(envs.iter().copied())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn preemptd");
            wait_for_connection(listener, &format!("{args:?} {envs:?}"));
            let _ = child.kill();
            let output = child.wait_with_output().expect("wait");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                !stderr.contains("a value is required"),
                "{args:?}: {stderr}"
            );
        }
    }
}

#[test]
fn a_server_still_listing_is_alive_but_not_serving() {
    // The kubeconfig's API server accepts connections and never answers: the initial
    // list does not end, so health stays NOT_SERVING.
    let api = TcpListener::bind("127.0.0.1:0").expect("bind");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig.yaml");
    std::fs::write(&kubeconfig, kubeconfig_for(api.local_addr().expect("addr")))
        .expect("write kubeconfig");
    let grpc = free_port();
    let mut server = preemptd()
        .args([
            "serve",
            "--listen",
            &grpc.to_string(),
            "--metrics-listen",
            "off",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let health = |extra: &[&str]| {
        run(preemptd()
            .args(["health", "--addr", &grpc.to_string(), "--timeout", "2s"])
            .args(extra))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let live = loop {
        let live = health(&["--live"]);
        if live.0 == 0 || Instant::now() > deadline {
            break live;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let ready = health(&[]);
    let _ = server.kill();
    let _ = server.wait();
    drop(api);
    assert_eq!(live.0, 0, "{live:?}");
    assert_eq!(live.1.trim(), "NOT_SERVING", "{live:?}");
    assert_eq!(ready.0, 1, "{ready:?}");
    assert_eq!(ready.1.trim(), "NOT_SERVING", "{ready:?}");
    // Nothing answering is not alive.
    let (code, _, err) = health(&["--live"]);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn addresses_take_host_names() {
    let (grpc, metrics, extender) = (free_port(), free_port(), free_port());
    let named = |addr: SocketAddr| format!("localhost:{}", addr.port());
    let mut server = preemptd()
        .args(["serve", "--listen", &named(grpc)])
        .args(["--metrics-listen", &named(metrics)])
        .args(["--extender-listen", &named(extender)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server");
    let deadline = Instant::now() + Duration::from_secs(60);
    let served = loop {
        let health = run(preemptd().args(["health", "--addr", &named(grpc), "--timeout", "2s"]));
        if health.0 == 0 || Instant::now() > deadline {
            break health;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // localhost binds its IPv4 address.
    let scraped = scrape(metrics);
    let extender_open = std::net::TcpStream::connect(extender).is_ok();
    let _ = server.kill();
    let output = server.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(served.0, 0, "{served:?}\n{stderr}");
    assert_eq!(served.1.trim(), "SERVING");
    assert!(
        scraped.expect("scrape").starts_with("HTTP/1.1 200"),
        "{stderr}"
    );
    assert!(extender_open, "{stderr}");
}

/// Counts `needle` in `haystack`.
fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[test]
fn errors_say_each_thing_once() {
    // A refused connection: hyper's "tcp connect error" wraps an error of the same text.
    let closed = free_port();
    let (code, _, err) =
        run(preemptd().args(["health", "--addr", &closed.to_string(), "--timeout", "2s"]));
    assert_eq!(code, 1, "{err}");
    assert_eq!(count(&err, "tcp connect error"), 1, "{err}");
    assert_eq!(count(&err, "Connection refused"), 1, "{err}");

    // A missing kubeconfig: kube's message already carries the OS error.
    let (code, _, err) = run(preemptd().args([
        "plan-drain",
        "--nodes",
        "n1",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]));
    assert_ne!(code, 0, "{err}");
    assert_eq!(count(&err, "(os error 2)"), 1, "{err}");

    // A port in use: one line, not the log's and stderr's.
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let (code, _, err) =
        run(preemptd().args(["serve", "--listen", &addr, "--metrics-listen", "off"]));
    assert_eq!(code, 1, "{err}");
    assert_eq!(count(&err, "Address already in use"), 1, "{err}");

    // --tls-client-ca alone names both flags it needs.
    let (code, _, err) = run(preemptd().args(["serve", "--tls-client-ca", "/nonexistent/ca.crt"]));
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("--tls-cert") && err.contains("--tls-key"),
        "{err}"
    );

    // A file's content is not a usage error: no pointer to --help.
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "nonsense: [1]\n").expect("write");
    let bad = bad.to_str().expect("utf-8 path");
    for args in [
        vec!["serve", "--policy", bad],
        vec!["serve", "--authz", bad],
        vec!["simulate", "--cluster", bad, "--pod", bad, "--policy", bad],
        vec![
            "plan-drain",
            "--cluster",
            bad,
            "--nodes",
            "n1",
            "--policy",
            bad,
        ],
    ] {
        let (code, _, err) = run(preemptd().args(&args));
        assert_eq!(code, 64, "{args:?}: {err}");
        assert!(
            err.contains(bad) && err.contains("nonsense"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("--help"), "{args:?}: {err}");
        assert_eq!(count(&err, bad), 1, "{args:?}: {err}");
    }
}
