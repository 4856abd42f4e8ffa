//! The `preemptd.v1.Preemption` handlers: validate and convert, call the cache or the
//! engine, record nomination changes in the log.
//!
//! Ordering: every cache change that can move a nomination (pod upserts and deletes,
//! commits, clearing a nomination) happens together with its log publish under one
//! mutex (`State::sync`), and listing or watching from 0 reads the nominations under
//! the same mutex. So a list's revision is exactly the point after which the log has
//! every change: no gaps, no duplicates.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use crate::cache::{ClusterCache, Commit, CommitChange, Nomination, PodUpsert};
use crate::engine::{self, DecideOptions, Outcome, PdbMode};
use crate::model::build::Memo;
use crate::model::decode::{self, DecodeError};
use crate::model::{Pod, Str};
use crate::nominations::{Event, EventKind, NominationLog};

use super::ServeConfig;
use super::convert;
use super::errors::ApiError;
use super::pb;
use super::wire;

pub(super) mod apply;
pub(super) mod sync;

use apply::{Change, PodArc};

/// JSON documents larger than this, and all YAML, are decoded on the blocking pool
/// (parsing a large JSON document, or YAML of any size near its bounds, takes well over
/// the async threads' budget).
const INLINE_DECODE_BYTES: usize = 32 * 1024;
/// Commit attempts made without the preempt gate; later ones are serialized among
/// `Preempt` calls so concurrent preemptors cannot keep invalidating each other.
const OPTIMISTIC_ATTEMPTS: u32 = 4;

/// Values a thread's unary `UpdatePod` calls recently converted. Updates of the pods of
/// one template carry the same details and label sets: converted once, then looked up.
const UNARY_MEMO_CAPACITY: usize = 1 << 13;

thread_local! {
    static UNARY_MEMO: std::cell::RefCell<Memo> =
        std::cell::RefCell::new(Memo::new(UNARY_MEMO_CAPACITY));
}

pub(crate) struct State {
    pub cache: ClusterCache,
    pub log: NominationLog,
    pub epoch: String,
    /// Orders nomination-moving cache changes with their log events (see module docs).
    sync: Mutex<()>,
    /// Taken by late commit attempts (see `OPTIMISTIC_ATTEMPTS`).
    preempt_gate: Mutex<()>,
    shutting_down: AtomicBool,
    /// Kubernetes watches feed the cache: update calls are refused (one writer).
    mirrored: bool,
    /// Every watched kind has finished its first list (always so without watches).
    listed: AtomicBool,
    /// An `--authz` policy is in place: a committing `Preempt` needs a writer.
    authz_enforced: bool,
    commit_attempts: u32,
    /// Load shedding for `Preempt` (`ServeConfig::max_concurrent_preempts`).
    preempt_permits: Arc<Semaphore>,
    /// The cap on `WatchNominations` streams (`ServeConfig::max_watchers`).
    watch_permits: Arc<Semaphore>,
    /// The cap on `Sync` streams (`ServeConfig::max_sync_streams`).
    sync_permits: Arc<Semaphore>,
    sync_limit: usize,
    preempt_limit: usize,
    watch_limit: usize,
    /// Where decisions run (one pool per decision in progress).
    lanes: crate::engine::DecisionLanes,
    /// The placement policy every decision applies (`ServeConfig::policy`).
    policy: Option<Arc<crate::engine::Policy>>,
}

/// A random id per server start, so clients notice restarts (and the empty cache).
fn new_epoch() -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS's randomness.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    hasher.write_u128(now);
    hasher.write_u32(std::process::id());
    format!("{:016x}", hasher.finish())
}

impl State {
    pub fn new(config: &ServeConfig) -> Self {
        State {
            cache: ClusterCache::new(),
            log: NominationLog::new(config.history_capacity, config.subscriber_buffer),
            epoch: new_epoch(),
            sync: Mutex::new(()),
            preempt_gate: Mutex::new(()),
            shutting_down: AtomicBool::new(false),
            mirrored: config.cluster.is_some(),
            listed: AtomicBool::new(config.cluster.is_none()),
            authz_enforced: config.authz.is_some(),
            commit_attempts: config.commit_attempts.max(1),
            preempt_permits: Arc::new(Semaphore::new(config.max_concurrent_preempts.max(1))),
            watch_permits: Arc::new(Semaphore::new(config.max_watchers)),
            sync_permits: Arc::new(Semaphore::new(config.max_sync_streams)),
            sync_limit: config.max_sync_streams,
            preempt_limit: config.max_concurrent_preempts.max(1),
            watch_limit: config.max_watchers,
            lanes: crate::engine::DecisionLanes::per_core(),
            policy: config.policy.clone(),
        }
    }

    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        self.log.close();
    }

    fn check_running(&self) -> Result<(), ApiError> {
        if self.shutting_down.load(Ordering::Acquire) {
            Err(ApiError::shutting_down())
        } else {
            Ok(())
        }
    }

    /// Update calls and Sync: refused while Kubernetes watches are the writer.
    fn check_writable(&self) -> Result<(), ApiError> {
        self.check_running()?;
        if self.mirrored {
            return Err(ApiError::watches_write());
        }
        Ok(())
    }

    /// Decisions: only once the cluster is listed.
    pub(crate) fn check_listed(&self) -> Result<(), ApiError> {
        self.check_running()?;
        if !self.listed.load(Ordering::Acquire) {
            return Err(ApiError::not_listed_yet());
        }
        Ok(())
    }

    /// The pod `r` names, as the cache holds it.
    fn held_pod(&self, r: &pb::PodRef) -> Result<Pod, ApiError> {
        if r.name.is_empty() {
            return Err(ApiError::invalid("pod_ref.name", "must not be empty"));
        }
        let namespace = if r.namespace.is_empty() {
            "default"
        } else {
            &r.namespace
        };
        self.cache
            .get_pod_by_name(namespace, &r.name)
            .filter(|held| r.uid.is_empty() || held.uid() == r.uid)
            .map(|held| (*held).clone())
            .ok_or_else(|| ApiError::NotFound(format!("pod {namespace}/{} is not held", r.name)))
    }

    /// The placement policy decisions apply, if any.
    pub(crate) fn policy(&self) -> Option<&Arc<crate::engine::Policy>> {
        self.policy.as_ref()
    }

    /// Where decisions run (the extender's `/preempt` too).
    pub(crate) fn lanes(&self) -> &crate::engine::DecisionLanes {
        &self.lanes
    }

    /// Every watched kind has finished its first list.
    pub(crate) fn set_listed(&self) {
        self.listed.store(true, Ordering::Release);
    }

    /// Pod changes from the watches, applied in order and published.
    pub(crate) fn apply_watched_pods(&self, changes: Vec<Change<PodArc>>) {
        if changes.is_empty() {
            return;
        }
        let ordered = self.sync.lock();
        let mut events = Vec::new();
        self.apply_pods(&ordered, changes, &mut events, |result| {
            if let Err(error) = result {
                tracing::warn!(%error, "watched pod not applied");
            }
        });
        self.log.publish(events);
    }

    /// Decides, and unless `dry_run` commits. Blocking: run on the blocking pool.
    fn preempt(
        &self,
        pod: Pod,
        dry_run: bool,
        explain: bool,
        pdb_mode: Option<PdbMode>,
    ) -> Result<pb::PreemptResponse, ApiError> {
        let options = DecideOptions {
            explain,
            policy: self.policy.clone(),
            pdb_mode,
            ..DecideOptions::default()
        };
        let mut last_conflict: Option<Str> = None;
        for attempt in 1..=self.commit_attempts {
            let _gate =
                (!dry_run && attempt > OPTIMISTIC_ATTEMPTS).then(|| self.preempt_gate.lock());
            if !dry_run {
                self.check_name_is_free(&pod)?;
            }
            let mut preemptor = pod.clone();
            self.cache.fill_held_nomination(&mut preemptor);
            let snapshot = self.cache.snapshot();
            let decision = engine::decide(&snapshot, &preemptor, &options);
            let mut response = convert::decision(&decision);
            response.epoch = self.epoch.clone();
            response.revision = snapshot.revision;
            if dry_run {
                response.nominations_revision = self.log.revision();
                return Ok(response);
            }
            match decision.outcome {
                Outcome::Preempt => {
                    match self.commit(preemptor, &decision, attempt, &mut response)? {
                        None => return Ok(response),
                        Some(conflict) => last_conflict = Some(conflict),
                    }
                }
                Outcome::NoCandidate => {
                    self.clear_own_nomination(&preemptor, &mut response);
                    return Ok(response);
                }
                Outcome::Fits | Outcome::NotEligible => {
                    response.nominations_revision = self.log.revision();
                    return Ok(response);
                }
            }
        }
        let node = last_conflict.as_deref().unwrap_or("?").to_string();
        tracing::warn!(
            pod = %pod.name(),
            namespace = %pod.namespace,
            node = %node,
            attempts = self.commit_attempts,
            "preemption gave up after repeated commit conflicts"
        );
        Err(ApiError::Aborted(format!(
            "node {node} kept changing concurrently: preemption for pod {}/{} not committed after {} attempts; retry",
            pod.namespace,
            pod.name(),
            self.commit_attempts
        )))
    }

    /// A commit records the preemptor under its name: refused when another uid holds it.
    fn check_name_is_free(&self, pod: &Pod) -> Result<(), ApiError> {
        match self.cache.get_pod_by_name(&pod.namespace, pod.name()) {
            Some(existing) if existing.uid() != pod.uid() => {
                Err(crate::cache::CacheError::NameConflict {
                    name: format!("{}/{}", pod.namespace, pod.name()),
                    existing: existing.uid().to_string(),
                }
                .into())
            }
            _ => Ok(()),
        }
    }

    /// Commits a `Preempt` decision and publishes its nomination changes into `response`.
    /// `Some(node)` when that node changed since the decision's snapshot: decide again.
    fn commit(
        &self,
        preemptor: Pod,
        decision: &engine::Decision,
        attempt: u32,
        response: &mut pb::PreemptResponse,
    ) -> Result<Option<Str>, ApiError> {
        let Some(node) = decision.nominated_node.clone() else {
            return Err(ApiError::Internal(
                "preempt decision without a node".to_string(),
            ));
        };
        let commit = Commit {
            preemptor,
            node: node.clone(),
            node_generation: decision.node_generation,
            victims: decision.victims.clone(),
            nominations_to_clear: decision.nominated_pods_to_clear.clone(),
        };
        let commit_span = tracing::info_span!(
            "commit",
            node = %node,
            victims = commit.victims.len(),
            attempt,
            revision = tracing::field::Empty,
            conflict = tracing::field::Empty,
        );
        let _commit_span = commit_span.enter();
        let _sync = self.sync.lock();
        match self.cache.commit(&commit) {
            Ok((changes, revision)) => {
                commit_span.record("revision", revision);
                response.revision = revision;
                response.nominations_revision =
                    self.log.publish(changes.into_iter().map(change_event));
                tracing::debug!(
                    pod = %commit.preemptor.name(),
                    namespace = %commit.preemptor.namespace,
                    node = %node,
                    victims = commit.victims.len(),
                    attempt,
                    "preemption committed"
                );
                Ok(None)
            }
            Err(conflict) => {
                commit_span.record("conflict", true);
                tracing::debug!(node = %conflict.node, attempt, "commit conflict, deciding again");
                Ok(Some(conflict.node))
            }
        }
    }

    /// No candidate anywhere: the preemptor loses the nomination the cache holds for it.
    fn clear_own_nomination(&self, preemptor: &Pod, response: &mut pb::PreemptResponse) {
        let _sync = self.sync.lock();
        let cleared = self.cache.clear_nomination(preemptor.uid());
        if cleared.is_some() {
            response.revision = self.cache.revision();
        }
        response.nominations_revision = self.log.publish(cleared.map(|(pod_ref, node)| {
            Event::new(EventKind::Cleared, pod_ref, node, preemptor.priority)
        }));
    }

    /// Plans the drain of `nodes` on the current cache. Blocking: run on the blocking pool.
    fn plan_drain(
        &self,
        nodes: &[String],
        pdb_mode: Option<PdbMode>,
        explain: bool,
    ) -> Result<pb::PlanDrainResponse, ApiError> {
        let snapshot = self.cache.snapshot();
        let options = engine::drain::DrainOptions {
            policy: self.policy.clone(),
            pdb_mode,
            explain,
            now: None,
        };
        let plan = engine::drain::plan(&snapshot, nodes, &options)?;
        let mut response = convert::drain_plan(&plan);
        response.epoch = self.epoch.clone();
        response.revision = snapshot.revision;
        Ok(response)
    }

    /// The current nominations and the log revision they are as of.
    fn list(&self) -> (Vec<Nomination>, u64) {
        let _sync = self.sync.lock();
        (self.cache.nominations(), self.log.revision())
    }
}

fn nomination_of(pod: &Pod) -> Option<Nomination> {
    pod.nomination().map(|node| Nomination {
        pod: pod.pod_ref(),
        priority: pod.priority,
        node: node.clone(),
    })
}

/// The events of a pod upsert: how it moved the pod's nomination.
fn upsert_events(upsert: &PodUpsert) -> Vec<Event> {
    nomination_events(
        upsert.nominated_before.as_deref().and_then(nomination_of),
        upsert.nominated_after.as_deref().and_then(nomination_of),
    )
}

/// The events that take a pod's nomination from `before` to `after`.
fn nomination_events(before: Option<Nomination>, after: Option<Nomination>) -> Vec<Event> {
    if before == after {
        return Vec::new();
    }
    let mut events = Vec::new();
    if let Some(b) = before
        && after.as_ref().is_none_or(|a| a.node != b.node)
    {
        events.push(Event::new(EventKind::Cleared, b.pod, b.node, b.priority));
    }
    if let Some(a) = after {
        events.push(Event::new(EventKind::Nominated, a.pod, a.node, a.priority));
    }
    events
}

/// A commit change as a log event; `priority` is only known (and only meaningful) for
/// the nominated preemptor.
fn change_event(change: CommitChange) -> Event {
    match change {
        CommitChange::Nominated(n) => Event::new(EventKind::Nominated, n.pod, n.node, n.priority),
        CommitChange::NominationCleared { pod, node } => {
            Event::new(EventKind::Cleared, pod, node, 0)
        }
        CommitChange::VictimMarked { pod, node } => {
            Event::new(EventKind::VictimMarked, pod, node, 0)
        }
    }
}

/// The resource version an upsert was sent at (0 for a delete), for the stale reason.
fn sent_version<T>(change: &Change<T>, resource_version: impl Fn(&T) -> u64) -> u64 {
    match change {
        Change::Upsert(object) => resource_version(object),
        Change::Delete(_) => 0,
    }
}

fn stale_reason(applied: bool, incoming: u64, held: u64) -> String {
    if applied {
        String::new()
    } else {
        format!(
            "resource_version {incoming} is older than resource_version {held} held by the cache"
        )
    }
}

pub(crate) struct PreemptionService {
    state: Arc<State>,
}

impl PreemptionService {
    pub fn new(state: Arc<State>) -> Self {
        PreemptionService { state }
    }
}

/// `UpdatePod` (served by `unary`, outside the generated trait): the request's encoding
/// read into a change and applied.
pub(crate) async fn update_pod(
    state: &State,
    encoding: bytes::Bytes,
) -> Result<pb::UpdatePodResponse, ApiError> {
    state.check_writable()?;
    let received = UNARY_MEMO
        .with_borrow_mut(|memo| wire::read_update_pod(encoding, memo))
        // As tonic reports a request prost cannot decode.
        .map_err(|error| ApiError::Undecodable(error.to_string()))?;
    use pb::update_pod_request::Change as Requested;
    let change = match received {
        wire::ReceivedPod::Upserted(pod) => Change::Upsert(PodArc::new(pod?)),
        wire::ReceivedPod::Decoded(request) => match request.change {
            None => return Err(missing_change()),
            Some(Requested::Upsert(p)) => Change::Upsert(PodArc::new(convert::pod("upsert", &p)?)),
            Some(Requested::UpsertJson(text)) => Change::Upsert(PodArc::new(
                decode_json("upsert_json", text, decode::decode_pod).await?,
            )),
            Some(Requested::Delete(r)) => Change::Delete(r),
        },
    };
    let incoming = sent_version(&change, |p| p.resource_version);
    let outcome = state.apply_pod(change)?;
    Ok(pb::UpdatePodResponse {
        applied: outcome.applied,
        resource_version: outcome.resource_version,
        revision: outcome.revision,
        epoch: state.epoch.clone(),
        stale: stale_reason(outcome.applied, incoming, outcome.resource_version),
    })
}

fn missing_change() -> ApiError {
    ApiError::invalid("change", "one of upsert, upsert_json or delete is required")
}

type WatchStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchNominationsResponse, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl pb::preemption_server::Preemption for PreemptionService {
    async fn update_node(
        &self,
        request: Request<pb::UpdateNodeRequest>,
    ) -> Result<Response<pb::UpdateNodeResponse>, Status> {
        let state = &self.state;
        state.check_writable()?;
        use pb::update_node_request::Change as Requested;
        let change = match request.into_inner().change {
            None => return Err(missing_change().into()),
            Some(Requested::Upsert(n)) => Change::Upsert(convert::node("upsert", &n)?),
            Some(Requested::UpsertJson(text)) => {
                Change::Upsert(decode_json("upsert_json", text, decode::decode_node).await?)
            }
            Some(Requested::Delete(r)) => Change::Delete(r),
        };
        let incoming = sent_version(&change, |n| n.resource_version);
        let outcome = state.apply_node(change)?;
        Ok(Response::new(pb::UpdateNodeResponse {
            applied: outcome.applied,
            resource_version: outcome.resource_version,
            revision: outcome.revision,
            epoch: state.epoch.clone(),
            stale: stale_reason(outcome.applied, incoming, outcome.resource_version),
        }))
    }

    async fn update_pod_disruption_budget(
        &self,
        request: Request<pb::UpdatePodDisruptionBudgetRequest>,
    ) -> Result<Response<pb::UpdatePodDisruptionBudgetResponse>, Status> {
        let state = &self.state;
        state.check_writable()?;
        use pb::update_pod_disruption_budget_request::Change as Requested;
        let change = match request.into_inner().change {
            None => return Err(missing_change().into()),
            Some(Requested::Upsert(p)) => Change::Upsert(convert::pdb("upsert", &p)?),
            Some(Requested::UpsertJson(text)) => {
                Change::Upsert(decode_json("upsert_json", text, decode::decode_pdb).await?)
            }
            Some(Requested::Delete(r)) => Change::Delete(r),
        };
        let incoming = sent_version(&change, |p| p.resource_version);
        let outcome = state.apply_pdb(change)?;
        Ok(Response::new(pb::UpdatePodDisruptionBudgetResponse {
            applied: outcome.applied,
            resource_version: outcome.resource_version,
            revision: outcome.revision,
            epoch: state.epoch.clone(),
            stale: stale_reason(outcome.applied, incoming, outcome.resource_version),
        }))
    }

    async fn update_priority_class(
        &self,
        request: Request<pb::UpdatePriorityClassRequest>,
    ) -> Result<Response<pb::UpdatePriorityClassResponse>, Status> {
        let state = &self.state;
        state.check_writable()?;
        use pb::update_priority_class_request::Change as Requested;
        let change = match request.into_inner().change {
            None => return Err(missing_change().into()),
            Some(Requested::Upsert(c)) => Change::Upsert(convert::priority_class("upsert", &c)?),
            Some(Requested::UpsertJson(text)) => Change::Upsert(
                decode_json("upsert_json", text, decode::decode_priority_class).await?,
            ),
            Some(Requested::Delete(r)) => Change::Delete(r),
        };
        let incoming = sent_version(&change, |c| c.resource_version);
        let outcome = state.apply_priority_class(change)?;
        Ok(Response::new(pb::UpdatePriorityClassResponse {
            applied: outcome.applied,
            resource_version: outcome.resource_version,
            revision: outcome.revision,
            epoch: state.epoch.clone(),
            stale: stale_reason(outcome.applied, incoming, outcome.resource_version),
        }))
    }

    async fn update_namespace(
        &self,
        request: Request<pb::UpdateNamespaceRequest>,
    ) -> Result<Response<pb::UpdateNamespaceResponse>, Status> {
        let state = &self.state;
        state.check_writable()?;
        use pb::update_namespace_request::Change as Requested;
        let change = match request.into_inner().change {
            None => return Err(missing_change().into()),
            Some(Requested::Upsert(n)) => Change::Upsert(convert::namespace("upsert", &n)?),
            Some(Requested::UpsertJson(text)) => {
                Change::Upsert(decode_json("upsert_json", text, decode::decode_namespace).await?)
            }
            Some(Requested::Delete(r)) => Change::Delete(r),
        };
        let incoming = sent_version(&change, |n| n.resource_version);
        let outcome = state.apply_namespace(change)?;
        Ok(Response::new(pb::UpdateNamespaceResponse {
            applied: outcome.applied,
            resource_version: outcome.resource_version,
            revision: outcome.revision,
            epoch: state.epoch.clone(),
            stale: stale_reason(outcome.applied, incoming, outcome.resource_version),
        }))
    }

    async fn preempt(
        &self,
        request: Request<pb::PreemptRequest>,
    ) -> Result<Response<pb::PreemptResponse>, Status> {
        if !request.get_ref().dry_run {
            super::authz::check_commit(request.extensions(), self.state.authz_enforced)?;
        }
        self.state.check_listed()?;
        // Taken before decoding, which for large documents is the costly part.
        let permit = self.state.decision_permit(ApiError::preempt_overloaded)?;
        let request = request.into_inner();
        use pb::preempt_request::Preemptor;
        let (field, mut pod) = match request.preemptor {
            None => {
                return Err(ApiError::invalid(
                    "preemptor",
                    "one of pod, pod_json or pod_ref is required",
                )
                .into());
            }
            Some(Preemptor::Pod(p)) => ("pod", convert::pod("pod", &p)?),
            Some(Preemptor::PodJson(text)) => (
                "pod_json",
                decode_json("pod_json", text, decode::decode_pod).await?,
            ),
            Some(Preemptor::PodRef(r)) => ("pod_ref", self.state.held_pod(&r)?),
        };
        // As the Priority admission plugin: a manifest's priority from its class.
        pod.admit(&self.state.cache.priority_classes())
            .map_err(|unknown| {
                let path = if field == "pod_json" {
                    "pod_json: spec.priorityClassName"
                } else {
                    "pod.spec.priorityClassName"
                };
                ApiError::invalid(path, unknown.to_string())
            })?;
        let state = self.state.clone();
        let (dry_run, explain) = (request.dry_run, request.explain);
        let pdb_mode = convert::pdb_mode(request.pdb_mode)?;
        let span = tracing::Span::current();
        let start = std::time::Instant::now();
        // Deciding is CPU work (up to milliseconds): keep it off the async threads. It runs
        // on a decision lane, whose pool its parallel passes split over without waiting on
        // other decisions. The permit stays with the work even if the caller gives up
        // waiting.
        let (done, result) = tokio::sync::oneshot::channel();
        let lanes = &self.state.lanes;
        lanes.spawn(move || {
            let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                span.in_scope(|| state.preempt(pod, dry_run, explain, pdb_mode))
            }))
            .unwrap_or_else(|_| Err(ApiError::Internal("preempt panicked".to_string())));
            // Freed before the answer goes out: a client that has its answer may call again
            // at once without being shed by its own finished call.
            drop(permit);
            let _ = done.send(decided);
        });
        let response = result
            .await
            .map_err(|_| ApiError::Internal("preempt task dropped".to_string()))??;
        crate::ops::metrics::record_decision(
            outcome_label(response.outcome),
            response.victims.len(),
            start.elapsed(),
        );
        Ok(Response::new(response))
    }

    async fn plan_drain(
        &self,
        request: Request<pb::PlanDrainRequest>,
    ) -> Result<Response<pb::PlanDrainResponse>, Status> {
        self.state.check_listed()?;
        let request = request.into_inner();
        let pdb_mode = convert::pdb_mode(request.pdb_mode)?;
        // A plan is a batch of decisions: it sheds with Preempt, from the same permits.
        let permit = self.state.decision_permit(ApiError::drain_overloaded)?;
        let state = self.state.clone();
        let span = tracing::Span::current();
        // A plan copies the cluster and makes one decision per pod: blocking pool.
        let response = tokio::task::spawn_blocking(move || {
            let planned =
                span.in_scope(|| state.plan_drain(&request.node_names, pdb_mode, request.explain));
            drop(permit);
            planned
        })
        .await
        .map_err(ApiError::from)??;
        Ok(Response::new(response))
    }

    async fn list_nominations(
        &self,
        _request: Request<pb::ListNominationsRequest>,
    ) -> Result<Response<pb::ListNominationsResponse>, Status> {
        self.state.check_running()?;
        let state = self.state.clone();
        // Walks every node: blocking pool.
        let (nominations, revision) = tokio::task::spawn_blocking(move || state.list())
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(pb::ListNominationsResponse {
            nominations: nominations
                .iter()
                .map(|n| pb::Nomination {
                    pod: Some(convert::pod_ref(&n.pod)),
                    priority: n.priority,
                    node: n.node.to_string(),
                })
                .collect(),
            revision,
            epoch: self.state.epoch.clone(),
        }))
    }

    type WatchNominationsStream = WatchStream;

    async fn watch_nominations(
        &self,
        request: Request<pb::WatchNominationsRequest>,
    ) -> Result<Response<Self::WatchNominationsStream>, Status> {
        self.state.check_running()?;
        let watch_permit = self
            .state
            .watch_permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiError::too_many_watchers(self.state.max_watchers()))?;
        let after = request.into_inner().after_revision;
        let subscription = if after == 0 {
            let state = self.state.clone();
            tokio::task::spawn_blocking(move || {
                let _sync = state.sync.lock();
                let initial = state
                    .cache
                    .nominations()
                    .into_iter()
                    .map(|n| Event::new(EventKind::Nominated, n.pod, n.node, n.priority))
                    .collect();
                state.log.subscribe_with_initial(initial)
            })
            .await
            .map_err(ApiError::from)?
            .map_err(ApiError::from)?
            .0
        } else {
            self.state.log.subscribe(after).map_err(ApiError::from)?
        };
        tracing::debug!(after_revision = after, "watch started");
        let epoch = self.state.epoch.clone();
        let stream = subscription.map(move |item| {
            // The stream holds its watcher slot until it is dropped.
            let _slot = &watch_permit;
            match item {
                Ok(event) => Ok(convert::event(&event, &epoch)),
                Err(end) => {
                    if matches!(end, crate::nominations::End::Lagged { .. }) {
                        crate::ops::metrics::watch_cut_off();
                    }
                    tracing::debug!(reason = %end, "watch ended");
                    Err(Status::from(ApiError::from(end)))
                }
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn sync(
        &self,
        request: Request<Streaming<wire::SyncRequestWire>>,
    ) -> Result<Response<pb::SyncResponse>, Status> {
        let state = self.state.clone();
        state.check_writable()?;
        let _permit = state
            .sync_permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiError::too_many_sync_streams(state.sync_limit))?;
        Ok(Response::new(sync::run(state, request.into_inner()).await?))
    }
}

impl State {
    fn max_concurrent_preempts(&self) -> usize {
        self.preempt_limit
    }

    /// One of the `--max-concurrent-preempts` decision slots (Preempt, PlanDrain and the
    /// extender's `/preempt` share them), or `overloaded(limit)` when none is free: load
    /// is shed at once rather than queued, since a queued decision answers late, on
    /// stale state.
    pub(crate) fn decision_permit(
        &self,
        overloaded: fn(usize) -> ApiError,
    ) -> Result<OwnedSemaphorePermit, ApiError> {
        self.preempt_permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| overloaded(self.max_concurrent_preempts()))
    }

    fn max_watchers(&self) -> usize {
        self.watch_limit
    }

    /// Open `WatchNominations` streams (each holds a watcher slot until it is dropped;
    /// the log itself only notices a gone subscriber on its next publish).
    pub(crate) fn open_watchers(&self) -> usize {
        self.watch_limit
            .saturating_sub(self.watch_permits.available_permits())
    }
}

/// The `preemptd_decisions_total{outcome}` label of a response outcome.
fn outcome_label(outcome: i32) -> &'static str {
    match pb::Outcome::try_from(outcome) {
        Ok(pb::Outcome::Preempt) => "preempt",
        Ok(pb::Outcome::Fits) => "fits",
        Ok(pb::Outcome::NotEligible) => "not_eligible",
        Ok(pb::Outcome::NoCandidate) => "no_candidate",
        _ => "unspecified",
    }
}

/// Parses and decodes a JSON/YAML document: small JSON inline, the rest on the blocking
/// pool. A call dropped while its document waits for a blocking thread (its deadline
/// passed, its client went away) is not parsed at all.
async fn decode_json<T: Send + 'static>(
    field: &'static str,
    text: String,
    decode: fn(&serde_json::Value) -> Result<T, DecodeError>,
) -> Result<T, ApiError> {
    let parse = move |text: String| {
        let value = decode::parse_document(&text).map_err(|e| ApiError::from_decode(field, e))?;
        decode(&value).map_err(|e| ApiError::from_decode(field, e))
    };
    if text.len() <= INLINE_DECODE_BYTES && decode::reads_as_json(&text) {
        return parse(text);
    }
    let waiting = Arc::new(());
    let caller = Arc::downgrade(&waiting);
    let parsed = tokio::task::spawn_blocking(move || {
        if caller.strong_count() == 0 {
            return None;
        }
        Some(parse(text))
    })
    .await?;
    drop(waiting);
    parsed.unwrap_or_else(|| Err(ApiError::Internal("document decode abandoned".to_string())))
}
