//! Assembling an agent: [`AgentBuilder`].

use std::sync::Arc;

use super::{Agent, AgentConfig, AgentError, Capability, Inner};
use crate::hooks::{Hook, Hooks, UsageLimits};
use crate::model::{IntoModel, Model};
use crate::permissions::{ApprovalCallback, PermissionManager};
use crate::planning::{PLANNING_TOOLS, PlanningOptions, WRITE_TODOS, register_planning_tools};
use crate::registry::ToolRegistry;
use crate::sandbox::Sandbox;
use crate::tool::{IntoTool, ToolDefinition};

/// What `build` registers, in the order it was given.
enum Step {
    Tool(Box<ToolDefinition>),
    Capability(Arc<dyn Capability>),
}

/// Builds an [`Agent`]. Tools are registered at [`build`](Self::build), in the order given,
/// into the registry given with [`registry`](Self::registry) (or a new one); a registration
/// error is returned from `build`.
///
/// ```
/// use harnessx::{Agent, AgentConfig, ToolDefinition, ToolOutput, ToolPolicy, handler_fn};
/// use harnessx::model::TestModel;
///
/// let echo = ToolDefinition::new("echo", "Echo the text.", serde_json::json!({"type": "object"}),
///     handler_fn(|args, _| async move { Ok(ToolOutput::json(args)) }));
/// let agent = Agent::builder()
///     .model(TestModel::new().then_reply("hi"))
///     .instructions("You are terse.")
///     .tool(echo)
///     .config(AgentConfig::default().with_tools(ToolPolicy::new().with_default_timeout_seconds(60)))
///     .build()?;
/// assert_eq!(agent.tools().list_tools(), ["echo", "write_todos", "read_todos"]);
/// assert_eq!(agent.tools().policy().default_timeout_seconds, 60.0);
/// # Ok::<(), harnessx::agent::AgentError>(())
/// ```
#[must_use]
#[derive(Default)]
pub struct AgentBuilder {
    pub(crate) model: Option<Arc<dyn Model>>,
    pub(crate) instructions: Option<String>,
    pub(crate) registry: Option<ToolRegistry>,
    pub(crate) config: AgentConfig,
    pub(crate) permissions: Option<PermissionManager>,
    pub(crate) approval: Option<Arc<dyn ApprovalCallback>>,
    pub(crate) sandbox: Option<Arc<dyn Sandbox>>,
    steps: Vec<Step>,
    pub(crate) middleware: Vec<Arc<dyn Hook>>,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("model", &self.model.as_ref().map(|m| m.name().to_owned()))
            .field("instructions", &self.instructions)
            .field("registry", &self.registry)
            .field("config", &self.config)
            .field("pending_registrations", &self.steps.len())
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The model the agent drives (required).
    pub fn model(mut self, model: impl IntoModel) -> Self {
        self.model = Some(model.into_model());
        self
    }

    /// The system prompt.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool: a `#[tool]` function or a [`ToolDefinition`](crate::ToolDefinition)
    /// (its schema and metadata are copied, its handler kept).
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        self.steps.push(Step::Tool(Box::new(tool.into_tool())));
        self
    }

    /// Adds several tools of one type (for example a `Vec<ToolDefinition>`).
    pub fn tools<T: IntoTool>(self, tools: impl IntoIterator<Item = T>) -> Self {
        tools.into_iter().fold(self, Self::tool)
    }

    /// Attaches this registry (the same registry, not a copy): the agent's tools live there and
    /// tools added with [`tool`](Self::tool) are registered into it.
    pub fn registry(mut self, registry: ToolRegistry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Agent-wide settings. `config.tools` is carried to the registry.
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// The permission manager that checks every call (default: ALLOW, no approval callback).
    pub fn permissions(mut self, permissions: PermissionManager) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// The approval callback that answers ASK (installed on the permission manager).
    pub fn approval<F, Fut>(mut self, callback: F) -> Self
    where
        F: Fn(crate::ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = crate::ApprovalDecision> + Send + 'static,
    {
        self.approval = Some(Arc::new(crate::ApprovalFn(callback)));
        self
    }

    /// Sets the approval callback from any [`ApprovalCallback`] implementation.
    pub fn approval_callback(mut self, callback: Arc<dyn ApprovalCallback>) -> Self {
        self.approval = Some(callback);
        self
    }

    /// Binds a caller-owned sandbox as the engine of the bash and file tools
    /// (exposed as `agent.tools().sandbox()`). It is bound before any tool is registered.
    pub fn sandbox(mut self, sandbox: Arc<dyn Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Adds a [`Hook`] around every model request and tool call of every run, after the hooks
    /// already added (hooks run in the order they were added). See [`crate::hooks`].
    pub fn hook(mut self, hook: impl Hook) -> Self {
        self.middleware.push(Arc::new(hook));
        self
    }

    /// Gives every run this usage budget: a run that passes a limit ends with
    /// [`AgentError::UsageLimitExceeded`]. The same as `.hook(limits)`, so it runs where it is
    /// added among the other hooks.
    pub fn usage_limits(self, limits: UsageLimits) -> Self {
        self.hook(limits)
    }

    /// Gives the agent a [`Capability`]: an MCP server, skills, a knowledge base, an OKF bundle,
    /// or one of your own. Its tools are registered at [`build`](Self::build), in the order tools
    /// and capabilities were added; its instructions are appended to the system prompt; its
    /// setup runs before the first model request.
    pub fn capability(mut self, capability: impl Capability) -> Self {
        self.steps.push(Step::Capability(Arc::new(capability)));
        self
    }

    /// [`capability`](Self::capability) for one already shared.
    pub fn capability_arc(mut self, capability: Arc<dyn Capability>) -> Self {
        self.steps.push(Step::Capability(capability));
        self
    }

    /// Builds the agent: binds the sandbox, carries `config.tools` to the registry, registers
    /// the tools and capabilities in the order given, then installs the planning tools (unless
    /// `config.planning` is false or a `write_todos` is already registered).
    ///
    /// A tool that cannot be registered fails with [`AgentError::Registry`], as does a
    /// capability whose registration fails with a
    /// [`RegistryError`](crate::RegistryError); any other failure of a capability is
    /// [`AgentError::Setup`] naming it.
    pub fn build(self) -> Result<Agent, AgentError> {
        let model = self.model.ok_or(AgentError::NoModel)?;
        if self.config.max_turns == 0 {
            return Err(AgentError::Config(
                "`max_turns` is 0, so the agent could never ask the model; set it to at least 1"
                    .to_owned(),
            ));
        }
        let registry = self.registry.unwrap_or_default();
        if let Some(sandbox) = self.sandbox {
            registry.set_sandbox(Some(sandbox));
        }
        registry.inherit_policy(self.config.tools.clone());
        let mut instructions = self.instructions;
        let mut setups = Vec::new();
        for step in self.steps {
            match step {
                Step::Tool(def) => {
                    registry.register_tool(*def)?;
                }
                Step::Capability(capability) => {
                    capability
                        .register(&registry)
                        .map_err(|e| AgentError::from_capability(capability.name(), e))?;
                    if let Some(more) = capability.instructions() {
                        instructions = Some(match instructions {
                            Some(own) => format!("{own}\n\n{more}"),
                            None => more.into_owned(),
                        });
                    }
                    setups.push(capability);
                }
            }
        }
        if self.config.planning && !registry.contains(WRITE_TODOS) {
            let missing = PLANNING_TOOLS
                .into_iter()
                .filter(|name| !registry.contains(name))
                .map(str::to_owned)
                .collect();
            register_planning_tools(
                &registry,
                PlanningOptions {
                    include: Some(missing),
                    ..PlanningOptions::default()
                },
            )?;
        }
        let mut permissions = self.permissions.unwrap_or_default();
        if let Some(approval) = self.approval {
            permissions = permissions.with_approval_arc(approval);
        }
        Ok(Agent {
            inner: Arc::new(Inner {
                model,
                instructions,
                registry,
                permissions,
                config: self.config,
                pending_setup: tokio::sync::Mutex::new(setups),
                middleware: Hooks::new(self.middleware),
            }),
        })
    }
}
