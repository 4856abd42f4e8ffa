//! Deciding and committing: a preemption (dry run or committed, with the re-check that
//! concurrent commits never count the same freed room twice), the held-nomination fill,
//! admission of a preemptor, and drain plans.

use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;

use crate::cache::Commit;
use crate::engine::drain::{DrainError, DrainOptions, DrainPlan};
use crate::engine::{self, DecideOptions, Decision, Outcome, PdbMode};
use crate::model::{Pod, PodGroup, Str};
use crate::nominations::{Event, EventKind};

use super::apply::change_event;
use super::{App, AppError, ObjectKey};

/// Commit attempts made without the preempt gate; later ones are serialized among
/// preemptions so concurrent preemptors cannot keep invalidating each other.
pub(super) const OPTIMISTIC_ATTEMPTS: u32 = 4;

/// A preemption to decide.
#[derive(Clone, Debug)]
pub struct PreemptRequest {
    /// The preemptor, admitted (see [`App::admit`]).
    pub pod: Pod,
    /// Decide only: change nothing.
    pub dry_run: bool,
    /// Per-node diagnostics in the decision.
    pub explain: bool,
    /// How budgets weigh (`None`: the policy's, else upstream's).
    pub pdb_mode: Option<PdbMode>,
}

/// A decision, and where the cache and the nominations log stood after it.
#[derive(Debug)]
pub struct Decided {
    /// What upstream would answer.
    pub decision: Decision,
    /// The cache revision the decision was made on, or its commit's revision.
    pub revision: u64,
    /// The nominations log's revision once the decision's changes are published.
    pub nominations_revision: u64,
}

/// A drain plan and the cache revision it was made on.
#[derive(Debug)]
pub struct DrainPlanned {
    /// Where each pod of the drained nodes goes, and the eviction order.
    pub plan: DrainPlan,
    /// The cache revision the plan was made on.
    pub revision: u64,
}

impl App {
    /// The pod `key` names, as the cache holds it.
    pub fn held_pod(&self, key: &ObjectKey, field: &str) -> Result<Pod, AppError> {
        if key.name.is_empty() {
            return Err(AppError::invalid(
                format!("{field}.name"),
                "must not be empty",
            ));
        }
        let namespace = if key.namespace.is_empty() {
            "default"
        } else {
            &key.namespace
        };
        let uid = key.uid.as_deref().unwrap_or("");
        self.cache
            .get_pod_by_name(namespace, &key.name)
            .filter(|held| uid.is_empty() || held.uid() == uid)
            .map(|held| (*held).clone())
            .ok_or_else(|| AppError::NotFound(format!("pod {namespace}/{} is not held", key.name)))
    }

    /// As the Priority admission plugin: a manifest's priority (and preemption policy)
    /// from its class. `class_path` names the class field for the error.
    pub fn admit(&self, pod: &mut Pod, class_path: &str) -> Result<(), AppError> {
        pod.admit(&self.cache.priority_classes())
            .map_err(|unknown| AppError::invalid(class_path, unknown.to_string()))
    }

    /// [`App::admit`] for a PodGroup sent with a request: its priority from its class
    /// when `spec.priority` is unset.
    pub fn admit_group(&self, group: &mut PodGroup, class_path: &str) -> Result<(), AppError> {
        group
            .admit(&self.cache.priority_classes())
            .map_err(|unknown| AppError::invalid(class_path, unknown.to_string()))
    }

    /// Decides on a decision lane (its parallel passes split over the lane's pool
    /// without waiting on other decisions) and, unless a dry run, commits. `permit` is
    /// one of [`App::decision_permit`]'s, taken by the caller before its costly input
    /// work; it is freed before the answer goes out, so a caller that has its answer may
    /// call again at once without being shed by its own finished call.
    pub async fn preempt(
        self: &Arc<Self>,
        request: PreemptRequest,
        permit: OwnedSemaphorePermit,
    ) -> Result<Decided, AppError> {
        self.check_listed()?;
        let app = self.clone();
        let span = tracing::Span::current();
        self.on_lane(permit, move || {
            span.in_scope(|| app.preempt_blocking(request))
        })
        .await?
    }

    /// Runs a decision's `job` on a decision lane, whose pool its parallel passes split
    /// over without waiting on other decisions. `permit` stays with the work even if the
    /// caller gives up waiting, and is freed before the answer goes out.
    pub async fn on_lane<T: Send + 'static>(
        &self,
        permit: OwnedSemaphorePermit,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AppError> {
        let (done, result) = tokio::sync::oneshot::channel();
        self.lanes.spawn(move || {
            let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
                .map_err(|_| AppError::Internal("decision panicked".to_string()));
            drop(permit);
            let _ = done.send(answered);
        });
        result
            .await
            .map_err(|_| AppError::Internal("decision task dropped".to_string()))?
    }

    /// [`App::preempt`] on the calling thread. Blocking: milliseconds of CPU.
    pub fn preempt_blocking(&self, request: PreemptRequest) -> Result<Decided, AppError> {
        let PreemptRequest {
            pod,
            dry_run,
            explain,
            pdb_mode,
        } = request;
        let options = DecideOptions {
            explain,
            policy: self.policy.clone(),
            pdb_mode,
            version: self.kubernetes_version(),
            feature_gates: Some(self.feature_gates().clone()),
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
            let mut decided = Decided {
                revision: snapshot.revision,
                nominations_revision: 0,
                decision,
            };
            if dry_run {
                decided.nominations_revision = self.log.revision();
                return Ok(decided);
            }
            match decided.decision.outcome {
                Outcome::Preempt => match self.commit(preemptor, attempt, &mut decided)? {
                    None => return Ok(decided),
                    Some(conflict) => last_conflict = Some(conflict),
                },
                Outcome::NoCandidate => {
                    self.clear_own_nomination(&preemptor, &mut decided);
                    return Ok(decided);
                }
                Outcome::Fits | Outcome::NotEligible => {
                    decided.nominations_revision = self.log.revision();
                    return Ok(decided);
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
        Err(AppError::Aborted(format!(
            "node {node} kept changing concurrently: preemption for pod {}/{} not committed after {} attempts; retry",
            pod.namespace,
            pod.name(),
            self.commit_attempts
        )))
    }

    /// A commit records the preemptor under its name: refused when another uid holds it.
    pub(super) fn check_name_is_free(&self, pod: &Pod) -> Result<(), AppError> {
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

    /// Commits a preemption decision and publishes its nomination changes.
    /// `Some(node)` when that node changed since the decision's snapshot: decide again.
    fn commit(
        &self,
        preemptor: Pod,
        attempt: u32,
        decided: &mut Decided,
    ) -> Result<Option<Str>, AppError> {
        let decision = &decided.decision;
        let Some(node) = decision.nominated_node.clone() else {
            return Err(AppError::Internal(
                "preempt decision without a node".to_string(),
            ));
        };
        let commit = Commit {
            nominated: vec![(preemptor, node.clone())],
            checked_nodes: vec![(node.clone(), decision.node_generation)],
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
                decided.revision = revision;
                decided.nominations_revision =
                    self.log.publish(changes.into_iter().map(change_event));
                let (preemptor, _) = &commit.nominated[0];
                tracing::debug!(
                    pod = %preemptor.name(),
                    namespace = %preemptor.namespace,
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
    fn clear_own_nomination(&self, preemptor: &Pod, decided: &mut Decided) {
        let _sync = self.sync.lock();
        let cleared = self.cache.clear_nomination(preemptor.uid());
        if cleared.is_some() {
            decided.revision = self.cache.revision();
        }
        decided.nominations_revision = self.log.publish(cleared.map(|(pod_ref, node)| {
            Event::new(EventKind::Cleared, pod_ref, node, preemptor.priority)
        }));
    }

    /// Plans the drain of `nodes` on the current cache (callers check it is listed).
    /// Blocking: it copies the cluster and makes one decision per pod.
    pub fn plan_drain(
        &self,
        nodes: &[String],
        pdb_mode: Option<PdbMode>,
        explain: bool,
    ) -> Result<DrainPlanned, DrainError> {
        let snapshot = self.cache.snapshot();
        let options = DrainOptions {
            policy: self.policy.clone(),
            pdb_mode,
            explain,
            now: None,
            version: self.kubernetes_version(),
        };
        let plan = engine::drain::plan(&snapshot, nodes, &options)?;
        Ok(DrainPlanned {
            plan,
            revision: snapshot.revision,
        })
    }
}
