//! Messages, answers and tool calls as the GenAI conventions' JSON (recorded only on opt-in).

use serde_json::{Value, json};

use crate::model::{Image, Message, ModelResponse, StopReason};
use crate::output::ToolCall;

/// `gen_ai.system_instructions`: the system prompt as one text part.
pub(super) fn system_instructions(system: &str) -> String {
    json!([{"type": "text", "content": system}]).to_string()
}

/// `gen_ai.input.messages`: the conversation sent, in order.
pub(super) fn input_messages(messages: &[Message]) -> String {
    Value::Array(messages.iter().map(message).collect()).to_string()
}

/// `gen_ai.output.messages`: one assistant message per answer.
pub(super) fn output_messages(response: &ModelResponse) -> String {
    let mut parts: Vec<Value> = response
        .thinking
        .iter()
        .filter_map(|t| t.text())
        .map(|t| json!({"type": "reasoning", "content": t}))
        .collect();
    parts.extend(text_part(&response.content));
    parts.extend(response.tool_calls.iter().map(tool_call_part));
    json!([{
        "role": "assistant",
        "parts": parts,
        "finish_reason": finish_reason(response.stop_reason),
    }])
    .to_string()
}

/// `gen_ai.output.messages` of a run: its final answer.
pub(super) fn final_answer(text: &str, stop: StopReason) -> String {
    json!([{
        "role": "assistant",
        "parts": text_part(text).into_iter().collect::<Vec<_>>(),
        "finish_reason": finish_reason(stop),
    }])
    .to_string()
}

/// Tool arguments or a tool result: the JSON value when the text parses, the text itself (as a
/// JSON string) otherwise.
pub(super) fn json_or_text(raw: &str) -> String {
    match serde_json::from_str::<Value>(raw) {
        Ok(value) => value.to_string(),
        Err(_) => Value::String(raw.to_owned()).to_string(),
    }
}

/// The convention's finish reason for a stop reason.
pub(super) fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_call",
        StopReason::MaxTokens => "length",
        StopReason::Other => "other",
    }
}

/// `gen_ai.response.finish_reasons` as JSON array text (the OTLP exporter sends it as a string
/// array; `tracing` fields cannot hold arrays).
pub(super) fn finish_reasons(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => r#"["stop"]"#,
        StopReason::ToolUse => r#"["tool_call"]"#,
        StopReason::MaxTokens => r#"["length"]"#,
        StopReason::Other => r#"["other"]"#,
    }
}

fn message(message: &Message) -> Value {
    match message {
        Message::User {
            content,
            attachment,
            images,
        } => {
            let mut parts: Vec<Value> = text_part(content).into_iter().collect();
            parts.extend(images.iter().map(image_part));
            parts.extend(attachment.as_deref().and_then(text_part));
            json!({"role": "user", "parts": parts})
        }
        Message::Assistant {
            content,
            tool_calls,
            thinking,
        } => {
            let mut parts: Vec<Value> = thinking
                .iter()
                .filter_map(|t| t.text())
                .map(|t| json!({"type": "reasoning", "content": t}))
                .collect();
            parts.extend(text_part(content));
            parts.extend(tool_calls.iter().map(tool_call_part));
            json!({"role": "assistant", "parts": parts})
        }
        Message::Tool {
            call_id,
            content,
            attachment,
            ..
        } => {
            let mut parts = vec![json!({
                "type": "tool_call_response",
                "id": call_id,
                "response": content,
            })];
            parts.extend(attachment.as_deref().and_then(text_part));
            json!({"role": "tool", "parts": parts})
        }
    }
}

fn text_part(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "content": text}))
}

fn tool_call_part(call: &ToolCall) -> Value {
    let arguments = serde_json::from_str::<Value>(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
    json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
}

fn image_part(image: &Image) -> Value {
    match image {
        Image::Base64 { media_type, data } => {
            json!({"type": "blob", "modality": "image", "mime_type": media_type, "content": data})
        }
        Image::Url { url } => json!({"type": "uri", "modality": "image", "uri": url}),
    }
}
