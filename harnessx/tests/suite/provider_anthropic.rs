//! The Anthropic provider against a loopback server replaying the Messages wire format.

use std::time::Duration;

use harnessx::model::{AnthropicModel, Image, ModelErrorKind, OutputSchema, RetryPolicy, Thinking};
use harnessx::{
    Message, Model, ModelError, ModelRequest, ModelSettings, ModelStreamEvent, StopReason,
    ToolCall, ToolParams, Usage,
};
use serde_json::{Value, json};

use super::provider_common::{End, Reply, Server, ask, completed, drain, text_of};

fn model(server: &Server) -> AnthropicModel {
    AnthropicModel::new("claude-test")
        .with_base_url(&server.base_url)
        .with_api_key("sk-ant-test")
        .with_retry(RetryPolicy::none())
}

/// `event: <type>\ndata: <json>\n\n`, as the Messages API sends each event.
fn event(value: Value) -> String {
    let kind = value["type"]
        .as_str()
        .expect("events have a type")
        .to_owned();
    format!("event: {kind}\ndata: {value}\n\n")
}

fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
           "content": [], "model": "claude-test", "stop_reason": null, "stop_sequence": null,
           "usage": {"input_tokens": 25, "cache_creation_input_tokens": 10,
                     "cache_read_input_tokens": 100, "output_tokens": 1}}})
}

fn text_start(index: u64) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
}

fn text_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

fn tool_start(index: u64, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index,
           "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}

fn json_delta(index: u64, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
           "delta": {"type": "input_json_delta", "partial_json": partial}})
}

fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
           "usage": {"output_tokens": output_tokens}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

fn stream_of(values: Vec<Value>) -> Reply {
    Reply::sse(values.into_iter().map(event))
}

fn anthropic_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

#[tokio::test]
async fn complete_returns_text_tool_calls_usage_and_stop_reason() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt", "limit": 10}},
            {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {"pattern": "x"}},
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 7, "output_tokens": 40, "cache_read_input_tokens": 90,
                  "cache_creation_input_tokens": 3},
    });
    let server = Server::start(vec![Reply::json(200, body)]).await;
    let response = model(&server).complete(ask("look")).await.unwrap();
    assert_eq!(response.content, "Let me look.");
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("toolu_1", "read_file", r#"{"path":"a.txt","limit":10}"#),
            ToolCall::new("toolu_2", "grep", r#"{"pattern":"x"}"#),
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage::new(100, 40).with_cache_read_tokens(90)
    );
    let request = server.only_request();
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.json(),
        json!({"model": "claude-test", "max_tokens": 4096, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
        ]}]})
    );
}

#[tokio::test]
async fn stream_yields_text_incrementally_with_usage() {
    let server = Server::start(vec![stream_of(vec![
        message_start(),
        text_start(0),
        json!({"type": "ping"}),
        text_delta(0, "Hello"),
        text_delta(0, ", "),
        text_delta(0, "wörld"),
        block_stop(0),
        message_delta("end_turn", 15),
        message_stop(),
    ])])
    .await;
    let (events, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(e, None);
    assert_eq!(text_of(&events), ("Hello, wörld".to_owned(), 3));
    let response = completed(&events);
    assert_eq!(response.content, "Hello, wörld");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage::new(135, 15).with_cache_read_tokens(100)
    );
    assert_eq!(server.only_request().json()["stream"], json!(true));
}

#[tokio::test]
async fn stream_assembles_parallel_tool_calls_from_many_fragments() {
    let first = r#"{"location": "San Francisco, CA", "unit": "°F"}"#;
    let second = r#"{"query": "weather"}"#;
    let mut values = vec![
        message_start(),
        text_start(0),
        text_delta(0, "Checking both."),
        block_stop(0),
        tool_start(1, "toolu_a", "get_weather"),
        json_delta(1, ""),
    ];
    values.extend(first.chars().map(|c| json_delta(1, &c.to_string())));
    values.push(block_stop(1));
    values.push(tool_start(2, "toolu_b", "search"));
    values.extend(
        second
            .as_bytes()
            .chunks(3)
            .map(|c| json_delta(2, std::str::from_utf8(c).unwrap())),
    );
    values.push(block_stop(2));
    values.push(tool_start(3, "toolu_c", "now"));
    values.push(block_stop(3));
    values.push(message_delta("tool_use", 80));
    values.push(message_stop());
    let server = Server::start(vec![stream_of(values)]).await;
    let (events, e) = drain(model(&server).stream(ask("weather"))).await;
    assert_eq!(e, None);
    let started: Vec<(usize, &str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            ModelStreamEvent::ToolCallStarted { index, id, name } => {
                Some((*index, id.as_str(), name.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        vec![
            (0, "toolu_a", "get_weather"),
            (1, "toolu_b", "search"),
            (2, "toolu_c", "now")
        ]
    );
    let response = completed(&events);
    assert_eq!(response.content, "Checking both.");
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("toolu_a", "get_weather", first),
            ToolCall::new("toolu_b", "search", second),
            // No input deltas: the raw text is empty (the engine reads that as `{}`).
            ToolCall::new("toolu_c", "now", ""),
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn garbled_and_cut_off_tool_input_comes_out_raw() {
    let server = Server::start(vec![stream_of(vec![
        message_start(),
        tool_start(0, "toolu_g", "add"),
        json_delta(0, "{\"a\": 1,, "),
        json_delta(0, "\"b\": }"),
        block_stop(0),
        tool_start(1, "toolu_c", "add"),
        json_delta(1, "{\"a\": 1, \"b\": 2"),
        message_delta("max_tokens", 4096),
        message_stop(),
    ])])
    .await;
    let (events, e) = drain(model(&server).stream(ask("add"))).await;
    assert_eq!(e, None);
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("toolu_g", "add", "{\"a\": 1,, \"b\": }"),
            ToolCall::new("toolu_c", "add", "{\"a\": 1, \"b\": 2"),
        ]
    );
}

#[tokio::test]
async fn request_body_maps_history_tools_and_attachments() {
    let server = Server::start(vec![Reply::json(
        200,
        json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
               "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    )])
    .await;
    let request = ModelRequest::new(vec![
        Message::User {
            content: "Read both".into(),
            attachment: Some("<todos>[]</todos>".into()),
            images: Vec::new(),
        },
        Message::Assistant {
            content: "Reading.".into(),
            tool_calls: vec![
                ToolCall::new("toolu_1", "read_file", "{\"path\":\"a\"}"),
                ToolCall::new("toolu_2", "read_file", "{\"path\":"),
                ToolCall::new("toolu_3", "now", ""),
            ],
            thinking: Vec::new(),
        },
        Message::Tool {
            call_id: "toolu_1".into(),
            name: "read_file".into(),
            content: "alpha".into(),
            is_error: false,
            attachment: None,
        },
        Message::Tool {
            call_id: "toolu_2".into(),
            name: "read_file".into(),
            content: "The arguments were cut off.".into(),
            is_error: true,
            attachment: None,
        },
        Message::Tool {
            call_id: "toolu_3".into(),
            name: "now".into(),
            content: "noon".into(),
            is_error: false,
            attachment: Some("<todos>[1]</todos>".into()),
        },
        Message::user("Thanks"),
    ])
    .with_tools(vec![ToolParams {
        name: "read_file".into(),
        description: "Read a file.".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}},
                                 "required": ["path"]}),
    }])
    .with_settings(ModelSettings {
        max_tokens: Some(100),
        temperature: Some(0.25),
        ..ModelSettings::default()
    })
    .with_output(OutputSchema {
        name: "summary".into(),
        schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    })
    .with_system("Be brief.");
    model(&server).complete(request).await.unwrap();
    assert_eq!(
        server.only_request().json(),
        json!({
            "model": "claude-test",
            "max_tokens": 100,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "Read both"},
                    {"type": "text", "text": "<todos>[]</todos>",
                     "cache_control": {"type": "ephemeral"}},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read_file",
                     "input": {"unparsed_arguments": "{\"path\":"}},
                    {"type": "tool_use", "id": "toolu_3", "name": "now", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "alpha"},
                    {"type": "tool_result", "tool_use_id": "toolu_2",
                     "content": "The arguments were cut off.", "is_error": true},
                    {"type": "tool_result", "tool_use_id": "toolu_3", "content": [
                        {"type": "text", "text": "noon"},
                        {"type": "text", "text": "<todos>[1]</todos>"},
                    ]},
                ]},
                {"role": "user", "content": [
                    {"type": "text", "text": "Thanks", "cache_control": {"type": "ephemeral"}},
                ]},
            ],
            "tools": [{"name": "read_file", "description": "Read a file.",
                       "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                                        "required": ["path"]}}],
            "output_config": {"format": {"type": "json_schema",
                              "schema": {"type": "object", "properties": {"text": {"type": "string"}}}}},
            "temperature": 0.25,
        })
    );
}

async fn error_for(reply: Reply) -> ModelError {
    let server = Server::start(vec![reply]).await;
    model(&server)
        .complete(ask("Hi"))
        .await
        .expect_err("the call fails")
}

#[tokio::test]
async fn http_errors_map_to_typed_errors_with_the_providers_message() {
    let e = error_for(Reply::json(
        401,
        anthropic_error("authentication_error", "invalid x-api-key"),
    ))
    .await;
    assert_eq!(
        e.to_string(),
        "the anthropic provider refused the credentials (HTTP 401): invalid x-api-key"
    );
    let e = error_for(Reply::json(
        403,
        anthropic_error("permission_error", "no access"),
    ))
    .await;
    assert!(matches!(e, ModelError::Auth { status: 403, .. }));

    let e = error_for(
        Reply::json(
            429,
            anthropic_error(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
        )
        .header("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT"),
    )
    .await;
    assert_eq!(
        e,
        ModelError::RateLimited {
            provider: "anthropic".into(),
            retry_after: Some(Duration::ZERO),
            message: "Number of request tokens has exceeded your per-minute rate limit".into()
        }
    );
    let e = error_for(Reply::json(
        529,
        anthropic_error("overloaded_error", "Overloaded"),
    ))
    .await;
    assert_eq!(
        e.to_string(),
        "the anthropic provider failed (HTTP 529): Overloaded"
    );
    assert!(e.is_retryable());
    let e = error_for(Reply::json(
        500,
        anthropic_error("api_error", "Internal server error"),
    ))
    .await;
    assert_eq!(
        e.to_string(),
        "the anthropic provider failed (HTTP 500): Internal server error"
    );
    let e = error_for(Reply::json(
        400,
        anthropic_error(
            "invalid_request_error",
            "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
        ),
    ))
    .await;
    assert_eq!(
        e.to_string(),
        "the anthropic provider rejected the request (HTTP 400): messages.1.content.0.tool_use.input: \
         Input should be a valid dictionary"
    );
    let e = error_for(Reply::json(
        413,
        anthropic_error("request_too_large", "Request exceeds the maximum size"),
    ))
    .await;
    assert!(matches!(e, ModelError::InvalidRequest { status: 413, .. }));

    let e = error_for(Reply::body(200, "application/json", "<html>")).await;
    assert!(matches!(e, ModelError::Malformed { .. }));
    assert!(
        e.to_string().starts_with(
            "the anthropic provider sent a response that could not be read: the body is not JSON ("
        ),
        "{e}"
    );
    let e = error_for(Reply::json(200, json!({"type": "message"}))).await;
    assert_eq!(
        e.to_string(),
        "the anthropic provider sent a response that could not be read: the response has no \
         `content` array: `{\"type\":\"message\"}`"
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_maps_to_a_typed_error() {
    let server = Server::start(vec![stream_of(vec![
        message_start(),
        text_start(0),
        text_delta(0, "Partial"),
        anthropic_error("overloaded_error", "Overloaded"),
    ])])
    .await;
    let (events, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(text_of(&events).0, "Partial");
    assert_eq!(
        e.unwrap(),
        ModelError::Server {
            provider: "anthropic".into(),
            status: 529,
            retry_after: None,
            message: "Overloaded".into()
        }
    );
}

#[tokio::test]
async fn an_overloaded_stream_is_retried_when_nothing_was_delivered() {
    let server = Server::start(vec![
        stream_of(vec![
            message_start(),
            anthropic_error("overloaded_error", "Overloaded"),
        ]),
        stream_of(vec![
            message_start(),
            text_start(0),
            text_delta(0, "Second try."),
            message_delta("end_turn", 3),
            message_stop(),
        ]),
    ])
    .await;
    let m = model(&server).with_retry(RetryPolicy {
        max_attempts: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..RetryPolicy::default()
    });
    let (events, e) = drain(m.stream(ask("Hi"))).await;
    assert_eq!(e, None);
    assert_eq!(completed(&events).content, "Second try.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_without_message_stop_is_malformed() {
    let server = Server::start(vec![
        stream_of(vec![
            message_start(),
            tool_start(0, "toolu_1", "add"),
            json_delta(0, "{\"a\": 1"),
        ])
        .ending(End::CloseDelimited),
    ])
    .await;
    let (events, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ModelStreamEvent::Completed { .. }))
    );
    assert_eq!(
        e.unwrap().to_string(),
        "the anthropic provider sent a response that could not be read: the stream ended before \
         `message_stop`; the partial answer was discarded, send the request again"
    );

    let server = Server::start(vec![Reply::sse(["event: message_start\ndata: {oops\n\n"])]).await;
    let (_, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert!(
        e.unwrap()
            .to_string()
            .starts_with("the anthropic provider sent a response that could not be read: a stream event is not JSON ("),
    );

    let server = Server::start(vec![stream_of(vec![message_start(), json_delta(4, "{")])]).await;
    let (_, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(
        e.unwrap().to_string(),
        "the anthropic provider sent a response that could not be read: tool input arrived for \
         content block 4, which never started"
    );
}

#[tokio::test]
async fn a_json_answer_to_a_streaming_request_is_read_as_the_whole_turn() {
    let server = Server::start(vec![Reply::json(
        200,
        json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "whole"}],
               "stop_reason": "max_tokens", "usage": {"input_tokens": 3, "output_tokens": 9}}),
    )])
    .await;
    let (events, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(e, None);
    let response = completed(&events);
    assert_eq!(response.content, "whole");
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.usage.output_tokens, 9);
}

fn tool_turn(id: &str) -> Message {
    Message::Assistant {
        content: String::new(),
        tool_calls: vec![ToolCall::new(id, "now", "{}")],
        thinking: Vec::new(),
    }
}

fn tool_answer(id: &str, content: &str) -> Message {
    Message::Tool {
        call_id: id.into(),
        name: "now".into(),
        content: content.into(),
        is_error: false,
        attachment: None,
    }
}

/// The `cache_control` markers of a request body: `system`, `tool` or the message index.
fn breakpoints(body: &Value) -> Vec<String> {
    let mut at = Vec::new();
    if body["system"][0].get("cache_control").is_some() {
        at.push("system".to_owned());
    }
    let tools = body["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if tools.iter().any(|t| t.get("cache_control").is_some()) {
        at.push("tool".to_owned());
    }
    for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
        let blocks = m["content"].as_array().unwrap();
        for (j, block) in blocks.iter().enumerate() {
            if block.get("cache_control").is_some() {
                assert_eq!(
                    j,
                    blocks.len() - 1,
                    "a breakpoint is on a message's last block"
                );
                at.push(i.to_string());
            }
        }
    }
    at
}

#[tokio::test]
async fn prompt_cache_breakpoints_stay_on_the_block_the_previous_request_wrote() {
    let ok = || {
        Reply::json(
            200,
            json!({"type": "message", "role": "assistant", "content": [], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 1, "output_tokens": 1}}),
        )
    };
    let server = Server::start(vec![ok(), ok(), ok(), ok()]).await;
    // Three requests of one agent run: each adds the model's tool call and its result.
    let mut request = ModelRequest::new(vec![Message::user("one")]).with_system("sys");
    let mut sent = Vec::new();
    for (id, answer) in [("toolu_1", "noon"), ("toolu_2", "dusk")] {
        model(&server).complete(request.clone()).await.unwrap();
        request.messages.push(tool_turn(id));
        request.messages.push(tool_answer(id, answer));
    }
    model(&server).complete(request.clone()).await.unwrap();
    for captured in server.requests() {
        sent.push(captured.json());
    }
    assert_eq!(breakpoints(&sent[0]), ["system", "0"]);
    assert_eq!(breakpoints(&sent[1]), ["system", "0", "2"]);
    assert_eq!(breakpoints(&sent[2]), ["system", "2", "4"]);
    // The block the previous request marked as its newest is the same bytes, marker included.
    assert_eq!(sent[1]["messages"][0], sent[0]["messages"][0]);
    assert_eq!(sent[2]["messages"][2], sent[1]["messages"][2]);
    assert_eq!(
        sent[2]["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "noon",
             "cache_control": {"type": "ephemeral"}},
        ]})
    );

    // Without a system prompt the stable breakpoint is on the last tool; off, there are none.
    request.system = None;
    request.tools = vec![ToolParams {
        name: "now".into(),
        description: "The time.".into(),
        input_schema: json!({"type": "object", "properties": {}}),
    }];
    model(&server).complete(request.clone()).await.unwrap();
    let no_system = server.requests()[3].json();
    assert_eq!(breakpoints(&no_system), ["tool", "2", "4"]);

    let server = Server::start(vec![ok()]).await;
    request.system = Some("sys".into());
    request.messages.push(Message::assistant("It is dusk."));
    request.messages.push(Message::user("two"));
    model(&server)
        .with_prompt_caching(false)
        .complete(request)
        .await
        .unwrap();
    let plain = server.only_request().json();
    assert_eq!(plain["system"], json!("sys"));
    assert!(!plain.to_string().contains("cache_control"));
    assert_eq!(
        plain["messages"][6],
        json!({"role": "user", "content": [{"type": "text", "text": "two"}]})
    );
}

#[tokio::test]
async fn events_decoded_before_an_error_in_the_same_chunk_are_delivered_first() {
    let body = [
        message_start(),
        text_start(0),
        text_delta(0, "kept"),
        anthropic_error("api_error", "Internal server error"),
    ]
    .into_iter()
    .map(event)
    .collect::<String>();
    let server = Server::start(vec![Reply::sse([body])]).await;
    let (events, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(text_of(&events), ("kept".to_owned(), 1));
    assert_eq!(
        e.unwrap().to_string(),
        "the anthropic provider failed (HTTP 500): Internal server error"
    );
}

/// An empty prompt or an empty answer kept in the history would be a message with no content
/// blocks, which the API refuses; it goes out as one text block that says it was empty.
#[tokio::test]
async fn empty_messages_are_sent_as_a_marked_block_not_an_empty_list() {
    let ok = Reply::json(
        200,
        json!({"type": "message", "role": "assistant", "content": [], "stop_reason": "end_turn",
               "usage": {"input_tokens": 1, "output_tokens": 1}}),
    );
    let server = Server::start(vec![ok]).await;
    let request = ModelRequest::new(vec![
        Message::user(""),
        Message::assistant(""),
        Message::user("again"),
    ]);
    model(&server)
        .with_prompt_caching(false)
        .complete(request)
        .await
        .unwrap();
    let [sent] = server.requests().try_into().unwrap();
    assert_eq!(
        sent.json()["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "(empty message)"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "(empty message)"}]},
            {"role": "user", "content": [{"type": "text", "text": "again"}]},
        ])
    );
}

fn thinking_start(index: u64) -> Value {
    json!({"type": "content_block_start", "index": index,
           "content_block": {"type": "thinking", "thinking": ""}})
}

fn thinking_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
           "delta": {"type": "thinking_delta", "thinking": text}})
}

fn signature_delta(index: u64, signature: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
           "delta": {"type": "signature_delta", "signature": signature}})
}

#[tokio::test]
async fn streamed_thinking_blocks_are_kept_with_their_signatures() {
    let server = Server::start(vec![stream_of(vec![
        message_start(),
        thinking_start(0),
        thinking_delta(0, "The user wants "),
        thinking_delta(0, "the time."),
        signature_delta(0, "EqQBCkYIBhgCIkD"),
        block_stop(0),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}}),
        block_stop(1),
        tool_start(2, "toolu_1", "now"),
        json_delta(2, "{}"),
        block_stop(2),
        message_delta("tool_use", 30),
        message_stop(),
    ])])
    .await;
    let (events, e) = drain(model(&server).with_thinking(1024).stream(ask("Time?"))).await;
    assert_eq!(e, None);
    let response = completed(&events);
    assert_eq!(
        response.thinking,
        vec![
            Thinking::Thinking {
                thinking: "The user wants the time.".into(),
                signature: "EqQBCkYIBhgCIkD".into(),
            },
            Thinking::Redacted {
                data: "EmwKAhgBEgy3va".into()
            },
        ]
    );
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("toolu_1", "now", "{}")]
    );
    let body = server.only_request().json();
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );

    // A signature delta for a block that is not a thinking block is a broken stream.
    let server = Server::start(vec![stream_of(vec![
        message_start(),
        text_start(0),
        signature_delta(0, "sig"),
    ])])
    .await;
    let (_, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(
        e.unwrap().to_string(),
        "the anthropic provider sent a response that could not be read: a `signature_delta` \
         arrived for content block 0, which is not a thinking block that started"
    );
}

#[tokio::test]
async fn an_agent_sends_thinking_blocks_back_unchanged_before_its_tool_calls() {
    let first = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "thinking", "thinking": "I should call now.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque-1"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}},
        ],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}
    });
    let second = json!({
        "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "It is noon."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 20, "output_tokens": 5}
    });
    let server = Server::start(vec![Reply::json(200, first), Reply::json(200, second)]).await;
    let now = harnessx::ToolDefinition::new(
        "now",
        "The time.",
        json!({"type": "object", "properties": {}}),
        harnessx::handler_fn(|_, _| async { Ok(harnessx::ToolOutput::text("noon")) }),
    );
    let agent = harnessx::Agent::builder()
        .model(model(&server).with_prompt_caching(false))
        .tool(now)
        .config(harnessx::AgentConfig::default().with_planning(false))
        .build()
        .unwrap();
    let result = agent.run("What time is it?").await.unwrap();
    assert_eq!(result.output, "It is noon.");
    let thinking = vec![
        Thinking::Thinking {
            thinking: "I should call now.".into(),
            signature: "sig-1".into(),
        },
        Thinking::Redacted {
            data: "opaque-1".into(),
        },
    ];
    assert!(
        matches!(&result.messages[1], Message::Assistant { thinking: t, .. } if *t == thinking),
        "{:?}",
        result.messages[1]
    );
    let sent = server.requests()[1].json();
    assert_eq!(
        sent["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should call now.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque-1"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}},
        ]})
    );
    agent.close().await;
}

#[tokio::test]
async fn images_are_sent_as_image_blocks_between_the_text_and_the_attachment() {
    let ok = json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "A cat."}],
                    "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}});
    let server = Server::start(vec![Reply::json(200, ok)]).await;
    let mut message = Message::user_with_images(
        "What is this?",
        vec![
            Image::base64("image/png", "iVBORw0KGgo="),
            Image::url("https://example.com/cat.jpg"),
        ],
    );
    if let Message::User { attachment, .. } = &mut message {
        *attachment = Some("<todos>[]</todos>".into());
    }
    let request = ModelRequest::new(vec![message]);
    let response = model(&server)
        .with_prompt_caching(false)
        .complete(request)
        .await
        .unwrap();
    assert_eq!(response.content, "A cat.");
    assert_eq!(
        server.only_request().json()["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
            {"type": "text", "text": "<todos>[]</todos>"},
        ]}])
    );
}

#[tokio::test]
async fn a_prompt_too_long_is_a_context_overflow() {
    let server = Server::start(vec![
        Reply::json(
            400,
            anthropic_error(
                "invalid_request_error",
                "prompt is too long: 208163 tokens > 200000 maximum",
            ),
        ),
        Reply::json(
            400,
            anthropic_error(
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, \
                 decrease input length or `max_tokens` and try again",
            ),
        ),
        stream_of(vec![
            message_start(),
            anthropic_error(
                "invalid_request_error",
                "prompt is too long: 1 tokens > 0 maximum",
            ),
        ]),
        Reply::json(
            400,
            anthropic_error("invalid_request_error", "max_tokens: must be at least 1"),
        ),
    ])
    .await;
    let m = model(&server);
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::ContextOverflow);
    assert_eq!(e.status(), Some(400));
    assert_eq!(
        e.to_string(),
        "the anthropic provider rejected the request because it does not fit the model's context \
         window (HTTP 400): prompt is too long: 208163 tokens > 200000 maximum; shorten the \
         conversation or use a model with a larger context window"
    );
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::ContextOverflow);
    let (_, e) = drain(m.stream(ask("Hi"))).await;
    assert_eq!(e.unwrap().kind(), ModelErrorKind::ContextOverflow);
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::InvalidRequest);
}
