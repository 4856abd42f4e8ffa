//! The kube-scheduler extender (`serve --extender-listen ADDR`): `POST /filter`,
//! `/prioritize` and `/preempt` in the JSON of k8s.io/kube-scheduler/extender/v1
//! ([`wire`]), over the cache and the engine ([`verbs`]). HTTP/1.1 and HTTP/2 on axum,
//! over the gRPC port's TLS (and mTLS) when it has one; with `--authz`, every verb needs a
//! reader.
//!
//! Errors: a malformed body is 400, a refused caller 403 (statuses from the one error
//! table, [`ApiError::http_status`]). Trouble inside a decision — a pod the builder
//! refuses — is, for `/filter`, the reply's `Error` field as kube-scheduler expects;
//! `/prioritize` and `/preempt` have no such field in v1, so there it is a 400 with the
//! message (an unknown field would be dropped silently by the scheduler's decoder).

mod envelope;
mod verbs;
pub mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use axum::Router;
use axum::body::Body;
use axum::extract::connect_info::ConnectInfo;
use axum::extract::{DefaultBodyLimit, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tokio::net::TcpListener;

use super::authz::{self, AuthzPolicy};
use super::errors::ApiError;
use super::http::HttpEndpoint;
use super::tls::{PeerInfo, TlsAcceptor};
use crate::app::{App, AppError};

pub use verbs::NOT_CACHED;

/// What the handlers share.
struct Extender {
    app: Arc<App>,
    authz: Option<Arc<AuthzPolicy>>,
    max_body_bytes: usize,
}

/// Binds `addr` and serves the verbs (over TLS with `tls`).
pub(crate) async fn start(
    addr: SocketAddr,
    app: Arc<App>,
    authz: Option<Arc<AuthzPolicy>>,
    max_body_bytes: usize,
    tls: Option<TlsAcceptor>,
) -> anyhow::Result<HttpEndpoint> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("bind extender address {addr}"))?;
    let extender = Arc::new(Extender {
        app,
        authz,
        max_body_bytes,
    });
    let app = Router::new()
        .route("/filter", post(filter))
        .route("/prioritize", post(prioritize))
        .route("/preempt", post(preempt))
        // The handlers read the body with the gRPC message limit themselves.
        .layer(DefaultBodyLimit::disable())
        .with_state(extender);
    let endpoint =
        HttpEndpoint::serve("extender", listener, tls, app).context("extender local address")?;
    tracing::info!(addr = %endpoint.local_addr(), "serving the kube-scheduler extender at /filter, /prioritize, /preempt");
    Ok(endpoint)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Filter,
    Prioritize,
    Preempt,
}

impl Verb {
    fn name(self) -> &'static str {
        match self {
            Verb::Filter => "filter",
            Verb::Prioritize => "prioritize",
            Verb::Preempt => "preempt",
        }
    }

    /// The label of refusals in `preemptd_authz_denied_total`.
    fn method(self) -> &'static str {
        match self {
            Verb::Filter => "extender/filter",
            Verb::Prioritize => "extender/prioritize",
            Verb::Preempt => "extender/preempt",
        }
    }
}

/// A verb's answer: the JSON body, and whether it reports trouble in its `Error` field.
struct Answer {
    json: Vec<u8>,
    error: bool,
}

impl Answer {
    fn of<T: serde::Serialize>(value: &T, error: bool) -> Result<Self, ApiError> {
        let json = serde_json::to_vec(value)
            .map_err(|e| ApiError::internal(format!("encode the reply: {e}")))?;
        Ok(Answer { json, error })
    }
}

async fn filter(
    AxumState(extender): AxumState<Arc<Extender>>,
    ConnectInfo(peer): ConnectInfo<PeerInfo>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(Verb::Filter, extender, peer, headers, body).await
}

async fn prioritize(
    AxumState(extender): AxumState<Arc<Extender>>,
    ConnectInfo(peer): ConnectInfo<PeerInfo>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(Verb::Prioritize, extender, peer, headers, body).await
}

async fn preempt(
    AxumState(extender): AxumState<Arc<Extender>>,
    ConnectInfo(peer): ConnectInfo<PeerInfo>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(Verb::Preempt, extender, peer, headers, body).await
}

/// One request: authorize, read the body, answer off the async threads, count and time.
async fn handle(
    verb: Verb,
    extender: Arc<Extender>,
    peer: PeerInfo,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let start = Instant::now();
    let span = tracing::info_span!(
        "extender",
        verb = verb.name(),
        peer = ?peer.remote_addr,
        status = tracing::field::Empty,
        error = tracing::field::Empty,
    );
    let answered = {
        let span = span.clone();
        async move {
            if let Some(policy) = &extender.authz {
                authz::check_extender(
                    policy,
                    verb.method(),
                    peer.certificate.as_deref(),
                    &headers,
                )?;
            }
            extender.app.check_listed()?;
            let body = read_body(body, extender.max_body_bytes).await?;
            answer(verb, extender.app.clone(), body, span).await
        }
    };
    let answered = tracing::Instrument::instrument(answered, span.clone()).await;
    let (response, outcome) = match answered {
        Ok(answer) => {
            let outcome = if answer.error { "error" } else { "ok" };
            if answer.error {
                span.record("error", true);
            }
            (json_response(StatusCode::OK, answer.json), outcome)
        }
        Err(error) => {
            let status = error.http_status();
            span.record("error", true);
            if status.is_server_error() {
                tracing::warn!(parent: &span, %error, "extender request failed");
            } else {
                tracing::debug!(parent: &span, %error, "extender request refused");
            }
            (error_response(status, &error), outcome_of(status))
        }
    };
    span.record("status", response.status().as_u16());
    crate::ops::metrics::record_extender(verb.name(), outcome, start.elapsed());
    response
}

/// The metric outcome of an HTTP error status.
fn outcome_of(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => "denied",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::TOO_MANY_REQUESTS => "overloaded",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        s if s.is_client_error() => "client_error",
        _ => "server_error",
    }
}

async fn read_body(body: Body, limit: usize) -> Result<bytes::Bytes, ApiError> {
    let too_large = || {
        ApiError::TooLarge(format!(
            "request body is larger than the limit of {limit} bytes (--max-message-bytes)"
        ))
    };
    match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => Ok(bytes),
        Err(error) => {
            let over = std::error::Error::source(&error)
                .is_some_and(|e| e.is::<http_body_util::LengthLimitError>());
            if over {
                Err(too_large())
            } else {
                Err(ApiError::invalid(
                    "body",
                    format!("cannot read the request body: {error}"),
                ))
            }
        }
    }
}

/// Runs the verb: `/filter` and `/prioritize` on the blocking pool, `/preempt` (a dry run
/// per candidate) on a decision lane as gRPC `Preempt` does.
async fn answer(
    verb: Verb,
    app: Arc<App>,
    body: bytes::Bytes,
    span: tracing::Span,
) -> Result<Answer, ApiError> {
    let work = {
        let app = app.clone();
        move || {
            let _entered = span.enter();
            run_verb(verb, &app, &body)
        }
    };
    match verb {
        Verb::Filter | Verb::Prioritize => tokio::task::spawn_blocking(work).await?,
        Verb::Preempt => {
            // A dry run per candidate: a decision like gRPC Preempt, shed with it.
            let permit = app.decision_permit(AppError::preempt_overloaded)?;
            app.on_lane(permit, work).await?
        }
    }
}

/// Decodes the body and answers. Blocking.
fn run_verb(verb: Verb, app: &App, body: &[u8]) -> Result<Answer, ApiError> {
    match verb {
        Verb::Filter => {
            let result = verbs::filter(app, wire::parse_args(body)?);
            let error = !result.error.is_empty();
            Answer::of(&result, error)
        }
        Verb::Prioritize => {
            let list = verbs::prioritize(app, wire::parse_args(body)?)?;
            let json = wire::write_array(&list)
                .map_err(|e| ApiError::internal(format!("encode the reply: {e}")))?;
            Ok(Answer { json, error: false })
        }
        Verb::Preempt => Answer::of(
            &verbs::preempt(app, wire::parse_preemption_args(body)?)?,
            false,
        ),
    }
}

fn json_response(status: StatusCode, json: Vec<u8>) -> Response {
    let mut response = (status, json).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An error as JSON: `{"error": message}` (kube-scheduler logs the body of a failed call).
fn error_response(status: StatusCode, error: &ApiError) -> Response {
    let json =
        serde_json::to_vec(&serde_json::json!({ "error": error.to_string() })).unwrap_or_default();
    json_response(status, json)
}
