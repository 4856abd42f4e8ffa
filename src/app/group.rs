//! Group preemption: a pending PodGroup's members preempt as one (kubernetes v1.37 with
//! GenericWorkload on), decided on a lane and, unless a dry run, committed as one change
//! of the cache and one batch of the nominations log.

use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;

use crate::cache::{Commit, Snapshot};
use crate::engine::{self, GroupDecision, GroupOptions, Outcome, PdbMode};
use crate::model::{Pod, PodGroup, Str};
use crate::nominations::{Event, EventKind};

use super::apply::change_event;
use super::preempt::OPTIMISTIC_ATTEMPTS;
use super::{App, AppError, ObjectKey};

/// Which group preempts.
#[derive(Clone, Debug)]
pub enum GroupSource {
    /// A PodGroup the cache holds, by namespace and name.
    Held(ObjectKey),
    /// A PodGroup sent with the request (built and admitted by the caller).
    Inline(PodGroup),
}

/// A group preemption to decide.
#[derive(Clone, Debug)]
pub struct PreemptGroupRequest {
    /// The group.
    pub group: GroupSource,
    /// Its pending members, sent with the request (admitted); `None`: the pending pods the
    /// cache holds that name the group.
    pub members: Option<Vec<Pod>>,
    /// Decide only: change nothing.
    pub dry_run: bool,
    /// Notes on each phase in the decision.
    pub explain: bool,
    /// How budgets weigh (`None`: the policy's, else upstream's).
    pub pdb_mode: Option<PdbMode>,
}

/// A group decision, and where the cache and the nominations log stood after it.
#[derive(Debug)]
pub struct GroupDecided {
    /// What upstream would answer.
    pub decision: GroupDecision,
    /// The group decided for.
    pub group: PodGroup,
    /// The cache revision the decision was made on, or its commit's revision.
    pub revision: u64,
    /// The nominations log's revision once the decision's changes are published.
    pub nominations_revision: u64,
}

/// The flags group preemption needs, for the error that names them.
const GROUP_FLAGS: &str = "--kubernetes-version 1.37 --feature-gates GenericWorkload=true";

impl App {
    /// Refuses group preemption unless the server answers as v1.37 with GenericWorkload.
    pub fn check_generic_workload(&self) -> Result<(), AppError> {
        if self.feature_gates().generic_workload() {
            return Ok(());
        }
        Err(AppError::FailedPrecondition(format!(
            "group preemption needs workload-aware preemption: start the server with {GROUP_FLAGS} (it answers as kubernetes {} with {})",
            self.kubernetes_version(),
            self.feature_gates()
        )))
    }

    /// Decides (and unless a dry run commits) a group preemption on a decision lane.
    pub async fn preempt_group(
        self: &Arc<Self>,
        request: PreemptGroupRequest,
        permit: OwnedSemaphorePermit,
    ) -> Result<GroupDecided, AppError> {
        self.check_generic_workload()?;
        self.check_listed()?;
        let app = self.clone();
        let span = tracing::Span::current();
        self.on_lane(permit, move || {
            span.in_scope(|| app.preempt_group_blocking(request))
        })
        .await?
    }

    /// [`App::preempt_group`] on the calling thread. Blocking: milliseconds of CPU.
    pub fn preempt_group_blocking(
        &self,
        request: PreemptGroupRequest,
    ) -> Result<GroupDecided, AppError> {
        self.check_generic_workload()?;
        let options = GroupOptions {
            explain: request.explain,
            now: None,
            pdb_mode: request
                .pdb_mode
                .or_else(|| self.policy.as_ref().map(|p| p.pdb_mode))
                .unwrap_or_default(),
            gates: self.feature_gates().clone(),
        };
        let mut last_conflict: Option<Str> = None;
        for attempt in 1..=self.commit_attempts {
            let _gate = (!request.dry_run && attempt > OPTIMISTIC_ATTEMPTS)
                .then(|| self.preempt_gate.lock());
            let snapshot = self.cache.snapshot();
            let group = self.resolve_group(&request.group, &snapshot)?;
            let members = self.members(&request, &group, &snapshot)?;
            if !request.dry_run {
                for member in &members {
                    self.check_name_is_free(member)?;
                }
            }
            let decision = engine::decide_group(&snapshot, &group, &members, &options);
            let mut decided = GroupDecided {
                decision,
                group,
                revision: snapshot.revision,
                nominations_revision: 0,
            };
            if request.dry_run {
                decided.nominations_revision = self.log.revision();
                return Ok(decided);
            }
            match decided.decision.outcome {
                Outcome::Preempt => match self.commit_group(&members, attempt, &mut decided) {
                    None => return Ok(decided),
                    Some(conflict) => last_conflict = Some(conflict),
                },
                Outcome::NoCandidate => {
                    self.clear_members_nominations(&members, decided.group.priority, &mut decided);
                    return Ok(decided);
                }
                Outcome::Fits | Outcome::NotEligible => {
                    decided.nominations_revision = self.log.revision();
                    return Ok(decided);
                }
            }
        }
        let node = last_conflict.as_deref().unwrap_or("?").to_string();
        let key = match &request.group {
            GroupSource::Held(key) => format!("{}/{}", key.namespace, key.name),
            GroupSource::Inline(group) => format!("{}/{}", group.namespace, group.name),
        };
        tracing::warn!(
            group = %key,
            node = %node,
            attempts = self.commit_attempts,
            "group preemption gave up after repeated commit conflicts"
        );
        Err(AppError::Aborted(format!(
            "node {node} kept changing concurrently: preemption for pod group {key} not committed after {} attempts; retry",
            self.commit_attempts
        )))
    }

    /// The group the request names, as held or as sent.
    fn resolve_group(
        &self,
        source: &GroupSource,
        snapshot: &Snapshot,
    ) -> Result<PodGroup, AppError> {
        match source {
            GroupSource::Inline(group) => Ok(group.clone()),
            GroupSource::Held(key) => {
                if key.name.is_empty() {
                    return Err(AppError::invalid("group_ref.name", "must not be empty"));
                }
                let namespace: Str = if key.namespace.is_empty() {
                    "default".into()
                } else {
                    key.namespace.as_str().into()
                };
                snapshot
                    .pod_groups
                    .group(&namespace, &key.name.as_str().into())
                    .filter(|g| {
                        key.uid
                            .as_deref()
                            .is_none_or(|u| u.is_empty() || *g.uid == *u)
                    })
                    .map(|g| (**g).clone())
                    .ok_or_else(|| {
                        AppError::NotFound(format!(
                            "pod group {namespace}/{} is not held",
                            key.name
                        ))
                    })
            }
        }
    }

    /// The group's pending members: those sent (each checked to belong), else the
    /// pending pods held that name it (as `snapshot` indexes them, still pending);
    /// held nominations filled in.
    fn members(
        &self,
        request: &PreemptGroupRequest,
        group: &PodGroup,
        snapshot: &Snapshot,
    ) -> Result<Vec<Pod>, AppError> {
        let mut members = match &request.members {
            Some(sent) => {
                for (i, pod) in sent.iter().enumerate() {
                    if pod.namespace != group.namespace {
                        return Err(AppError::invalid(
                            format!("members[{i}].metadata.namespace"),
                            format!("must be the pod group's namespace {:?}", &*group.namespace),
                        ));
                    }
                    if let Some(other) = pod
                        .details
                        .scheduling_group
                        .as_ref()
                        .filter(|g| **g != group.name)
                    {
                        return Err(AppError::invalid(
                            format!("members[{i}].spec.schedulingGroup.podGroupName"),
                            format!("names pod group {other:?}, not {:?}", &*group.name),
                        ));
                    }
                    if pod.node_name.as_ref().is_some_and(|n| !n.is_empty()) {
                        return Err(AppError::invalid(
                            format!("members[{i}].spec.nodeName"),
                            "must be empty: members are pending",
                        ));
                    }
                }
                sent.clone()
            }
            None => snapshot
                .pod_groups
                .pending_members(&group.namespace, &group.name)
                .filter_map(|uid| self.cache.get_pod(uid))
                .filter(|p| {
                    p.namespace == group.namespace
                        && p.node_name.is_none()
                        && p.details.scheduling_group.as_ref() == Some(&group.name)
                })
                .map(|p| (*p).clone())
                .collect(),
        };
        if members.is_empty() {
            return Err(AppError::FailedPrecondition(format!(
                "pod group {}/{} has no pending members",
                group.namespace, group.name
            )));
        }
        for member in &mut members {
            self.cache.fill_held_nomination(member);
        }
        Ok(members)
    }

    /// Commits a group decision as one cache change and one batch of log events.
    /// `Some(node)` when a node changed since the decision's snapshot: decide again.
    fn commit_group(
        &self,
        members: &[Pod],
        attempt: u32,
        decided: &mut GroupDecided,
    ) -> Option<Str> {
        let decision = &decided.decision;
        let nominated = decision
            .nominations
            .iter()
            .filter_map(|(pod_ref, node)| {
                let member = members.iter().find(|m| m.uid() == &*pod_ref.uid)?;
                Some((member.clone(), node.clone()))
            })
            .collect();
        let commit = Commit {
            nominated,
            checked_nodes: decision.node_generations.clone(),
            victims: decision.victims.clone(),
            nominations_to_clear: decision.nominated_pods_to_clear.clone(),
        };
        let _sync = self.sync.lock();
        match self.cache.commit(&commit) {
            Ok((changes, revision)) => {
                decided.revision = revision;
                decided.nominations_revision =
                    self.log.publish(changes.into_iter().map(change_event));
                tracing::debug!(
                    group = %decided.group.name,
                    namespace = %decided.group.namespace,
                    members = commit.nominated.len(),
                    victims = commit.victims.len(),
                    attempt,
                    "group preemption committed"
                );
                None
            }
            Err(conflict) => {
                tracing::debug!(node = %conflict.node, attempt, "group commit conflict, deciding again");
                Some(conflict.node)
            }
        }
    }

    /// No candidate: every member loses the nomination the cache holds for it, in one
    /// batch.
    fn clear_members_nominations(
        &self,
        members: &[Pod],
        priority: i32,
        decided: &mut GroupDecided,
    ) {
        let _sync = self.sync.lock();
        let cleared: Vec<Event> = members
            .iter()
            .filter_map(|m| self.cache.clear_nomination(m.uid()))
            .map(|(pod_ref, node)| Event::new(EventKind::Cleared, pod_ref, node, priority))
            .collect();
        if !cleared.is_empty() {
            decided.revision = self.cache.revision();
        }
        decided.nominations_revision = self.log.publish(cleared);
    }
}
