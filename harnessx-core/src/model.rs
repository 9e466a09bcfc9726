//! Talking to a model: the provider-neutral request/response types and the [`Model`] trait.
//!
//! The HTTP providers live in `harnessx::model`; the agent loop only ever sees these types. Around any model:
//! [`RetryPolicy`] (retry with backoff that honours `Retry-After`, also applied by the HTTP
//! providers themselves, under each call's overall deadline), [`RetryingModel`] (that policy
//! for a model of your own) and [`FallbackModel`] (the next model when one fails with a
//! [`ModelErrorKind`] it names).

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::output::ToolCall;
use crate::tool::{BoxFuture, ToolParams};

use std::sync::Arc;

mod content;
mod error;
mod fallback;
mod messages;
mod retry;
pub use content::{Image, Thinking};
pub use error::{ModelError, ModelErrorKind};
pub use fallback::FallbackModel;
pub use messages::Messages;
pub use retry::{ModelRetry, RetryPolicy, RetryingModel, Sleeper};

mod scripted;
#[doc(hidden)]
pub use retry::{complete_with_retry, stream_with_retry};
#[doc(hidden)]
pub use scripted::response_events;
pub use scripted::{FunctionModel, ScriptStep, TestModel, TurnInfo, fill_result};

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
        /// Images sent after the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// What the model answered: text and/or tool calls.
    Assistant {
        /// The text (may be empty when the model only called tools).
        content: String,
        /// The calls it made, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The reasoning blocks it produced first, kept to be sent back unchanged.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thinking: Vec<Thinking>,
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
        Self::user_with_images(content, Vec::new())
    }

    /// A user message with images after its text.
    pub fn user_with_images(content: impl Into<String>, images: Vec<Image>) -> Self {
        Self::User {
            content: content.into(),
            attachment: None,
            images,
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
            thinking: Vec::new(),
        }
    }
}

impl From<&ModelResponse> for Message {
    /// The assistant message that records a turn: its text, tool calls and thinking blocks.
    ///
    /// ```
    /// use harnessx::{Message, ModelResponse};
    /// let turn = ModelResponse::text("Hi");
    /// assert_eq!(Message::from(&turn), Message::assistant("Hi"));
    /// ```
    fn from(response: &ModelResponse) -> Self {
        Self::Assistant {
            content: response.content.clone(),
            tool_calls: response.tool_calls.clone(),
            thinking: response.thinking.clone(),
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
    /// Whether tools are declared in OpenAI strict mode when every schema allows it. `None`
    /// leaves it to the model (`harnessx::model::OpenAiModel::with_strict_tools`, on by
    /// default); set it in [`AgentConfig::settings`](crate::AgentConfig::settings) to
    /// choose per agent. Providers without a strict mode ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_tools: Option<bool>,
}

/// Everything a model needs for one turn. Built with [`new`](Self::new) and the `with_*`
/// methods (it will gain fields).
///
/// ```
/// use harnessx::{Message, ModelRequest, ModelSettings};
/// let request = ModelRequest::new(vec![Message::user("Say hi")])
///     .with_system("You are terse.")
///     .with_settings(ModelSettings { max_tokens: Some(64), ..ModelSettings::default() });
/// assert_eq!(request.messages.len(), 1);
/// assert!(request.tools.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far: a shared sequence, read as a slice (`&request.messages[..]`,
    /// `request.messages.iter()`), built from a `Vec<Message>` with `.into()`. The agent loop
    /// hands every turn the same shared messages, so a turn costs the same however long the
    /// run. See [`Messages`].
    pub messages: Messages,
    /// The tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolParams>,
    /// Sampling settings.
    #[serde(default)]
    pub settings: ModelSettings,
    /// The shape the final answer must take, for a provider with structured output (`None`:
    /// free text). The agent sets it for [`run_typed`](crate::agent::RunRequest::run_typed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputSchema>,
}

impl ModelRequest {
    /// A request for the next turn of this conversation: no system prompt, no tools, the
    /// default settings, a free-text answer.
    pub fn new(messages: impl Into<Messages>) -> Self {
        Self {
            messages: messages.into(),
            ..Self::default()
        }
    }

    /// The same request with this system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The same request with these messages.
    pub fn with_messages(mut self, messages: impl Into<Messages>) -> Self {
        self.messages = messages.into();
        self
    }

    /// The same request offering these tools.
    ///
    /// ```
    /// use harnessx::{Message, ModelRequest, ToolParams};
    /// use serde_json::json;
    /// let add = ToolParams { name: "add".into(), description: "Add.".into(), input_schema: json!({"type": "object"}) };
    /// let request = ModelRequest::new(vec![Message::user("1 + 2?")]).with_tools([add]);
    /// assert_eq!(request.tools[0].name, "add");
    /// ```
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = ToolParams>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }

    /// The same request with these sampling settings.
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The same request, asking for a final answer that matches this schema.
    pub fn with_output(mut self, output: OutputSchema) -> Self {
        self.output = Some(output);
        self
    }
}

/// A JSON Schema the model's final answer must match (structured output): the OpenAI provider
/// sends it as `response_format`, the Anthropic provider as `output_config`. The root is always
/// an object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// A short name for the schema (`^[a-zA-Z0-9_-]{1,64}$`), as providers require.
    pub name: String,
    /// The schema.
    pub schema: serde_json::Value,
}

/// Token counts reported by the provider. Built with [`new`](Self::new) and the `with_*`
/// methods (it will gain fields).
///
/// ```
/// use harnessx::Usage;
/// let usage = Usage::new(100, 20).with_cache_read_tokens(80);
/// assert_eq!((usage.input_tokens, usage.output_tokens, usage.cache_read_tokens), (100, 20, 80));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache, when reported.
    #[serde(default)]
    pub cache_read_tokens: u64,
}

impl Usage {
    /// Prompt and generated tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            cache_read_tokens: 0,
        }
    }

    /// With this many prompt tokens.
    pub fn with_input_tokens(mut self, tokens: u64) -> Self {
        self.input_tokens = tokens;
        self
    }

    /// With this many generated tokens.
    pub fn with_output_tokens(mut self, tokens: u64) -> Self {
        self.output_tokens = tokens;
        self
    }

    /// With this many prompt tokens served from the provider's cache.
    pub fn with_cache_read_tokens(mut self, tokens: u64) -> Self {
        self.cache_read_tokens = tokens;
        self
    }
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

/// One complete model turn. Built with [`text`](Self::text) or
/// [`tool_calls`](Self::tool_calls) and the `with_*` methods (it will gain fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// The reasoning blocks that came before the answer (Anthropic extended thinking), to be
    /// sent back unchanged in the assistant message of the next request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<Thinking>,
    /// The model that answered, as the provider names it in its response (it can be more exact
    /// than the one asked for, such as `gpt-4o-mini-2024-07-18` for `gpt-4o-mini`). Exported as
    /// `gen_ai.response.model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's identifier of this response (`chatcmpl-…`, `msg_…`). Exported as
    /// `gen_ai.response.id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl ModelResponse {
    /// The same turn with this text.
    pub fn with_content(mut self, content: impl Into<String>) -> Self {
        self.content = content.into();
        self
    }

    /// The same turn with these tool calls (the stop reason is left as it is).
    pub fn with_tool_calls(mut self, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        self.tool_calls = calls.into_iter().collect();
        self
    }

    /// The same turn with this usage.
    ///
    /// ```
    /// use harnessx::{ModelResponse, StopReason, Usage};
    /// let turn = ModelResponse::text("Cut.")
    ///     .with_usage(Usage::new(120, 4096))
    ///     .with_stop_reason(StopReason::MaxTokens);
    /// assert_eq!(turn.usage.output_tokens, 4096);
    /// ```
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// The same turn with this stop reason.
    pub fn with_stop_reason(mut self, stop_reason: StopReason) -> Self {
        self.stop_reason = stop_reason;
        self
    }

    /// The same turn with these reasoning blocks.
    pub fn with_thinking(mut self, thinking: Vec<Thinking>) -> Self {
        self.thinking = thinking;
        self
    }

    /// The same turn, answered by the model the provider names `model`.
    ///
    /// ```
    /// use harnessx::ModelResponse;
    /// let turn = ModelResponse::text("Hi.").with_model("gpt-4o-mini-2024-07-18").with_id("chatcmpl-1");
    /// assert_eq!(turn.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    /// assert_eq!(turn.id.as_deref(), Some("chatcmpl-1"));
    /// ```
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The same turn with the provider's identifier of the response.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// A turn that answers with text and stops ([`StopReason::EndTurn`]).
    ///
    /// ```
    /// use harnessx::{ModelResponse, StopReason};
    /// let turn = ModelResponse::text("Done.");
    /// assert_eq!(turn.content, "Done.");
    /// assert_eq!(turn.stop_reason, StopReason::EndTurn);
    /// assert!(turn.tool_calls.is_empty());
    /// ```
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// A turn that calls tools, in order, and waits for their results
    /// ([`StopReason::ToolUse`]).
    ///
    /// ```
    /// use harnessx::{ModelResponse, StopReason, ToolCall};
    /// use serde_json::json;
    /// let turn = ModelResponse::tool_calls([
    ///     ToolCall::json("c1", "add", json!({"a": 1, "b": 2})),
    ///     ToolCall::json("c2", "add", json!({"a": 3, "b": 4})),
    /// ]);
    /// assert_eq!(turn.tool_calls.len(), 2);
    /// assert_eq!(turn.stop_reason, StopReason::ToolUse);
    /// ```
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self {
            tool_calls: calls.into_iter().collect(),
            stop_reason: StopReason::ToolUse,
            ..Self::default()
        }
    }
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
    /// The model failed before it streamed anything, and a [`FallbackModel`] moved on to the
    /// next one. The next model's events follow.
    Fallback {
        /// The model that failed.
        from: String,
        /// The model asked next.
        to: String,
        /// The kind of failure.
        kind: ModelErrorKind,
        /// The failure's message.
        error: String,
    },
    /// The turn is complete; carries the assembled response.
    Completed {
        /// The whole turn.
        response: ModelResponse,
    },
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

    /// The host and port requests go to, when the model is served over the network: the
    /// `server.address` and `server.port` of its `chat` spans. `None` (the default) for a model
    /// in the process, or one that cannot say.
    fn server_address(&self) -> Option<ServerAddress> {
        None
    }

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

/// Where a model is served: a host (a name or an IP address) and a port.
///
/// ```
/// use harnessx::model::ServerAddress;
/// let address = ServerAddress::from_url("https://api.openai.com/v1").unwrap();
/// assert_eq!((address.host.as_str(), address.port), ("api.openai.com", 443));
/// let local = ServerAddress::from_url("http://[::1]:8080/v1").unwrap();
/// assert_eq!((local.host.as_str(), local.port), ("::1", 8080));
/// assert_eq!(ServerAddress::from_url("not a url"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ServerAddress {
    /// The host name or IP address (an IPv6 address without brackets).
    pub host: String,
    /// The port: the one in the URL, else the scheme's default.
    pub port: u16,
}

impl ServerAddress {
    /// An address.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
        }
    }

    /// The host and port of `url` (the port from the scheme when the URL has none); `None`
    /// when it is not a URL with a host, or its scheme has no known port.
    pub fn from_url(url: &str) -> Option<Self> {
        let url = url::Url::parse(url.trim()).ok()?;
        let host = match url.host()? {
            url::Host::Domain(name) => name.to_owned(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => ip.to_string(),
        };
        Some(Self::new(host, url.port_or_known_default()?))
    }
}

/// Something that can be an agent's model: any [`Model`], or an `Arc<dyn Model>` already shared.
pub trait IntoModel {
    /// The shared model.
    fn into_model(self) -> Arc<dyn Model>;
}

impl<M: Model> IntoModel for M {
    fn into_model(self) -> Arc<dyn Model> {
        Arc::new(self)
    }
}

impl IntoModel for Arc<dyn Model> {
    fn into_model(self) -> Arc<dyn Model> {
        self
    }
}
