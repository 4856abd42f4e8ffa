//! How a change of each kind is applied, one function per kind, whether a unary update
//! or a `Sync` item carries it: the same checks, cache calls and nomination events.

use parking_lot::MutexGuard;

use crate::cache::UpdateOutcome;
use crate::model::{Node, Pod, PodDisruptionBudget};
use crate::nominations::Event;

use super::super::errors::ApiError;
use super::super::pb;
use super::{State, nomination_events, nomination_of, upsert_events};

/// A converted change of one object.
pub(super) enum Change<T> {
    Upsert(T),
    Delete(pb::ObjectRef),
}

/// The cache's handle of a pod.
pub(super) type PodArc = triomphe::Arc<Pod>;

/// Proof that the caller holds `State::sync`, the lock that orders nomination-moving
/// changes with their events (see the parent module).
pub(super) type Ordered<'a> = MutexGuard<'a, ()>;

fn delete_name(r: &pb::ObjectRef) -> Result<(), ApiError> {
    if r.name.is_empty() {
        return Err(ApiError::invalid("delete.name", "must not be empty"));
    }
    Ok(())
}

fn namespace_or_default(namespace: &str) -> &str {
    if namespace.is_empty() {
        "default"
    } else {
        namespace
    }
}

fn uid_of(r: &pb::ObjectRef) -> Option<&str> {
    r.uid.as_deref().filter(|u| !u.is_empty())
}

impl State {
    /// Applies a node change (`UpdateNode`, a `Sync` node item).
    pub(super) fn apply_node(&self, change: Change<Node>) -> Result<UpdateOutcome, ApiError> {
        match change {
            Change::Upsert(node) => Ok(self.cache.upsert_node(node)),
            Change::Delete(r) => {
                delete_name(&r)?;
                if let Some(uid) = uid_of(&r)
                    && self.cache.get_node(&r.name).is_some_and(|n| &*n.uid != uid)
                {
                    return Err(ApiError::NotFound(format!(
                        "node {} with uid {uid} not found",
                        r.name
                    )));
                }
                Ok(self.cache.delete_node(&r.name)?)
            }
        }
    }

    /// Applies a budget change (`UpdatePodDisruptionBudget`, a `Sync` budget item).
    pub(super) fn apply_pdb(
        &self,
        change: Change<PodDisruptionBudget>,
    ) -> Result<UpdateOutcome, ApiError> {
        match change {
            Change::Upsert(pdb) => Ok(self.cache.upsert_pdb(pdb)),
            Change::Delete(r) => {
                delete_name(&r)?;
                Ok(self
                    .cache
                    .delete_pdb(namespace_or_default(&r.namespace), &r.name)?)
            }
        }
    }

    /// Applies pod changes in order (`UpdatePod`'s one, a run of `Sync` pod items), each
    /// result handed to `each` in turn, their nomination events appended to `events` for
    /// the caller to publish under the same lock. Upserts that follow each other go to
    /// the cache as one batch, which copies each node entry they touch once rather than
    /// once per pod (see `ClusterCache::upsert_pods`).
    pub(super) fn apply_pods(
        &self,
        _ordered: &Ordered<'_>,
        changes: impl IntoIterator<Item = Change<PodArc>>,
        events: &mut Vec<Event>,
        mut each: impl FnMut(Result<UpdateOutcome, ApiError>),
    ) {
        let changes = changes.into_iter();
        let mut upserts = Vec::with_capacity(changes.size_hint().0);
        for change in changes {
            match change {
                Change::Upsert(pod) => upserts.push(pod),
                Change::Delete(r) => {
                    self.upsert_pods(&mut upserts, events, &mut each);
                    each(self.delete_pod(&r, events));
                }
            }
        }
        self.upsert_pods(&mut upserts, events, &mut each);
    }

    /// A lone pod change (`UpdatePod`), ordered and published by itself.
    pub(super) fn apply_pod(&self, change: Change<PodArc>) -> Result<UpdateOutcome, ApiError> {
        let ordered = self.sync.lock();
        let mut events = Vec::new();
        let mut outcome = None;
        self.apply_pods(&ordered, [change], &mut events, |o| outcome = Some(o));
        self.log.publish(events);
        outcome.unwrap_or_else(|| Err(ApiError::Internal("a pod change had no outcome".into())))
    }

    fn upsert_pods(
        &self,
        upserts: &mut Vec<PodArc>,
        events: &mut Vec<Event>,
        each: &mut impl FnMut(Result<UpdateOutcome, ApiError>),
    ) {
        let mut record = |upsert: Result<crate::cache::PodUpsert, _>| {
            each(upsert.map_err(ApiError::from).map(|upsert| {
                events.extend(upsert_events(&upsert));
                upsert.outcome
            }))
        };
        match upserts.len() {
            0 => {}
            // A batch locks every shard of the pod index: one pod locks its own two.
            1 => {
                for pod in upserts.drain(..) {
                    record(self.cache.upsert_pod_with_nominations(pod));
                }
            }
            _ => {
                for upsert in self.cache.upsert_pods(upserts.drain(..)) {
                    record(upsert);
                }
            }
        }
    }

    fn delete_pod(
        &self,
        r: &pb::ObjectRef,
        events: &mut Vec<Event>,
    ) -> Result<UpdateOutcome, ApiError> {
        delete_name(r)?;
        let namespace = namespace_or_default(&r.namespace);
        let before = self
            .cache
            .get_pod_by_name(namespace, &r.name)
            .and_then(|p| nomination_of(&p));
        let outcome = self.cache.delete_pod(namespace, &r.name, uid_of(r))?;
        events.extend(nomination_events(before, None));
        Ok(outcome)
    }
}
