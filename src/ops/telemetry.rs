//! Logs (text or JSON on stderr, level from `RUST_LOG`) and, when an OTLP endpoint is
//! configured, span export over OTLP/gRPC with W3C trace-context propagation.
//!
//! Without an endpoint there is no exporter and no OpenTelemetry layer at all: spans then
//! only give log lines their context. With one, preemptd's own spans (target
//! `preemptd`, info and up, whatever `RUST_LOG` says) go to the collector; spans of
//! dependencies (tonic, hyper, h2) never do, so the exporter's own gRPC calls cannot
//! feed back into what it exports.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::FilterExt as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Set once an OTLP exporter is installed; lets the RPC layer skip trace-context
/// extraction when nothing would use it.
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// How long shutdown waits for the last spans to reach the collector.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "unknown log format {other:?}: supported values are \"text\", \"json\""
            )),
        }
    }
}

/// Logging and tracing export settings.
#[derive(Clone, Debug)]
pub struct TelemetryConfig {
    /// How log lines are written.
    pub log_format: LogFormat,
    /// OTLP/gRPC collector endpoint (`http://host:4317`); `None` turns tracing export off.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported resource.
    pub service_name: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            log_format: LogFormat::Text,
            otlp_endpoint: None,
            service_name: "preemptd".to_string(),
        }
    }
}

/// Checks an OTLP endpoint: an absolute `http` or `https` URL with a host.
pub fn parse_otlp_endpoint(text: &str) -> Result<String, String> {
    let uri: http::Uri = text
        .parse()
        .map_err(|e| format!("invalid otlp endpoint {text:?}: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => {
            return Err(format!(
                "invalid otlp endpoint {text:?}: the scheme must be http or https"
            ));
        }
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("invalid otlp endpoint {text:?}: no host"));
    }
    Ok(text.to_string())
}

/// Whether spans are being exported (an OTLP endpoint was configured).
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Keeps the exporter alive; [`TelemetryGuard::shutdown`] (or dropping it) flushes the
/// spans still queued. Blocking: call it outside async code (after the runtime's
/// `block_on` returns, or from `spawn_blocking`), while the runtime still exists — the
/// exporter's gRPC channel runs on it.
#[must_use = "dropping the guard stops the exporter"]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl TelemetryGuard {
    /// Flushes and stops the exporter.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(provider) = self.provider.take() {
            EXPORTING.store(false, Ordering::Relaxed);
            if let Err(error) = provider.shutdown_with_timeout(FLUSH_TIMEOUT) {
                // The subscriber may already be gone: say it on stderr too.
                eprintln!("preemptd: warning: trace exporter shutdown: {error}");
            }
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the log layer takes under `filter`. Spans are context for its lines only when
/// `filter` enables debug somewhere: a span the layer takes is formatted when it opens,
/// a few microseconds a call for lines that at info are rare and carry their own fields.
/// A span no layer takes (no exporter) costs nothing.
fn log_filter<S>(
    filter: tracing_subscriber::EnvFilter,
) -> impl tracing_subscriber::layer::Filter<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let log_spans = filter
        .max_level_hint()
        .is_none_or(|level| level >= tracing_subscriber::filter::LevelFilter::DEBUG);
    // Without a level hint of its own, the pair would have none (any level), and every
    // trace line in the gRPC stack would be checked one by one.
    let spans = tracing_subscriber::filter::filter_fn(move |meta| log_spans || !meta.is_span())
        .with_max_level_hint(tracing_subscriber::filter::LevelFilter::TRACE);
    filter.and(spans)
}

/// Installs the global tracing subscriber (once per process: a second call fails) and,
/// with an endpoint, the OTLP exporter and the W3C trace-context propagator. With an
/// endpoint it must run inside a tokio runtime (the exporter's channel is spawned on it).
pub fn init(config: &TelemetryConfig) -> anyhow::Result<TelemetryGuard> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let filter = log_filter(filter);
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = match config.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(ansi)
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .boxed(),
    }
    .with_filter(filter);

    let (otel, provider) = match &config.otlp_endpoint {
        None => (None, None),
        Some(endpoint) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint.clone())
                .build()
                .context("build the otlp span exporter")?;
            let resource = opentelemetry_sdk::Resource::builder()
                .with_service_name(config.service_name.clone())
                .build();
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource)
                .build();
            let tracer = provider.tracer("preemptd");
            let layer = tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(
                    tracing_subscriber::filter::Targets::new()
                        .with_target("preemptd", tracing::Level::INFO),
                );
            (Some(layer), Some(provider))
        }
    };
    // Without an exporter, no `Option` layer at all: a `None` one enables every span
    // for the registry, which then records each call's span that nothing reads.
    match otel {
        Some(otel) => tracing_subscriber::registry()
            .with(fmt)
            .with(otel)
            .try_init(),
        None => tracing_subscriber::registry().with(fmt).try_init(),
    }
    .context("install the tracing subscriber")?;
    if provider.is_some() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        EXPORTING.store(true, Ordering::Relaxed);
        tracing::info!(
            endpoint = config.otlp_endpoint.as_deref().unwrap_or_default(),
            service_name = %config.service_name,
            "exporting traces over otlp"
        );
    }
    Ok(TelemetryGuard { provider })
}

/// Reads trace-context headers from an HTTP header map (gRPC metadata).
struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// Makes the `traceparent` (and `tracestate`) of incoming metadata the parent of `span`.
/// A missing or malformed header leaves the span a root.
pub fn set_remote_parent(span: &tracing::Span, headers: &http::HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    if !exporting() || !headers.contains_key("traceparent") {
        return;
    }
    let context = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    // Fails only when the span is disabled; then there is nothing to parent.
    let _ = span.set_parent(context);
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// The log layer's output, kept.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What the log layer writes under `directives` for an info line inside an rpc span.
    fn logged(directives: &str) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .with_filter(log_filter(tracing_subscriber::EnvFilter::new(directives)));
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
            let span = tracing::info_span!("rpc", rpc.method = "UpdatePod");
            let _entered = span.enter();
            tracing::info!(pod = "web-0", "pod upserted");
            tracing::debug!("rpc finished");
        });
        let bytes = captured.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn spans_are_log_context_only_from_debug_on() {
        let info = logged("info");
        assert!(
            info.contains("pod upserted") && info.contains("web-0"),
            "{info}"
        );
        assert!(
            !info.contains("rpc{") && !info.contains("rpc finished"),
            "{info}"
        );
        for directives in ["debug", "info,preemptd=debug"] {
            let debug = logged(directives);
            assert!(debug.contains("rpc{rpc.method=\"UpdatePod\"}: "), "{debug}");
            assert!(debug.contains("pod upserted") && debug.contains("rpc finished"));
        }
    }
}
