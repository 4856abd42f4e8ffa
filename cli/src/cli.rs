//! The command line: `preemptd serve`, `preemptd simulate`, `preemptd plan-drain`,
//! `preemptd health` and `preemptd bench`.
//! Parsing and wiring only; the work is done by the library and the load generator.
//!
//! Every `serve` flag can also be set through an environment variable (`PREEMPTD_...`,
//! or the standard `OTEL_...` ones for tracing); `--help` shows both and the defaults.
//! An invalid value exits with 64 (EX_USAGE) and a message naming the setting.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use preemptd::kubernetes;
use preemptd::ops::telemetry::{self, LogFormat, TelemetryConfig};
use preemptd::plan_drain::{self, PlanDrainOptions};
use preemptd::server::tls::TlsSettings;
use preemptd::server::{self, ServeConfig};
use preemptd::simulate::{self, SimulateOptions};
use preemptd_loadgen as bench;

use crate::settings::{KubernetesArgs, env_source, load_authz, load_policy};
use crate::values::{
    HumanDuration, OptionalAddr, OptionalDuration, Target, parse_human_duration, parse_kubeconfig,
    parse_listen, parse_optional_addr, parse_optional_duration, parse_positive_duration,
    parse_target, positive,
};

/// Exit code for command-line usage errors (sysexits.h EX_USAGE).
pub const EXIT_USAGE: u8 = 64;

#[derive(Parser, Debug)]
#[command(
    name = "preemptd",
    version,
    about = "Kubernetes pod-preemption decisions, exactly as kube-scheduler makes them"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the preemptd.v1 gRPC API (with health and reflection) until SIGTERM or Ctrl-C.
    Serve(Box<ServeArgs>),
    /// Decide preemption offline for one pod against a cluster file and print the decision
    /// as proto3 JSON (`preemptd.v1.PreemptResponse`).
    Simulate {
        #[command(flatten)]
        source: OfflineCluster,
        /// The pending pod to decide for (v1 Pod, JSON or YAML).
        #[arg(long, value_name = "POD.json")]
        pod: PathBuf,
        /// Include per-node diagnostics.
        #[arg(long)]
        explain: bool,
        /// Refuse objects of kinds preemptd does not use instead of skipping them.
        #[arg(long)]
        strict: bool,
        /// Decide under this placement policy (YAML; see deploy/overlays/policy/policy.yaml), as
        /// `serve --policy` would.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        #[command(flatten)]
        kubernetes: KubernetesArgs,
    },
    /// Plan the drain of nodes about to go away, offline: where each of their pods would
    /// go if evicted now (fits / needs preemption / nowhere) and an eviction order within
    /// every PodDisruptionBudget. Nothing is evicted.
    PlanDrain(PlanDrainArgs),
    /// Check a running server over the gRPC health protocol (grpc.health.v1): exit 0 when
    /// it is SERVING, 1 otherwise (with --live: 0 whenever it answers). The container
    /// image's HEALTHCHECK.
    Health(HealthArgs),
    /// Measure load rate, Preempt latency, UpdatePod rate, watch lag and RSS over
    /// loopback gRPC on a generated cluster (the server is a `preemptd serve` child
    /// process unless --target or --in-process); the last stdout line is a JSON object
    /// with every figure. See docs/performance.md.
    Bench(bench::BenchArgs),
}

/// Where an offline command (`simulate`, `plan-drain`) reads the cluster from.
#[derive(clap::Args, Debug)]
pub struct OfflineCluster {
    /// Nodes, Pods, PodDisruptionBudgets, PriorityClasses and Namespaces (JSON or YAML): a
    /// v1 List as `kubectl get nodes,pods,pdb -A -o json` prints it, single objects, or
    /// several YAML documents. Objects of other kinds are skipped and named on stderr.
    #[arg(
        long,
        value_name = "CLUSTER.json",
        required_unless_present = "kubeconfig",
        conflicts_with = "kubeconfig"
    )]
    cluster: Option<PathBuf>,
    /// Instead of --cluster: list the live cluster of this kubeconfig once; without a path,
    /// KUBECONFIG or ~/.kube/config.
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "", value_parser = parse_kubeconfig)]
    kubeconfig: Option<PathBuf>,
}

/// A cluster file, or a live cluster to list once.
enum ClusterInput {
    File(PathBuf),
    Live(kubernetes::Source),
}

impl OfflineCluster {
    fn input(self) -> ClusterInput {
        match self.cluster {
            Some(path) => ClusterInput::File(path),
            None => ClusterInput::Live(kubernetes::Source::Kubeconfig(
                self.kubeconfig.filter(|p| !p.as_os_str().is_empty()),
            )),
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct PlanDrainArgs {
    #[command(flatten)]
    source: OfflineCluster,
    /// The nodes to drain, comma-separated.
    #[arg(
        long,
        value_name = "NODE,...",
        required = true,
        value_delimiter = ',',
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    nodes: Vec<String>,
    /// Plan under this placement policy (YAML), as `serve --policy` would: critical pods to
    /// on-demand capacity, nodes with a termination notice take no pod.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// `text` for people, `json` for the proto3 JSON of preemptd.v1.PlanDrainResponse.
    #[arg(long, value_enum, default_value_t = PlanOutput::Text)]
    output: PlanOutput,
    #[command(flatten)]
    kubernetes: KubernetesArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum PlanOutput {
    Text,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct HealthArgs {
    /// Address of the server to check: host:port, the host an IP address or a name (each
    /// of its addresses is tried in turn).
    #[arg(long, env = "PREEMPTD_HEALTH_ADDR", default_value_t = Target::from(ServeConfig::default().listen), value_parser = parse_target, value_name = "HOST:PORT")]
    pub addr: Target,
    /// Liveness: exit 0 whenever the server answers the health check, SERVING or
    /// NOT_SERVING (a server still loading its initial lists is alive); non-zero only when
    /// it cannot be reached or does not answer in time.
    #[arg(long)]
    pub live: bool,
    /// Service to ask about; empty asks about the server as a whole.
    #[arg(long, env = "PREEMPTD_HEALTH_SERVICE", default_value = "")]
    pub service: String,
    /// Give up after this long (e.g. 3s, 500ms).
    #[arg(long, env = "PREEMPTD_HEALTH_TIMEOUT", default_value_t = HumanDuration(Duration::from_secs(3)), value_parser = parse_human_duration)]
    pub timeout: HumanDuration,
    /// Connect with TLS, trusting server certificates this CA (PEM) signed.
    #[arg(long, env = "PREEMPTD_HEALTH_TLS_CA", value_name = "PATH")]
    pub tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) to present, for a server with --tls-client-ca.
    #[arg(long, env = "PREEMPTD_HEALTH_TLS_CERT", value_name = "PATH", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(
        long,
        env = "PREEMPTD_HEALTH_TLS_KEY",
        value_name = "PATH",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the --addr host, a name or
    /// an IP address).
    #[arg(
        long,
        env = "PREEMPTD_HEALTH_TLS_SERVER_NAME",
        value_name = "NAME",
        requires = "tls_ca"
    )]
    pub tls_server_name: Option<String>,
    /// File holding a bearer token to send (a server with --authz and token identities).
    #[arg(long, env = "PREEMPTD_HEALTH_TOKEN_FILE", value_name = "PATH")]
    pub token_file: Option<PathBuf>,
}

impl HealthArgs {
    /// How to reach the server; the certificate's name defaults to the `--addr` host when
    /// that is a name (an IP address is checked as it is).
    pub fn credentials(&self) -> server::ProbeCredentials {
        let host_name = self.addr.is_name().then(|| self.addr.host().to_string());
        server::ProbeCredentials {
            tls_ca: self.tls_ca.clone(),
            client_cert: self.tls_cert.clone().zip(self.tls_key.clone()),
            server_name: self.tls_server_name.clone().or(host_name),
            token_file: self.token_file.clone(),
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// gRPC listen address, host:port; a host name binds its first IPv4 address (else its
    /// first address): localhost:50051 is 127.0.0.1:50051.
    #[arg(long, env = "PREEMPTD_LISTEN", default_value_t = ServeConfig::default().listen, value_parser = parse_listen, value_name = "HOST:PORT")]
    pub listen: std::net::SocketAddr,
    /// Largest request or response message, in bytes.
    #[arg(long, env = "PREEMPTD_MAX_MESSAGE_BYTES", default_value_t = ServeConfig::default().max_message_bytes)]
    pub max_message_bytes: usize,
    /// Nomination events kept for WatchNominations resumes.
    #[arg(long, env = "PREEMPTD_HISTORY_CAPACITY", default_value_t = ServeConfig::default().history_capacity)]
    pub history_capacity: usize,
    /// Events queued per watcher before it is cut off with RESOURCE_EXHAUSTED.
    #[arg(long, env = "PREEMPTD_SUBSCRIBER_BUFFER", default_value_t = ServeConfig::default().subscriber_buffer)]
    pub subscriber_buffer: usize,
    /// Log format: text or json (level from RUST_LOG, default info).
    #[arg(long, env = "PREEMPTD_LOG_FORMAT", default_value = log_format_name(TelemetryConfig::default().log_format), value_parser = [log_format_name(LogFormat::Text), log_format_name(LogFormat::Json)])]
    pub log_format: String,
    /// Prometheus metrics address (text format at /metrics); "off" disables it.
    #[arg(long, env = "PREEMPTD_METRICS_LISTEN", default_value = "127.0.0.1:9464", value_parser = parse_optional_addr, value_name = "ADDR|off")]
    pub metrics_listen: OptionalAddr,
    /// kube-scheduler extender address (HTTP POST /filter, /prioritize, /preempt; TLS and
    /// --authz as the gRPC port); "off" (the default) disables it.
    #[arg(long, env = "PREEMPTD_EXTENDER_LISTEN", default_value = "off", value_parser = parse_optional_addr, value_name = "ADDR|off")]
    pub extender_listen: OptionalAddr,
    /// Longest wait for any call's answer (a client's shorter grpc-timeout wins); does not
    /// limit how long a WatchNominations stream lives. "off" disables it.
    #[arg(long, env = "PREEMPTD_RPC_TIMEOUT", default_value_t = OptionalDuration(ServeConfig::default().rpc_timeout), value_parser = parse_optional_duration)]
    pub rpc_timeout: OptionalDuration,
    /// Preempt calls admitted at once (one decision per core runs, the rest wait in arrival order); more are refused at once with RESOURCE_EXHAUSTED.
    #[arg(long, env = "PREEMPTD_MAX_CONCURRENT_PREEMPTS", default_value_t = ServeConfig::default().max_concurrent_preempts, value_parser = positive)]
    pub max_concurrent_preempts: usize,
    /// Open WatchNominations streams; more are refused with RESOURCE_EXHAUSTED.
    #[arg(long, env = "PREEMPTD_MAX_WATCHERS", default_value_t = ServeConfig::default().max_watchers)]
    pub max_watchers: usize,
    /// Open Sync streams; more are refused with RESOURCE_EXHAUSTED (each open stream holds
    /// two server threads).
    #[arg(long, env = "PREEMPTD_MAX_SYNC_STREAMS", default_value_t = ServeConfig::default().max_sync_streams, value_parser = positive)]
    pub max_sync_streams: usize,
    /// HTTP/2 keepalive ping interval, so dead clients are noticed; "off" disables pings.
    #[arg(long, env = "PREEMPTD_KEEPALIVE_INTERVAL", default_value_t = OptionalDuration(ServeConfig::default().keepalive_interval), value_parser = parse_optional_duration)]
    pub keepalive_interval: OptionalDuration,
    /// How long a keepalive ping may go unanswered before the connection is closed.
    #[arg(long, env = "PREEMPTD_KEEPALIVE_TIMEOUT", default_value_t = HumanDuration(ServeConfig::default().keepalive_timeout), value_parser = parse_human_duration)]
    pub keepalive_timeout: HumanDuration,
    /// How long shutdown waits for in-flight calls and streams before closing them.
    #[arg(long, env = "PREEMPTD_SHUTDOWN_GRACE", default_value_t = HumanDuration(ServeConfig::default().shutdown_grace), value_parser = parse_human_duration)]
    pub shutdown_grace: HumanDuration,
    /// Threads that serve connections (HTTP/2, decoding, unary updates, watch streams).
    /// Decisions run on their own lanes and bulk loads on blocking threads, so these only
    /// move and convert messages.
    #[arg(long, env = "PREEMPTD_IO_THREADS", default_value_t = default_io_threads(), value_parser = positive)]
    pub io_threads: usize,
    /// OTLP/gRPC collector to export traces to (e.g. http://otel-collector:4317); unset,
    /// no traces are exported.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", value_parser = telemetry::parse_otlp_endpoint, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// service.name of exported traces.
    #[arg(long, env = "OTEL_SERVICE_NAME", default_value_t = TelemetryConfig::default().service_name)]
    pub otel_service_name: String,
    /// Placement policy (YAML; see deploy/overlays/policy/policy.yaml): spot and on-demand
    /// capacity, termination notices, critical pods, PDB mode. Unset, decisions are
    /// upstream's exactly.
    #[arg(long, env = "PREEMPTD_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub kubernetes: KubernetesArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// TLS on the gRPC and metrics ports, and who may call what.
#[derive(clap::Args, Debug, Clone)]
pub struct SecurityArgs {
    /// Serve TLS with this certificate chain (PEM, e.g. a cert-manager Secret's tls.crt);
    /// re-read when it changes.
    #[arg(
        long,
        env = "PREEMPTD_TLS_CERT",
        value_name = "PATH",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        long,
        env = "PREEMPTD_TLS_KEY",
        value_name = "PATH",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: clients must present a certificate signed by a CA in this file (PEM);
    /// others are refused at the handshake.
    #[arg(
        long,
        env = "PREEMPTD_TLS_CLIENT_CA",
        value_name = "PATH",
        requires = "tls_cert"
    )]
    pub tls_client_ca: Option<PathBuf>,
    /// How often the TLS files are re-read to pick up a rotated certificate.
    #[arg(long, env = "PREEMPTD_TLS_RELOAD_INTERVAL", default_value_t = HumanDuration(Duration::from_secs(10)), value_parser = parse_positive_duration)]
    pub tls_reload_interval: HumanDuration,
    /// Roles by client identity (YAML; see docs/security.md); without it every client is
    /// a writer.
    #[arg(long, env = "PREEMPTD_AUTHZ", value_name = "FILE")]
    pub authz: Option<PathBuf>,
}

impl SecurityArgs {
    /// The TLS settings, with the files read and checked (blocking): a bad file is named
    /// with its flag.
    pub fn tls(&self) -> Result<Option<TlsSettings>, String> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let settings = TlsSettings {
            client_ca: self.tls_client_ca.clone(),
            reload_interval: self.tls_reload_interval.0,
            ..TlsSettings::new(cert, key)
        };
        server::tls::check(&settings)
            .map_err(|error| format!("--tls-cert, --tls-key or --tls-client-ca: {error:#}"))?;
        Ok(Some(settings))
    }
}

/// Kubernetes mode: where preemptd reads the cluster from, instead of clients pushing it.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClusterArgs {
    /// Kubernetes mode: watch the cluster of this kubeconfig (its current context) and
    /// serve from it; without a path, KUBECONFIG or ~/.kube/config, as kubectl reads it.
    /// Update calls and Sync are then refused: the watches are the one writer.
    #[arg(long, env = "PREEMPTD_KUBECONFIG", value_name = "PATH", num_args = 0..=1, default_missing_value = "", value_parser = parse_kubeconfig, conflicts_with = "in_cluster")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubernetes mode from inside a pod: the service account's token and the
    /// KUBERNETES_SERVICE_HOST/PORT the kubelet sets.
    #[arg(long, env = "PREEMPTD_IN_CLUSTER")]
    pub in_cluster: bool,
}

impl ClusterArgs {
    /// The cluster to mirror, if any.
    pub fn source(&self) -> Option<kubernetes::Source> {
        if self.in_cluster {
            return Some(kubernetes::Source::InCluster);
        }
        self.kubeconfig.as_ref().map(|path| {
            kubernetes::Source::Kubeconfig((!path.as_os_str().is_empty()).then(|| path.clone()))
        })
    }
}

/// The `--log-format` name of a format.
const fn log_format_name(format: LogFormat) -> &'static str {
    match format {
        LogFormat::Text => "text",
        LogFormat::Json => "json",
    }
}

impl ServeArgs {
    /// The server's settings; `Err` names the flag whose files are unusable.
    pub fn config(&self) -> Result<ServeConfig, String> {
        Ok(ServeConfig {
            listen: self.listen,
            max_message_bytes: self.max_message_bytes,
            history_capacity: self.history_capacity,
            subscriber_buffer: self.subscriber_buffer,
            keepalive_interval: self.keepalive_interval.0,
            keepalive_timeout: self.keepalive_timeout.0,
            rpc_timeout: self.rpc_timeout.0,
            max_concurrent_preempts: self.max_concurrent_preempts,
            max_watchers: self.max_watchers,
            max_sync_streams: self.max_sync_streams,
            metrics_listen: self.metrics_listen.0,
            extender_listen: self.extender_listen.0,
            shutdown_grace: self.shutdown_grace.0,
            cluster: self.cluster.source(),
            tls: self.security.tls()?,
            authz: load_authz(self.security.authz.as_deref())?,
            policy: load_policy(self.policy.as_deref())?,
            feature_gates: self.kubernetes.feature_gates()?,
            ..ServeConfig::default()
        })
    }

    pub fn telemetry(&self) -> TelemetryConfig {
        TelemetryConfig {
            log_format: if self.log_format == log_format_name(LogFormat::Json) {
                LogFormat::Json
            } else {
                LogFormat::Text
            },
            otlp_endpoint: self.otlp_endpoint.clone(),
            service_name: self.otel_service_name.clone(),
        }
    }
}

/// Waits for a signal on `stream`, forever when it could not be registered.
async fn recv(stream: Option<&mut tokio::signal::unix::Signal>) {
    match stream {
        Some(stream) => {
            stream.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Resolves on SIGTERM or SIGINT. The handlers are registered when this is called, not
/// when the future is first polled: a SIGTERM arriving while the server is still starting
/// (right after it reports SERVING) must drain, not kill the process. Call it inside the
/// runtime.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())
        .inspect_err(|error| tracing::warn!(%error, "cannot listen for sigterm"))
        .ok();
    let mut interrupt = signal(SignalKind::interrupt())
        .inspect_err(|error| tracing::warn!(%error, "cannot listen for sigint"))
        .ok();
    async move {
        tokio::select! {
            _ = recv(terminate.as_mut()) => {}
            _ = recv(interrupt.as_mut()) => {}
        }
        tracing::info!("shutdown signal received, draining");
    }
}

/// Half the cores, at least one: more I/O threads make the server's tasks wake each other
/// across threads (more CPU per unary call) while the decision lanes and the blocking pool
/// already keep the other cores busy.
pub fn default_io_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// The server's runtime: `io_threads` workers, without tokio's LIFO slot. With it, a task
/// another task wakes runs next on that worker: when a nomination fans out to many
/// WatchNominations streams on one connection, the connection task runs (and writes)
/// after each stream's frame instead of once after all of them. Without it, fan-out lag
/// and the server's CPU per delivery are lower, for a somewhat lower bulk-load rate
/// (docs/performance.md). Needs `--cfg tokio_unstable` (set in
/// .cargo/config.toml).
pub fn serve_runtime(io_threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    serve_runtime_builder()
        .worker_threads(io_threads.max(1))
        .build()
}

fn serve_runtime_builder() -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    #[cfg(tokio_unstable)]
    builder.disable_lifo_slot();
    builder.enable_all();
    builder
}

fn serve(args: ServeArgs) -> ExitCode {
    let config = match args.config() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("preemptd: error: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = match serve_runtime(args.io_threads) {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("preemptd: error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    // The OTLP exporter's channel is spawned on the runtime: initialize inside it.
    let telemetry = {
        let _runtime = runtime.enter();
        match telemetry::init(&args.telemetry()) {
            Ok(guard) => guard,
            Err(error) => {
                eprintln!("preemptd: error: {}", bench::error_text(error.as_ref()));
                return ExitCode::FAILURE;
            }
        }
    };
    let code = match runtime.block_on(async { server::serve(config, shutdown_signal()).await }) {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            let error = bench::error_text(error.as_ref());
            // Said once: in the log (text or JSON, as configured) when it shows errors,
            // else on stderr.
            if tracing::event_enabled!(tracing::Level::ERROR) {
                tracing::error!(%error, "server failed");
            } else {
                eprintln!("preemptd: error: {error}");
            }
            ExitCode::FAILURE
        }
    };
    // Flush the last spans while the runtime (and so the exporter's channel) still runs.
    telemetry.shutdown();
    code
}

fn health(args: HealthArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("preemptd: error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(check_health(&args)) {
        Ok(true) => {
            println!("SERVING");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("NOT_SERVING");
            if args.live {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("preemptd: error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Checks the first of `--addr`'s addresses that answers, all within `--timeout`;
/// `Ok(true)` when it is SERVING.
async fn check_health(args: &HealthArgs) -> Result<bool, String> {
    let deadline = tokio::time::Instant::now() + args.timeout.0;
    let credentials = args.credentials();
    let mut failure = format!("{}: no address answered in {}", args.addr, args.timeout);
    for addr in args.addr.resolve()? {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            break;
        }
        match server::check_health(addr, &args.service, left, &credentials).await {
            Ok(serving) => return Ok(serving),
            Err(error) => failure = bench::error_text(error.as_ref()),
        }
    }
    Err(failure)
}

/// Parses the command line. Help and version print and exit 0; a bad command line
/// prints clap's message (naming the flag, and the environment variable when the value
/// came from one) and exits 64.
pub fn parse() -> Result<Cli, ExitCode> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use clap::{CommandFactory as _, FromArgMatches as _};
    let parsed = Cli::command()
        .version(VERSION_LINE.as_str())
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    match parsed {
        Ok(cli) => Ok(cli),
        Err(error) => match error.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                let _ = error.print();
                Err(ExitCode::SUCCESS)
            }
            _ => {
                let _ = error.print();
                if let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg)
                    && let Some(env) = env_source(arg)
                {
                    eprintln!("note: the value came from the environment variable {env}");
                }
                Err(ExitCode::from(EXIT_USAGE))
            }
        },
    }
}

/// `preemptd --version`: the build, and the Kubernetes releases it answers as.
static VERSION_LINE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    use preemptd::engine::KubernetesVersion;
    format!(
        "{} (answers as Kubernetes {}; default {})",
        env!("CARGO_PKG_VERSION"),
        KubernetesVersion::accepted(),
        KubernetesVersion::default()
    )
});

/// sysexits.h EX_SOFTWARE: the decision could not be rendered (a build defect).
const EXIT_SOFTWARE: u8 = 70;

/// Lists the cluster of `source` once.
fn list_live(
    source: kubernetes::Source,
) -> Result<Vec<preemptd::model::decode::Object>, simulate::SimulateError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| simulate::SimulateError::Cluster(error.to_string()))?;
    runtime
        .block_on(async {
            let client = kubernetes::client(&source).await?;
            kubernetes::list_once(client).await
        })
        .map_err(|error| simulate::SimulateError::Cluster(bench::error_text(error.as_ref())))
}

/// Lists the cluster of `source` once and decides for the pod in `pod`.
fn simulate_live(
    source: kubernetes::Source,
    pod: &Path,
    options: SimulateOptions,
) -> Result<simulate::Simulation, simulate::SimulateError> {
    simulate::simulate_objects(list_live(source)?, pod, options)
}

fn plan_drain(args: PlanDrainArgs) -> ExitCode {
    let settings = load_policy(args.policy.as_deref())
        .and_then(|policy| Ok((policy, args.kubernetes.feature_gates()?)));
    let (policy, feature_gates) = match settings {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("preemptd: error: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let options = PlanDrainOptions {
        policy,
        pdb_mode: None,
        feature_gates,
    };
    let planned = match args.source.input() {
        ClusterInput::File(cluster) => plan_drain::plan_drain(&cluster, &args.nodes, &options),
        ClusterInput::Live(source) => list_live(source)
            .map_err(plan_drain::PlanDrainError::from)
            .and_then(|objects| plan_drain::plan_drain_objects(objects, &args.nodes, &options)),
    };
    let planned = match planned {
        Ok(planned) => planned,
        Err(error) => {
            eprintln!("preemptd: error: {error}");
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(EXIT_SOFTWARE));
        }
    };
    for note in &planned.notes {
        eprintln!("preemptd: {note}");
    }
    let rendered = match args.output {
        PlanOutput::Text => Ok(plan_drain::plan_text(&planned.plan)),
        PlanOutput::Json => server::json::plan_json(&planned.plan)
            .map_err(|error| error.to_string())
            .and_then(|json| serde_json::to_string_pretty(&json).map_err(|error| error.to_string()))
            .map(|text| text + "\n"),
    };
    match rendered {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("preemptd: error: {error}");
            ExitCode::from(EXIT_SOFTWARE)
        }
    }
}

fn run_simulate(simulation: Result<simulate::Simulation, simulate::SimulateError>) -> ExitCode {
    let simulation = match simulation {
        Ok(simulation) => simulation,
        Err(error) => {
            eprintln!("preemptd: error: {error}");
            return ExitCode::from(error.exit_code() as u8);
        }
    };
    for note in &simulation.notes {
        eprintln!("preemptd: {note}");
    }
    let rendered = match &simulation.decision {
        simulate::Decided::Pod(decision) => server::json::decision_json(decision),
        simulate::Decided::Group(decision) => server::json::group_decision_json(decision),
    }
    .map_err(|error| error.to_string())
    .and_then(|json| serde_json::to_string_pretty(&json).map_err(|error| error.to_string()));
    match rendered {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("preemptd: error: {error}");
            ExitCode::from(EXIT_SOFTWARE)
        }
    }
}

/// Runs the parsed command; the process exit code comes back.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Health(args) => health(args),
        Command::Bench(args) => bench::run(args),
        Command::PlanDrain(args) => plan_drain(args),
        Command::Simulate {
            source,
            pod,
            explain,
            strict,
            policy,
            kubernetes,
        } => {
            let settings = load_policy(policy.as_deref())
                .and_then(|policy| Ok((policy, kubernetes.feature_gates()?)));
            let (policy, feature_gates) = match settings {
                Ok(settings) => settings,
                Err(error) => {
                    eprintln!("preemptd: error: {error}");
                    return ExitCode::from(EXIT_USAGE);
                }
            };
            let options = SimulateOptions {
                explain,
                strict,
                policy,
                feature_gates,
            };
            match source.input() {
                ClusterInput::File(cluster) => {
                    run_simulate(simulate::simulate(&cluster, &pod, options))
                }
                ClusterInput::Live(source) => run_simulate(simulate_live(source, &pod, options)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    #[test]
    fn the_server_runtime_runs_woken_tasks_in_arrival_order() {
        // With tokio's LIFO slot the task spawned last would run first ([2, 1]): the
        // order a connection task would jump ahead of the other subscribers' frames in.
        let runtime = super::serve_runtime_builder()
            .worker_threads(1)
            .build()
            .expect("runtime");
        let order = Arc::new(Mutex::new(Vec::new()));
        let seen = order.clone();
        runtime.block_on(async move {
            tokio::spawn(async move {
                let first = tokio::spawn({
                    let seen = seen.clone();
                    async move { seen.lock().expect("lock").push(1) }
                });
                let second = tokio::spawn({
                    let seen = seen.clone();
                    async move { seen.lock().expect("lock").push(2) }
                });
                let _ = tokio::join!(first, second);
            })
            .await
            .expect("spawned task");
        });
        assert_eq!(*order.lock().expect("lock"), vec![1, 2]);
    }
}
