//! The RPC tower layer on the tonic server: one `rpc` span per call (W3C trace context
//! from the incoming metadata as its parent), go-grpc-prometheus style metrics, and the
//! per-RPC timeout.
//!
//! The call is complete when its response body ends: for unary calls right after the
//! message, for server streams when the stream ends (the status is then in the
//! trailers). So handling time and the span cover a stream's whole life, while the
//! timeout only bounds the wait for the response head — a `WatchNominations` stream
//! lives as long as the client wants.
//!
//! Every response also gets its `Date` header here, marked sensitive so that HPACK never
//! indexes it (see [`date_header`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::HeaderValue;
use http::header::DATE;
use http_body::{Body as HttpBody, Frame, SizeHint};
use prost::Message as _;
use tonic::Code;
use tonic::body::Body;
use tower::{Layer, Service};
use tracing::Instrument as _;

use super::errors::ApiError;
use crate::ops;
use crate::ops::metrics::RpcMetrics;

/// `(service, method)` label values for the methods this server knows; anything else is
/// `unknown` so clients cannot grow the metrics' label sets.
fn known_methods() -> &'static HashMap<String, (&'static str, &'static str)> {
    static METHODS: OnceLock<HashMap<String, (&'static str, &'static str)>> = OnceLock::new();
    METHODS.get_or_init(|| {
        let mut methods = HashMap::new();
        for set in [
            super::pb::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
        ] {
            let Ok(set) = prost_types::FileDescriptorSet::decode(set) else {
                continue;
            };
            for file in set.file {
                let package = file.package.unwrap_or_default();
                for service in file.service {
                    let name = service.name.unwrap_or_default();
                    let full: &'static str = if package.is_empty() {
                        name.leak()
                    } else {
                        format!("{package}.{name}").leak()
                    };
                    for method in service.method {
                        let method: &'static str = method.name.unwrap_or_default().leak();
                        methods.insert(format!("/{full}/{method}"), (full, method));
                    }
                }
            }
        }
        methods
    })
}

/// A known method's `service/method` name (its path without the leading slash).
pub(super) fn known_method_name(path: &str) -> Option<&'static str> {
    known_methods()
        .get_key_value(path)
        .map(|(known, _)| &known.as_str()[1..])
}

/// Every known method's metrics by path, and those of all other paths. Looked up once
/// per call: hashed with aHash, which on a path is several times cheaper than SipHash.
struct Methods {
    by_path: ahash::HashMap<&'static str, Arc<RpcMetrics>>,
    unknown: Arc<RpcMetrics>,
}

impl Methods {
    fn of(&self, path: &str) -> &Arc<RpcMetrics> {
        self.by_path.get(path).unwrap_or(&self.unknown)
    }
}

/// Builds the layer; `timeout` bounds every call's wait for its response head.
#[derive(Clone)]
pub(crate) struct RpcLayer {
    timeout: Option<Duration>,
    methods: Arc<Methods>,
}

impl RpcLayer {
    /// Resolves every method's metric series with the recorder installed now.
    pub(super) fn new(timeout: Option<Duration>) -> Self {
        let by_path = known_methods()
            .iter()
            .map(|(path, &(service, method))| {
                (path.as_str(), Arc::new(RpcMetrics::new(service, method)))
            })
            .collect();
        let methods = Methods {
            by_path,
            unknown: Arc::new(RpcMetrics::new("unknown", "unknown")),
        };
        RpcLayer {
            timeout,
            methods: Arc::new(methods),
        }
    }
}

impl<S> Layer<S> for RpcLayer {
    type Service = Rpc<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Rpc {
            inner,
            timeout: self.timeout,
            methods: self.methods.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct Rpc<S> {
    inner: S,
    timeout: Option<Duration>,
    methods: Arc<Methods>,
}

/// The client-streaming bulk load, exempt from the server's default rpc timeout.
const SYNC_PATH: &str = "/preemptd.v1.Preemption/Sync";

/// A gRPC `grpc-timeout` header value (`<digits><unit>`, at most 8 digits).
fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    if value.len() < 2 || value.len() > 9 {
        return None;
    }
    let (digits, unit) = value.split_at(value.len() - 1);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

fn code_label(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    }
}

fn status_of(headers: &http::HeaderMap) -> Option<Code> {
    headers
        .get("grpc-status")
        .map(|v| Code::from_bytes(v.as_bytes()))
}

/// The `Date` of a response, made once a second per thread and marked sensitive.
///
/// hyper adds an indexable `Date` to a response that has none, and HPACK then indexes a
/// new value every second; h2's encoder finds a header's indexed values by walking all of
/// that name's entries, so once a connection's table holds a minute of dates, every
/// response walks some sixty of them. A sensitive value is sent as a literal that is
/// never indexed.
fn date_header() -> HeaderValue {
    thread_local! {
        static DATE_OF_SECOND: RefCell<Option<(u64, HeaderValue)>> = const { RefCell::new(None) };
    }
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE_OF_SECOND.with_borrow_mut(|cached| match cached {
        Some((at, value)) if *at == second => value.clone(),
        _ => {
            let mut value = HeaderValue::try_from(httpdate::fmt_http_date(now))
                .expect("an HTTP date is valid header text");
            value.set_sensitive(true);
            *cached = Some((second, value.clone()));
            value
        }
    })
}

/// Records the end of a call exactly once: metrics, the span's status, a debug line. A
/// drop guard: a call dropped before it answered (its client cancelled a stream while
/// the handler still read it, or reset the connection) is recorded as CANCELLED, so
/// every started call is handled once.
struct Finish {
    span: tracing::Span,
    metrics: Arc<RpcMetrics>,
    start: Instant,
    recorded: bool,
}

impl Finish {
    fn finish(mut self, code: Code) {
        self.record(code);
    }

    fn record(&mut self, code: Code) {
        if std::mem::replace(&mut self.recorded, true) {
            return;
        }
        let elapsed = self.start.elapsed();
        self.metrics
            .handled(code as usize, code_label(code), elapsed);
        self.span.record("rpc.grpc.status_code", code as i32);
        if code != Code::Ok {
            self.span.record("otel.status_code", "ERROR");
        }
        let _entered = self.span.enter();
        tracing::debug!(
            code = code_label(code),
            elapsed_us = elapsed.as_micros() as u64,
            "rpc finished"
        );
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.record(Code::Cancelled);
    }
}

impl<S> Service<http::Request<Body>> for Rpc<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        // The clone that was driven ready is the one to call (tower's usual dance).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);

        let path = request.uri().path();
        let metrics = self.methods.of(path).clone();
        let (service, method) = (metrics.service(), metrics.method());
        let span = tracing::info_span!(
            "rpc",
            otel.name = %format_args!("{service}/{method}"),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            rpc.system = "grpc",
            rpc.service = service,
            rpc.method = method,
            rpc.grpc.status_code = tracing::field::Empty,
        );
        ops::telemetry::set_remote_parent(&span, request.headers());
        metrics.started();
        let timeout = request
            .headers()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_grpc_timeout)
            .into_iter()
            // A `Sync` stream answers only once the client has sent everything (a bulk
            // load can take minutes): only the client's own deadline bounds it.
            .chain(self.timeout.filter(|_| path != SYNC_PATH))
            .min();
        let finish = Finish {
            span: span.clone(),
            metrics,
            start: Instant::now(),
            recorded: false,
        };
        Box::pin(
            async move {
                let call = inner.call(request);
                let result = match timeout {
                    Some(limit) => match tokio::time::timeout(limit, call).await {
                        Ok(result) => result,
                        Err(_) => {
                            tracing::debug!(timeout = ?limit, "rpc timed out");
                            Ok(tonic::Status::from(ApiError::deadline_exceeded(limit)).into_http())
                        }
                    },
                    None => call.await,
                };
                match result {
                    Ok(response) => {
                        // Trailers-only responses (errors) carry the status in the head.
                        let head_code = status_of(response.headers());
                        let (mut parts, body) = response.into_parts();
                        parts.headers.insert(DATE, date_header());
                        let body = RpcBody {
                            inner: body,
                            finish: Some(finish),
                            code: head_code,
                        };
                        Ok(http::Response::from_parts(parts, Body::new(body)))
                    }
                    Err(error) => {
                        finish.finish(Code::Internal);
                        Err(error)
                    }
                }
            }
            .instrument(span),
        )
    }
}

pin_project_lite::pin_project! {
    /// The response body, watched for its trailers and its end.
    struct RpcBody {
        #[pin]
        inner: Body,
        finish: Option<Finish>,
        code: Option<Code>,
    }

    impl PinnedDrop for RpcBody {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(finish) = this.finish.take() {
                // Dropped before its end: the client went away (or the server stopped).
                finish.finish(this.code.unwrap_or(Code::Cancelled));
            }
        }
    }
}

impl HttpBody for RpcBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame.trailers_ref().and_then(status_of) {
                    *this.code = Some(code);
                }
            }
            Poll::Ready(Some(Err(_))) => *this.code = Some(Code::Internal),
            Poll::Ready(None) => {
                if let Some(finish) = this.finish.take() {
                    // A unary success ends with grpc-status 0 in the trailers; no status
                    // at all would be a protocol error.
                    finish.finish(this.code.unwrap_or(Code::Unknown));
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse() {
        assert_eq!(parse_grpc_timeout("100m"), Some(Duration::from_millis(100)));
        assert_eq!(parse_grpc_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("5"), None);
        assert_eq!(parse_grpc_timeout("123456789S"), None);
        assert_eq!(parse_grpc_timeout("x1S"), None);
    }

    #[test]
    fn the_date_header_is_current_and_never_indexed() {
        let value = date_header();
        assert!(value.is_sensitive());
        let date = httpdate::parse_http_date(value.to_str().unwrap()).unwrap();
        let skew = SystemTime::now().duration_since(date).unwrap();
        assert!(skew < Duration::from_secs(2), "{value:?} is {skew:?} old");
    }

    #[test]
    fn known_methods_include_every_service() {
        let methods = known_methods();
        assert_eq!(
            methods.get("/preemptd.v1.Preemption/Preempt"),
            Some(&("preemptd.v1.Preemption", "Preempt"))
        );
        assert!(methods.contains_key("/grpc.health.v1.Health/Check"));
        assert!(methods.contains_key("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"));
        assert!(!methods.contains_key("/preemptd.v1.Preemption/Nope"));
    }
}
