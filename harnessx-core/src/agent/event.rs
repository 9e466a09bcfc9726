//! What a run reports: [`AgentEvent`]s while it works and the final [`RunResult`].

use serde::{Deserialize, Serialize};

use crate::engine::ToolEvent;
use crate::model::{Message, ModelErrorKind, ModelResponse, StopReason, Usage};
use crate::output::ToolResult;
use crate::planning::TodoItem;

/// One step of a streamed run, in this order for every model turn:
///
/// 1. [`TextDelta`](Self::TextDelta)s as the model writes its answer, after a
///    [`ModelFallback`](Self::ModelFallback) for each model that failed first;
/// 2. [`TurnCompleted`](Self::TurnCompleted) with the whole turn;
/// 3. if the model called tools: one [`ToolCallStart`](Self::ToolCallStart) per call, in call
///    order, then one [`ToolResult`](Self::ToolResult) per call, in call order (a result may be
///    reported before later calls finish, never before earlier ones);
/// 4. [`TodosUpdated`](Self::TodosUpdated) if the batch changed the todo list.
///
/// The last item of a successful run is [`Completed`](Self::Completed).
///
/// ```
/// use futures::StreamExt;
/// use harnessx::{Agent, AgentEvent};
/// use harnessx::model::TestModel;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
/// let agent = Agent::builder().model(TestModel::new().then_reply("Hello there")).build()?;
/// let mut events = agent.run_stream("Hi");
/// let mut text = String::new();
/// while let Some(event) = events.next().await {
///     match event? {
///         AgentEvent::TextDelta { text: delta } => text.push_str(&delta),
///         AgentEvent::Completed { result } => assert_eq!(result.output, text),
///         _ => {}
///     }
/// }
/// assert_eq!(text, "Hello there");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// More of the model's answer text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A model failed before it answered and a
    /// [`FallbackModel`](crate::model::FallbackModel) asked the next one.
    ModelFallback {
        /// The model that failed.
        from: String,
        /// The model asked next.
        to: String,
        /// The kind of failure.
        kind: ModelErrorKind,
        /// The failure's message.
        error: String,
    },
    /// The model finished a turn.
    TurnCompleted {
        /// The turn's number in this run (1-based).
        turn: usize,
        /// What the model answered.
        response: ModelResponse,
    },
    /// A tool call was accepted for execution.
    ToolCallStart {
        /// The call id.
        call_id: String,
        /// The name as the model wrote it.
        name: String,
        /// The raw argument text.
        arguments: String,
    },
    /// A tool call finished.
    ToolResult {
        /// The result the model will see.
        result: ToolResult,
    },
    /// The todo list changed.
    TodosUpdated {
        /// The whole new list.
        todos: Vec<TodoItem>,
    },
    /// The run finished with a final answer.
    Completed {
        /// The result.
        result: RunResult,
    },
}

impl From<ToolEvent> for AgentEvent {
    fn from(event: ToolEvent) -> Self {
        match event {
            ToolEvent::ToolCallStart {
                call_id,
                name,
                arguments,
            } => Self::ToolCallStart {
                call_id,
                name,
                arguments,
            },
            ToolEvent::ToolResult { result } => Self::ToolResult { result },
        }
    }
}

/// The outcome of a run: the answer and the transcript that led to it. It serialises (as do
/// its messages), so a host can log or replay it.
///
/// ```
/// use harnessx::{Agent, Message, RunResult};
/// use harnessx::model::TestModel;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let agent = Agent::builder().model(TestModel::new().then_reply("Hi!")).build()?;
/// let result = agent.run("Hello").await?;
/// assert_eq!(result.messages, [Message::user("Hello"), Message::assistant("Hi!")]);
/// let json = serde_json::to_string(&result)?;
/// assert_eq!(serde_json::from_str::<RunResult>(&json)?, result);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The model's final answer.
    pub output: String,
    /// This run's messages, from the prompt to the final answer, exactly as they were sent
    /// (todo-list attachments included).
    pub messages: Vec<Message>,
    /// How many model requests the run made.
    pub turns: usize,
    /// Token usage summed over the run.
    pub usage: Usage,
    /// The todo list when the run ended (empty without planning).
    pub todos: Vec<TodoItem>,
    /// Why the model's final turn stopped: [`StopReason::MaxTokens`] means the answer was cut at
    /// the token limit.
    #[serde(default)]
    pub stop_reason: StopReason,
}

/// How a journaled run ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RunOutcome {
    /// The model answered.
    Completed(RunResult),
    /// The run waits for a person: every item of the last batch that needs input, in call
    /// order. Resume it (run again with the same journal) once they are answered.
    NeedsInput(Vec<crate::journal::PendingInput>),
}
