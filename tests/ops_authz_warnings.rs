//! The startup log warns about `--authz` entries that can never match: client
//! certificate names (`dns`, `uri`, `cn`) on a server that asks for no client
//! certificate (no `--tls-client-ca`).
//!
//! Its own test binary: the tracing subscriber is global and set once per process.

mod grpc_support;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use grpc_support::*;
use preemptd::server::ServeConfig;
use preemptd::server::authz::AuthzPolicy;

/// Every log line the process writes, as JSON.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log lock").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn install() -> Captured {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        captured
    }

    /// The warnings logged so far that say certificate entries can never match.
    fn never_match_warnings(&self) -> Vec<serde_json::Value> {
        let bytes = self.0.lock().expect("log lock").clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|line| line["level"] == "WARN")
            .filter(|line| {
                line["fields"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("can never match"))
            })
            .collect()
    }

    fn clear(&self) {
        self.0.lock().expect("log lock").clear();
    }
}

fn policy(dir: &Path, yaml: &str) -> Arc<AuthzPolicy> {
    Arc::new(AuthzPolicy::from_yaml(yaml, dir).expect("policy"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_entries_without_a_client_ca_are_warned_about_at_start() {
    let captured = Captured::install();
    let dir = tempfile::tempdir().expect("tempdir");
    let with_names = policy(
        dir.path(),
        "clients:\n  - cn: preemptd-admin\n    role: admin\n  - dns: scheduler.svc\n    role: writer\n",
    );
    let server = preemptd::server::start(ServeConfig {
        authz: Some(with_names),
        ..loopback_config()
    })
    .await
    .expect("start");
    // `start` logs its security settings before it returns.
    let warnings = captured.never_match_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["fields"]["tls"], false, "{warnings:?}");
    server.shutdown().await.expect("shutdown");

    // Tokens alone need no client CA: no such warning.
    captured.clear();
    std::fs::write(dir.path().join("token"), "secret\n").expect("token");
    let tokens_only = policy(
        dir.path(),
        "clients:\n  - token_file: token\n    role: reader\n",
    );
    let server = preemptd::server::start(ServeConfig {
        authz: Some(tokens_only),
        ..loopback_config()
    })
    .await
    .expect("start");
    assert!(captured.never_match_warnings().is_empty());
    server.shutdown().await.expect("shutdown");
}
