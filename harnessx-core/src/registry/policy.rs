//! Registry-wide policy: default timeout, deduplication, retry and the result cap.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tool::ToolRetry;

/// The default time limit of a tool that declares none: 25 seconds.
pub const DEFAULT_TOOL_TIMEOUT_SECONDS: f64 = 25.0;

/// The default cap on one result's text: 64 KB.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 64 * 1024;

/// Registry-wide options an agent carries to the registry it adopts
/// (`AgentConfig::default().with_tools(ToolPolicy::new().with_default_timeout_seconds(60))`).
/// Built with [`new`](Self::new) and the `with_*` methods (it will gain fields).
///
/// Precedence, highest first: a value given to [`ToolRegistry::builder`](crate::ToolRegistry::builder),
/// the agent's `ToolPolicy`, then these defaults. Tools with their own timeout or retry keep it.
///
/// ```
/// use harnessx::{ToolPolicy, DEFAULT_TOOL_TIMEOUT_SECONDS};
/// let p = ToolPolicy::new().with_default_timeout_seconds(60).with_dedupe_calls(true);
/// assert_eq!(ToolPolicy::default().default_timeout_seconds, DEFAULT_TOOL_TIMEOUT_SECONDS);
/// assert!(p.dedupe_calls);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ToolPolicy {
    /// Time limit for tools without their own.
    pub default_timeout_seconds: f64,
    /// Identical calls (same name, canonically equal arguments) within one run return the first
    /// result without running the tool again.
    pub dedupe_calls: bool,
    /// Retry policy for tools without their own; `None` means [`ToolRetry::default`].
    pub retry: Option<ToolRetry>,
    /// The cap on one result's text, in bytes.
    pub max_result_bytes: usize,
    /// Time limits for named tools, in seconds. Unlike the default, one of these beats the
    /// tool's own limit: it is the operator's choice for a tool they run (a connector's calls,
    /// `run_bash`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_timeouts: BTreeMap<String, f64>,
}

impl Default for ToolPolicy {
    fn default() -> Self {
        Self {
            default_timeout_seconds: DEFAULT_TOOL_TIMEOUT_SECONDS,
            dedupe_calls: false,
            retry: None,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            tool_timeouts: BTreeMap::new(),
        }
    }
}

impl ToolPolicy {
    /// The default timeout as a duration. A value that is not a positive number of seconds
    /// (zero, negative, NaN) falls back to [`DEFAULT_TOOL_TIMEOUT_SECONDS`]; one too large for a
    /// [`Duration`] means "no practical limit".
    ///
    /// ```
    /// use harnessx::ToolPolicy;
    /// use std::time::Duration;
    /// let mut p = ToolPolicy::new();
    /// p.default_timeout_seconds = 0.0;
    /// assert_eq!(p.default_timeout(), Duration::from_secs(25));
    /// p.default_timeout_seconds = 1e300;
    /// assert_eq!(p.default_timeout(), Duration::MAX);
    /// ```
    pub fn default_timeout(&self) -> Duration {
        match crate::tool::duration_from_secs(self.default_timeout_seconds) {
            d if d.is_zero() => Duration::from_secs(DEFAULT_TOOL_TIMEOUT_SECONDS as u64),
            d => d,
        }
    }
}

impl ToolPolicy {
    /// The default policy: 25 seconds, no deduplication, the default retry, a 64 KB cap.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the time limit for tools without their own: seconds as an integer or a float
    /// (`60`, `2.5`), or a [`Duration`] (see [`IntoTimeout`](crate::IntoTimeout)).
    ///
    /// ```
    /// use harnessx::ToolPolicy;
    /// use std::time::Duration;
    /// let policy = ToolPolicy::new().with_default_timeout_seconds(60).with_dedupe_calls(true);
    /// assert_eq!(policy.default_timeout(), Duration::from_secs(60));
    /// assert!(policy.dedupe_calls);
    /// let policy = ToolPolicy::new().with_default_timeout_seconds(Duration::from_millis(2500));
    /// assert_eq!(policy.default_timeout_seconds, 2.5);
    /// ```
    pub fn with_default_timeout_seconds(mut self, seconds: impl crate::IntoTimeout) -> Self {
        self.default_timeout_seconds = seconds.into_timeout().as_secs_f64();
        self
    }

    /// Sets whether identical calls within one run return the first result.
    pub fn with_dedupe_calls(mut self, dedupe: bool) -> Self {
        self.dedupe_calls = dedupe;
        self
    }

    /// Sets the retry policy for tools without their own.
    pub fn with_retry(mut self, retry: ToolRetry) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Sets the cap on one result's text, in bytes.
    pub fn with_max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Sets the time limit of the tool named `tool`, beating its own.
    ///
    /// ```
    /// use harnessx::{ToolDefinition, ToolPolicy, ToolRegistry, handler_fn, ToolOutput};
    /// use std::time::Duration;
    /// let registry = ToolRegistry::new();
    /// registry.inherit_policy(ToolPolicy::new().with_tool_timeout_seconds("run_report", 4));
    /// let def = ToolDefinition::new("run_report", "Run the report.", serde_json::json!({"type": "object"}),
    ///     handler_fn(|_, _| async { Ok(ToolOutput::text("ok")) }))
    ///     .with_timeout_seconds(300);
    /// assert_eq!(registry.effective_timeout(&def), Duration::from_secs(4));
    /// ```
    pub fn with_tool_timeout_seconds(
        mut self,
        tool: impl Into<String>,
        seconds: impl crate::IntoTimeout,
    ) -> Self {
        self.tool_timeouts
            .insert(tool.into(), seconds.into_timeout().as_secs_f64());
        self
    }
}

/// The effective policy in the form each call reads it: resolved when the policy changes, not per
/// call, with the default timeout already a [`Duration`] and the retry policy settled.
#[derive(Debug, Clone)]
pub(crate) struct CallPolicy {
    pub default_timeout: Duration,
    pub dedupe_calls: bool,
    pub retry: ToolRetry,
    pub max_result_bytes: usize,
    /// The limits of named tools; `None` when there are none, so a call looks nothing up.
    pub tool_timeouts: Option<Arc<HashMap<String, Duration>>>,
}

impl CallPolicy {
    /// The time limit of a call of `def`: the policy's for its name, else its own, else the
    /// default.
    pub(crate) fn timeout_for(&self, def: &crate::ToolDefinition) -> Duration {
        self.tool_timeouts
            .as_ref()
            .and_then(|limits| limits.get(&def.name).copied())
            .or(def.timeout)
            .unwrap_or(self.default_timeout)
    }
}

impl From<&ToolPolicy> for CallPolicy {
    fn from(policy: &ToolPolicy) -> Self {
        let tool_timeouts = (!policy.tool_timeouts.is_empty()).then(|| {
            Arc::new(
                policy
                    .tool_timeouts
                    .iter()
                    .map(|(name, &secs)| (name.clone(), crate::tool::duration_from_secs(secs)))
                    .collect(),
            )
        });
        Self {
            default_timeout: policy.default_timeout(),
            dedupe_calls: policy.dedupe_calls,
            retry: policy.retry.unwrap_or_default(),
            max_result_bytes: policy.max_result_bytes,
            tool_timeouts,
        }
    }
}

/// Values given explicitly to the registry's builder; they beat the agent's policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct PolicyOverrides {
    pub default_timeout_seconds: Option<f64>,
    pub dedupe_calls: Option<bool>,
    pub retry: Option<ToolRetry>,
    pub max_result_bytes: Option<usize>,
}

impl PolicyOverrides {
    /// Resolves the effective policy over what the agent supplied (if anything).
    pub(crate) fn resolve(&self, inherited: Option<&ToolPolicy>) -> ToolPolicy {
        let base = inherited.cloned().unwrap_or_default();
        ToolPolicy {
            default_timeout_seconds: self
                .default_timeout_seconds
                .unwrap_or(base.default_timeout_seconds),
            dedupe_calls: self.dedupe_calls.unwrap_or(base.dedupe_calls),
            retry: Some(self.retry.or(base.retry).unwrap_or_default()),
            max_result_bytes: self.max_result_bytes.unwrap_or(base.max_result_bytes),
            tool_timeouts: base.tool_timeouts,
        }
    }
}
