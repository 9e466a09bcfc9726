//! What the runtime hands a handler besides its arguments: [`ToolContext`] and shared [`State`].

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, RwLock};

use tokio_util::sync::CancellationToken;

mod cancel;
mod extensions;

pub(crate) use cancel::CallCancel;
pub use extensions::Extensions;

use crate::output::ToolError;
use crate::sandbox::Sandbox;

/// Per-call context injected into handlers. A `#[tool]` function receives it by declaring a
/// parameter of type `ToolContext`; such parameters never appear in the input schema.
#[derive(Clone)]
pub struct ToolContext {
    pub(crate) call_id: String,
    pub(crate) tool_name: Arc<str>,
    pub(crate) attempt: u32,
    pub(crate) cancel: Arc<CallCancel>,
    pub(crate) state: StateMap,
    pub(crate) sandbox: Option<Arc<dyn Sandbox>>,
    pub(crate) extensions: Extensions,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("attempt", &self.attempt)
            .field(
                "sandbox",
                &self.sandbox.as_ref().map(|s| s.name().to_owned()),
            )
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for calling a handler directly (tests, custom runtimes).
    pub fn new(call_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            tool_name: tool_name.into().into(),
            attempt: 1,
            cancel: Arc::default(),
            state: StateMap::default(),
            sandbox: None,
            extensions: Extensions::new(),
        }
    }

    /// What the layers above the tool handed it ([`Extensions`]): in the engine the
    /// registry's [`SerialLane`](crate::SerialLane) and the run's
    /// [`PermissionManager`](crate::PermissionManager), which a tool that runs other tools (a
    /// subagent) shares so serial tools take turns across both and inherit the agent's policy;
    /// in a durable run the call's [`DurableInput`](crate::journal::DurableInput), from which a
    /// tool that needs a person (like `ask_user`) reads the recorded answer, or whose
    /// [`ask`](crate::journal::DurableInput::ask) error pauses the run until one is given.
    ///
    /// ```
    /// use harnessx::{SerialLane, ToolContext};
    /// let ctx = ToolContext::new("c1", "search");
    /// assert!(ctx.extensions().get::<SerialLane>().is_none());
    /// let ctx = ctx.with_extension(SerialLane::new());
    /// assert!(ctx.extensions().get::<SerialLane>().is_some());
    /// ```
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// Adds a value to the context's [`extensions`](Self::extensions) (for tests and custom
    /// runtimes).
    pub fn with_extension<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions = self.extensions.with(value);
        self
    }

    /// The sandbox bound to the registry (see [`ToolRegistry::sandbox`](crate::ToolRegistry::sandbox)).
    /// Tools that run commands or touch files consult it.
    pub fn sandbox(&self) -> Option<&Arc<dyn Sandbox>> {
        self.sandbox.as_ref()
    }

    /// Sets the sandbox (for tests and custom runtimes).
    pub fn with_sandbox(mut self, sandbox: Option<Arc<dyn Sandbox>>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The id of the call being answered.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The registered name of the tool.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// Which attempt this is (1 for the first run, more under a retry policy).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Cancelled when the runtime stops waiting for this call (its timeout passed, the run ended,
    /// or the caller dropped the call). Long-running handlers should watch it and clean up (kill
    /// child processes, ...): [`CANCEL_GRACE`](crate::engine::CANCEL_GRACE) later, the handler's
    /// task is aborted.
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancel.token()
    }

    /// Shared state of type `T` registered on the registry, if any.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        self.state.get::<T>().map(State)
    }
}

/// Shared state (a database pool, an HTTP client, ...) registered once with
/// [`ToolRegistry::insert_state`](crate::ToolRegistry::insert_state) and injected into every
/// `#[tool]` function that declares a `State<T>` parameter.
///
/// ```
/// use harnessx::{State, ToolContext};
/// # let ctx = ToolContext::new("c1", "t");
/// let missing: Option<State<u32>> = ctx.state::<u32>();
/// assert!(missing.is_none());
/// ```
#[derive(Debug)]
pub struct State<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A type map of shared state, cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct StateMap(Arc<RwLock<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>);

impl std::fmt::Debug for StateMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateMap")
    }
}

impl StateMap {
    pub(crate) fn insert<T: Send + Sync + 'static>(&self, value: Arc<T>) {
        let mut map = self.0.write().unwrap_or_else(|p| p.into_inner());
        map.insert(TypeId::of::<T>(), value);
    }

    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let map = self.0.read().unwrap_or_else(|p| p.into_inner());
        map.get(&TypeId::of::<T>())
            .cloned()
            .and_then(|v| v.downcast::<T>().ok())
    }

    /// Adds every value of `other` whose type this map does not hold yet.
    pub(crate) fn inherit_from(&self, other: &StateMap) {
        if Arc::ptr_eq(&self.0, &other.0) {
            return;
        }
        let theirs = other.0.read().unwrap_or_else(|p| p.into_inner());
        let mut ours = self.0.write().unwrap_or_else(|p| p.into_inner());
        for (key, value) in theirs.iter() {
            ours.entry(*key).or_insert_with(|| Arc::clone(value));
        }
    }
}

/// A value of one run, given with [`RunRequest::deps`](crate::agent::RunRequest::deps) and
/// injected into every `#[tool]` function of that run that declares a `Deps<T>` parameter (as
/// Pydantic AI's `deps`): the user a request is made for, a transaction, a per-request client.
/// [`State<T>`] is the registry's, the same for every run.
///
/// ```
/// use harnessx::{Agent, Deps, TestModel, tool};
///
/// struct User { name: String }
///
/// /// Greet the user the run is for.
/// #[tool]
/// fn greet(user: Deps<User>) -> String {
///     format!("Hello, {}!", user.name)
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
/// let model = TestModel::new().then_call("greet", serde_json::json!({})).then_reply("{result}");
/// let agent = Agent::builder().model(model.clone()).tool(greet).build()?;
/// let user = User { name: "Ada".into() };
/// let result = agent.prompt("Say hello").deps(user).run().await?;
/// assert!(matches!(&result.messages[2], harnessx::Message::Tool { content, .. } if content == "Hello, Ada!"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Deps<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Clone for Deps<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: ?Sized> Deref for Deps<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A value the runtime can supply to a handler from its context instead of from the model's
/// arguments. Implemented for [`ToolContext`], [`State<T>`] and [`Deps<T>`].
///
/// `#[tool]` decides by this trait, not by a type's name, which parameters are context
/// parameters: a parameter whose type implements it is supplied by the runtime and left out of
/// the schema; any other parameter is sent by the model. Implement it for your own extractor:
///
/// ```
/// use harnessx::{FromToolContext, ToolContext, ToolError, ToolRegistry, tool};
///
/// /// The id of the call being answered.
/// struct CallId(String);
///
/// impl FromToolContext for CallId {
///     fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
///         Ok(CallId(ctx.call_id().to_owned()))
///     }
/// }
///
/// /// Echo the call id.
/// #[tool]
/// fn which(id: CallId) -> String {
///     id.0
/// }
///
/// let registry = ToolRegistry::new();
/// let def = registry.register_tool(which)?;
/// assert_eq!(def.input_schema["required"], serde_json::json!([]));
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected into a tool",
    label = "not a context parameter",
    note = "context parameters are `ToolContext`, `State<T>` and types implementing `FromToolContext`"
)]
pub trait FromToolContext: Sized {
    /// Extracts the value.
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError>;
}

impl FromToolContext for ToolContext {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.clone())
    }
}

impl<T: Send + Sync + 'static> FromToolContext for Deps<T> {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.extensions.get_arc::<T>().map(Deps).ok_or_else(|| {
            ToolError::failed(format!(
                "the tool `{}` needs the run's `{}`, but this run was not given one; the \
                 application must start the run with `agent.prompt(..).deps(..)`",
                ctx.tool_name,
                std::any::type_name::<T>()
            ))
        })
    }
}

impl<T: Send + Sync + 'static> FromToolContext for State<T> {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.state::<T>().ok_or_else(|| {
            ToolError::failed(format!(
                "the tool `{}` needs shared state of type `{}`, but none was registered; \
                 the application must call `registry.insert_state(..)` before running it",
                ctx.tool_name,
                std::any::type_name::<T>()
            ))
        })
    }
}
