//! Subagents: a specialist as a tool, with a fresh registry, the parent's lane and a timeout.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harnessx::IntoTool;
use harnessx::model::{FunctionModel, ModelResponse, TestModel};
use harnessx::{
    Agent, AgentConfig, Message, PermissionLevel, PermissionManager, SubAgent, ToolCall,
    ToolDefinition, ToolError, ToolOutput, ToolRegistry, handler_fn,
};
use serde_json::json;

use super::agent_support::{add_tool, serial_probe, tool_contents};

#[tokio::test]
async fn a_subagent_runs_its_task_in_a_fresh_registry_with_copied_tools() {
    let child_model = TestModel::new()
        .then_call("add", json!({"a": 20, "b": 22}))
        .then_reply("The sum is 42.");
    let add = add_tool().with_timeout_seconds(7.0);
    let specialist = SubAgent::new(
        "calculator",
        "Do arithmetic.",
        child_model.clone(),
        "You compute.",
    )
    .tool(add.clone());
    let parent_model = TestModel::new()
        .then_call("calculator", json!({"task": "Add 20 and 22."}))
        .then_reply("42");
    let agent = Agent::builder()
        .model(parent_model.clone())
        .tool(specialist)
        .build()
        .unwrap();
    let def = agent.tools().get_tool("calculator").unwrap();
    assert_eq!(def.timeout, Some(Duration::from_secs(300)));
    assert!(def.concurrent);
    assert_eq!(def.input_schema["required"], json!(["task"]));
    assert!(
        !agent.tools().contains("add"),
        "declared tools stay with the specialist"
    );

    let result = agent.run("What is 20 + 22?").await.unwrap();
    assert_eq!(result.output, "42");
    assert_eq!(
        tool_contents(&result.messages),
        [("The sum is 42.".to_string(), false)]
    );
    let child_requests = child_model.requests();
    assert_eq!(
        child_requests[0].messages[0],
        Message::user("Add 20 and 22.")
    );
    assert!(
        child_requests[0]
            .system
            .as_deref()
            .unwrap()
            .starts_with("You compute.")
    );
    let child_add = child_requests[0]
        .tools
        .iter()
        .find(|t| t.name == "add")
        .unwrap();
    assert_eq!(child_add, &add.params(), "the schema is copied as declared");
    assert!(
        !child_requests[0]
            .tools
            .iter()
            .any(|t| t.name == "calculator")
    );
}

#[tokio::test]
async fn each_task_gets_a_fresh_conversation() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let child = FunctionModel::new(move |request, _| {
        seen2.lock().unwrap().push(request.messages.len());
        ModelResponse::text("done")
    });
    let parent = TestModel::new()
        .then_calls([
            ToolCall::json("a", "helper", json!({"task": "one"})),
            ToolCall::json("b", "helper", json!({"task": "two"})),
        ])
        .then_reply("both done");
    let agent = Agent::builder()
        .model(parent)
        .tool(SubAgent::new("helper", "Help.", child, "Help."))
        .build()
        .unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [1, 1]);
}

#[tokio::test]
async fn serial_tools_take_turns_across_the_agent_and_its_specialists_without_deadlock() {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let probe = serial_probe("probe", Arc::clone(&active), Arc::clone(&peak));
    let child = TestModel::new()
        .then_calls([
            ToolCall::json("c1", "probe", json!({})),
            ToolCall::json("c2", "probe", json!({})),
        ])
        .then_reply("child done");
    let parent = TestModel::new()
        .then_calls([
            ToolCall::json("p1", "probe", json!({})),
            ToolCall::json("p2", "worker", json!({"task": "probe twice"})),
            ToolCall::json("p3", "probe", json!({})),
        ])
        .then_reply("all done");
    let registry = ToolRegistry::new();
    let agent = Agent::builder()
        .model(parent)
        .registry(registry.clone())
        .tool(probe.clone())
        .tool(SubAgent::new("worker", "Works.", child, "Work.").tool(probe))
        .config(AgentConfig::default().with_planning(false))
        .build()
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), agent.run("go"))
        .await
        .expect("no deadlock between the subagent and the shared serial lane")
        .unwrap();
    assert_eq!(result.output, "all done");
    let contents = tool_contents(&result.messages);
    assert_eq!(contents.len(), 3);
    assert_eq!(contents[1], ("child done".to_string(), false));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "serial tools never overlapped"
    );
}

#[tokio::test]
async fn a_subagent_registered_as_serial_runs_its_serial_tools_within_its_own_turn() {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let probe = serial_probe("probe", Arc::clone(&active), Arc::clone(&peak));
    let child = TestModel::new()
        .then_calls([
            ToolCall::json("c1", "probe", json!({})),
            ToolCall::json("c2", "probe", json!({})),
        ])
        .then_reply("child done");
    let parent = TestModel::new()
        .then_calls([
            ToolCall::json("p1", "worker", json!({"task": "probe twice"})),
            ToolCall::json("p2", "probe", json!({})),
        ])
        .then_reply("all done");
    // The specialist holds the lane for its whole task; its own serial calls take turns inside it.
    let worker: ToolDefinition = SubAgent::new("worker", "Works.", child, "Work.")
        .tool(probe.clone())
        .into_tool()
        .with_concurrent(false);
    let agent = Agent::builder()
        .model(parent)
        .tool(probe)
        .tool(worker)
        .config(AgentConfig::default().with_planning(false))
        .build()
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), agent.run("go"))
        .await
        .expect("the specialist never waits for the turn its own call holds")
        .unwrap();
    let contents = tool_contents(&result.messages);
    assert_eq!(contents[0], ("child done".to_string(), false));
    assert_eq!(contents[1], ("probed".to_string(), false));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "serial tools never overlapped"
    );
}

/// Runs a parent that hands `specialist` one task, then answers "moved on"; returns the
/// parent's result.
async fn delegate_once(specialist: SubAgent) -> harnessx::RunResult {
    let parent = TestModel::new()
        .then_call(specialist.name(), json!({"task": "x"}))
        .then_reply("moved on");
    let agent = Agent::builder()
        .model(parent)
        .tool(specialist)
        .build()
        .unwrap();
    agent.run("go").await.unwrap()
}

#[tokio::test]
async fn a_subagent_that_runs_past_its_limit_times_out_and_the_run_goes_on() {
    let stuck = FunctionModel::new_async(|_, _| std::future::pending());
    let result =
        delegate_once(SubAgent::new("slowpoke", "Slow.", stuck, "Think.").timeout_seconds(0.05))
            .await;
    assert_eq!(result.output, "moved on");
    let (content, is_error) = &tool_contents(&result.messages)[0];
    assert!(is_error);
    assert_eq!(
        content,
        "The tool `slowpoke` timed out after 50 ms. It may have partly run: check its effects \
         before calling it again."
    );
}

#[tokio::test]
async fn a_failing_specialist_is_an_error_result_not_a_failed_run() {
    let child = TestModel::new().then_fail("the provider refused");
    let result = delegate_once(SubAgent::new("broken", "Broken.", child, "x")).await;
    let (content, is_error) = &tool_contents(&result.messages)[0];
    assert!(is_error);
    assert_eq!(
        content,
        "The subagent `broken` did not finish the task: the provider refused. Retry with a \
         smaller or clearer task, or do it yourself."
    );
}

#[tokio::test]
async fn a_specialist_inherits_the_calling_agents_permission_policy() {
    let child_last_tool = |model: &TestModel| {
        let requests = model.requests();
        tool_contents(&requests[requests.len() - 1].messages)
    };
    let policy = || {
        PermissionManager::new(PermissionLevel::Deny)
            .with_override("calculator", PermissionLevel::Allow)
    };
    let run = |specialist: SubAgent| async move {
        let parent = TestModel::new()
            .then_call("calculator", json!({"task": "Add 1 and 2."}))
            .then_reply("ok");
        let agent = Agent::builder()
            .model(parent)
            .tool(specialist)
            .permissions(policy())
            .config(AgentConfig::default().with_planning(false))
            .build()
            .unwrap();
        agent.run("go").await.unwrap();
    };

    let child = TestModel::new()
        .then_call("add", json!({"a": 1, "b": 2}))
        .then_reply("denied");
    run(SubAgent::new("calculator", "Math.", child.clone(), "x").tool(add_tool())).await;
    assert_eq!(
        child_last_tool(&child),
        [("Permission denied".to_string(), true)]
    );

    let child = TestModel::new()
        .then_call("add", json!({"a": 1, "b": 2}))
        .then_reply("3");
    run(SubAgent::new("calculator", "Math.", child.clone(), "x")
        .tool(add_tool())
        .permissions(PermissionManager::default()))
    .await;
    assert_eq!(child_last_tool(&child), [("3".to_string(), false)]);
}

#[tokio::test]
async fn a_specialist_that_cannot_be_set_up_is_an_error_result() {
    let twins = SubAgent::new("twins", "Twins.", TestModel::new(), "x")
        .tool(add_tool())
        .tool(add_tool());
    let result = delegate_once(twins).await;
    let (content, is_error) = &tool_contents(&result.messages)[0];
    assert!(is_error);
    assert_eq!(
        content,
        "The subagent `twins` could not be set up: a tool named `add` is already registered; \
         pass `replace(true)` to replace it deliberately. This is a configuration fault, not a \
         problem with your task; do the task another way or report it to the user."
    );
}

#[tokio::test]
async fn shared_state_reaches_the_specialists_tools_but_its_todo_list_stays_its_own() {
    let answer = ToolDefinition::new(
        "answer",
        "Read the shared answer.",
        json!({"type": "object"}),
        handler_fn(|_, ctx| async move {
            let value = ctx
                .state::<u32>()
                .ok_or_else(|| ToolError::failed("no shared u32"))?;
            Ok(ToolOutput::text(value.to_string()))
        }),
    );
    let child = TestModel::new()
        .then_calls([
            ToolCall::json("c1", "answer", json!({})),
            ToolCall::json(
                "c2",
                "write_todos",
                json!({"todos": [{"content": "child step", "status": "completed"}]}),
            ),
        ])
        .then_reply("child done");
    let parent = TestModel::new()
        .then_call(
            "write_todos",
            json!({"todos": [{"content": "parent step", "status": "in_progress"}]}),
        )
        .then_call("helper", json!({"task": "answer"}))
        .then_reply("done");
    let agent = Agent::builder()
        .model(parent)
        .tool(SubAgent::new("helper", "Help.", child.clone(), "x").tool(answer))
        .build()
        .unwrap();
    agent.tools().insert_state(41_u32);
    let result = agent.run("go").await.unwrap();
    let requests = child.requests();
    assert_eq!(
        tool_contents(&requests[1].messages),
        [
            ("41".to_string(), false),
            (
                "Todo list updated: 1 item (1 completed, 0 in progress, 0 pending).".to_string(),
                false
            )
        ]
    );
    assert_eq!(result.todos.len(), 1);
    assert_eq!(result.todos[0].content, "parent step");
}
