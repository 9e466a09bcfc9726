//! Agent::run_stream: the order of events, errors at the end, cancellation on drop.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use harnessx::agent::{AgentError, AgentEvent};
use harnessx::model::{Model, ModelRequest, ModelResponse, ModelStreamEvent, TestModel};
use harnessx::planning::TodoStatus;
use harnessx::{Agent, BoxFuture, ModelError, ToolCall, ToolDefinition, ToolOutput, handler_fn};
use serde_json::json;
use tokio::sync::{Notify, oneshot};

use super::agent_support::sleepy_tool;

/// A compact label per event, to compare whole sequences.
fn label(event: &AgentEvent) -> String {
    match event {
        AgentEvent::TextDelta { .. } => "text".into(),
        AgentEvent::TurnCompleted { turn, .. } => format!("turn {turn}"),
        AgentEvent::ToolCallStart { call_id, .. } => format!("start {call_id}"),
        AgentEvent::ToolResult { result } => format!("result {}", result.call_id),
        AgentEvent::TodosUpdated { todos } => format!("todos {}", todos.len()),
        AgentEvent::Completed { .. } => "completed".into(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn events_arrive_in_the_documented_order() {
    let model = TestModel::new()
        .with_fragment_chars(4)
        .then_respond(ModelResponse::text("Working on it.").with_tool_calls(vec![
            ToolCall::json("slow", "slow", json!({})),
            ToolCall::json("fast", "fast", json!({})),
            ToolCall::json(
                "plan",
                "write_todos",
                json!({"todos": [{"content": "Check", "status": "in_progress"}]}),
            ),
        ]))
        .then_reply("All done.");
    let agent = Agent::builder()
        .model(model)
        .tool(sleepy_tool("slow", 60))
        .tool(sleepy_tool("fast", 0))
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("go").map(|e| e.unwrap()).collect().await;

    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Working on it.All done.");
    let mut labels: Vec<String> = events.iter().map(label).collect();
    labels.dedup();
    assert_eq!(
        labels,
        [
            "text",
            "turn 1",
            "start slow",
            "start fast",
            "start plan",
            "result slow",
            "result fast",
            "result plan",
            "todos 1",
            "text",
            "turn 2",
            "completed"
        ]
    );
    let AgentEvent::TodosUpdated { todos } = &events[labels_index(&events, "todos 1")] else {
        unreachable!()
    };
    assert_eq!(todos[0].status, TodoStatus::InProgress);
    let AgentEvent::Completed { result } = events.last().unwrap() else {
        panic!("the last event must be Completed");
    };
    assert_eq!(result.output, "All done.");
    assert_eq!(result.todos.len(), 1);

    for event in &events {
        let text = serde_json::to_string(event).unwrap();
        assert_eq!(&serde_json::from_str::<AgentEvent>(&text).unwrap(), event);
    }
    let start = serde_json::to_value(&events[labels_index(&events, "start slow")]).unwrap();
    assert_eq!(start["type"], "tool_call_start");
    assert_eq!(start["name"], "slow");
}

fn labels_index(events: &[AgentEvent], wanted: &str) -> usize {
    events.iter().position(|e| label(e) == wanted).unwrap()
}

#[tokio::test]
async fn a_failing_run_ends_the_stream_with_the_error() {
    let agent = Agent::builder()
        .model(
            TestModel::new()
                .then_call("slow", json!({}))
                .then_fail("overloaded"),
        )
        .tool(sleepy_tool("slow", 0))
        .build()
        .unwrap();
    let items: Vec<Result<AgentEvent, AgentError>> = agent.run_stream("go").collect().await;
    let last = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(last.to_string(), "overloaded");
    assert!(items[..items.len() - 1].iter().all(Result::is_ok));
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_calls_in_flight() {
    let (tx, rx) = oneshot::channel::<&'static str>();
    let tx = Arc::new(std::sync::Mutex::new(Some(tx)));
    let started = Arc::new(Notify::new());
    let started2 = Arc::clone(&started);
    let waits = ToolDefinition::new(
        "wait",
        "Wait until cancelled.",
        json!({"type": "object"}),
        handler_fn(move |_, ctx| {
            let tx = Arc::clone(&tx);
            let started = Arc::clone(&started2);
            async move {
                started.notify_one();
                ctx.cancellation().cancelled().await;
                if let Some(tx) = tx.lock().unwrap().take() {
                    let _ = tx.send("cancelled");
                }
                Ok(ToolOutput::text("never seen"))
            }
        }),
    );
    let agent = Agent::builder()
        .model(
            TestModel::new()
                .then_call("wait", json!({}))
                .then_reply("x"),
        )
        .tool(waits)
        .build()
        .unwrap();
    let stream = agent.run_stream("go");
    let consumer = tokio::spawn(stream.for_each(|_| async {}));
    tokio::time::timeout(Duration::from_secs(5), started.notified())
        .await
        .unwrap();
    consumer.abort();
    let seen = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen, "cancelled");
}

/// A provider whose stream stops before the turn completes (a dropped connection).
struct CutOffStream;

impl Model for CutOffStream {
    fn name(&self) -> &str {
        "cut-off"
    }
    fn complete(&self, _request: ModelRequest) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
        Box::pin(async { Ok(ModelResponse::default()) })
    }
    fn stream(
        &self,
        _request: ModelRequest,
    ) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
        futures::stream::iter([Ok(ModelStreamEvent::TextDelta {
            text: "Half an ans".into(),
        })])
        .boxed()
    }
}

#[tokio::test]
async fn a_stream_that_stops_before_the_turn_completes_fails_the_run() {
    let agent = Agent::builder().model(CutOffStream).build().unwrap();
    let items: Vec<Result<AgentEvent, AgentError>> = agent.run_stream("go").collect().await;
    assert!(matches!(&items[0], Ok(AgentEvent::TextDelta { text }) if text == "Half an ans"));
    let err = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the cut-off provider sent a response that could not be read: the response stream ended \
         before the turn was complete; run again"
    );
}

#[tokio::test]
async fn another_run_completes_while_a_run_streams() {
    let release = Arc::new(Notify::new());
    let release2 = Arc::clone(&release);
    let gate = ToolDefinition::new(
        "gate",
        "Wait for the gate to open.",
        json!({"type": "object"}),
        handler_fn(move |_, _| {
            let release = Arc::clone(&release2);
            async move {
                release.notified().await;
                Ok(ToolOutput::text("open"))
            }
        }),
    );
    let agent = Agent::builder()
        .model(
            TestModel::new()
                .then_call("gate", json!({}))
                .then_reply("meanwhile")
                .then_reply("second"),
        )
        .tool(gate)
        .build()
        .unwrap();
    let mut chat = harnessx::Conversation::new();
    let mut stream = agent.run_stream_in(&chat, "one");
    let mut meanwhile = None;
    let mut last = None;
    let consume = async {
        while let Some(event) = stream.next().await {
            match event.unwrap() {
                AgentEvent::ToolCallStart { .. } => {
                    // The streamed run is parked in the tool; another run does not wait for it.
                    meanwhile = Some(agent.run("two").await.unwrap().output);
                    release.notify_one();
                }
                AgentEvent::Completed { result } => last = Some(result),
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), consume)
        .await
        .expect("a second run must not wait for the streamed one");
    assert_eq!(meanwhile.as_deref(), Some("meanwhile"));
    let result = last.unwrap();
    assert_eq!(result.output, "second");
    chat.record(&result);
    assert_eq!(chat.len(), 4, "prompt, call, result, answer");
}
