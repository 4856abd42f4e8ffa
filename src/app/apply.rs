//! How a change of each kind is applied, whatever carried it (a unary update, a `Sync`
//! item, a watch event): the same checks, cache calls and nomination events. One
//! dispatch, [`App::apply`], takes a change of any kind.

use parking_lot::MutexGuard;

use crate::cache::{CommitChange, Nomination, PodUpsert, UpdateOutcome};
use crate::model::decode::Object;
use crate::model::namespace::Namespace;
use crate::model::priority::{PriorityClass, PriorityClasses};
use crate::model::{Node, Pod, PodDisruptionBudget, PodGroup, Workload};
use crate::nominations::{Event, EventKind};

use super::{App, AppError};

/// Names an object: a namespace (empty for cluster-scoped kinds and for pods and budgets
/// of `default`), a name, and optionally the uid it must have.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectKey {
    /// Empty: `default` for namespaced kinds.
    pub namespace: String,
    /// Must not be empty.
    pub name: String,
    /// When set (non-empty), the object held must have this uid.
    pub uid: Option<String>,
}

impl ObjectKey {
    fn namespace_or_default(&self) -> &str {
        if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }

    fn uid(&self) -> Option<&str> {
        self.uid.as_deref().filter(|u| !u.is_empty())
    }

    fn check_name(&self, field: &str) -> Result<(), AppError> {
        if self.name.is_empty() {
            return Err(AppError::invalid(
                format!("{field}.name"),
                "must not be empty",
            ));
        }
        Ok(())
    }
}

/// A converted change of one object.
#[derive(Debug)]
pub enum Change<T> {
    /// Add or replace the object.
    Upsert(T),
    /// Remove the object the key names.
    Delete(ObjectKey),
}

impl<T> Change<T> {
    /// The resource version an upsert was sent at (0 for a delete).
    pub fn sent_version(&self, resource_version: impl Fn(&T) -> u64) -> u64 {
        match self {
            Change::Upsert(object) => resource_version(object),
            Change::Delete(_) => 0,
        }
    }
}

/// The cache's handle of a pod.
pub type PodArc = triomphe::Arc<Pod>;

/// A change of any kind: what the one dispatch takes.
#[derive(Debug)]
pub enum AnyChange {
    /// A node.
    Node(Change<Node>),
    /// A pod, in its final allocation.
    Pod(Change<PodArc>),
    /// A PodDisruptionBudget.
    Pdb(Change<PodDisruptionBudget>),
    /// A PriorityClass.
    PriorityClass(Change<PriorityClass>),
    /// A Namespace.
    Namespace(Change<Namespace>),
    /// A PodGroup.
    PodGroup(Change<PodGroup>),
    /// A Workload.
    Workload(Change<Workload>),
}

/// A decoded object (a watch event's, a file's) as an upsert.
impl From<Object> for AnyChange {
    fn from(object: Object) -> Self {
        match object {
            Object::Node(node) => AnyChange::Node(Change::Upsert(node)),
            Object::Pod(pod) => AnyChange::Pod(Change::Upsert(PodArc::new(pod))),
            Object::Pdb(pdb) => AnyChange::Pdb(Change::Upsert(pdb)),
            Object::PriorityClass(class) => AnyChange::PriorityClass(Change::Upsert(class)),
            Object::Namespace(ns) => AnyChange::Namespace(Change::Upsert(ns)),
            Object::PodGroup(group) => AnyChange::PodGroup(Change::Upsert(group)),
            Object::Workload(workload) => AnyChange::Workload(Change::Upsert(workload)),
        }
    }
}

/// What applying a change did: applied or stale, with the versions to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The cache took the change (false: stale, the cache holds a newer version).
    pub applied: bool,
    /// The version the cache holds now.
    pub resource_version: u64,
    /// The cache's revision after the change.
    pub revision: u64,
    /// The version the change was sent at (0 for a delete).
    pub sent_version: u64,
}

impl Applied {
    fn of(outcome: UpdateOutcome, sent_version: u64) -> Self {
        Applied {
            applied: outcome.applied,
            resource_version: outcome.resource_version,
            revision: outcome.revision,
            sent_version,
        }
    }

    /// Why a change was not applied (empty when it was).
    pub fn stale_reason(&self) -> String {
        if self.applied {
            String::new()
        } else {
            format!(
                "resource_version {} is older than resource_version {} held by the cache",
                self.sent_version, self.resource_version
            )
        }
    }
}

/// Proof that the caller holds `App::sync`, the lock that orders nomination-moving
/// changes with their events (see the module docs of `app`).
pub(crate) type Ordered<'a> = MutexGuard<'a, ()>;

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

impl App {
    /// Applies one change of any kind, refused while Kubernetes watches are the writer
    /// (they apply through [`App::apply_watched`]).
    pub fn apply(&self, change: AnyChange) -> Result<Applied, AppError> {
        self.check_writable()?;
        self.apply_unchecked(change)
    }

    /// Applies one change of any kind, whoever the writer is.
    pub(crate) fn apply_unchecked(&self, change: AnyChange) -> Result<Applied, AppError> {
        match change {
            AnyChange::Node(change) => {
                let sent = change.sent_version(|n| n.resource_version);
                self.apply_node(change).map(|o| Applied::of(o, sent))
            }
            AnyChange::Pod(change) => {
                let sent = change.sent_version(|p| p.resource_version);
                self.apply_pod(change).map(|o| Applied::of(o, sent))
            }
            AnyChange::Pdb(change) => {
                let sent = change.sent_version(|p| p.resource_version);
                self.apply_pdb(change).map(|o| Applied::of(o, sent))
            }
            AnyChange::PriorityClass(change) => {
                let sent = change.sent_version(|c| c.resource_version);
                self.apply_priority_class(change)
                    .map(|o| Applied::of(o, sent))
            }
            AnyChange::Namespace(change) => {
                let sent = change.sent_version(|n| n.resource_version);
                self.apply_namespace(change).map(|o| Applied::of(o, sent))
            }
            AnyChange::PodGroup(change) => {
                let sent = change.sent_version(|g| g.resource_version);
                self.apply_pod_group(change).map(|o| Applied::of(o, sent))
            }
            AnyChange::Workload(change) => {
                let sent = change.sent_version(|w| w.resource_version);
                self.apply_workload(change).map(|o| Applied::of(o, sent))
            }
        }
    }

    /// Groups are kept whatever the feature gates say: the engine decides whether to
    /// read them.
    fn apply_pod_group(&self, change: Change<PodGroup>) -> Result<UpdateOutcome, AppError> {
        match change {
            Change::Upsert(group) => {
                let (namespace, name) = (group.namespace.clone(), group.name.clone());
                let (outcome, unknown) = self.cache.upsert_pod_group(group);
                if let Some(unknown) = unknown {
                    tracing::warn!(
                        namespace = %namespace,
                        pod_group = %name,
                        error = %unknown,
                        "pod group names a priority class that does not exist, kept with priority 0"
                    );
                }
                Ok(outcome)
            }
            Change::Delete(key) => {
                key.check_name("delete")?;
                Ok(self
                    .cache
                    .delete_pod_group(key.namespace_or_default(), &key.name)?)
            }
        }
    }

    fn apply_workload(&self, change: Change<Workload>) -> Result<UpdateOutcome, AppError> {
        match change {
            Change::Upsert(workload) => Ok(self.cache.upsert_workload(workload)),
            Change::Delete(key) => {
                key.check_name("delete")?;
                Ok(self
                    .cache
                    .delete_workload(key.namespace_or_default(), &key.name)?)
            }
        }
    }

    fn apply_node(&self, change: Change<Node>) -> Result<UpdateOutcome, AppError> {
        match change {
            Change::Upsert(node) => Ok(self.cache.upsert_node(node)),
            Change::Delete(key) => {
                key.check_name("delete")?;
                if let Some(uid) = key.uid()
                    && self
                        .cache
                        .get_node(&key.name)
                        .is_some_and(|n| &*n.uid != uid)
                {
                    return Err(AppError::NotFound(format!(
                        "node {} with uid {uid} not found",
                        key.name
                    )));
                }
                Ok(self.cache.delete_node(&key.name)?)
            }
        }
    }

    fn apply_pdb(&self, change: Change<PodDisruptionBudget>) -> Result<UpdateOutcome, AppError> {
        match change {
            Change::Upsert(pdb) => Ok(self.cache.upsert_pdb(pdb)),
            Change::Delete(key) => {
                key.check_name("delete")?;
                Ok(self
                    .cache
                    .delete_pdb(key.namespace_or_default(), &key.name)?)
            }
        }
    }

    /// Pods held keep the priority they were admitted with, as admitted pods do.
    fn apply_priority_class(
        &self,
        change: Change<PriorityClass>,
    ) -> Result<UpdateOutcome, AppError> {
        match change {
            Change::Upsert(class) => Ok(self.cache.upsert_priority_class(class)),
            Change::Delete(key) => {
                key.check_name("delete")?;
                Ok(self.cache.delete_priority_class(&key.name, key.uid())?)
            }
        }
    }

    fn apply_namespace(&self, change: Change<Namespace>) -> Result<UpdateOutcome, AppError> {
        match change {
            Change::Upsert(namespace) => Ok(self.cache.upsert_namespace(namespace)),
            Change::Delete(key) => {
                key.check_name("delete")?;
                Ok(self.cache.delete_namespace(&key.name, key.uid())?)
            }
        }
    }

    /// A lone pod change, ordered and published by itself.
    fn apply_pod(&self, change: Change<PodArc>) -> Result<UpdateOutcome, AppError> {
        let ordered = self.sync.lock();
        let mut events = Vec::new();
        let mut outcome = None;
        self.apply_pods(&ordered, [change], &mut events, |o| outcome = Some(o));
        self.log.publish(events);
        outcome.unwrap_or_else(|| Err(AppError::Internal("a pod change had no outcome".into())))
    }

    /// Applies changes of any kinds in order (a run of `Sync` items, a batch of watch
    /// events), each result handed to `each` in turn. Runs of pod changes are applied
    /// as one batch under one lock, their nomination events published together.
    pub fn apply_in_order(
        &self,
        changes: impl IntoIterator<Item = AnyChange>,
        mut each: impl FnMut(Result<Applied, AppError>),
    ) {
        let mut pods = Vec::new();
        for change in changes {
            match change {
                AnyChange::Pod(pod) => pods.push(pod),
                other => {
                    self.apply_pod_run(std::mem::take(&mut pods), &mut each);
                    each(self.apply_unchecked(other));
                }
            }
        }
        self.apply_pod_run(pods, &mut each);
    }

    fn apply_pod_run(
        &self,
        changes: Vec<Change<PodArc>>,
        each: &mut impl FnMut(Result<Applied, AppError>),
    ) {
        if changes.is_empty() {
            return;
        }
        let sent: Vec<u64> = changes
            .iter()
            .map(|c| c.sent_version(|p| p.resource_version))
            .collect();
        let ordered = self.sync.lock();
        let mut events = Vec::new();
        let mut sent = sent.into_iter();
        self.apply_pods(&ordered, changes, &mut events, |result| {
            let sent = sent.next().unwrap_or(0);
            each(result.map(|o| Applied::of(o, sent)))
        });
        self.log.publish(events);
    }

    /// Applies pod changes in order, each result handed to `each` in turn, their
    /// nomination events appended to `events` for the caller to publish under the same
    /// lock. Upserts that follow each other go to the cache as one batch, which copies
    /// each node entry they touch once rather than once per pod (see
    /// `ClusterCache::upsert_pods`).
    pub(crate) fn apply_pods(
        &self,
        _ordered: &Ordered<'_>,
        changes: impl IntoIterator<Item = Change<PodArc>>,
        events: &mut Vec<Event>,
        mut each: impl FnMut(Result<UpdateOutcome, AppError>),
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
                Change::Delete(key) => {
                    self.upsert_pods(&mut upserts, events, &mut each);
                    each(self.delete_pod(&key, events));
                }
            }
        }
        self.upsert_pods(&mut upserts, events, &mut each);
    }

    fn upsert_pods(
        &self,
        upserts: &mut Vec<PodArc>,
        events: &mut Vec<Event>,
        each: &mut impl FnMut(Result<UpdateOutcome, AppError>),
    ) {
        let mut record = |upsert: Result<PodUpsert, _>| {
            each(upsert.map_err(AppError::from).map(|upsert| {
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
        key: &ObjectKey,
        events: &mut Vec<Event>,
    ) -> Result<UpdateOutcome, AppError> {
        key.check_name("delete")?;
        let namespace = key.namespace_or_default();
        let before = self
            .cache
            .get_pod_by_name(namespace, &key.name)
            .and_then(|p| nomination_of(&p));
        let outcome = self.cache.delete_pod(namespace, &key.name, key.uid())?;
        events.extend(nomination_events(before, None));
        Ok(outcome)
    }
}

pub(super) fn nomination_of(pod: &Pod) -> Option<Nomination> {
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
pub(super) fn change_event(change: CommitChange) -> Event {
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
