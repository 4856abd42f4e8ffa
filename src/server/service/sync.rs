//! `Sync`: a client stream of node, pod and PDB updates applied in stream order.
//!
//! Receiving decodes each protobuf message on the async thread, so items are gathered in
//! chunks bounded by count and by time (each decode is ~1 µs; a chunk never keeps the
//! thread for more than ~0.25 ms), and every chunk is converted and applied on the
//! blocking pool while the next one is being received: on two cores decoding and
//! applying overlap. Chunks are applied one after another, so stream order is kept.
//!
//! Each item goes through the same conversion and cache calls as the unary update of its
//! kind; a rejected item is counted and reported, never fatal to the stream.

use std::time::{Duration, Instant};

use tonic::{Status, Streaming};

use crate::cache::UpdateOutcome;
use crate::model::decode;
use crate::nominations::Event;

use super::super::convert;
use super::super::errors::ApiError;
use super::super::pb;
use super::{
    State, delete_name, missing_change, namespace_or_default, nomination_events, nomination_of,
};

use std::sync::Arc;

/// Most items per chunk: large enough to amortize the hand-off to the blocking pool and
/// the locks taken per chunk.
const CHUNK_ITEMS: usize = 2048;
/// Longest time spent receiving (and so decoding) one chunk on an async thread.
const CHUNK_TIME: Duration = Duration::from_micros(250);
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
}

impl Kind {
    fn field(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Pod => "pod",
            Kind::Pdb => "pdb",
        }
    }

    fn count(self, counts: &mut pb::SyncCounts) -> &mut u64 {
        match self {
            Kind::Node => &mut counts.nodes,
            Kind::Pod => &mut counts.pods,
            Kind::Pdb => &mut counts.pdbs,
        }
    }
}

impl Tally {
    fn record(&mut self, kind: Option<Kind>, result: Result<bool, ApiError>) {
        let index = self.next_index;
        self.next_index += 1;
        match (kind, result) {
            (Some(kind), Ok(true)) => *kind.count(&mut self.applied) += 1,
            (Some(kind), Ok(false)) => *kind.count(&mut self.stale) += 1,
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

/// Receives the stream, applies it chunk by chunk, and reports.
pub(super) async fn run(
    state: Arc<State>,
    mut stream: Streaming<pb::SyncRequest>,
) -> Result<pb::SyncResponse, Status> {
    state.check_running()?;
    let mut tally = Tally::default();
    let mut applying: Option<tokio::task::JoinHandle<Tally>> = None;
    loop {
        let started = Instant::now();
        let mut chunk = Vec::with_capacity(CHUNK_ITEMS);
        let mut ended = false;
        while chunk.len() < CHUNK_ITEMS && started.elapsed() < CHUNK_TIME {
            match stream.message().await? {
                Some(item) => chunk.push(item),
                None => {
                    ended = true;
                    break;
                }
            }
        }
        // The previous chunk must be applied before this one: stream order.
        if let Some(task) = applying.take() {
            tally = task.await.map_err(ApiError::from)?;
        }
        state.check_running()?;
        if !chunk.is_empty() {
            let state = state.clone();
            let mut running = std::mem::take(&mut tally);
            applying = Some(tokio::task::spawn_blocking(move || {
                state.apply_sync_chunk(chunk, &mut running);
                running
            }));
        }
        if ended {
            break;
        }
    }
    if let Some(task) = applying.take() {
        tally = task.await.map_err(ApiError::from)?;
    }
    tracing::debug!(
        items = tally.next_index,
        rejected = tally.rejected,
        "sync stream applied"
    );
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

/// Decodes a JSON/YAML document inline (this already runs on the blocking pool).
fn decode_inline<T>(
    field: &str,
    text: &str,
    decode: fn(&serde_json::Value) -> Result<T, decode::DecodeError>,
) -> Result<T, ApiError> {
    let value = decode::parse_document(text).map_err(|e| ApiError::from_decode(field, e))?;
    decode(&value).map_err(|e| ApiError::from_decode(field, e))
}

impl State {
    /// Applies one chunk. Blocking: runs on the blocking pool.
    ///
    /// Holds the nominations ordering lock for the whole chunk (a few milliseconds at
    /// most) so pod changes and their events are published as one batch, in order.
    fn apply_sync_chunk(&self, chunk: Vec<pb::SyncRequest>, tally: &mut Tally) {
        use pb::sync_request::Item;
        let _sync = self.sync.lock();
        let mut events = Vec::new();
        for request in chunk {
            match request.item {
                None => tally.record(
                    None,
                    Err(ApiError::invalid(
                        "item",
                        "one of node, pod or pdb is required",
                    )),
                ),
                Some(Item::Node(r)) => tally.record(Some(Kind::Node), self.sync_node(r.change)),
                Some(Item::Pod(r)) => {
                    let result = self.sync_pod(r.change, &mut events);
                    tally.record(Some(Kind::Pod), result)
                }
                Some(Item::Pdb(r)) => tally.record(Some(Kind::Pdb), self.sync_pdb(r.change)),
            }
        }
        self.log.publish(events);
    }

    /// As `UpdateNode`; `Ok(false)` when stale.
    fn sync_node(&self, change: Option<pb::update_node_request::Change>) -> Result<bool, ApiError> {
        use pb::update_node_request::Change;
        let outcome = match change {
            None => return Err(missing_change()),
            Some(Change::Upsert(n)) => self.cache.upsert_node(convert::node("upsert", &n)?),
            Some(Change::UpsertJson(text)) => {
                self.cache
                    .upsert_node(decode_inline("upsert_json", &text, decode::decode_node)?)
            }
            Some(Change::Delete(r)) => {
                delete_name(&r)?;
                if let Some(uid) = r.uid.as_deref().filter(|u| !u.is_empty())
                    && self.cache.get_node(&r.name).is_some_and(|n| &*n.uid != uid)
                {
                    return Err(ApiError::NotFound(format!(
                        "node {} with uid {uid} not found",
                        r.name
                    )));
                }
                self.cache.delete_node(&r.name)?
            }
        };
        Ok(outcome.applied)
    }

    /// As `UpdatePod`, with the nomination events appended to `events` (the caller holds
    /// the ordering lock and publishes them).
    fn sync_pod(
        &self,
        change: Option<pb::update_pod_request::Change>,
        events: &mut Vec<Event>,
    ) -> Result<bool, ApiError> {
        use pb::update_pod_request::Change;
        let outcome: UpdateOutcome = match change {
            None => return Err(missing_change()),
            Some(Change::Delete(r)) => {
                delete_name(&r)?;
                let namespace = namespace_or_default(&r.namespace);
                let uid = r.uid.as_deref().filter(|u| !u.is_empty());
                let before = self
                    .cache
                    .get_pod_by_name(namespace, &r.name)
                    .and_then(|p| nomination_of(&p));
                let outcome = self.cache.delete_pod(namespace, &r.name, uid)?;
                events.extend(nomination_events(before, None));
                outcome
            }
            Some(Change::Upsert(p)) => self.sync_upsert_pod(convert::pod("upsert", &p)?, events)?,
            Some(Change::UpsertJson(text)) => self.sync_upsert_pod(
                decode_inline("upsert_json", &text, decode::decode_pod)?,
                events,
            )?,
        };
        Ok(outcome.applied)
    }

    fn sync_upsert_pod(
        &self,
        pod: crate::model::Pod,
        events: &mut Vec<Event>,
    ) -> Result<UpdateOutcome, ApiError> {
        let uid = pod.uid.clone();
        let before = self.cache.get_pod(&uid).and_then(|p| nomination_of(&p));
        let may_nominate = before.is_some() || pod.nomination().is_some();
        let outcome = self.cache.upsert_pod(pod)?;
        // Most bulk-loaded pods are bound and new: nothing to look up again.
        if may_nominate {
            let after = self.cache.get_pod(&uid).and_then(|p| nomination_of(&p));
            events.extend(nomination_events(before, after));
        }
        Ok(outcome)
    }

    /// As `UpdatePodDisruptionBudget`.
    fn sync_pdb(
        &self,
        change: Option<pb::update_pod_disruption_budget_request::Change>,
    ) -> Result<bool, ApiError> {
        use pb::update_pod_disruption_budget_request::Change;
        let outcome = match change {
            None => return Err(missing_change()),
            Some(Change::Upsert(p)) => self.cache.upsert_pdb(convert::pdb("upsert", &p)?),
            Some(Change::UpsertJson(text)) => {
                self.cache
                    .upsert_pdb(decode_inline("upsert_json", &text, decode::decode_pdb)?)
            }
            Some(Change::Delete(r)) => {
                delete_name(&r)?;
                self.cache
                    .delete_pdb(namespace_or_default(&r.namespace), &r.name)?
            }
        };
        Ok(outcome.applied)
    }
}
