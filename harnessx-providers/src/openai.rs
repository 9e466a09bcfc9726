//! The OpenAI Chat Completions provider, which also serves the compatible servers: vLLM,
//! Ollama, llama.cpp server, LM Studio, OpenRouter and the like.

use serde_json::{Map, Value, json};

use super::http::{
    Endpoint, WireFormat, decimal, endpoint_builders, is_context_overflow, malformed, snippet,
    stream_error,
};
use super::sse::SseEvent;
use super::turn::{TurnAssembler, TurnDecoder};
use super::{
    Image, Message, ModelError, ModelRequest, ModelResponse, ModelStreamEvent, StopReason, Usage,
};
use harnessx_core::output::ToolCall;
use harnessx_core::schema::export;
use harnessx_core::tool::ToolParams;

const PROVIDER: &str = "openai";

/// A model behind an OpenAI Chat Completions-compatible endpoint (`POST {base_url}/chat/completions`).
///
/// - **Key**: `with_api_key`, else `OPENAI_API_KEY` when [`new`](Self::new) runs, sent as
///   `Authorization: Bearer …`. Local servers need none: use [`without_api_key`](Self::without_api_key).
/// - **Base URL**: `https://api.openai.com/v1` unless set, e.g. `http://localhost:11434/v1`
///   (Ollama), `http://localhost:8000/v1` (vLLM), `http://localhost:8080/v1` (llama.cpp server),
///   `http://localhost:1234/v1` (LM Studio), `https://openrouter.ai/api/v1`.
/// - **Streaming** uses `stream: true` with `stream_options.include_usage`; tool-call argument
///   fragments are gathered by their `index`, so several parallel calls come out whole and in order.
///   Arguments are the raw text the server sent, never repaired: the engine answers malformed ones
///   with an error result the model can act on.
/// - **Messages**: a user message with images or an `attachment` is sent as content parts: its
///   text, then one `image_url` part per image (a `data:` URL for base64 data), then the
///   attachment as a text part (a tool message: its text, then the attachment); an assistant
///   message's thinking blocks are not sent (Chat Completions has no place for them);
///   `max_tokens` and `temperature` come from the request's settings.
/// - **Tools and strict mode**: tools are sent in the `{"type": "function", "function": {…}}`
///   form. When every tool's schema can be expressed in strict mode
///   ([`export::openai_strict`](harnessx_core::schema::export::openai_strict)), all of them are sent
///   strict (`"strict": true`, optional parameters made required and nullable) and the `null`s
///   the model then sends for parameters it leaves out are removed from the arguments of the
///   completed turn ([`export::relax_strict_arguments`](harnessx_core::schema::export::relax_strict_arguments)),
///   so the tools' defaults apply; the argument fragments streamed before are as the model wrote
///   them. Otherwise every tool is sent with its plain schema. Switch it per model with
///   [`with_strict_tools`](Self::with_strict_tools), or per agent with
///   [`ModelSettings::strict_tools`](harnessx_core::model::ModelSettings::strict_tools).
/// - **Usage**: `prompt_tokens` → `input_tokens`, `completion_tokens` → `output_tokens`,
///   `prompt_tokens_details.cached_tokens` → `cache_read_tokens`.
/// - **Stop reasons**: `stop` → `EndTurn` (or `ToolUse` when the turn holds tool calls, as some
///   local servers report `stop` there), `tool_calls` → `ToolUse`, `length` → `MaxTokens`,
///   anything else → `Other`.
/// - **Retry and deadline**: HTTP 429 (honouring `retry-after-ms` / `retry-after`), 5xx,
///   timeouts and connection failures are retried under [`with_retry`](Self::with_retry) before
///   anything was streamed; the whole call, retries included, must end within
///   [`with_deadline`](Self::with_deadline).
/// - **Errors**: a 400 whose code is `context_length_exceeded` (or whose message says the
///   context length was exceeded, as vLLM and llama.cpp server say it) is
///   [`ModelError::ContextOverflow`].
/// - **A JSON answer to a streaming request** (some compatible servers send one) is read as the
///   whole turn and reported as a stream would be: the text as one delta, each tool call as a
///   start and its arguments, then the completed turn.
///
/// ```no_run
/// use harnessx::model::{Model, ModelRequest, OpenAiModel};
/// use harnessx::Message;
///
/// # async fn demo() -> Result<(), harnessx::ModelError> {
/// let ollama = OpenAiModel::new("qwen3:8b")
///     .with_base_url("http://localhost:11434/v1")
///     .without_api_key();
/// let response = ollama
///     .complete(ModelRequest::new(vec![Message::user("Say hi")]))
///     .await?;
/// println!("{}", response.content);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    name: String,
    model: String,
    strict_tools: bool,
    endpoint: Endpoint,
}

impl OpenAiModel {
    /// The default base URL.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A model by name (`gpt-4o-mini`), with the key from `OPENAI_API_KEY` when it is set.
    ///
    /// ```
    /// use harnessx::model::{Model, OpenAiModel};
    /// let model = OpenAiModel::new("gpt-4o-mini");
    /// assert_eq!(model.name(), "openai:gpt-4o-mini");
    /// assert_eq!(model.base_url(), "https://api.openai.com/v1");
    /// ```
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        let key = std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.trim().is_empty());
        Self {
            name: format!("openai:{model}"),
            model,
            strict_tools: true,
            endpoint: Endpoint::new(PROVIDER, Self::DEFAULT_BASE_URL, key),
        }
    }

    /// Whether tools are declared in strict mode when every schema allows it (default on);
    /// a request's [`ModelSettings::strict_tools`](harnessx_core::model::ModelSettings::strict_tools)
    /// overrides it.
    ///
    /// ```
    /// use harnessx::model::OpenAiModel;
    /// let model = OpenAiModel::new("gpt-4o-mini").with_strict_tools(false);
    /// assert!(!model.strict_tools());
    /// ```
    pub fn with_strict_tools(mut self, on: bool) -> Self {
        self.strict_tools = on;
        self
    }

    /// Whether tools are declared in strict mode when every schema allows it.
    ///
    /// ```
    /// use harnessx::model::OpenAiModel;
    /// assert!(OpenAiModel::new("gpt-4o-mini").strict_tools());
    /// ```
    pub fn strict_tools(&self) -> bool {
        self.strict_tools
    }

    /// The request's tools in strict mode, when strict mode is on for it and every tool qualifies.
    fn strict_declarations(&self, request: &ModelRequest) -> Option<Vec<Value>> {
        if !request.settings.strict_tools.unwrap_or(self.strict_tools) {
            return None;
        }
        let declared: Result<Vec<Value>, _> =
            request.tools.iter().map(export::openai_strict).collect();
        declared
            .map_err(|e| tracing::debug!(%e, "sending the tools without strict mode"))
            .ok()
    }

    fn request_body(&self, request: &ModelRequest, stream: bool) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.model.clone()));
        body.insert("messages".into(), Value::Array(messages(request)));
        if !request.tools.is_empty() {
            let tools = self
                .strict_declarations(request)
                .unwrap_or_else(|| request.tools.iter().map(export::openai).collect());
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(output) = &request.output {
            body.insert(
                "response_format".into(),
                export::openai_response_format(output),
            );
        }
        if let Some(max) = request.settings.max_tokens {
            body.insert("max_tokens".into(), max.into());
        }
        if let Some(t) = request.settings.temperature {
            body.insert("temperature".into(), decimal(t));
        }
        if stream {
            body.insert("stream".into(), Value::Bool(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        body
    }
}

endpoint_builders!(OpenAiModel, "gpt-4o-mini");

impl WireFormat for OpenAiModel {
    type Stream = OpenAiStream;
    const PATH: &'static str = "/chat/completions";

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
        match &self.endpoint.api_key {
            Some(key) => rb.bearer_auth(key),
            None => rb,
        }
    }

    fn parse(body: &Value) -> Result<ModelResponse, ModelError> {
        parse_response(body)
    }

    fn finish(&self, request: &ModelRequest, response: &mut ModelResponse) {
        if request.tools.is_empty() || self.strict_declarations(request).is_none() {
            return;
        }
        for call in &mut response.tool_calls {
            if let Some(params) = request.tools.iter().find(|t| t.name == call.name) {
                relax_arguments(params, &mut call.arguments);
            }
        }
    }
}

/// Removes the `null`s strict mode made the model send for parameters it left out; arguments
/// that are not a JSON object, or hold no such `null`, are left exactly as sent.
fn relax_arguments(params: &ToolParams, arguments: &mut String) {
    let Ok(mut value @ Value::Object(_)) = serde_json::from_str::<Value>(arguments) else {
        return;
    };
    let before = value.clone();
    export::relax_strict_arguments(params, &mut value);
    if value != before {
        *arguments = value.to_string();
    }
}

/// `content` as a string, or as parts when there are images or an attachment: the text, an
/// `image_url` part per image, then the attachment as a text part.
fn content_parts(content: &str, images: &[Image], attachment: Option<&String>) -> Value {
    if images.is_empty() && attachment.is_none() {
        return Value::String(content.to_owned());
    }
    let mut parts = vec![json!({"type": "text", "text": content})];
    parts.extend(
        images
            .iter()
            .map(|i| json!({"type": "image_url", "image_url": {"url": i.as_url()}})),
    );
    if let Some(a) = attachment {
        parts.push(json!({"type": "text", "text": a}));
    }
    Value::Array(parts)
}

fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        out.push(match message {
            Message::User {
                content,
                attachment,
                images,
            } => json!({"role": "user", "content": content_parts(content, images, attachment.as_ref())}),
            Message::Assistant {
                content,
                tool_calls,
                thinking: _,
            } => {
                let mut m = Map::new();
                m.insert("role".into(), "assistant".into());
                let text = if content.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    Value::String(content.clone())
                };
                m.insert("content".into(), text);
                if !tool_calls.is_empty() {
                    let calls = tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function", "function": {
                                "name": c.name, "arguments": c.arguments,
                            }})
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                Value::Object(m)
            }
            Message::Tool {
                call_id,
                content,
                attachment,
                ..
            } => json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": content_parts(content, &[], attachment.as_ref()),
            }),
        });
    }
    out
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

fn usage(value: &Value) -> Usage {
    let n = |p: &str| value.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Usage::default()
        .with_input_tokens(n("/prompt_tokens"))
        .with_output_tokens(n("/completion_tokens"))
        .with_cache_read_tokens(n("/prompt_tokens_details/cached_tokens"))
}

/// Argument text as sent: a string as is; a server that sends an object gets it as JSON text.
fn arguments_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// A `{"error": ...}` object where an answer was expected (`"error": null` is no error).
fn embedded_error(body: &Value) -> Option<ModelError> {
    let error = body
        .get("error")
        .filter(|e| e.is_object() || e.is_string())?;
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .unwrap_or("the provider reported an error without a message")
        .to_owned();
    let code = error.get("code").and_then(Value::as_str);
    let kind = code
        .filter(|c| is_context_overflow(c, ""))
        .or_else(|| error.get("type").and_then(Value::as_str))
        .or(code)
        .unwrap_or("");
    Some(stream_error(PROVIDER, kind, message))
}

fn parse_response(body: &Value) -> Result<ModelResponse, ModelError> {
    let Some(choice) = body.pointer("/choices/0") else {
        if let Some(e) = embedded_error(body) {
            return Err(e);
        }
        return Err(malformed(
            PROVIDER,
            format!(
                "the response has no `choices[0]`: {}",
                snippet(body.to_string().as_bytes())
            ),
        ));
    };
    let message = choice
        .get("message")
        .ok_or_else(|| malformed(PROVIDER, "the response's `choices[0]` has no `message`"))?;
    let text = |key| message.get(key).and_then(Value::as_str).unwrap_or("");
    let mut content = text("content").to_owned();
    if content.is_empty() {
        content = text("refusal").to_owned();
    }
    let tool_calls: Vec<ToolCall> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("call_{i}"), str::to_owned);
            let name = c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            ToolCall::new(id, name, arguments_text(c.pointer("/function/arguments")))
        })
        .collect();
    let mut stop = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map_or(StopReason::EndTurn, stop_reason);
    if stop == StopReason::EndTurn && !tool_calls.is_empty() {
        stop = StopReason::ToolUse;
    }
    let mut response = ModelResponse::text(content)
        .with_tool_calls(tool_calls)
        .with_usage(body.get("usage").map(usage).unwrap_or_default())
        .with_stop_reason(stop)
        .with_thinking(Vec::new());
    response.model = non_empty(body, "model");
    response.id = non_empty(body, "id");
    Ok(response)
}

/// The text of `key` in `body`, when it is a non-empty string.
pub(crate) fn non_empty(body: &Value, key: &str) -> Option<String> {
    body.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Reads `chat.completion.chunk` events until `data: [DONE]`.
#[derive(Debug, Default)]
pub(crate) struct OpenAiStream {
    turn: TurnAssembler,
    /// `data: [DONE]` arrived.
    done: bool,
    /// A `finish_reason` arrived: the answer is whole even if `[DONE]` never comes.
    finished: bool,
    /// The id of the newest call, for servers that leave out `index`.
    last_id: Option<String>,
}

impl OpenAiStream {
    fn tool_call_delta(&mut self, call: &Value, out: &mut Vec<ModelStreamEvent>) {
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let key = match call.get("index").and_then(Value::as_u64) {
            Some(i) => i,
            // No index: a new id starts a new call, anything else continues the newest one.
            None => match (id, self.turn.last_call_key()) {
                (Some(id), _) if self.last_id.as_deref() != Some(id) => {
                    (1 << 32) + self.turn.call_count() as u64
                }
                (_, Some(last)) => last,
                (_, None) => 1 << 32,
            },
        };
        if let Some(id) = id {
            self.last_id = Some(id.to_owned());
        }
        let name = call.pointer("/function/name").and_then(Value::as_str);
        let fragment = arguments_text(call.pointer("/function/arguments"));
        self.turn.call(key, id, name, &fragment, out);
    }
}

impl TurnDecoder for OpenAiStream {
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<ModelStreamEvent>, ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            malformed(
                PROVIDER,
                format!(
                    "a stream event is not JSON ({e}): {}",
                    snippet(data.as_bytes())
                ),
            )
        })?;
        if let Some(error) = embedded_error(&chunk) {
            return Err(error);
        }
        self.turn.identify(
            chunk.get("model").and_then(Value::as_str),
            chunk.get("id").and_then(Value::as_str),
        );
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.turn.usage = usage(u);
        }
        let mut out = Vec::new();
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.map(Vec::as_slice).unwrap_or_default() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.get("delta") {
                for key in ["content", "refusal"] {
                    if let Some(text) = delta.get(key).and_then(Value::as_str) {
                        self.turn.text(text, &mut out);
                    }
                }
                let calls = delta.get("tool_calls").and_then(Value::as_array);
                for call in calls.map(Vec::as_slice).unwrap_or_default() {
                    self.tool_call_delta(call, &mut out);
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.turn.stop_reason = Some(stop_reason(reason));
                self.finished = true;
            }
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        if self.done || self.finished {
            return Ok(self.turn.response());
        }
        Err(malformed(
            PROVIDER,
            "the stream ended before the answer was complete (no `finish_reason` and no \
             `data: [DONE]`); the partial answer was discarded, send the request again",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::model::{Model, ServerAddress};

    #[test]
    fn the_response_names_its_model_and_id() {
        let body = json!({
            "id": "chatcmpl-9x", "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]
        });
        let response = parse_response(&body).unwrap();
        assert_eq!(response.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
        assert_eq!(response.id.as_deref(), Some("chatcmpl-9x"));
        let bare = parse_response(&json!({"choices": [{"message": {"content": "hi"}}]})).unwrap();
        assert_eq!((bare.model, bare.id), (None, None));
    }

    #[test]
    fn a_stream_names_its_model_and_id_from_its_chunks() {
        let mut stream = OpenAiStream::default();
        for data in [
            r#"{"id":"chatcmpl-1","model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            r#"{"id":"chatcmpl-1","model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ] {
            stream
                .on_event(SseEvent {
                    event: None,
                    data: data.to_owned(),
                })
                .unwrap();
        }
        let response = stream.finish().unwrap();
        assert_eq!(response.model.as_deref(), Some("gpt-4o-2024-08-06"));
        assert_eq!(response.id.as_deref(), Some("chatcmpl-1"));
    }

    #[test]
    fn the_server_address_comes_from_the_base_url() {
        let model = OpenAiModel::new("gpt-4o-mini");
        assert_eq!(
            model.server_address(),
            Some(ServerAddress::new("api.openai.com", 443))
        );
        let local = OpenAiModel::new("llama").with_base_url("http://127.0.0.1:11434/v1");
        assert_eq!(
            local.server_address(),
            Some(ServerAddress::new("127.0.0.1", 11434))
        );
        assert_eq!(
            OpenAiModel::new("x")
                .with_base_url("nonsense")
                .server_address(),
            None
        );
    }
}
