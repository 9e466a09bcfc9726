//! The Anthropic Messages provider.

use serde_json::{Map, Value, json};

use super::http::{
    Endpoint, WireFormat, decimal, endpoint_builders, malformed, snippet, stream_error,
};
use super::sse::SseEvent;
use super::turn::{TurnAssembler, TurnDecoder};
use super::{
    Image, Message, ModelError, ModelRequest, ModelResponse, ModelStreamEvent, StopReason,
    Thinking, Usage,
};
use harnessx_core::output::ToolCall;

const PROVIDER: &str = "anthropic";

/// The `cache_control` value of a prompt-cache breakpoint.
fn cache_breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A Claude model behind the Anthropic Messages API (`POST {base_url}/v1/messages`).
///
/// - **Key**: `with_api_key`, else `ANTHROPIC_API_KEY` when [`new`](Self::new) runs, sent as
///   `x-api-key`, with `anthropic-version: 2023-06-01`.
/// - **Base URL**: `https://api.anthropic.com` unless set (without `/v1`).
/// - **`max_tokens`** is required by the API: the request's `settings.max_tokens`, else
///   [`with_max_tokens`](Self::with_max_tokens) (default 4096).
/// - **Streaming** reads the `message_start` … `message_stop` events; `input_json_delta`
///   fragments are gathered per content block, so parallel tool calls come out whole and in
///   order, with their arguments exactly as sent (an empty string when a call streamed none).
///   An `error` event becomes the matching [`ModelError`]; a stream without `message_stop` is
///   [`ModelError::Malformed`].
/// - **Prompt caching** is on unless [`with_prompt_caching(false)`](Self::with_prompt_caching).
///   Up to three `cache_control` breakpoints are placed:
///   1. on the system prompt (or, without one, on the last tool), which never moves in a run and
///      caches the tools and instructions;
///   2. on the last block of the newest message, which writes the conversation so far;
///   3. on the last block of the message just before the newest assistant turn — the newest
///      message of the previous request of an agent run, where that request wrote the cache.
///
///   So a block marked as the newest keeps its marker, byte for byte, in the next request, which
///   reads the cache exactly there however many tool results the turn added. Every user message
///   is sent in block form, so a message renders the same whether or not it carries a marker.
/// - **Messages**: consecutive tool results go into one user message as `tool_result` blocks
///   (`is_error` when the call failed); a user message is its text, an `image` block per image
///   (`base64` or `url` source), then its `attachment` as a text block (a tool message's
///   attachment is a text block inside its `tool_result`); an assistant message starts with its
///   thinking blocks, unchanged and with their signatures (`thinking`, `redacted_thinking`), as
///   the API requires when the turn called tools, then its text, then its tool calls as
///   `tool_use` blocks whose `input` is the parsed argument object — arguments that were not a
///   JSON object are sent as `{"unparsed_arguments": "<the raw text>"}`, since the API only takes
///   objects there.
/// - **Extended thinking**: [`with_thinking`](Self::with_thinking) asks for it; the `thinking`
///   and `redacted_thinking` blocks of an answer (streamed or not) come back in
///   [`ModelResponse::thinking`](harnessx_core::ModelResponse::thinking).
/// - **Usage**: `input_tokens` counts every prompt token (uncached, cache reads and cache
///   writes); `cache_read_tokens` is `cache_read_input_tokens`.
/// - **Stop reasons**: `end_turn` and `stop_sequence` → `EndTurn`, `tool_use` → `ToolUse`,
///   `max_tokens` → `MaxTokens`, others (`pause_turn`, `refusal`) → `Other`.
/// - **Errors, retry and deadline**: 429 and 5xx, 529 overloaded included, and timeouts are
///   retried under [`with_retry`](Self::with_retry) before anything was streamed; the whole
///   call, retries included, must end within [`with_deadline`](Self::with_deadline). A 400 saying `prompt is too long`
///   (or that the input and `max_tokens` exceed the context limit) is
///   [`ModelError::ContextOverflow`].
///
/// ```no_run
/// use harnessx::model::{AnthropicModel, Model, ModelRequest};
/// use harnessx::Message;
///
/// # async fn demo() -> Result<(), harnessx::ModelError> {
/// let claude = AnthropicModel::new("claude-sonnet-4-5").with_max_tokens(1024);
/// let response = claude
///     .complete(ModelRequest::new(vec![Message::user("Say hi")]))
///     .await?;
/// println!("{}", response.content);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicModel {
    name: String,
    model: String,
    max_tokens: u32,
    prompt_caching: bool,
    thinking_budget: Option<u32>,
    endpoint: Endpoint,
}

impl AnthropicModel {
    /// The default base URL.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";

    /// The default `max_tokens`.
    pub const DEFAULT_MAX_TOKENS: u32 = 4096;

    /// A model by name (`claude-sonnet-4-5`), with the key from `ANTHROPIC_API_KEY` when it is set.
    ///
    /// ```
    /// use harnessx::model::{AnthropicModel, Model};
    /// let model = AnthropicModel::new("claude-sonnet-4-5");
    /// assert_eq!(model.name(), "anthropic:claude-sonnet-4-5");
    /// assert_eq!(model.max_tokens(), 4096);
    /// ```
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        let key = std::env::var("ANTHROPIC_API_KEY")
            .ok()
            .filter(|k| !k.trim().is_empty());
        Self {
            name: format!("anthropic:{model}"),
            model,
            max_tokens: Self::DEFAULT_MAX_TOKENS,
            prompt_caching: true,
            thinking_budget: None,
            endpoint: Endpoint::new(PROVIDER, Self::DEFAULT_BASE_URL, key),
        }
    }

    /// The `max_tokens` sent when the request's settings give none.
    ///
    /// ```
    /// use harnessx::model::AnthropicModel;
    /// assert_eq!(AnthropicModel::new("claude-haiku-4-5").with_max_tokens(512).max_tokens(), 512);
    /// ```
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Whether requests mark prompt-cache breakpoints (default on): `cache_control` on the
    /// system prompt and on the last block of the newest message, so each request reads the
    /// conversation so far from Anthropic's prompt cache and writes the new turn to it. Cache
    /// writes are billed at a premium and reads at a fraction of the input price; turn it off for
    /// one-shot prompts.
    ///
    /// ```
    /// use harnessx::model::AnthropicModel;
    /// let model = AnthropicModel::new("claude-haiku-4-5").with_prompt_caching(false);
    /// # let _ = model;
    /// ```
    pub fn with_prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// Asks for extended thinking with this many tokens of budget (`thinking: {"type":
    /// "enabled", "budget_tokens": n}`); the API wants it below `max_tokens` and at least 1024.
    ///
    /// ```
    /// use harnessx::model::AnthropicModel;
    /// let model = AnthropicModel::new("claude-sonnet-4-5").with_max_tokens(8192).with_thinking(2048);
    /// assert_eq!(model.thinking_budget(), Some(2048));
    /// ```
    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    /// The extended-thinking budget, when thinking is asked for.
    ///
    /// ```
    /// use harnessx::model::AnthropicModel;
    /// assert_eq!(AnthropicModel::new("claude-haiku-4-5").thinking_budget(), None);
    /// ```
    pub fn thinking_budget(&self) -> Option<u32> {
        self.thinking_budget
    }

    /// The default `max_tokens`.
    ///
    /// ```
    /// use harnessx::model::AnthropicModel;
    /// assert_eq!(AnthropicModel::new("claude-haiku-4-5").max_tokens(), 4096);
    /// ```
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    fn request_body(&self, request: &ModelRequest, stream: bool) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.model.clone()));
        body.insert(
            "max_tokens".into(),
            request
                .settings
                .max_tokens
                .unwrap_or(self.max_tokens)
                .into(),
        );
        if let Some(system) = &request.system {
            let system = if self.prompt_caching {
                json!([{"type": "text", "text": system, "cache_control": cache_breakpoint()}])
            } else {
                Value::String(system.clone())
            };
            body.insert("system".into(), system);
        }
        let mut messages = messages(request);
        if self.prompt_caching {
            mark_cache_breakpoints(&mut messages);
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let mut tools: Vec<Value> = request
                .tools
                .iter()
                .map(harnessx_core::schema::export::anthropic)
                .collect();
            if self.prompt_caching
                && request.system.is_none()
                && let Some(Value::Object(last)) = tools.last_mut()
            {
                last.insert("cache_control".into(), cache_breakpoint());
            }
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(output) = &request.output {
            body.insert(
                "output_config".into(),
                json!({"format": {"type": "json_schema", "schema": output.schema}}),
            );
        }
        if let Some(budget) = self.thinking_budget {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        if let Some(t) = request.settings.temperature {
            body.insert("temperature".into(), decimal(t));
        }
        if stream {
            body.insert("stream".into(), Value::Bool(true));
        }
        body
    }
}

endpoint_builders!(AnthropicModel, "claude-sonnet-4-5");

impl WireFormat for AnthropicModel {
    type Stream = AnthropicStream;
    const PATH: &'static str = "/v1/messages";

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    fn body(&self, request: &ModelRequest, stream: bool) -> Map<String, Value> {
        self.request_body(request, stream)
    }

    fn authenticate(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let rb = rb.header("anthropic-version", ANTHROPIC_VERSION);
        match &self.endpoint.api_key {
            Some(key) => rb.header("x-api-key", key),
            None => rb,
        }
    }

    fn parse(body: &Value) -> Result<ModelResponse, ModelError> {
        parse_response(body)
    }
}

/// Marks the last block of the newest message, and of the message before the newest assistant
/// turn (the previous request's newest message), as cache breakpoints.
fn mark_cache_breakpoints(messages: &mut [Value]) {
    let last_assistant = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
    let previous = last_assistant.and_then(|i| i.checked_sub(1));
    let newest = messages.len().checked_sub(1);
    for index in [previous, newest].into_iter().flatten() {
        let last_block = messages[index]
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|blocks| blocks.last_mut())
            .and_then(Value::as_object_mut);
        if let Some(block) = last_block {
            block.insert("cache_control".into(), cache_breakpoint());
        }
    }
}

/// An `image` block.
fn image_block(image: &Image) -> Value {
    let source = match image {
        Image::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        Image::Url { url } => json!({"type": "url", "url": url}),
        // `Image` is non-exhaustive: a form added later goes as the URL it can always give.
        other => json!({"type": "url", "url": other.as_url()}),
    };
    json!({"type": "image", "source": source})
}

/// A `thinking` or `redacted_thinking` block, as the API sent it.
fn thinking_block(block: &Thinking) -> Value {
    match block {
        Thinking::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        Thinking::Redacted { data } => json!({"type": "redacted_thinking", "data": data}),
        // `Thinking` is non-exhaustive: a block kind added later goes back as it serialises.
        other => serde_json::to_value(other).unwrap_or_default(),
    }
}

/// The thinking block an answer's content block holds, if it is one.
fn thinking_of(block: &Value) -> Option<Thinking> {
    let s = |k| {
        block
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    match block.get("type").and_then(Value::as_str)? {
        "thinking" => Some(Thinking::Thinking {
            thinking: s("thinking"),
            signature: s("signature"),
        }),
        "redacted_thinking" => Some(Thinking::Redacted { data: s("data") }),
        _ => None,
    }
}

/// Text blocks for `content` then `attachment`, leaving out empty text (the API refuses it).
fn text_blocks(content: &str, attachment: Option<&String>) -> Vec<Value> {
    [Some(content), attachment.map(String::as_str)]
        .into_iter()
        .flatten()
        .filter(|t| !t.is_empty())
        .map(|t| json!({"type": "text", "text": t}))
        .collect()
}

/// The API refuses a message with no content blocks (an empty prompt, or an empty answer kept in
/// the history), so such a message says so in one text block instead of breaking every later
/// request of the conversation.
fn non_empty(blocks: Vec<Value>) -> Vec<Value> {
    if blocks.is_empty() {
        vec![json!({"type": "text", "text": EMPTY_MESSAGE})]
    } else {
        blocks
    }
}

/// The text sent in place of a message that had none.
const EMPTY_MESSAGE: &str = "(empty message)";

/// The `input` object for a call: the parsed arguments, `{}` for none, or the raw text kept
/// under `unparsed_arguments` when it is not a JSON object.
fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"unparsed_arguments": arguments}),
    }
}

fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(request.messages.len());
    let mut results: Vec<Value> = Vec::new();
    for message in &request.messages {
        if let Message::Tool {
            call_id,
            content,
            is_error,
            attachment,
            ..
        } = message
        {
            let mut block = Map::new();
            block.insert("type".into(), "tool_result".into());
            block.insert("tool_use_id".into(), Value::String(call_id.clone()));
            let body = match attachment {
                None => Value::String(content.clone()),
                Some(_) => Value::Array(text_blocks(content, attachment.as_ref())),
            };
            block.insert("content".into(), body);
            if *is_error {
                block.insert("is_error".into(), Value::Bool(true));
            }
            results.push(Value::Object(block));
            continue;
        }
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
        }
        out.push(match message {
            Message::User {
                content,
                attachment,
                images,
            } => {
                let mut blocks = text_blocks(content, None);
                blocks.extend(images.iter().map(image_block));
                blocks.extend(text_blocks("", attachment.as_ref()));
                json!({"role": "user", "content": non_empty(blocks)})
            }
            Message::Assistant {
                content,
                tool_calls,
                thinking,
            } => {
                let mut blocks: Vec<Value> = thinking.iter().map(thinking_block).collect();
                blocks.extend(text_blocks(content, None));
                blocks.extend(tool_calls.iter().map(|c| {
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(&c.arguments)})
                }));
                json!({"role": "assistant", "content": non_empty(blocks)})
            }
            Message::Tool { .. } => continue,
        });
    }
    if !results.is_empty() {
        out.push(json!({"role": "user", "content": results}));
    }
    out
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

/// Anthropic's token counts as reported; a `message_delta` repeats only some of them.
#[derive(Debug, Default, Clone, Copy)]
struct RawUsage {
    uncached: u64,
    cache_read: u64,
    cache_written: u64,
    output: u64,
}

impl RawUsage {
    /// Takes every count `value` reports, keeping the others.
    fn merge(&mut self, value: &Value) {
        let fields = [
            ("input_tokens", &mut self.uncached),
            ("cache_read_input_tokens", &mut self.cache_read),
            ("cache_creation_input_tokens", &mut self.cache_written),
            ("output_tokens", &mut self.output),
        ];
        for (key, slot) in fields {
            if let Some(n) = value.get(key).and_then(Value::as_u64) {
                *slot = n;
            }
        }
    }

    fn usage(self) -> Usage {
        Usage::new(
            self.uncached + self.cache_read + self.cache_written,
            self.output,
        )
        .with_cache_read_tokens(self.cache_read)
    }
}

fn parse_response(body: &Value) -> Result<ModelResponse, ModelError> {
    if body.get("type").and_then(Value::as_str) == Some("error") {
        return Err(event_error(body));
    }
    let Some(blocks) = body.get("content").and_then(Value::as_array) else {
        return Err(malformed(
            PROVIDER,
            format!(
                "the response has no `content` array: {}",
                snippet(body.to_string().as_bytes())
            ),
        ));
    };
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut thinking = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                content.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Some("tool_use") => {
                let s = |k| {
                    block
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let input = block.get("input").map(Value::to_string).unwrap_or_default();
                tool_calls.push(ToolCall::new(s("id"), s("name"), input));
            }
            _ => thinking.extend(thinking_of(block)), // server-tool blocks are left out
        }
    }
    let mut usage = RawUsage::default();
    if let Some(u) = body.get("usage") {
        usage.merge(u);
    }
    let mut response = ModelResponse::text(content)
        .with_tool_calls(tool_calls)
        .with_usage(usage.usage())
        .with_stop_reason(
            body.get("stop_reason")
                .and_then(Value::as_str)
                .map_or(StopReason::EndTurn, stop_reason),
        )
        .with_thinking(thinking);
    response.model = crate::openai::non_empty(body, "model");
    response.id = crate::openai::non_empty(body, "id");
    Ok(response)
}

/// The error in an `{"type": "error", "error": {...}}` body or event.
fn event_error(value: &Value) -> ModelError {
    let kind = value
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let message = value
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("the provider reported an error without a message")
        .to_owned();
    stream_error(PROVIDER, kind, message)
}

/// Reads Messages stream events until `message_stop`.
#[derive(Debug, Default)]
pub(crate) struct AnthropicStream {
    turn: TurnAssembler,
    usage: RawUsage,
    done: bool,
}

impl TurnDecoder for AnthropicStream {
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<ModelStreamEvent>, ModelError> {
        let value: Value = serde_json::from_str(&event.data).map_err(|e| {
            malformed(
                PROVIDER,
                format!(
                    "a stream event is not JSON ({e}): {}",
                    snippet(event.data.as_bytes())
                ),
            )
        })?;
        let mut out = Vec::new();
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                self.turn.identify(
                    value.pointer("/message/model").and_then(Value::as_str),
                    value.pointer("/message/id").and_then(Value::as_str),
                );
                if let Some(u) = value.pointer("/message/usage") {
                    self.usage.merge(u);
                }
            }
            "content_block_start" => {
                let block = value.get("content_block").unwrap_or(&Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                        self.turn.text(text, &mut out);
                    }
                    Some("tool_use") => {
                        let s = |k| block.get(k).and_then(Value::as_str);
                        // The start block's `input` is `{}`; the arguments follow as deltas.
                        let initial = match block.get("input") {
                            Some(Value::Object(m)) if !m.is_empty() => {
                                Value::Object(m.clone()).to_string()
                            }
                            _ => String::new(),
                        };
                        self.turn
                            .call(index, s("id"), s("name"), &initial, &mut out);
                    }
                    _ => {
                        if let Some(thinking) = thinking_of(block) {
                            self.turn.thinking_block(index, thinking);
                        }
                    }
                }
            }
            "content_block_delta" => {
                let delta = value.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        self.turn.text(text, &mut out);
                    }
                    Some("input_json_delta") if self.turn.has_call(index) => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        self.turn.call(index, None, None, part, &mut out);
                    }
                    Some("input_json_delta") => {
                        return Err(malformed(
                            PROVIDER,
                            format!(
                                "tool input arrived for content block {index}, which never started"
                            ),
                        ));
                    }
                    Some(kind @ ("thinking_delta" | "signature_delta")) => {
                        let s = |k| delta.get(k).and_then(Value::as_str).unwrap_or("");
                        if !self
                            .turn
                            .thinking_delta(index, s("thinking"), s("signature"))
                        {
                            return Err(malformed(
                                PROVIDER,
                                format!(
                                    "a `{kind}` arrived for content block {index}, which is not a \
                                     thinking block that started"
                                ),
                            ));
                        }
                    }
                    _ => {} // citation deltas and delta types added later
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.turn.stop_reason = Some(stop_reason(reason));
                }
                if let Some(u) = value.get("usage") {
                    self.usage.merge(u);
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(event_error(&value)),
            _ => {} // ping, content_block_stop, and event types added later
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        if !self.done {
            return Err(malformed(
                PROVIDER,
                "the stream ended before `message_stop`; the partial answer was discarded, send the \
                 request again",
            ));
        }
        self.turn.usage = self.usage.usage();
        let mut response = self.turn.response();
        if let Some(reason) = self.turn.stop_reason {
            // Anthropic's stop reason is authoritative (unlike some OpenAI-compatible servers).
            response.stop_reason = reason;
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_response_and_the_stream_name_their_model_and_id() {
        let body = json!({
            "id": "msg_01", "model": "claude-sonnet-4-5-20250929", "type": "message",
            "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"
        });
        let response = parse_response(&body).unwrap();
        assert_eq!(
            response.model.as_deref(),
            Some("claude-sonnet-4-5-20250929")
        );
        assert_eq!(response.id.as_deref(), Some("msg_01"));

        let mut stream = AnthropicStream::default();
        for data in [
            r#"{"type":"message_start","message":{"id":"msg_02","model":"claude-haiku-4-5","usage":{"input_tokens":3}}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            stream
                .on_event(SseEvent {
                    event: None,
                    data: data.to_owned(),
                })
                .unwrap();
        }
        let streamed = stream.finish().unwrap();
        assert_eq!(streamed.model.as_deref(), Some("claude-haiku-4-5"));
        assert_eq!(streamed.id.as_deref(), Some("msg_02"));
    }
}
