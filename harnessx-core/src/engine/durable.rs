//! The engine's side of the journal seam: replaying finished calls, recovering interrupted ones
//! by replay policy, and pausing for input instead of waiting.

use std::sync::Arc;

use super::call_journal::{
    CallJournal, CallRecord, DurableInput, InputReply, JournalError, PendingInput, PendingKind,
    RecoveryChoice, RecoveryReason, StepKey,
};
use super::{PERMISSION_DENIED, ToolRun, hooked, prepare};
use crate::output::{ToolCall, ToolErrorKind, ToolOutput, ToolResult};
use crate::permissions::{ApprovalDecision, ApprovalRequest};
use crate::question::NeedsInput;
use crate::registry::CallPolicy;
use crate::tool::{PermissionLevel, ReplayPolicy};

/// What the model is told about a call a person confirmed took effect, without its result.
pub const TOOK_EFFECT_MESSAGE: &str = "The call was interrupted; a person confirmed that it took \
effect, but its result was not recorded.";

/// What stopped a journaled batch: input to wait for, or a journal write that failed.
#[derive(Debug, Default)]
pub(crate) struct Stops {
    pub(crate) pending: Vec<PendingInput>,
    pub(crate) error: Option<JournalError>,
}

enum Permit {
    /// Run it, with the arguments a person edited when they did.
    Run(Option<serde_json::Value>),
    Denied,
    Wait,
}

impl ToolRun {
    /// Runs this run's journaled batches against `journal`.
    pub(crate) fn with_journal(mut self, journal: Arc<dyn CallJournal>) -> Self {
        self.journal = journal;
        self
    }

    /// Takes what stopped the last batch (pending input, a failed write).
    pub(crate) fn take_stops(&self) -> Stops {
        let mut stops = self.stops.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *stops)
    }

    pub(super) fn step_keys(&self, turn: Option<usize>, len: usize) -> Vec<Option<StepKey>> {
        let turn = turn.filter(|_| self.journal.is_durable());
        (0..len)
            .map(|i| turn.map(|t| StepKey::call(t, i)))
            .collect()
    }

    /// The stored result of every call the journal saw finish.
    pub(super) fn replayed(&self, keys: &[Option<StepKey>]) -> Vec<Option<ToolResult>> {
        keys.iter()
            .map(|key| match key.map(|k| self.journal.call(k)) {
                Some(CallRecord::Finished(result)) => Some(result),
                _ => None,
            })
            .collect()
    }

    pub(super) fn is_waiting(&self, key: StepKey) -> bool {
        let stops = self.stops.lock().unwrap_or_else(|p| p.into_inner());
        stops.pending.iter().any(|p| p.key == key)
    }

    fn wait(&self, key: StepKey, call: &ToolCall, kind: PendingKind) -> ToolResult {
        let mut stops = self.stops.lock().unwrap_or_else(|p| p.into_inner());
        stops.pending.push(PendingInput {
            key,
            call_id: call.id.clone(),
            kind,
        });
        // Never shown: the run pauses before the model sees this batch.
        ToolResult::error(
            &call.id,
            &call.name,
            ToolErrorKind::Failed,
            "waiting for input",
        )
    }

    pub(super) fn wait_for_answer(&self, key: StepKey, call_id: &str, asked: NeedsInput) {
        let mut stops = self.stops.lock().unwrap_or_else(|p| p.into_inner());
        stops.pending.push(PendingInput {
            key,
            call_id: call_id.to_owned(),
            kind: PendingKind::Question {
                form: asked.form,
                window_ms: asked.window_ms,
            },
        });
    }

    fn failed_write(&self, call: &ToolCall, error: JournalError) -> ToolResult {
        let message = error.to_string();
        let mut stops = self.stops.lock().unwrap_or_else(|p| p.into_inner());
        stops.error.get_or_insert(error);
        ToolResult::error(&call.id, &call.name, ToolErrorKind::Crashed, message)
    }

    /// One call of a journaled batch: recovery, permission, `started`, the handler, `finished`.
    pub(super) async fn journaled(
        &self,
        p: &prepare::Prepared,
        call: &ToolCall,
        policy: &CallPolicy,
        key: StepKey,
        after: Option<&hooked::After<'_>>,
    ) -> ToolResult {
        let def = &p.tool.definition;
        let reply = self.journal.reply(key);
        let manual = def.replay_policy == ReplayPolicy::Manual;
        if let CallRecord::Interrupted { .. } = self.journal.call(key)
            && manual
        {
            let settled = match &reply {
                Some(InputReply::Recovery { choice }) => match choice {
                    RecoveryChoice::RunAgain => None,
                    RecoveryChoice::TookEffect { result } => Some(ToolResult::success(
                        &call.id,
                        &def.name,
                        ToolOutput::text(result.clone().unwrap_or(TOOK_EFFECT_MESSAGE.into())),
                    )),
                    RecoveryChoice::Skip { note } => Some(ToolResult::error(
                        &call.id,
                        &def.name,
                        ToolErrorKind::Failed,
                        skipped_message(&def.name, note),
                    )),
                },
                _ => {
                    return self.wait(key, call, recovery(p, RecoveryReason::Interrupted));
                }
            };
            if let Some(result) = settled {
                let result = self.settle(result, after, policy).await;
                return self.finish(key, call, result).await;
            }
        }
        let edited = match self.permit(p, reply.as_ref()) {
            Permit::Run(edited) => edited,
            Permit::Denied => {
                let denied = ToolResult::error(
                    &call.id,
                    &def.name,
                    ToolErrorKind::PermissionDenied,
                    PERMISSION_DENIED,
                );
                let denied = self.settle(denied, after, policy).await;
                return self
                    .record_unrun(Some(key), call, def.replay_policy, denied)
                    .await;
            }
            Permit::Wait => {
                let request = approval_request(p, call);
                return self.wait(key, call, PendingKind::Approval { request });
            }
        };
        // Arguments a person edited replace the model's: checked like the model's were, and
        // journaled as the call that ran (the model's own call stays in its turn).
        let (args, edited_call);
        let call = match edited {
            None => {
                args = p.args.clone();
                call
            }
            Some(edited) => {
                if let Some(invalid) = p.tool.schema.problem(&edited) {
                    let refused = ToolResult::error(
                        &call.id,
                        &def.name,
                        ToolErrorKind::InvalidArguments,
                        format!(
                            "The arguments a person edited for `{}` do not fit its schema: {invalid}. \
                             The call was not run.",
                            def.name
                        ),
                    );
                    let refused = self.settle(refused, after, policy).await;
                    return self
                        .record_unrun(Some(key), call, def.replay_policy, refused)
                        .await;
                }
                edited_call = ToolCall {
                    arguments: edited.to_string(),
                    ..call.clone()
                };
                args = edited;
                &edited_call
            }
        };
        if let Err(failed) = self.start(key, call, def.replay_policy).await {
            return failed;
        }
        let input = (key, DurableInput { reply });
        let result = self
            .scope(Some(&input), p.alone)
            .run_with_retry(&p.tool, args, &call.id, policy)
            .await;
        if self.is_waiting(key) {
            return result;
        }
        if manual && result.error_kind == Some(ToolErrorKind::TimedOut) {
            return self.wait(key, call, recovery(p, RecoveryReason::TimedOut));
        }
        let result = self.settle(result, after, policy).await;
        self.finish(key, call, result).await
    }

    /// Records that `call` starts (the step a resume reads as interrupted until it finishes);
    /// a failed write becomes the call's result.
    pub(super) async fn start(
        &self,
        key: StepKey,
        call: &ToolCall,
        policy: ReplayPolicy,
    ) -> Result<(), ToolResult> {
        self.journal
            .record_started(key, call, policy)
            .await
            .map_err(|e| self.failed_write(call, e))
    }

    /// Records the result of a call that was decided without running its handler — a refusal
    /// (unknown tool, invalid arguments), a hook's answer or denial, a refused permission,
    /// arguments a hook broke — as started and finished, like a handler's, in a durable run
    /// (`key` is set): the event stream shows the call, and a resume reads the decision back
    /// instead of deciding again, so the model's later turns, which saw it, stay true. Without
    /// a journal the result is returned as it is.
    pub(super) async fn record_unrun(
        &self,
        key: Option<StepKey>,
        call: &ToolCall,
        policy: ReplayPolicy,
        result: ToolResult,
    ) -> ToolResult {
        let Some(key) = key else {
            return result;
        };
        if let Err(failed) = self.start(key, call, policy).await {
            return failed;
        }
        self.finish(key, call, result).await
    }

    pub(super) async fn finish(
        &self,
        key: StepKey,
        call: &ToolCall,
        result: ToolResult,
    ) -> ToolResult {
        match self.journal.record_finished(key, &result).await {
            Ok(()) => result,
            Err(e) => self.failed_write(call, e),
        }
    }

    /// The permission pipeline of a durable run: ASK is answered by a recorded decision or a
    /// conversation grant, else the run waits for one (the approval callback is not used).
    fn permit(&self, p: &prepare::Prepared, reply: Option<&InputReply>) -> Permit {
        let def = &p.tool.definition;
        match self.permissions.effective_level(&def.name, def.permission) {
            PermissionLevel::Allow => Permit::Run(None),
            PermissionLevel::Deny => Permit::Denied,
            PermissionLevel::Ask => match reply {
                // A decision recorded for this call answers it, with its edited arguments, even
                // when a grant made meanwhile would have let it run unasked.
                Some(InputReply::Decision {
                    decision,
                    arguments,
                }) => match decision {
                    ApprovalDecision::AllowOnce => Permit::Run(arguments.clone()),
                    ApprovalDecision::AllowSession => {
                        self.permissions.grant_session(def.name.clone());
                        Permit::Run(arguments.clone())
                    }
                    ApprovalDecision::Deny => Permit::Denied,
                },
                _ if self.permissions.has_session_grant(&def.name) => Permit::Run(None),
                _ => Permit::Wait,
            },
        }
    }
}

fn approval_request(p: &prepare::Prepared, call: &ToolCall) -> ApprovalRequest {
    ApprovalRequest {
        call_id: call.id.clone(),
        tool_name: p.tool.definition.name.clone(),
        arguments: p.args.clone(),
        description: p.tool.definition.description.clone(),
        input_schema: Some(p.tool.definition.input_schema.clone()),
    }
}

fn recovery(p: &prepare::Prepared, reason: RecoveryReason) -> PendingKind {
    PendingKind::Recovery {
        reason,
        tool_name: p.tool.definition.name.clone(),
        arguments: p.args.clone(),
    }
}

fn skipped_message(tool: &str, note: &str) -> String {
    let mut message = format!(
        "The call to `{tool}` was interrupted and a person chose to skip it; it was not run again."
    );
    if !note.trim().is_empty() {
        message.push_str(&format!(" Their note: {note}"));
    }
    message
}
