//! The one table from error types to gRPC statuses. Handlers return [`ApiError`];
//! everything a lower layer can fail with converts into it here, and [`ApiError`] turns
//! into a [`tonic::Status`] in exactly one `match`, and for the HTTP extender port into
//! an HTTP status in the one next to it ([`ApiError::http_status`]).
//!
//! Messages are lowercase without a trailing period; invalid-argument messages start
//! with the offending field path.

use tonic::{Code, Status};

use crate::app::AppError;
use crate::cache::{CacheError, CommitConflict};
use crate::engine::NotPending;
use crate::engine::drain::DrainError;
use crate::model::build::BuildError;
use crate::model::decode::DecodeError;
use crate::nominations::{End, SubscribeError};

/// Every way a request can fail: the core's errors, and the transport's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// What the application core refused (see [`AppError`]'s kinds).
    #[error(transparent)]
    App(#[from] AppError),
    /// The per-RPC timeout (or the client's shorter `grpc-timeout`) ran out before the
    /// handler answered.
    #[error("{0}")]
    DeadlineExceeded(String),
    /// The caller's role does not allow the call (`--authz`).
    #[error("{0}")]
    PermissionDenied(String),
    /// The caller presented no credential the `--authz` policy knows.
    #[error("{0}")]
    Unauthenticated(String),
    /// A request body over the size limit (the extender's HTTP port).
    #[error("{0}")]
    TooLarge(String),
    /// A request stream the transport could not read (its framing, a message over the
    /// size limit, a message prost rejects, a failed body): tonic's code and words, the
    /// same for every method whether the failure reaches a handler or not.
    #[error("{message}")]
    Transport {
        /// tonic's status code.
        code: Code,
        /// tonic's message.
        message: String,
    },
}

impl ApiError {
    /// A malformed field (see [`AppError::invalid`]).
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        AppError::invalid(path, message).into()
    }

    /// See [`AppError::from_decode`].
    pub fn from_decode(field: &str, err: DecodeError) -> Self {
        AppError::from_decode(field, err).into()
    }

    /// See [`AppError::from_build`].
    pub fn from_build(field: &str, err: BuildError) -> Self {
        AppError::from_build(field, err).into()
    }

    /// A bug.
    pub fn internal(message: impl Into<String>) -> Self {
        AppError::Internal(message.into()).into()
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

    /// The same error about a field nested under `prefix` (see [`AppError::within`]).
    pub fn within(self, prefix: &str) -> Self {
        match self {
            ApiError::App(err) => ApiError::App(err.within(prefix)),
            other => other,
        }
    }

    /// The invalid field's path, if this is a malformed-input error.
    pub fn field(&self) -> Option<&str> {
        match self {
            ApiError::App(AppError::InvalidArgument { path, .. }) => Some(path),
            _ => None,
        }
    }

    /// The message without the field path (which invalid-argument errors carry apart).
    pub fn detail(&self) -> String {
        match self {
            ApiError::App(err) => err.detail(),
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

    /// The one table: every error's gRPC code.
    pub fn code(&self) -> Code {
        match self {
            ApiError::App(err) => match err {
                AppError::InvalidArgument { .. } => Code::InvalidArgument,
                AppError::NotFound(_) => Code::NotFound,
                AppError::AlreadyExists(_) => Code::AlreadyExists,
                AppError::OutOfRange(_) => Code::OutOfRange,
                AppError::ResourceExhausted(_) => Code::ResourceExhausted,
                AppError::Aborted(_) => Code::Aborted,
                AppError::FailedPrecondition(_) => Code::FailedPrecondition,
                AppError::Unavailable(_) => Code::Unavailable,
                AppError::Internal(_) => Code::Internal,
            },
            ApiError::TooLarge(_) => Code::ResourceExhausted,
            ApiError::DeadlineExceeded(_) => Code::DeadlineExceeded,
            ApiError::PermissionDenied(_) => Code::PermissionDenied,
            ApiError::Unauthenticated(_) => Code::Unauthenticated,
            ApiError::Transport { code, .. } => *code,
        }
    }
}

impl ApiError {
    /// The HTTP status of the extender port for this error. Trouble inside a decision is
    /// not an error here: kube-scheduler expects it in the reply's `Error` field.
    pub fn http_status(&self) -> http::StatusCode {
        use http::StatusCode as H;
        match self {
            ApiError::App(err) => match err {
                AppError::InvalidArgument { .. } => H::BAD_REQUEST,
                AppError::NotFound(_) => H::NOT_FOUND,
                AppError::AlreadyExists(_) | AppError::Aborted(_) => H::CONFLICT,
                AppError::OutOfRange(_) => H::RANGE_NOT_SATISFIABLE,
                AppError::ResourceExhausted(_) => H::TOO_MANY_REQUESTS,
                AppError::FailedPrecondition(_) => H::PRECONDITION_FAILED,
                AppError::Unavailable(_) => H::SERVICE_UNAVAILABLE,
                AppError::Internal(_) => H::INTERNAL_SERVER_ERROR,
            },
            ApiError::Transport { .. } => H::BAD_REQUEST,
            ApiError::TooLarge(_) => H::PAYLOAD_TOO_LARGE,
            ApiError::DeadlineExceeded(_) => H::GATEWAY_TIMEOUT,
            ApiError::PermissionDenied(_) => H::FORBIDDEN,
            ApiError::Unauthenticated(_) => H::UNAUTHORIZED,
        }
    }
}

impl From<ApiError> for Status {
    fn from(err: ApiError) -> Self {
        Status::new(err.code(), err.to_string())
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

/// Lower layers' errors reach the table through the core's kinds.
macro_rules! through_app {
    ($($error:ty),*) => {$(
        impl From<$error> for ApiError {
            fn from(err: $error) -> Self {
                ApiError::App(AppError::from(err))
            }
        }
    )*};
}
through_app!(
    CacheError,
    CommitConflict,
    SubscribeError,
    End,
    DrainError,
    NotPending
);

impl From<tokio::task::JoinError> for ApiError {
    fn from(err: tokio::task::JoinError) -> Self {
        tracing::error!(error = %err, "decision task failed");
        ApiError::internal("decision task failed")
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
            (
                AppError::preempt_overloaded(4).into(),
                Code::ResourceExhausted,
            ),
            (
                ApiError::permission_denied("preemptd.v1.Preemption/UpdatePod", "writer", None),
                Code::PermissionDenied,
            ),
            (
                AppError::drain_overloaded(4).into(),
                Code::ResourceExhausted,
            ),
            (
                AppError::too_many_watchers(2).into(),
                Code::ResourceExhausted,
            ),
            (
                ApiError::unauthenticated("preemptd.v1.Preemption/UpdatePod", "writer"),
                Code::Unauthenticated,
            ),
            (
                ApiError::TooLarge("body over 4 bytes".into()),
                Code::ResourceExhausted,
            ),
            (
                AppError::too_many_sync_streams(2).into(),
                Code::ResourceExhausted,
            ),
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
            (AppError::not_listed_yet().into(), H::SERVICE_UNAVAILABLE),
            (ApiError::internal("bug"), H::INTERNAL_SERVER_ERROR),
        ] {
            assert_eq!(err.http_status(), status, "{err:?}");
        }
    }
}
