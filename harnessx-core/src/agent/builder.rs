//! Assembling an agent: [`AgentBuilder`].

use std::future::Future;
use std::sync::Arc;

use super::{Agent, AgentConfig, AgentError, Inner, StartHook};
use crate::error::RegistryError;
use crate::hooks::{Hook, Hooks, UsageLimits};
use crate::model::Model;
use crate::permissions::{ApprovalCallback, PermissionManager};
use crate::planning::{PLANNING_TOOLS, PlanningOptions, WRITE_TODOS, register_planning_tools};
use crate::registry::ToolRegistry;
use crate::sandbox::Sandbox;
use crate::tool::IntoTool;

type Deferred = Box<dyn FnOnce(&ToolRegistry) -> Result<(), AgentError> + Send>;

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
///     .config(AgentConfig {
///         tools: ToolPolicy::new().with_default_timeout_seconds(60),
///         ..AgentConfig::default()
///     })
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
    pub(crate) deferred: Vec<Deferred>,
    pub(crate) on_start: Vec<StartHook>,
    pub(crate) middleware: Vec<Arc<dyn Hook>>,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("model", &self.model.as_ref().map(|m| m.name().to_owned()))
            .field("instructions", &self.instructions)
            .field("registry", &self.registry)
            .field("config", &self.config)
            .field("pending_registrations", &self.deferred.len())
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
    pub fn tool(self, tool: impl IntoTool) -> Self {
        let def = tool.into_tool();
        self.defer(move |registry| registry.register_tool(def).map(drop))
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

    /// Queues a registration step run at [`build`](Self::build), in order, after the sandbox is
    /// bound. Extension traits (the builtin catalog's `.builtin(name)`) are built on it.
    #[doc(hidden)]
    pub fn defer(
        self,
        f: impl FnOnce(&ToolRegistry) -> Result<(), RegistryError> + Send + 'static,
    ) -> Self {
        self.defer_step(move |registry| f(registry).map_err(AgentError::from))
    }

    /// [`defer`](Self::defer) for a step whose error is not a registration error (loading
    /// skills, ...).
    pub(crate) fn defer_step(
        mut self,
        f: impl FnOnce(&ToolRegistry) -> Result<(), AgentError> + Send + 'static,
    ) -> Self {
        self.deferred.push(Box::new(f));
        self
    }

    /// Queues an async setup step (connecting an MCP server, ...) run once before the first
    /// model request or on [`Agent::connect`]. A failed step is retried on the next run.
    #[doc(hidden)]
    pub fn on_start<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ToolRegistry) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), AgentError>> + Send + 'static,
    {
        self.on_start
            .push(Arc::new(move |registry| Box::pin(f(registry))));
        self
    }

    /// Builds the agent: binds the sandbox, carries `config.tools` to the registry, runs the
    /// queued registrations in order, then installs the planning tools (unless
    /// `config.planning` is false or a `write_todos` is already registered).
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
        for step in self.deferred {
            step(&registry)?;
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
                instructions: self.instructions,
                registry,
                permissions,
                config: self.config,
                run_lock: tokio::sync::Mutex::default(),
                history: std::sync::Mutex::default(),
                hooks: tokio::sync::Mutex::new(self.on_start),
                middleware: Hooks::new(self.middleware),
            }),
        })
    }
}
