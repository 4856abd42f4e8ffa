//! One kind's watch: list, then watch, retrying with a short backoff, each event
//! converted on arrival and queued for the applier.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use kube::api::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher;
use tokio::sync::mpsc;

use crate::model::build::Memo;

use super::applier::{Change, Control};
use super::watched::{KindType, Watched, convert, next_with_memo};
use super::{Kind, ObjectKey, metrics};

/// The pause between a kind's watch retries before jitter (which adds up to as much
/// again): an API server back from an outage is relisted within about a second.
/// kube-rs's default grows to 30 s (plus jitter), so a cluster stayed stale for up to
/// half a minute after its API server answered again. Not shorter: a failed list starts
/// over with an `Init` event, which resets the stream's backoff, so this is also the
/// pace of list retries while the API server is down.
const RETRY_DELAY: Duration = Duration::from_millis(500);
/// How often a watch that keeps failing says so again.
const FAILING_LOG_EVERY: Duration = Duration::from_secs(30);

/// A watch's retry pauses: [`RETRY_DELAY`], jittered.
fn retry_backoff() -> watcher::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(RETRY_DELAY)
        .with_max_delay(RETRY_DELAY)
        .with_jitter()
        .without_max_times()
        .into()
}

/// One kind's watch: every event converted on arrival and queued for the applier.
pub(super) async fn watch<K: KindType>(client: kube::Client, changes: mpsc::Sender<Change>) {
    let kind = K::KIND;
    let api: Api<Watched<K>> = Api::all_with(client, &kind.api_resource());
    let mut events = watcher(api, watcher::Config::default())
        .backoff(retry_backoff())
        .boxed();
    let mut outage = Outage::default();
    // Set at each (re)list's start, which comes first.
    let mut memo = None;
    while let Some(event) = next_with_memo(&mut events, &mut memo).await {
        // `Init` comes before any request: it says nothing of the API server.
        if matches!(&event, Ok(e) if !matches!(e, watcher::Event::Init)) {
            outage.ended(kind);
        }
        let change = match event {
            Ok(watcher::Event::Init) => {
                // A list converts many objects at once: remember as a Sync stream does.
                memo = Some(Box::new(Memo::for_stream()));
                Some(Change::Other(Control::ListStarted(kind)))
            }
            Ok(watcher::Event::InitApply(object) | watcher::Event::Apply(object)) => {
                Some(upsert_or_refusal(object))
            }
            Ok(watcher::Event::Delete(object)) => deletion(&object),
            Ok(watcher::Event::InitDone) => {
                let list_memo = memo.replace(Box::new(Memo::for_long_lived()));
                // Dropped before the cache hands free memory back at SERVING: a list's
                // memo holds the keys of its templates (megabytes for a large cluster),
                // milliseconds to free, so not on an async thread. Left in the freeing
                // thread's cache, a few hundred keys kept ~100 slabs of their size
                // resident (3 MB at 60k pods).
                let _ = tokio::task::spawn_blocking(move || {
                    drop(list_memo);
                    crate::ops::memory::flush_thread_cache();
                })
                .await;
                Some(Change::Other(Control::ListDone(kind)))
            }
            Err(error) => {
                metrics::watch_error(kind);
                outage.failed(kind, &error);
                None
            }
        };
        if let Some(change) = change
            && changes.send(change).await.is_err()
        {
            return;
        }
    }
}

/// A watch's run of failures: logged when it starts, every [`FAILING_LOG_EVERY`] while
/// it lasts, and when it ends (retries come about every second, too often to log each).
#[derive(Default)]
struct Outage {
    since: Option<Instant>,
    failures: u64,
    last_logged: Option<Instant>,
}

impl Outage {
    fn failed(&mut self, kind: Kind, error: &watcher::Error) {
        let now = Instant::now();
        let since = *self.since.get_or_insert_with(|| {
            metrics::watch_healthy(kind, false);
            now
        });
        self.failures += 1;
        if self
            .last_logged
            .is_none_or(|last| now.duration_since(last) >= FAILING_LOG_EVERY)
        {
            self.last_logged = Some(now);
            tracing::warn!(
                kind = kind.name(),
                %error,
                failures = self.failures,
                failing_seconds = now.duration_since(since).as_secs(),
                "watch failed, retrying"
            );
        }
    }

    fn ended(&mut self, kind: Kind) {
        if let Some(since) = self.since.take() {
            metrics::watch_healthy(kind, true);
            tracing::info!(
                kind = kind.name(),
                failures = self.failures,
                failed_seconds = since.elapsed().as_secs_f64(),
                "watch answered again"
            );
            *self = Outage::default();
        }
    }
}

/// What an added or changed object means for the cache: the model object, or, when the
/// builder refuses it, that whatever is held under its name goes. The object as the API
/// server now has it cannot be represented, so an older version kept would answer for an
/// object that no longer is; a relist drops it (it is not named by the list), and a watch
/// event does the same, so a long-running preemptd and a fresh one agree.
pub(super) fn upsert_or_refusal<K: KindType>(watched: Watched<K>) -> Change {
    let key = ObjectKey {
        kind: K::KIND,
        namespace: watched.metadata.namespace.clone().unwrap_or_default(),
        name: watched.metadata.name.clone().unwrap_or_default(),
    };
    match convert(watched) {
        Some(object) => Change::Upsert(object),
        None => Change::Other(Control::Refused(key)),
    }
}
fn deletion<K: KindType>(object: &Watched<K>) -> Option<Change> {
    let kind = K::KIND;
    let name = object.metadata.name.clone()?;
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let key = ObjectKey {
        kind,
        namespace,
        name,
    };
    Some(Change::Other(Control::Delete(
        key,
        object.metadata.uid.clone(),
    )))
}
