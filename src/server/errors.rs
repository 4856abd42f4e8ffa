//! The one table from error types to gRPC statuses. Handlers return [`ApiError`];
//! everything a lower layer can fail with converts into it here, and [`ApiError`] turns
//! into a [`tonic::Status`] in exactly one `match`, and for the HTTP extender port into
//! an HTTP status in the one next to it ([`ApiError::http_status`]).
//!
//! Messages are lowercase without a trailing period; invalid-argument messages start
//! with the offending field path.

use tonic::{Code, Status};

use crate::cache::{CacheError, CommitConflict};
use crate::engine::drain::DrainError;
use crate::model::build::BuildError;
use crate::model::decode::DecodeError;
use crate::nominations::{End, SubscribeError};

/// Every way a request can fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// A malformed request: `path` names the field (e.g.
    /// `upsert.status.allocatable[cpu]`).
    #[error("{path}: {message}")]
    InvalidArgument { path: String, message: String },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    AlreadyExists(String),
    /// A watch asked for a revision the log no longer holds (or never had).
    #[error("{0}")]
    OutOfRange(String),
    /// A watcher fell behind and was cut off, or a limit (concurrent `Preempt` calls,
    /// watch subscribers) is reached: the call is refused at once instead of queueing.
    #[error("{0}")]
    ResourceExhausted(String),
    /// The per-RPC timeout (or the client's shorter `grpc-timeout`) ran out before the
    /// handler answered.
    #[error("{0}")]
    DeadlineExceeded(String),
    /// Commits kept conflicting with concurrent changes.
    #[error("{0}")]
    Aborted(String),
    /// The call cannot be made in the server's mode (updates while Kubernetes watches
    /// feed the cache).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The caller's role does not allow the call (`--authz`).
    #[error("{0}")]
    PermissionDenied(String),
    /// The caller presented no credential the `--authz` policy knows.
    #[error("{0}")]
    Unauthenticated(String),
    /// The server is shutting down, or has not finished listing its cluster.
    #[error("{0}")]
    Unavailable(String),
    /// A request body over the size limit (the extender's HTTP port).
    #[error("{0}")]
    TooLarge(String),
    /// A bug: a decision task panicked.
    #[error("{0}")]
    Internal(String),
    /// A request that is not valid protobuf, read by the service itself (INTERNAL, as
    /// tonic reports the requests it cannot decode).
    #[error("{0}")]
    Undecodable(String),
    /// A request stream the transport could not read (its framing, a message over the
    /// size limit, a message prost rejects, a failed body): tonic's code and words, the
    /// same for every method whether the failure reaches a handler or not.
    #[error("{message}")]
    Transport { code: Code, message: String },
    /// A request compressed with an encoding this server does not take (it takes only
    /// `identity`): UNIMPLEMENTED in tonic's words, naming `identity` in
    /// `grpc-accept-encoding` as tonic does.
    #[error("Content is compressed with `{0}` which isn't supported")]
    UnsupportedEncoding(String),
}

impl ApiError {
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::InvalidArgument {
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
        ApiError::InvalidArgument {
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
        ApiError::InvalidArgument {
            path,
            message: err.message,
        }
    }

    /// A unary call whose body holds no message, in tonic's words.
    pub fn missing_message() -> Self {
        ApiError::Transport {
            code: Code::Internal,
            message: "Missing request message.".to_string(),
        }
    }

    /// An answer over the message size limit, in tonic's words.
    pub fn answer_too_large(len: usize, limit: usize) -> Self {
        ApiError::Transport {
            code: Code::OutOfRange,
            message: format!(
                "Error, encoded message length too large: found {len} bytes, the limit is: {limit} bytes"
            ),
        }
    }

    pub fn shutting_down() -> Self {
        ApiError::Unavailable("server is shutting down".to_string())
    }

    /// Kubernetes mode, before every watch has finished its initial list.
    pub fn not_listed_yet() -> Self {
        ApiError::Unavailable(
            "the cluster is still being listed (kubernetes mode): retry when health is SERVING"
                .to_string(),
        )
    }

    /// An update call in Kubernetes mode, where the watches are the one writer.
    pub fn watches_write() -> Self {
        ApiError::FailedPrecondition(
            "preemptd mirrors a kubernetes cluster (--kubeconfig or --in-cluster): its watches are the one writer, so updates and sync are refused".to_string(),
        )
    }

    /// Load shedding: more `Preempt` calls in flight than `--max-concurrent-preempts`.
    pub fn preempt_overloaded(limit: usize) -> Self {
        ApiError::ResourceExhausted(format!(
            "too many concurrent preempt calls (limit {limit}); retry with backoff"
        ))
    }

    /// A `PlanDrain` while `--max-concurrent-preempts` decisions (plans included) run.
    pub fn drain_overloaded(limit: usize) -> Self {
        ApiError::ResourceExhausted(format!(
            "too many concurrent preempt calls and drain plans (limit {limit}); retry with backoff"
        ))
    }

    /// More `WatchNominations` streams than `--max-watchers`.
    pub fn too_many_watchers(limit: usize) -> Self {
        ApiError::ResourceExhausted(format!(
            "too many nomination watchers (limit {limit}); retry later"
        ))
    }

    pub fn too_many_sync_streams(limit: usize) -> Self {
        ApiError::ResourceExhausted(format!(
            "too many open sync streams (limit {limit}); retry later"
        ))
    }

    /// `method` needs role `needed`; the caller has `role`, or matched no identity.
    pub fn permission_denied(method: &str, needed: &str, role: Option<&str>) -> Self {
        ApiError::PermissionDenied(match role {
            Some(role) => {
                format!("{method} needs role {needed}; the caller's role is {role}")
            }
            None => {
                format!("{method} needs role {needed}; the caller's identity is not authorized")
            }
        })
    }

    /// `method` needs role `needed`; the caller presented neither a client certificate
    /// nor a token the policy lists.
    pub fn unauthenticated(method: &str, needed: &str) -> Self {
        ApiError::Unauthenticated(format!(
            "{method} needs role {needed}; the caller presented no known credential (a client certificate or a bearer token)"
        ))
    }

    /// The handler did not answer within `timeout`.
    pub fn deadline_exceeded(timeout: std::time::Duration) -> Self {
        ApiError::DeadlineExceeded(format!("no answer within the rpc timeout of {timeout:?}"))
    }

    /// The same error about a field nested under `prefix` (a `Sync` item: `pod`):
    /// invalid-argument paths become `pod.upsert.name`; other errors are unchanged.
    pub fn within(self, prefix: &str) -> Self {
        match self {
            ApiError::InvalidArgument { path, message } => ApiError::InvalidArgument {
                path: format!("{prefix}.{path}"),
                message,
            },
            other => other,
        }
    }

    /// The message without the field path (which invalid-argument errors carry apart).
    pub fn detail(&self) -> String {
        match self {
            ApiError::InvalidArgument { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// The gRPC code's canonical name, as `Sync` rejections report it.
    pub fn code_name(&self) -> &'static str {
        match self.code() {
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::Aborted => "ABORTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::Unauthenticated => "UNAUTHENTICATED",
            Code::Unavailable => "UNAVAILABLE",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::Unimplemented => "UNIMPLEMENTED",
            _ => "INTERNAL",
        }
    }

    pub fn code(&self) -> Code {
        match self {
            ApiError::InvalidArgument { .. } => Code::InvalidArgument,
            ApiError::NotFound(_) => Code::NotFound,
            ApiError::AlreadyExists(_) => Code::AlreadyExists,
            ApiError::OutOfRange(_) => Code::OutOfRange,
            ApiError::ResourceExhausted(_) | ApiError::TooLarge(_) => Code::ResourceExhausted,
            ApiError::DeadlineExceeded(_) => Code::DeadlineExceeded,
            ApiError::Aborted(_) => Code::Aborted,
            ApiError::FailedPrecondition(_) => Code::FailedPrecondition,
            ApiError::PermissionDenied(_) => Code::PermissionDenied,
            ApiError::Unauthenticated(_) => Code::Unauthenticated,
            ApiError::Unavailable(_) => Code::Unavailable,
            ApiError::Internal(_) | ApiError::Undecodable(_) => Code::Internal,
            ApiError::Transport { code, .. } => *code,
            ApiError::UnsupportedEncoding(_) => Code::Unimplemented,
        }
    }
}

impl ApiError {
    /// The HTTP status of the extender port for this error. Trouble inside a decision is
    /// not an error here: kube-scheduler expects it in the reply's `Error` field.
    pub fn http_status(&self) -> http::StatusCode {
        use http::StatusCode as H;
        match self {
            ApiError::InvalidArgument { .. } | ApiError::Undecodable(_) => H::BAD_REQUEST,
            ApiError::NotFound(_) => H::NOT_FOUND,
            ApiError::AlreadyExists(_) | ApiError::Aborted(_) => H::CONFLICT,
            ApiError::OutOfRange(_) => H::RANGE_NOT_SATISFIABLE,
            ApiError::ResourceExhausted(_) => H::TOO_MANY_REQUESTS,
            ApiError::TooLarge(_) => H::PAYLOAD_TOO_LARGE,
            ApiError::DeadlineExceeded(_) => H::GATEWAY_TIMEOUT,
            ApiError::FailedPrecondition(_) => H::PRECONDITION_FAILED,
            ApiError::PermissionDenied(_) => H::FORBIDDEN,
            ApiError::Unauthenticated(_) => H::UNAUTHORIZED,
            ApiError::Unavailable(_) => H::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => H::INTERNAL_SERVER_ERROR,
            ApiError::Transport { .. } => H::BAD_REQUEST,
            ApiError::UnsupportedEncoding(_) => H::UNSUPPORTED_MEDIA_TYPE,
        }
    }
}

impl From<ApiError> for Status {
    fn from(err: ApiError) -> Self {
        let mut status = Status::new(err.code(), err.to_string());
        if let ApiError::UnsupportedEncoding(_) = err {
            status.metadata_mut().insert(
                "grpc-accept-encoding",
                tonic::metadata::MetadataValue::from_static("identity"),
            );
        }
        status
    }
}

impl From<Status> for ApiError {
    /// Only for the statuses tonic's transport gives a handler reading a request stream.
    fn from(status: Status) -> Self {
        ApiError::Transport {
            code: status.code(),
            message: status.message().to_string(),
        }
    }
}

impl From<CacheError> for ApiError {
    fn from(err: CacheError) -> Self {
        match err {
            CacheError::NotFound { .. } => ApiError::NotFound(err.to_string()),
            CacheError::UidConflict { .. } | CacheError::NameConflict { .. } => {
                ApiError::AlreadyExists(err.to_string())
            }
        }
    }
}

impl From<CommitConflict> for ApiError {
    fn from(err: CommitConflict) -> Self {
        ApiError::Aborted(format!("{err}; retry the request"))
    }
}

impl From<SubscribeError> for ApiError {
    fn from(err: SubscribeError) -> Self {
        match err {
            SubscribeError::Expired { .. } | SubscribeError::Ahead { .. } => {
                ApiError::OutOfRange(err.to_string())
            }
            SubscribeError::Closed => ApiError::shutting_down(),
        }
    }
}

impl From<End> for ApiError {
    fn from(end: End) -> Self {
        match end {
            End::Lagged { .. } => ApiError::ResourceExhausted(end.to_string()),
            End::Closed => ApiError::shutting_down(),
        }
    }
}

impl From<DrainError> for ApiError {
    fn from(err: DrainError) -> Self {
        match &err {
            DrainError::NoNodes => ApiError::invalid("node_names", err.to_string()),
            DrainError::UnknownNode { index, .. } => {
                ApiError::invalid(format!("node_names[{index}]"), err.to_string())
            }
            DrainError::WorkingState { .. } => ApiError::Internal(err.to_string()),
        }
    }
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(err: tokio::task::JoinError) -> Self {
        tracing::error!(error = %err, "decision task failed");
        ApiError::Internal("decision task failed".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_maps_to_its_code_with_a_lowercase_message() {
        let cases = [
            (
                ApiError::invalid("upsert.name", "must not be empty"),
                Code::InvalidArgument,
            ),
            (
                CacheError::NotFound {
                    kind: "node",
                    name: "n1".into(),
                }
                .into(),
                Code::NotFound,
            ),
            (
                SubscribeError::Expired {
                    after: 1,
                    oldest: 5,
                }
                .into(),
                Code::OutOfRange,
            ),
            (
                End::Lagged {
                    buffer: 4,
                    last_delivered: 9,
                }
                .into(),
                Code::ResourceExhausted,
            ),
            (End::Closed.into(), Code::Unavailable),
            (ApiError::preempt_overloaded(4), Code::ResourceExhausted),
            (
                ApiError::permission_denied("preemptd.v1.Preemption/UpdatePod", "writer", None),
                Code::PermissionDenied,
            ),
            (
                ApiError::unauthenticated("preemptd.v1.Preemption/UpdatePod", "writer"),
                Code::Unauthenticated,
            ),
            (ApiError::drain_overloaded(4), Code::ResourceExhausted),
            (ApiError::too_many_watchers(2), Code::ResourceExhausted),
            (
                ApiError::TooLarge("body over 4 bytes".into()),
                Code::ResourceExhausted,
            ),
            (ApiError::too_many_sync_streams(2), Code::ResourceExhausted),
            (
                ApiError::deadline_exceeded(std::time::Duration::from_millis(10)),
                Code::DeadlineExceeded,
            ),
            (DrainError::NoNodes.into(), Code::InvalidArgument),
            (
                DrainError::WorkingState {
                    pod: "default/a".into(),
                    message: "uid conflict".into(),
                }
                .into(),
                Code::Internal,
            ),
        ];
        for (err, code) in cases {
            let http = err.http_status();
            assert!(http.is_client_error() || http.is_server_error(), "{err:?}");
            let status = Status::from(err);
            assert_eq!(status.code(), code);
            let message = status.message();
            assert!(!message.ends_with('.'), "{message}");
            assert!(
                message.chars().next().is_some_and(|c| !c.is_uppercase()),
                "{message}"
            );
        }
        let status = Status::from(ApiError::from_decode(
            "upsert_json",
            DecodeError {
                path: "status.allocatable[cpu]".into(),
                message: "invalid quantity \"x\"".into(),
            },
        ));
        assert_eq!(
            status.message(),
            "upsert_json: status.allocatable[cpu]: invalid quantity \"x\""
        );
        let status = Status::from(ApiError::from(DrainError::UnknownNode {
            index: 2,
            name: "ghost".into(),
        }));
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(status.message(), "node_names[2]: unknown node \"ghost\"");
        // A typed object's field comes after the request field, in the same words.
        let status = Status::from(ApiError::from_build(
            "upsert",
            BuildError {
                path: "status.allocatable[cpu]".into(),
                message: "invalid quantity \"x\"".into(),
            },
        ));
        assert_eq!(
            status.message(),
            "upsert.status.allocatable[cpu]: invalid quantity \"x\""
        );
    }

    #[test]
    fn http_statuses_of_the_extender_port() {
        use http::StatusCode as H;
        for (err, status) in [
            (ApiError::invalid("body", "invalid JSON"), H::BAD_REQUEST),
            (
                ApiError::permission_denied("extender/filter", "reader", None),
                H::FORBIDDEN,
            ),
            (
                ApiError::unauthenticated("extender/filter", "reader"),
                H::UNAUTHORIZED,
            ),
            (ApiError::TooLarge("body".into()), H::PAYLOAD_TOO_LARGE),
            (ApiError::not_listed_yet(), H::SERVICE_UNAVAILABLE),
            (ApiError::Internal("bug".into()), H::INTERNAL_SERVER_ERROR),
            (
                ApiError::UnsupportedEncoding("gzip".into()),
                H::UNSUPPORTED_MEDIA_TYPE,
            ),
        ] {
            assert_eq!(err.http_status(), status, "{err:?}");
        }
    }
}
