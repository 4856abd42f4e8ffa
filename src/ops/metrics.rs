//! Prometheus metrics through the `metrics` facade: their names, descriptions and
//! recording functions.
//!
//! Without an installed recorder every `metrics::` call is a no-op, so the server and the
//! library run the same with metrics off. [`install`] sets the process-wide recorder
//! (idempotent: a test binary may start several servers); the server's `/metrics`
//! port serves it. Names follow kube-scheduler (`scheduler_preemption_*`) and go-grpc-prometheus
//! (`grpc_server_*`); preemptd's own start with `preemptd_`.

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context as _;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// The build and the Kubernetes version decisions answer as (always 1).
pub const BUILD_INFO: &str = "preemptd_build_info";
/// Preemption attempts (kube-scheduler's name).
pub const PREEMPTION_ATTEMPTS: &str = "scheduler_preemption_attempts_total";
/// Victims per preemption (kube-scheduler's name).
pub const PREEMPTION_VICTIMS: &str = "scheduler_preemption_victims";
/// gRPC calls started.
pub const GRPC_STARTED: &str = "grpc_server_started_total";
/// gRPC calls completed, by status code.
pub const GRPC_HANDLED: &str = "grpc_server_handled_total";
/// gRPC call durations.
pub const GRPC_HANDLING_SECONDS: &str = "grpc_server_handling_seconds";
/// Decisions made, by outcome.
pub const DECISIONS: &str = "preemptd_decisions_total";
/// Decision durations.
pub const DECISION_SECONDS: &str = "preemptd_decision_duration_seconds";
/// Nodes the cache holds.
pub const CACHE_NODES: &str = "preemptd_cache_nodes";
/// Pods the cache holds.
pub const CACHE_PODS: &str = "preemptd_cache_pods";
/// Nominated pods the cache holds.
pub const CACHE_NOMINATED_PODS: &str = "preemptd_cache_nominated_pods";
/// PodDisruptionBudgets the cache holds.
pub const CACHE_PDBS: &str = "preemptd_cache_pdbs";
/// PodGroups the cache holds.
pub const CACHE_POD_GROUPS: &str = "preemptd_cache_pod_groups";
/// Workloads the cache holds.
pub const CACHE_WORKLOADS: &str = "preemptd_cache_workloads";
/// The nominations log's revision.
pub const NOMINATIONS_REVISION: &str = "preemptd_nominations_revision";
/// Open nomination watch streams.
pub const WATCH_SUBSCRIBERS: &str = "preemptd_watch_subscribers";
/// Nomination watch streams cut off for falling behind.
pub const WATCH_CUT_OFF: &str = "preemptd_watch_subscribers_cut_off_total";
/// Pods naming a PriorityClass that does not exist.
pub const UNKNOWN_PRIORITY_CLASS: &str = "preemptd_pods_unknown_priority_class_total";
/// Kubernetes watch events applied, by kind and type.
pub const KUBE_EVENTS: &str = "preemptd_kube_events_total";
/// Kubernetes relists, by kind.
pub const KUBE_RELISTS: &str = "preemptd_kube_relists_total";
/// Kubernetes watch errors, by kind.
pub const KUBE_WATCH_ERRORS: &str = "preemptd_kube_watch_errors_total";
/// Kubernetes objects the builder refused, by kind.
pub const KUBE_REJECTED: &str = "preemptd_kube_rejected_objects_total";
/// Seconds since a kind's last watch event.
pub const KUBE_SECONDS_SINCE_EVENT: &str = "preemptd_kube_seconds_since_last_event";
/// Seconds since a kind's last completed list.
pub const KUBE_SECONDS_SINCE_LIST: &str = "preemptd_kube_seconds_since_last_list";
/// Whether a kind's watch is healthy (1) or failing (0).
pub const KUBE_WATCH_HEALTHY: &str = "preemptd_kube_watch_healthy";
/// Requests refused by authorization.
pub const AUTHZ_DENIED: &str = "preemptd_authz_denied_total";
/// Failed TLS handshakes.
pub const TLS_HANDSHAKE_FAILURES: &str = "preemptd_tls_handshake_failures_total";
/// Scheduler extender requests, by verb.
pub const EXTENDER_REQUESTS: &str = "preemptd_extender_requests_total";
/// Scheduler extender request durations.
pub const EXTENDER_SECONDS: &str = "preemptd_extender_request_duration_seconds";
/// Nodes where the extender's answer diverged from the scheduler's.
pub const EXTENDER_DIVERGED: &str = "preemptd_extender_diverged_nodes_total";

/// kube-scheduler's buckets for victims per preemption: exponential(1, 2, 7).
const VICTIM_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
/// RPC latency: sub-millisecond decisions up to the default 10 s timeout.
const RPC_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Decide-and-commit time: the targets are p50 ≤ 1 ms, p99 ≤ 2–50 ms by cluster size.
const DECISION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide Prometheus recorder with explicit buckets and metric help,
/// or returns the one already installed by an earlier call. Fails when another recorder
/// was installed by someone else.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    // Servers starting at once (tests) install one after the other: the second finds the
    // first's handle.
    static INSTALLING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
    let _installing = INSTALLING.lock();
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(PREEMPTION_VICTIMS.into()), VICTIM_BUCKETS)
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(GRPC_HANDLING_SECONDS.into()), RPC_BUCKETS)
        })
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(DECISION_SECONDS.into()), DECISION_BUCKETS)
        })
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(EXTENDER_SECONDS.into()), DECISION_BUCKETS)
        })
        .context("metric buckets")?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)
        .ok()
        .context("another metrics recorder is already installed")?;
    describe();
    let _ = HANDLE.set(handle.clone());
    Ok(handle)
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(
        BUILD_INFO,
        "Always 1: preemptd's version and the Kubernetes version whose kube-scheduler it answers as (--kubernetes-version), as labels"
    );
    describe_counter!(
        PREEMPTION_ATTEMPTS,
        "Preemption attempts (Preempt calls for pods that fit nowhere)"
    );
    describe_histogram!(PREEMPTION_VICTIMS, "Victims per preemption decision");
    describe_counter!(GRPC_STARTED, "RPCs started on the server");
    describe_counter!(GRPC_HANDLED, "RPCs completed on the server, by status code");
    describe_histogram!(
        GRPC_HANDLING_SECONDS,
        "Time from the start of an RPC to its last response message"
    );
    describe_counter!(DECISIONS, "Preempt decisions by outcome");
    describe_histogram!(
        DECISION_SECONDS,
        "Time to decide (and commit) one Preempt call"
    );
    describe_gauge!(CACHE_NODES, "Nodes in the cluster cache");
    describe_gauge!(CACHE_PODS, "Pods in the cluster cache");
    describe_gauge!(CACHE_NOMINATED_PODS, "Pending pods nominated to a node");
    describe_gauge!(CACHE_PDBS, "PodDisruptionBudgets in the cluster cache");
    describe_gauge!(CACHE_POD_GROUPS, "PodGroups in the cluster cache");
    describe_gauge!(CACHE_WORKLOADS, "Workloads in the cluster cache");
    describe_gauge!(NOMINATIONS_REVISION, "Revision of the nominations log");
    describe_gauge!(WATCH_SUBSCRIBERS, "Open WatchNominations streams");
    describe_counter!(
        WATCH_CUT_OFF,
        "Watchers cut off with RESOURCE_EXHAUSTED for falling behind"
    );
    describe_counter!(
        UNKNOWN_PRIORITY_CLASS,
        "Pods held with priority 0 because the PriorityClass they name does not exist"
    );
    describe_counter!(
        KUBE_EVENTS,
        "Objects received from the Kubernetes watches, by kind and type (apply, delete)"
    );
    describe_counter!(
        KUBE_RELISTS,
        "Relists after a watch was cut off or expired (410 Gone), by kind"
    );
    describe_counter!(KUBE_WATCH_ERRORS, "Kubernetes watch errors, by kind");
    describe_counter!(
        KUBE_REJECTED,
        "Watched objects the builder refused, by kind (the version held before, if any, is dropped)"
    );
    describe_gauge!(
        KUBE_SECONDS_SINCE_EVENT,
        "Seconds since the last object arrived from a Kubernetes watch, by kind"
    );
    describe_gauge!(
        KUBE_SECONDS_SINCE_LIST,
        "Seconds since a Kubernetes list (the first, or a relist) last completed, by kind"
    );
    describe_gauge!(
        KUBE_WATCH_HEALTHY,
        "1 while a kind's Kubernetes watch is answered, 0 while its requests fail (retried about every second), by kind"
    );
    describe_counter!(
        AUTHZ_DENIED,
        "Calls refused by --authz (UNAUTHENTICATED or PERMISSION_DENIED), by method and the caller's role (none: unknown identity)"
    );
    describe_counter!(
        TLS_HANDSHAKE_FAILURES,
        "Refused or failed TLS handshakes, by port (grpc, metrics, extender) and reason"
    );
    describe_counter!(
        EXTENDER_REQUESTS,
        "kube-scheduler extender requests, by verb and outcome (ok, error: the reply's Error field, or the HTTP status)"
    );
    describe_histogram!(
        EXTENDER_SECONDS,
        "kube-scheduler extender request handling time, by verb"
    );
    describe_counter!(
        EXTENDER_DIVERGED,
        "Preemption candidates dropped because preemptd chose a victim the scheduler does not list on the node"
    );
}

/// Labels `preemptd_build_info` with the Kubernetes version decisions answer as (set
/// once a server starts serving metrics).
pub fn record_build_info(kubernetes_version: &'static str) {
    metrics::gauge!(
        BUILD_INFO,
        "version" => env!("CARGO_PKG_VERSION"),
        "kubernetes_version" => kubernetes_version
    )
    .set(1.0);
}

/// One extender request answered: `verb` (`filter`, `prioritize`, `preempt`) and
/// `outcome` (`ok`, `error`, or the HTTP status class such as `400`).
pub fn record_extender(verb: &'static str, outcome: &'static str, elapsed: Duration) {
    metrics::counter!(EXTENDER_REQUESTS, "verb" => verb, "outcome" => outcome).increment(1);
    metrics::histogram!(EXTENDER_SECONDS, "verb" => verb).record(elapsed.as_secs_f64());
}

/// A preemption candidate dropped because the views of preemptd and the scheduler
/// diverged (see the extender's `/preempt`).
pub fn extender_diverged(nodes: usize) {
    metrics::counter!(EXTENDER_DIVERGED).increment(nodes as u64);
}

/// A call refused by `--authz`: `method` as `service/method`, `role` the caller's or
/// `none`.
pub fn authz_denied(method: &'static str, role: &'static str) {
    metrics::counter!(AUTHZ_DENIED, "method" => method, "role" => role).increment(1);
}

/// A TLS handshake on `port` failed for `reason` (`bad_certificate`, `no_certificate`,
/// `not_tls`, `protocol`, `timeout`, `io`).
pub fn tls_handshake_failed(port: &'static str, reason: &'static str) {
    metrics::counter!(TLS_HANDSHAKE_FAILURES, "port" => port, "reason" => reason).increment(1);
}

/// A pod was kept with priority 0: its PriorityClass does not exist.
pub fn pod_with_unknown_priority_class() {
    metrics::counter!(UNKNOWN_PRIORITY_CLASS).increment(1);
}

/// One Preempt call answered. `outcome` is the lowercase outcome name.
pub fn record_decision(outcome: &'static str, victims: usize, elapsed: Duration) {
    metrics::counter!(DECISIONS, "outcome" => outcome).increment(1);
    metrics::histogram!(DECISION_SECONDS).record(elapsed.as_secs_f64());
    // As kube-scheduler: every PostFilter run is an attempt; victims are observed for
    // decisions that preempt.
    if outcome != "fits" {
        metrics::counter!(PREEMPTION_ATTEMPTS).increment(1);
    }
    if outcome == "preempt" {
        metrics::histogram!(PREEMPTION_VICTIMS).record(victims as f64);
    }
}

/// One method's `grpc_server_*` series, resolved once: each `counter!` or `histogram!`
/// with labels hashes its key and looks the series up in the recorder's registry, where a
/// resolved handle takes an atomic add. Resolved with the recorder installed at the time
/// (none: no-ops), so each server resolves its own.
pub struct RpcMetrics {
    service: &'static str,
    method: &'static str,
    started: metrics::Counter,
    seconds: metrics::Histogram,
    /// By status code (0–16), resolved at a code's first use so that only codes seen are
    /// exported, as go-grpc-prometheus does.
    handled: [OnceLock<metrics::Counter>; GRPC_CODES],
}

/// gRPC status codes, OK (0) to UNAUTHENTICATED (16).
pub const GRPC_CODES: usize = 17;

impl RpcMetrics {
    /// The metrics of one gRPC method.
    pub fn new(service: &'static str, method: &'static str) -> Self {
        RpcMetrics {
            service,
            method,
            started: metrics::counter!(
                GRPC_STARTED,
                "grpc_service" => service,
                "grpc_method" => method
            ),
            seconds: metrics::histogram!(
                GRPC_HANDLING_SECONDS,
                "grpc_service" => service,
                "grpc_method" => method
            ),
            handled: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The gRPC service name.
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The gRPC method name.
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// A call started.
    pub fn started(&self) {
        self.started.increment(1);
    }

    /// The call ended with status `code` (its number, and its name as the label).
    pub fn handled(&self, code: usize, code_label: &'static str, elapsed: Duration) {
        let counter = || {
            metrics::counter!(
                GRPC_HANDLED,
                "grpc_service" => self.service,
                "grpc_method" => self.method,
                "grpc_code" => code_label
            )
        };
        match self.handled.get(code) {
            Some(handle) => handle.get_or_init(counter).increment(1),
            None => counter().increment(1),
        }
        self.seconds.record(elapsed.as_secs_f64());
    }
}

/// Counts a nomination watch stream cut off.
pub fn watch_cut_off() {
    metrics::counter!(WATCH_CUT_OFF).increment(1);
}

/// Values read at scrape time (they cost a walk over the cache, so they are not kept
/// up to date on every change).
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    /// Nodes.
    pub nodes: usize,
    /// Pods.
    pub pods: usize,
    /// Nominated pods.
    pub nominated_pods: usize,
    /// PodDisruptionBudgets.
    pub pdbs: usize,
    /// PodGroups.
    pub pod_groups: usize,
    /// Workloads.
    pub workloads: usize,
    /// The nominations log's revision.
    pub nominations_revision: u64,
    /// Open nomination watch streams.
    pub watch_subscribers: usize,
}

/// Sets the scrape-time gauges.
pub fn set_gauges(s: &Snapshot) {
    metrics::gauge!(CACHE_NODES).set(s.nodes as f64);
    metrics::gauge!(CACHE_PODS).set(s.pods as f64);
    metrics::gauge!(CACHE_NOMINATED_PODS).set(s.nominated_pods as f64);
    metrics::gauge!(CACHE_PDBS).set(s.pdbs as f64);
    metrics::gauge!(CACHE_POD_GROUPS).set(s.pod_groups as f64);
    metrics::gauge!(CACHE_WORKLOADS).set(s.workloads as f64);
    metrics::gauge!(NOMINATIONS_REVISION).set(s.nominations_revision as f64);
    metrics::gauge!(WATCH_SUBSCRIBERS).set(s.watch_subscribers as f64);
}
