//! The engine's side of the hooks: the run's usage counts, the `before_tool` stage (and the
//! checks a changed call goes through again), the `after_tool`/`on_tool_error` stage and the
//! result cap after it, and a stop that ends the run.

use std::sync::Arc;

use super::call_journal::StepKey;
use super::{ToolRun, prepare, truncate_result};
use crate::hooks::{BeforeTool, Hook, HookContext, HookStop, Hooks, RunUsage, ToolInvocation};
use crate::model::Usage;
use crate::output::{ToolCall, ToolErrorKind, ToolResult};
use crate::registry::CallPolicy;

/// What the after stage of one call needs: the context it ran in and the call as hooks left it.
pub(super) struct After<'a> {
    ctx: &'a HookContext,
    call: &'a ToolInvocation,
}

impl ToolRun {
    /// Adds a hook around every call this run executes, after the ones already installed (an
    /// agent's run starts with the agent's hooks). See [`hooks`](crate::hooks) for the stages.
    ///
    /// ```
    /// use harnessx::hooks::{BeforeTool, Hook, HookContext, HookStop, ToolInvocation};
    /// use harnessx::{BoxFuture, ToolCall, ToolOutput, ToolRegistry, handler_fn};
    ///
    /// /// Answers every call from a cache instead of running the tool.
    /// struct Cached;
    /// impl Hook for Cached {
    ///     fn before_tool<'a>(&'a self, _: &'a HookContext, _: &'a mut ToolInvocation)
    ///         -> BoxFuture<'a, Result<BeforeTool, HookStop>> {
    ///         Box::pin(async { Ok(BeforeTool::Respond(ToolOutput::text("cached"))) })
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::RegistryError> {
    /// let registry = ToolRegistry::new();
    /// registry.register_tool(harnessx::ToolDefinition::new("slow", "Slow.",
    ///     serde_json::json!({"type": "object"}),
    ///     handler_fn(|_, _| async { Ok(ToolOutput::text("fresh")) })))?;
    /// let run = registry.run(None).with_hook(Cached);
    /// let result = run.execute(&ToolCall::new("c1", "slow", "{}")).await;
    /// assert_eq!(result.content, "cached");
    /// assert_eq!(result.attempts, 0);
    /// assert_eq!(run.usage().tool_calls, 1);
    /// # Ok(()) }
    /// ```
    pub fn with_hook(mut self, hook: impl Hook) -> Self {
        self.hooks = self.hooks.with(Arc::new(hook));
        self
    }

    pub(crate) fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    pub(crate) fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// What this run has used so far: the calls it was given and, in an agent's run, the
    /// model requests and tokens.
    pub fn usage(&self) -> RunUsage {
        *self.usage.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The stop a hook asked for, if one did: the run executes no more calls (each is answered
    /// with an error result instead), and an agent's run ends with it.
    pub fn stopped(&self) -> Option<HookStop> {
        self.stopped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn count(&self, f: impl FnOnce(&mut RunUsage)) -> RunUsage {
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut usage);
        *usage
    }

    /// Counts one model request; the usage including it.
    pub(crate) fn count_request(&self) -> RunUsage {
        self.count(|u| u.model_requests += 1)
    }

    /// Counts a response's tokens; the usage including them.
    pub(crate) fn count_tokens(&self, tokens: &Usage) -> RunUsage {
        self.count(|u| {
            u.input_tokens = u.input_tokens.saturating_add(tokens.input_tokens);
            u.output_tokens = u.output_tokens.saturating_add(tokens.output_tokens);
        })
    }

    /// Counts one call the model made; the context its hooks see.
    pub(super) fn admit(&self, turn: Option<usize>) -> HookContext {
        let usage = self.count(|u| u.tool_calls += 1);
        HookContext {
            durable: self.journal.is_durable(),
            ..HookContext::new(turn, usage)
        }
    }

    fn stop(&self, stop: HookStop) {
        let mut stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        stopped.get_or_insert(stop);
    }

    /// One prepared call through the hooks: `before_tool`, the checks again for changed
    /// arguments, the call (permission, dedupe, journal, handler), the after stage, the cap.
    pub(super) async fn hooked(
        &self,
        p: prepare::Prepared,
        call: &ToolCall,
        key: Option<StepKey>,
        ctx: HookContext,
    ) -> ToolResult {
        if self.hooks.is_empty() {
            return self.run_prepared(p, call, key, None).await;
        }
        // Boxed: a call without hooks then neither holds nor moves the hooks' futures.
        Box::pin(self.through_hooks(p, call, key, ctx)).await
    }

    /// [`hooked`](Self::hooked) when hooks are installed.
    async fn through_hooks(
        &self,
        p: prepare::Prepared,
        call: &ToolCall,
        key: Option<StepKey>,
        ctx: HookContext,
    ) -> ToolResult {
        let policy = self.registry.call_policy();
        let name = p.tool.definition.name.clone();
        if let Some(stop) = self.stopped() {
            return stopped_result(call, &name, &stop, &policy);
        }
        let alone = p.alone;
        let mut invocation = ToolInvocation::new(&call.id, p.tool, p.args);
        let decided = match self.hooks.before_tool(&ctx, &mut invocation).await {
            Ok(decided) => decided,
            Err(stop) => {
                let result = stopped_result(call, &name, &stop, &policy);
                self.stop(stop);
                return result;
            }
        };
        let after = After {
            ctx: &ctx,
            call: &invocation,
        };
        let replay = invocation.definition().replay_policy;
        let decided = match decided {
            BeforeTool::Continue => None,
            BeforeTool::Deny(reason) => Some(ToolResult::error(
                &call.id,
                &name,
                ToolErrorKind::PermissionDenied,
                reason,
            )),
            BeforeTool::Respond(output) => {
                let mut answered = ToolResult::success(&call.id, &name, output);
                answered.attempts = 0;
                Some(answered)
            }
        };
        if let Some(result) = decided {
            let result = self.settle(result, Some(&after), &policy).await;
            return self.record_unrun(key, call, replay, result).await;
        }
        let args = invocation.arguments().clone();
        let changed = invocation.arguments_changed();
        if changed && let Err(message) = invocation.registered().schema.validate(&name, &args) {
            let refused = ToolResult::error(
                &call.id,
                &name,
                ToolErrorKind::InvalidArguments,
                format!(
                    "A hook changed the arguments of this call and they no longer fit the \
                     schema, so the tool did not run. {message}"
                ),
            );
            let refused = self.settle(refused, Some(&after), &policy).await;
            return self.record_unrun(key, call, replay, refused).await;
        }
        let call = if changed {
            ToolCall::new(&call.id, &call.name, args.to_string())
        } else {
            call.clone()
        };
        let prepared = prepare::Prepared {
            tool: Arc::clone(invocation.registered()),
            args,
            alone,
        };
        self.run_prepared(prepared, &call, key, Some(&after)).await
    }

    /// A call's result on its way out: the after stage (when hooks are installed), then the cap.
    pub(super) async fn settle(
        &self,
        mut result: ToolResult,
        after: Option<&After<'_>>,
        policy: &CallPolicy,
    ) -> ToolResult {
        if let Some(after) = after
            && let Err(stop) =
                Box::pin(self.hooks.after_tool(after.ctx, after.call, &mut result)).await
        {
            self.stop(stop);
        }
        truncate_result(&mut result, policy.max_result_bytes);
        result
    }
}

/// The answer to a call a stopped run does not run (never shown to a model in an agent's run,
/// which ends with the stop).
fn stopped_result(call: &ToolCall, name: &str, stop: &HookStop, policy: &CallPolicy) -> ToolResult {
    let mut result = ToolResult::error(
        &call.id,
        name,
        ToolErrorKind::Failed,
        format!("The call was not run: the run was stopped ({stop})."),
    );
    result.attempts = 0;
    truncate_result(&mut result, policy.max_result_bytes);
    result
}
