//! TLS for any TCP port of the server (gRPC, metrics, and the kube-scheduler extender):
//! rustls with ring, the certificate and key read from PEM files and reloaded when the
//! files change (cert-manager rotates a Secret's files in place), and with a client CA,
//! mutual TLS: a client without a certificate signed by it is refused at the handshake.
//!
//! [`TlsAcceptor`] is cheap to clone and always hands out the newest configuration;
//! [`TlsAcceptor::incoming`] wraps a `TcpListener` into a stream of finished handshakes
//! for tonic's `serve_with_incoming`, and [`TlsAcceptor::accept`] serves hand-written
//! listeners. Each connection carries its peer's [`PeerInfo`] (address and client
//! certificate names), which tonic puts into every request's extensions.
//!
//! A failed handshake (a client certificate from an unknown CA, none at all, a plaintext
//! client) is counted in `preemptd_tls_handshake_failures_total{port,reason}` and logged
//! at most once per [`FAILURE_LOG_INTERVAL`] per port, with the number left unlogged
//! since.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use parking_lot::RwLock;
use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;

/// How long a client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes finished but not yet taken by the server.
const ACCEPTED_BACKLOG: usize = 128;
/// At most one log line per port in this long about failed handshakes.
const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Where the PEM files are, and how often to look for new ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// The server's certificate chain (leaf first), e.g. a Secret's `tls.crt`.
    pub cert: PathBuf,
    /// The certificate's private key (PKCS#8, PKCS#1 or SEC1), e.g. `tls.key`.
    pub key: PathBuf,
    /// With it, clients must present a certificate signed by one of these CAs (mTLS).
    pub client_ca: Option<PathBuf>,
    /// How often the files are read again to pick up a rotation.
    pub reload_interval: Duration,
}

impl TlsSettings {
    /// Settings that serve the certificate and key at these paths.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        TlsSettings {
            cert: cert.into(),
            key: key.into(),
            client_ca: None,
            reload_interval: Duration::from_secs(10),
        }
    }
}

/// The names of a verified client certificate, read once per connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertIdentity {
    /// DNS subject alternative names.
    pub dns: Vec<String>,
    /// URI subject alternative names (SPIFFE ids are URIs).
    pub uris: Vec<String>,
    /// The subject's common name.
    pub common_name: Option<String>,
}

impl CertIdentity {
    /// Reads the names of a DER certificate; `None` when it cannot be parsed (rustls has
    /// verified it, so this does not happen with a client CA).
    pub fn from_der(der: &[u8]) -> Option<Self> {
        use x509_parser::extensions::GeneralName;
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let mut identity = CertIdentity {
            common_name: cert
                .subject()
                .iter_common_name()
                .find_map(|cn| cn.as_str().ok())
                .map(str::to_string),
            ..CertIdentity::default()
        };
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    GeneralName::DNSName(dns) => identity.dns.push(dns.to_string()),
                    GeneralName::URI(uri) => identity.uris.push(uri.to_string()),
                    _ => {}
                }
            }
        }
        Some(identity)
    }
}

impl std::fmt::Display for CertIdentity {
    /// `dns:a,uri:spiffe://b,cn:c`, for logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self
            .dns
            .iter()
            .map(|n| ("dns", n))
            .chain(self.uris.iter().map(|n| ("uri", n)))
            .chain(self.common_name.iter().map(|n| ("cn", n)));
        for (i, (kind, name)) in names.enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{kind}:{name}")?;
        }
        Ok(())
    }
}

/// Who is at the other end of a connection; tonic copies it into every request's
/// extensions.
#[derive(Clone, Debug, Default)]
pub struct PeerInfo {
    /// The client's address, when the transport knows it.
    pub remote_addr: Option<SocketAddr>,
    /// The client certificate's names (mTLS); `None` without one.
    pub certificate: Option<Arc<CertIdentity>>,
}

/// The files' bytes a configuration was built from, to notice a rotation.
#[derive(Clone, PartialEq, Eq)]
struct Loaded {
    cert: Vec<u8>,
    key: Vec<u8>,
    client_ca: Option<Vec<u8>>,
}

/// Accepts TLS connections with the newest configuration the files hold.
#[derive(Clone)]
pub struct TlsAcceptor {
    current: Arc<RwLock<Arc<ServerConfig>>>,
    settings: Arc<TlsSettings>,
    /// The port's name in metrics and logs (`grpc`, `metrics`, `extender`).
    port: &'static str,
    failures: Arc<parking_lot::Mutex<FailureLog>>,
}

/// When failed handshakes were last logged, and how many failed since.
#[derive(Default)]
struct FailureLog {
    logged_at: Option<std::time::Instant>,
    unlogged: u64,
}

/// Why a handshake failed, as the metric's `reason` label.
fn failure_reason(error: &io::Error) -> &'static str {
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(_)) => "bad_certificate",
        Some(rustls::Error::NoCertificatesPresented) => "no_certificate",
        Some(rustls::Error::InvalidMessage(_)) => "not_tls",
        Some(_) => "protocol",
        None if error.kind() == io::ErrorKind::TimedOut => "timeout",
        None => "io",
    }
}

impl std::fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsAcceptor")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path, what: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("{what}: read {}", path.display()))
}

fn read_files(settings: &TlsSettings) -> anyhow::Result<Loaded> {
    Ok(Loaded {
        cert: read(&settings.cert, "tls cert")?,
        key: read(&settings.key, "tls key")?,
        client_ca: settings
            .client_ca
            .as_deref()
            .map(|path| read(path, "tls client ca"))
            .transpose()?,
    })
}

fn certificates(
    pem: &[u8],
    what: &str,
    path: &Path,
) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{what}: {}", path.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{what}: no certificate in {}", path.display());
    }
    Ok(certs)
}

fn build_config(settings: &TlsSettings, files: &Loaded) -> anyhow::Result<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates(&files.cert, "tls cert", &settings.cert)?;
    let key = PrivateKeyDer::from_pem_slice(&files.key)
        .with_context(|| format!("tls key: {}", settings.key.display()))?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("tls protocol versions")?;
    let builder = match (&settings.client_ca, &files.client_ca) {
        (Some(path), Some(pem)) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certificates(pem, "tls client ca", path)? {
                roots
                    .add(cert)
                    .with_context(|| format!("tls client ca: {}", path.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .with_context(|| format!("tls client ca: {}", path.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .with_context(|| format!("tls cert and key: {}", settings.cert.display()))?;
    // gRPC needs HTTP/2; the metrics port speaks HTTP/1.1.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Reads the files and builds a configuration from them, without serving: for startup
/// checks that name the bad file (blocking).
pub fn check(settings: &TlsSettings) -> anyhow::Result<()> {
    build_config(settings, &read_files(settings)?).map(drop)
}

impl TlsAcceptor {
    /// Reads and checks the files (blocking: call at startup), and starts looking for
    /// new ones every `reload_interval` while any clone of the acceptor lives. Must be
    /// called inside a tokio runtime.
    pub fn load(settings: TlsSettings) -> anyhow::Result<Self> {
        let files = read_files(&settings)?;
        let config = build_config(&settings, &files)?;
        let acceptor = TlsAcceptor {
            current: Arc::new(RwLock::new(Arc::new(config))),
            settings: Arc::new(settings),
            port: "grpc",
            failures: Arc::default(),
        };
        tokio::spawn(reload_loop(
            Arc::downgrade(&acceptor.current),
            acceptor.settings.clone(),
            files,
        ));
        Ok(acceptor)
    }

    /// Whether clients must present a certificate.
    pub fn requires_client_certificates(&self) -> bool {
        self.settings.client_ca.is_some()
    }

    /// The same certificate for another port, named `port` in metrics and logs.
    pub fn for_port(&self, port: &'static str) -> Self {
        TlsAcceptor {
            port,
            failures: Arc::default(),
            ..self.clone()
        }
    }

    /// Counts a failed handshake, and logs it unless this port logged one less than
    /// [`FAILURE_LOG_INTERVAL`] ago. Clients that connect and leave without a word (TCP
    /// probes) are counted but logged only at debug level.
    fn handshake_failed(
        &self,
        peer: Option<SocketAddr>,
        reason: &'static str,
        error: &dyn std::fmt::Display,
    ) {
        crate::ops::metrics::tls_handshake_failed(self.port, reason);
        if reason == "io" {
            tracing::debug!(port = self.port, peer = ?peer, %error, "tls handshake failed");
            return;
        }
        let unlogged = {
            let mut log = self.failures.lock();
            let now = std::time::Instant::now();
            if log
                .logged_at
                .is_some_and(|at| now.duration_since(at) < FAILURE_LOG_INTERVAL)
            {
                log.unlogged += 1;
                return;
            }
            log.logged_at = Some(now);
            std::mem::take(&mut log.unlogged)
        };
        tracing::warn!(
            port = self.port,
            peer = ?peer,
            reason,
            %error,
            unlogged_since_last = unlogged,
            "tls handshake refused"
        );
    }

    /// The TLS handshake on an accepted connection (no timeout: see [`Self::incoming`]).
    /// A failure is counted and logged (see [`Self::handshake_failed`]).
    pub async fn accept(&self, tcp: TcpStream) -> io::Result<TlsConnection> {
        let remote_addr = tcp.peer_addr().ok();
        let config = self.current.read().clone();
        let stream = match tokio_rustls::TlsAcceptor::from(config).accept(tcp).await {
            Ok(stream) => stream,
            Err(error) => {
                self.handshake_failed(remote_addr, failure_reason(&error), &error);
                return Err(error);
            }
        };
        let certificate = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|leaf| CertIdentity::from_der(leaf))
            .map(Arc::new);
        Ok(TlsConnection {
            stream,
            peer: PeerInfo {
                remote_addr,
                certificate,
            },
        })
    }

    /// Accepts connections from `listener` (with TCP_NODELAY) and hands out those whose
    /// handshake succeeded, each handshake in a task of its own so a slow client holds up
    /// no other. Failed handshakes (a refused client certificate, a plaintext client, one
    /// over [`HANDSHAKE_TIMEOUT`]) are counted, logged (rate-limited) and dropped. Stops
    /// accepting when the stream is dropped.
    pub fn incoming(&self, listener: TcpListener) -> ReceiverStream<io::Result<TlsConnection>> {
        let (tx, rx) = mpsc::channel(ACCEPTED_BACKLOG);
        let acceptor = self.clone();
        tokio::spawn(async move {
            loop {
                let (tcp, peer) = tokio::select! {
                    _ = tx.closed() => break,
                    accepted = listener.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(error) => {
                            tracing::warn!(%error, "accept failed");
                            // Out of file descriptors and the like: do not spin.
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    },
                };
                // Without TCP_NODELAY small responses wait for delayed ACKs (~40 ms p99).
                let _ = tcp.set_nodelay(true);
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(connection)) => {
                            let _ = tx.send(Ok(connection)).await;
                        }
                        // Counted and logged by `accept`.
                        Ok(Err(_)) => {}
                        Err(_) => acceptor.handshake_failed(
                            Some(peer),
                            "timeout",
                            &format_args!("no handshake within {HANDSHAKE_TIMEOUT:?}"),
                        ),
                    }
                });
            }
        });
        ReceiverStream::new(rx)
    }
}

/// Reads the files every interval; a change builds a new configuration for the
/// connections that come next (open ones keep theirs). A broken set of files (a rotation
/// caught halfway) keeps the old configuration and is tried again on the next tick.
async fn reload_loop(
    current: Weak<RwLock<Arc<ServerConfig>>>,
    settings: Arc<TlsSettings>,
    mut loaded: Loaded,
) {
    let mut failed: Option<Loaded> = None;
    loop {
        tokio::time::sleep(settings.reload_interval).await;
        if current.strong_count() == 0 {
            return;
        }
        let read_settings = settings.clone();
        let read = tokio::task::spawn_blocking(move || read_files(&read_settings)).await;
        let files = match read {
            Ok(Ok(files)) => files,
            Ok(Err(error)) => {
                tracing::warn!(error = %format!("{error:#}"), "tls files not readable; keeping the current certificate");
                continue;
            }
            Err(_) => continue,
        };
        if files == loaded || failed.as_ref() == Some(&files) {
            continue;
        }
        match build_config(&settings, &files) {
            Ok(config) => {
                let Some(current) = current.upgrade() else {
                    return;
                };
                *current.write() = Arc::new(config);
                tracing::info!(cert = %settings.cert.display(), "tls certificate reloaded");
                loaded = files;
                failed = None;
            }
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "new tls files refused; keeping the current certificate");
                failed = Some(files);
            }
        }
    }
}

/// A server-side TLS connection with its peer's identity.
pub struct TlsConnection {
    stream: tokio_rustls::server::TlsStream<TcpStream>,
    peer: PeerInfo,
}

impl TlsConnection {
    /// Who is at the other end of this connection.
    pub fn peer(&self) -> &PeerInfo {
        &self.peer
    }
}

impl Connected for TlsConnection {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        self.peer.clone()
    }
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair, SanType};

    fn certificate(names: Vec<SanType>, cn: &str) -> (rcgen::Certificate, KeyPair) {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.subject_alt_names = names;
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().expect("key");
        (params.self_signed(&key).expect("self-signed"), key)
    }

    #[test]
    fn a_certificate_identity_has_its_dns_and_uri_names_and_common_name() {
        let (cert, _) = certificate(
            vec![
                SanType::DnsName("a.example".try_into().expect("dns")),
                SanType::URI("spiffe://td/ns/x/sa/y".try_into().expect("uri")),
                SanType::IpAddress([10, 0, 0, 1].into()),
            ],
            "client",
        );
        let identity = CertIdentity::from_der(cert.der()).expect("parsed");
        assert_eq!(identity.dns, vec!["a.example"]);
        assert_eq!(identity.uris, vec!["spiffe://td/ns/x/sa/y"]);
        assert_eq!(identity.common_name.as_deref(), Some("client"));
        assert_eq!(
            identity.to_string(),
            "dns:a.example,uri:spiffe://td/ns/x/sa/y,cn:client"
        );
        assert_eq!(CertIdentity::from_der(b"not der"), None);
    }

    #[test]
    fn unusable_files_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cert, key) = certificate(Vec::new(), "server");
        let (_, other_key) = certificate(Vec::new(), "other");
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write");
            path
        };
        let settings = TlsSettings::new(
            write("tls.crt", &cert.pem()),
            write("tls.key", &key.serialize_pem()),
        );
        check(&settings).expect("a matching pair");

        let missing = TlsSettings {
            client_ca: Some(dir.path().join("ca.crt")),
            ..settings.clone()
        };
        let error = format!("{:#}", check(&missing).expect_err("no ca file"));
        assert!(error.starts_with("tls client ca: read "), "{error}");

        let no_cert = TlsSettings {
            cert: write("empty.crt", ""),
            ..settings.clone()
        };
        let error = format!("{:#}", check(&no_cert).expect_err("no certificate"));
        assert!(error.contains("no certificate in"), "{error}");

        let mismatched = TlsSettings {
            key: write("other.key", &other_key.serialize_pem()),
            ..settings
        };
        let error = format!("{:#}", check(&mismatched).expect_err("key of another cert"));
        assert!(error.starts_with("tls cert and key: "), "{error}");
    }
}
