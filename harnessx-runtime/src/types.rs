//! The runtime's vocabulary: run ids and states, what starts a run, what answers it, and what
//! a caller reads back.

use std::fmt;

use harnessx::RunResult;
use harnessx::journal::{PendingInput, QuestionAnswer, RecoveryChoice};
use harnessx::planning::TodoItem;
use harnessx::{Message, ModelResponse, ToolResult};
use serde::{Deserialize, Serialize};

/// A run's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "run {}", self.0)
    }
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Waiting for a worker.
    Queued,
    /// A worker is driving it.
    Running,
    /// Paused until a person answers (see [`RunView::needs_input`]); holds no task.
    WaitingInput,
    /// The model answered.
    Completed,
    /// It failed; [`RunView::error`] says why.
    Failed,
    /// It was cancelled.
    Cancelled,
}

impl RunState {
    /// The stored form: `queued`, `running`, `waiting_input`, `completed`, `failed`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::WaitingInput => "waiting_input",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "waiting_input" => Self::WaitingInput,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Completed, failed or cancelled.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What starts a run.
///
/// ```
/// use harnessx_runtime::StartRun;
/// let start = StartRun::new("support", "Where is my order?").conversation("c-42").idempotency_key("req-1");
/// assert_eq!(start.conversation.as_deref(), Some("c-42"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartRun {
    /// The registered agent's name.
    pub agent: String,
    /// The user's message.
    pub input: String,
    /// The conversation (a new one, named after the run, when `None`).
    pub conversation: Option<String>,
    /// Starting again with the same key returns the first run.
    pub idempotency_key: Option<String>,
    /// The stored agent's version to run (the runtime's [`AgentCatalog`](crate::AgentCatalog)
    /// gives the current one when `None`).
    pub agent_version: Option<u64>,
    /// What to do when the conversation's run is still going (default: enqueue).
    #[serde(default)]
    pub multitask: Multitask,
}

/// What a new run of a conversation does while an earlier run of it is still going (queued,
/// running, or waiting for an approval). Runs of one conversation never run at once: each sees
/// the transcript its predecessors left. A message while a question is pending is the
/// question's answer whatever the strategy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Multitask {
    /// Queue it: it starts when the earlier runs end.
    #[default]
    Enqueue,
    /// Refuse it ([`InputError::ConversationBusy`](crate::InputError::ConversationBusy)).
    Reject,
    /// Cancel the earlier runs, then start it.
    Interrupt,
}

impl StartRun {
    /// A run of `agent` on `input`.
    pub fn new(agent: impl Into<String>, input: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            input: input.into(),
            ..Self::default()
        }
    }

    /// In this conversation.
    pub fn conversation(mut self, id: impl Into<String>) -> Self {
        self.conversation = Some(id.into());
        self
    }

    /// With this idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// With this strategy when the conversation's run is still going.
    pub fn multitask(mut self, strategy: Multitask) -> Self {
        self.multitask = strategy;
        self
    }

    /// On this version of a stored agent.
    pub fn agent_version(mut self, version: u64) -> Self {
        self.agent_version = Some(version);
        self
    }
}

/// An answer to a pending question or recovery question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Answer {
    /// Selected options (and/or text) per question, in order.
    Selections {
        /// One answer per question.
        answers: Vec<QuestionAnswer>,
    },
    /// The person's own words.
    Text {
        /// The text.
        text: String,
    },
    /// The answer to a recovery question about a `manual` call.
    Recovery {
        /// The choice.
        choice: RecoveryChoice,
    },
}

/// A decision on a pending approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run this call (also accepted as `allow`, the command line's word).
    #[serde(alias = "allow")]
    AllowOnce,
    /// Run it, and every later call of the same tool in this conversation, without asking
    /// (also accepted as `conversation`).
    #[serde(alias = "conversation")]
    AllowForConversation,
    /// Do not run it; the model is told permission was denied.
    Deny,
}

/// One event of a run, as stored and streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEvent {
    /// Model text (deltas of one turn are coalesced).
    TextDelta {
        /// The text.
        text: String,
    },
    /// A model turn finished.
    TurnCompleted {
        /// The turn (1-based).
        turn: u32,
        /// The response.
        response: ModelResponse,
    },
    /// A tool call started.
    ToolCallStarted {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The raw argument text.
        arguments: String,
    },
    /// A tool call finished.
    ToolResult {
        /// The result.
        result: ToolResult,
    },
    /// The todo list changed.
    TodosUpdated {
        /// The whole list.
        todos: Vec<TodoItem>,
    },
    /// The run asks a person: a `question`, an `approval` or a `recovery` question.
    NeedsInput {
        /// What it waits for.
        pending: PendingInput,
        /// When a question expires (ms since the Unix epoch); approvals and recovery questions
        /// wait.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline_ms: Option<i64>,
    },
    /// A pending item was answered (or expired).
    Answered {
        /// The call it answered.
        call_id: String,
        /// The reply.
        reply: harnessx::journal::InputReply,
    },
    /// The run changed state.
    State {
        /// The new state.
        state: RunState,
    },
    /// The run completed.
    Completed {
        /// The result.
        result: RunResult,
    },
    /// The run failed.
    Failed {
        /// Why.
        error: String,
    },
}

/// A stored event with its sequence number (1-based, per run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// The run.
    pub run: RunId,
    /// Its sequence number in the run.
    pub seq: u64,
    /// The event.
    pub event: RunEvent,
}

/// A run as a caller sees it.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The id.
    pub id: RunId,
    /// The agent's name.
    pub agent: String,
    /// The conversation.
    pub conversation: String,
    /// The user's message.
    pub input: String,
    /// The state.
    pub state: RunState,
    /// What it waits for, first unanswered first, each with its deadline (empty unless
    /// `waiting_input`).
    pub needs_input: Vec<crate::store::Asked>,
    /// The result, once completed.
    pub result: Option<RunResult>,
    /// Why it failed.
    pub error: Option<String>,
    /// The stored agent's version it runs (`None`: an agent registered in code).
    pub agent_version: Option<u64>,
    /// When it was created (ms since the Unix epoch).
    pub created_ms: i64,
}

/// A conversation: its transcript and the question it waits on, if any.
#[derive(Debug, Clone, Serialize)]
pub struct ConversationView {
    /// The id.
    pub id: String,
    /// Every completed run's messages, in order.
    pub messages: Vec<Message>,
    /// The runs, oldest first.
    pub runs: Vec<RunId>,
    /// The question a run of this conversation waits on: a new message answers it.
    pub pending_question: Option<(RunId, crate::store::Asked)>,
}
