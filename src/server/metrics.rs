//! The `/metrics` port: the Prometheus text of the process-wide recorder
//! (`ops::metrics`), served by axum over HTTP/1.1 and HTTP/2, over TLS when the gRPC port
//! has it.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::http::HttpEndpoint;
use super::tls::TlsAcceptor;
use crate::ops::metrics::{Snapshot, set_gauges};

/// Scrapes rendered at once.
const MAX_SCRAPES: usize = 16;
/// Prometheus' text exposition format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Reads the scrape-time values; runs on the blocking pool.
pub(crate) type SnapshotFn = Arc<dyn Fn() -> Snapshot + Send + Sync>;

/// What a scrape reads.
struct Scrape {
    handle: PrometheusHandle,
    snapshot: SnapshotFn,
    /// Renders at once; more scrapes wait their turn (the port is for Prometheus, not the
    /// public, and each render holds a blocking thread).
    renders: Semaphore,
}

/// Binds `addr` and serves `handle` at `/metrics`, refreshing the scrape-time gauges
/// from `snapshot` on every scrape; over TLS with `tls`.
pub(crate) async fn start(
    addr: SocketAddr,
    handle: PrometheusHandle,
    snapshot: SnapshotFn,
    tls: Option<TlsAcceptor>,
) -> anyhow::Result<HttpEndpoint> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("bind metrics address {addr}"))?;
    let scrape = Arc::new(Scrape {
        handle,
        snapshot,
        renders: Semaphore::new(MAX_SCRAPES),
    });
    let app = Router::new()
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(scrape);
    let endpoint =
        HttpEndpoint::serve("metrics", listener, tls, app).context("metrics local address")?;
    tracing::info!(addr = %endpoint.local_addr(), "serving metrics at /metrics");
    Ok(endpoint)
}

/// The gauges live in the one process-wide recorder: setting them and rendering is one
/// step, so a scrape never renders the values another server in the process (tests run
/// several) set meanwhile.
static RENDER: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// `GET /metrics` (axum answers `HEAD` from it, and other methods with 405).
async fn metrics(State(scrape): State<Arc<Scrape>>) -> Response {
    let Ok(_permit) = scrape.renders.acquire().await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    // Counting nominated pods walks every node: keep it off the async threads.
    let rendered = {
        let scrape = scrape.clone();
        tokio::task::spawn_blocking(move || {
            let _one_at_a_time = RENDER.lock();
            set_gauges(&(scrape.snapshot)());
            scrape.handle.render()
        })
        .await
    };
    match rendered {
        Ok(body) => ([(header::CONTENT_TYPE, TEXT_FORMAT)], body).into_response(),
        Err(error) => {
            tracing::warn!(%error, "metrics render failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

async fn not_found() -> (StatusCode, &'static str) {
    (
        StatusCode::NOT_FOUND,
        "not found: metrics are at /metrics\n",
    )
}
