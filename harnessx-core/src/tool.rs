//! The tool model: what a tool is ([`ToolDefinition`]) and the metadata that governs how it runs.

pub(crate) mod blocking;
pub(crate) mod handler;
mod options;
mod timeout;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use handler::{
    BoxFuture, IntoToolHandler, IntoToolOutput, ToolHandler, handler_fn, sync_handler_fn,
};
pub use options::ToolOptions;
pub use timeout::IntoTimeout;

use crate::output::ToolOutput;

/// How a tool call is cleared to run. See the precedence rules on
/// [`PermissionManager`](crate::PermissionManager).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionLevel {
    /// Run without asking.
    Allow,
    /// Run only after an approval callback (or an earlier session grant) allows it.
    Ask,
    /// Never run; the model gets the error result "Permission denied".
    Deny,
}

impl PermissionLevel {
    /// The lowercase name: `"allow"`, `"ask"` or `"deny"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

impl fmt::Display for PermissionLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionLevel {
    type Err = ParseLevelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "allow" => Ok(Self::Allow),
            "ask" => Ok(Self::Ask),
            "deny" => Ok(Self::Deny),
            _ => Err(ParseLevelError {
                what: "permission",
                value: s.to_owned(),
                expected: "\"allow\", \"ask\" or \"deny\"",
            }),
        }
    }
}

/// Whether an interrupted or failed call may be run again.
///
/// `Safe` and `Idempotent` tools may be retried under their [`ToolRetry`]; a `Manual` tool is
/// never re-run by the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayPolicy {
    /// Repeating the call has no effect beyond the first run (a read, a pure computation).
    Safe,
    /// The integration itself enforces idempotency (for example with an idempotency key).
    Idempotent,
    /// The outcome of an interrupted call is unknown; never repeat it automatically.
    #[default]
    Manual,
}

impl ReplayPolicy {
    /// The string form the spec stores: `"safe"`, `"idempotent"` or `"manual"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "safe",
            Self::Idempotent => "idempotent",
            Self::Manual => "manual",
        }
    }

    /// True for `Safe` and `Idempotent`: the policies under which [`ToolRetry`] applies.
    pub fn allows_retry(self) -> bool {
        !matches!(self, Self::Manual)
    }
}

impl fmt::Display for ReplayPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReplayPolicy {
    type Err = ParseLevelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "safe" => Ok(Self::Safe),
            "idempotent" => Ok(Self::Idempotent),
            "manual" => Ok(Self::Manual),
            _ => Err(ParseLevelError {
                what: "replay_policy",
                value: s.to_owned(),
                expected: "\"safe\", \"idempotent\" or \"manual\"",
            }),
        }
    }
}

impl TryFrom<&str> for ReplayPolicy {
    type Error = ParseLevelError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// A string that is not a valid [`PermissionLevel`] or [`ReplayPolicy`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{value}` is not recognised; use {expected}")]
pub struct ParseLevelError {
    what: &'static str,
    value: String,
    expected: &'static str,
}

/// Retry policy for a tool: how often and how patiently a transient failure is retried.
///
/// It applies only to tools whose [`ReplayPolicy`] is `Safe` or `Idempotent`, and only when the
/// handler returns [`ToolError::Transient`](crate::ToolError::Transient) or the tool's
/// `retry_if_result` predicate asks for it.
///
/// ```
/// use harnessx::ToolRetry;
/// use std::time::Duration;
/// let retry = ToolRetry { max_attempts: 5, initial_backoff: Duration::from_millis(100), ..ToolRetry::default() };
/// assert_eq!(retry.backoff_for(2), Duration::from_millis(200));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolRetry {
    /// Total attempts including the first one (1 means never retry).
    pub max_attempts: u32,
    /// Wait before the second attempt.
    #[serde(with = "duration_secs")]
    pub initial_backoff: Duration,
    /// Factor applied to the wait after each attempt.
    pub multiplier: f64,
    /// Upper bound for one wait.
    #[serde(with = "duration_secs")]
    pub max_backoff: Duration,
}

impl Default for ToolRetry {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(500),
            multiplier: 2.0,
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl ToolRetry {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The wait after failed attempt number `attempt` (1-based).
    pub fn backoff_for(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(30) as i32;
        let secs = self.initial_backoff.as_secs_f64() * self.multiplier.max(1.0).powi(exp);
        Duration::from_secs_f64(secs.min(self.max_backoff.as_secs_f64()).max(0.0))
    }
}

/// Seconds as a [`Duration`] without panicking: zero for NaN and anything not above zero (which
/// registration refuses as a timeout), [`Duration::MAX`] for values too large to represent.
pub(crate) fn duration_from_secs(seconds: f64) -> Duration {
    if seconds.is_nan() || seconds <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

pub(crate) mod duration_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

/// MCP-style behaviour hints. They inform clients and UIs; they are not enforced. Built with
/// [`new`](Self::new) and the `with_*` methods (it will gain fields).
///
/// ```
/// use harnessx::ToolAnnotations;
/// let hints = ToolAnnotations::new().with_title("Read a file").with_read_only_hint(true);
/// assert_eq!(hints.read_only_hint, Some(true));
/// assert_eq!(hints.destructive_hint, None); // unset hints stay unsaid
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling the tool again with the same arguments has no additional effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// No hints: every one unset.
    pub fn new() -> Self {
        Self::default()
    }

    /// With this human-readable title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With the hint that the tool does (or does not) modify its environment.
    pub fn with_read_only_hint(mut self, read_only: bool) -> Self {
        self.read_only_hint = Some(read_only);
        self
    }

    /// With the hint that the tool may (or may not) perform destructive updates.
    pub fn with_destructive_hint(mut self, destructive: bool) -> Self {
        self.destructive_hint = Some(destructive);
        self
    }

    /// With the hint that calling again with the same arguments has (or has not) no further
    /// effect.
    pub fn with_idempotent_hint(mut self, idempotent: bool) -> Self {
        self.idempotent_hint = Some(idempotent);
        self
    }

    /// With the hint that the tool does (or does not) reach an open world of external entities.
    pub fn with_open_world_hint(mut self, open_world: bool) -> Self {
        self.open_world_hint = Some(open_world);
        self
    }
}

/// A predicate over a successful output that asks for another attempt (for example an HTTP 503
/// body). It obeys the same replay-policy rule as [`ToolRetry`].
pub type RetryIfResult = Arc<dyn Fn(&ToolOutput) -> bool + Send + Sync>;

/// A registered name, description, input schema and execution policy, plus the handler that
/// performs the operation.
///
/// Build one with [`ToolDefinition::new`] or get one from a `#[tool]` function through
/// [`IntoTool`]. Registering a definition copies its schema and metadata and keeps its handler.
///
/// ```
/// use harnessx::{ToolDefinition, ToolOutput, ReplayPolicy, handler_fn};
/// use serde_json::json;
///
/// let def = ToolDefinition::new(
///     "echo",
///     "Return the text unchanged.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
///     handler_fn(|args, _ctx| async move { Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default())) }),
/// )
/// .with_replay_policy(ReplayPolicy::Safe);
/// assert_eq!(def.name, "echo");
/// assert!(def.concurrent);
/// assert_eq!(def.replay_policy.as_str(), "safe");
/// ```
///
/// It is built with [`new`](Self::new) and the `with_*` methods (it will gain fields).
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The name the model calls.
    pub name: String,
    /// What the tool does, its limits, and how to get more output.
    pub description: String,
    /// The JSON Schema of the arguments; its root is always an object schema.
    pub input_schema: Value,
    /// The tool's own permission; `None` inherits the permission manager's default.
    pub permission: Option<PermissionLevel>,
    /// Whether calls may overlap with other calls in the same turn (default `true`).
    pub concurrent: bool,
    /// Whether the runtime may repeat the call (default [`ReplayPolicy::Manual`]).
    pub replay_policy: ReplayPolicy,
    /// The tool's own time limit; `None` takes the registry's effective default.
    pub timeout: Option<Duration>,
    /// The tool's own retry policy; `None` takes the registry's effective default.
    pub retry: Option<ToolRetry>,
    /// Retry when a successful output matches this predicate.
    pub retry_if_result: Option<RetryIfResult>,
    /// MCP-style hints.
    pub annotations: ToolAnnotations,
    /// The operation.
    pub handler: Arc<dyn ToolHandler>,
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("input_schema", &self.input_schema)
            .field("permission", &self.permission)
            .field("concurrent", &self.concurrent)
            .field("replay_policy", &self.replay_policy)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("retry_if_result", &self.retry_if_result.is_some())
            .field("annotations", &self.annotations)
            .finish_non_exhaustive()
    }
}

impl ToolDefinition {
    /// A definition with the default metadata: inherited permission, concurrent, manual replay,
    /// inherited timeout and retry. The handler is a plain `async fn(args) -> Result<T, E>`
    /// (or a sync `fn`, or either taking a [`ToolContext`](crate::ToolContext) second), or a
    /// [`ToolHandler`]; see [`IntoToolHandler`].
    ///
    /// ```
    /// use harnessx::{ToolDefinition, ToolError};
    /// use serde_json::{Value, json};
    ///
    /// fn shout(args: Value) -> Result<String, ToolError> {
    ///     let text = args["text"].as_str().ok_or_else(|| ToolError::invalid_arguments("`text` must be a string"))?;
    ///     Ok(text.to_uppercase())
    /// }
    ///
    /// let def = ToolDefinition::new("shout", "Uppercase text.", json!({"type": "object"}), shout);
    /// assert_eq!(def.name, "shout");
    /// ```
    pub fn new<M>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl IntoToolHandler<M>,
    ) -> Self {
        let handler = handler.into_tool_handler();
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            permission: None,
            concurrent: true,
            replay_policy: ReplayPolicy::Manual,
            timeout: None,
            retry: None,
            retry_if_result: None,
            annotations: ToolAnnotations::default(),
            handler,
        }
    }

    /// Sets the permission.
    pub fn with_permission(mut self, level: PermissionLevel) -> Self {
        self.permission = Some(level);
        self
    }

    /// Sets whether calls may overlap.
    pub fn with_concurrent(mut self, concurrent: bool) -> Self {
        self.concurrent = concurrent;
        self
    }

    /// Sets the replay policy.
    pub fn with_replay_policy(mut self, policy: ReplayPolicy) -> Self {
        self.replay_policy = policy;
        self
    }

    /// Sets the tool's own time limit: seconds as an integer or a float (`120`, `2.5`), or a
    /// [`Duration`] (see [`IntoTimeout`]). A value that is not a positive time (zero,
    /// negative, NaN) is refused when the tool is registered; a value too large for a
    /// [`Duration`] means "no practical limit".
    ///
    /// ```
    /// # use harnessx::{ToolDefinition, ToolOutput, handler_fn};
    /// # use std::time::Duration;
    /// # let def = ToolDefinition::new("t", "T.", serde_json::json!({"type": "object"}),
    /// #     handler_fn(|_, _| async { Ok(ToolOutput::text("ok")) }));
    /// let def = def.with_timeout_seconds(120);
    /// assert_eq!(def.timeout, Some(Duration::from_secs(120)));
    /// ```
    pub fn with_timeout_seconds(mut self, seconds: impl IntoTimeout) -> Self {
        self.timeout = Some(seconds.into_timeout());
        self
    }

    /// Sets the tool's own retry policy.
    pub fn with_retry(mut self, retry: ToolRetry) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Asks for another attempt when a successful output matches `predicate` (for example an
    /// HTTP 503 body), under the same replay-policy rule as [`ToolRetry`].
    ///
    /// ```
    /// # use harnessx::{ToolDefinition, ToolOutput, handler_fn};
    /// # let def = ToolDefinition::new("t", "T.", serde_json::json!({"type": "object"}),
    /// #     handler_fn(|_, _| async { Ok(ToolOutput::text("ok")) }));
    /// let def = def.with_retry_if_result(|output| output.content.contains("503"));
    /// assert!(def.retry_if_result.is_some());
    /// ```
    pub fn with_retry_if_result(
        mut self,
        predicate: impl Fn(&ToolOutput) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_if_result = Some(Arc::new(predicate));
        self
    }

    /// Sets the MCP-style annotations.
    ///
    /// ```
    /// # use harnessx::{ToolAnnotations, ToolDefinition, ToolOutput, handler_fn};
    /// # let def = ToolDefinition::new("t", "T.", serde_json::json!({"type": "object"}),
    /// #     handler_fn(|_, _| async { Ok(ToolOutput::text("ok")) }));
    /// let def = def.with_annotations(ToolAnnotations::new().with_read_only_hint(true));
    /// assert_eq!(def.annotations.read_only_hint, Some(true));
    /// ```
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Applies registration options: only what the options specify changes.
    pub fn apply(mut self, options: &ToolOptions) -> Self {
        options.apply_to(&mut self);
        self
    }

    /// The provider-neutral schema triple the model sees.
    pub fn params(&self) -> ToolParams {
        ToolParams {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
        }
    }
}

/// The provider-neutral view of a tool: `{name, description, input_schema}`.
///
/// Convert it to a provider's wire format with the functions in [`crate::schema::export`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolParams {
    /// The tool name.
    pub name: String,
    /// The tool description.
    pub description: String,
    /// The JSON Schema of the arguments (root object).
    pub input_schema: Value,
}

/// Anything that can become a [`ToolDefinition`]: a `#[tool]` function, a definition, or a
/// reference to one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "expected a `#[tool]` function or a `ToolDefinition`",
    note = "annotate the function with `#[harnessx::tool]`, or build a `ToolDefinition` with `ToolDefinition::new`"
)]
pub trait IntoTool {
    /// Builds the definition.
    fn into_tool(self) -> ToolDefinition;
}

impl IntoTool for ToolDefinition {
    fn into_tool(self) -> ToolDefinition {
        self
    }
}

impl IntoTool for &ToolDefinition {
    fn into_tool(self) -> ToolDefinition {
        self.clone()
    }
}
