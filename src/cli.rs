//! The command line: `preemptd serve`, `preemptd simulate` and `preemptd bench`. Parsing and wiring only;
//! the work is done by the library.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::bench;
use crate::server::{self, ServeConfig};
use crate::simulate;

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
    Serve(ServeArgs),
    /// Decide preemption offline for one pod against a cluster file and print the decision
    /// as proto3 JSON (`preemptd.v1.PreemptResponse`).
    Simulate {
        /// A v1 List of Nodes, Pods and PodDisruptionBudgets (JSON or YAML), as
        /// `kubectl get nodes,pods,pdb -A -o json` prints it.
        #[arg(long, value_name = "CLUSTER.json")]
        cluster: PathBuf,
        /// The pending pod to decide for (v1 Pod, JSON or YAML).
        #[arg(long, value_name = "POD.json")]
        pod: PathBuf,
        /// Include per-node diagnostics.
        #[arg(long)]
        explain: bool,
    },
    /// Measure load rate, Preempt latency, UpdatePod rate, watch lag and RSS over
    /// loopback gRPC on a generated cluster (in-process server unless --target); the last
    /// stdout line is a JSON object with every figure. See BENCHMARKS.md.
    Bench(bench::BenchArgs),
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// gRPC listen address.
    #[arg(long, env = "PREEMPTD_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Largest request or response message, in bytes.
    #[arg(long, env = "PREEMPTD_MAX_MESSAGE_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_message_bytes: usize,
    /// Nomination events kept for WatchNominations resumes.
    #[arg(long, env = "PREEMPTD_HISTORY_CAPACITY", default_value_t = 65_536)]
    pub history_capacity: usize,
    /// Events queued per watcher before it is cut off with RESOURCE_EXHAUSTED.
    #[arg(long, env = "PREEMPTD_SUBSCRIBER_BUFFER", default_value_t = 4096)]
    pub subscriber_buffer: usize,
    /// Log format: text or json (level from RUST_LOG, default info).
    #[arg(long, env = "PREEMPTD_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

impl ServeArgs {
    pub fn config(&self) -> ServeConfig {
        ServeConfig {
            listen: self.listen,
            max_message_bytes: self.max_message_bytes,
            history_capacity: self.history_capacity,
            subscriber_buffer: self.subscriber_buffer,
            ..ServeConfig::default()
        }
    }
}

fn init_logging(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for sigterm");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
    tracing::info!("shutdown signal received, draining");
}

fn serve(args: ServeArgs) -> ExitCode {
    init_logging(&args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("preemptd: error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(server::serve(args.config(), shutdown_signal())) {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(error = %format!("{error:#}"), "server failed");
            eprintln!("preemptd: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the parsed command; the process exit code comes back.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Bench(args) => bench::run(args),
        Command::Simulate {
            cluster,
            pod,
            explain,
        } => match simulate::simulate(&cluster, &pod, explain) {
            Ok(decision) => {
                let json = simulate::decision_json(&decision);
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json).unwrap_or_default()
                );
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("preemptd: error: {error}");
                ExitCode::from(error.exit_code() as u8)
            }
        },
    }
}
