//! Subagents: a specialist agent registered as a tool that takes a `task` ([`SubAgent`]).
//!
//! Each task runs in a fresh registry holding copies (schemas, metadata, handlers) of the
//! specialist's declared tools, on the same serial lane as the calling agent, so serial tools
//! take turns across an agent and its specialists. The calling registry's sandbox, shared
//! state (`State<T>`) and permission manager carry over.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::agent::{Agent, AgentConfig, IntoModel};
use crate::model::Model;
use crate::output::{ToolError, ToolOutput};
use crate::permissions::PermissionManager;
use crate::registry::ToolRegistry;
use crate::tool::{IntoTool, ToolDefinition, handler_fn};

/// The default time limit of one subagent task: 300 seconds.
pub const DEFAULT_SUBAGENT_TIMEOUT_SECONDS: f64 = 300.0;

/// A specialist agent the main agent can hand a task to. Register it like any tool.
///
/// The tool takes one argument, `task`, runs a fresh agent on it and returns that agent's final
/// answer. The tool is concurrent (it does not hold the serial lane for the whole task, so the
/// specialist's serial tools take turns with the agent's) and has its own 300-second limit.
///
/// ```
/// use harnessx::{Agent, SubAgent, ToolRegistry};
/// use harnessx::model::TestModel;
/// let researcher = SubAgent::new(
///     "researcher",
///     "Research a question and report the findings.",
///     TestModel::new().then_reply("Findings: ..."),
///     "You research carefully and cite sources.",
/// )
/// .timeout_seconds(120);
/// let registry = ToolRegistry::new();
/// let def = registry.register_tool(researcher)?;
/// assert_eq!(def.timeout, Some(std::time::Duration::from_secs(120)));
/// assert!(def.concurrent);
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct SubAgent {
    name: String,
    description: String,
    model: Arc<dyn Model>,
    instructions: String,
    tools: Vec<ToolDefinition>,
    timeout: Duration,
    config: Option<AgentConfig>,
    permissions: Option<PermissionManager>,
}

impl std::fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgent")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("model", &self.model.name())
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl SubAgent {
    /// A specialist called `name` (the tool name), described to the main model by
    /// `description`, driven by `model` with `instructions` as its system prompt.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        model: impl IntoModel,
        instructions: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            model: model.into_model(),
            instructions: instructions.into(),
            tools: Vec::new(),
            timeout: Duration::from_secs_f64(DEFAULT_SUBAGENT_TIMEOUT_SECONDS),
            config: None,
            permissions: None,
        }
    }

    /// Declares one tool the specialist may use.
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        self.tools.push(tool.into_tool());
        self
    }

    /// Declares several tools the specialist may use.
    pub fn tools<T: IntoTool>(self, tools: impl IntoIterator<Item = T>) -> Self {
        tools.into_iter().fold(self, Self::tool)
    }

    /// The time limit of one task (default 300 s): seconds as an integer or a float (`120`,
    /// `2.5`), or a [`Duration`] (see [`IntoTimeout`](crate::IntoTimeout)). A value that is not
    /// a positive time keeps the default.
    pub fn timeout_seconds(mut self, seconds: impl crate::IntoTimeout) -> Self {
        self.timeout = match seconds.into_timeout() {
            d if d.is_zero() => Duration::from_secs_f64(DEFAULT_SUBAGENT_TIMEOUT_SECONDS),
            d => d,
        };
        self
    }

    /// The specialist's configuration (default: [`AgentConfig::default`]). Without a
    /// [`name`](AgentConfig::name) of its own, the specialist's runs are named after the tool.
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The permission manager checking the specialist's calls (default: the manager that
    /// checked the call to the specialist, so it inherits the calling agent's policy, overrides,
    /// approval callback and session grants).
    pub fn permissions(mut self, permissions: PermissionManager) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// The tool name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Builds the specialist for one task, in a fresh registry on the caller's lane.
    fn agent_for_task(&self, ctx: &crate::ToolContext) -> Result<Agent, ToolError> {
        let registry = ToolRegistry::new();
        if let Some(lane) = ctx.extensions().get::<crate::SerialLane>() {
            registry.set_serial_lane(lane.clone());
        }
        let mut config = self.config.clone().unwrap_or_default();
        config.name.get_or_insert_with(|| self.name.clone());
        let mut builder = Agent::builder()
            .model(Arc::clone(&self.model))
            .instructions(self.instructions.clone())
            .registry(registry)
            .tools(self.tools.iter())
            .config(config);
        if let Some(sandbox) = ctx.sandbox() {
            builder = builder.sandbox(Arc::clone(sandbox));
        }
        let inherited = ctx.extensions().get::<crate::PermissionManager>();
        if let Some(permissions) = self.permissions.as_ref().or(inherited) {
            builder = builder.permissions(permissions.clone());
        }
        let agent = builder.build().map_err(|e| {
            ToolError::failed(format!(
                "The subagent `{}` could not be set up: {e}. This is a configuration fault, not \
                 a problem with your task; do the task another way or report it to the user.",
                self.name
            ))
        })?;
        // Shared state (`State<T>`: a database pool, an HTTP client) reaches the copied tools;
        // what the specialist set up for itself (its own todo list) stays its own.
        agent.tools().state_map().inherit_from(&ctx.state);
        Ok(agent)
    }
}

impl IntoTool for SubAgent {
    fn into_tool(self) -> ToolDefinition {
        let name = self.name.clone();
        let description = self.description.clone();
        let timeout = self.timeout;
        let spec = Arc::new(self);
        ToolDefinition::new(
            name,
            description,
            json!({
                "type": "object",
                "properties": {
                    "task": {
                        "type": "string",
                        "description": "The whole task, with every detail the specialist needs: it sees nothing else of this conversation."
                    }
                },
                "required": ["task"],
                "additionalProperties": false
            }),
            handler_fn(move |args, ctx| {
                let spec = Arc::clone(&spec);
                async move {
                    let task = args["task"].as_str().unwrap_or_default().to_owned();
                    let agent = spec.agent_for_task(&ctx)?;
                    let outcome = agent.run(task).await;
                    agent.close().await;
                    match outcome {
                        Ok(result) => Ok(ToolOutput::text(result.output)),
                        Err(e) => Err(ToolError::failed(format!(
                            "The subagent `{}` did not finish the task: {e}. Retry with a \
                             smaller or clearer task, or do it yourself.",
                            spec.name
                        ))),
                    }
                }
            }),
        )
        .with_concurrent(true)
        .with_timeout_seconds(timeout.as_secs_f64())
    }
}
