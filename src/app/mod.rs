//! The application core every entry point shares: the state (cache, nominations log,
//! policy, permits, decision lanes) and every operation on it — apply a change of each
//! kind, admission, decide, commit, the held-nomination fill, drain plans. gRPC (unary
//! and `Sync`), the kube-scheduler extender, the Kubernetes watches, `simulate` and
//! `plan-drain` are adapters over it: they turn their input into model objects through
//! the one builder and call these operations, and turn the results into their answers.
//!
//! This layer knows the model, the cache, the engine and the nominations log; it knows
//! nothing of tonic, prost, HTTP or kube-rs.
//!
//! Ordering: every cache change that can move a nomination (pod upserts and deletes,
//! commits, clearing a nomination) happens together with its log publish under one
//! mutex (`App::sync`), and listing or watching from 0 reads the nominations under the
//! same mutex. So a list's revision is exactly the point after which the log has every
//! change: no gaps, no duplicates.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::cache::{ClusterCache, Nomination};
use crate::engine::{DecisionLanes, FeatureGates, KubernetesVersion, Policy};
use crate::nominations::{Event, EventKind, NominationLog, SubscribeError, Subscription};

mod apply;
mod error;
mod group;
mod preempt;

pub use apply::{AnyChange, Applied, Change, ObjectKey, PodArc};
pub use error::AppError;
pub use group::{GroupDecided, GroupSource, PreemptGroupRequest};
pub use preempt::{Decided, DrainPlanned, PreemptRequest};

/// How the core is set up (the server's flags that shape it).
#[derive(Clone, Debug)]
pub struct AppConfig {
    /// Nomination events kept for resumed watches.
    pub history_capacity: usize,
    /// Events queued per watcher before it is cut off.
    pub subscriber_buffer: usize,
    /// Decide-and-commit attempts per preemption before giving up with ABORTED.
    pub commit_attempts: u32,
    /// Decisions (preemptions, drain plans, the extender's `/preempt`) admitted at once;
    /// more are refused at once.
    pub max_concurrent_preempts: usize,
    /// Open nomination watchers; more are refused.
    pub max_watchers: usize,
    /// Open sync streams; more are refused.
    pub max_sync_streams: usize,
    /// Kubernetes watches feed the cache: they are its one writer, and decisions wait
    /// for their first lists.
    pub mirrored: bool,
    /// The placement policy every decision applies. `None`: upstream's decisions exactly.
    pub policy: Option<Arc<Policy>>,
    /// The Kubernetes version whose kube-scheduler decisions answer as, with its feature
    /// gates.
    pub feature_gates: FeatureGates,
}

impl Default for AppConfig {
    /// A core for one caller at a time (`simulate`, `plan-drain`, tests): no watches,
    /// upstream's decisions, small limits.
    fn default() -> Self {
        AppConfig {
            history_capacity: 1024,
            subscriber_buffer: 1024,
            commit_attempts: 16,
            max_concurrent_preempts: 1,
            max_watchers: 16,
            max_sync_streams: 1,
            mirrored: false,
            policy: None,
            feature_gates: FeatureGates::default(),
        }
    }
}

/// The application core: one per server (or per `simulate` run).
pub struct App {
    /// The cluster as the core holds it.
    pub cache: ClusterCache,
    /// Nomination changes, revisioned, for watchers.
    pub log: NominationLog,
    /// A random id per start, so clients notice restarts (and the empty cache).
    pub epoch: String,
    /// Orders nomination-moving cache changes with their log events (see module docs).
    sync: Mutex<()>,
    /// Taken by late commit attempts (see `preempt::OPTIMISTIC_ATTEMPTS`).
    preempt_gate: Mutex<()>,
    shutting_down: AtomicBool,
    mirrored: bool,
    /// Every watched kind has finished its first list (always so without watches).
    listed: watch::Sender<bool>,
    commit_attempts: u32,
    preempt_permits: Arc<Semaphore>,
    watch_permits: Arc<Semaphore>,
    sync_permits: Arc<Semaphore>,
    sync_limit: usize,
    preempt_limit: usize,
    watch_limit: usize,
    lanes: DecisionLanes,
    policy: Option<Arc<Policy>>,
    feature_gates: FeatureGates,
}

/// A random id per start, so clients notice restarts (and the empty cache).
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

impl App {
    /// An empty core.
    pub fn new(config: &AppConfig) -> Self {
        let preempt_limit = config.max_concurrent_preempts.max(1);
        App {
            cache: ClusterCache::new(),
            log: NominationLog::new(config.history_capacity, config.subscriber_buffer),
            epoch: new_epoch(),
            sync: Mutex::new(()),
            preempt_gate: Mutex::new(()),
            shutting_down: AtomicBool::new(false),
            mirrored: config.mirrored,
            listed: watch::Sender::new(!config.mirrored),
            commit_attempts: config.commit_attempts.max(1),
            preempt_permits: Arc::new(Semaphore::new(preempt_limit)),
            watch_permits: Arc::new(Semaphore::new(config.max_watchers)),
            sync_permits: Arc::new(Semaphore::new(config.max_sync_streams)),
            sync_limit: config.max_sync_streams,
            preempt_limit,
            watch_limit: config.max_watchers,
            lanes: DecisionLanes::per_core(),
            policy: config.policy.clone(),
            feature_gates: config.feature_gates.clone(),
        }
    }

    /// New calls are refused from now on and watchers are ended.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        self.log.close();
    }

    /// Refused once shutting down.
    pub fn check_running(&self) -> Result<(), AppError> {
        if self.shutting_down.load(Ordering::Acquire) {
            Err(AppError::shutting_down())
        } else {
            Ok(())
        }
    }

    /// Updates and `Sync`: refused while Kubernetes watches are the writer.
    pub fn check_writable(&self) -> Result<(), AppError> {
        self.check_running()?;
        if self.mirrored {
            return Err(AppError::watches_write());
        }
        Ok(())
    }

    /// A committing preemption: refused while Kubernetes watches are the writer, as
    /// updates are (the cluster did not change; its watches would later contradict the
    /// commit).
    pub fn check_committable(&self) -> Result<(), AppError> {
        self.check_running()?;
        if self.mirrored {
            return Err(AppError::watches_commit());
        }
        Ok(())
    }

    /// Kubernetes watches are the cache's one writer.
    pub fn is_mirrored(&self) -> bool {
        self.mirrored
    }

    /// Decisions: only once the cluster is listed.
    pub fn check_listed(&self) -> Result<(), AppError> {
        self.check_running()?;
        if !*self.listed.borrow() {
            return Err(AppError::not_listed_yet());
        }
        Ok(())
    }

    /// Every watched kind has finished its first list: decisions may be served.
    pub fn set_listed(&self) {
        self.listed.send_replace(true);
    }

    /// Resolves once the cluster is listed (at once without watches).
    pub async fn listed(&self) {
        let mut listed = self.listed.subscribe();
        // The sender lives as long as `self`: an error cannot happen while borrowed.
        let _ = listed.wait_for(|listed| *listed).await;
    }

    /// The placement policy decisions apply, if any.
    pub fn policy(&self) -> Option<&Arc<Policy>> {
        self.policy.as_ref()
    }

    /// The Kubernetes version decisions answer as.
    pub fn kubernetes_version(&self) -> KubernetesVersion {
        self.feature_gates.version()
    }

    /// The feature gates of that version.
    pub fn feature_gates(&self) -> &FeatureGates {
        &self.feature_gates
    }

    /// Where decisions run (one pool per decision in progress).
    pub fn lanes(&self) -> &DecisionLanes {
        &self.lanes
    }

    /// One of the `--max-concurrent-preempts` decision slots (preemptions, drain plans
    /// and the extender's `/preempt` share them), or `overloaded(limit)` when none is
    /// free: load is shed at once rather than queued, since a queued decision answers
    /// late, on stale state.
    pub fn decision_permit(
        &self,
        overloaded: fn(usize) -> AppError,
    ) -> Result<OwnedSemaphorePermit, AppError> {
        self.preempt_permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| overloaded(self.preempt_limit))
    }

    /// A `Sync` stream's slot, held until the stream ends.
    pub fn sync_permit(&self) -> Result<OwnedSemaphorePermit, AppError> {
        self.sync_permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| AppError::too_many_sync_streams(self.sync_limit))
    }

    /// Open nomination watchers (each holds a slot until it is dropped; the log itself
    /// only notices a gone subscriber on its next publish).
    pub fn open_watchers(&self) -> usize {
        self.watch_limit
            .saturating_sub(self.watch_permits.available_permits())
    }

    /// The current nominations and the log revision they are as of. Walks every node:
    /// blocking.
    pub fn list(&self) -> (Vec<Nomination>, u64) {
        let _sync = self.sync.lock();
        (self.cache.nominations(), self.log.revision())
    }

    /// A watcher's slot and its subscription: from 0, the current nominations then live
    /// changes; from N, everything after N the log still holds. Blocking from 0 (it
    /// walks every node).
    pub fn watch(
        &self,
        after_revision: u64,
    ) -> Result<(OwnedSemaphorePermit, Subscription), AppError> {
        let permit = self
            .watch_permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| AppError::too_many_watchers(self.watch_limit))?;
        let subscription = if after_revision == 0 {
            let _sync = self.sync.lock();
            let initial = self
                .cache
                .nominations()
                .into_iter()
                .map(|n| Event::new(EventKind::Nominated, n.pod, n.node, n.priority))
                .collect();
            self.log.subscribe_with_initial(initial)?.0
        } else {
            self.log
                .subscribe(after_revision)
                .map_err(|e: SubscribeError| AppError::from(e))?
        };
        Ok((permit, subscription))
    }
}
