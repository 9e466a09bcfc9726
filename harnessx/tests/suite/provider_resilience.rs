//! Model retries, fallback models and call deadlines against loopback servers replaying the
//! providers' wire formats.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use harnessx::model::{
    AnthropicModel, FallbackModel, ModelErrorKind, OpenAiModel, RetryPolicy, Sleeper,
};
use harnessx::{Agent, AgentConfig, AgentEvent, Model, ModelError, ModelStreamEvent};
use serde_json::{Value, json};

use super::provider_common::{Reply, Server, ask, completed, data_events, drain, text_of};

fn openai(server: &Server) -> OpenAiModel {
    OpenAiModel::new("gpt-test")
        .with_base_url(format!("{}/v1", server.base_url))
        .with_api_key("sk-test")
        .with_retry(RetryPolicy::none())
}

fn anthropic(server: &Server) -> AnthropicModel {
    AnthropicModel::new("claude-test")
        .with_base_url(&server.base_url)
        .with_api_key("sk-ant-test")
        .with_retry(RetryPolicy::none())
}

fn answer(text: &str) -> Reply {
    Reply::json(
        200,
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop"}]}),
    )
}

fn text_chunk(text: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
           "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
}

fn failure(status: u16, message: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}}),
    )
}

fn anthropic_stream(text: &str) -> Reply {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
               "role": "assistant", "content": [], "model": "claude-test",
               "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    Reply::sse(
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())),
    )
}

/// A sleeper that records each wait and returns at once.
fn recording_sleeper() -> (Sleeper, Arc<Mutex<Vec<Duration>>>) {
    let waits = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&waits);
    let sleeper = Sleeper::new(move |d| {
        seen.lock().unwrap().push(d);
        Box::pin(async {})
    });
    (sleeper, waits)
}

#[tokio::test]
async fn a_429_is_retried_after_the_retry_after_the_provider_sent() {
    let server = Server::start(vec![
        failure(429, "Slow down.").header("retry-after", "3"),
        answer("ok"),
        failure(429, "Slow down.").header("retry-after", "Fri, 01 Jan 2100 00:00:00 GMT"),
        answer("later"),
    ])
    .await;
    let (sleeper, waits) = recording_sleeper();
    let policy = RetryPolicy {
        max_attempts: 2,
        max_backoff: Duration::MAX,
        max_total_delay: Duration::MAX,
        ..RetryPolicy::default()
    }
    .with_sleeper(sleeper);
    let m = openai(&server).with_retry(policy);
    assert_eq!(m.complete(ask("Hi")).await.unwrap().content, "ok");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(*waits.lock().unwrap(), [Duration::from_secs(3)]);

    // An HTTP date is waited for until that moment.
    let until_2100 = Duration::from_secs(4_102_444_800)
        - SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap();
    let (stream_events, e) = drain(m.stream(ask("Hi"))).await;
    assert_eq!(e, None);
    assert_eq!(completed(&stream_events).content, "later");
    assert_eq!(server.requests().len(), 4);
    let waited = waits.lock().unwrap()[1];
    assert!(
        waited <= until_2100 && until_2100 - waited < Duration::from_secs(60),
        "waited {waited:?}, expected about {until_2100:?}"
    );
}

#[tokio::test]
async fn retries_stop_when_the_total_delay_would_pass_its_cap() {
    let server = Server::start(vec![
        failure(429, "Slow down.").header("retry-after", "4"),
        failure(429, "Slow down.").header("retry-after", "4"),
        answer("too late"),
    ])
    .await;
    let (sleeper, waits) = recording_sleeper();
    let policy = RetryPolicy {
        max_attempts: 5,
        max_total_delay: Duration::from_secs(6),
        ..RetryPolicy::default()
    }
    .with_sleeper(sleeper);
    let e = openai(&server)
        .with_retry(policy)
        .complete(ask("Hi"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::RateLimited);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(*waits.lock().unwrap(), [Duration::from_secs(4)]);
}

#[tokio::test]
async fn a_server_failure_falls_back_to_the_second_model_and_the_agent_reports_it() {
    let primary = Server::start(vec![failure(500, "Busy."), failure(500, "Busy.")]).await;
    let secondary = Server::start(vec![anthropic_stream("From the second model.")]).await;
    let (sleeper, waits) = recording_sleeper();
    let retry = RetryPolicy {
        max_attempts: 2,
        ..RetryPolicy::default()
    }
    .with_sleeper(sleeper);
    let model =
        FallbackModel::new(openai(&primary).with_retry(retry)).with_fallback(anthropic(&secondary));
    assert_eq!(
        model.model_names(),
        ["openai:gpt-test", "anthropic:claude-test"]
    );
    let agent = Agent::builder()
        .model(model)
        .config(AgentConfig::default().with_planning(false))
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("Hi").map(|e| e.unwrap()).collect().await;
    assert_eq!(
        events[0],
        AgentEvent::ModelFallback {
            from: "openai:gpt-test".into(),
            to: "anthropic:claude-test".into(),
            kind: ModelErrorKind::Server,
            error: "the openai provider failed (HTTP 500): Busy.".into(),
        }
    );
    assert_eq!(
        events[1],
        AgentEvent::TextDelta {
            text: "From the second model.".into()
        }
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Completed { result }) if result.output == "From the second model."
    ));
    // The primary used up its retries first; the fallback notice serialises for a host.
    assert_eq!(primary.requests().len(), 2);
    assert_eq!(waits.lock().unwrap().len(), 1);
    assert_eq!(secondary.requests().len(), 1);
    assert_eq!(serde_json::to_value(&events[0]).unwrap()["kind"], "server");
    agent.close().await;
}

#[tokio::test]
async fn a_context_overflow_falls_back_and_an_auth_error_does_not() {
    let overflow = json!({"error": {"message": "This model's maximum context length is 8192 tokens.",
                                    "type": "invalid_request_error", "code": "context_length_exceeded"}});
    let primary = Server::start(vec![Reply::json(400, overflow), failure(401, "Bad key.")]).await;
    let secondary = Server::start(vec![answer("Bigger window.")]).await;
    let model = FallbackModel::new(openai(&primary)).with_fallback(openai(&secondary));
    let response = model.complete(ask("Hi")).await.unwrap();
    assert_eq!(response.content, "Bigger window.");
    let e = model.complete(ask("Hi")).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::Auth);
    assert_eq!(secondary.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_that_trickles_forever_ends_at_the_deadline() {
    let chunks: Vec<Value> = (0..5_000).map(|i| text_chunk(&format!("{i} "))).collect();
    let server = Server::start(vec![Reply::sse(data_events(&chunks))]).await;
    let m = openai(&server).with_deadline(Duration::from_millis(250));
    let (events, e) = drain(m.stream(ask("Hi"))).await;
    let (_, deltas) = text_of(&events);
    assert!(
        deltas > 0 && deltas < 5_000,
        "{deltas} deltas before the deadline"
    );
    let e = e.expect("the stream ends with an error");
    assert_eq!(e.kind(), ModelErrorKind::Timeout);
    assert_eq!(
        e.to_string(),
        "the openai provider timed out: no complete answer within the 0.25 s deadline of a model \
         call; give the model longer with `with_deadline`, or ask for a shorter answer"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ModelStreamEvent::Completed { .. }))
    );
}

#[tokio::test]
async fn a_body_that_never_comes_ends_at_the_deadline_and_client_timeouts_are_timeouts() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let stalled = || Reply::sse(["{"]).pause_after(0, Arc::clone(&gate));
    let server = Server::start(vec![stalled(), stalled()]).await;
    let e = anthropic(&server)
        .with_deadline(Duration::from_millis(200))
        .complete(ask("Hi"))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the anthropic provider timed out: no complete answer within the 0.2 s deadline of a \
         model call; give the model longer with `with_deadline`, or ask for a shorter answer"
    );

    let client = reqwest::Client::builder()
        .read_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let (_, e) = drain(
        anthropic(&server)
            .with_http_client(client)
            .stream(ask("Hi")),
    )
    .await;
    let e = e.unwrap();
    assert_eq!(e.kind(), ModelErrorKind::Timeout);
    let text = e.to_string();
    assert!(
        text.starts_with("the anthropic provider timed out: the HTTP client stopped waiting ("),
        "{text}"
    );
    assert!(
        text.ends_with("); give it longer with `with_http_client`"),
        "{text}"
    );
    assert!(matches!(e, ModelError::Timeout { .. }));
}
