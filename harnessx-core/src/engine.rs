//! Executing calls: name repair, argument checks, permissions, deduplication, timeouts, retries,
//! the result cap, and the scheduling of one model turn's batch.

mod attempt;
pub(crate) mod call_journal;
mod durable;
mod hooked;
mod inline;
mod prepare;
mod timers;
mod trace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use crate::registry::SerialLane;
pub use attempt::CANCEL_GRACE;
pub(crate) use inline::panic_text;
pub(crate) use prepare::canonical_json;
pub use prepare::{MAX_ARGUMENT_BYTES, MAX_TOOL_NAME_BYTES};

use crate::context::Extensions;
use crate::hooks::{HookStop, Hooks, RunUsage};
use crate::output::{ToolCall, ToolErrorKind, ToolResult, truncate_result};
use crate::permissions::{self, ApprovalRequest, PermissionManager, PermissionOutcome};
use crate::registry::CallPolicy;
use crate::registry::ToolRegistry;
use crate::telemetry::spans::ToolTrace;
use crate::tool::{PermissionLevel, ReplayPolicy};
use call_journal::{CallJournal, DurableInput, NoJournal, StepKey};

/// The message the model gets when a permission check refuses a call.
pub const PERMISSION_DENIED: &str = "Permission denied";

/// What the engine reports while it works through a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolEvent {
    /// A call was accepted for execution. Emitted in call order, before any result.
    ToolCallStart {
        /// The call id.
        call_id: String,
        /// The name as the model wrote it.
        name: String,
        /// The raw argument text.
        arguments: String,
    },
    /// A call finished. Emitted in call order.
    ToolResult {
        /// The result.
        result: ToolResult,
    },
}

/// One run's execution scope: a registry, a permission manager and the run's dedupe memory.
///
/// An agent makes one per run. [`ToolRegistry::execute`] makes a fresh one per call.
pub struct ToolRun {
    registry: ToolRegistry,
    permissions: PermissionManager,
    /// What its calls' contexts carry: the registry's lane and this run's permission manager.
    extensions: Extensions,
    dedupe: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<ToolResult>>>>>,
    /// `None` for the run of one direct [`ToolRegistry::execute`], which nobody can cancel:
    /// its calls' tokens then need no parent.
    cancel: Option<CancellationToken>,
    /// The run's journal ([`NoJournal`] outside a durable run) and what stopped its last batch.
    journal: Arc<dyn CallJournal>,
    stops: Mutex<durable::Stops>,
    /// The hooks around each call, the run's usage counts and a stop a hook asked for.
    hooks: Hooks,
    usage: Mutex<RunUsage>,
    stopped: Mutex<Option<HookStop>>,
    /// Record arguments and results on the `execute_tool` spans.
    capture_content: bool,
}

impl std::fmt::Debug for ToolRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRun")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl ToolRegistry {
    /// Validates the input, checks permission, applies the registered timeout and returns the
    /// result. Without a manager the ordinary ALLOW default applies; explicit ASK with no
    /// approval callback, and explicit DENY, return the error result "Permission denied".
    /// A serial tool (`concurrent = false`) first waits for its turn on the registry's
    /// [`SerialLane`], as it does in a batch. An async handler is polled in the calling task (a
    /// task of its own would only add a hop to another thread and back; a synchronous one runs
    /// on the engine's pool either way); calls meant to run in parallel go to
    /// [`ToolRun::execute_batch`] together.
    ///
    /// ```
    /// # use harnessx::{ToolRegistry, ToolCall, ToolOptions, PermissionLevel, handler_fn, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::RegistryError> {
    /// let registry = ToolRegistry::new();
    /// registry.register_with_schema("drop_db", "Drop the database.", serde_json::json!({"type": "object"}),
    ///     handler_fn(|_, _| async { Ok(ToolOutput::text("dropped")) }),
    ///     ToolOptions::new().permission(PermissionLevel::Deny))?;
    /// let result = registry.execute(&ToolCall::new("c1", "drop_db", "{}"), None).await;
    /// assert!(result.is_error);
    /// assert_eq!(result.content, "Permission denied");
    /// # Ok(()) }
    /// ```
    pub async fn execute(
        &self,
        call: &ToolCall,
        permissions: Option<&PermissionManager>,
    ) -> ToolResult {
        let p = match prepare::prepare(self, call, true) {
            Ok(p) => p,
            Err(result) => return trace::refused(call, *result, false),
        };
        let def = &p.tool.definition;
        let level = permissions.map_or(
            def.permission.unwrap_or(permissions::DEFAULT_LEVEL),
            |manager| manager.effective_level(&def.name, def.permission),
        );
        if level != PermissionLevel::Allow {
            // A call that may ask for approval goes through a run of its own, like a call of a
            // batch.
            let run = self.start_run(permissions.cloned(), None);
            return Box::pin(run.traced(p, call, None, run.admit(None))).await;
        }
        // Everything else a run adds does nothing for one call on its own: no hooks, journal,
        // usage limits or dedupe memory that another call could share. A serial tool takes its
        // turn on the lane in `run_with_retry`, as in a run.
        let policy = self.call_policy();
        let prepare::Prepared { tool, args, alone } = p;
        let scope = attempt::CallScope {
            registry: self,
            extensions: permissions.map(|manager| self.bindings().extensions.with(manager.clone())),
            cancel: None,
            input: None,
            alone,
        };
        let def = &tool.definition;
        let trace = ToolTrace::start(&def.name, Some(def.description.as_str()), call, false);
        // Made in the `.await`, once per branch, as in `traced`.
        let mut result = match trace.enabled_span() {
            None => scope.run_with_retry(&tool, args, &call.id, &policy).await,
            Some(span) => {
                scope
                    .run_with_retry(&tool, args, &call.id, &policy)
                    .instrument(span)
                    .await
            }
        };
        truncate_result(&mut result, policy.max_result_bytes);
        trace.finish(&result, false);
        result
    }

    /// Starts a run: calls executed through it share dedupe memory and the permission manager.
    pub fn run(&self, permissions: Option<PermissionManager>) -> ToolRun {
        self.start_run(permissions, Some(CancellationToken::new()))
    }

    fn start_run(
        &self,
        permissions: Option<PermissionManager>,
        cancel: Option<CancellationToken>,
    ) -> ToolRun {
        let permissions = permissions.unwrap_or_default();
        ToolRun {
            registry: self.clone(),
            extensions: self.bindings().extensions.with(permissions.clone()),
            permissions,
            dedupe: Mutex::default(),
            cancel,
            journal: no_journal(),
            stops: Mutex::default(),
            hooks: Hooks::default(),
            usage: Mutex::default(),
            stopped: Mutex::default(),
            capture_content: false,
        }
    }
}

impl ToolRun {
    /// Adds values to what every call of this run carries in its context's
    /// [`extensions`](crate::ToolContext::extensions) (a run's [`Deps`](crate::Deps)).
    pub fn with_extensions(mut self, extensions: &Extensions) -> Self {
        self.extensions = self.extensions.merged(extensions);
        self
    }

    /// The registry this run executes against.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// The permission manager this run checks calls with.
    pub fn permissions(&self) -> &PermissionManager {
        &self.permissions
    }

    /// Cancels every call still running in this run (their contexts' tokens fire).
    pub fn cancel(&self) {
        if let Some(cancel) = &self.cancel {
            cancel.cancel();
        }
    }

    /// Executes one call; an async handler is polled in the calling task (see
    /// [`ToolRegistry::execute`]).
    pub async fn execute(&self, call: &ToolCall) -> ToolResult {
        let ctx = self.admit(None);
        match prepare::prepare(&self.registry, call, true) {
            Ok(prepared) => self.traced(prepared, call, None, ctx).await,
            Err(result) => self.refused(call, *result),
        }
    }

    /// Executes one model turn's calls. Concurrent tools run together; the others run one at a
    /// time on the serial lane, in the order the model made them, alongside the concurrent ones.
    /// `ToolCallStart` events are emitted for every call, in call order, before anything runs;
    /// `ToolResult` events and the returned results are in call order too. One failing or
    /// timed-out call cancels none of the others.
    pub async fn execute_batch(
        &self,
        calls: &[ToolCall],
        events: Option<&(dyn Fn(ToolEvent) + Send + Sync)>,
    ) -> Vec<ToolResult> {
        self.execute_turn(None, calls, events).await
    }

    /// [`execute_batch`](Self::execute_batch) for model turn `turn` of a journaled run: calls
    /// the journal finished answer with their stored result (and report no events again).
    pub(crate) async fn execute_turn(
        &self,
        turn: Option<usize>,
        calls: &[ToolCall],
        events: Option<&(dyn Fn(ToolEvent) + Send + Sync)>,
    ) -> Vec<ToolResult> {
        let keys = self.step_keys(turn, calls.len());
        // Every call counts toward the run's usage, in call order, replayed ones included.
        let admitted: Vec<_> = calls.iter().map(|_| self.admit(turn)).collect();
        let mut slots: Vec<Option<ToolResult>> = self.replayed(&keys);
        let replayed: Vec<bool> = slots.iter().map(Option::is_some).collect();
        if let Some(emit) = events {
            for call in calls
                .iter()
                .zip(&replayed)
                .filter(|(_, r)| !**r)
                .map(|(c, _)| c)
            {
                emit(ToolEvent::ToolCallStart {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
            }
        }
        let concurrent = FuturesUnordered::new();
        let mut serial = Vec::new();
        let mut refused = Vec::new();
        // A turn of one call runs it like a direct call; several run side by side.
        let alone = calls.len() == 1;
        for (i, call) in calls.iter().enumerate() {
            if replayed[i] {
                continue;
            }
            let key = keys[i];
            let ctx = admitted[i].clone();
            match prepare::prepare(&self.registry, call, alone) {
                Err(result) => refused.push((i, self.refused(call, *result))),
                Ok(p) if p.tool.definition.concurrent => {
                    concurrent.push(async move { (i, self.traced(p, call, key, ctx).await) })
                }
                Ok(p) => serial.push((i, p, ctx)),
            }
        }
        // A refusal (unknown tool, invalid arguments) is journaled like any decision the model
        // sees, so a resume after the tools changed does not run what was refused.
        for (i, result) in refused {
            let result = self
                .record_unrun(keys[i], &calls[i], ReplayPolicy::Safe, result)
                .await;
            slots[i] = Some(result);
        }
        // One serial call after another; each takes its turn on the lane as it runs.
        let serial_stream = futures::stream::iter(serial)
            .then(|(i, p, ctx)| {
                let key = keys[i];
                async move { (i, self.traced(p, &calls[i], key, ctx).await) }
            })
            .boxed();
        let mut merged = futures::stream::select(concurrent, serial_stream);
        let mut next_to_emit = 0;
        let flush = |slots: &[Option<ToolResult>], next: &mut usize| {
            while *next < slots.len() {
                let Some(result) = &slots[*next] else { break };
                // Replayed results were reported when they ran; a call waiting for input has
                // no result yet.
                let quiet = replayed[*next] || keys[*next].is_some_and(|k| self.is_waiting(k));
                if let Some(emit) = events.filter(|_| !quiet) {
                    emit(ToolEvent::ToolResult {
                        result: result.clone(),
                    });
                }
                *next += 1;
            }
        };
        flush(&slots, &mut next_to_emit);
        while let Some((i, result)) = merged.next().await {
            slots[i] = Some(result);
            flush(&slots, &mut next_to_emit);
        }
        slots
            .into_iter()
            .zip(calls)
            .map(|(r, call)| {
                r.unwrap_or_else(|| {
                    let mut lost = ToolResult::error(
                        &call.id,
                        &call.name,
                        ToolErrorKind::Crashed,
                        "the call was lost",
                    );
                    truncate_result(&mut lost, self.registry.call_policy().max_result_bytes);
                    lost
                })
            })
            .collect()
    }

    async fn run_prepared(
        &self,
        p: prepare::Prepared,
        call: &ToolCall,
        step: Option<StepKey>,
        after: Option<&hooked::After<'_>>,
    ) -> ToolResult {
        // The effective policy is read once per call and used throughout it.
        let policy = self.registry.call_policy();
        if !policy.dedupe_calls {
            return self.checked(p, call, &policy, step, after).await;
        }
        // Boxed, like every path a plain call does not take: the future of a plain call then
        // holds (and moves) only what that call needs.
        Box::pin(self.deduped(p, call, &policy, step, after)).await
    }

    /// [`run_prepared`](Self::run_prepared) when identical calls share one result.
    async fn deduped(
        &self,
        p: prepare::Prepared,
        call: &ToolCall,
        policy: &CallPolicy,
        step: Option<StepKey>,
        after: Option<&hooked::After<'_>>,
    ) -> ToolResult {
        let key = format!("{}\u{0}{}", p.tool.definition.name, canonical_json(&p.args));
        let slot = {
            let mut map = self.dedupe.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(map.entry(key).or_default())
        };
        // Identical calls wait for the first one; a kept result answers them without running.
        let mut kept = slot.lock().await;
        if let Some(first) = kept.as_ref() {
            return ToolResult {
                call_id: call.id.clone(),
                deduplicated: true,
                ..first.clone()
            };
        }
        let result = self.checked(p, call, policy, step, after).await;
        // A call that timed out or crashed may or may not have taken effect: the model is told to
        // check and call again, so that answer is not replayed to the next identical call.
        if !matches!(
            result.error_kind,
            Some(ToolErrorKind::TimedOut | ToolErrorKind::Crashed)
        ) {
            *kept = Some(result.clone());
        }
        result
    }

    async fn checked(
        &self,
        p: prepare::Prepared,
        call: &ToolCall,
        policy: &CallPolicy,
        key: Option<StepKey>,
        after: Option<&hooked::After<'_>>,
    ) -> ToolResult {
        if let Some(key) = key {
            return Box::pin(self.journaled(&p, call, policy, key, after)).await;
        }
        let prepare::Prepared { tool, args, alone } = p;
        let def = &tool.definition;
        // ALLOW needs no approval request; build one only when the pipeline may use it.
        let allowed = self.permissions.effective_level(&def.name, def.permission)
            == PermissionLevel::Allow
            || Box::pin(self.permissions.check(
                def.permission,
                ApprovalRequest {
                    call_id: call.id.clone(),
                    tool_name: def.name.clone(),
                    arguments: args.clone(),
                    description: def.description.clone(),
                    input_schema: Some(def.input_schema.clone()),
                },
            ))
            .await
                == PermissionOutcome::Allowed;
        if !allowed {
            let denied = ToolResult::error(
                &call.id,
                &def.name,
                ToolErrorKind::PermissionDenied,
                PERMISSION_DENIED,
            );
            return self.settle(denied, after, policy).await;
        }
        let result = self
            .scope(None, alone)
            .run_with_retry(&tool, args, &call.id, policy)
            .await;
        self.settle(result, after, policy).await
    }

    /// What this run's calls' attempts run in; `input` for a journaled call, `alone` when no
    /// other call runs beside it.
    fn scope<'a>(
        &'a self,
        input: Option<&'a (StepKey, DurableInput)>,
        alone: bool,
    ) -> attempt::CallScope<'a> {
        attempt::CallScope {
            registry: &self.registry,
            extensions: Some(match input {
                Some((_, durable)) => self.extensions.with(durable.clone()),
                None => self.extensions.clone(),
            }),
            cancel: self.cancel.as_ref(),
            input: input.map(|input| (self, input)),
            alone,
        }
    }
}

/// The journal of a run that keeps none, shared: a direct call allocates no journal of its own.
fn no_journal() -> Arc<dyn CallJournal> {
    static NO_JOURNAL: std::sync::LazyLock<Arc<dyn CallJournal>> =
        std::sync::LazyLock::new(|| Arc::new(NoJournal));
    Arc::clone(&NO_JOURNAL)
}
