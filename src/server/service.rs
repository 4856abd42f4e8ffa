//! The `preemptd.v1.Preemption` handlers: each reads its request into the core's input
//! (`changes` for updates, `convert` for the rest), calls the application core
//! ([`crate::app`]) and writes the core's answer as the response.

use std::pin::Pin;
use std::sync::Arc;

use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use crate::app::{AnyChange, App, AppError, Applied, Change, PodArc, PreemptRequest};
use crate::model::build::Memo;
use crate::model::decode;

use super::convert;
use super::errors::ApiError;
use super::pb;
use super::wire;

pub(super) mod changes;
pub(super) mod group;
pub(super) mod sync;

use changes::{UpdateRequest, decode_document};

/// JSON documents larger than this, and all YAML, are decoded on the blocking pool
/// (parsing a large JSON document, or YAML of any size near its bounds, takes well over
/// the async threads' budget).
const INLINE_DECODE_BYTES: usize = 32 * 1024;

/// Values a thread's unary updates recently converted. Updates of the pods of one
/// template carry the same details and label sets: converted once, then looked up.
const UNARY_MEMO_CAPACITY: usize = 1 << 13;

thread_local! {
    static UNARY_MEMO: std::cell::RefCell<Memo> =
        std::cell::RefCell::new(Memo::new(UNARY_MEMO_CAPACITY));
}

/// The gRPC service over the core.
pub(crate) struct PreemptionService {
    app: Arc<App>,
    /// An `--authz` policy is in place: a committing `Preempt` needs a writer.
    authz_enforced: bool,
}

impl PreemptionService {
    pub(crate) fn new(app: Arc<App>, authz_enforced: bool) -> Self {
        PreemptionService {
            app,
            authz_enforced,
        }
    }

    /// Reads an update (documents on the blocking pool) and applies it.
    async fn update<R: UpdateRequest>(&self, request: R) -> Result<Applied, ApiError> {
        self.app.check_writable()?;
        let change = match request.document() {
            Some(text) if !parses_inline(text) => {
                on_blocking_pool(move || request.read(&mut Memo::new(0))).await?
            }
            _ => UNARY_MEMO.with_borrow_mut(|memo| request.read(memo))?,
        };
        Ok(self.app.apply(change)?)
    }
}

/// The responses of the update calls, which all say the same.
trait FromApplied {
    fn from_applied(applied: Applied, epoch: String) -> Self;
}

macro_rules! from_applied {
    ($($response:ty),*) => {$(
        impl FromApplied for $response {
            fn from_applied(applied: Applied, epoch: String) -> Self {
                Self {
                    applied: applied.applied,
                    resource_version: applied.resource_version,
                    revision: applied.revision,
                    epoch,
                    stale: applied.stale_reason(),
                }
            }
        }
    )*};
}
from_applied!(
    pb::UpdateNodeResponse,
    pb::UpdatePodResponse,
    pb::UpdatePodDisruptionBudgetResponse,
    pb::UpdatePriorityClassResponse,
    pb::UpdateNamespaceResponse,
    pb::UpdatePodGroupResponse,
    pb::UpdateWorkloadResponse
);

type WatchStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchNominationsResponse, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl pb::preemption_server::Preemption for PreemptionService {
    async fn update_node(
        &self,
        request: Request<pb::UpdateNodeRequest>,
    ) -> Result<Response<pb::UpdateNodeResponse>, Status> {
        let applied = self.update(request.into_inner()).await?;
        Ok(Response::new(pb::UpdateNodeResponse::from_applied(
            applied,
            self.app.epoch.clone(),
        )))
    }

    async fn update_pod(
        &self,
        request: Request<wire::UpdatePodRequestWire>,
    ) -> Result<Response<pb::UpdatePodResponse>, Status> {
        // An upsert is read straight from its encoding (see `wire`); anything else is
        // decoded by prost and goes the way of every update.
        let received = UNARY_MEMO
            .with_borrow_mut(|memo| wire::read_update_pod(request.into_inner().0, memo))
            .map_err(wire::undecodable)?;
        let applied = match received {
            wire::Received::Upserted(pod) => {
                self.app.check_writable().map_err(ApiError::from)?;
                let change = Change::Upsert(PodArc::new(pod?));
                self.app
                    .apply(AnyChange::Pod(change))
                    .map_err(ApiError::from)?
            }
            wire::Received::Decoded(request) => self.update(*request).await?,
        };
        Ok(Response::new(pb::UpdatePodResponse::from_applied(
            applied,
            self.app.epoch.clone(),
        )))
    }

    async fn update_pod_disruption_budget(
        &self,
        request: Request<pb::UpdatePodDisruptionBudgetRequest>,
    ) -> Result<Response<pb::UpdatePodDisruptionBudgetResponse>, Status> {
        let applied = self.update(request.into_inner()).await?;
        Ok(Response::new(
            pb::UpdatePodDisruptionBudgetResponse::from_applied(applied, self.app.epoch.clone()),
        ))
    }

    async fn update_priority_class(
        &self,
        request: Request<pb::UpdatePriorityClassRequest>,
    ) -> Result<Response<pb::UpdatePriorityClassResponse>, Status> {
        let applied = self.update(request.into_inner()).await?;
        Ok(Response::new(
            pb::UpdatePriorityClassResponse::from_applied(applied, self.app.epoch.clone()),
        ))
    }

    async fn update_namespace(
        &self,
        request: Request<pb::UpdateNamespaceRequest>,
    ) -> Result<Response<pb::UpdateNamespaceResponse>, Status> {
        let applied = self.update(request.into_inner()).await?;
        Ok(Response::new(pb::UpdateNamespaceResponse::from_applied(
            applied,
            self.app.epoch.clone(),
        )))
    }

    async fn update_pod_group(
        &self,
        request: Request<pb::UpdatePodGroupRequest>,
    ) -> Result<Response<pb::UpdatePodGroupResponse>, Status> {
        let applied = self.update(request.into_inner()).await?;
        Ok(Response::new(pb::UpdatePodGroupResponse::from_applied(
            applied,
            self.app.epoch.clone(),
        )))
    }

    async fn update_workload(
        &self,
        request: Request<pb::UpdateWorkloadRequest>,
    ) -> Result<Response<pb::UpdateWorkloadResponse>, Status> {
        let applied = self.update(request.into_inner()).await?;
        Ok(Response::new(pb::UpdateWorkloadResponse::from_applied(
            applied,
            self.app.epoch.clone(),
        )))
    }

    async fn preempt(
        &self,
        request: Request<pb::PreemptRequest>,
    ) -> Result<Response<pb::PreemptResponse>, Status> {
        if !request.get_ref().dry_run {
            super::authz::check_commit(request.extensions(), self.authz_enforced)?;
            // Before listing is done too: such a call never succeeds in this mode.
            self.app.check_committable().map_err(ApiError::from)?;
        }
        let app = &self.app;
        app.check_listed().map_err(ApiError::from)?;
        // Taken before decoding, which for large documents is the costly part.
        let permit = app
            .decision_permit(AppError::preempt_overloaded)
            .map_err(ApiError::from)?;
        let request = request.into_inner();
        use pb::preempt_request::Preemptor;
        let (class_path, mut pod) = match request.preemptor {
            None => {
                return Err(ApiError::invalid(
                    "preemptor",
                    "one of pod, pod_json or pod_ref is required",
                )
                .into());
            }
            Some(Preemptor::Pod(p)) => ("pod.spec.priorityClassName", convert::pod("pod", &p)?),
            Some(Preemptor::PodJson(text)) => (
                "pod_json: spec.priorityClassName",
                if parses_inline(&text) {
                    decode_document("pod_json", &text, decode::decode_pod)?
                } else {
                    on_blocking_pool(move || decode_document("pod_json", &text, decode::decode_pod))
                        .await?
                },
            ),
            Some(Preemptor::PodRef(r)) => (
                "pod.spec.priorityClassName",
                app.held_pod(&convert::pod_key(&r), "pod_ref")
                    .map_err(ApiError::from)?,
            ),
        };
        crate::engine::check_pending(&pod).map_err(ApiError::from)?;
        app.admit(&mut pod, class_path).map_err(ApiError::from)?;
        let decide = PreemptRequest {
            pod,
            dry_run: request.dry_run,
            explain: request.explain,
            pdb_mode: convert::pdb_mode(request.pdb_mode)?,
        };
        let start = std::time::Instant::now();
        let decided = app.preempt(decide, permit).await.map_err(ApiError::from)?;
        let mut response = convert::decision(&decided.decision);
        response.epoch = app.epoch.clone();
        response.revision = decided.revision;
        response.nominations_revision = decided.nominations_revision;
        crate::ops::metrics::record_decision(
            outcome_label(response.outcome),
            response.victims.len(),
            start.elapsed(),
        );
        Ok(Response::new(response))
    }

    async fn preempt_group(
        &self,
        request: Request<pb::PreemptGroupRequest>,
    ) -> Result<Response<pb::PreemptGroupResponse>, Status> {
        self.preempt_group_call(request).await
    }

    async fn plan_drain(
        &self,
        request: Request<pb::PlanDrainRequest>,
    ) -> Result<Response<pb::PlanDrainResponse>, Status> {
        self.app.check_listed().map_err(ApiError::from)?;
        let request = request.into_inner();
        let pdb_mode = convert::pdb_mode(request.pdb_mode)?;
        // A plan is a batch of decisions: it sheds with Preempt, from the same permits.
        let permit = self
            .app
            .decision_permit(AppError::drain_overloaded)
            .map_err(ApiError::from)?;
        let app = self.app.clone();
        let span = tracing::Span::current();
        // A plan copies the cluster and makes one decision per pod: blocking pool.
        let planned = tokio::task::spawn_blocking(move || {
            let planned =
                span.in_scope(|| app.plan_drain(&request.node_names, pdb_mode, request.explain));
            drop(permit);
            planned
        })
        .await
        .map_err(ApiError::from)?
        .map_err(ApiError::from)?;
        let mut response = convert::drain_plan(&planned.plan);
        response.epoch = self.app.epoch.clone();
        response.revision = planned.revision;
        Ok(Response::new(response))
    }

    async fn list_nominations(
        &self,
        _request: Request<pb::ListNominationsRequest>,
    ) -> Result<Response<pb::ListNominationsResponse>, Status> {
        self.app.check_running().map_err(ApiError::from)?;
        let app = self.app.clone();
        // Walks every node: blocking pool.
        let (nominations, revision) = tokio::task::spawn_blocking(move || app.list())
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
            epoch: self.app.epoch.clone(),
        }))
    }

    type WatchNominationsStream = WatchStream;

    async fn watch_nominations(
        &self,
        request: Request<pb::WatchNominationsRequest>,
    ) -> Result<Response<Self::WatchNominationsStream>, Status> {
        self.app.check_running().map_err(ApiError::from)?;
        let after = request.into_inner().after_revision;
        let (watch_permit, subscription) = if after == 0 {
            // Reads every node's nominations: blocking pool.
            let app = self.app.clone();
            tokio::task::spawn_blocking(move || app.watch(after))
                .await
                .map_err(ApiError::from)?
        } else {
            self.app.watch(after)
        }
        .map_err(ApiError::from)?;
        tracing::debug!(after_revision = after, "watch started");
        let epoch = self.app.epoch.clone();
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
        let app = self.app.clone();
        app.check_writable().map_err(ApiError::from)?;
        let _permit = app.sync_permit().map_err(ApiError::from)?;
        Ok(Response::new(sync::run(app, request.into_inner()).await?))
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

/// Whether a document is cheap enough to parse on an async thread: small JSON.
fn parses_inline(text: &str) -> bool {
    text.len() <= INLINE_DECODE_BYTES && decode::reads_as_json(text)
}

/// Runs `job` on the blocking pool. A call dropped while its job waits for a blocking
/// thread (its deadline passed, its client went away) never runs it.
async fn on_blocking_pool<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let waiting = Arc::new(());
    let caller = Arc::downgrade(&waiting);
    let done = tokio::task::spawn_blocking(move || (caller.strong_count() > 0).then(job)).await?;
    drop(waiting);
    done.unwrap_or_else(|| Err(ApiError::internal("document decode abandoned")))
}
