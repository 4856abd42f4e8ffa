//! How an operation of the application core fails, in words fit for any transport. The
//! server's one table (`server::errors`) maps each kind to a gRPC code and an HTTP status.
//!
//! Messages are lowercase without a trailing period; invalid-argument messages carry the
//! offending field path apart from the message.

use crate::cache::{CacheError, CommitConflict};
use crate::engine::NotPending;
use crate::engine::drain::DrainError;
use crate::model::build::BuildError;
use crate::model::decode::DecodeError;
use crate::nominations::{End, SubscribeError};

/// Every way an operation of the core can fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    /// Malformed input: `path` names the field (e.g. `upsert.status.allocatable[cpu]`).
    #[error("{path}: {message}")]
    InvalidArgument {
        /// The offending field.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The object to delete or to decide for is not held.
    #[error("{0}")]
    NotFound(String),
    /// Another object holds the name or the uid.
    #[error("{0}")]
    AlreadyExists(String),
    /// A watch asked for a revision the log no longer holds (or never had).
    #[error("{0}")]
    OutOfRange(String),
    /// A watcher fell behind and was cut off, or a limit (concurrent decisions, watch
    /// subscribers, sync streams) is reached: refused at once instead of queued.
    #[error("{0}")]
    ResourceExhausted(String),
    /// Commits kept conflicting with concurrent changes.
    #[error("{0}")]
    Aborted(String),
    /// The operation cannot be done in the server's mode or on this object (updates while
    /// Kubernetes watches feed the cache, a preemption for a bound pod).
    #[error("{0}")]
    FailedPrecondition(String),
    /// Shutting down, or the cluster is not listed yet.
    #[error("{0}")]
    Unavailable(String),
    /// A bug: a decision task panicked, or an invariant broke.
    #[error("{0}")]
    Internal(String),
}

impl AppError {
    /// A malformed field.
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        AppError::InvalidArgument {
            path: path.into(),
            message: message.into(),
        }
    }

    /// A decode failure inside the JSON/YAML text of field `field`: the path is the
    /// request field, then the path inside the document.
    pub fn from_decode(field: &str, err: DecodeError) -> Self {
        let path = if err.path.is_empty() {
            field.to_string()
        } else {
            format!("{field}: {}", err.path)
        };
        AppError::InvalidArgument {
            path,
            message: err.message,
        }
    }

    /// The builder's refusal of the typed object in request field `field` (`upsert`,
    /// `pod`): the path is the request field, then the field inside the object.
    pub fn from_build(field: &str, err: BuildError) -> Self {
        let path = if err.path.is_empty() {
            field.to_string()
        } else {
            format!("{field}.{}", err.path)
        };
        AppError::InvalidArgument {
            path,
            message: err.message,
        }
    }

    /// The server is shutting down.
    pub fn shutting_down() -> Self {
        AppError::Unavailable("server is shutting down".to_string())
    }

    /// Kubernetes mode, before every watch has finished its initial list.
    pub fn not_listed_yet() -> Self {
        AppError::Unavailable(
            "the cluster is still being listed (kubernetes mode): retry when health is SERVING"
                .to_string(),
        )
    }

    /// An update in Kubernetes mode, where the watches are the one writer.
    pub fn watches_write() -> Self {
        AppError::FailedPrecondition(
            "preemptd mirrors a kubernetes cluster (--kubeconfig or --in-cluster): its watches are the one writer, so updates and sync are refused".to_string(),
        )
    }

    /// A committing preemption in Kubernetes mode: the cluster, not preemptd, must change
    /// (evictions and the nomination through the API server), and the watches bring it.
    pub fn watches_commit() -> Self {
        AppError::FailedPrecondition(
            "kubernetes mode: preempt with dry_run: the cluster's watches are the one writer; evict the victims and set the nomination through the API server".to_string(),
        )
    }

    /// Load shedding: more decisions in flight than `--max-concurrent-preempts`.
    pub fn preempt_overloaded(limit: usize) -> Self {
        AppError::ResourceExhausted(format!(
            "too many concurrent preempt calls (limit {limit}); retry with backoff"
        ))
    }

    /// A drain plan while `--max-concurrent-preempts` decisions (plans included) run.
    pub fn drain_overloaded(limit: usize) -> Self {
        AppError::ResourceExhausted(format!(
            "too many concurrent preempt calls and drain plans (limit {limit}); retry with backoff"
        ))
    }

    /// More nomination watchers than `--max-watchers`.
    pub fn too_many_watchers(limit: usize) -> Self {
        AppError::ResourceExhausted(format!(
            "too many nomination watchers (limit {limit}); retry later"
        ))
    }

    /// More sync streams than `--max-sync-streams`.
    pub fn too_many_sync_streams(limit: usize) -> Self {
        AppError::ResourceExhausted(format!(
            "too many open sync streams (limit {limit}); retry later"
        ))
    }

    /// The same error about a field nested under `prefix` (a `Sync` item: `pod`):
    /// invalid-argument paths become `pod.upsert.name`; other errors are unchanged.
    pub fn within(self, prefix: &str) -> Self {
        match self {
            AppError::InvalidArgument { path, message } => AppError::InvalidArgument {
                path: format!("{prefix}.{path}"),
                message,
            },
            other => other,
        }
    }

    /// The message without the field path (which invalid-argument errors carry apart).
    pub fn detail(&self) -> String {
        match self {
            AppError::InvalidArgument { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }
}

impl From<CacheError> for AppError {
    fn from(err: CacheError) -> Self {
        match err {
            CacheError::NotFound { .. } => AppError::NotFound(err.to_string()),
            CacheError::UidConflict { .. } | CacheError::NameConflict { .. } => {
                AppError::AlreadyExists(err.to_string())
            }
        }
    }
}

impl From<CommitConflict> for AppError {
    fn from(err: CommitConflict) -> Self {
        AppError::Aborted(format!("{err}; retry the request"))
    }
}

impl From<SubscribeError> for AppError {
    fn from(err: SubscribeError) -> Self {
        match err {
            SubscribeError::Expired { .. } | SubscribeError::Ahead { .. } => {
                AppError::OutOfRange(err.to_string())
            }
            SubscribeError::Closed => AppError::shutting_down(),
        }
    }
}

impl From<End> for AppError {
    fn from(end: End) -> Self {
        match end {
            End::Lagged { .. } => AppError::ResourceExhausted(end.to_string()),
            End::Closed => AppError::shutting_down(),
        }
    }
}

/// A preemptor that is bound, terminating or finished: never one upstream preempts for.
impl From<NotPending> for AppError {
    fn from(err: NotPending) -> Self {
        AppError::FailedPrecondition(err.to_string())
    }
}

impl From<DrainError> for AppError {
    fn from(err: DrainError) -> Self {
        match &err {
            DrainError::NoNodes => AppError::invalid("node_names", err.to_string()),
            DrainError::UnknownNode { index, .. } => {
                AppError::invalid(format!("node_names[{index}]"), err.to_string())
            }
            DrainError::WorkingState { .. } => AppError::Internal(err.to_string()),
        }
    }
}
