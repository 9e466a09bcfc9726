//! The agent: a model, a registry of tools and the loop between them ([`Agent`]).
//!
//! [`Agent::run`] loops model → tool batch → model until the model answers without calling a
//! tool; [`Agent::run_stream`] does the same and reports each step as an [`AgentEvent`].

mod builder;
mod capability;
mod config;
mod conversation;
mod error;
mod event;
mod hooked;
mod request;
mod run;

use std::sync::Arc;

use futures::Stream;

pub use crate::model::IntoModel;
pub use builder::AgentBuilder;
pub use capability::{Capability, CapabilityError};
pub use config::{AgentConfig, DEFAULT_MAX_TURNS};
pub use conversation::Conversation;
pub use error::AgentError;
pub use event::{AgentEvent, RunOutcome, RunResult};
pub use request::{OUTPUT_RETRIES, RunRequest, TypedResult};

use crate::model::{Message, Model};
use crate::permissions::PermissionManager;
use crate::registry::ToolRegistry;

pub(crate) struct Inner {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) instructions: Option<String>,
    pub(crate) registry: ToolRegistry,
    pub(crate) permissions: PermissionManager,
    pub(crate) config: AgentConfig,
    /// Capabilities whose setup has not succeeded yet, in the order they were given.
    pub(crate) pending_setup: tokio::sync::Mutex<Vec<Arc<dyn Capability>>>,
    /// The middleware around each model request and tool call ([`crate::hooks`]).
    pub(crate) middleware: crate::hooks::Hooks,
}

/// A model with tools, and the loop that runs them.
///
/// `Agent` is a cheap handle (clones share the agent) and keeps no conversation of its own:
/// [`run`](Self::run) starts a fresh one, [`run_in`](Self::run_in) continues a [`Conversation`]
/// the caller keeps, and runs on one agent proceed concurrently, each with its own. What they
/// share is the agent's registry (its tools and their state, the todo list of the planning
/// tools) and its permission manager.
///
/// ```
/// use harnessx::{Agent, ToolDefinition, ToolOutput, handler_fn};
/// use harnessx::model::TestModel;
/// use serde_json::json;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::agent::AgentError> {
/// let add = ToolDefinition::new(
///     "add", "Add two numbers.",
///     json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
///            "required": ["a", "b"]}),
///     handler_fn(|args, _| async move {
///         Ok(ToolOutput::json(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))))
///     }),
/// );
/// let model = TestModel::new().then_call("add", json!({"a": 2, "b": 3})).then_reply("5");
/// let agent = Agent::builder().model(model.clone()).tool(add).build()?;
/// let result = agent.run("What is 2 + 3?").await?;
/// assert_eq!(result.output, "5");
/// assert_eq!(result.turns, 2);
/// // The second request carried the tool's result.
/// let sent = &model.requests()[1].messages;
/// assert!(matches!(&sent[2], harnessx::Message::Tool { content, .. } if content == "5"));
/// agent.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.inner.model.name())
            .field("instructions", &self.inner.instructions)
            .field("registry", &self.inner.registry)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Starts building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// The agent's registry. Register more tools here before a run; changing it during a run
    /// never disturbs calls already in flight (each holds the definition it started with).
    pub fn tools(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The permission manager that checks every call.
    pub fn permissions(&self) -> &PermissionManager {
        &self.inner.permissions
    }

    /// The agent's configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.inner.config
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.inner.model
    }

    /// The system prompt given to the builder.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// Runs the [setup](Capability::setup) of each capability whose setup has not succeeded
    /// yet (connecting tool sources), in order. Runs call it themselves before the first model
    /// request; a failure is [`AgentError::Setup`] and is tried again on the next call.
    pub async fn connect(&self) -> Result<(), AgentError> {
        let mut pending = self.inner.pending_setup.lock().await;
        while let Some(capability) = pending.first().cloned() {
            capability
                .setup(&self.inner.registry)
                .await
                .map_err(|e| AgentError::from_capability(capability.name(), e))?;
            pending.remove(0);
        }
        Ok(())
    }

    /// Runs the agent on `prompt`, in a fresh conversation, until the model answers without
    /// calling a tool.
    ///
    /// Fails with [`AgentError::MaxTurns`] after `config.max_turns` model requests, with
    /// [`AgentError::Model`] when the model call fails, and with [`AgentError::HookStopped`] or
    /// [`AgentError::UsageLimitExceeded`] when a [hook](crate::hooks) stops it; tool failures are
    /// answered to the model instead.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunResult, AgentError> {
        self.prompt(prompt).run().await
    }

    /// A run of `prompt` to configure before it starts: a conversation to continue, per-run
    /// [`deps`](RunRequest::deps) for the tools, a typed answer. See [`RunRequest`].
    pub fn prompt(&self, prompt: impl Into<String>) -> RunRequest<'_> {
        RunRequest::new(self, prompt.into())
    }

    /// Runs the agent on `prompt` for an answer of type `T`, in a fresh conversation (see
    /// [`RunRequest::run_typed`]).
    pub async fn run_typed<T>(
        &self,
        prompt: impl Into<String>,
    ) -> Result<TypedResult<T>, AgentError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
    {
        self.prompt(prompt).run_typed().await
    }

    /// Runs the agent on `prompt` as the next message of `conversation`, like
    /// [`run`](Self::run). When the run succeeds its messages are appended to `conversation`;
    /// when it fails `conversation` is left as it was.
    pub async fn run_in(
        &self,
        conversation: &mut Conversation,
        prompt: impl Into<String>,
    ) -> Result<RunResult, AgentError> {
        self.prompt(prompt).conversation(conversation).run().await
    }

    /// Runs the agent like [`run`](Self::run), reporting every step as an [`AgentEvent`] in the
    /// order documented there; the last item is `Completed` or the error that ended the run.
    /// Dropping the stream cancels the run.
    pub fn run_stream(
        &self,
        prompt: impl Into<String>,
    ) -> impl Stream<Item = Result<AgentEvent, AgentError>> + Send + Unpin + 'static {
        self.prompt(prompt).stream()
    }

    /// [`run_stream`](Self::run_stream) continuing `conversation` (the stream owns a copy of
    /// it): the final `Completed` event's result holds this run's messages, which
    /// [`Conversation::record`] appends.
    pub fn run_stream_in(
        &self,
        conversation: &Conversation,
        prompt: impl Into<String>,
    ) -> impl Stream<Item = Result<AgentEvent, AgentError>> + Send + Unpin + 'static {
        self.prompt(prompt)
            .stream_over(conversation.messages().to_vec())
    }

    /// Runs the agent through a [`Journal`](crate::journal::Journal): the same loop as
    /// [`run_in`](Self::run_in), over `transcript` (the conversation before `prompt`). Steps the journal recorded are read back instead of redone; a call that needs a
    /// person ends the run with [`RunOutcome::NeedsInput`].
    /// Events other than text deltas and todo updates are reported only when their step runs,
    /// never when it is read back. A durable runtime (`harnessx-runtime`) is the intended caller.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use harnessx::Agent;
    /// use harnessx::agent::RunOutcome;
    /// use harnessx::journal::NoJournal;
    /// use harnessx::model::TestModel;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
    /// let agent = Agent::builder().model(TestModel::new().then_reply("Hi")).build()?;
    /// let outcome = agent.run_journaled(Vec::new(), "Hello", Arc::new(NoJournal), None).await?;
    /// assert!(matches!(outcome, RunOutcome::Completed(r) if r.output == "Hi"));
    /// # Ok(()) }
    /// ```
    pub async fn run_journaled(
        &self,
        transcript: Vec<Message>,
        prompt: impl Into<String>,
        journal: Arc<dyn crate::journal::Journal>,
        events: Option<&(dyn Fn(AgentEvent) + Send + Sync)>,
    ) -> Result<RunOutcome, AgentError> {
        run::drive_journaled(
            Arc::clone(&self.inner),
            transcript,
            prompt.into(),
            journal,
            request::RunSpec::default(),
            events,
        )
        .await
    }

    /// Releases the tools' connections and resources (see
    /// [`ToolRegistry::on_close`](crate::ToolRegistry::on_close)).
    pub async fn close(&self) {
        self.inner.registry.close().await;
    }
}
