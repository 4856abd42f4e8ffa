//! Operations: logging and OTLP tracing ([`telemetry`]), Prometheus metrics
//! ([`metrics`]). Both are process-wide (a global tracing subscriber, a global metrics
//! recorder), so they are installed once per process by the binary — or by a test
//! binary — and the server works without either.

pub mod memory;
pub mod metrics;
pub mod telemetry;
