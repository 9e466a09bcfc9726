//! What can make an agent fail: [`AgentError`].

use crate::error::RegistryError;
use crate::model::ModelError;

/// A failure of building or running an agent. Tool failures are never here: the model sees them
/// as error results and the run goes on.
///
/// ```
/// use harnessx::{Agent, AgentConfig, AgentError};
/// use harnessx::model::TestModel;
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let agent = Agent::builder()
///     .model(TestModel::new().then_call("read_todos", serde_json::json!({})))
///     .config(AgentConfig::default().with_max_turns(1))
///     .build()
///     .unwrap();
/// match agent.run("Loop").await {
///     Err(AgentError::MaxTurns { limit }) => assert_eq!(limit, 1),
///     other => panic!("unexpected {other:?}"),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `build()` was called without a model.
    #[error("the agent has no model: call `.model(..)` on the builder before `build()`")]
    NoModel,
    /// The configuration is invalid.
    #[error("invalid agent configuration: {0}")]
    Config(String),
    /// A tool could not be registered.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The model call failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The run made `limit` model requests without a final answer.
    #[error(
        "the agent made {limit} model requests without reaching a final answer; raise \
         `AgentConfig::max_turns` (currently {limit}) or split the task into smaller runs"
    )]
    MaxTurns {
        /// The configured limit.
        limit: usize,
    },
    /// A durable run's journal could not be written; the run stops without losing a step.
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    /// A [`Hook`](crate::hooks::Hook) stopped the run.
    #[error("the run was stopped by hook `{hook}`: {reason}")]
    HookStopped {
        /// The hook's [`name`](crate::hooks::Hook::name).
        hook: String,
        /// Why it stopped the run.
        reason: String,
    },
    /// The run passed a limit of its [`UsageLimits`](crate::hooks::UsageLimits). For
    /// `model_requests` and `tool_calls`, `reached` counts the request or call that would have
    /// passed the limit, which was not made.
    #[error(
        "the run passed its usage limit on `{limit}`: it reached {reached}, over the limit of \
         {max}; raise `UsageLimits::{limit}` or split the task into smaller runs"
    )]
    UsageLimitExceeded {
        /// Which limit.
        limit: crate::hooks::UsageLimit,
        /// The limit's maximum.
        max: u64,
        /// The value the run reached.
        reached: u64,
    },
    /// The model's final answer did not match the output type of a typed run
    /// ([`RunRequest::run_typed`](super::RunRequest::run_typed)), after being sent back with
    /// the reason.
    #[error(
        "the model's answer did not match the requested output type after {attempts} \
         attempts: {reason}; check that the model supports structured output, or describe the \
         format in the instructions"
    )]
    InvalidOutput {
        /// How many final answers were checked.
        attempts: usize,
        /// Why the last one did not fit.
        reason: String,
    },
    /// A [`Capability`](super::Capability) could not be registered or set up (a skills folder
    /// that cannot be used, an MCP server configured wrongly). The source is the capability's own
    /// error: downcast it (`SkillError`, `McpError`, ...) to tell them apart.
    #[error("could not set up the agent's {capability}")]
    Setup {
        /// The capability's [`name`](super::Capability::name).
        capability: String,
        /// What went wrong.
        #[source]
        source: super::CapabilityError,
    },
}

impl AgentError {
    /// The error of a capability named `capability`: a [`RegistryError`] stays what it is
    /// (the same failure as registering a tool yourself), anything else is [`Self::Setup`].
    pub(crate) fn from_capability(
        capability: std::borrow::Cow<'_, str>,
        source: super::CapabilityError,
    ) -> Self {
        match source.downcast::<RegistryError>() {
            Ok(registry) => Self::Registry(*registry),
            Err(source) => Self::Setup {
                capability: capability.into_owned(),
                source,
            },
        }
    }
}

/// A failed run's or model request's `error.type` on its span: the model's error kind, or what
/// stopped the run.
impl crate::telemetry::spans::SpanError for AgentError {
    fn error_type(&self) -> &'static str {
        match self {
            AgentError::Model(e) => crate::telemetry::spans::model_error_type(e.kind()),
            AgentError::MaxTurns { .. } => "max_turns",
            AgentError::Journal(_) => "journal",
            AgentError::Setup { .. } => "setup",
            _ => "_OTHER",
        }
    }
}
