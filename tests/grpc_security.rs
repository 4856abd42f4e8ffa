//! TLS, mTLS, certificate reload and roles, end to end: real gRPC over loopback with
//! certificates made by rcgen for each test.
//!
//! Its own test binary: the metrics recorder is process-wide.

mod grpc_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use grpc_support::*;
use preemptd::server::authz::AuthzPolicy;
use preemptd::server::pb;
use preemptd::server::pb::preemption_client::PreemptionClient;
use preemptd::server::tls::TlsSettings;
use preemptd::server::{RunningServer, ServeConfig};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use rustls_pki_types::pem::PemObject as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tonic::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic_health::pb::health_client::HealthClient;

/// A certificate authority that signs server and client certificates.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate and its key, PEM.
struct Leaf {
    cert: String,
    key: String,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("ca key");
        let cert = params.self_signed(&key).expect("ca cert");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate for `localhost` and 127.0.0.1.
    fn server(&self) -> Leaf {
        self.leaf(
            vec![
                SanType::DnsName("localhost".try_into().expect("dns")),
                SanType::IpAddress([127, 0, 0, 1].into()),
            ],
            "preemptd",
        )
    }

    /// A client certificate with a DNS name, a URI, or just a common name.
    fn client(&self, dns: Option<&str>, uri: Option<&str>, cn: &str) -> Leaf {
        let mut names = Vec::new();
        if let Some(dns) = dns {
            names.push(SanType::DnsName(dns.try_into().expect("dns")));
        }
        if let Some(uri) = uri {
            names.push(SanType::URI(uri.try_into().expect("uri")));
        }
        self.leaf(names, cn)
    }

    fn leaf(&self, names: Vec<SanType>, cn: &str) -> Leaf {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("leaf params");
        params.subject_alt_names = names;
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign leaf");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// The server's TLS files in a temporary directory.
struct TlsFiles {
    dir: tempfile::TempDir,
}

impl TlsFiles {
    fn new(server: &Leaf, client_ca: Option<&Ca>) -> TlsFiles {
        let files = TlsFiles {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        files.write(server);
        if let Some(ca) = client_ca {
            std::fs::write(files.path("ca.crt"), &ca.pem).expect("write ca");
        }
        files
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Replaces the certificate and key, each by a rename (as the kubelet swaps a
    /// Secret's files).
    fn write(&self, server: &Leaf) {
        for (name, text) in [("tls.key", &server.key), ("tls.crt", &server.cert)] {
            let staged = self.path(&format!(".{name}.new"));
            std::fs::write(&staged, text).expect("write staged");
            std::fs::rename(&staged, self.path(name)).expect("rename");
        }
    }

    fn settings(&self, mtls: bool) -> TlsSettings {
        TlsSettings {
            client_ca: mtls.then(|| self.path("ca.crt")),
            reload_interval: Duration::from_millis(50),
            ..TlsSettings::new(self.path("tls.crt"), self.path("tls.key"))
        }
    }
}

async fn start_server(config: ServeConfig) -> RunningServer {
    preemptd::server::start(config).await.expect("start server")
}

/// A TLS channel trusting `ca`, presenting `identity` if any.
async fn tls_channel(
    server: &RunningServer,
    ca: &Ca,
    identity: Option<&Leaf>,
) -> Result<Channel, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&ca.pem))
        .domain_name("localhost");
    if let Some(leaf) = identity {
        tls = tls.identity(Identity::from_pem(&leaf.cert, &leaf.key));
    }
    Endpoint::from_shared(format!("https://{}", server.local_addr()))
        .expect("endpoint")
        .tls_config(tls)
        .expect("tls config")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
}

async fn tls_client(server: &RunningServer, ca: &Ca, identity: Option<&Leaf>) -> Client {
    PreemptionClient::new(tls_channel(server, ca, identity).await.expect("connect"))
}

/// A health check over `channel`: the whole round trip, handshake included.
async fn health(channel: Channel) -> Result<(), tonic::Status> {
    HealthClient::new(channel)
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .map(drop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_grpc_and_refuses_plaintext() {
    let ca = Ca::new("server ca");
    let files = TlsFiles::new(&ca.server(), None);
    let server = start_server(ServeConfig {
        tls: Some(files.settings(false)),
        ..loopback_config()
    })
    .await;

    let mut client = tls_client(&server, &ca, None).await;
    upsert_node(&mut client, node("n1", "4")).await;
    assert!(list(&mut client).await.nominations.is_empty());

    // A plaintext client cannot talk to the TLS port.
    let plaintext = Endpoint::from_shared(format!("http://{}", server.local_addr()))
        .expect("endpoint")
        .connect()
        .await;
    if let Ok(channel) = plaintext {
        assert!(health(channel).await.is_err());
    }
    // Nor a client that trusts another CA.
    let other = Ca::new("other ca");
    match tls_channel(&server, &other, None).await {
        Err(_) => {}
        Ok(channel) => assert!(health(channel).await.is_err()),
    }
}

/// Whether a client with `identity` can call the server, handshake and all.
async fn can_call(server: &RunningServer, ca: &Ca, identity: Option<&Leaf>) -> bool {
    match tls_channel(server, ca, identity).await {
        Err(_) => false,
        Ok(channel) => health(channel).await.is_ok(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_refuses_clients_without_a_certificate_from_the_client_ca() {
    let ca = Ca::new("cluster ca");
    let files = TlsFiles::new(&ca.server(), Some(&ca));
    let server = start_server(ServeConfig {
        tls: Some(files.settings(true)),
        ..loopback_config()
    })
    .await;

    let good = ca.client(Some("scheduler.kube-system.svc"), None, "scheduler");
    assert!(can_call(&server, &ca, Some(&good)).await);
    assert!(!can_call(&server, &ca, None).await, "no client certificate");
    let stranger = Ca::new("another ca").client(Some("scheduler.kube-system.svc"), None, "x");
    assert!(
        !can_call(&server, &ca, Some(&stranger)).await,
        "a certificate from another ca"
    );
}

/// The certificate the server presents to a new connection.
async fn presented_certificate(server: &RunningServer, trusted: &[&Ca]) -> Vec<u8> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in trusted {
        roots.add_parsable_certificates(
            rustls_pki_types::CertificateDer::pem_slice_iter(ca.pem.as_bytes()).flatten(),
        );
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    tls.get_ref().1.peer_certificates().expect("certificates")[0].to_vec()
}

fn der(pem: &str) -> Vec<u8> {
    rustls_pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .expect("pem")
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_certificate_is_served_to_new_connections() {
    let old_ca = Ca::new("old ca");
    let first = old_ca.server();
    let files = TlsFiles::new(&first, None);
    let server = start_server(ServeConfig {
        tls: Some(files.settings(false)),
        ..loopback_config()
    })
    .await;
    assert_eq!(
        presented_certificate(&server, &[&old_ca]).await,
        der(&first.cert)
    );
    // A connection open before the rotation keeps working after it.
    let mut open = tls_client(&server, &old_ca, None).await;

    let new_ca = Ca::new("new ca");
    let second = new_ca.server();
    files.write(&second);
    let rotated = tokio::time::timeout(TEST_TIMEOUT, async {
        loop {
            let seen = presented_certificate(&server, &[&old_ca, &new_ca]).await;
            if seen == der(&second.cert) {
                return;
            }
            assert_eq!(seen, der(&first.cert), "neither the old nor the new cert");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(rotated.is_ok(), "the new certificate was never served");
    // New clients trust the new CA only.
    assert!(can_call(&server, &new_ca, None).await);
    assert!(!can_call(&server, &old_ca, None).await);
    upsert_node(&mut open, node("n1", "4")).await;

    // A broken rotation (a key that does not parse) keeps the current certificate.
    std::fs::write(files.path("tls.key"), "not a key").expect("write");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        presented_certificate(&server, &[&old_ca, &new_ca]).await,
        der(&second.cert)
    );
}

const READER_URI: &str = "spiffe://cluster.local/ns/ops/sa/dashboard";
const WRITER_DNS: &str = "scheduler.kube-system.svc";
const ADMIN_CN: &str = "preemptd-admin";

fn policy(dir: &Path) -> Arc<AuthzPolicy> {
    std::fs::write(dir.join("reader-token"), "reader-secret\n").expect("token");
    let yaml = format!(
        "clients:
  - uri: {READER_URI}
    role: reader
  - dns: {WRITER_DNS}
    role: writer
  - cn: {ADMIN_CN}
    role: admin
  - name: dashboard
    token_file: reader-token
    role: reader
  - name: loader
    # sha256(\"writer-secret\")
    token_sha256: {}
    role: writer
",
        hex_sha256("writer-secret")
    );
    Arc::new(AuthzPolicy::from_yaml(&yaml, dir).expect("policy"))
}

fn hex_sha256(text: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, text.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn assert_denied<T: std::fmt::Debug>(result: Result<T, tonic::Status>, method: &str) {
    assert_refused(result, method, Code::PermissionDenied);
}

/// No credential, or one the policy does not know: "who are you?".
fn assert_unauthenticated<T: std::fmt::Debug>(result: Result<T, tonic::Status>, method: &str) {
    assert_refused(result, method, Code::Unauthenticated);
}

fn assert_refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, method: &str, code: Code) {
    let status = result.expect_err("refused");
    assert_eq!(status.code(), code, "{status:?}");
    assert!(
        status
            .message()
            .contains(&format!("preemptd.v1.Preemption/{method}")),
        "{status:?}"
    );
}

fn preempt_request(pod: pb::Pod, dry_run: bool) -> pb::PreemptRequest {
    pb::PreemptRequest {
        preemptor: Some(pb::preempt_request::Preemptor::Pod(pod)),
        dry_run,
        ..Default::default()
    }
}

fn update_node_request(node: pb::Node) -> pb::UpdateNodeRequest {
    pb::UpdateNodeRequest {
        change: Some(pb::update_node_request::Change::Upsert(node)),
    }
}

/// A node full of a low-priority pod, so a high-priority pod must preempt it.
async fn full_node(writer: &mut Client) {
    upsert_node(writer, node("n1", "4")).await;
    upsert_pod(writer, pod("low", 0, "4", "n1")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_allow_and_deny_each_method_and_a_denial_changes_nothing() {
    let ca = Ca::new("cluster ca");
    let files = TlsFiles::new(&ca.server(), Some(&ca));
    let server = start_server(ServeConfig {
        tls: Some(files.settings(true)),
        authz: Some(policy(files.dir.path())),
        ..loopback_config()
    })
    .await;
    let mut reader = tls_client(&server, &ca, Some(&ca.client(None, Some(READER_URI), "r"))).await;
    let mut writer = tls_client(&server, &ca, Some(&ca.client(Some(WRITER_DNS), None, "w"))).await;
    let mut admin = tls_client(&server, &ca, Some(&ca.client(None, None, ADMIN_CN))).await;
    let unknown_cert = ca.client(Some("stranger.example"), None, "stranger");
    let mut unknown = tls_client(&server, &ca, Some(&unknown_cert)).await;

    // Writes: writers and admins.
    assert_denied(
        reader
            .update_node(update_node_request(node("r1", "4")))
            .await,
        "UpdateNode",
    );
    assert_denied(
        unknown
            .update_node(update_node_request(node("u1", "4")))
            .await,
        "UpdateNode",
    );
    admin
        .update_node(update_node_request(node("a1", "1")))
        .await
        .expect("admin updates");
    full_node(&mut writer).await;
    let (items, call) = open_sync_feed(&reader);
    drop(items);
    assert_denied(call.await.expect("sync task"), "Sync");
    let (items, call) = open_sync_feed(&writer);
    items
        .send(sync_pod_item(pod("other", 0, "100m", "a1")))
        .await
        .expect("send");
    drop(items);
    call.await.expect("sync task").expect("writer syncs");

    // Reads: every known role; not an unknown identity.
    let high = pod("high", 100, "4", "");
    let dry = preempt(&mut reader, high.clone(), true).await;
    assert_eq!(names(&dry.victims), vec!["default/low"]);
    assert!(list(&mut reader).await.nominations.is_empty());
    assert_denied(
        unknown
            .list_nominations(pb::ListNominationsRequest {})
            .await,
        "ListNominations",
    );
    assert_denied(
        unknown.preempt(preempt_request(high.clone(), true)).await,
        "Preempt",
    );
    let watch = reader
        .watch_nominations(pb::WatchNominationsRequest::default())
        .await;
    assert!(watch.is_ok(), "{watch:?}");
    assert_denied(
        unknown
            .watch_nominations(pb::WatchNominationsRequest::default())
            .await,
        "WatchNominations",
    );
    let reader_channel = tls_channel(&server, &ca, Some(&ca.client(None, Some(READER_URI), "r")))
        .await
        .expect("connect");
    assert!(health(reader_channel).await.is_ok());
    let unknown_channel = tls_channel(&server, &ca, Some(&unknown_cert))
        .await
        .expect("connect");
    let status = health(unknown_channel).await.expect_err("denied");
    assert_eq!(status.code(), Code::PermissionDenied);
    assert!(status.message().contains("grpc.health.v1.Health/Check"));

    // A denied delete changed nothing: the victim is still there to preempt.
    let denied = reader
        .update_pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Delete(pb::ObjectRef {
                namespace: "default".into(),
                name: "low".into(),
                uid: None,
            })),
        })
        .await;
    assert_denied(denied, "UpdatePod");
    let again = preempt(&mut reader, high.clone(), true).await;
    assert_eq!(names(&again.victims), vec!["default/low"]);

    // A committing Preempt needs a writer; the reader's refusal nominates nothing.
    let revision = list(&mut reader).await.revision;
    let status = reader
        .preempt(preempt_request(high.clone(), false))
        .await
        .expect_err("denied");
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(
        status.message(),
        "preemptd.v1.Preemption/Preempt without dry_run needs role writer; the caller's role is reader"
    );
    let after = list(&mut reader).await;
    assert!(after.nominations.is_empty());
    assert_eq!(after.revision, revision);
    let committed = preempt(&mut writer, high, false).await;
    assert_eq!(names(&committed.victims), vec!["default/low"]);
    assert_eq!(list(&mut reader).await.nominations.len(), 1);
}

fn with_token<T>(message: T, token: Option<&str>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(token) = token {
        let value = format!("Bearer {token}").parse().expect("header value");
        request.metadata_mut().insert("authorization", value);
    }
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_carry_roles_over_plaintext() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, mut client) = start_with(ServeConfig {
        authz: Some(policy(dir.path())),
        ..loopback_config()
    })
    .await;
    let node = || update_node_request(node("n1", "4"));
    assert_unauthenticated(
        client.update_node(with_token(node(), None)).await,
        "UpdateNode",
    );
    assert_denied(
        client
            .update_node(with_token(node(), Some("reader-secret")))
            .await,
        "UpdateNode",
    );
    assert_unauthenticated(
        client.update_node(with_token(node(), Some("wrong"))).await,
        "UpdateNode",
    );
    assert_unauthenticated(
        client.update_node(with_token(node(), Some(""))).await,
        "UpdateNode",
    );
    client
        .update_node(with_token(node(), Some("writer-secret")))
        .await
        .expect("the writer token updates");
    let listed = client
        .list_nominations(with_token(
            pb::ListNominationsRequest {},
            Some("reader-secret"),
        ))
        .await
        .expect("the reader token lists");
    assert!(listed.into_inner().nominations.is_empty());
    assert_unauthenticated(
        client
            .list_nominations(with_token(pb::ListNominationsRequest {}, None))
            .await,
        "ListNominations",
    );
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_policy_every_client_is_a_writer() {
    let (_server, mut client) = start().await;
    full_node(&mut client).await;
    let committed = preempt(&mut client, pod("high", 100, "4", ""), false).await;
    assert_eq!(names(&committed.victims), vec!["default/low"]);
}

/// An HTTP/1.1 GET over TLS, trusting `ca`, presenting `identity`: the status line and
/// the body.
async fn https_get(
    addr: std::net::SocketAddr,
    path: &str,
    ca: &Ca,
    identity: &Leaf,
) -> (String, String) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(
        rustls_pki_types::CertificateDer::pem_slice_iter(ca.pem.as_bytes()).flatten(),
    );
    let chain = rustls_pki_types::CertificateDer::pem_slice_iter(identity.cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("chain");
    let key =
        rustls_pki_types::PrivateKeyDer::from_pem_slice(identity.key.as_bytes()).expect("key");
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_client_auth_cert(chain, key)
    .expect("client auth");
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("send");
    let mut response = Vec::new();
    // The server closes after its answer; some TLS stacks end without close_notify.
    let _ = tls.read_to_end(&mut response).await;
    let response = String::from_utf8(response).expect("utf-8");
    let (head, body) = response.split_once("\r\n\r\n").expect("http response");
    (
        head.lines().next().unwrap_or_default().to_string(),
        body.to_string(),
    )
}

fn denied_count(body: &str, method: &str, role: &str) -> f64 {
    body.lines()
        .filter(|line| line.starts_with("preemptd_authz_denied_total{"))
        .filter(|line| {
            line.contains(&format!("method=\"{method}\""))
                && line.contains(&format!("role=\"{role}\""))
        })
        .filter_map(|line| line.rsplit_once(' ')?.1.parse().ok())
        .next()
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_over_tls_and_count_denials() {
    let ca = Ca::new("cluster ca");
    let files = TlsFiles::new(&ca.server(), Some(&ca));
    let server = start_server(ServeConfig {
        tls: Some(files.settings(true)),
        authz: Some(policy(files.dir.path())),
        metrics_listen: Some("127.0.0.1:0".parse().expect("addr")),
        ..loopback_config()
    })
    .await;
    let metrics = server.metrics_addr().expect("metrics address");
    let scraper = ca.client(Some("prometheus.monitoring.svc"), None, "prometheus");
    let method = "preemptd.v1.Preemption/UpdatePriorityClass";

    let (status, before) = https_get(metrics, "/metrics", &ca, &scraper).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let reader_cert = ca.client(None, Some(READER_URI), "r");
    let mut reader = tls_client(&server, &ca, Some(&reader_cert)).await;
    let denied = reader
        .update_priority_class(pb::UpdatePriorityClassRequest {
            change: Some(pb::update_priority_class_request::Change::Upsert(
                pb::PriorityClass {
                    name: "high".into(),
                    value: 1000,
                    ..Default::default()
                },
            )),
        })
        .await;
    assert_denied(denied, "UpdatePriorityClass");
    let (_, after) = https_get(metrics, "/metrics", &ca, &scraper).await;
    assert_eq!(
        denied_count(&after, method, "reader"),
        denied_count(&before, method, "reader") + 1.0,
        "{after}"
    );

    // A plaintext scrape of the TLS port gets no metrics.
    let mut plain = tokio::net::TcpStream::connect(metrics)
        .await
        .expect("connect");
    plain
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .expect("send");
    let mut response = Vec::new();
    let _ = plain.read_to_end(&mut response).await;
    assert!(!String::from_utf8_lossy(&response).contains("preemptd_"));
}

fn handshake_failures(body: &str, port: &str, reason: &str) -> f64 {
    body.lines()
        .filter(|line| line.starts_with("preemptd_tls_handshake_failures_total{"))
        .filter(|line| {
            line.contains(&format!("port=\"{port}\""))
                && line.contains(&format!("reason=\"{reason}\""))
        })
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_mtls_handshakes_are_counted_by_port_and_reason() {
    let ca = Ca::new("cluster ca");
    let files = TlsFiles::new(&ca.server(), Some(&ca));
    let server = start_server(ServeConfig {
        tls: Some(files.settings(true)),
        metrics_listen: Some("127.0.0.1:0".parse().expect("addr")),
        ..loopback_config()
    })
    .await;
    let metrics = server.metrics_addr().expect("metrics address");
    let scraper = ca.client(Some("prometheus.monitoring.svc"), None, "prometheus");
    let failures = |reason: &'static str| {
        let scraper = &scraper;
        let ca = &ca;
        async move {
            let (_, body) = https_get(metrics, "/metrics", ca, scraper).await;
            handshake_failures(&body, "grpc", reason)
        }
    };
    let (unknown_ca_before, missing_before) = (
        failures("bad_certificate").await,
        failures("no_certificate").await,
    );

    let stranger = Ca::new("another ca").client(Some("scheduler.kube-system.svc"), None, "x");
    assert!(!can_call(&server, &ca, Some(&stranger)).await);
    assert!(!can_call(&server, &ca, None).await);

    // The server counts each refusal once its handshake task has seen it fail.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (unknown_ca, missing) = (
            failures("bad_certificate").await,
            failures("no_certificate").await,
        );
        if unknown_ca > unknown_ca_before && missing > missing_before {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "bad_certificate {unknown_ca_before} -> {unknown_ca}, no_certificate {missing_before} -> {missing}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
