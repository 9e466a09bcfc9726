//! Registration options: the keyword-only arguments of `register_tool` and `register_with_schema`.

use std::time::Duration;

use super::{
    PermissionLevel, ReplayPolicy, RetryIfResult, ToolAnnotations, ToolDefinition, ToolRetry,
};

/// Options given at registration. Each field left `None` keeps what the definition already has,
/// so registering an existing definition never silently resets its permission or replay policy.
///
/// ```
/// use harnessx::{ToolOptions, PermissionLevel};
/// let opts = ToolOptions::new().permission(PermissionLevel::Ask).timeout_seconds(120).replace(true);
/// assert_eq!(opts.permission, Some(PermissionLevel::Ask));
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ToolOptions {
    /// Register under another name.
    pub name: Option<String>,
    /// Replace the description.
    pub description: Option<String>,
    /// Set the permission.
    pub permission: Option<PermissionLevel>,
    /// Set whether calls may overlap.
    pub concurrent: Option<bool>,
    /// Set the replay policy.
    pub replay_policy: Option<ReplayPolicy>,
    /// Set the tool's own time limit.
    pub timeout: Option<Duration>,
    /// Set the tool's own retry policy.
    pub retry: Option<ToolRetry>,
    /// Set the retry-if-result predicate.
    pub retry_if_result: Option<RetryIfResult>,
    /// Set the annotations.
    pub annotations: Option<ToolAnnotations>,
    /// Replace an existing tool of the same name instead of failing.
    pub replace: bool,
}

impl std::fmt::Debug for ToolOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolOptions")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("permission", &self.permission)
            .field("concurrent", &self.concurrent)
            .field("replay_policy", &self.replay_policy)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("retry_if_result", &self.retry_if_result.is_some())
            .field("annotations", &self.annotations)
            .field("replace", &self.replace)
            .finish()
    }
}

impl ToolOptions {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }
    /// Register under another name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Replace the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Set the permission.
    pub fn permission(mut self, level: PermissionLevel) -> Self {
        self.permission = Some(level);
        self
    }
    /// Set whether calls may overlap.
    pub fn concurrent(mut self, concurrent: bool) -> Self {
        self.concurrent = Some(concurrent);
        self
    }
    /// Set the replay policy.
    pub fn replay_policy(mut self, policy: ReplayPolicy) -> Self {
        self.replay_policy = Some(policy);
        self
    }
    /// Set the tool's own time limit: seconds as an integer or a float (`120`, `2.5`), or a
    /// [`Duration`] (see [`IntoTimeout`](crate::IntoTimeout)).
    pub fn timeout_seconds(mut self, seconds: impl super::IntoTimeout) -> Self {
        self.timeout = Some(seconds.into_timeout());
        self
    }
    /// Set the tool's own retry policy.
    pub fn retry(mut self, retry: ToolRetry) -> Self {
        self.retry = Some(retry);
        self
    }
    /// Set the retry-if-result predicate.
    pub fn retry_if_result(
        mut self,
        predicate: impl Fn(&crate::ToolOutput) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_if_result = Some(std::sync::Arc::new(predicate));
        self
    }
    /// Set the annotations.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
    /// Replace an existing tool of the same name.
    pub fn replace(mut self, replace: bool) -> Self {
        self.replace = replace;
        self
    }

    pub(crate) fn apply_to(&self, def: &mut ToolDefinition) {
        if let Some(name) = &self.name {
            def.name = name.clone();
        }
        if let Some(description) = &self.description {
            def.description = description.clone();
        }
        if let Some(p) = self.permission {
            def.permission = Some(p);
        }
        if let Some(c) = self.concurrent {
            def.concurrent = c;
        }
        if let Some(r) = self.replay_policy {
            def.replay_policy = r;
        }
        if let Some(t) = self.timeout {
            def.timeout = Some(t);
        }
        if let Some(r) = &self.retry {
            def.retry = Some(*r);
        }
        if let Some(r) = &self.retry_if_result {
            def.retry_if_result = Some(r.clone());
        }
        if let Some(a) = &self.annotations {
            def.annotations = a.clone();
        }
    }
}
