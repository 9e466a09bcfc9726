//! The seam durable runs use: a [`Journal`] the agent loop reads finished steps back from and
//! writes each new step to before it goes on.
//!
//! There is one agent loop. [`Agent::run`](crate::Agent::run) drives it with [`NoJournal`], which
//! records nothing; a durable runtime (the `harnessx-runtime` crate) drives the same loop with
//! [`Agent::run_journaled`](crate::Agent::run_journaled) and a journal backed by its store:
//!
//! - before a model turn the loop asks [`Journal::recorded_turn`]; a recorded response is used
//!   instead of calling the model, a fresh one is written with [`Journal::record_turn`];
//! - before a tool call the engine asks [`CallJournal::call`]: a [`CallRecord::Finished`] call
//!   answers with its stored result and never runs again; an [`CallRecord::Interrupted`] call
//!   (started, never finished) is run again when its tool is `safe` or `idempotent`, and raises a
//!   recovery question when it is `manual`; a new call is recorded started
//!   ([`CallJournal::record_started`]) before its handler runs and finished after; a call decided
//!   without running its handler (an unknown tool or invalid arguments, a hook's answer or
//!   denial, a `deny` permission, arguments a hook made invalid) is recorded started and
//!   finished with that decision, so a resume reads it back rather than deciding again after
//!   the model has seen it;
//! - a call that needs a person (an `ask_user` question, an ASK approval, a recovery question)
//!   does not wait: the run unwinds with [`RunOutcome::NeedsInput`](crate::agent::RunOutcome::NeedsInput), and when it resumes the
//!   answer is read back with [`CallJournal::reply`].
//!
//! A journal is two traits: [`CallJournal`], the calls the engine consults and records, and
//! [`Journal`], which adds the model turns the loop consults and records. The engine never
//! sees the turns, so it depends on the smaller trait only.

use crate::model::ModelResponse;
use crate::tool::BoxFuture;

pub use crate::engine::call_journal::{
    CallJournal, CallRecord, DurableInput, InputReply, JournalError, NoJournal, PendingInput,
    PendingKind, RecoveryChoice, RecoveryReason, StepKey,
};
pub use crate::question::{
    NeedsInput, Question, QuestionAnswer, QuestionForm, QuestionOption, UserReply,
};

/// A run's journal, consulted by the agent loop at every model turn and (through
/// [`CallJournal`], the engine's half) at every tool call.
pub trait Journal: CallJournal {
    /// The recorded response of model turn `turn`, if that turn finished before.
    fn recorded_turn(&self, turn: usize) -> Option<ModelResponse>;

    /// Records model turn `turn`'s fresh response.
    fn record_turn<'a>(
        &'a self,
        turn: usize,
        response: &'a ModelResponse,
    ) -> BoxFuture<'a, Result<(), JournalError>>;
}

impl Journal for NoJournal {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::NEEDS_INPUT_MESSAGE;
    use crate::{ToolCall, ToolDefinition, ToolError, ToolRegistry, handler_fn};

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
