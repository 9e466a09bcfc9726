//! What can go wrong: [`ConfigError`] (the file), [`ServeError`] (starting up) and [`ApiError`]
//! (one HTTP error: a status, a stable `code` and a message, sent as
//! `{"error": {"code", "message"}}`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use harnessx_runtime::{InputError, RuntimeError};
use serde::Serialize;

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file `{path}`")]
    Read {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Not TOML, an unknown key, or a value of the wrong type (the message names line and key).
    #[error("{0}")]
    Syntax(String),
    /// A value that parses but cannot be used.
    #[error("line {line}: `{key}`: {message}")]
    Invalid {
        /// The 1-based line.
        line: usize,
        /// The dotted key.
        key: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// One of the above, in a file.
    #[error("{path}: {inner}")]
    InFile {
        /// The file.
        path: String,
        /// The error.
        inner: Box<ConfigError>,
    },
}

impl ConfigError {
    pub(crate) fn in_file(self, path: &std::path::Path) -> Self {
        Self::InFile {
            path: path.display().to_string(),
            inner: Box::new(self),
        }
    }
}

/// The server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database setting is unusable.
    #[error("{0}")]
    Database(String),
    /// The store or runtime could not start.
    #[error("cannot start the runtime")]
    Runtime(#[source] RuntimeError),
    /// An agent could not be set up.
    #[error("agent `{agent}`: {message}")]
    Agent {
        /// The agent.
        agent: String,
        /// Why.
        message: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A webhook of the configuration could not be stored.
    #[error("webhook `{webhook}`: {message}")]
    Webhook {
        /// The webhook's id.
        webhook: String,
        /// Why.
        message: String,
    },
}

/// An HTTP error: a status, a stable machine-readable `code` and a message saying what to do.
///
/// ```
/// use axum::http::StatusCode;
/// use harnessx_server::ApiError;
/// let e = ApiError::new(StatusCode::NOT_FOUND, "unknown_run", "run 7 does not exist");
/// assert_eq!(e.code(), "unknown_run");
/// ```
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorBody {
    error: ErrorDetail,
}

/// The body of every error response.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorDetail {
    /// A stable code (`unknown_run`, `malformed_json`, `not_waiting`, ...).
    code: String,
    /// What went wrong and what to do.
    message: String,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub(crate) fn unprocessable(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    pub(crate) fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        let message = e.to_string();
        match &e {
            RuntimeError::Input(input) => match input {
                InputError::UnknownRun(_) => Self::not_found("unknown_run", message),
                InputError::NotWaiting { .. } => {
                    Self::new(StatusCode::CONFLICT, "not_waiting", message)
                }
                InputError::WrongKind { .. } => {
                    Self::new(StatusCode::CONFLICT, "wrong_kind", message)
                }
                InputError::Invalid { .. } => Self::unprocessable("invalid_answer", message),
                InputError::InvalidArguments { .. } => {
                    Self::unprocessable("invalid_arguments", message)
                }
                InputError::Finished { .. } => {
                    Self::new(StatusCode::CONFLICT, "already_finished", message)
                }
                InputError::ConversationBusy { .. } => {
                    Self::new(StatusCode::CONFLICT, "conversation_busy", message)
                }
                InputError::IdempotencyMismatch { .. } => {
                    Self::unprocessable("idempotency_key_reused", message)
                }
                _ => Self::new(StatusCode::CONFLICT, "invalid_input", message),
            },
            RuntimeError::UnknownAgent(name) => Self::not_found(
                "unknown_agent",
                format!("no agent is named `{name}`; GET /v2/agents lists them"),
            ),
            RuntimeError::UnknownConversation(_) => {
                Self::not_found("unknown_conversation", message)
            }
            _ => {
                tracing::error!(error = %e, "runtime error");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "runtime_error",
                    "the run store failed; the request was not applied, try again",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        // An error body is JSON and nothing else, wherever it is served (the console's 404 too).
        response.headers_mut().insert(
            axum::http::header::X_CONTENT_TYPE_OPTIONS,
            axum::http::HeaderValue::from_static("nosniff"),
        );
        // Counted as a store error by the request's span (`/metrics`).
        if matches!(self.code, "runtime_error" | "store_unavailable")
            && self.status.is_server_error()
        {
            response
                .extensions_mut()
                .insert(crate::api::trace::StoreFailed);
        }
        // A body refused for its size was not read to its end: the rest of it is still on the
        // connection, which the server closes after this answer. Saying so keeps a client from
        // sending its next request on it (and losing that request to the close).
        if self.status == StatusCode::PAYLOAD_TOO_LARGE {
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}
