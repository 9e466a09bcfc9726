//! Agent::run: the loop, the turn limit, errors, continuation, dedupe and registry mutation.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harnessx::agent::{AgentError, RunResult};
use harnessx::model::{FunctionModel, ModelResponse, TestModel};
use harnessx::planning::PLANNING_PROMPT_LINE;
use harnessx::{
    Agent, AgentConfig, Conversation, Message, ModelError, ToolCall, ToolDefinition, ToolOptions,
    ToolOutput, ToolPolicy, Usage, handler_fn,
};
use serde_json::json;
use tokio::sync::Notify;

use super::agent_support::{add_tool, counting_tool, tool_contents};

#[tokio::test]
async fn run_loops_model_tools_model_until_an_answer() {
    let model = TestModel::new()
        .then_respond(
            ModelResponse::default()
                .with_tool_calls(vec![
                    ToolCall::json("c1", "add", json!({"a": 2, "b": 3})),
                    ToolCall::json("c2", "add", json!({"a": 10, "b": 1})),
                ])
                .with_usage(Usage::new(10, 5)),
        )
        .then_respond(
            ModelResponse::text("5 and 11").with_usage(Usage::new(20, 3).with_cache_read_tokens(8)),
        );
    let agent = Agent::builder()
        .model(model.clone())
        .instructions("You add numbers.")
        .tool(add_tool())
        .build()
        .unwrap();
    let result = agent.run("2+3 and 10+1?").await.unwrap();
    assert_eq!(result.output, "5 and 11");
    assert_eq!(result.turns, 2);
    assert_eq!(result.usage, Usage::new(30, 8).with_cache_read_tokens(8));
    assert_eq!(result.messages.len(), 5);
    assert_eq!(result.messages[0], Message::user("2+3 and 10+1?"));

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let system = requests[0].system.as_deref().unwrap();
    assert_eq!(
        system,
        format!("You add numbers.\n\n{PLANNING_PROMPT_LINE}")
    );
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "write_todos", "read_todos"]);
    match &requests[1].messages[2..] {
        [
            Message::Tool {
                call_id: id1,
                content: c1,
                is_error: false,
                ..
            },
            Message::Tool {
                call_id: id2,
                content: c2,
                ..
            },
        ] => {
            assert_eq!((id1.as_str(), c1.as_str()), ("c1", "5"));
            assert_eq!((id2.as_str(), c2.as_str()), ("c2", "11"));
        }
        other => panic!("unexpected messages {other:?}"),
    }
}

#[tokio::test]
async fn the_turn_limit_stops_a_model_that_never_answers() {
    let model = FunctionModel::new(|_, info| {
        ModelResponse::default().with_tool_calls(vec![ToolCall::json(
            format!("c{}", info.turn),
            "add",
            json!({"a": 1, "b": 1}),
        )])
    });
    let agent = Agent::builder()
        .model(model)
        .tool(add_tool())
        .config(AgentConfig::default().with_max_turns(3))
        .build()
        .unwrap();
    let mut chat = Conversation::new();
    let err = agent.run_in(&mut chat, "loop forever").await.unwrap_err();
    assert!(matches!(err, AgentError::MaxTurns { limit: 3 }));
    assert_eq!(
        err.to_string(),
        "the agent made 3 model requests without reaching a final answer; raise \
         `AgentConfig::max_turns` (currently 3) or split the task into smaller runs"
    );
    assert!(chat.is_empty(), "a failed run leaves no trace");
}

#[tokio::test]
async fn a_model_error_fails_the_run_and_keeps_the_conversation() {
    let model = TestModel::new()
        .then_reply("first answer")
        .then_fail("the provider is down");
    let agent = Agent::builder().model(model).build().unwrap();
    let mut chat = Conversation::new();
    agent.run_in(&mut chat, "one").await.unwrap();
    let err = agent.run_in(&mut chat, "two").await.unwrap_err();
    assert!(matches!(err, AgentError::Model(ModelError::Other(_))));
    assert_eq!(err.to_string(), "the provider is down");
    assert_eq!(chat.len(), 2);
}

#[tokio::test]
async fn an_exhausted_script_is_a_clear_model_error() {
    let agent = Agent::builder()
        .model(TestModel::new().then_reply("only one"))
        .build()
        .unwrap();
    agent.run("a").await.unwrap();
    let err = agent.run("b").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the TestModel script is exhausted: request 2 arrived but the script held 1 step; add \
         more with `then_reply`/`then_call`"
    );
}

#[tokio::test]
async fn runs_continue_the_conversation_they_are_given() {
    let model = TestModel::new().then_reply("Hi Ada.").then_reply("Ada.");
    let agent = Agent::builder()
        .model(model.clone())
        .config(AgentConfig::default().with_planning(false))
        .build()
        .unwrap();
    let mut chat = Conversation::new();
    agent.run_in(&mut chat, "I am Ada.").await.unwrap();
    let second = agent.run_in(&mut chat, "Who am I?").await.unwrap();
    assert_eq!(second.messages.len(), 2, "a run reports its own messages");
    let sent = &model.requests()[1].messages;
    assert_eq!(
        sent,
        &vec![
            Message::user("I am Ada."),
            Message::assistant("Hi Ada."),
            Message::user("Who am I?"),
        ]
    );
    assert_eq!(chat.len(), 4);
    // A run without a conversation starts afresh.
    let model = TestModel::new().then_reply("Hello.");
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    agent.run("Who am I?").await.unwrap();
    assert_eq!(model.requests()[0].messages.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_on_one_agent_proceed_at_once() {
    // Each run's tool waits until both runs are inside it: with runs taking turns, the first
    // would wait for the second forever.
    let inside = Arc::new(tokio::sync::Barrier::new(2));
    let gate = ToolDefinition::new(
        "gate",
        "Wait for the other run.",
        json!({"type": "object"}),
        handler_fn(move |_, _| {
            let inside = Arc::clone(&inside);
            async move {
                inside.wait().await;
                Ok(ToolOutput::text("open"))
            }
        }),
    );
    let model = FunctionModel::new(|request: &harnessx::ModelRequest, _| {
        let done = matches!(request.messages.last(), Some(Message::Tool { .. }));
        if done {
            ModelResponse::text("through")
        } else {
            ModelResponse::tool_calls(vec![ToolCall::json("g", "gate", json!({}))])
        }
    });
    let agent = Agent::builder().model(model).tool(gate).build().unwrap();
    let (mut a, mut b) = (Conversation::new(), Conversation::new());
    let (first, second) = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        futures::future::join(agent.run_in(&mut a, "one"), agent.run_in(&mut b, "two")),
    )
    .await
    .expect("two runs of one agent must not take turns");
    assert_eq!(first.unwrap().output, "through");
    assert_eq!(second.unwrap().output, "through");
    assert_eq!(a.messages()[0], Message::user("one"));
    assert_eq!(b.messages()[0], Message::user("two"));
}

#[tokio::test]
async fn malformed_arguments_get_an_error_result_and_the_model_retries() {
    let calls = Arc::new(AtomicUsize::new(0));
    let model = TestModel::new()
        .then_raw_call("count", r#"{"x": 1, "y": "cut off mid"#)
        .then_raw_call("count", r#"{"x": 1}"#)
        .then_reply("ok");
    let agent = Agent::builder()
        .model(model.clone())
        .tool(counting_tool("count", Arc::clone(&calls)))
        .build()
        .unwrap();
    let result = agent.run("count").await.unwrap();
    assert_eq!(result.output, "ok");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the partial call never ran"
    );
    match &model.requests()[1].messages[2] {
        Message::Tool {
            content, is_error, ..
        } => {
            assert!(is_error);
            assert!(
                content.contains("were cut off before the JSON ended"),
                "{content}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn dedupe_works_within_a_run_not_across_runs() {
    let calls = Arc::new(AtomicUsize::new(0));
    let model = TestModel::new()
        .then_call("count", json!({"x": 1}))
        .then_call("count", json!({"x": 1}))
        .then_reply("done")
        .then_call("count", json!({"x": 1}))
        .then_reply("done again");
    let agent = Agent::builder()
        .model(model.clone())
        .tool(counting_tool("count", Arc::clone(&calls)))
        .config(AgentConfig::default().with_tools(ToolPolicy::new().with_dedupe_calls(true)))
        .build()
        .unwrap();
    agent.run("twice").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    agent.run("once more").await.unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "a new run has fresh dedupe memory"
    );
}

#[tokio::test]
async fn mutating_the_registry_never_corrupts_an_in_flight_call() {
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let (s, r) = (Arc::clone(&started), Arc::clone(&release));
    let slow = ToolDefinition::new(
        "lookup",
        "Look something up (original).",
        json!({"type": "object"}),
        handler_fn(move |_, _| {
            let (s, r) = (Arc::clone(&s), Arc::clone(&r));
            async move {
                s.notify_one();
                r.notified().await;
                Ok(ToolOutput::text("original result"))
            }
        }),
    );
    let model = TestModel::new()
        .then_call("lookup", json!({}))
        .then_call("lookup", json!({}))
        .then_reply("done");
    let agent = Agent::builder()
        .model(model.clone())
        .tool(slow)
        .build()
        .unwrap();
    let runner = agent.clone();
    let run = tokio::spawn(async move { runner.run("look").await });

    tokio::time::timeout(Duration::from_secs(5), started.notified())
        .await
        .unwrap();
    // While the call is in flight: replace the tool, then remove and re-add it.
    let replacement = ToolDefinition::new(
        "lookup",
        "Look something up (replacement).",
        json!({"type": "object"}),
        handler_fn(|_, _| async { Ok(ToolOutput::text("replacement result")) }),
    );
    agent
        .tools()
        .register_tool_with(replacement.clone(), ToolOptions::new().replace(true))
        .unwrap();
    agent.tools().unregister("lookup");
    agent.tools().register_tool(replacement).unwrap();
    release.notify_one();

    let result: RunResult = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        tool_contents(&result.messages),
        [
            ("original result".to_string(), false),
            ("replacement result".to_string(), false)
        ]
    );
    let second = &model.requests()[1];
    let lookup = second.tools.iter().find(|t| t.name == "lookup").unwrap();
    assert_eq!(lookup.description, "Look something up (replacement).");
}

#[tokio::test]
async fn results_and_transcripts_serialise_and_round_trip() {
    let model = TestModel::new()
        .then_call("add", json!({"a": 1, "b": 2}))
        .then_reply("3");
    let agent = Agent::builder()
        .model(model.clone())
        .tool(add_tool())
        .build()
        .unwrap();
    let result = agent.run("1+2").await.unwrap();
    let text = serde_json::to_string(&result).unwrap();
    let back: RunResult = serde_json::from_str(&text).unwrap();
    assert_eq!(back, result);
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(value["messages"][1]["role"], "assistant");
    assert_eq!(value["messages"][1]["tool_calls"][0]["name"], "add");
    assert_eq!(value["messages"][2]["role"], "tool");
    for request in model.requests() {
        let text = serde_json::to_string(&request).unwrap();
        assert_eq!(
            serde_json::from_str::<harnessx::ModelRequest>(&text).unwrap(),
            request
        );
    }
}

/// An answer cut at the token limit is reported as such, not as a complete answer.
#[tokio::test]
async fn the_final_stop_reason_is_reported() {
    use harnessx::StopReason;
    use harnessx::model::TestModel;
    let cut =
        harnessx::ModelResponse::text("The first half of").with_stop_reason(StopReason::MaxTokens);
    let agent = harnessx::Agent::builder()
        .model(TestModel::new().then_respond(cut))
        .build()
        .unwrap();
    let result = agent.run("Write a long answer.").await.unwrap();
    assert_eq!(result.stop_reason, StopReason::MaxTokens);
    let agent = harnessx::Agent::builder()
        .model(TestModel::new().then_reply("Short."))
        .build()
        .unwrap();
    assert_eq!(
        agent.run("Hi").await.unwrap().stop_reason,
        StopReason::EndTurn
    );
}
