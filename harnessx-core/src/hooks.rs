//! The middleware around each model request and each tool call: the [`Hook`] trait, what a hook
//! sees ([`HookContext`], [`ToolInvocation`]) and decides ([`BeforeModel`], [`BeforeTool`],
//! [`HookStop`]), and usage budgets built on it ([`UsageLimits`]).
//!
//! Hooks are installed with [`AgentBuilder::hook`](crate::AgentBuilder::hook) (every run of the
//! agent: [`run`](crate::Agent::run), [`run_stream`](crate::Agent::run_stream) and the durable
//! [`run_journaled`](crate::Agent::run_journaled)) or [`ToolRun::with_hook`](crate::ToolRun::with_hook)
//! (tool calls executed directly). Several hooks run in the order they were installed, each
//! seeing what the ones before it changed; a denial, an answer or a stop ends that stage's chain.
//!
//! # A model request
//!
//! 1. [`Hook::before_model`] may change the request (for this request only: the conversation the
//!    run keeps is not changed), answer it without asking the model ([`BeforeModel::Respond`]),
//!    or stop the run.
//! 2. The model is asked. When it fails, [`Hook::on_model_error`] may answer in its place.
//! 3. [`Hook::after_model`] may change the response (text, tool calls) before the run uses it.
//!
//! A turn a durable run's journal recorded is read back as it was recorded (after the hooks that
//! changed it) and no model hook runs for it; its usage still counts toward the run's
//! [`RunUsage`], so a resumed run does not get a fresh budget.
//!
//! # A tool call
//!
//! The engine first resolves the name and checks the arguments against the schema; a call it
//! refuses there (an unknown tool, arguments that are not JSON or break the schema) is answered
//! without hooks. Then:
//!
//! 1. [`Hook::before_tool`] may change the arguments, deny the call with a reason the model reads
//!    ([`BeforeTool::Deny`]), answer it without running the tool ([`BeforeTool::Respond`]), or
//!    stop the run.
//! 2. Arguments a hook changed are validated against the schema again, and the permission check
//!    runs on the arguments as changed: a hook cannot widen what a call may do.
//! 3. [`Hook::after_tool`] (success) or [`Hook::on_tool_error`] (an error result: a denial,
//!    a failure, a timeout) may change the result: every result of a call that reached step 1,
//!    including one a hook gave.
//! 4. The result cap applies last, to whatever the hooks left.
//!
//! A call a durable run's journal finished is read back without hooks. A result a hook gave in
//! a durable run is recorded like a handler's. A [`SubAgent`](crate::SubAgent)'s specialist is
//! an agent of its own: the calling agent's hooks see the call to the specialist, not the
//! specialist's own requests and calls.
//!
//! ```
//! use harnessx::hooks::{BeforeTool, Hook, HookContext, HookStop, ToolInvocation};
//! use harnessx::{Agent, BoxFuture, ToolDefinition, ToolOutput, handler_fn};
//! use harnessx::model::TestModel;
//! use serde_json::json;
//!
//! /// Refuses to delete anything under `/etc`.
//! struct GuardEtc;
//!
//! impl Hook for GuardEtc {
//!     fn before_tool<'a>(
//!         &'a self,
//!         _ctx: &'a HookContext,
//!         call: &'a mut ToolInvocation,
//!     ) -> BoxFuture<'a, Result<BeforeTool, HookStop>> {
//!         Box::pin(async move {
//!             let path = call.arguments()["path"].as_str().unwrap_or_default();
//!             Ok(if call.tool() == "delete" && path.starts_with("/etc") {
//!                 BeforeTool::Deny(format!("`{path}` is a system path; leave it alone"))
//!             } else {
//!                 BeforeTool::Continue
//!             })
//!         })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
//! let delete = ToolDefinition::new("delete", "Delete a file.",
//!     json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
//!     handler_fn(|_, _| async { Ok(ToolOutput::text("deleted")) }));
//! let model = TestModel::new()
//!     .then_call("delete", json!({"path": "/etc/passwd"}))
//!     .then_reply("I left it.");
//! let agent = Agent::builder().model(model.clone()).tool(delete).hook(GuardEtc).build()?;
//! agent.run("Clean up").await?;
//! let seen = &model.requests()[1].messages[2];
//! assert!(matches!(seen, harnessx::Message::Tool { content, is_error: true, .. }
//!     if content == "`/etc/passwd` is a system path; leave it alone"));
//! # Ok(()) }
//! ```

mod chain;
mod usage;

use std::sync::Arc;

use serde_json::Value;

pub(crate) use chain::Hooks;
pub use usage::{RunUsage, UsageLimit, UsageLimits};

use crate::model::{ModelError, ModelRequest, ModelResponse};
use crate::output::{ToolOutput, ToolResult};
use crate::registry::RegisteredTool;
use crate::tool::{BoxFuture, ToolDefinition};

/// Middleware around each model request and each tool call. Every method has a default that
/// changes nothing, so a hook implements only the stages it cares about.
///
/// Methods return a boxed future (`Box::pin(async move { .. })`) so hooks can be stored as
/// `Arc<dyn Hook>`. Returning `Err(HookStop)` from any of them ends the run with
/// [`AgentError::HookStopped`](crate::AgentError::HookStopped) (or
/// [`AgentError::UsageLimitExceeded`](crate::AgentError::UsageLimitExceeded) for a
/// [`HookStop::usage_limit`]).
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use harnessx::hooks::{Hook, HookContext, HookStop};
/// use harnessx::{Agent, BoxFuture, ModelResponse};
/// use harnessx::model::TestModel;
///
/// /// Counts model turns and shouts every answer.
/// #[derive(Default)]
/// struct Shout(AtomicUsize);
///
/// impl Hook for Shout {
///     fn after_model<'a>(
///         &'a self,
///         _ctx: &'a HookContext,
///         response: &'a mut ModelResponse,
///     ) -> BoxFuture<'a, Result<(), HookStop>> {
///         self.0.fetch_add(1, Ordering::SeqCst);
///         response.content = response.content.to_uppercase();
///         Box::pin(async { Ok(()) })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
/// let shout = std::sync::Arc::new(Shout::default());
/// let agent = Agent::builder()
///     .model(TestModel::new().then_reply("hello"))
///     .hook(shout.clone())
///     .build()?;
/// assert_eq!(agent.run("Hi").await?.output, "HELLO");
/// assert_eq!(shout.0.load(Ordering::SeqCst), 1);
/// # Ok(()) }
/// ```
pub trait Hook: Send + Sync + 'static {
    /// The name errors use for this hook (default: its type's name).
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// Before a model request: change `request`, answer it without asking the model, or stop.
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        request: &'a mut ModelRequest,
    ) -> BoxFuture<'a, Result<BeforeModel, HookStop>> {
        let _ = (ctx, request);
        Box::pin(std::future::ready(Ok(BeforeModel::Continue)))
    }

    /// After the model answered (or a hook answered for it): change the response, or stop.
    /// `ctx.usage` already counts this response's tokens.
    fn after_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        response: &'a mut ModelResponse,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        let _ = (ctx, response);
        Box::pin(std::future::ready(Ok(())))
    }

    /// The model request failed (after the model's own retries and fallbacks): answer in its
    /// place with `Ok(Some(response))`, let the error end the run with `Ok(None)`, or stop.
    /// The first hook that answers ends the chain; [`after_model`](Self::after_model) then runs
    /// on its answer, and a streamed run reports its text as one text delta.
    fn on_model_error<'a>(
        &'a self,
        ctx: &'a HookContext,
        error: &'a ModelError,
    ) -> BoxFuture<'a, Result<Option<ModelResponse>, HookStop>> {
        let _ = (ctx, error);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Before a tool call runs: change its arguments ([`ToolInvocation::arguments_mut`]), deny it,
    /// answer it without running the tool, or stop.
    fn before_tool<'a>(
        &'a self,
        ctx: &'a HookContext,
        call: &'a mut ToolInvocation,
    ) -> BoxFuture<'a, Result<BeforeTool, HookStop>> {
        let _ = (ctx, call);
        Box::pin(std::future::ready(Ok(BeforeTool::Continue)))
    }

    /// After a call produced a successful result: change it, or stop.
    fn after_tool<'a>(
        &'a self,
        ctx: &'a HookContext,
        call: &'a ToolInvocation,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        let _ = (ctx, call, result);
        Box::pin(std::future::ready(Ok(())))
    }

    /// After a call produced an error result (denied, failed, timed out, crashed): change it,
    /// or stop.
    fn on_tool_error<'a>(
        &'a self,
        ctx: &'a HookContext,
        call: &'a ToolInvocation,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        let _ = (ctx, call, result);
        Box::pin(std::future::ready(Ok(())))
    }
}

impl<H: Hook + ?Sized> Hook for Arc<H> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        request: &'a mut ModelRequest,
    ) -> BoxFuture<'a, Result<BeforeModel, HookStop>> {
        (**self).before_model(ctx, request)
    }

    fn after_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        response: &'a mut ModelResponse,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        (**self).after_model(ctx, response)
    }

    fn on_model_error<'a>(
        &'a self,
        ctx: &'a HookContext,
        error: &'a ModelError,
    ) -> BoxFuture<'a, Result<Option<ModelResponse>, HookStop>> {
        (**self).on_model_error(ctx, error)
    }

    fn before_tool<'a>(
        &'a self,
        ctx: &'a HookContext,
        call: &'a mut ToolInvocation,
    ) -> BoxFuture<'a, Result<BeforeTool, HookStop>> {
        (**self).before_tool(ctx, call)
    }

    fn after_tool<'a>(
        &'a self,
        ctx: &'a HookContext,
        call: &'a ToolInvocation,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        (**self).after_tool(ctx, call, result)
    }

    fn on_tool_error<'a>(
        &'a self,
        ctx: &'a HookContext,
        call: &'a ToolInvocation,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        (**self).on_tool_error(ctx, call, result)
    }
}

/// Where a hook is called from: the model turn and what the run has used so far.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HookContext {
    /// The model turn (1-based); `None` for a tool call executed outside an agent's loop.
    pub turn: Option<usize>,
    /// What the run has used, this step included: in a model hook, `model_requests` counts this
    /// request (and, after it, `input_tokens`/`output_tokens` its tokens); in a tool hook,
    /// `tool_calls` counts this call.
    pub usage: RunUsage,
    /// Whether the run is durable (journaled).
    pub durable: bool,
}

impl HookContext {
    /// A context for `turn` with `usage` (for calling a hook's methods in its own tests).
    ///
    /// ```
    /// use harnessx::hooks::{HookContext, RunUsage};
    /// let ctx = HookContext::new(Some(1), RunUsage { model_requests: 1, ..RunUsage::default() });
    /// assert!(!ctx.durable);
    /// ```
    pub fn new(turn: Option<usize>, usage: RunUsage) -> Self {
        Self {
            turn,
            usage,
            durable: false,
        }
    }
}

/// What [`Hook::before_model`] decided.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BeforeModel {
    /// Go on (with the request as the hook left it).
    Continue,
    /// Use this response instead of asking the model; later hooks' `before_model` do not run.
    /// A streamed run reports its text as one text delta.
    Respond(ModelResponse),
}

/// What [`Hook::before_tool`] decided.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BeforeTool {
    /// Go on (with the arguments as the hook left them).
    Continue,
    /// Do not run the tool: the model gets an error result with this reason (say what to do
    /// instead), of kind [`ToolErrorKind::PermissionDenied`](crate::ToolErrorKind::PermissionDenied).
    /// Later hooks' `before_tool` do not run.
    Deny(String),
    /// Do not run the tool: the model gets this output as the call's result. Later hooks'
    /// `before_tool` do not run.
    Respond(ToolOutput),
}

/// A tool call as hooks see it: the registered tool it resolved to and its parsed arguments.
#[derive(Debug, Clone)]
pub struct ToolInvocation {
    call_id: String,
    tool: Arc<RegisteredTool>,
    arguments: Value,
    original: Value,
}

impl ToolInvocation {
    pub(crate) fn new(call_id: &str, tool: Arc<RegisteredTool>, arguments: Value) -> Self {
        Self {
            call_id: call_id.to_owned(),
            tool,
            original: arguments.clone(),
            arguments,
        }
    }

    /// The call id the model gave.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The registered name of the tool (after name repair).
    pub fn tool(&self) -> &str {
        &self.tool.definition.name
    }

    /// The tool's definition: its schema, permission, replay policy, ...
    pub fn definition(&self) -> &ToolDefinition {
        &self.tool.definition
    }

    /// The arguments (a JSON object that passed the schema, unless a hook changed them since).
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The arguments, to change. Changed arguments are validated against the tool's schema
    /// again, and the permission check sees them as changed.
    pub fn arguments_mut(&mut self) -> &mut Value {
        &mut self.arguments
    }

    /// Whether a hook changed the arguments the model sent.
    pub fn arguments_changed(&self) -> bool {
        self.arguments != self.original
    }

    pub(crate) fn registered(&self) -> &Arc<RegisteredTool> {
        &self.tool
    }
}

/// A hook's decision to end the run.
///
/// ```
/// use harnessx::hooks::{HookStop, UsageLimit};
/// let stop = HookStop::new("the user's account is suspended");
/// assert_eq!(stop.to_string(), "the user's account is suspended");
/// let over = HookStop::usage_limit(UsageLimit::ToolCalls, 3, 4);
/// assert_eq!(over.usage_limit_exceeded(), Some((UsageLimit::ToolCalls, 3, 4)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookStop {
    hook: Option<String>,
    kind: StopKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum StopKind {
    Reason(String),
    Usage {
        limit: UsageLimit,
        max: u64,
        reached: u64,
    },
}

impl HookStop {
    /// Stop the run for `reason` (say why, for the person reading the error).
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            hook: None,
            kind: StopKind::Reason(reason.into()),
        }
    }

    /// Stop the run because `limit` came to `reached`, over its maximum `max`. The run ends
    /// with [`AgentError::UsageLimitExceeded`](crate::AgentError::UsageLimitExceeded).
    pub fn usage_limit(limit: UsageLimit, max: u64, reached: u64) -> Self {
        Self {
            hook: None,
            kind: StopKind::Usage {
                limit,
                max,
                reached,
            },
        }
    }

    /// The limit, its maximum and the value reached, for a usage-limit stop.
    pub fn usage_limit_exceeded(&self) -> Option<(UsageLimit, u64, u64)> {
        match self.kind {
            StopKind::Usage {
                limit,
                max,
                reached,
            } => Some((limit, max, reached)),
            StopKind::Reason(_) => None,
        }
    }

    /// The name of the hook that stopped the run, once the chain has recorded it.
    pub fn hook(&self) -> Option<&str> {
        self.hook.as_deref()
    }

    /// Records which hook stopped (kept when already set).
    pub(crate) fn by(mut self, hook: &str) -> Self {
        self.hook.get_or_insert_with(|| hook.to_owned());
        self
    }
}

impl std::fmt::Display for HookStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            StopKind::Reason(reason) => f.write_str(reason),
            StopKind::Usage {
                limit,
                max,
                reached,
            } => write!(
                f,
                "the usage limit `{limit}` was passed: {reached}, over the limit of {max}"
            ),
        }
    }
}

impl From<HookStop> for crate::AgentError {
    fn from(stop: HookStop) -> Self {
        match stop.kind {
            StopKind::Usage {
                limit,
                max,
                reached,
            } => Self::UsageLimitExceeded {
                limit,
                max,
                reached,
            },
            StopKind::Reason(reason) => Self::HookStopped {
                hook: stop.hook.unwrap_or_else(|| "unnamed".to_owned()),
                reason,
            },
        }
    }
}
