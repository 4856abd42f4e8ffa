//! The gRPC server: `preemptd.v1.Preemption` plus `grpc.health.v1.Health` and server
//! reflection (v1 and v1alpha). The only module that knows tonic and prost.
//! TLS ([`tls`]) and roles ([`authz`]) are optional.
//!
//! [`serve`] runs until a shutdown future resolves; [`start`] returns a
//! [`RunningServer`] with the bound address (tests bind `127.0.0.1:0`).

pub mod authz;
pub mod convert;
pub mod errors;
pub mod extender;
pub(crate) mod http;
pub mod json;
#[cfg(any(test, feature = "generate"))]
pub mod messages;
mod metrics;
mod middleware;
mod probe;
mod service;
pub mod tls;
pub mod wire;

pub use probe::{ProbeCredentials, check_health};

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::app::{App, AppConfig};
use service::PreemptionService;

/// Generated protobuf and tonic code for `preemptd.v1`, with its encoded descriptor set.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("preemptd.v1");
    // The server, generated apart: `Sync` receives its requests as `wire`'s type, which
    // keeps a pod's encoding for the server to read.
    include!(concat!(env!("OUT_DIR"), "/server/preemptd.v1.rs"));

    /// Encoded `FileDescriptorSet` of `preemptd.proto` (for reflection).
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/preemptd_descriptor.bin"));
}

/// The fully-qualified service name, as health checks and reflection list it.
pub const SERVICE_NAME: &str = "preemptd.v1.Preemption";

/// Server settings. `Default` listens on `127.0.0.1:50051`.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The address the gRPC server listens on.
    pub listen: SocketAddr,
    /// Largest request or response message, in bytes (the transport refuses larger ones).
    pub max_message_bytes: usize,
    /// Nomination events kept for `WatchNominations(after_revision)` resumes.
    pub history_capacity: usize,
    /// Events queued per watcher before it is cut off with RESOURCE_EXHAUSTED.
    pub subscriber_buffer: usize,
    /// Decide-and-commit attempts per `Preempt` before giving up with ABORTED when the
    /// chosen node keeps changing concurrently.
    pub commit_attempts: u32,
    /// HTTP/2 keepalive pings, so dead watchers are noticed.
    pub keepalive_interval: Option<Duration>,
    /// How long a keepalive ping may go unanswered before the connection is closed.
    pub keepalive_timeout: Duration,
    /// Longest wait for a call's response head (a client's shorter `grpc-timeout` wins);
    /// does not bound how long a `WatchNominations` stream lives. `None`: no limit.
    pub rpc_timeout: Option<Duration>,
    /// `Preempt` calls admitted at once (one decision per core runs, the rest wait in
    /// arrival order); more are refused with RESOURCE_EXHAUSTED at once (load shedding)
    /// rather than queued behind minutes of work.
    pub max_concurrent_preempts: usize,
    /// Open `WatchNominations` streams; more are refused with RESOURCE_EXHAUSTED.
    pub max_watchers: usize,
    /// Open `Sync` streams; more are refused with RESOURCE_EXHAUSTED. Each open stream
    /// holds two threads of the blocking pool (its converter and its applier), which
    /// other blocking work (JSON decoding, nomination listings) shares.
    pub max_sync_streams: usize,
    /// Where to serve Prometheus text at `/metrics` (installs the process-wide metrics
    /// recorder on first use). `None`: no endpoint.
    pub metrics_listen: Option<SocketAddr>,
    /// How long a graceful shutdown waits for in-flight calls and streams (health
    /// watches never end by themselves) before closing connections.
    pub shutdown_grace: Duration,
    /// Kubernetes mode: the cluster whose watches feed the cache. `None`: clients push.
    pub cluster: Option<crate::kubernetes::Source>,
    /// TLS (and with a client CA, mTLS) on the gRPC and metrics ports. `None`: plaintext.
    pub tls: Option<tls::TlsSettings>,
    /// Roles by client identity. `None`: every client is a writer.
    pub authz: Option<Arc<authz::AuthzPolicy>>,
    /// The placement policy every `Preempt` applies. `None`: upstream's decisions exactly.
    pub policy: Option<Arc<crate::engine::Policy>>,
    /// Where to serve the kube-scheduler extender (HTTP `/filter`, `/prioritize`,
    /// `/preempt`; TLS and `authz` as the gRPC port). `None`: no extender.
    pub extender_listen: Option<SocketAddr>,
    /// The Kubernetes version whose kube-scheduler decisions answer as, with its
    /// feature gates.
    pub feature_gates: crate::engine::FeatureGates,
}

impl ServeConfig {
    /// What of the configuration shapes the application core.
    fn app_config(&self) -> AppConfig {
        AppConfig {
            history_capacity: self.history_capacity,
            subscriber_buffer: self.subscriber_buffer,
            commit_attempts: self.commit_attempts,
            max_concurrent_preempts: self.max_concurrent_preempts,
            max_watchers: self.max_watchers,
            max_sync_streams: self.max_sync_streams,
            mirrored: self.cluster.is_some(),
            policy: self.policy.clone(),
            feature_gates: self.feature_gates.clone(),
        }
    }
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 50051)),
            max_message_bytes: 16 * 1024 * 1024,
            history_capacity: 65_536,
            subscriber_buffer: 4096,
            commit_attempts: 16,
            keepalive_interval: Some(Duration::from_secs(30)),
            keepalive_timeout: Duration::from_secs(20),
            rpc_timeout: Some(Duration::from_secs(10)),
            max_concurrent_preempts: default_max_concurrent_preempts(),
            max_watchers: 4096,
            max_sync_streams: DEFAULT_MAX_SYNC_STREAMS,
            metrics_listen: None,
            shutdown_grace: Duration::from_secs(10),
            cluster: None,
            tls: None,
            authz: None,
            policy: None,
            extender_listen: None,
            feature_gates: crate::engine::FeatureGates::default(),
        }
    }
}

/// Open `Sync` streams by default: far more than the few feeds and loads a cluster has,
/// and far fewer than the blocking pool's 512 threads.
pub const DEFAULT_MAX_SYNC_STREAMS: usize = 64;

/// Two `Preempt` calls per core, at least 64. Decisions are CPU-bound (rayon fans large
/// ones out over every core), so many more in flight only add queueing delay; the floor
/// keeps a burst of small (sub-millisecond) decisions from being shed on small machines.
pub fn default_max_concurrent_preempts() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() * 2)
        .unwrap_or(0)
        .max(64)
}

/// A server running in the background. Dropping it also starts a shutdown.
pub struct RunningServer {
    local_addr: SocketAddr,
    app: Arc<App>,
    health: HealthReporter,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
    grace: Duration,
    metrics: Option<http::HttpEndpoint>,
    extender: Option<http::HttpEndpoint>,
    /// Kubernetes mode's watches, stopped with the server.
    watches: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// The address actually bound (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The address of the `/metrics` endpoint, when one is served.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|m| m.local_addr())
    }

    /// The address of the kube-scheduler extender, when one is served.
    pub fn extender_addr(&self) -> Option<SocketAddr> {
        self.extender.as_ref().map(|e| e.local_addr())
    }

    /// The application core behind the server: embedders and tests reach its cache.
    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// The id this server chose at start; every response carries it.
    pub fn epoch(&self) -> &str {
        &self.app.epoch
    }

    /// Graceful shutdown: health goes NOT_SERVING, new calls get UNAVAILABLE, watch
    /// streams end with UNAVAILABLE, in-flight calls finish, then the listener closes.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        self.begin_shutdown();
        set_health(&self.health, ServingStatus::NotServing).await;
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(metrics) = self.metrics.take() {
            metrics.shutdown(self.grace).await;
        }
        if let Some(extender) = self.extender.take() {
            extender.shutdown(self.grace).await;
        }
        if let Some(mut task) = self.task.take() {
            match tokio::time::timeout(self.grace, &mut task).await {
                Ok(joined) => joined
                    .context("server task failed")?
                    .context("server failed")?,
                Err(_) => {
                    tracing::warn!(grace = ?self.grace, "calls still open after the grace period; closing them");
                    task.abort();
                }
            }
        }
        tracing::info!(addr = %self.local_addr, "server stopped");
        Ok(())
    }

    fn begin_shutdown(&self) {
        self.app.begin_shutdown();
        if let Some(watches) = &self.watches {
            watches.abort();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if self.shutdown.is_some() {
            self.begin_shutdown();
            // Dropping the sender resolves the shutdown signal.
            self.shutdown.take();
        }
    }
}

/// Binds `config.listen` and serves in the background; health is SERVING on return, or
/// in Kubernetes mode once every watched kind is listed.
pub async fn start(config: ServeConfig) -> anyhow::Result<RunningServer> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("bind {}", config.listen))?;
    let local_addr = listener.local_addr().context("local address")?;
    let tls = match config.tls.clone() {
        // Reads the files: off the async threads.
        Some(settings) => Some(
            tokio::task::spawn_blocking(move || tls::TlsAcceptor::load(settings))
                .await
                .context("load tls files")??,
        ),
        None => None,
    };
    log_security(&config, tls.as_ref());

    let app = Arc::new(App::new(&config.app_config()));
    let preemption = pb::preemption_server::PreemptionServer::new(PreemptionService::new(
        app.clone(),
        config.authz.is_some(),
    ))
    .max_decoding_message_size(config.max_message_bytes)
    .max_encoding_message_size(config.max_message_bytes);

    let (health, health_service) = tonic_health::server::health_reporter();
    // Before the server answers its first call: the reporter starts the overall service
    // ("") SERVING, which in Kubernetes mode is not so until every kind is listed.
    let initial_health = if config.cluster.is_some() {
        ServingStatus::NotServing
    } else {
        ServingStatus::Serving
    };
    set_health(&health, initial_health).await;
    let metrics = match config.metrics_listen {
        None => None,
        Some(addr) => Some(
            start_metrics(
                addr,
                app.clone(),
                tls.as_ref().map(|t| t.for_port("metrics")),
            )
            .await?,
        ),
    };

    let extender = match config.extender_listen {
        None => None,
        Some(addr) => Some(
            extender::start(
                addr,
                app.clone(),
                config.authz.clone(),
                config.max_message_bytes,
                tls.as_ref().map(|t| t.for_port("extender")),
            )
            .await?,
        ),
    };

    let (tx, rx) = oneshot::channel::<()>();
    let (reflection_v1, reflection_v1alpha) = reflection()?;
    let router = Server::builder()
        .http2_keepalive_interval(config.keepalive_interval)
        .http2_keepalive_timeout(Some(config.keepalive_timeout))
        .layer(middleware::RpcLayer::new(config.rpc_timeout))
        .layer(authz::AuthzLayer::new(config.authz.clone()))
        .add_service(preemption)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha);
    let stopped = async {
        // A dropped sender also means shut down.
        let _ = rx.await;
    };
    let task = match &tls {
        None => {
            // Without TCP_NODELAY small responses wait for delayed ACKs (~40 ms p99).
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            tokio::spawn(router.serve_with_incoming_shutdown(incoming, stopped))
        }
        Some(acceptor) => {
            tokio::spawn(router.serve_with_incoming_shutdown(acceptor.incoming(listener), stopped))
        }
    };

    let watches = match &config.cluster {
        Some(source) => {
            let client = crate::kubernetes::client(source).await?;
            tracing::info!(?source, "kubernetes mode: listing and watching the cluster");
            // In the background: an API server slow to answer must not hold up the start.
            tokio::spawn(crate::kubernetes::check_server_version(
                client.clone(),
                app.kubernetes_version(),
            ));
            // SERVING once every watched kind is listed.
            let (listed, health) = (app.clone(), health.clone());
            tokio::spawn(async move {
                listed.listed().await;
                if listed.check_running().is_ok() {
                    set_health(&health, ServingStatus::Serving).await;
                }
            });
            let mirror = crate::kubernetes::AppMirror::new(app.clone());
            Some(crate::kubernetes::start(client, Arc::new(mirror)))
        }
        None => None,
    };
    if let Some(policy) = &config.policy {
        log_policy(policy);
    }
    tracing::info!(
        addr = %local_addr,
        epoch = %app.epoch,
        kubernetes_version = %app.kubernetes_version(),
        feature_gates = %app.feature_gates(),
        "serving"
    );
    Ok(RunningServer {
        local_addr,
        app,
        health,
        shutdown: Some(tx),
        task: Some(task),
        grace: config.shutdown_grace,
        metrics,
        extender,
        watches,
    })
}

/// Sets the server's overall health and its service's together (clients ask for either).
pub(crate) async fn set_health(health: &HealthReporter, status: ServingStatus) {
    health.set_service_status("", status).await;
    health.set_service_status(SERVICE_NAME, status).await;
}

/// Both reflection versions. Each describes the same set: our service, health, and
/// (besides its own, which each adds) the other reflection version, so `list` agrees.
fn reflection() -> anyhow::Result<(
    tonic_reflection::server::v1::ServerReflectionServer<
        impl tonic_reflection::server::v1::ServerReflection,
    >,
    tonic_reflection::server::v1alpha::ServerReflectionServer<
        impl tonic_reflection::server::v1alpha::ServerReflection,
    >,
)> {
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let v1 = reflection()
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET)
        .build_v1()
        .context("build reflection v1")?;
    // grpcurl 1.8 speaks only v1alpha.
    let v1alpha = reflection()
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .context("build reflection v1alpha")?;
    Ok((v1, v1alpha))
}

/// Serves `/metrics` on `addr`, with the cache's counts read at each scrape.
async fn start_metrics(
    addr: SocketAddr,
    app: Arc<App>,
    tls: Option<tls::TlsAcceptor>,
) -> anyhow::Result<http::HttpEndpoint> {
    let handle = crate::ops::metrics::install()?;
    crate::ops::metrics::record_build_info(app.kubernetes_version().as_str());
    let snapshot = Arc::new(move || {
        let counts = app.cache.counts();
        crate::ops::metrics::Snapshot {
            nodes: counts.nodes,
            pods: counts.pods,
            nominated_pods: counts.nominated_pods,
            pdbs: counts.pdbs,
            pod_groups: counts.pod_groups,
            workloads: counts.workloads,
            nominations_revision: app.log.revision(),
            watch_subscribers: app.open_watchers(),
        }
    });
    metrics::start(addr, handle, snapshot, tls).await
}

/// Says at startup which placement policy decisions follow.
fn log_policy(policy: &crate::engine::Policy) {
    tracing::info!(
        capacity_labels = policy.capacity_labels.len(),
        notice_taints = policy.notice_taints.len(),
        notice_labels = policy.notice_labels.len(),
        notice_annotations = policy.notice_annotations.len(),
        notice_conditions = policy.notice_conditions.len(),
        critical_priority = ?policy.critical.priority_at_least,
        critical_selector = policy.critical.selector.is_some(),
        pdb_mode = policy.pdb_mode.as_str(),
        "placement policy in force"
    );
}

/// Says at startup how clients are authenticated and authorized.
fn log_security(config: &ServeConfig, tls: Option<&tls::TlsAcceptor>) {
    match tls {
        Some(acceptor) if acceptor.requires_client_certificates() => {
            tracing::info!("tls on the grpc and metrics ports; clients need a certificate (mtls)");
        }
        Some(_) => tracing::info!("tls on the grpc and metrics ports"),
        None => tracing::info!("plaintext on the grpc and metrics ports (no --tls-cert)"),
    }
    match &config.authz {
        None => tracing::info!("authorization off (no --authz): every client is a writer"),
        Some(policy) => {
            tracing::info!("authorization on: unknown identities are refused");
            let mtls = tls.is_some_and(|acceptor| acceptor.requires_client_certificates());
            if !mtls && policy.has_certificate_identities() {
                tracing::warn!(
                    tls = tls.is_some(),
                    "--authz names client certificates (dns, uri, cn) but without --tls-client-ca no client presents one: those entries can never match"
                );
            }
            if tls.is_none() && policy.has_tokens() {
                tracing::warn!(
                    "bearer tokens over plaintext can be read off the network; use --tls-cert"
                );
            }
        }
    }
}

/// Serves until `shutdown` resolves, then shuts down gracefully.
pub async fn serve(config: ServeConfig, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let server = start(config).await?;
    shutdown.await;
    server.shutdown().await
}
