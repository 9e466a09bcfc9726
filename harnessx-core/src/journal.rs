//! The seam durable runs use: a [`Journal`] the agent loop reads finished steps back from and
//! writes each new step to before it goes on.
//!
//! There is one agent loop. [`Agent::run`](crate::Agent::run) drives it with [`NoJournal`], which
//! records nothing; a durable runtime (the `harnessx-runtime` crate) drives the same loop with
//! [`Agent::run_journaled`](crate::Agent::run_journaled) and a journal backed by its store:
//!
//! - before a model turn the loop asks [`Journal::recorded_turn`]; a recorded response is used
//!   instead of calling the model, a fresh one is written with [`Journal::record_turn`];
//! - before a tool call the engine asks [`Journal::call`]: a [`CallRecord::Finished`] call
//!   answers with its stored result and never runs again; an [`CallRecord::Interrupted`] call
//!   (started, never finished) is run again when its tool is `safe` or `idempotent`, and raises a
//!   recovery question when it is `manual`; a new call is recorded started
//!   ([`Journal::record_started`]) before its handler runs and finished after; a call decided
//!   without running its handler (an unknown tool or invalid arguments, a hook's answer or
//!   denial, a `deny` permission, arguments a hook made invalid) is recorded started and
//!   finished with that decision, so a resume reads it back rather than deciding again after
//!   the model has seen it;
//! - a call that needs a person (an `ask_user` question, an ASK approval, a recovery question)
//!   does not wait: the run unwinds with [`RunOutcome::NeedsInput`](crate::agent::RunOutcome::NeedsInput), and when it resumes the
//!   answer is read back with [`Journal::reply`].

mod input;

use serde::{Deserialize, Serialize};

pub use crate::question::{
    NeedsInput, Question, QuestionAnswer, QuestionForm, QuestionOption, UserReply,
};
pub use input::{
    DurableInput, InputReply, PendingInput, PendingKind, RecoveryChoice, RecoveryReason,
};

use crate::model::ModelResponse;
use crate::output::{ToolCall, ToolResult};
use crate::tool::{BoxFuture, ReplayPolicy};

/// Where a step sits in a run: its model turn (1-based) and, for a tool call, the call's index
/// in that turn's batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StepKey {
    /// The model turn (1-based).
    pub turn: u32,
    /// The call's position in the turn's batch.
    pub index: u32,
}

impl StepKey {
    /// The key of call `index` of `turn`.
    pub fn call(turn: usize, index: usize) -> Self {
        Self {
            turn: u32::try_from(turn).unwrap_or(u32::MAX),
            index: u32::try_from(index).unwrap_or(u32::MAX),
        }
    }
}

/// What the journal knows about one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallRecord {
    /// Never started.
    New,
    /// Started (its handler may have run) and never finished.
    Interrupted {
        /// How many times it was recorded started.
        starts: u32,
    },
    /// Finished with this result.
    Finished(ToolResult),
}

/// A journal write that failed: the run cannot go on without losing the step, so it fails.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The store refused or failed the write.
    #[error("the run's journal could not be written ({step}): {message}")]
    Write {
        /// The step being written (`model turn 2`, `call 1.0 started`, ...).
        step: String,
        /// The store's reason.
        message: String,
    },
}

/// A run's journal, consulted by the agent loop and the engine at every step. Reads are answered
/// from memory (the runtime loads the run's journal before resuming it); writes are durable when
/// their future resolves.
pub trait Journal: Send + Sync + 'static {
    /// Whether this journal records steps. When false (a direct run) nothing is consulted, ASK
    /// uses the approval callback and a timeout answers the model.
    fn is_durable(&self) -> bool;

    /// The recorded response of model turn `turn`, if that turn finished before.
    fn recorded_turn(&self, turn: usize) -> Option<ModelResponse>;

    /// Records model turn `turn`'s fresh response.
    fn record_turn<'a>(
        &'a self,
        turn: usize,
        response: &'a ModelResponse,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// What is known about the call at `key`.
    fn call(&self, key: StepKey) -> CallRecord;

    /// The answer, decision or recovery choice recorded for the call at `key`.
    fn reply(&self, key: StepKey) -> Option<InputReply>;

    /// Records the call at `key` started, before its handler runs.
    fn record_started<'a>(
        &'a self,
        key: StepKey,
        call: &'a ToolCall,
        policy: ReplayPolicy,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// Records the call at `key` finished with `result`.
    fn record_finished<'a>(
        &'a self,
        key: StepKey,
        result: &'a ToolResult,
    ) -> BoxFuture<'a, Result<(), JournalError>>;
}

/// The journal of a direct run: records nothing, knows nothing.
///
/// ```
/// use harnessx::journal::{CallRecord, Journal, NoJournal, StepKey};
/// assert!(!NoJournal.is_durable());
/// assert_eq!(NoJournal.call(StepKey::call(1, 0)), CallRecord::New);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJournal;

impl Journal for NoJournal {
    fn is_durable(&self) -> bool {
        false
    }

    fn recorded_turn(&self, _turn: usize) -> Option<ModelResponse> {
        None
    }

    fn record_turn<'a>(
        &'a self,
        _turn: usize,
        _response: &'a ModelResponse,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn call(&self, _key: StepKey) -> CallRecord {
        CallRecord::New
    }

    fn reply(&self, _key: StepKey) -> Option<InputReply> {
        None
    }

    fn record_started<'a>(
        &'a self,
        _key: StepKey,
        _call: &'a ToolCall,
        _policy: ReplayPolicy,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn record_finished<'a>(
        &'a self,
        _key: StepKey,
        _result: &'a ToolResult,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::NEEDS_INPUT_MESSAGE;
    use crate::{ToolDefinition, ToolError, ToolRegistry, handler_fn};

    #[tokio::test]
    async fn a_tool_asking_for_input_in_a_direct_run_answers_the_model() {
        let registry = ToolRegistry::new();
        registry
            .register_tool(ToolDefinition::new(
                "ask",
                "Asks.",
                serde_json::json!({"type": "object"}),
                handler_fn(|_, ctx| async move {
                    assert!(ctx.extensions().get::<DurableInput>().is_none());
                    let input =
                        crate::ToolContext::new("c", "ask").with_extension(DurableInput::new(None));
                    let asked = input.extensions().get::<DurableInput>().map(|i| {
                        i.ask(
                            QuestionForm::Simple {
                                question: "Which?".into(),
                                choices: vec![],
                            },
                            None,
                        )
                    });
                    Err(asked.unwrap_or_else(|| ToolError::failed("no input")))
                }),
            ))
            .unwrap();
        let result = registry
            .execute(&ToolCall::new("c1", "ask", "{}"), None)
            .await;
        assert!(result.is_error);
        assert_eq!(result.content, NEEDS_INPUT_MESSAGE);
        let err = JournalError::Write {
            step: "model turn 1".into(),
            message: "disk full".into(),
        };
        assert_eq!(
            err.to_string(),
            "the run's journal could not be written (model turn 1): disk full"
        );
    }

    #[test]
    fn answers_are_checked_against_the_question() {
        let q = QuestionForm::Structured {
            questions: vec![Question {
                header: "Pick".into(),
                question: "Which?".into(),
                options: vec![
                    QuestionOption {
                        label: "A".into(),
                        description: None,
                    },
                    QuestionOption {
                        label: "B".into(),
                        description: None,
                    },
                ],
                multi_select: true,
            }],
        };
        let ok = UserReply::Answers {
            answers: vec![QuestionAnswer::selected(["A", "B"])],
        };
        assert!(q.check(&ok).is_ok());
        let none = UserReply::Answers {
            answers: vec![QuestionAnswer::default()],
        };
        assert_eq!(
            q.check(&none).unwrap_err(),
            "answers[0]: neither a choice nor text; choose an option or type an answer"
        );
        let empty = UserReply::Answers { answers: vec![] };
        assert_eq!(
            q.check(&empty).unwrap_err(),
            "answers: no answer given; answer at least the first question"
        );
        assert!(
            q.check(&UserReply::FreeText {
                text: "either".into()
            })
            .is_ok()
        );
    }
}
