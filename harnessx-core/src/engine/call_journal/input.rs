//! What a durable run can wait for ([`PendingInput`]) and what answers it ([`InputReply`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StepKey;
use crate::permissions::{ApprovalDecision, ApprovalRequest};
use crate::question::{NeedsInput, QuestionForm, UserReply};

/// Why a recovery question was asked about a `manual` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryReason {
    /// The call started and the run stopped (the process died) before it finished.
    Interrupted,
    /// The call timed out in a durable run.
    TimedOut,
}

/// A person's answer to a recovery question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "choice", rename_all = "snake_case")]
pub enum RecoveryChoice {
    /// The call took effect; `result` is what it returned, when the person knows it.
    TookEffect {
        /// The result the model should see.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
    },
    /// Run the call again.
    RunAgain,
    /// Do not run it; the model is told it was skipped, with the note.
    Skip {
        /// Why, or what to do instead.
        #[serde(default)]
        note: String,
    },
}

/// What a paused run waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PendingKind {
    /// `ask_user` asked the person.
    Question {
        /// The question.
        form: QuestionForm,
        /// How long it may wait in milliseconds, when the tool chose (else the runtime's window).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        window_ms: Option<u64>,
    },
    /// A call needs approval (its tool is ASK).
    Approval {
        /// The call awaiting approval.
        request: ApprovalRequest,
    },
    /// A `manual` call's outcome is unknown.
    Recovery {
        /// Why.
        reason: RecoveryReason,
        /// The tool.
        tool_name: String,
        /// The arguments it was called with.
        arguments: Value,
    },
}

/// One thing a paused run waits for, tied to the call that raised it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingInput {
    /// Where in the run: the turn and the call's index in it.
    pub key: StepKey,
    /// The model's call id.
    pub call_id: String,
    /// What is asked.
    #[serde(flatten)]
    pub kind: PendingKind,
}

/// What answered a [`PendingInput`]: read back from the journal when the run resumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputReply {
    /// The person answered a question.
    Answer {
        /// The reply.
        reply: UserReply,
    },
    /// Nobody answered within the window.
    Expired {
        /// The window, in whole seconds.
        window_seconds: u64,
    },
    /// An approval decision.
    Decision {
        /// The decision.
        decision: ApprovalDecision,
        /// The arguments a person edited before allowing the call: it runs with these instead
        /// of the model's (checked against the tool's input schema first; arguments that do
        /// not fit are refused like a model's invalid call).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Value>,
    },
    /// A recovery choice.
    Recovery {
        /// The choice.
        choice: RecoveryChoice,
    },
}

/// A durable run's input channel for one call, handed to the handler in its
/// [`ToolContext`](crate::ToolContext) (in its [`extensions`](crate::ToolContext::extensions)).
///
/// A tool that needs a person asks with [`ask`](Self::ask) (it returns the error to return);
/// the run pauses, and when it resumes the handler runs again and finds the answer in
/// [`reply`](Self::reply).
#[derive(Debug, Clone)]
pub struct DurableInput {
    pub(crate) reply: Option<InputReply>,
}

impl DurableInput {
    /// The input channel of a call, with the answer recorded for it (for tests and custom
    /// runtimes; the engine gives a journaled call its own through the call's
    /// [`extensions`](crate::ToolContext::extensions)).
    pub fn new(reply: Option<InputReply>) -> Self {
        Self { reply }
    }

    /// The answer recorded for this call, if the person answered (or the window expired).
    pub fn reply(&self) -> Option<&InputReply> {
        self.reply.as_ref()
    }

    /// The error that pauses the run until `form` is answered.
    pub fn ask(&self, form: QuestionForm, window: Option<std::time::Duration>) -> crate::ToolError {
        crate::ToolError::NeedsInput(Box::new(NeedsInput {
            form,
            window_ms: window.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX)),
        }))
    }
}
