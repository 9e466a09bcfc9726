//! Permissions as a pipeline: policy (override > tool > default) → decision → approval → run.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::{BoxFuture, PermissionLevel};

/// What the person (or policy) answering an approval request decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this one call.
    AllowOnce,
    /// Run this call and every later call of the same tool in this session without asking.
    AllowSession,
    /// Do not run it.
    Deny,
}

/// A call waiting for approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The call id.
    pub call_id: String,
    /// The registered tool name.
    pub tool_name: String,
    /// The validated arguments.
    pub arguments: Value,
    /// The tool's description, to show the person.
    pub description: String,
}

/// An async approval mechanism: puts a call in front of someone and returns their decision.
pub trait ApprovalCallback: Send + Sync + 'static {
    /// Decides one request.
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalDecision>;
}

/// An [`ApprovalCallback`] from an async closure.
pub struct ApprovalFn<F>(pub F);

impl<F, Fut> ApprovalCallback for ApprovalFn<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ApprovalDecision> + Send + 'static,
{
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalDecision> {
        Box::pin((self.0)(request))
    }
}

/// The outcome of a permission check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionOutcome {
    /// The call may run.
    Allowed,
    /// The call must not run.
    Denied,
}

/// Decides whether calls may run.
///
/// Precedence, highest first: an override for the tool name, the tool's explicit permission,
/// the manager's default. Then: `Deny` blocks the call even after an earlier session grant;
/// `Ask` is satisfied by a session grant, else by the approval callback; with no callback,
/// `Ask` is denied.
///
/// ```
/// use harnessx::{PermissionManager, PermissionLevel, ApprovalDecision};
/// let pm = PermissionManager::new(PermissionLevel::Ask)
///     .with_override("read_file", PermissionLevel::Allow)
///     .with_approval(|_req| async { ApprovalDecision::AllowOnce });
/// assert_eq!(pm.effective_level("read_file", Some(PermissionLevel::Deny)), PermissionLevel::Allow);
/// assert_eq!(pm.effective_level("write_file", None), PermissionLevel::Ask);
/// ```
#[derive(Clone)]
pub struct PermissionManager {
    default: PermissionLevel,
    overrides: Arc<RwLock<HashMap<String, PermissionLevel>>>,
    grants: Arc<RwLock<HashSet<String>>>,
    approval: Option<Arc<dyn ApprovalCallback>>,
}

impl std::fmt::Debug for PermissionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionManager")
            .field("default", &self.default)
            .field("overrides", &self.overrides)
            .field("grants", &self.grants)
            .field("approval", &self.approval.is_some())
            .finish()
    }
}

impl Default for PermissionManager {
    /// The ordinary agent's manager: default ALLOW, no callback.
    fn default() -> Self {
        Self::new(PermissionLevel::Allow)
    }
}

impl PermissionManager {
    /// A manager with this default level and no overrides, grants or callback.
    pub fn new(default: PermissionLevel) -> Self {
        Self {
            default,
            overrides: Arc::default(),
            grants: Arc::default(),
            approval: None,
        }
    }

    /// Adds an override for one tool name (beats everything else).
    pub fn with_override(self, tool: impl Into<String>, level: PermissionLevel) -> Self {
        self.set_override(tool, level);
        self
    }

    /// Sets the approval callback that answers ASK, from an async closure.
    pub fn with_approval<F, Fut>(mut self, callback: F) -> Self
    where
        F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ApprovalDecision> + Send + 'static,
    {
        self.approval = Some(Arc::new(ApprovalFn(callback)));
        self
    }

    /// Sets the approval callback from a shared one.
    pub fn with_approval_arc(mut self, callback: Arc<dyn ApprovalCallback>) -> Self {
        self.approval = Some(callback);
        self
    }

    /// Whether an approval callback is installed.
    pub fn has_approval(&self) -> bool {
        self.approval.is_some()
    }

    /// The manager's default level.
    pub fn default_level(&self) -> PermissionLevel {
        self.default
    }

    /// Sets or replaces an override at run time.
    pub fn set_override(&self, tool: impl Into<String>, level: PermissionLevel) {
        let mut o = self.overrides.write().unwrap_or_else(|p| p.into_inner());
        o.insert(tool.into(), level);
    }

    /// Grants a tool for the rest of the session (satisfies ASK, never DENY).
    pub fn grant_session(&self, tool: impl Into<String>) {
        let mut g = self.grants.write().unwrap_or_else(|p| p.into_inner());
        g.insert(tool.into());
    }

    /// Whether a session grant exists for the tool.
    pub fn has_session_grant(&self, tool: &str) -> bool {
        let g = self.grants.read().unwrap_or_else(|p| p.into_inner());
        g.contains(tool)
    }

    /// Removes every session grant.
    pub fn clear_session_grants(&self) {
        let mut g = self.grants.write().unwrap_or_else(|p| p.into_inner());
        g.clear();
    }

    /// The level that applies to a tool: override > explicit tool permission > default.
    pub fn effective_level(
        &self,
        tool: &str,
        explicit: Option<PermissionLevel>,
    ) -> PermissionLevel {
        let o = self.overrides.read().unwrap_or_else(|p| p.into_inner());
        o.get(tool).copied().or(explicit).unwrap_or(self.default)
    }

    /// Runs the whole pipeline for one call, asking the callback when the level is ASK.
    pub async fn check(
        &self,
        explicit: Option<PermissionLevel>,
        request: ApprovalRequest,
    ) -> PermissionOutcome {
        match self.effective_level(&request.tool_name, explicit) {
            PermissionLevel::Allow => PermissionOutcome::Allowed,
            PermissionLevel::Deny => PermissionOutcome::Denied,
            PermissionLevel::Ask => {
                if self.has_session_grant(&request.tool_name) {
                    return PermissionOutcome::Allowed;
                }
                let Some(cb) = &self.approval else {
                    return PermissionOutcome::Denied;
                };
                let tool = request.tool_name.clone();
                match cb.approve(request).await {
                    ApprovalDecision::AllowOnce => PermissionOutcome::Allowed,
                    ApprovalDecision::AllowSession => {
                        self.grant_session(tool);
                        PermissionOutcome::Allowed
                    }
                    ApprovalDecision::Deny => PermissionOutcome::Denied,
                }
            }
        }
    }
}
