//! The OpenAI-compatible provider against a loopback server replaying the Chat Completions wire
//! format.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use harnessx::model::{Image, ModelErrorKind, OpenAiModel, OutputSchema, RetryPolicy};
use harnessx::{
    Message, Model, ModelError, ModelRequest, ModelSettings, ModelStreamEvent, StopReason,
    ToolCall, ToolParams, ToolRegistry, Usage,
};
use serde_json::{Value, json};

use super::provider_common::{
    End, Reply, Server, ask, completed, data_events, dead_base_url, drain, text_of,
};

fn model(server: &Server) -> OpenAiModel {
    OpenAiModel::new("gpt-test")
        .with_base_url(format!("{}/v1", server.base_url))
        .with_api_key("sk-test")
        .with_retry(RetryPolicy::none())
}

fn chunk(delta: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
           "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
           "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn usage_chunk(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
           "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
           "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": cached}}})
}

fn call_start(index: u64, id: &str, name: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                  "function": {"name": name, "arguments": ""}}]}),
    )
}

fn call_fragment(index: u64, fragment: &str) -> Value {
    chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}))
}

/// A whole SSE body: the events, then `data: [DONE]`.
fn sse(values: &[Value]) -> Reply {
    let mut chunks = data_events(values);
    chunks.push("data: [DONE]\n\n".into());
    Reply::sse(chunks)
}

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
           "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
           "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
                     "prompt_tokens_details": {"cached_tokens": 8}}})
}

#[tokio::test]
async fn complete_returns_text_usage_and_stop_reason() {
    let server = Server::start(vec![Reply::json(
        200,
        completion(
            json!({"role": "assistant", "content": "Hello there."}),
            "stop",
        ),
    )])
    .await;
    let response = model(&server).complete(ask("Hi")).await.unwrap();
    assert_eq!(response.content, "Hello there.");
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.usage, Usage::new(12, 5).with_cache_read_tokens(8));
    let request = server.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.json(),
        json!({"model": "gpt-test", "messages": [{"role": "user", "content": "Hi"}]})
    );
}

#[tokio::test]
async fn complete_returns_parallel_tool_calls_with_raw_arguments() {
    let message = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.txt\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": \"fo"}},
    ]});
    let server = Server::start(vec![Reply::json(200, completion(message, "tool_calls"))]).await;
    let response = model(&server).complete(ask("go")).await.unwrap();
    assert_eq!(response.content, "");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("call_a", "read_file", "{\"path\": \"a.txt\"}"),
            ToolCall::new("call_b", "grep", "{\"pattern\": \"fo"),
        ]
    );
}

#[tokio::test]
async fn stream_yields_text_incrementally_then_the_whole_turn() {
    let mut with_null_error = chunk(json!({"content": "Hel"}));
    with_null_error["error"] = Value::Null;
    let server = Server::start(vec![sse(&[
        chunk(json!({"role": "assistant", "content": ""})),
        with_null_error,
        chunk(json!({"content": "lo, "})),
        chunk(json!({"content": "wörld"})),
        finish("stop"),
        usage_chunk(20, 3, 0),
    ])])
    .await;
    let (events, error) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), ("Hello, wörld".to_owned(), 3));
    let response = completed(&events);
    assert_eq!(response.content, "Hello, wörld");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.usage, Usage::new(20, 3));
    let body = server.only_request().json();
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn stream_assembles_tool_call_arguments_split_across_many_chunks() {
    let arguments = r#"{"city": "Zürich", "units": "metric"}"#;
    let mut values = vec![
        chunk(json!({"role": "assistant", "content": null})),
        call_start(0, "call_w", "get_weather"),
    ];
    // One chunk per character, multi-byte ones included.
    values.extend(arguments.chars().map(|c| call_fragment(0, &c.to_string())));
    values.push(finish("tool_calls"));
    let server = Server::start(vec![sse(&values)]).await;
    let (events, error) = drain(model(&server).stream(ask("weather?"))).await;
    assert_eq!(error, None);
    assert_eq!(
        events[0],
        ModelStreamEvent::ToolCallStarted {
            index: 0,
            id: "call_w".into(),
            name: "get_weather".into()
        }
    );
    let fragments: String = events
        .iter()
        .filter_map(|e| match e {
            ModelStreamEvent::ToolCallDelta { index: 0, fragment } => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(fragments, arguments);
    let response = completed(&events);
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("call_w", "get_weather", arguments)]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn stream_keeps_parallel_tool_calls_apart_and_in_order() {
    let server = Server::start(vec![sse(&[
        chunk(json!({"content": "Checking."})),
        call_start(0, "call_0", "read_file"),
        call_fragment(0, "{\"path\""),
        call_start(1, "call_1", "list_directory"),
        call_fragment(1, "{\"path\": "),
        call_start(2, "call_2", "grep"),
        call_fragment(0, ": \"a.rs\"}"),
        call_fragment(2, "{\"pattern\": \"TODO\"}"),
        call_fragment(1, "\"src\"}"),
        finish("tool_calls"),
        usage_chunk(50, 30, 0),
    ])])
    .await;
    let (events, error) = drain(model(&server).stream(ask("look"))).await;
    assert_eq!(error, None);
    let started: Vec<(usize, &str)> = events
        .iter()
        .filter_map(|e| match e {
            ModelStreamEvent::ToolCallStarted { index, name, .. } => Some((*index, name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        vec![(0, "read_file"), (1, "list_directory"), (2, "grep")]
    );
    let response = completed(&events);
    assert_eq!(response.content, "Checking.");
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("call_0", "read_file", "{\"path\": \"a.rs\"}"),
            ToolCall::new("call_1", "list_directory", "{\"path\": \"src\"}"),
            ToolCall::new("call_2", "grep", "{\"pattern\": \"TODO\"}"),
        ]
    );
    assert_eq!(response.usage.output_tokens, 30);
}

#[tokio::test]
async fn garbled_and_cut_off_arguments_come_out_raw_and_the_engine_answers_with_errors() {
    let server = Server::start(vec![sse(&[
        call_start(0, "call_g", "add"),
        call_fragment(0, "{\"a\" 1, "),
        call_fragment(0, "\"b\": 2}"),
        call_start(1, "call_c", "add"),
        call_fragment(1, "{\"a\": 1, \"b\""),
        finish("length"),
    ])])
    .await;
    let (events, error) = drain(model(&server).stream(ask("add"))).await;
    assert_eq!(error, None);
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("call_g", "add", "{\"a\" 1, \"b\": 2}"),
            ToolCall::new("call_c", "add", "{\"a\": 1, \"b\""),
        ]
    );

    // The engine sees them as they came and answers each with an error the model can act on.
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "add",
            "Add two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]}),
            harnessx::handler_fn(|args, _| async move {
                Ok(harnessx::ToolOutput::json(json!(args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap())))
            }),
            harnessx::ToolOptions::new(),
        )
        .unwrap();
    let garbled = registry.execute(&response.tool_calls[0], None).await;
    assert!(garbled.is_error);
    assert!(
        garbled.content.contains("not valid JSON"),
        "{}",
        garbled.content
    );
    let cut = registry.execute(&response.tool_calls[1], None).await;
    assert!(cut.is_error);
    assert!(cut.content.contains("cut off"), "{}", cut.content);
}

#[tokio::test]
async fn request_body_maps_history_tools_settings_and_attachments() {
    let server = Server::start(vec![Reply::json(
        200,
        completion(json!({"role": "assistant", "content": "done"}), "stop"),
    )])
    .await;
    let request = ModelRequest::new(vec![

            Message::User {
                content: "List src".into(),
                attachment: Some("<todos>[]</todos>".into()),
                images: Vec::new(),
            },
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall::new("call_1", "list_directory", "{\"path\":\"src\"}"),
                    ToolCall::new("call_2", "read_file", "{\"path\":"),
                ],
                thinking: Vec::new(),
            },
            Message::Tool {
                call_id: "call_1".into(),
                name: "list_directory".into(),
                content: "main.rs".into(),
                is_error: false,
                attachment: None,
            },
            Message::Tool {
                call_id: "call_2".into(),
                name: "read_file".into(),
                content: "The arguments were cut off.".into(),
                is_error: true,
                attachment: Some("<todos>[1]</todos>".into()),
            },
            Message::assistant("Here it is."),
        ])
        .with_tools(vec![ToolParams {
            name: "list_directory".into(),
            description: "List a directory.".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}},
                                 "required": ["path"], "additionalProperties": false}),
        }])
        .with_settings(ModelSettings {
            max_tokens: Some(256),
            temperature: Some(0.7),
            ..ModelSettings::default()
        })
        .with_output(OutputSchema {
            name: "listing".into(),
            schema: json!({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}},
                           "required": ["files"], "additionalProperties": false}),
        })
        .with_system("Be brief.");
    model(&server).complete(request).await.unwrap();
    assert_eq!(
        server.only_request().json(),
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [
                    {"type": "text", "text": "List src"},
                    {"type": "text", "text": "<todos>[]</todos>"},
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "list_directory", "arguments": "{\"path\":\"src\"}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"path\":"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "main.rs"},
                {"role": "tool", "tool_call_id": "call_2", "content": [
                    {"type": "text", "text": "The arguments were cut off."},
                    {"type": "text", "text": "<todos>[1]</todos>"},
                ]},
                {"role": "assistant", "content": "Here it is."},
            ],
            "tools": [{"type": "function", "function": {
                "name": "list_directory",
                "description": "List a directory.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                               "required": ["path"], "additionalProperties": false},
                "strict": true,
            }}],
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "listing",
                "schema": {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}},
                           "required": ["files"], "additionalProperties": false},
                "strict": true,
            }},
            "max_tokens": 256,
            "temperature": 0.7,
        })
    );
}

#[tokio::test]
async fn local_servers_get_no_key_and_extra_headers_and_body_fields_are_sent() {
    let server = Server::start(vec![Reply::json(
        200,
        completion(json!({"role": "assistant", "content": "ok"}), "stop"),
    )])
    .await;
    let m = model(&server)
        .without_api_key()
        .with_header("HTTP-Referer", "https://example.com")
        .with_extra_body("max_completion_tokens", json!(64));
    m.complete(ask("Hi")).await.unwrap();
    let request = server.only_request();
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("http-referer"), Some("https://example.com"));
    assert_eq!(request.json()["max_completion_tokens"], json!(64));
}

async fn error_for(reply: Reply) -> ModelError {
    let server = Server::start(vec![reply]).await;
    model(&server)
        .complete(ask("Hi"))
        .await
        .expect_err("the call fails")
}

fn openai_error(message: &str, kind: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

#[tokio::test]
async fn http_errors_map_to_typed_errors_with_the_providers_message() {
    let e = error_for(Reply::json(
        401,
        openai_error(
            "Incorrect API key provided: sk-te**.",
            "invalid_request_error",
        ),
    ))
    .await;
    assert_eq!(
        e.to_string(),
        "the openai provider refused the credentials (HTTP 401): Incorrect API key provided: sk-te**."
    );
    assert!(matches!(e, ModelError::Auth { status: 401, .. }));

    let e = error_for(Reply::json(
        403,
        openai_error("Country not supported.", "permission"),
    ))
    .await;
    assert!(matches!(e, ModelError::Auth { status: 403, .. }));

    let e = error_for(
        Reply::json(
            429,
            openai_error("Rate limit reached for gpt-test.", "requests"),
        )
        .header("retry-after", "7"),
    )
    .await;
    assert_eq!(
        e,
        ModelError::RateLimited {
            provider: "openai".into(),
            retry_after: Some(Duration::from_secs(7)),
            message: "Rate limit reached for gpt-test.".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "the openai provider is rate limiting requests (HTTP 429), retry after 7 s: Rate limit reached for gpt-test."
    );

    let e = error_for(Reply::json(
        500,
        openai_error("The server had an error.", "server_error"),
    ))
    .await;
    assert_eq!(
        e.to_string(),
        "the openai provider failed (HTTP 500): The server had an error."
    );
    let e = error_for(Reply::body(502, "text/html", "Bad gateway")).await;
    assert_eq!(
        e.to_string(),
        "the openai provider failed (HTTP 502): Bad gateway"
    );

    let e = error_for(Reply::json(
        400,
        openai_error("Invalid schema for function 'x'.", "invalid_request_error"),
    ))
    .await;
    assert_eq!(
        e.to_string(),
        "the openai provider rejected the request (HTTP 400): Invalid schema for function 'x'."
    );
    // Ollama's shape, and an empty body.
    let e = error_for(Reply::json(
        404,
        json!({"error": "model \"llama9\" not found, try pulling it first"}),
    ))
    .await;
    assert_eq!(
        e.to_string(),
        "the openai provider rejected the request (HTTP 404): model \"llama9\" not found, try pulling it first"
    );
    let e = error_for(Reply::body(404, "text/plain", "")).await;
    assert_eq!(
        e.to_string(),
        "the openai provider rejected the request (HTTP 404): no message in the response body (HTTP 404 Not Found)"
    );
}

#[tokio::test]
async fn unreadable_bodies_are_malformed() {
    let e = error_for(Reply::body(200, "application/json", "{\"choices\": [")).await;
    assert_eq!(
        e.to_string(),
        "the openai provider sent a response that could not be read: the body is not JSON (EOF while \
         parsing a list at line 1 column 13): `{\"choices\": [`"
    );
    let e = error_for(Reply::json(200, json!({"id": "x"}))).await;
    assert_eq!(
        e.to_string(),
        "the openai provider sent a response that could not be read: the response has no \
         `choices[0]`: `{\"id\":\"x\"}`"
    );

    let server = Server::start(vec![Reply::sse(["data: {not json}\n\n"])]).await;
    let (_, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(
        e.unwrap().to_string(),
        "the openai provider sent a response that could not be read: a stream event is not JSON (key \
         must be a string at line 1 column 2): `{not json}`"
    );
}

#[tokio::test]
async fn a_stream_cut_before_the_end_is_an_error_not_a_partial_answer() {
    let server = Server::start(vec![
        Reply::sse(data_events(&[chunk(json!({"content": "Half an ans"}))]))
            .ending(End::CloseDelimited),
    ])
    .await;
    let (events, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(text_of(&events).0, "Half an ans");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ModelStreamEvent::Completed { .. }))
    );
    assert_eq!(
        e.unwrap().to_string(),
        "the openai provider sent a response that could not be read: the stream ended before the \
         answer was complete (no `finish_reason` and no `data: [DONE]`); the partial answer was \
         discarded, send the request again"
    );

    // The connection dropping in the middle of a chunked body is a transport failure.
    let server = Server::start(vec![
        Reply::sse(data_events(&[chunk(json!({"content": "Half"}))])).ending(End::Abort),
    ])
    .await;
    let (_, e) = drain(model(&server).stream(ask("Hi"))).await;
    let e = e.unwrap();
    assert!(matches!(e, ModelError::Transport { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with(
            "could not reach the openai provider: the connection broke while the response was being read"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn an_error_event_in_the_stream_maps_to_a_typed_error() {
    let server = Server::start(vec![Reply::sse(data_events(&[
        chunk(json!({"content": "Hi"})),
        json!({"error": {"message": "The model is overloaded.", "type": "server_error"}}),
    ]))])
    .await;
    let (events, e) = drain(model(&server).stream(ask("Hi"))).await;
    assert_eq!(text_of(&events).0, "Hi");
    assert_eq!(
        e.unwrap().to_string(),
        "the openai provider failed (HTTP 500): The model is overloaded."
    );
}

#[tokio::test]
async fn connection_failures_are_transport_errors() {
    let m = OpenAiModel::new("gpt-test")
        .with_base_url(dead_base_url().await)
        .with_retry(RetryPolicy::none());
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert!(matches!(e, ModelError::Transport { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("could not reach the openai provider: "),
        "{e}"
    );
    assert!(e.is_retryable());

    let m = model(&Server::start(vec![]).await).with_header("bad header", "x");
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("the openai request could not be built ("),
        "{e}"
    );
    assert!(
        e.to_string()
            .ends_with("); check the base URL and the extra headers"),
        "{e}"
    );
}

#[tokio::test]
async fn retries_stop_at_max_attempts() {
    let busy = || Reply::json(503, openai_error("Busy.", "server_error"));
    let server = Server::start(vec![
        busy(),
        busy(),
        busy(),
        Reply::json(
            200,
            completion(json!({"role": "assistant", "content": "late"}), "stop"),
        ),
    ])
    .await;
    let m = model(&server).with_retry(RetryPolicy {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..RetryPolicy::default()
    });
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "the openai provider failed (HTTP 503): Busy."
    );
    assert_eq!(server.requests().len(), 3);

    // A retry-after beyond max_backoff is not waited for: the error comes back at once.
    let server = Server::start(vec![
        Reply::json(429, openai_error("Wait a minute.", "tokens")).header("retry-after", "60"),
    ])
    .await;
    let m = model(&server).with_retry(RetryPolicy {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_secs(1),
        ..RetryPolicy::default()
    });
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert!(
        matches!(e, ModelError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(60))
    );
    assert_eq!(server.requests().len(), 1);

    // Errors that another attempt cannot fix are never retried.
    let server = Server::start(vec![Reply::json(
        401,
        openai_error("Bad key.", "invalid_request_error"),
    )])
    .await;
    let m = model(&server).with_retry(RetryPolicy::default());
    assert!(matches!(
        m.complete(ask("Hi")).await,
        Err(ModelError::Auth { .. })
    ));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn streams_retry_only_before_anything_was_delivered() {
    let quick = RetryPolicy {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..RetryPolicy::default()
    };
    let server = Server::start(vec![
        Reply::json(503, openai_error("Busy.", "server_error")),
        sse(&[chunk(json!({"content": "fine"})), finish("stop")]),
    ])
    .await;
    let (events, e) = drain(model(&server).with_retry(quick.clone()).stream(ask("Hi"))).await;
    assert_eq!(e, None);
    assert_eq!(completed(&events).content, "fine");
    assert_eq!(server.requests().len(), 2);

    // After text reached the caller, a failure ends the stream instead of repeating the text.
    let server = Server::start(vec![
        Reply::sse(data_events(&[chunk(json!({"content": "par"}))])).ending(End::Abort),
        sse(&[chunk(json!({"content": "again"})), finish("stop")]),
    ])
    .await;
    let (events, e) = drain(model(&server).with_retry(quick).stream(ask("Hi"))).await;
    assert_eq!(text_of(&events).0, "par");
    assert!(matches!(e, Some(ModelError::Transport { .. })));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_json_answer_to_a_streaming_request_is_read_as_the_whole_turn() {
    let message = json!({"role": "assistant", "content": "Reading both.", "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":1}"}},
    ]});
    let server = Server::start(vec![
        Reply::json(200, completion(message, "tool_calls")),
        Reply::json(
            200,
            json!({"error": {"message": "Upstream overloaded.", "type": "server_error"}}),
        ),
    ])
    .await;
    let m = model(&server);
    let (events, e) = drain(m.stream(ask("Hi"))).await;
    assert_eq!(e, None);
    // The text and the calls come out as events, as a streamed answer's would.
    let delta = |index, fragment: &str| ModelStreamEvent::ToolCallDelta {
        index,
        fragment: fragment.into(),
    };
    let started = |index, id: &str, name: &str| ModelStreamEvent::ToolCallStarted {
        index,
        id: id.into(),
        name: name.into(),
    };
    assert_eq!(
        events[..events.len() - 1],
        [
            ModelStreamEvent::TextDelta {
                text: "Reading both.".into()
            },
            started(0, "call_a", "read_file"),
            delta(0, "{\"path\":\"a\"}"),
            started(1, "call_b", "grep"),
            delta(1, "{\"q\":1}"),
        ]
    );
    let response = completed(&events);
    assert_eq!(response.content, "Reading both.");
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage.cache_read_tokens, 8);

    let (_, e) = drain(m.stream(ask("Hi"))).await;
    assert_eq!(
        e.unwrap().to_string(),
        "the openai provider failed (HTTP 500): Upstream overloaded."
    );
}

#[tokio::test]
async fn stream_events_arrive_before_the_body_is_complete() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let server = Server::start(vec![
        sse(&[
            chunk(json!({"content": "first"})),
            chunk(json!({"content": " second"})),
            finish("stop"),
        ])
        .pause_after(1, Arc::clone(&gate)),
    ])
    .await;
    let m = model(&server);
    let mut stream = m.stream(ask("Hi"));
    // The server holds the rest back until the first delta has been seen by the caller.
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the first delta arrives while the body is still open");
    assert_eq!(
        first.unwrap().unwrap(),
        ModelStreamEvent::TextDelta {
            text: "first".into()
        }
    );
    gate.notify_one();
    let (rest, e) = drain(stream).await;
    assert_eq!(e, None);
    assert_eq!(completed(&rest).content, "first second");
}

fn fetch_tool() -> ToolParams {
    ToolParams {
        name: "fetch".into(),
        description: "Fetch a page.".into(),
        input_schema: json!({"type": "object",
            "properties": {"url": {"type": "string"}, "max_length": {"type": "integer", "default": 20000}},
            "required": ["url"], "additionalProperties": false}),
    }
}

fn headers_tool() -> ToolParams {
    ToolParams {
        name: "send".into(),
        description: "Send with headers.".into(),
        input_schema: json!({"type": "object",
            "properties": {"headers": {"type": "object", "additionalProperties": {"type": "string"}}},
            "required": ["headers"]}),
    }
}

fn with_tools(tools: Vec<ToolParams>) -> ModelRequest {
    ask("Fetch it").with_tools(tools)
}

/// The `strict` flags of the tools a request declared.
fn strict_flags(body: &Value) -> Vec<Option<bool>> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["strict"].as_bool())
        .collect()
}

#[tokio::test]
async fn strict_mode_is_used_when_every_tool_qualifies_and_nulls_are_relaxed() {
    let call = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "fetch", "arguments": "{\"url\":\"https://x\",\"max_length\":null}"}},
    ]});
    let server = Server::start(vec![
        Reply::json(200, completion(call.clone(), "tool_calls")),
        sse(&[
            call_start(0, "call_1", "fetch"),
            call_fragment(0, "{\"url\":\"https://x\","),
            call_fragment(0, "\"max_length\":null}"),
            finish("tool_calls"),
        ]),
    ])
    .await;
    let m = model(&server);
    let response = m.complete(with_tools(vec![fetch_tool()])).await.unwrap();
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("call_1", "fetch", "{\"url\":\"https://x\"}")]
    );
    let (events, e) = drain(m.stream(with_tools(vec![fetch_tool()]))).await;
    assert_eq!(e, None);
    assert_eq!(
        completed(&events).tool_calls,
        vec![ToolCall::new("call_1", "fetch", "{\"url\":\"https://x\"}")]
    );
    let requests = server.requests();
    let body = requests[0].json();
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "fetch",
            "description": "Fetch a page.",
            "parameters": {"type": "object",
                "properties": {"url": {"type": "string"},
                               "max_length": {"type": ["integer", "null"],
                                              "description": "Default: 20000."}},
                "required": ["url", "max_length"], "additionalProperties": false},
            "strict": true,
        }}])
    );
    assert_eq!(requests[1].json()["tools"], body["tools"]);
}

#[tokio::test]
async fn strict_mode_is_all_or_nothing_and_can_be_switched_per_model_and_per_request() {
    let reply = || {
        Reply::json(
            200,
            completion(json!({"role": "assistant", "content": "ok"}), "stop"),
        )
    };
    let server = Server::start((0..4).map(|_| reply()).collect()).await;
    // One tool strict mode cannot express: every tool goes out plain.
    model(&server)
        .complete(with_tools(vec![fetch_tool(), headers_tool()]))
        .await
        .unwrap();
    // Switched off on the model.
    let off = model(&server).with_strict_tools(false);
    off.complete(with_tools(vec![fetch_tool()])).await.unwrap();
    // A request's setting (an agent's config) wins over the model's.
    let mut request = with_tools(vec![fetch_tool()]);
    request.settings.strict_tools = Some(true);
    off.complete(request.clone()).await.unwrap();
    request.settings.strict_tools = Some(false);
    model(&server).complete(request).await.unwrap();

    let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(strict_flags(&bodies[0]), [None, None]);
    assert_eq!(
        bodies[0]["tools"][0]["function"]["parameters"],
        fetch_tool().input_schema
    );
    assert_eq!(strict_flags(&bodies[1]), [None]);
    assert_eq!(strict_flags(&bodies[2]), [Some(true)]);
    assert_eq!(strict_flags(&bodies[3]), [None]);
    // The setting itself is never sent.
    assert!(bodies.iter().all(|b| b.get("strict_tools").is_none()));
}

#[tokio::test]
async fn images_are_sent_as_image_url_parts() {
    let server = Server::start(vec![Reply::json(
        200,
        completion(json!({"role": "assistant", "content": "A cat."}), "stop"),
    )])
    .await;
    let request = ModelRequest::new(vec![Message::user_with_images(
        "What is this?",
        vec![
            Image::base64("image/png", "iVBORw0KGgo="),
            Image::url("https://example.com/cat.jpg"),
        ],
    )]);
    model(&server).complete(request).await.unwrap();
    assert_eq!(
        server.only_request().json()["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        ]}])
    );
}

#[tokio::test]
async fn a_context_length_error_is_a_context_overflow() {
    let server = Server::start(vec![
        Reply::json(
            400,
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. \
                However, your messages resulted in 130212 tokens. Please reduce the length of the \
                messages.", "type": "invalid_request_error", "param": "messages",
                "code": "context_length_exceeded"}}),
        ),
        // vLLM says it only in the message.
        Reply::json(
            400,
            json!({"object": "error", "message": "This model's maximum context length is 4096 \
                tokens. However, you requested 5000 tokens.", "type": "BadRequestError",
                "code": 400}),
        ),
        Reply::json(
            400,
            openai_error("Invalid value for 'temperature'.", "invalid_request_error"),
        ),
    ])
    .await;
    let m = model(&server);
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::ContextOverflow);
    assert_eq!(
        e.to_string(),
        "the openai provider rejected the request because it does not fit the model's context \
         window (HTTP 400): This model's maximum context length is 128000 tokens. However, your \
         messages resulted in 130212 tokens. Please reduce the length of the messages.; shorten \
         the conversation or use a model with a larger context window"
    );
    assert!(!e.is_retryable());
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::ContextOverflow);
    let e = m.complete(ask("Hi")).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::InvalidRequest);
}
