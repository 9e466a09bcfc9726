//! Talking to a model: the provider-neutral request/response types and the [`Model`] trait.
//!
//! Providers live in submodules; the agent loop only ever sees these types.

use std::time::Duration;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::output::ToolCall;
use crate::tool::{BoxFuture, ToolParams};

mod retry;
pub use retry::{ModelRetry, RetryingModel};

#[cfg(feature = "providers")]
mod anthropic;
#[cfg(feature = "providers")]
mod env;
#[cfg(feature = "providers")]
mod http;
#[cfg(feature = "providers")]
mod openai;
#[cfg(feature = "providers")]
mod sse;
#[cfg(feature = "providers")]
mod turn;
#[cfg(feature = "providers")]
pub use anthropic::{ANTHROPIC_VERSION, AnthropicModel};
#[cfg(feature = "providers")]
pub use env::{ModelSpec, Provider, from_env, from_env_with, parse_model_spec};
#[cfg(feature = "providers")]
pub use openai::OpenAiModel;
mod scripted;
pub use scripted::{FunctionModel, ScriptStep, TestModel, TurnInfo};

/// One message of a conversation, in provider-neutral form.
///
/// `attachment` carries context the runtime adds to a message when it is first sent (the
/// current todo list). Once a message has been sent its attachment never changes, so the prefix of
/// every later request stays byte-identical and provider prompt caches keep working.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user said.
    User {
        /// The text.
        content: String,
        /// Context attached when first sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attachment: Option<String>,
    },
    /// What the model answered: text and/or tool calls.
    Assistant {
        /// The text (may be empty when the model only called tools).
        content: String,
        /// The calls it made, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The answer to one tool call.
    Tool {
        /// The call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        content: String,
        /// Whether the call failed.
        #[serde(default)]
        is_error: bool,
        /// Context attached when first sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attachment: Option<String>,
    },
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
            attachment: None,
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }
}

/// Sampling settings sent with a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSettings {
    /// Upper bound on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
}

/// Everything a model needs for one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolParams>,
    /// Sampling settings.
    #[serde(default)]
    pub settings: ModelSettings,
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache, when reported.
    #[serde(default)]
    pub cache_read_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.cache_read_tokens += rhs.cache_read_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    #[default]
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit the token limit.
    MaxTokens,
    /// Something else the provider reported.
    Other,
}

/// One complete model turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The text.
    pub content: String,
    /// The tool calls, in order. Their `arguments` are the raw text the provider sent, which may
    /// be malformed; the engine answers that with an error result.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Token usage.
    #[serde(default)]
    pub usage: Usage,
    /// Why it stopped.
    #[serde(default)]
    pub stop_reason: StopReason,
}

/// An incremental piece of a streamed turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelStreamEvent {
    /// More answer text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A tool call began (its arguments follow in fragments).
    ToolCallStarted {
        /// Position of the call in the turn.
        index: usize,
        /// The provider's call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// A fragment of a tool call's argument text.
    ToolCallDelta {
        /// Position of the call in the turn.
        index: usize,
        /// The fragment.
        fragment: String,
    },
    /// The turn is complete; carries the assembled response.
    Completed {
        /// The whole turn.
        response: ModelResponse,
    },
}

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
    /// The request never got an answer (connection refused, reset, timed out).
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

impl ModelError {
    /// Whether another attempt may succeed (429 and 5xx, transport failures).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. } | Self::Server { .. } | Self::Transport { .. }
        )
    }
}

/// A language model the agent loop can drive.
///
/// `stream` has a default that runs `complete` and reports the whole turn at once; HTTP providers
/// override it with real server-sent-event streaming.
pub trait Model: Send + Sync + 'static {
    /// A short identifier, such as `openai:gpt-4o-mini`.
    fn name(&self) -> &str;

    /// Runs one turn.
    fn complete(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelResponse, ModelError>>;

    /// Runs one turn, reporting text and tool-call fragments as they arrive. The last item of a
    /// successful stream is [`ModelStreamEvent::Completed`].
    fn stream(&self, request: ModelRequest) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
        Box::pin(futures::stream::once(async move {
            self.complete(request)
                .await
                .map(|response| ModelStreamEvent::Completed { response })
        }))
    }
}
