//! The messages a run continues from: [`Conversation`].

use serde::{Deserialize, Serialize};

use super::RunResult;
use crate::model::Message;

/// A conversation: the messages of the runs so far, kept by the caller and handed to each run
/// that continues it ([`Agent::run_in`](super::Agent::run_in)). An agent keeps no conversation
/// of its own, so one agent serves many conversations at once.
///
/// A run that succeeds appends its messages (the prompt, each model turn and tool result, the
/// answer) to the conversation; a run that fails leaves it as it was. It serialises, so a host
/// can store it between requests.
///
/// ```
/// use harnessx::{Agent, Conversation, Message, TestModel};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
/// let model = TestModel::new().then_reply("Hi!").then_reply("Still here.");
/// let agent = Agent::builder().model(model.clone()).build()?;
/// let mut chat = Conversation::new();
/// agent.run_in(&mut chat, "Hello").await?;
/// agent.run_in(&mut chat, "Are you there?").await?;
/// assert_eq!(chat.len(), 4);
/// // The second request carried the first exchange.
/// assert_eq!(model.requests()[1].messages[..2], [Message::user("Hello"), Message::assistant("Hi!")]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Conversation {
    messages: Vec<Message>,
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The messages so far, oldest first.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, taken out.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// How many messages there are.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Appends a message (a note from the host, a message of another source).
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Appends the messages of a run that continued this conversation (what
    /// [`Agent::run_in`](super::Agent::run_in) does itself; for
    /// [`Agent::run_stream_in`](super::Agent::run_stream_in), call it with the final result).
    pub fn record(&mut self, result: &RunResult) {
        self.messages.extend(result.messages.iter().cloned());
    }

    /// Forgets every message.
    pub fn clear(&mut self) {
        self.messages.clear();
    }
}

impl From<Vec<Message>> for Conversation {
    fn from(messages: Vec<Message>) -> Self {
        Self { messages }
    }
}
