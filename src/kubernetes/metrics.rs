//! The Kubernetes watches' metrics (names in `ops::metrics`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::ops::metrics::{
    KUBE_EVENTS, KUBE_REJECTED, KUBE_RELISTS, KUBE_SECONDS_SINCE_EVENT, KUBE_WATCH_ERRORS,
};

use super::Kind;

/// When each kind last received an object, in milliseconds since [`epoch`] (0: never).
static LAST_EVENT_MILLIS: [AtomicU64; Kind::ALL.len()] =
    [const { AtomicU64::new(0) }; Kind::ALL.len()];

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn index(kind: Kind) -> usize {
    Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

pub fn event(kind: Kind, kind_of_event: &'static str) {
    metrics::counter!(KUBE_EVENTS, "kind" => kind.name(), "type" => kind_of_event).increment(1);
    let millis = epoch().elapsed().as_millis() as u64 + 1;
    LAST_EVENT_MILLIS[index(kind)].store(millis, Ordering::Relaxed);
}

pub fn relist(kind: Kind) {
    metrics::counter!(KUBE_RELISTS, "kind" => kind.name()).increment(1);
}

pub fn watch_error(kind: Kind) {
    metrics::counter!(KUBE_WATCH_ERRORS, "kind" => kind.name()).increment(1);
}

pub fn rejected(kind: Kind) {
    metrics::counter!(KUBE_REJECTED, "kind" => kind.name()).increment(1);
}

/// Keeps the seconds-since-last-event gauges current, once a second, until aborted.
pub async fn report_event_ages() {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let now = epoch().elapsed().as_millis() as u64 + 1;
        for kind in Kind::ALL {
            let last = LAST_EVENT_MILLIS[index(kind)].load(Ordering::Relaxed);
            if last != 0 {
                let seconds = now.saturating_sub(last) as f64 / 1000.0;
                metrics::gauge!(KUBE_SECONDS_SINCE_EVENT, "kind" => kind.name()).set(seconds);
            }
        }
    }
}
