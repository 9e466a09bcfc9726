//! Registry-wide policy: default timeout, deduplication, retry and the result cap.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tool::ToolRetry;

/// The default time limit of a tool that declares none: 25 seconds.
pub const DEFAULT_TOOL_TIMEOUT_SECONDS: f64 = 25.0;

/// The default cap on one result's text: 64 KB.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 64 * 1024;

/// Registry-wide options an agent carries to the registry it adopts
/// (`AgentConfig { tools: ToolPolicy { .. }, .. }`).
///
/// Precedence, highest first: a value given to [`ToolRegistry::builder`](crate::ToolRegistry::builder),
/// the agent's `ToolPolicy`, then these defaults. Tools with their own timeout or retry keep it.
///
/// ```
/// use harnessx::{ToolPolicy, DEFAULT_TOOL_TIMEOUT_SECONDS};
/// let p = ToolPolicy { default_timeout_seconds: 60.0, dedupe_calls: true, ..ToolPolicy::default() };
/// assert_eq!(ToolPolicy::default().default_timeout_seconds, DEFAULT_TOOL_TIMEOUT_SECONDS);
/// assert!(p.dedupe_calls);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
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
}

impl Default for ToolPolicy {
    fn default() -> Self {
        Self {
            default_timeout_seconds: DEFAULT_TOOL_TIMEOUT_SECONDS,
            dedupe_calls: false,
            retry: None,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
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
    /// let p = ToolPolicy { default_timeout_seconds: 0.0, ..ToolPolicy::default() };
    /// assert_eq!(p.default_timeout(), Duration::from_secs(25));
    /// let p = ToolPolicy { default_timeout_seconds: 1e300, ..ToolPolicy::default() };
    /// assert_eq!(p.default_timeout(), Duration::MAX);
    /// ```
    pub fn default_timeout(&self) -> Duration {
        match crate::tool::duration_from_secs(self.default_timeout_seconds) {
            d if d.is_zero() => Duration::from_secs(DEFAULT_TOOL_TIMEOUT_SECONDS as u64),
            d => d,
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
            retry: Some(self.retry.clone().or(base.retry).unwrap_or_default()),
            max_result_bytes: self.max_result_bytes.unwrap_or(base.max_result_bytes),
        }
    }
}
