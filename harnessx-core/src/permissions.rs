//! Permissions as a pipeline: policy (override > tool > default) → decision → approval → run.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

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
    /// The tool's input schema: arguments a person edits before allowing the call must fit it
    /// (see [`check_arguments`](crate::schema::check_arguments)). Absent from requests
    /// recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
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
/// One prompt per tool at a time: concurrent ASK calls of the same tool (in one batch, in
/// several runs, or in subagents sharing the manager) wait while an earlier call of that tool
/// is being decided. When that decision was [`ApprovalDecision::AllowSession`], the waiting calls
/// run without a prompt of their own; after `AllowOnce` or `Deny` (which answer only the call
/// they were given for), each waiting call gets its own prompt in turn. Calls of different
/// tools are asked about in parallel. Clones of a manager share grants and prompts.
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
    approval: Option<Arc<dyn ApprovalCallback>>,
    /// What clones share, in one allocation: a manager is made per direct `execute`.
    shared: Arc<Shared>,
}

/// The overrides, session grants and open prompts every clone of a manager sees.
#[derive(Default)]
struct Shared {
    overrides: RwLock<HashMap<String, PermissionLevel>>,
    grants: RwLock<HashSet<String>>,
    /// Per tool name, the turn to prompt about it: one open prompt per tool at a time.
    prompts: Mutex<PromptGates>,
}

type PromptGates = HashMap<String, Arc<tokio::sync::Mutex<()>>>;

/// The turn to prompt about one tool. Dropping it (the decision came, or the call was given up)
/// lets the next waiting call go, and forgets the tool's gate when nobody else holds it, so the
/// map only holds tools with calls being asked about.
struct PromptTurn {
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    shared: Arc<Shared>,
    tool: String,
}

impl Drop for PromptTurn {
    fn drop(&mut self) {
        // With the map locked nobody can take a new handle to the gate.
        let mut prompts = self
            .shared
            .prompts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.guard = None;
        if prompts
            .get(&self.tool)
            .is_some_and(|gate| Arc::strong_count(gate) == 1)
        {
            prompts.remove(&self.tool);
        }
    }
}

impl std::fmt::Debug for PermissionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionManager")
            .field("default", &self.default)
            .field("overrides", &self.shared.overrides)
            .field("grants", &self.shared.grants)
            .field("approval", &self.approval.is_some())
            .finish()
    }
}

impl Default for PermissionManager {
    /// The ordinary agent's manager: default ALLOW, no callback.
    fn default() -> Self {
        Self::new(DEFAULT_LEVEL)
    }
}

/// The default level of a manager made by [`PermissionManager::default`], which is what a call
/// executed without a manager is checked with.
pub(crate) const DEFAULT_LEVEL: PermissionLevel = PermissionLevel::Allow;

impl PermissionManager {
    /// A manager with this default level and no overrides, grants or callback.
    pub fn new(default: PermissionLevel) -> Self {
        Self {
            default,
            approval: None,
            shared: Arc::default(),
        }
    }

    /// A manager for one session (a conversation): this one's default level, approval callback
    /// and current overrides, and session grants of its own — a grant made in it stays in it.
    /// An agent serving many conversations checks each run with its conversation's session.
    ///
    /// ```
    /// use harnessx::{PermissionLevel, PermissionManager};
    /// let agent = PermissionManager::new(PermissionLevel::Ask).with_override("rm", PermissionLevel::Deny);
    /// let session = agent.session();
    /// session.grant_session("run_bash");
    /// assert!(session.has_session_grant("run_bash"));
    /// assert!(!agent.has_session_grant("run_bash"));
    /// assert_eq!(session.effective_level("rm", None), PermissionLevel::Deny);
    /// ```
    pub fn session(&self) -> Self {
        let overrides = self
            .shared
            .overrides
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let session = Self {
            default: self.default,
            approval: self.approval.clone(),
            shared: Arc::default(),
        };
        *session
            .shared
            .overrides
            .write()
            .unwrap_or_else(|p| p.into_inner()) = overrides;
        session
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
        let mut o = self
            .shared
            .overrides
            .write()
            .unwrap_or_else(|p| p.into_inner());
        o.insert(tool.into(), level);
    }

    /// Grants a tool for the rest of the session (satisfies ASK, never DENY).
    pub fn grant_session(&self, tool: impl Into<String>) {
        let mut g = self
            .shared
            .grants
            .write()
            .unwrap_or_else(|p| p.into_inner());
        g.insert(tool.into());
    }

    /// Whether a session grant exists for the tool.
    pub fn has_session_grant(&self, tool: &str) -> bool {
        let g = self.shared.grants.read().unwrap_or_else(|p| p.into_inner());
        g.contains(tool)
    }

    /// Removes every session grant.
    pub fn clear_session_grants(&self) {
        let mut g = self
            .shared
            .grants
            .write()
            .unwrap_or_else(|p| p.into_inner());
        g.clear();
    }

    /// The level that applies to a tool: override > explicit tool permission > default.
    pub fn effective_level(
        &self,
        tool: &str,
        explicit: Option<PermissionLevel>,
    ) -> PermissionLevel {
        let o = self
            .shared
            .overrides
            .read()
            .unwrap_or_else(|p| p.into_inner());
        // Most managers have no overrides: no hashing of the name then.
        let overridden = if o.is_empty() {
            None
        } else {
            o.get(tool).copied()
        };
        overridden.or(explicit).unwrap_or(self.default)
    }

    /// Waits until no other call is being asked about `tool`.
    async fn prompt_turn(&self, tool: &str) -> PromptTurn {
        let gate = {
            let mut prompts = self
                .shared
                .prompts
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            Arc::clone(prompts.entry(tool.to_owned()).or_default())
        };
        PromptTurn {
            guard: Some(gate.lock_owned().await),
            shared: Arc::clone(&self.shared),
            tool: tool.to_owned(),
        }
    }

    /// Runs the whole pipeline for one call, asking the callback when the level is ASK (one
    /// prompt per tool at a time; see the type's documentation).
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
                let _turn = self.prompt_turn(&tool).await;
                // What was decided while this call waited (a session grant, a new override)
                // may answer it without a prompt.
                match self.effective_level(&tool, explicit) {
                    PermissionLevel::Allow => return PermissionOutcome::Allowed,
                    PermissionLevel::Deny => return PermissionOutcome::Denied,
                    PermissionLevel::Ask if self.has_session_grant(&tool) => {
                        return PermissionOutcome::Allowed;
                    }
                    PermissionLevel::Ask => {}
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(tool: &str) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c".into(),
            tool_name: tool.into(),
            arguments: Value::Null,
            description: String::new(),
            input_schema: None,
        }
    }

    fn gates(pm: &PermissionManager) -> usize {
        pm.shared
            .prompts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    #[tokio::test]
    async fn prompt_gates_are_forgotten_once_nobody_is_asked() {
        let pm = PermissionManager::new(PermissionLevel::Ask)
            .with_approval(|_| async { ApprovalDecision::AllowOnce });
        for tool in ["a", "b", "c"] {
            let outcome = pm.check(None, request(tool)).await;
            assert_eq!(outcome, PermissionOutcome::Allowed);
        }
        assert_eq!(gates(&pm), 0);

        // A prompt given up half way (its call was cancelled) lets go of its gate too.
        let stuck = PermissionManager::new(PermissionLevel::Ask)
            .with_approval(|_| std::future::pending::<ApprovalDecision>());
        let gave_up = tokio::time::timeout(
            std::time::Duration::from_millis(10),
            stuck.check(None, request("t")),
        )
        .await;
        assert!(gave_up.is_err());
        assert_eq!(gates(&stuck), 0);
    }
}
