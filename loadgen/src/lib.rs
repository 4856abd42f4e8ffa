//! `preemptd bench`: a loopback load generator that measures the figures of
//! docs/performance.md (and its targets) over real gRPC: bulk load through `Sync`,
//! `Preempt` latency and throughput (resources-only and anti-affinity + spread
//! preemptors), unary `UpdatePod` rate and ack latency, `WatchNominations` fan-out lag
//! (with and without a stalled subscriber) and server RSS per pod and per node.
//!
//! Human-readable lines go to stdout, a progress line to stderr, and the last stdout line
//! is one JSON object with every figure (for scripts and the smoke test).
//!
//! Everything is bounded: counts by flags, each latency phase by `--duration`, and only
//! loopback addresses are accepted.
//!
//! A crate of its own, so a program that embeds the `preemptd` library does not compile it.
//! It runs inside the `preemptd` binary: the server it starts is that executable's
//! `serve`.

mod client;
mod extender;
mod gang;
mod grpc;
mod progress;
mod report;
mod scenarios;
mod server_process;
mod target;
mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};

pub use report::{SizeReport, svg_chart};

/// One cluster size of a sweep: `NODESxPODS_PER_NODE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub nodes: usize,
    pub pods_per_node: usize,
}

impl std::str::FromStr for Size {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (nodes, pods) = text
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("expected NODESxPODS_PER_NODE, got {text:?}"))?;
        let parse = |s: &str| {
            s.trim()
                .replace('_', "")
                .parse::<usize>()
                .map_err(|e| format!("{text:?}: {e}"))
        };
        let size = Size {
            nodes: parse(nodes)?,
            pods_per_node: parse(pods)?,
        };
        if size.nodes == 0 {
            return Err(format!("{text:?}: at least one node is needed"));
        }
        Ok(size)
    }
}

/// `preemptd bench` flags.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Nodes in the generated cluster.
    #[arg(long, default_value_t = 5000)]
    pub nodes: usize,
    /// Bound pods per node.
    #[arg(long, default_value_t = 30)]
    pub pods_per_node: usize,
    /// Seed of the cluster generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sweep over sizes instead of --nodes/--pods-per-node, e.g. 5000x30,50000x20
    /// (each size gets a fresh server).
    #[arg(long, value_delimiter = ',', value_name = "NODESxPODS,...")]
    pub sizes: Vec<Size>,
    /// Use an already running, empty server at this loopback address (host:port, e.g.
    /// localhost:50051) instead of starting one (`preemptd serve` in a process of its own,
    /// so RSS is the server's alone). A server that holds cluster state is refused unless
    /// --force.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "in_process", value_parser = target::parse_target)]
    pub target: Option<SocketAddr>,
    /// Load the generated cluster into a --target server even when it already holds
    /// cluster state (its objects then stay mixed with the generated ones).
    #[arg(long, requires = "target")]
    pub force: bool,
    /// Run the server inside the bench process instead (RSS then also counts the client).
    #[arg(long)]
    pub in_process: bool,
    /// Pid of the --target server, to read its RSS from /proc/PID/status.
    #[arg(long, requires = "target")]
    pub server_pid: Option<u32>,
    /// Preempt calls in flight at once.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Dry-run Preempt calls per preemptor kind.
    #[arg(long, default_value_t = 2000)]
    pub preempts: u64,
    /// Time cap of each latency phase, in seconds.
    #[arg(long, default_value_t = 20.0)]
    pub duration: f64,
    /// Unary UpdatePod calls (label changes on existing pods). Several passes over the
    /// pod sample, so the first pass (conversions the server has not seen yet) does not
    /// dominate and the phase is long enough for a steady p99.
    #[arg(long, default_value_t = 100_000)]
    pub updates: u64,
    /// UpdatePod calls in flight at once (as a client's informer handlers would keep
    /// them), over two connections: enough that each side answers several calls per
    /// wake-up, few enough that the ack p99 stays low.
    #[arg(long, default_value_t = 24)]
    pub update_concurrency: usize,
    /// WatchNominations subscribers.
    #[arg(long, default_value_t = 100)]
    pub watchers: usize,
    /// Nomination events published per second during the watch phase.
    #[arg(long, default_value_t = 100)]
    pub watch_rate: u64,
    /// Rounds of watch runs: each round one run without and one with a stalled
    /// subscriber; each kind reports its median run.
    #[arg(long, default_value_t = 3)]
    pub watch_runs: u32,
    /// Seconds of publishing per watch run.
    #[arg(long, default_value_t = 3.0)]
    pub watch_seconds: f64,
    /// Write an SVG chart of Preempt p99 against cluster size here.
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,
    /// Instead of benchmarking, write each size's cluster and its --preempts preemptors of
    /// each kind as Kubernetes JSON (v1 Lists) to DIR/NODESxPODS/: cluster.json,
    /// preemptors-resources.json, preemptors-affinity.json. The same seed and sizes give
    /// the objects a bench run loads and sends.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["target", "in_process", "svg"])]
    pub write_scenarios: Option<PathBuf>,
    /// Measure the kube-scheduler extender verbs instead (nodeCacheCapable, over
    /// loopback HTTP/1.1): /filter and /prioritize with every node, /preempt with
    /// --extender-candidates candidates; p50/p99 per verb.
    #[arg(long, conflicts_with_all = ["target", "write_scenarios", "svg"])]
    pub extender: bool,
    /// Requests per extender verb (each phase also stops at --duration).
    #[arg(long, default_value_t = 1000)]
    pub extender_requests: u64,
    /// Measure gang preemption instead: dry-run `PreemptGroup` p50/p99 for pending gangs of
    /// 8, 32 and 64 members on kubernetes#140651's shape (--gang-nodes nodes with
    /// --gang-pods-per-node running pods each: plain pods and members of `single`- and
    /// `all`-mode gangs), the server answering as kubernetes 1.37 with GenericWorkload on;
    /// --preempts calls per size (each size also stops at --duration). With
    /// --write-scenarios, write those objects as Kubernetes JSON to DIR/gang/ instead.
    #[arg(long, conflicts_with_all = ["target", "in_process", "svg", "extender", "sizes"])]
    pub gang: bool,
    /// Nodes of the --gang cluster.
    #[arg(long, default_value_t = 1000)]
    pub gang_nodes: usize,
    /// Running pods on each node of the --gang cluster (the potential victims).
    #[arg(long, default_value_t = 10)]
    pub gang_pods_per_node: usize,
    /// Pending gangs of each size the --gang calls cycle over.
    #[arg(long, default_value_t = 4)]
    pub gang_count: u64,
    /// Candidate nodes in each /preempt request.
    #[arg(long, default_value_t = 500)]
    pub extender_candidates: usize,
    /// The victims each /preempt candidate lists: `all` its lower-priority pods (the
    /// largest body the scheduler could send), or `chosen`, those its own dry run picks
    /// there (upstream's per-node selection, as kube-scheduler sends them).
    #[arg(long, value_enum, default_value_t = ExtenderVictims::All)]
    pub extender_victims: ExtenderVictims,
}

/// See [`BenchArgs::extender_victims`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExtenderVictims {
    All,
    Chosen,
}

impl BenchArgs {
    fn sizes(&self) -> Vec<Size> {
        if self.sizes.is_empty() {
            vec![Size {
                nodes: self.nodes,
                pods_per_node: self.pods_per_node,
            }]
        } else {
            self.sizes.clone()
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        if let Some(target) = self.target {
            if !target.ip().is_loopback() {
                bail!("--target must be a loopback address, got {target}");
            }
            if self.sizes.len() > 1 {
                bail!("--sizes needs a fresh server per size: run it without --target");
            }
        }
        if self.nodes == 0 && self.sizes.is_empty() {
            bail!("--nodes must be at least 1");
        }
        if self.concurrency == 0 || self.update_concurrency == 0 {
            bail!("--concurrency and --update-concurrency must be at least 1");
        }
        for (name, value) in [
            ("--duration", self.duration),
            ("--watch-seconds", self.watch_seconds),
        ] {
            if !(value.is_finite() && value > 0.0 && value <= 3600.0) {
                bail!("{name} must be between 0 and 3600 seconds");
            }
        }
        if self.extender_requests == 0 || self.extender_candidates == 0 {
            bail!("--extender-requests and --extender-candidates must be at least 1");
        }
        if self.gang_nodes == 0 || self.gang_count == 0 {
            bail!("--gang-nodes and --gang-count must be at least 1");
        }
        if self.gang_nodes > 100_000 || self.gang_pods_per_node > 200 {
            bail!("--gang-nodes is at most 100000 and --gang-pods-per-node at most 200");
        }
        if !(1..=100).contains(&self.watch_runs) {
            bail!("--watch-runs must be between 1 and 100");
        }
        if self.watch_rate == 0 || self.watch_rate > 100_000 {
            bail!("--watch-rate must be between 1 and 100000");
        }
        Ok(())
    }

    fn phase_cap(&self) -> Duration {
        Duration::from_secs_f64(self.duration)
    }
}

/// An error and its causes on one line, `outer: cause: root`, as anyhow's `{:#}` prints
/// them, but without a cause whose text an outer message already carries (hyper's
/// "tcp connect error: tcp connect error", kube's "...(os error 2): No such file or
/// directory (os error 2)"). Also how the `preemptd` binary prints its errors.
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !cause_text.is_empty() && !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Runs the benchmark; the process exit code comes back.
pub fn run(args: BenchArgs) -> ExitCode {
    let result = args.validate().and_then(|()| {
        match (&args.write_scenarios, args.gang) {
            (Some(dir), true) => return gang::write_scenarios(&args, dir),
            (Some(dir), false) => return scenarios::write_all(&args, dir),
            (None, _) => {}
        }
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("start the async runtime")?
            .block_on(run_all(&args))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("preemptd bench: error: {}", error_text(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}

async fn run_all(args: &BenchArgs) -> anyhow::Result<()> {
    if args.extender {
        return run_extender(args).await;
    }
    if args.gang {
        return gang::run(args).await;
    }
    let mut reports = Vec::new();
    for size in args.sizes() {
        println!(
            "== {} nodes x {} pods per node (seed {})",
            size.nodes, size.pods_per_node, args.seed
        );
        let report = client::measure(args, size).await?;
        report.print_human();
        reports.push(report);
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, svg_chart(&reports))
            .with_context(|| format!("write {}", path.display()))?;
        println!("chart written to {}", path.display());
    }
    let json = report::final_json(&reports);
    println!(
        "{}",
        serde_json::to_string(&json).context("encode the result")?
    );
    Ok(())
}

/// `--extender`: the extender verbs at each size; the last line is the JSON of every size.
async fn run_extender(args: &BenchArgs) -> anyhow::Result<()> {
    let mut results = Vec::new();
    for size in args.sizes() {
        println!(
            "== extender: {} nodes x {} pods per node (seed {})",
            size.nodes, size.pods_per_node, args.seed
        );
        let report = extender::measure(args, size).await?;
        report.print_human();
        results.push(report.json());
    }
    println!(
        "{}",
        serde_json::to_string(&serde_json::Value::Array(results)).context("encode the result")?
    );
    Ok(())
}
