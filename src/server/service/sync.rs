//! `Sync`: a client stream of node, pod and PDB updates applied in stream order.
//!
//! Three stages overlap, each on its own thread. The receiving task takes each message
//! from tonic's stream, gathering what has arrived into chunks bounded by count and by
//! time (handed on as soon as nothing more has arrived). One converter per stream,
//! on the blocking pool, converts them to the model with the stream's memo (JSON
//! documents too, whose parse has no size bound). One applier, also on the blocking pool, applies them in order, so
//! stream order is kept; chunks that queued up while it was busy are applied as one.
//! Converting and applying take about as long as each other, receiving well under half
//! of either, so on two cores the two long stages run side by side. No thread is woken
//! per item, and none per chunk while the next stage is busy.
//!
//! Each item goes through the same conversion as the unary update of its kind and the
//! same apply function (see `apply`); a rejected item is counted and reported, never
//! fatal to the stream. An item tonic cannot decode fails the stream.

use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_stream::Stream;
use tonic::Streaming;

use crate::cache::UpdateOutcome;
use crate::model::build::Memo;
use crate::model::decode;
use crate::model::namespace::Namespace;
use crate::model::priority::PriorityClass;
use crate::model::{Node, Pod, PodDisruptionBudget};
use crate::nominations::Event;

use super::super::convert;
use super::super::errors::ApiError;
use super::super::pb;
use super::State;
use super::apply::{Change, PodArc};
use super::missing_change;

/// Most items per chunk: large enough to amortize the hand-off to the applier and the
/// locks taken per chunk.
const CHUNK_ITEMS: usize = 2048;
/// Longest time spent receiving one chunk on an async thread.
const CHUNK_TIME: Duration = Duration::from_micros(250);
/// Items received between readings of the clock: a reading costs more than receiving a
/// small item, and 16 items take well under CHUNK_TIME.
const ITEMS_PER_CLOCK_READING: usize = 16;
/// Chunks received but not yet converted, and chunks converted but not yet applied, per
/// stream: bounds the memory a fast client can make the server hold (a stage waits when
/// the queue after it is full).
const QUEUED_CHUNKS: usize = 8;
/// Queued chunks are merged up to about this many items: one lock and one cache batch for
/// them, while the lock is still held for no more than a couple of milliseconds.
const MERGED_ITEMS: usize = 512;
/// Streams of at least this many items are bulk loads: once applied, the memory their
/// decoding used is handed back to the OS.
const BULK_ITEMS: u64 = 1_000;
/// Rejections listed in the response; the rest are only counted.
pub(crate) const MAX_REJECTIONS: usize = 100;

/// What a stream did so far.
#[derive(Default)]
struct Tally {
    applied: pb::SyncCounts,
    stale: pb::SyncCounts,
    rejected: u64,
    rejections: Vec<pb::SyncRejection>,
    /// Index of the next item in the stream.
    next_index: u64,
}

#[derive(Clone, Copy)]
enum Kind {
    Node,
    Pod,
    Pdb,
    PriorityClass,
    Namespace,
}

impl Kind {
    fn field(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Pod => "pod",
            Kind::Pdb => "pdb",
            Kind::PriorityClass => "priority_class",
            Kind::Namespace => "namespace",
        }
    }

    fn count(self, counts: &mut pb::SyncCounts) -> &mut u64 {
        match self {
            Kind::Node => &mut counts.nodes,
            Kind::Pod => &mut counts.pods,
            Kind::Pdb => &mut counts.pdbs,
            Kind::PriorityClass => &mut counts.priority_classes,
            Kind::Namespace => &mut counts.namespaces,
        }
    }
}

impl Tally {
    fn record(&mut self, kind: Option<Kind>, result: Result<UpdateOutcome, ApiError>) {
        let index = self.next_index;
        self.next_index += 1;
        match (kind, result) {
            (Some(kind), Ok(outcome)) if outcome.applied => *kind.count(&mut self.applied) += 1,
            (Some(kind), Ok(_)) => *kind.count(&mut self.stale) += 1,
            (kind, Err(err)) => {
                self.rejected += 1;
                if self.rejections.len() < MAX_REJECTIONS {
                    let err = match kind {
                        Some(kind) => err.within(kind.field()),
                        None => err,
                    };
                    let field = match &err {
                        ApiError::InvalidArgument { path, .. } => path.clone(),
                        _ => kind.map(Kind::field).unwrap_or("item").to_string(),
                    };
                    self.rejections.push(pb::SyncRejection {
                        index,
                        code: err.code_name().to_string(),
                        field,
                        message: err.detail(),
                    });
                }
            }
            // A missing item always fails.
            (None, Ok(_)) => {}
        }
    }
}

/// Reads the stream into chunks of messages for the converter, until it ends (or fails,
/// or the server stops). Only cuts messages: converting them is the converter's.
async fn receive(
    state: &State,
    stream: &mut Streaming<pb::SyncRequest>,
    chunks: mpsc::Sender<Vec<pb::SyncRequest>>,
) -> Result<(), ApiError> {
    loop {
        let started = Instant::now();
        let mut chunk = Vec::with_capacity(CHUNK_ITEMS);
        let mut ended = false;
        while chunk.len() < CHUNK_ITEMS
            && (!chunk.len().is_multiple_of(ITEMS_PER_CLOCK_READING)
                || started.elapsed() < CHUNK_TIME)
        {
            let next = if chunk.is_empty() {
                std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx))
                    .await
                    .transpose()?
            } else {
                // Nothing more has arrived: what was received goes on now, not when the
                // client next sends.
                match next_if_ready(stream).await {
                    Some(next) => next.transpose()?,
                    None => break,
                }
            };
            match next {
                Some(item) => chunk.push(item),
                None => {
                    ended = true;
                    break;
                }
            }
        }
        state.check_running()?;
        if !chunk.is_empty() && chunks.send(chunk).await.is_err() {
            // The converter stopped early (it panicked): its join reports it.
            return Ok(());
        }
        if ended {
            return Ok(());
        }
    }
}

/// The converter of one stream: converts its chunks in order, with the stream's memo,
/// and hands them to the applier. Blocking: runs on the blocking pool.
fn convert_queue(
    mut received: mpsc::Receiver<Vec<pb::SyncRequest>>,
    converted: mpsc::Sender<Vec<Prepared>>,
) {
    let mut memo = Memo::for_stream();
    while let Some(chunk) = received.blocking_recv() {
        let prepared: Vec<Prepared> = chunk
            .into_iter()
            .map(|request| prepare(request, &mut memo))
            .collect();
        if converted.blocking_send(prepared).is_err() {
            // The applier only stops early by panicking: its join reports it.
            break;
        }
    }
    // Dropped here, on the blocking pool (a memo of tens of thousands of values takes
    // milliseconds to drop), and before a bulk load's freed memory is released.
    drop(memo);
    // What the memo and the chunks freed, before the load's memory is released.
    crate::ops::memory::flush_thread_cache();
}

/// Receives the stream, converts and applies it chunk by chunk, and reports.
pub(super) async fn run(
    state: Arc<State>,
    mut stream: Streaming<pb::SyncRequest>,
) -> Result<pb::SyncResponse, ApiError> {
    state.check_running()?;
    let (received, to_convert) = mpsc::channel::<Vec<pb::SyncRequest>>(QUEUED_CHUNKS);
    let (converted, to_apply) = mpsc::channel::<Vec<Prepared>>(QUEUED_CHUNKS);
    let mut converter = tokio::task::spawn_blocking(move || convert_queue(to_convert, converted));
    let applier = {
        let state = state.clone();
        tokio::task::spawn_blocking(move || state.apply_sync_queue(to_apply))
    };
    tokio::select! {
        received = receive(&state, &mut stream, received) => {
            received?;
            converter.await?;
        }
        // Only by panicking does the converter end first: the stream fails at once.
        converted = &mut converter => converted?,
    }
    let tally = applier.await?;
    tracing::debug!(
        items = tally.next_index,
        rejected = tally.rejected,
        "sync stream applied"
    );
    if tally.next_index >= BULK_ITEMS {
        // Awaited (a few milliseconds after a load of seconds), so the memory a client
        // reads once the answer is in is what the cache holds.
        let started = Instant::now();
        tokio::task::spawn_blocking(crate::ops::memory::release_free_memory).await?;
        tracing::debug!(
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "freed memory released after a bulk load"
        );
    }
    Ok(pb::SyncResponse {
        applied: Some(tally.applied),
        stale: Some(tally.stale),
        rejected: tally.rejected,
        rejections: tally.rejections,
        revision: state.cache.revision(),
        epoch: state.epoch.clone(),
        nominations_revision: state.log.revision(),
    })
}

/// The stream's next message if it has already arrived (`None` when it has not).
async fn next_if_ready(
    stream: &mut Streaming<pb::SyncRequest>,
) -> Option<Option<Result<pb::SyncRequest, tonic::Status>>> {
    std::future::poll_fn(|cx| {
        Poll::Ready(match Pin::new(&mut *stream).poll_next(cx) {
            Poll::Ready(next) => Some(next),
            Poll::Pending => None,
        })
    })
    .await
}

/// Decodes a JSON/YAML document inline (this already runs on the blocking pool).
fn decode_inline<T>(
    field: &str,
    text: &str,
    decode: fn(&serde_json::Value) -> Result<T, decode::DecodeError>,
) -> Result<T, ApiError> {
    let value = decode::parse_document(text).map_err(|e| ApiError::from_decode(field, e))?;
    decode(&value).map_err(|e| ApiError::from_decode(field, e))
}

/// An item after conversion (by the converter, while earlier chunks are applied).
enum Prepared {
    /// No item, or one whose conversion failed (of the kind, when it has one).
    Rejected(Option<Kind>, ApiError),
    /// Boxed, as the budgets: a load's items are nearly all pods, and every item moves
    /// through the queue at the size of the largest variant.
    Node(Box<Change<Node>>),
    /// In its final allocation, made (and first touched) by the converter: the applier
    /// only links it in.
    Pod(Change<PodArc>),
    Pdb(Box<Change<PodDisruptionBudget>>),
    PriorityClass(Box<Change<PriorityClass>>),
    Namespace(Box<Change<Namespace>>),
}

impl Prepared {
    fn node(change: Result<Change<Node>, ApiError>) -> Self {
        match change {
            Ok(change) => Prepared::Node(Box::new(change)),
            Err(error) => Prepared::Rejected(Some(Kind::Node), error),
        }
    }

    fn pod(change: Result<Change<PodArc>, ApiError>) -> Self {
        match change {
            Ok(change) => Prepared::Pod(change),
            Err(error) => Prepared::Rejected(Some(Kind::Pod), error),
        }
    }

    fn pdb(change: Result<Change<PodDisruptionBudget>, ApiError>) -> Self {
        match change {
            Ok(change) => Prepared::Pdb(Box::new(change)),
            Err(error) => Prepared::Rejected(Some(Kind::Pdb), error),
        }
    }

    fn priority_class(change: Result<Change<PriorityClass>, ApiError>) -> Self {
        match change {
            Ok(change) => Prepared::PriorityClass(Box::new(change)),
            Err(error) => Prepared::Rejected(Some(Kind::PriorityClass), error),
        }
    }

    fn namespace(change: Result<Change<Namespace>, ApiError>) -> Self {
        match change {
            Ok(change) => Prepared::Namespace(Box::new(change)),
            Err(error) => Prepared::Rejected(Some(Kind::Namespace), error),
        }
    }
}

fn upsert_pod(pod: Pod) -> Change<PodArc> {
    Change::Upsert(PodArc::new(pod))
}

/// Converts one item exactly as the unary update of its kind does (JSON decoded inline).
fn prepare(request: pb::SyncRequest, memo: &mut Memo) -> Prepared {
    use pb::sync_request::Item;
    match request.item {
        None => Prepared::Rejected(
            None,
            ApiError::invalid(
                "item",
                "one of node, pod, pdb, priority_class or namespace is required",
            ),
        ),
        Some(Item::Node(r)) => Prepared::node(match r.change {
            None => Err(missing_change()),
            Some(pb::update_node_request::Change::Upsert(n)) => {
                convert::node_with_memo("upsert", &n, memo).map(Change::Upsert)
            }
            Some(pb::update_node_request::Change::UpsertJson(text)) => {
                decode_inline("upsert_json", &text, decode::decode_node).map(Change::Upsert)
            }
            Some(pb::update_node_request::Change::Delete(r)) => Ok(Change::Delete(r)),
        }),
        Some(Item::Pod(r)) => Prepared::pod(match r.change {
            None => Err(missing_change()),
            Some(pb::update_pod_request::Change::Upsert(p)) => {
                convert::pod_with_memo("upsert", &p, memo).map(upsert_pod)
            }
            Some(pb::update_pod_request::Change::UpsertJson(text)) => {
                decode_inline("upsert_json", &text, decode::decode_pod).map(upsert_pod)
            }
            Some(pb::update_pod_request::Change::Delete(r)) => Ok(Change::Delete(r)),
        }),
        Some(Item::Pdb(r)) => Prepared::pdb(match r.change {
            None => Err(missing_change()),
            Some(pb::update_pod_disruption_budget_request::Change::Upsert(b)) => {
                convert::pdb("upsert", &b).map(Change::Upsert)
            }
            Some(pb::update_pod_disruption_budget_request::Change::UpsertJson(text)) => {
                decode_inline("upsert_json", &text, decode::decode_pdb).map(Change::Upsert)
            }
            Some(pb::update_pod_disruption_budget_request::Change::Delete(r)) => {
                Ok(Change::Delete(r))
            }
        }),
        Some(Item::PriorityClass(r)) => Prepared::priority_class(match r.change {
            None => Err(missing_change()),
            Some(pb::update_priority_class_request::Change::Upsert(c)) => {
                convert::priority_class("upsert", &c).map(Change::Upsert)
            }
            Some(pb::update_priority_class_request::Change::UpsertJson(text)) => {
                decode_inline("upsert_json", &text, decode::decode_priority_class)
                    .map(Change::Upsert)
            }
            Some(pb::update_priority_class_request::Change::Delete(r)) => Ok(Change::Delete(r)),
        }),
        Some(Item::Namespace(r)) => Prepared::namespace(match r.change {
            None => Err(missing_change()),
            Some(pb::update_namespace_request::Change::Upsert(n)) => {
                convert::namespace("upsert", &n).map(Change::Upsert)
            }
            Some(pb::update_namespace_request::Change::UpsertJson(text)) => {
                decode_inline("upsert_json", &text, decode::decode_namespace).map(Change::Upsert)
            }
            Some(pb::update_namespace_request::Change::Delete(r)) => Ok(Change::Delete(r)),
        }),
    }
}

impl State {
    /// The applier of one stream: applies its chunks in order until the converter
    /// is done, and returns what they did. Blocking: runs on the blocking pool.
    fn apply_sync_queue(&self, mut queue: mpsc::Receiver<Vec<Prepared>>) -> Tally {
        let mut tally = Tally::default();
        let mut chunks = Vec::new();
        while let Some(chunk) = queue.blocking_recv() {
            // Chunks that queued up while the last was applied: one batch, one lock.
            // Applied as they are, not appended to the first (no copy, no regrowth).
            let mut items = chunk.len();
            chunks.push(chunk);
            while items < MERGED_ITEMS
                && let Ok(more) = queue.try_recv()
            {
                items += more.len();
                chunks.push(more);
            }
            self.apply_sync_chunk(chunks.drain(..).flatten(), &mut tally);
        }
        self.cache.end_bulk_load();
        // What the chunks and the replaced entries freed, before the load's memory is
        // released.
        crate::ops::memory::flush_thread_cache();
        tally
    }

    /// Applies one chunk in stream order.
    ///
    /// Under the nominations ordering lock (held for the chunk, a few milliseconds at
    /// most, so pod changes and their events are published as one batch in order), items
    /// are applied in stream order, runs of pod changes together (see `apply_pods`).
    fn apply_sync_chunk(&self, chunk: impl Iterator<Item = Prepared>, tally: &mut Tally) {
        let ordered = self.sync.lock();
        let mut events = Vec::new();
        let mut pods: Vec<Change<PodArc>> = Vec::with_capacity(MERGED_ITEMS);
        let apply_pods =
            |pods: &mut Vec<Change<PodArc>>, tally: &mut Tally, events: &mut Vec<Event>| {
                if !pods.is_empty() {
                    self.apply_pods(&ordered, pods.drain(..), events, |outcome| {
                        tally.record(Some(Kind::Pod), outcome)
                    });
                }
            };
        for item in chunk {
            if !matches!(item, Prepared::Pod(_)) {
                apply_pods(&mut pods, tally, &mut events);
            }
            match item {
                Prepared::Pod(change) => pods.push(change),
                Prepared::Rejected(kind, error) => tally.record(kind, Err(error)),
                Prepared::Node(change) => tally.record(Some(Kind::Node), self.apply_node(*change)),
                Prepared::Pdb(change) => tally.record(Some(Kind::Pdb), self.apply_pdb(*change)),
                Prepared::PriorityClass(change) => tally.record(
                    Some(Kind::PriorityClass),
                    self.apply_priority_class(*change),
                ),
                Prepared::Namespace(change) => {
                    tally.record(Some(Kind::Namespace), self.apply_namespace(*change))
                }
            }
        }
        apply_pods(&mut pods, tally, &mut events);
        self.log.publish(events);
    }
}
