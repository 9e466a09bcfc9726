//! The registry: which tools exist, under which names, with which policy.

mod batch;
pub(crate) mod lane;
pub(crate) mod names;
mod policy;

use std::future::Future;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde_json::Value;

pub use lane::SerialLane;
pub(crate) use policy::{CallPolicy, PolicyOverrides};
pub use policy::{DEFAULT_MAX_RESULT_BYTES, DEFAULT_TOOL_TIMEOUT_SECONDS, ToolPolicy};

use crate::context::{Extensions, StateMap};
use crate::error::RegistryError;
use crate::sandbox::Sandbox;
use crate::schema::CompiledSchema;
use crate::tool::{BoxFuture, IntoTool, ToolDefinition, ToolOptions, ToolParams};

/// A registered tool: its definition plus the input schema compiled once at registration.
#[derive(Debug)]
pub struct RegisteredTool {
    pub(crate) definition: ToolDefinition,
    pub(crate) schema: CompiledSchema,
    /// The name, shared with every call's context instead of copied into it.
    pub(crate) name: Arc<str>,
}

impl RegisteredTool {
    /// The definition as registered.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }
}

/// The effective policy: as [`ToolRegistry::policy`] reports it, and as calls read it.
struct Effective {
    policy: ToolPolicy,
    calls: CallPolicy,
}

impl Effective {
    fn resolve(overrides: &PolicyOverrides, inherited: Option<&ToolPolicy>) -> Self {
        let policy = overrides.resolve(inherited);
        Self {
            calls: CallPolicy::from(&policy),
            policy,
        }
    }
}

type Closer = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

struct Inner {
    tools: RwLock<names::NameTable<Arc<RegisteredTool>>>,
    overrides: PolicyOverrides,
    /// The effective policy, resolved again whenever the agent's changes.
    effective: RwLock<Effective>,
    state: StateMap,
    /// The lane and the sandbox, behind one lock: every call's context takes both.
    bindings: RwLock<Bindings>,
    closers: Mutex<Vec<Closer>>,
}

/// The set of tools an agent exposes, and the engine that executes calls to them.
///
/// A `ToolRegistry` is a cheap handle: clones share the same tools, so passing a registry to an
/// agent attaches that same registry rather than a copy.
///
/// ```
/// use harnessx::{ToolRegistry, ToolOptions, handler_fn, ToolOutput};
/// use serde_json::json;
///
/// let registry = ToolRegistry::new();
/// let def = registry.register_with_schema(
///     "label",
///     "Uppercase a short label.",
///     json!({
///         "type": "object",
///         "properties": {"value": {"type": "string", "maxLength": 40}},
///         "required": ["value"],
///         "additionalProperties": false
///     }),
///     handler_fn(|args, _ctx| async move {
///         Ok(ToolOutput::text(args["value"].as_str().unwrap_or_default().to_uppercase()))
///     }),
///     ToolOptions::new(),
/// )?;
/// assert_eq!(def.name, "label");
/// assert_eq!(registry.list_tools(), vec!["label".to_string()]);
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct ToolRegistry {
    inner: Arc<Inner>,
}

/// What a registry binds its calls to: the serial lane and the sandbox, and the extensions its
/// calls' contexts start from (holding the lane).
#[derive(Clone)]
pub(crate) struct Bindings {
    pub(crate) lane: SerialLane,
    pub(crate) sandbox: Option<Arc<dyn Sandbox>>,
    pub(crate) extensions: Extensions,
}

impl Bindings {
    fn on_lane(lane: SerialLane, sandbox: Option<Arc<dyn Sandbox>>) -> Self {
        let extensions = Extensions::new().with(lane.clone());
        Self {
            lane,
            sandbox,
            extensions,
        }
    }
}

impl Default for Bindings {
    fn default() -> Self {
        Self::on_lane(SerialLane::default(), None)
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.list_tools())
            .field("policy", &self.policy())
            .finish_non_exhaustive()
    }
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

/// A weak handle to a [`ToolRegistry`], made with [`ToolRegistry::downgrade`].
///
/// ```
/// use harnessx::ToolRegistry;
/// let registry = ToolRegistry::new();
/// let weak = registry.downgrade();
/// assert!(weak.upgrade().is_some());
/// drop(registry);
/// assert!(weak.upgrade().is_none());
/// ```
#[derive(Clone)]
pub struct WeakToolRegistry {
    inner: Weak<Inner>,
}

impl std::fmt::Debug for WeakToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakToolRegistry")
    }
}

impl WeakToolRegistry {
    /// The registry, if it still exists.
    pub fn upgrade(&self) -> Option<ToolRegistry> {
        self.inner.upgrade().map(|inner| ToolRegistry { inner })
    }
}

/// Builds a [`ToolRegistry`] with explicit registry-wide options (the spec's
/// `ToolRegistry(default_timeout_seconds=, dedupe_calls=, retry=)`); these beat an agent's
/// [`ToolPolicy`].
#[derive(Debug, Default)]
pub struct ToolRegistryBuilder {
    overrides: PolicyOverrides,
}

impl ToolRegistryBuilder {
    /// Time limit for tools without their own: seconds as an integer or a float (`60`, `2.5`),
    /// or a [`Duration`] (see [`IntoTimeout`](crate::IntoTimeout)). A value that is not a
    /// positive time falls back to [`DEFAULT_TOOL_TIMEOUT_SECONDS`].
    ///
    /// ```
    /// use harnessx::ToolRegistry;
    /// let registry = ToolRegistry::builder().default_timeout_seconds(60).build();
    /// assert_eq!(registry.policy().default_timeout_seconds, 60.0);
    /// ```
    pub fn default_timeout_seconds(mut self, seconds: impl crate::IntoTimeout) -> Self {
        self.overrides.default_timeout_seconds = Some(seconds.into_timeout().as_secs_f64());
        self
    }
    /// Return the first result for identical calls within one run.
    pub fn dedupe_calls(mut self, dedupe: bool) -> Self {
        self.overrides.dedupe_calls = Some(dedupe);
        self
    }
    /// Retry policy for tools without their own.
    pub fn retry(mut self, retry: crate::ToolRetry) -> Self {
        self.overrides.retry = Some(retry);
        self
    }
    /// Cap on one result's text in bytes (default 64 KB).
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.overrides.max_result_bytes = Some(bytes);
        self
    }
    /// Builds the registry.
    pub fn build(self) -> ToolRegistry {
        ToolRegistry::with_overrides(self.overrides)
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ToolRegistry {
    /// An empty registry with default policy.
    pub fn new() -> Self {
        Self::with_overrides(PolicyOverrides::default())
    }

    /// A builder for explicit registry-wide options.
    pub fn builder() -> ToolRegistryBuilder {
        ToolRegistryBuilder::default()
    }

    fn with_overrides(overrides: PolicyOverrides) -> Self {
        Self {
            inner: Arc::new(Inner {
                tools: RwLock::default(),
                effective: RwLock::new(Effective::resolve(&overrides, None)),
                overrides,
                state: StateMap::default(),
                bindings: RwLock::default(),
                closers: Mutex::default(),
            }),
        }
    }

    /// Whether two handles point at the same registry.
    pub fn same_registry(&self, other: &ToolRegistry) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A handle that does not keep the registry alive: for tool sources (an MCP connection's
    /// background refresh) whose handlers live inside the registry they update.
    pub fn downgrade(&self) -> WeakToolRegistry {
        WeakToolRegistry {
            inner: Arc::downgrade(&self.inner),
        }
    }

    // ----- registration ---------------------------------------------------------------------

    /// Registers a `#[tool]` function or a [`ToolDefinition`] and returns the definition as
    /// registered.
    pub fn register_tool(&self, tool: impl IntoTool) -> Result<ToolDefinition, RegistryError> {
        self.register_tool_with(tool, ToolOptions::new())
    }

    /// Registers with options; options override only what they specify.
    ///
    /// ```
    /// # use harnessx::{ToolRegistry, ToolDefinition, ToolOptions, PermissionLevel, ReplayPolicy, handler_fn, ToolOutput};
    /// # let registry = ToolRegistry::new();
    /// let def = ToolDefinition::new("q", "Query.", serde_json::json!({"type": "object"}),
    ///         handler_fn(|_, _| async { Ok(ToolOutput::text("ok")) }))
    ///     .with_permission(PermissionLevel::Ask)
    ///     .with_replay_policy(ReplayPolicy::Safe);
    /// let registered = registry.register_tool_with(def, ToolOptions::new().timeout_seconds(120))?;
    /// assert_eq!(registered.permission, Some(PermissionLevel::Ask)); // kept
    /// assert_eq!(registered.replay_policy, ReplayPolicy::Safe);      // kept
    /// assert_eq!(registered.timeout, Some(std::time::Duration::from_secs(120)));
    /// # Ok::<(), harnessx::RegistryError>(())
    /// ```
    pub fn register_tool_with(
        &self,
        tool: impl IntoTool,
        options: ToolOptions,
    ) -> Result<ToolDefinition, RegistryError> {
        let def = tool.into_tool().apply(&options);
        self.insert(def, options.replace)
    }

    /// Registers a handler with an explicit schema: `name`, `description`, `input_schema` and
    /// `handler` are positional, the rest are options. The handler is a plain
    /// `async fn(args) -> Result<T, E>` with `args` any `Deserialize` type, `T: Serialize` and
    /// `E: Display` (or a sync `fn`, or either taking a [`ToolContext`](crate::ToolContext)
    /// second), or a [`ToolHandler`](crate::ToolHandler); see [`IntoToolHandler`](crate::IntoToolHandler).
    pub fn register_with_schema<M>(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl crate::IntoToolHandler<M>,
        options: ToolOptions,
    ) -> Result<ToolDefinition, RegistryError> {
        let def = ToolDefinition::new(name, description, input_schema, handler);
        self.register_tool_with(def, options)
    }

    fn insert(&self, def: ToolDefinition, replace: bool) -> Result<ToolDefinition, RegistryError> {
        if !valid_name(&def.name) {
            return Err(RegistryError::InvalidName(def.name));
        }
        if def.timeout.is_some_and(|t| t.is_zero()) {
            return Err(RegistryError::InvalidTimeout(def.name));
        }
        let schema = CompiledSchema::compile(&def.name, &def.input_schema)?;
        let mut tools = self.write_tools();
        if !replace && tools.contains_key(&def.name) {
            return Err(RegistryError::Duplicate(def.name));
        }
        let out = def.clone();
        tools.insert(
            def.name.clone(),
            Arc::new(RegisteredTool {
                name: def.name.as_str().into(),
                definition: def,
                schema,
            }),
        );
        Ok(out)
    }

    /// Removes a tool; returns its definition if it was registered. Calls already in flight
    /// keep the definition they started with.
    pub fn unregister(&self, name: &str) -> Option<ToolDefinition> {
        self.write_tools()
            .shift_remove(name)
            .map(|t| t.definition.clone())
    }

    // ----- inspection -----------------------------------------------------------------------

    /// The definition registered under `name`.
    pub fn get_tool(&self, name: &str) -> Option<ToolDefinition> {
        self.read_tools().get(name).map(|t| t.definition.clone())
    }

    /// Whether a tool of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.read_tools().contains_key(name)
    }

    /// Registered names in registration order.
    pub fn list_tools(&self) -> Vec<String> {
        self.read_tools().keys().cloned().collect()
    }

    /// Provider-neutral `{name, description, input_schema}` for every tool, in registration order.
    pub fn get_tool_params(&self) -> Vec<ToolParams> {
        self.read_tools()
            .values()
            .map(|t| t.definition.params())
            .collect()
    }

    /// The number of registered tools.
    pub fn len(&self) -> usize {
        self.read_tools().len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.read_tools().is_empty()
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.read_tools().get(name).cloned()
    }

    pub(crate) fn snapshot(&self) -> Vec<Arc<RegisteredTool>> {
        self.read_tools().values().cloned().collect()
    }

    fn read_tools(&self) -> std::sync::RwLockReadGuard<'_, names::NameTable<Arc<RegisteredTool>>> {
        self.inner.tools.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_tools(
        &self,
    ) -> std::sync::RwLockWriteGuard<'_, names::NameTable<Arc<RegisteredTool>>> {
        self.inner.tools.write().unwrap_or_else(|p| p.into_inner())
    }

    // ----- policy ---------------------------------------------------------------------------

    /// The effective registry-wide values after precedence (constructor > agent > defaults).
    pub fn policy(&self) -> ToolPolicy {
        self.read_effective().policy.clone()
    }

    /// The effective policy as a call reads it: one read of a few words.
    pub(crate) fn call_policy(&self) -> CallPolicy {
        self.read_effective().calls.clone()
    }

    /// Supplies the agent's policy; values given to the builder still win.
    pub fn inherit_policy(&self, policy: ToolPolicy) {
        let effective = Effective::resolve(&self.inner.overrides, Some(&policy));
        *self
            .inner
            .effective
            .write()
            .unwrap_or_else(|p| p.into_inner()) = effective;
    }

    fn read_effective(&self) -> std::sync::RwLockReadGuard<'_, Effective> {
        self.inner
            .effective
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The time limit a tool gets: the policy's for its name
    /// ([`ToolPolicy::tool_timeouts`]), else its own, else the effective default.
    pub fn effective_timeout(&self, def: &ToolDefinition) -> Duration {
        self.call_policy().timeout_for(def)
    }

    // ----- shared state, lane, sandbox, lifecycle --------------------------------------------

    /// Makes `value` available to every handler as `State<T>`.
    pub fn insert_state<T: Send + Sync + 'static>(&self, value: T) {
        self.inner.state.insert(Arc::new(value));
    }

    /// The shared state of type `T` inserted with [`insert_state`](Self::insert_state), if any.
    ///
    /// ```
    /// use harnessx::ToolRegistry;
    /// let registry = ToolRegistry::new();
    /// registry.insert_state(42u32);
    /// assert_eq!(*registry.state::<u32>().unwrap(), 42);
    /// assert!(registry.state::<String>().is_none());
    /// ```
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<crate::State<T>> {
        self.inner.state.get::<T>().map(crate::State)
    }

    pub(crate) fn state_map(&self) -> StateMap {
        self.inner.state.clone()
    }

    /// The lane serial tools take turns on.
    pub fn serial_lane(&self) -> SerialLane {
        self.read_bindings().lane.clone()
    }

    /// Shares a serial lane with another registry (an agent and its specialists), so their
    /// serial tools take turns.
    pub fn set_serial_lane(&self, lane: SerialLane) {
        let mut bindings = self.write_bindings();
        *bindings = Bindings::on_lane(lane, bindings.sandbox.take());
    }

    /// The sandbox bound as the bash tool's engine, if any.
    pub fn sandbox(&self) -> Option<Arc<dyn Sandbox>> {
        self.read_bindings().sandbox.clone()
    }

    /// Binds a caller-owned sandbox.
    pub fn set_sandbox(&self, sandbox: Option<Arc<dyn Sandbox>>) {
        self.write_bindings().sandbox = sandbox;
    }

    /// The lane and the sandbox, read together.
    pub(crate) fn bindings(&self) -> Bindings {
        self.read_bindings().clone()
    }

    fn read_bindings(&self) -> std::sync::RwLockReadGuard<'_, Bindings> {
        self.inner
            .bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn write_bindings(&self) -> std::sync::RwLockWriteGuard<'_, Bindings> {
        self.inner
            .bindings
            .write()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Registers work to run on [`close`](Self::close) (closing connections, stopping servers).
    pub fn on_close<F, Fut>(&self, f: F)
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut c = self.inner.closers.lock().unwrap_or_else(|p| p.into_inner());
        c.push(Box::new(move || Box::pin(f())));
    }

    /// Releases tools and connections registered with [`on_close`](Self::on_close), once.
    pub async fn close(&self) {
        let closers: Vec<Closer> = {
            let mut c = self.inner.closers.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::take(&mut *c)
        };
        for close in closers {
            close().await;
        }
    }
}
