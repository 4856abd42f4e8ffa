//! `Sync`: a client stream of node, pod and PDB updates applied in stream order.
//!
//! Three stages overlap, each on its own thread. The receiving task takes each message
//! from tonic's stream, gathering what has arrived into chunks bounded by count and by
//! time (handed on as soon as nothing more has arrived). One converter per stream,
//! on the blocking pool, converts them to the model with the stream's memo (pods and
//! nodes read straight from their encoding, see `wire`; JSON documents too). One applier, also on the blocking pool, applies them in order, so
//! stream order is kept; chunks that queued up while it was busy are applied as one.
//! Converting and applying take about as long as each other, receiving well under half
//! of either, so on two cores the two long stages run side by side. No thread is woken
//! per item, and none per chunk while the next stage is busy.
//!
//! Each item goes through the same dispatch as the unary update of its kind (see
//! `changes`) and the core's one apply; a rejected item is counted and reported, never
//! fatal to the stream. An item whose encoding prost rejects fails the stream, as tonic
//! fails a stream it cannot decode.

use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_stream::Stream;
use tonic::Streaming;

use crate::app::{AnyChange, App, Applied, Change, PodArc};
use crate::model::build::Memo;

use super::super::errors::ApiError;
use super::super::pb;
use super::super::wire::{self, Received, SyncRequestWire, WireItem};
use super::changes::{Kind, read_sync_item};

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

impl Tally {
    fn record(&mut self, kind: Option<Kind>, result: Result<Applied, ApiError>) {
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
                    let field = match err.field() {
                        Some(path) => path.to_string(),
                        None => kind.map(Kind::field).unwrap_or("item").to_string(),
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
    app: &App,
    stream: &mut Streaming<SyncRequestWire>,
    chunks: mpsc::Sender<Vec<SyncRequestWire>>,
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
        app.check_running()?;
        if !chunk.is_empty() && chunks.send(chunk).await.is_err() {
            // The converter stopped early, on an item it cannot decode (or by
            // panicking): its join reports it.
            return Ok(());
        }
        if ended {
            return Ok(());
        }
    }
}

/// The converter of one stream: converts its chunks in order, with the stream's memo,
/// and hands them to the applier. Blocking: runs on the blocking pool. Fails on an item
/// whose encoding prost rejects, as tonic fails a stream it cannot decode.
fn convert_queue(
    mut received: mpsc::Receiver<Vec<SyncRequestWire>>,
    converted: mpsc::Sender<Vec<Prepared>>,
) -> Result<(), ApiError> {
    let mut memo = Memo::for_stream();
    let result = (|| {
        while let Some(chunk) = received.blocking_recv() {
            // Sized up front: collected through `Result`, the vector would regrow.
            let mut prepared = Vec::with_capacity(chunk.len());
            for request in chunk {
                prepared.push(prepare_on_receive(request, &mut memo)?);
            }
            if converted.blocking_send(prepared).is_err() {
                // The applier only stops early by panicking: its join reports it.
                break;
            }
        }
        Ok(())
    })();
    // Dropped here, on the blocking pool (a memo of tens of thousands of values takes
    // milliseconds to drop), and before a bulk load's freed memory is released.
    drop(memo);
    // What the memo and the chunks freed, before the load's memory is released.
    crate::ops::memory::flush_thread_cache();
    result
}

/// Receives the stream, converts and applies it chunk by chunk, and reports.
pub(super) async fn run(
    app: Arc<App>,
    mut stream: Streaming<SyncRequestWire>,
) -> Result<pb::SyncResponse, ApiError> {
    app.check_running()?;
    let (received, to_convert) = mpsc::channel::<Vec<SyncRequestWire>>(QUEUED_CHUNKS);
    let (converted, to_apply) = mpsc::channel::<Vec<Prepared>>(QUEUED_CHUNKS);
    let mut converter = tokio::task::spawn_blocking(move || convert_queue(to_convert, converted));
    let applier = {
        let app = app.clone();
        tokio::task::spawn_blocking(move || apply_queue(&app, to_apply))
    };
    tokio::select! {
        received = receive(&app, &mut stream, received) => {
            received?;
            converter.await??;
        }
        // Only on an item it cannot decode (or a panic) does the converter end first:
        // the stream fails at once, even while its client sends nothing more.
        converted = &mut converter => converted??,
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
        revision: app.cache.revision(),
        epoch: app.epoch.clone(),
        nominations_revision: app.log.revision(),
    })
}

/// The stream's next message if it has already arrived (`None` when it has not).
async fn next_if_ready(
    stream: &mut Streaming<SyncRequestWire>,
) -> Option<Option<Result<SyncRequestWire, tonic::Status>>> {
    std::future::poll_fn(|cx| {
        Poll::Ready(match Pin::new(&mut *stream).poll_next(cx) {
            Poll::Ready(next) => Some(next),
            Poll::Pending => None,
        })
    })
    .await
}

/// Converts a received item: a pod or node upsert read straight from its encoding when
/// it can be (see `wire`), anything else as the unary update of its kind converts it. An
/// encoding prost rejects fails the stream, as it did when prost decoded the whole
/// request.
fn prepare_on_receive(request: SyncRequestWire, memo: &mut Memo) -> Result<Prepared, ApiError> {
    use pb::sync_request::Item;
    let item = match request.item {
        None => None,
        Some(WireItem::Node(encoding)) => match wire::receive_node(encoding, memo) {
            Ok(Received::Upserted(node)) => {
                return Ok((
                    Some(Kind::Node),
                    node.map(|n| AnyChange::Node(Change::Upsert(n))),
                ));
            }
            Ok(Received::Decoded(request)) => Some(Item::Node(*request)),
            Err(error) => return Err(wire::undecodable(error)),
        },
        Some(WireItem::Pod(encoding)) => match wire::receive_pod(encoding, memo) {
            Ok(Received::Upserted(pod)) => {
                let change = pod.map(|p| AnyChange::Pod(Change::Upsert(PodArc::new(p))));
                return Ok((Some(Kind::Pod), change));
            }
            Ok(Received::Decoded(request)) => Some(Item::Pod(*request)),
            Err(error) => return Err(wire::undecodable(error)),
        },
        Some(WireItem::Pdb(r)) => Some(Item::Pdb(*r)),
        Some(WireItem::PriorityClass(r)) => Some(Item::PriorityClass(*r)),
        Some(WireItem::Namespace(r)) => Some(Item::Namespace(*r)),
        Some(WireItem::PodGroup(r)) => Some(Item::PodGroup(*r)),
        Some(WireItem::Workload(r)) => Some(Item::Workload(*r)),
    };
    Ok(read_sync_item(item, memo))
}

/// An item after conversion (by the converter, while earlier chunks are applied): its
/// kind, when it names one, and its change or why it has none.
type Prepared = (Option<Kind>, Result<AnyChange, ApiError>);

/// The applier of one stream: applies its chunks in order until the converter is
/// done, and returns what they did. Blocking: runs on the blocking pool.
fn apply_queue(app: &App, mut queue: mpsc::Receiver<Vec<Prepared>>) -> Tally {
    let mut tally = Tally::default();
    let mut chunks = Vec::new();
    while let Some(chunk) = queue.blocking_recv() {
        // Chunks that queued up while the last was applied: one batch. Applied as they
        // are, not appended to the first (no copy, no regrowth).
        let mut items = chunk.len();
        chunks.push(chunk);
        while items < MERGED_ITEMS
            && let Ok(more) = queue.try_recv()
        {
            items += more.len();
            chunks.push(more);
        }
        apply_chunk(app, chunks.drain(..).flatten(), &mut tally);
    }
    app.cache.end_bulk_load();
    // What the chunks and the replaced entries freed, before the load's memory is
    // released.
    crate::ops::memory::flush_thread_cache();
    tally
}

/// Applies one chunk in stream order (runs of pod changes as one batch, see
/// [`App::apply_in_order`]); rejected items are tallied in their place.
fn apply_chunk(app: &App, chunk: impl Iterator<Item = Prepared>, tally: &mut Tally) {
    let mut kinds = std::collections::VecDeque::with_capacity(MERGED_ITEMS);
    let mut changes = Vec::with_capacity(MERGED_ITEMS);
    let flush = |changes: &mut Vec<AnyChange>,
                 kinds: &mut std::collections::VecDeque<Kind>,
                 tally: &mut Tally| {
        app.apply_in_order(changes.drain(..), |result| {
            let kind = kinds.pop_front();
            tally.record(kind, result.map_err(ApiError::from))
        });
    };
    for (kind, prepared) in chunk {
        match (kind, prepared) {
            (Some(kind), Ok(change)) => {
                kinds.push_back(kind);
                changes.push(change);
            }
            (kind, Err(error)) => {
                // Tallied in stream order: what came before it is applied first.
                flush(&mut changes, &mut kinds, tally);
                tally.record(kind, Err(error));
            }
            (None, Ok(_)) => {}
        }
    }
    flush(&mut changes, &mut kinds, tally);
}
