//! One call's attempts: the handler called under its time limit, with its panics contained,
//! and called again as the tool's retry policy says.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tracing::instrument::WithSubscriber;

use super::call_journal::{DurableInput, StepKey};
use super::timers::Limited;
use super::{ToolRun, inline, panic_text};
use crate::context::{CallCancel, Extensions, ToolContext};
use crate::output::{ToolError, ToolErrorKind, ToolOutput, ToolResult};
use crate::registry::lane;
use crate::registry::{CallPolicy, RegisteredTool, ToolRegistry};
use crate::tool::ToolRetry;

/// What a call's attempts run in: the registry, the extensions the handler's context carries
/// (`None`: the registry's own, holding its lane; a run adds its permission manager, a
/// journaled call its durable input), the run's cancellation (none for a direct call: nobody can cancel it as a whole),
/// for a journaled call its step and durable input, with the run that records a question
/// the handler asks, and whether the call runs alone (no other call of its batch beside it).
pub(super) struct CallScope<'a> {
    pub registry: &'a ToolRegistry,
    pub extensions: Option<Extensions>,
    pub cancel: Option<&'a CancellationToken>,
    pub input: Option<(&'a ToolRun, &'a (StepKey, DurableInput))>,
    pub alone: bool,
}

impl CallScope<'_> {
    /// Runs the call's attempts; a serial tool's take their turn on the registry's lane first
    /// and hold it across retries.
    pub(super) async fn run_with_retry(
        &self,
        tool: &Arc<RegisteredTool>,
        mut args: Value,
        call_id: &str,
        policy: &CallPolicy,
    ) -> ToolResult {
        let def = &tool.definition;
        let turn = if def.concurrent {
            lane::Turn::none()
        } else {
            lane::Turn::take(&self.registry.serial_lane()).await
        };
        let turn = &turn;
        let timeout = policy.timeout_for(def);
        let retry = if def.replay_policy.allows_retry() {
            def.retry.unwrap_or(policy.retry)
        } else {
            ToolRetry::none()
        };
        let max_attempts = retry.max_attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            // The last attempt the retry policy allows takes the arguments; earlier ones a copy.
            let args = if attempt < max_attempts {
                args.clone()
            } else {
                std::mem::take(&mut args)
            };
            let outcome = self
                .attempt(tool, args, call_id, attempt, timeout, turn)
                .await;
            let retry_wanted = match &outcome {
                Attempt::Done(Ok(out)) => {
                    def.retry_if_result.as_ref().is_some_and(|pred| pred(out))
                }
                Attempt::Done(Err(e)) => e.is_transient(),
                // A durable run retries a safe or idempotent tool that timed out (a manual one
                // has no retries and pauses for a person instead); a direct run tells the model.
                Attempt::TimedOut => self.input.is_some(),
                Attempt::Crashed(_) => false,
            };
            if retry_wanted && attempt < max_attempts {
                // Boxed: only a retried call pays for the timer's room in its future.
                Box::pin(tokio::time::sleep(retry.backoff_for(attempt))).await;
                continue;
            }
            let mut result = match outcome {
                Attempt::Done(Ok(out)) => ToolResult::success(call_id, &def.name, out),
                Attempt::Done(Err(e)) => {
                    let mut msg = e.message().to_owned();
                    if attempt > 1 {
                        msg.push_str(&format!(" (failed after {attempt} attempts)"));
                    }
                    let kind = match e {
                        ToolError::InvalidArguments(_) => ToolErrorKind::InvalidArguments,
                        _ => ToolErrorKind::Failed,
                    };
                    ToolResult::error(call_id, &def.name, kind, msg)
                }
                Attempt::TimedOut => ToolResult::error(
                    call_id,
                    &def.name,
                    ToolErrorKind::TimedOut,
                    format!(
                        "The tool `{}` timed out after {}. It may have partly run: check its effects \
                         before calling it again.",
                        def.name,
                        human_duration(timeout)
                    ),
                ),
                Attempt::Crashed(msg) => ToolResult::error(
                    call_id,
                    &def.name,
                    ToolErrorKind::Crashed,
                    format!(
                        "The tool `{}` crashed: {msg}. This is a fault in the tool, not in your call; \
                         it may have partly run. Try another approach or report it to the user.",
                        def.name
                    ),
                ),
            };
            result.attempts = attempt;
            return result;
        }
    }

    async fn attempt(
        &self,
        tool: &Arc<RegisteredTool>,
        args: Value,
        call_id: &str,
        attempt: u32,
        timeout: Duration,
        turn: &lane::Turn,
    ) -> Attempt {
        let def = &tool.definition;
        let cancel = Arc::new(CallCancel::new(self.cancel));
        let bindings = self.registry.bindings();
        let ctx = ToolContext {
            call_id: call_id.to_owned(),
            tool_name: Arc::clone(&tool.name),
            attempt,
            cancel: Arc::clone(&cancel),
            state: self.registry.state_map(),
            sandbox: bindings.sandbox,
            extensions: self.extensions.clone().unwrap_or(bindings.extensions),
        };
        // The handler is called inside a panic guard (the inline one, or its task's), so work
        // it does before returning its future is contained too (a panic becomes a crash result,
        // not a crashed run). It runs in the caller's task where a task of its own would buy
        // nothing (see `inline`): a call that runs alone, any call on a current-thread runtime.
        // Otherwise — calls of one batch
        // side by side on a multi-thread runtime, which then run in parallel — a spawned task
        // carries the call's span and the caller's subscriber, so the handler's own spans are
        // the call's children on whichever thread it runs.
        // The constants first: the runtime's flavour costs a lookup of the current runtime.
        // The limit counts from before the handler is called, so work its call does before
        // returning a future counts too.
        let started = tokio::time::Instant::now();
        let finished = if self.alone || inline::runs_inline() {
            let handler =
                inline::Inline::new(def.handler.as_ref(), args, ctx, turn.clone(), cancel);
            Limited::new(handler, started, timeout).await.ok_or(())
        } else {
            let handler = Arc::clone(&def.handler);
            let fut = turn.scope(async move { handler.call(args, ctx).await });
            let mut task = AbortOnDrop {
                handle: tokio::spawn(fut.in_current_span().with_current_subscriber()),
                cancel,
            };
            match Limited::new(&mut task.handle, started, timeout).await {
                Some(joined) => Ok(outcome(joined).await),
                None => Err(()),
            }
        };
        // Dropping the handler's future or task before it finished cancels its token and ends it
        // after the grace period if it still runs, also when the caller drops this future (its
        // own timeout, a `select!`).
        match finished {
            Ok(Ok(Err(ToolError::NeedsInput(asked)))) if self.input.is_some() => {
                if let Some((run, (key, _))) = self.input {
                    run.wait_for_answer(*key, call_id, *asked);
                }
                Attempt::Done(Err(ToolError::failed("waiting for input")))
            }
            Ok(Ok(r)) => Attempt::Done(r),
            Ok(Err(panic)) => Attempt::Crashed(panic),
            Err(_) => Attempt::TimedOut,
        }
    }
}

/// The handler task's outcome: its result, or the text of its panic. A task that was
/// cancelled has no outcome at all: only the tokio runtime shutting down cancels it while
/// this waiter still waits (the engine aborts a handler only after its waiter is gone), and a
/// call the process stopped in the middle of has no result to report or journal — a durable
/// run resumes it instead. So this never resolves then; the waiter is dropped with the runtime.
async fn outcome(
    joined: Result<Result<ToolOutput, ToolError>, tokio::task::JoinError>,
) -> Result<Result<ToolOutput, ToolError>, String> {
    match joined {
        Ok(result) => Ok(result),
        Err(e) if e.is_cancelled() => std::future::pending().await,
        // Not cancelled, so it panicked.
        Err(e) => Err(panic_text(e.into_panic().as_ref())),
    }
}

/// How long a handler whose call was given up (timed out, or its waiter dropped) has between its
/// cancellation token firing and its task being aborted: time to kill child processes and clean up.
pub const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// A spawned handler that is cancelled, then aborted after [`CANCEL_GRACE`], when its waiter goes
/// away.
struct AbortOnDrop {
    handle: tokio::task::JoinHandle<Result<ToolOutput, ToolError>>,
    cancel: Arc<CallCancel>,
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        // A handler that finished was not given up on: its token stays as it is.
        if self.handle.is_finished() {
            return;
        }
        self.cancel.cancel();
        let abort = self.handle.abort_handle();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::time::sleep(CANCEL_GRACE).await;
                    abort.abort();
                });
            }
            Err(_) => abort.abort(),
        }
    }
}

enum Attempt {
    Done(Result<ToolOutput, ToolError>),
    TimedOut,
    Crashed(String),
}

fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 && (secs - secs.round()).abs() < 1e-9 {
        format!("{} s", secs as u64)
    } else if secs >= 1.0 {
        format!("{secs:.1} s")
    } else {
        format!("{} ms", d.as_millis())
    }
}
