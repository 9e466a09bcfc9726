//! Model-call failures: [`ModelError`], and its classification as a [`ModelErrorKind`] that retry
//! and fallback decisions are made on.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A failed model call. Display always includes the provider's own message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The key was missing or refused (HTTP 401/403).
    #[error("the {provider} provider refused the credentials (HTTP {status}): {message}")]
    Auth {
        /// The provider.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Too many requests (HTTP 429).
    #[error("the {provider} provider is rate limiting requests (HTTP 429){}: {message}", retry_after_text(.retry_after))]
    RateLimited {
        /// The provider.
        provider: String,
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The provider failed (HTTP 5xx, or 529 overloaded).
    #[error("the {provider} provider failed (HTTP {status}): {message}")]
    Server {
        /// The provider.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// How long the provider asked to wait (`Retry-After` on a 503, for example).
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The conversation (prompt, tools and the room asked for the answer) does not fit the
    /// model's context window. Another attempt at the same model fails the same way; a model with
    /// a larger window, or a shorter conversation, may succeed.
    #[error(
        "the {provider} provider rejected the request because it does not fit the model's context \
         window (HTTP {status}): {message}; shorten the conversation or use a model with a larger \
         context window"
    )]
    ContextOverflow {
        /// The provider.
        provider: String,
        /// The HTTP status (400 or 413 from the HTTP providers).
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider rejected the request (other HTTP 4xx).
    #[error("the {provider} provider rejected the request (HTTP {status}): {message}")]
    InvalidRequest {
        /// The provider.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The response could not be understood.
    #[error("the {provider} provider sent a response that could not be read: {message}")]
    Malformed {
        /// The provider.
        provider: String,
        /// What was wrong.
        message: String,
    },
    /// The call took too long: the model call's overall deadline passed, or the HTTP client gave
    /// up waiting to connect or for the next bytes.
    #[error("the {provider} provider timed out: {message}")]
    Timeout {
        /// The provider.
        provider: String,
        /// What timed out, and how to give it longer.
        message: String,
    },
    /// The request never got an answer (connection refused, reset).
    #[error("could not reach the {provider} provider: {message}")]
    Transport {
        /// The provider.
        provider: String,
        /// What happened.
        message: String,
    },
    /// Anything else (configuration, a scripted model running out of turns).
    #[error("{0}")]
    Other(String),
}

fn retry_after_text(d: &Option<Duration>) -> String {
    match d {
        Some(d) => format!(", retry after {} s", d.as_secs_f64()),
        None => String::new(),
    }
}

/// What kind of failure a [`ModelError`] is: the classification [`RetryPolicy`](super::RetryPolicy)
/// and [`FallbackModel`](super::FallbackModel) decide on.
///
/// ```
/// use harnessx::model::{ModelError, ModelErrorKind};
/// let e = ModelError::Server { provider: "openai".into(), status: 503, retry_after: None, message: "busy".into() };
/// assert_eq!(e.kind(), ModelErrorKind::Server);
/// assert_eq!(e.status(), Some(503));
/// assert!(ModelErrorKind::Server.is_retryable());
/// assert!(!ModelErrorKind::ContextOverflow.is_retryable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// Credentials missing or refused ([`ModelError::Auth`]).
    Auth,
    /// Rate limited ([`ModelError::RateLimited`]).
    RateLimited,
    /// The provider failed, HTTP 5xx or overloaded ([`ModelError::Server`]).
    Server,
    /// The request does not fit the context window ([`ModelError::ContextOverflow`]).
    ContextOverflow,
    /// Any other rejected request ([`ModelError::InvalidRequest`]).
    InvalidRequest,
    /// An unreadable response ([`ModelError::Malformed`]).
    Malformed,
    /// A deadline or client timeout passed ([`ModelError::Timeout`]).
    Timeout,
    /// The provider could not be reached ([`ModelError::Transport`]).
    Transport,
    /// Anything else ([`ModelError::Other`]).
    Other,
}

impl ModelErrorKind {
    /// Whether another attempt at the same model may succeed: rate limits, server failures,
    /// timeouts and transport failures.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::RateLimited | Self::Server | Self::Timeout | Self::Transport
        )
    }

    /// The kinds a [`FallbackModel`](super::FallbackModel) moves on after by default: the
    /// retryable ones and [`ContextOverflow`](Self::ContextOverflow).
    pub const FALLBACK_DEFAULT: &'static [ModelErrorKind] = &[
        Self::RateLimited,
        Self::Server,
        Self::Timeout,
        Self::Transport,
        Self::ContextOverflow,
    ];
}

impl std::fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auth => "auth",
            Self::RateLimited => "rate_limited",
            Self::Server => "server",
            Self::ContextOverflow => "context_overflow",
            Self::InvalidRequest => "invalid_request",
            Self::Malformed => "malformed",
            Self::Timeout => "timeout",
            Self::Transport => "transport",
            Self::Other => "other",
        })
    }
}

impl ModelError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ModelErrorKind {
        match self {
            Self::Auth { .. } => ModelErrorKind::Auth,
            Self::RateLimited { .. } => ModelErrorKind::RateLimited,
            Self::Server { .. } => ModelErrorKind::Server,
            Self::ContextOverflow { .. } => ModelErrorKind::ContextOverflow,
            Self::InvalidRequest { .. } => ModelErrorKind::InvalidRequest,
            Self::Malformed { .. } => ModelErrorKind::Malformed,
            Self::Timeout { .. } => ModelErrorKind::Timeout,
            Self::Transport { .. } => ModelErrorKind::Transport,
            Self::Other(_) => ModelErrorKind::Other,
        }
    }

    /// The HTTP status the provider answered with, when it answered with one (an error reported
    /// inside a stream has the status its error type stands for).
    ///
    /// ```
    /// use harnessx::model::ModelError;
    /// let e = ModelError::RateLimited { provider: "openai".into(), retry_after: None, message: "slow".into() };
    /// assert_eq!(e.status(), Some(429));
    /// assert_eq!(ModelError::Other("no turns left".into()).status(), None);
    /// ```
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Auth { status, .. }
            | Self::Server { status, .. }
            | Self::ContextOverflow { status, .. }
            | Self::InvalidRequest { status, .. } => Some(*status),
            Self::RateLimited { .. } => Some(429),
            Self::Malformed { .. }
            | Self::Timeout { .. }
            | Self::Transport { .. }
            | Self::Other(_) => None,
        }
    }

    /// The provider that failed, when the error names one.
    pub fn provider(&self) -> Option<&str> {
        match self {
            Self::Auth { provider, .. }
            | Self::RateLimited { provider, .. }
            | Self::Server { provider, .. }
            | Self::ContextOverflow { provider, .. }
            | Self::InvalidRequest { provider, .. }
            | Self::Malformed { provider, .. }
            | Self::Timeout { provider, .. }
            | Self::Transport { provider, .. } => Some(provider),
            Self::Other(_) => None,
        }
    }

    /// Whether another attempt may succeed (429 and 5xx, timeouts, transport failures); see
    /// [`ModelErrorKind::is_retryable`].
    pub fn is_retryable(&self) -> bool {
        self.kind().is_retryable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_kind_status_and_message() {
        let p = || "anthropic".to_owned();
        let cases = [
            (
                ModelError::ContextOverflow {
                    provider: p(),
                    status: 400,
                    message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
                },
                ModelErrorKind::ContextOverflow,
                Some(400),
                "the anthropic provider rejected the request because it does not fit the model's \
                 context window (HTTP 400): prompt is too long: 210000 tokens > 200000 maximum; \
                 shorten the conversation or use a model with a larger context window",
            ),
            (
                ModelError::Timeout {
                    provider: p(),
                    message: "no complete answer within 5 s".into(),
                },
                ModelErrorKind::Timeout,
                None,
                "the anthropic provider timed out: no complete answer within 5 s",
            ),
            (
                ModelError::RateLimited {
                    provider: p(),
                    retry_after: Some(Duration::from_millis(1500)),
                    message: "slow down".into(),
                },
                ModelErrorKind::RateLimited,
                Some(429),
                "the anthropic provider is rate limiting requests (HTTP 429), retry after 1.5 s: \
                 slow down",
            ),
        ];
        for (error, kind, status, text) in cases {
            assert_eq!(error.kind(), kind);
            assert_eq!(error.status(), status);
            assert_eq!(error.provider(), Some("anthropic"));
            assert_eq!(error.to_string(), text);
        }
        assert!(
            ModelError::Timeout {
                provider: p(),
                message: String::new()
            }
            .is_retryable()
        );
        assert_eq!(ModelError::Other("x".into()).provider(), None);
        assert_eq!(
            ModelErrorKind::ContextOverflow.to_string(),
            "context_overflow"
        );
        assert_eq!(
            serde_json::to_value(ModelErrorKind::RateLimited).unwrap(),
            "rate_limited"
        );
    }
}
