//! One run, configured before it starts: [`RunRequest`], and typed answers ([`TypedResult`]).

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

use futures::Stream;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Agent, AgentError, AgentEvent, Conversation, RunResult, run};
use crate::context::Extensions;
use crate::model::{Message, OutputSchema};
use crate::permissions::PermissionManager;

/// How many times a run asks the model again when its final answer does not match the output
/// type of [`RunRequest::run_typed`].
pub const OUTPUT_RETRIES: usize = 2;

/// A run of an agent, configured before it starts: made by [`Agent::prompt`], given a
/// [`Conversation`] to continue and per-run [`deps`](Self::deps), then [`run`](Self::run),
/// [`run_typed`](Self::run_typed) or [`stream`](Self::stream).
///
/// ```
/// use harnessx::{Agent, Conversation, TestModel};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
/// let agent = Agent::builder().model(TestModel::new().then_reply("Hi!")).build()?;
/// let mut chat = Conversation::new();
/// let result = agent.prompt("Hello").conversation(&mut chat).run().await?;
/// assert_eq!(result.output, "Hi!");
/// assert_eq!(chat.len(), 2);
/// # Ok(()) }
/// ```
#[must_use = "a run request does nothing until it is run"]
pub struct RunRequest<'a> {
    agent: &'a Agent,
    prompt: String,
    conversation: Option<&'a mut Conversation>,
    extensions: Extensions,
    permissions: Option<PermissionManager>,
}

impl std::fmt::Debug for RunRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRequest")
            .field("prompt", &self.prompt)
            .field("conversation", &self.conversation.as_ref().map(|c| c.len()))
            .field("deps", &self.extensions)
            .finish()
    }
}

/// What a run needs besides its prompt and history: the values its tools' contexts carry, and
/// the shape its answer must take.
#[derive(Default)]
pub(super) struct RunSpec {
    pub(super) extensions: Extensions,
    pub(super) output: Option<OutputSpec>,
    /// This run's permission manager instead of the agent's.
    pub(super) permissions: Option<PermissionManager>,
}

/// Checks a final answer against the output type; the reason, worded for the model, when it
/// does not fit.
type Check = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The output type of a typed run: its schema, and the check of an answer against it.
pub(super) struct OutputSpec {
    pub(super) schema: OutputSchema,
    pub(super) check: Check,
}

/// The answer of a typed run, and the run that gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedResult<T> {
    /// The final answer, as the output type.
    pub output: T,
    /// The run: its messages (the answer as the JSON text the model gave), turns and usage.
    pub result: RunResult,
}

impl<'a> RunRequest<'a> {
    pub(super) fn new(agent: &'a Agent, prompt: String) -> Self {
        Self {
            agent,
            prompt,
            conversation: None,
            extensions: Extensions::new(),
            permissions: None,
        }
    }

    /// Continues `conversation`: the run sees its messages, and a run that succeeds appends its
    /// own to it (one that fails leaves it as it was).
    pub fn conversation(mut self, conversation: &'a mut Conversation) -> Self {
        self.conversation = Some(conversation);
        self
    }

    /// A value for this run's tools: a `#[tool]` function receives it by declaring a
    /// [`Deps<T>`](crate::Deps) parameter, a handler reads it from its context's
    /// [`extensions`](crate::ToolContext::extensions). One value per type; a second replaces
    /// the first.
    pub fn deps<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions = self.extensions.with(value);
        self
    }

    /// Checks this run's calls with `permissions` instead of the agent's manager: an agent
    /// shared by many conversations gives each run the grants of its own conversation (see
    /// [`PermissionManager::session`]), and a grant made during the run stays with it.
    ///
    /// ```
    /// use harnessx::{Agent, PermissionLevel, TestModel};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
    /// let agent = Agent::builder().model(TestModel::new().then_reply("Hi")).build()?;
    /// let mine = agent.permissions().session();
    /// mine.grant_session("run_bash");
    /// agent.prompt("Hello").permissions(mine).run().await?;
    /// assert!(!agent.permissions().has_session_grant("run_bash"));
    /// # Ok(()) }
    /// ```
    pub fn permissions(mut self, permissions: PermissionManager) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Runs through a [`Journal`](crate::journal::Journal), as
    /// [`Agent::run_journaled`] does, with the conversation's messages as the transcript and
    /// this request's deps and permissions: the durable runtime's entry point.
    pub async fn run_journaled(
        self,
        journal: Arc<dyn crate::journal::Journal>,
        events: Option<&(dyn Fn(AgentEvent) + Send + Sync)>,
    ) -> Result<super::RunOutcome, AgentError> {
        let transcript = self
            .conversation
            .as_deref()
            .map(|c| c.messages().to_vec())
            .unwrap_or_default();
        let spec = RunSpec {
            extensions: self.extensions,
            output: None,
            permissions: self.permissions,
        };
        run::drive_journaled(
            Arc::clone(&self.agent.inner),
            transcript,
            self.prompt,
            journal,
            spec,
            events,
        )
        .await
    }

    /// Runs until the model answers without calling a tool (see [`Agent::run`]).
    pub async fn run(self) -> Result<RunResult, AgentError> {
        self.run_with(None).await
    }

    /// Runs like [`run`](Self::run), asking for an answer of type `T`: the model is sent `T`'s
    /// JSON Schema as the shape of its final answer (the provider's structured output, where
    /// it has one), and the answer is parsed into `T`. An answer that does not parse is sent
    /// back to the model with the reason, up to [`OUTPUT_RETRIES`] times; then the run fails
    /// with [`AgentError::InvalidOutput`]. The answer that fits is parsed once, by the check
    /// that accepts it (so `T` is `Send + 'static`, as a type of plain data is).
    ///
    /// ```
    /// use harnessx::{Agent, TestModel};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
    /// struct Verdict { approved: bool, reason: String }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
    /// let model = TestModel::new()
    ///     .then_reply("Looks fine to me.")
    ///     .then_reply(r#"{"approved": true, "reason": "tests pass"}"#);
    /// let agent = Agent::builder().model(model.clone()).build()?;
    /// let typed = agent.run_typed::<Verdict>("Review the change").await?;
    /// assert_eq!(typed.output, Verdict { approved: true, reason: "tests pass".into() });
    /// // The first answer was not JSON; the model was told why and answered again.
    /// assert_eq!(typed.result.turns, 2);
    /// assert!(model.requests()[0].output.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn run_typed<T: DeserializeOwned + JsonSchema + Send + 'static>(
        self,
    ) -> Result<TypedResult<T>, AgentError> {
        let (schema, wrapped) = output_schema::<T>();
        // The check that accepts the final answer keeps what it parsed: the answer is parsed
        // once.
        let parsed = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&parsed);
        let check = move |text: &str| {
            let output = parse_output::<T>(text, wrapped)?;
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(output);
            Ok(())
        };
        let spec = OutputSpec {
            schema,
            check: Box::new(check),
        };
        let result = self.run_with(Some(spec)).await?;
        let output = parsed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| AgentError::InvalidOutput {
                attempts: 1,
                reason: "the run ended without an answer that was checked".to_owned(),
            })?;
        Ok(TypedResult { output, result })
    }

    /// Runs like [`run`](Self::run), reporting every step as an [`AgentEvent`] (see
    /// [`Agent::run_stream`]). A conversation given to the request is read, not changed: record
    /// the final result with [`Conversation::record`].
    pub fn stream(
        self,
    ) -> impl Stream<Item = Result<AgentEvent, AgentError>> + Send + Unpin + 'static {
        let history = history(self.conversation.as_deref());
        self.stream_over(history)
    }

    /// The streamed run over `history` (the conversation before the prompt); the request's own
    /// conversation, if any, is not read.
    pub(super) fn stream_over(
        self,
        history: Vec<Message>,
    ) -> impl Stream<Item = Result<AgentEvent, AgentError>> + Send + Unpin + 'static {
        let spec = RunSpec {
            extensions: self.extensions,
            output: None,
            permissions: self.permissions,
        };
        run::stream(Arc::clone(&self.agent.inner), history, self.prompt, spec)
    }

    async fn run_with(self, output: Option<OutputSpec>) -> Result<RunResult, AgentError> {
        let spec = RunSpec {
            extensions: self.extensions,
            output,
            permissions: self.permissions,
        };
        let inner = Arc::clone(&self.agent.inner);
        let result = run::drive(
            inner,
            history(self.conversation.as_deref()),
            self.prompt,
            spec,
            None,
        )
        .await?;
        if let Some(conversation) = self.conversation {
            conversation.record(&result);
        }
        Ok(result)
    }
}

/// The messages a run continues: a copy of the conversation's, or none.
fn history(conversation: Option<&Conversation>) -> Vec<Message> {
    conversation.map_or_else(Vec::new, |c| c.messages().to_vec())
}

/// `T`'s schema as the answer's schema, and whether it was wrapped: a root that is not an
/// object becomes the `result` property of one, as providers take only objects.
fn output_schema<T: JsonSchema>() -> (OutputSchema, bool) {
    let mut schema = crate::schema::schema_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    let name = output_name(&T::schema_name());
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        return (OutputSchema { name, schema }, false);
    }
    let defs = schema.as_object_mut().and_then(|m| m.remove("$defs"));
    let mut wrapper = serde_json::json!({
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
        "additionalProperties": false,
    });
    if let (Some(defs), Some(map)) = (defs, wrapper.as_object_mut()) {
        map.insert("$defs".into(), defs);
    }
    (
        OutputSchema {
            name,
            schema: wrapper,
        },
        true,
    )
}

/// A schema name providers accept: `^[a-zA-Z0-9_-]{1,64}$`.
fn output_name(type_name: &str) -> String {
    let name: String = type_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "output".to_owned()
    } else {
        name
    }
}

/// Parses an answer into `T`; the reason, worded for the model, when it does not fit. Code
/// fences around the JSON are allowed (models without structured output often add them).
fn parse_output<T: DeserializeOwned>(text: &str, wrapped: bool) -> Result<T, String> {
    let json = strip_fence(text.trim());
    let mut value: Value =
        serde_json::from_str(json).map_err(|e| format!("the answer is not JSON ({e})"))?;
    if wrapped {
        value = match value {
            Value::Object(mut map) if map.contains_key("result") => {
                map.remove("result").unwrap_or_default()
            }
            _ => return Err("the answer is not an object with a `result` field".to_owned()),
        };
    }
    serde_json::from_value(value).map_err(|e| format!("the answer does not match the schema ({e})"))
}

fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// The message that sends a bad answer back to the model.
pub(super) fn retry_message(reason: &str) -> Message {
    Message::user(format!(
        "Your final answer must be JSON matching the requested schema, but {reason}. Answer \
         again with only the JSON."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
    struct Point {
        x: i32,
    }

    #[test]
    fn objects_are_sent_as_they_are_and_other_types_wrapped() {
        let (point, wrapped) = output_schema::<Point>();
        assert!(!wrapped);
        assert_eq!(point.name, "Point");
        assert_eq!(point.schema["type"], "object");
        let (list, wrapped) = output_schema::<Vec<Point>>();
        assert!(wrapped);
        assert_eq!(list.name, "Array_of_Point");
        assert_eq!(list.schema["required"], serde_json::json!(["result"]));
        assert_eq!(list.schema["properties"]["result"]["type"], "array");
        assert!(list.schema["$defs"]["Point"].is_object());
    }

    #[test]
    fn answers_parse_with_or_without_a_fence_and_say_why_not() {
        assert_eq!(
            parse_output::<Point>(r#"{"x": 1}"#, false),
            Ok(Point { x: 1 })
        );
        assert_eq!(
            parse_output::<Point>("```json\n{\"x\": 2}\n```", false),
            Ok(Point { x: 2 })
        );
        assert_eq!(parse_output::<u8>(r#"{"result": 3}"#, true), Ok(3));
        let err = parse_output::<Point>("sure!", false).unwrap_err();
        assert!(err.starts_with("the answer is not JSON ("), "{err}");
        let err = parse_output::<Point>(r#"{"y": 1}"#, false).unwrap_err();
        assert_eq!(
            err,
            "the answer does not match the schema (missing field `x`)"
        );
        let err = parse_output::<u8>("3", true).unwrap_err();
        assert_eq!(err, "the answer is not an object with a `result` field");
    }
}
