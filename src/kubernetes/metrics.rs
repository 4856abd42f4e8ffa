//! The Kubernetes watches' metrics (names in `ops::metrics`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::ops::metrics::{
    KUBE_EVENTS, KUBE_REJECTED, KUBE_RELISTS, KUBE_SECONDS_SINCE_EVENT, KUBE_SECONDS_SINCE_LIST,
    KUBE_WATCH_ERRORS, KUBE_WATCH_HEALTHY,
};

use super::Kind;

/// A time per kind, in milliseconds since [`epoch`] (0: never).
type PerKind = [AtomicU64; Kind::ALL.len()];

/// When each kind last received an object.
static LAST_EVENT_MILLIS: PerKind = [const { AtomicU64::new(0) }; Kind::ALL.len()];
/// When each kind last finished a list.
static LAST_LIST_MILLIS: PerKind = [const { AtomicU64::new(0) }; Kind::ALL.len()];
/// When each kind last logged a refused object, and the refusals not logged since.
static LAST_REFUSAL_LOG_MILLIS: PerKind = [const { AtomicU64::new(0) }; Kind::ALL.len()];
static REFUSALS_NOT_LOGGED: PerKind = [const { AtomicU64::new(0) }; Kind::ALL.len()];

/// How often a kind logs a refused object at most: a relist of many refused objects
/// would otherwise log each one again.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Now, in milliseconds since [`epoch`], never 0.
fn now_millis() -> u64 {
    epoch().elapsed().as_millis() as u64 + 1
}

fn index(kind: Kind) -> usize {
    Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

pub(super) fn event(kind: Kind, kind_of_event: &'static str) {
    metrics::counter!(KUBE_EVENTS, "kind" => kind.name(), "type" => kind_of_event).increment(1);
    LAST_EVENT_MILLIS[index(kind)].store(now_millis(), Ordering::Relaxed);
}

/// A list (the first or a relist) of `kind` is complete.
pub(super) fn listed(kind: Kind) {
    LAST_LIST_MILLIS[index(kind)].store(now_millis(), Ordering::Relaxed);
}

pub(super) fn relist(kind: Kind) {
    metrics::counter!(KUBE_RELISTS, "kind" => kind.name()).increment(1);
}

pub(super) fn watch_error(kind: Kind) {
    metrics::counter!(KUBE_WATCH_ERRORS, "kind" => kind.name()).increment(1);
}

/// Whether `kind`'s watch is answered (set when that changes).
pub(super) fn watch_healthy(kind: Kind, healthy: bool) {
    metrics::gauge!(KUBE_WATCH_HEALTHY, "kind" => kind.name()).set(if healthy { 1.0 } else { 0.0 });
}

pub(super) fn rejected(kind: Kind) {
    metrics::counter!(KUBE_REJECTED, "kind" => kind.name()).increment(1);
}

/// Whether a refused object of `kind` is to be logged now, with how many refusals went
/// unlogged before it; `None`: count it, do not log it.
pub(super) fn refusal_log_due(kind: Kind) -> Option<u64> {
    let now = now_millis();
    let last = &LAST_REFUSAL_LOG_MILLIS[index(kind)];
    let previous = last.load(Ordering::Relaxed);
    let due = previous == 0 || now.saturating_sub(previous) >= REFUSAL_LOG_EVERY.as_millis() as u64;
    let not_logged = &REFUSALS_NOT_LOGGED[index(kind)];
    if due
        && last
            .compare_exchange(previous, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        Some(not_logged.swap(0, Ordering::Relaxed))
    } else {
        not_logged.fetch_add(1, Ordering::Relaxed);
        None
    }
}

/// Every watched kind's watch is taken as answered until it fails.
pub(super) fn watches_started(kinds: &[Kind]) {
    for &kind in kinds {
        watch_healthy(kind, true);
    }
}

/// Keeps the seconds-since gauges of the watched `kinds` current, once a second, until
/// aborted.
pub(super) async fn report_event_ages(kinds: Vec<Kind>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let now = now_millis();
        for &kind in &kinds {
            let since = |times: &PerKind| {
                let last = times[index(kind)].load(Ordering::Relaxed);
                (last != 0).then(|| now.saturating_sub(last) as f64 / 1000.0)
            };
            if let Some(seconds) = since(&LAST_EVENT_MILLIS) {
                metrics::gauge!(KUBE_SECONDS_SINCE_EVENT, "kind" => kind.name()).set(seconds);
            }
            if let Some(seconds) = since(&LAST_LIST_MILLIS) {
                metrics::gauge!(KUBE_SECONDS_SINCE_LIST, "kind" => kind.name()).set(seconds);
            }
        }
    }
}
