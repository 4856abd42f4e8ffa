//! How a change of each kind is applied, one function per kind, whether a unary update
//! or a `Sync` item carries it: the same checks, cache calls and nomination events.

use parking_lot::MutexGuard;

use crate::cache::UpdateOutcome;
use crate::model::namespace::Namespace;
use crate::model::priority::{PriorityClass, PriorityClasses};
use crate::model::{Node, Pod, PodDisruptionBudget};
use crate::nominations::Event;

use super::super::errors::ApiError;
use super::super::pb;
use super::{State, nomination_events, nomination_of, upsert_events};

/// A converted change of one object.
pub(crate) enum Change<T> {
    Upsert(T),
    Delete(pb::ObjectRef),
}

/// The cache's handle of a pod.
pub(crate) type PodArc = triomphe::Arc<Pod>;

/// Proof that the caller holds `State::sync`, the lock that orders nomination-moving
/// changes with their events (see the parent module).
pub(crate) type Ordered<'a> = MutexGuard<'a, ()>;

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

/// Admits a pod the cache is to hold: one naming a class that does not exist is kept
/// with priority 0 (admission would have refused it; the cluster has it anyway).
fn admit_held(pod: &mut Pod, classes: &PriorityClasses) {
    if let Err(unknown) = pod.admit(classes) {
        pod.priority = 0;
        pod.unadmitted = Default::default();
        crate::ops::metrics::pod_with_unknown_priority_class();
        tracing::warn!(
            namespace = %pod.namespace,
            pod = %pod.name(),
            error = %unknown,
            "pod names a priority class that does not exist, kept with priority 0"
        );
    }
}

impl State {
    /// Applies a node change (`UpdateNode`, a `Sync` node item).
    pub(crate) fn apply_node(&self, change: Change<Node>) -> Result<UpdateOutcome, ApiError> {
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
    pub(crate) fn apply_pdb(
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

    /// Applies a PriorityClass change (`UpdatePriorityClass`, a `Sync` item). Pods held
    /// keep the priority they were admitted with, as admitted pods do.
    pub(crate) fn apply_priority_class(
        &self,
        change: Change<PriorityClass>,
    ) -> Result<UpdateOutcome, ApiError> {
        match change {
            Change::Upsert(class) => Ok(self.cache.upsert_priority_class(class)),
            Change::Delete(r) => {
                delete_name(&r)?;
                Ok(self.cache.delete_priority_class(&r.name, uid_of(&r))?)
            }
        }
    }

    /// Applies a Namespace change (`UpdateNamespace`, a `Sync` item).
    pub(crate) fn apply_namespace(
        &self,
        change: Change<Namespace>,
    ) -> Result<UpdateOutcome, ApiError> {
        match change {
            Change::Upsert(namespace) => Ok(self.cache.upsert_namespace(namespace)),
            Change::Delete(r) => {
                delete_name(&r)?;
                Ok(self.cache.delete_namespace(&r.name, uid_of(&r))?)
            }
        }
    }

    /// Applies pod changes in order (`UpdatePod`'s one, a run of `Sync` pod items), each
    /// result handed to `each` in turn, their nomination events appended to `events` for
    /// the caller to publish under the same lock. Upserts that follow each other go to
    /// the cache as one batch, which copies each node entry they touch once rather than
    /// once per pod (see `ClusterCache::upsert_pods`).
    pub(crate) fn apply_pods(
        &self,
        _ordered: &Ordered<'_>,
        changes: impl IntoIterator<Item = Change<PodArc>>,
        events: &mut Vec<Event>,
        mut each: impl FnMut(Result<UpdateOutcome, ApiError>),
    ) {
        let changes = changes.into_iter();
        let mut upserts = Vec::with_capacity(changes.size_hint().0);
        let mut classes = None;
        for change in changes {
            match change {
                Change::Upsert(mut pod) => {
                    if pod.needs_admission() {
                        let classes = classes.get_or_insert_with(|| self.cache.priority_classes());
                        admit_held(PodArc::make_mut(&mut pod), classes);
                    }
                    upserts.push(pod)
                }
                Change::Delete(r) => {
                    self.upsert_pods(&mut upserts, events, &mut each);
                    each(self.delete_pod(&r, events));
                }
            }
        }
        self.upsert_pods(&mut upserts, events, &mut each);
    }

    /// A lone pod change (`UpdatePod`), ordered and published by itself.
    pub(crate) fn apply_pod(&self, change: Change<PodArc>) -> Result<UpdateOutcome, ApiError> {
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
