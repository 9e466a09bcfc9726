//! Scripted models for tests and offline use: [`FunctionModel`] and [`TestModel`].
//!
//! Both stream like a real provider: text arrives as several deltas and every tool call as a
//! start followed by argument fragments, so the streaming path of the agent loop runs offline.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Message, Model, ModelError, ModelRequest, ModelResponse, ModelStreamEvent, StopReason,
};
use crate::output::ToolCall;
use crate::tool::BoxFuture;

/// What a scripted model knows about the request it is answering besides the request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnInfo {
    /// How many requests this model answered before this one (0 for the first).
    pub turn: usize,
}

type RespondFn = dyn Fn(ModelRequest, TurnInfo) -> BoxFuture<'static, Result<ModelResponse, ModelError>>
    + Send
    + Sync;

/// A model whose answers come from a function of the request.
///
/// Use it when the answer depends on what the model is sent (the tool results so far, the
/// prompt); use [`TestModel`] for a fixed script.
///
/// ```
/// use harnessx::model::{FunctionModel, Model, ModelRequest, ModelResponse};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let model = FunctionModel::new(|request: &ModelRequest, info| {
///     ModelResponse::text(format!("turn {} saw {} messages", info.turn, request.messages.len()))
/// });
/// let response = model.complete(ModelRequest::default()).await.unwrap();
/// assert_eq!(response.content, "turn 0 saw 0 messages");
/// # }
/// ```
#[derive(Clone)]
pub struct FunctionModel {
    name: String,
    respond: Arc<RespondFn>,
    turns: Arc<Mutex<usize>>,
    fragment_chars: usize,
}

impl std::fmt::Debug for FunctionModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionModel")
            .field("name", &self.name)
            .field(
                "turns",
                &*self.turns.lock().unwrap_or_else(|p| p.into_inner()),
            )
            .finish_non_exhaustive()
    }
}

impl FunctionModel {
    /// A model answering with `f(request, turn info)`.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(&ModelRequest, TurnInfo) -> ModelResponse + Send + Sync + 'static,
    {
        Self::try_new(move |request, info| Ok(f(request, info)))
    }

    /// A model whose function may fail (to exercise error handling).
    pub fn try_new<F>(f: F) -> Self
    where
        F: Fn(&ModelRequest, TurnInfo) -> Result<ModelResponse, ModelError> + Send + Sync + 'static,
    {
        Self::new_async(move |request, info| std::future::ready(f(&request, info)))
    }

    /// A model whose answer is computed asynchronously (it may wait on a channel or a timer).
    ///
    /// ```
    /// use harnessx::model::{FunctionModel, Model, ModelRequest, ModelResponse};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let model = FunctionModel::new_async(|_request, _info| async {
    ///     tokio::task::yield_now().await;
    ///     Ok(ModelResponse::text("later"))
    /// });
    /// assert_eq!(model.complete(ModelRequest::default()).await.unwrap().content, "later");
    /// # }
    /// ```
    pub fn new_async<F, Fut>(f: F) -> Self
    where
        F: Fn(ModelRequest, TurnInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ModelResponse, ModelError>> + Send + 'static,
    {
        Self {
            name: "function".to_owned(),
            respond: Arc::new(move |request, info| Box::pin(f(request, info))),
            turns: Arc::default(),
            fragment_chars: DEFAULT_FRAGMENT_CHARS,
        }
    }

    /// Sets the name reported by [`Model::name`] (default `"function"`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets how many characters each streamed fragment carries (default 8; minimum 1).
    pub fn with_fragment_chars(mut self, chars: usize) -> Self {
        self.fragment_chars = chars.max(1);
        self
    }

    fn next_turn(&self) -> TurnInfo {
        let mut turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
        let info = TurnInfo { turn: *turns };
        *turns += 1;
        info
    }
}

impl Model for FunctionModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
        let info = self.next_turn();
        (self.respond)(request, info)
    }

    fn stream(&self, request: ModelRequest) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
        stream_response(self.complete(request), self.fragment_chars)
    }
}

const DEFAULT_FRAGMENT_CHARS: usize = 8;

/// One scripted turn of a [`TestModel`].
///
/// ```
/// use harnessx::model::{Model, ModelRequest, ScriptStep, TestModel};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let model = TestModel::new().then(ScriptStep::Fail { message: "overloaded".into() });
/// let err = model.complete(ModelRequest::default()).await.unwrap_err();
/// assert_eq!(err.to_string(), "overloaded");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ScriptStep {
    /// Answer with this response (call ids left empty are filled in as `call_<turn>_<index>`).
    Respond {
        /// The response.
        response: ModelResponse,
    },
    /// Fail the request with `ModelError::Other(message)`.
    Fail {
        /// The error message.
        message: String,
    },
    /// Answer with this text, `{result}` filled in by [`fill_result`] (what
    /// [`TestModel::then_reply`] appends).
    Reply {
        /// The text.
        text: String,
    },
}

/// `text` with every `{result}` replaced by the request's last tool result since the user's
/// last message (empty when the model called no tool since), as the server's `model = "script"`
/// and [`TestModel::then_reply`] both do.
///
/// ```
/// use harnessx::Message;
/// use harnessx::model::{ModelRequest, fill_result};
/// let mut request = ModelRequest::default();
/// let result = Message::Tool {
///     call_id: "call_0".into(),
///     name: "answer".into(),
///     content: "42".into(),
///     is_error: false,
///     attachment: None,
/// };
/// request.messages = vec![Message::user("hi"), result].into();
/// assert_eq!(fill_result("saw: {result}", &request), "saw: 42");
/// request.messages.push(Message::user("again"));
/// assert_eq!(fill_result("saw: {result}", &request), "saw: ");
/// ```
pub fn fill_result(text: &str, request: &ModelRequest) -> String {
    if !text.contains("{result}") {
        return text.to_owned();
    }
    let last = request
        .messages
        .iter()
        .rev()
        .take_while(|m| !matches!(m, Message::User { .. }))
        .find_map(|m| match m {
            Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        });
    text.replace("{result}", last.unwrap_or(""))
}

#[derive(Debug, Default)]
struct Script {
    steps: VecDeque<ScriptStep>,
    total: usize,
    requests: Vec<ModelRequest>,
}

/// A model that plays a fixed script of responses and records every request it receives.
///
/// Clones share the script and the recorded requests, so keep a clone to inspect what the agent
/// sent. When the script runs out, the request fails with a [`ModelError::Other`] saying so.
/// [`then_reply`](Self::then_reply) fills `{result}` with the last tool result, as the server's
/// scripted model does.
///
/// The script is played in the order requests arrive, by this model value and its clones. A
/// durable runtime (`harnessx-runtime`) builds each agent once per process, so its runs share
/// one script, and a run resumed after a restart meets a fresh `TestModel` at its first step
/// while the run asks for the turn after its journaled ones. For durable runs, answer by the
/// run's position instead: a [`FunctionModel`] counting the assistant turns since the last user
/// message, as the server's `model = "script"` does.
///
/// ```
/// use harnessx::model::{Model, ModelRequest, TestModel};
/// use serde_json::json;
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let model = TestModel::new()
///     .then_call("add", json!({"a": 2, "b": 3}))
///     .then_reply("2 + 3 = 5");
/// let first = model.complete(ModelRequest::default()).await.unwrap();
/// assert_eq!(first.tool_calls[0].name, "add");
/// assert_eq!(first.tool_calls[0].id, "call_0_0");
/// let second = model.complete(ModelRequest::default()).await.unwrap();
/// assert_eq!(second.content, "2 + 3 = 5");
/// assert_eq!(model.requests().len(), 2);
/// let err = model.complete(ModelRequest::default()).await.unwrap_err();
/// assert!(err.to_string().starts_with("the TestModel script is exhausted"));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TestModel {
    name: String,
    script: Arc<Mutex<Script>>,
    fragment_chars: usize,
}

impl Default for TestModel {
    fn default() -> Self {
        Self::new()
    }
}

impl TestModel {
    /// An empty script.
    pub fn new() -> Self {
        Self {
            name: "test".to_owned(),
            script: Arc::default(),
            fragment_chars: DEFAULT_FRAGMENT_CHARS,
        }
    }

    /// A script of whole responses, played in order.
    pub fn from_responses(responses: impl IntoIterator<Item = ModelResponse>) -> Self {
        responses
            .into_iter()
            .fold(Self::new(), |model, response| model.then_respond(response))
    }

    /// Sets the name reported by [`Model::name`] (default `"test"`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets how many characters each streamed fragment carries (default 8; minimum 1).
    pub fn with_fragment_chars(mut self, chars: usize) -> Self {
        self.fragment_chars = chars.max(1);
        self
    }

    /// Appends a step.
    pub fn then(self, step: ScriptStep) -> Self {
        {
            let mut script = self.lock();
            script.steps.push_back(step);
            script.total += 1;
        }
        self
    }

    /// Appends a whole response.
    pub fn then_respond(self, response: ModelResponse) -> Self {
        self.then(ScriptStep::Respond { response })
    }

    /// Appends a final text answer (no tool calls); `{result}` in it becomes the last tool
    /// result since the user's last message (see [`fill_result`]).
    ///
    /// ```
    /// use harnessx::{Agent, ToolDefinition, ToolOutput, handler_fn};
    /// use harnessx::model::TestModel;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let answer = ToolDefinition::new("answer", "The answer.", json!({"type": "object"}),
    ///     handler_fn(|_, _| async { Ok(ToolOutput::text("42")) }));
    /// let model = TestModel::new().then_call("answer", json!({})).then_reply("It is {result}.");
    /// let agent = Agent::builder().model(model).tool(answer).build()?;
    /// assert_eq!(agent.run("What is it?").await?.output, "It is 42.");
    /// # Ok(()) }
    /// ```
    pub fn then_reply(self, text: impl Into<String>) -> Self {
        self.then(ScriptStep::Reply { text: text.into() })
    }

    /// Appends a turn calling one tool with JSON arguments.
    pub fn then_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.then_calls([ToolCall::json("", name, arguments)])
    }

    /// Appends a turn calling one tool with raw argument text (which may be malformed JSON).
    pub fn then_raw_call(self, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.then_calls([ToolCall::new("", name, arguments)])
    }

    /// Appends a turn making several calls at once. Empty ids are filled in.
    pub fn then_calls(self, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        self.then_respond(ModelResponse {
            tool_calls: calls.into_iter().collect(),
            stop_reason: StopReason::ToolUse,
            ..ModelResponse::default()
        })
    }

    /// Appends a turn that fails with `ModelError::Other(message)`.
    pub fn then_fail(self, message: impl Into<String>) -> Self {
        self.then(ScriptStep::Fail {
            message: message.into(),
        })
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// How many scripted steps have not been played yet.
    pub fn remaining(&self) -> usize {
        self.lock().steps.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn answer(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let mut script = self.lock();
        let turn = script.requests.len();
        let step = script.steps.pop_front();
        if let Some(ScriptStep::Reply { text }) = &step {
            let content = fill_result(text, &request);
            script.requests.push(request);
            return Ok(ModelResponse {
                content,
                stop_reason: StopReason::EndTurn,
                ..ModelResponse::default()
            });
        }
        script.requests.push(request);
        match step {
            Some(ScriptStep::Respond { mut response }) => {
                for (i, call) in response.tool_calls.iter_mut().enumerate() {
                    if call.id.is_empty() {
                        call.id = format!("call_{turn}_{i}");
                    }
                }
                Ok(response)
            }
            Some(ScriptStep::Fail { message }) => Err(ModelError::Other(message)),
            Some(ScriptStep::Reply { .. }) => Err(ModelError::Other(
                "the TestModel reply step was not answered".to_owned(),
            )),
            None => Err(ModelError::Other(format!(
                "the TestModel script is exhausted: request {} arrived but the script held {} {}; \
                 add more with `then_reply`/`then_call`",
                turn + 1,
                script.total,
                if script.total == 1 { "step" } else { "steps" }
            ))),
        }
    }
}

impl Model for TestModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
        let answer = self.answer(request);
        Box::pin(std::future::ready(answer))
    }

    fn stream(&self, request: ModelRequest) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
        stream_response(self.complete(request), self.fragment_chars)
    }
}

/// Streams a response as a provider would: text in deltas, each tool call as a start plus
/// argument fragments, then the completed turn.
fn stream_response<'a>(
    response: BoxFuture<'a, Result<ModelResponse, ModelError>>,
    fragment_chars: usize,
) -> BoxStream<'a, Result<ModelStreamEvent, ModelError>> {
    use futures::StreamExt;
    let events = async move {
        match response.await {
            Ok(r) => response_events(r, fragment_chars)
                .into_iter()
                .map(Ok)
                .collect(),
            Err(e) => vec![Err(e)],
        }
    };
    futures::stream::once(events)
        .flat_map(futures::stream::iter)
        .boxed()
}

/// The events a streamed `response` comes as: its text in deltas of `fragment_chars`
/// characters, each tool call as a start and argument fragments, then the completed turn.
#[doc(hidden)]
pub fn response_events(response: ModelResponse, fragment_chars: usize) -> Vec<ModelStreamEvent> {
    let mut events = Vec::new();
    for text in fragments(&response.content, fragment_chars) {
        events.push(ModelStreamEvent::TextDelta { text });
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        events.push(ModelStreamEvent::ToolCallStarted {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        for fragment in fragments(&call.arguments, fragment_chars) {
            events.push(ModelStreamEvent::ToolCallDelta { index, fragment });
        }
    }
    events.push(ModelStreamEvent::Completed { response });
    events
}

fn fragments(text: &str, chars: usize) -> Vec<String> {
    let chars_vec: Vec<char> = text.chars().collect();
    chars_vec
        .chunks(chars.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[test]
    fn fragments_split_on_characters() {
        assert_eq!(fragments("héllo wörld", 4), vec!["héll", "o wö", "rld"]);
        assert!(fragments("", 4).is_empty());
    }

    #[tokio::test]
    async fn a_reply_step_fills_result_and_a_whole_response_is_kept_as_written() {
        let model = TestModel::new()
            .then_reply("got {result}")
            .then_respond(ModelResponse::text("literal {result}"));
        let request = ModelRequest {
            messages: vec![
                Message::user("go"),
                Message::Tool {
                    call_id: "c".into(),
                    name: "t".into(),
                    content: "7".into(),
                    is_error: false,
                    attachment: None,
                },
            ]
            .into(),
            ..ModelRequest::default()
        };
        let first = model.complete(request.clone()).await.unwrap();
        assert_eq!(first.content, "got 7");
        assert_eq!(first.stop_reason, StopReason::EndTurn);
        let second = model.complete(request).await.unwrap();
        assert_eq!(second.content, "literal {result}");
        assert_eq!(model.requests().len(), 2);
        let step: ScriptStep = serde_json::from_str(r#"{"type": "reply", "text": "x"}"#).unwrap();
        assert_eq!(step, ScriptStep::Reply { text: "x".into() });
    }

    #[tokio::test]
    async fn stream_reassembles_to_the_same_response() {
        let model = TestModel::new()
            .with_fragment_chars(3)
            .then_respond(ModelResponse {
                content: "thinking".into(),
                tool_calls: vec![ToolCall::new("x", "t", r#"{"a": 1}"#)],
                ..Default::default()
            });
        let events: Vec<_> = model.stream(ModelRequest::default()).collect().await;
        let mut text = String::new();
        let mut args = String::new();
        for e in &events {
            match e.as_ref().unwrap() {
                ModelStreamEvent::TextDelta { text: t } => text.push_str(t),
                ModelStreamEvent::ToolCallDelta { fragment, .. } => args.push_str(fragment),
                _ => {}
            }
        }
        assert_eq!(text, "thinking");
        assert_eq!(args, r#"{"a": 1}"#);
        assert!(matches!(
            events.last().unwrap().as_ref().unwrap(),
            ModelStreamEvent::Completed { .. }
        ));
    }
}
