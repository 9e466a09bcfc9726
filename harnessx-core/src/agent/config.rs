//! Agent-wide settings: [`AgentConfig`].

use serde::{Deserialize, Serialize};

use crate::model::ModelSettings;
use crate::registry::ToolPolicy;

/// The default limit on model requests in one run.
pub const DEFAULT_MAX_TURNS: usize = 50;

/// How an agent runs: the defaults, changed with the `with_*` methods (it will gain fields).
///
/// ```
/// use harnessx::{AgentConfig, ToolPolicy};
/// let config = AgentConfig::default()
///     .with_tools(ToolPolicy::new().with_default_timeout_seconds(60).with_dedupe_calls(true))
///     .with_planning(false);
/// assert_eq!(config.max_turns, harnessx::agent::DEFAULT_MAX_TURNS);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct AgentConfig {
    /// Registry-wide tool options carried to the agent's registry (values given to
    /// [`ToolRegistry::builder`](crate::ToolRegistry::builder) still win).
    pub tools: ToolPolicy,
    /// Register `write_todos`/`read_todos` and add the planning line to the system prompt
    /// (default `true`).
    pub planning: bool,
    /// The most model requests one run may make before it fails with
    /// [`AgentError::MaxTurns`](crate::agent::AgentError::MaxTurns) (default 50).
    pub max_turns: usize,
    /// Sampling settings sent with every request.
    pub settings: ModelSettings,
    /// The agent's name, reported on each run's telemetry span (`invoke_agent {name}`,
    /// `gen_ai.agent.name`; see [`telemetry`](crate::telemetry)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Record prompts, system instructions, model answers, tool arguments and tool results on the
    /// telemetry spans (`gen_ai.input.messages`, `gen_ai.tool.call.arguments`, ...). Off by
    /// default: they may hold personal data.
    pub capture_content: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            tools: ToolPolicy::default(),
            planning: true,
            max_turns: DEFAULT_MAX_TURNS,
            settings: ModelSettings::default(),
            name: None,
            capture_content: false,
        }
    }
}

impl AgentConfig {
    /// With these registry-wide tool options.
    pub fn with_tools(mut self, tools: ToolPolicy) -> Self {
        self.tools = tools;
        self
    }

    /// With the planning tools and prompt line on or off.
    pub fn with_planning(mut self, planning: bool) -> Self {
        self.planning = planning;
        self
    }

    /// With this limit on model requests per run.
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// With these sampling settings.
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// With this name on the telemetry spans.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// With prompts, answers, tool arguments and results recorded on the telemetry spans.
    pub fn with_capture_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }
}
