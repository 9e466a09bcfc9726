//! Planning: write_todos/read_todos, the prompt line, and the prompt-cache-friendly attachment.

use harnessx::model::TestModel;
use harnessx::planning::{
    PLANNING_PROMPT_LINE, PlanningOptions, TodoList, TodoStatus, register_planning_tools,
};
use harnessx::{
    Agent, AgentConfig, Message, PermissionLevel, RegistryError, ToolCall, ToolDefinition,
    ToolOutput, ToolRegistry, handler_fn,
};
use serde_json::json;

use super::agent_support::tool_contents;

#[tokio::test]
async fn planning_is_on_by_default_and_off_with_planning_false() {
    let model = TestModel::new().then_reply("hi");
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    assert_eq!(agent.tools().list_tools(), ["write_todos", "read_todos"]);
    agent.run("hello").await.unwrap();
    assert_eq!(
        model.requests()[0].system.as_deref(),
        Some(PLANNING_PROMPT_LINE)
    );
    let write = agent.tools().get_tool("write_todos").unwrap();
    assert!(
        !write.concurrent,
        "write_todos takes its turn on the serial lane"
    );

    let model = TestModel::new().then_reply("hi");
    let agent = Agent::builder()
        .model(model.clone())
        .instructions("Be brief.")
        .config(AgentConfig::default().with_planning(false))
        .build()
        .unwrap();
    assert!(agent.tools().is_empty());
    agent.run("hello").await.unwrap();
    assert_eq!(model.requests()[0].system.as_deref(), Some("Be brief."));
    assert!(model.requests()[0].tools.is_empty());
}

#[tokio::test]
async fn a_user_write_todos_is_used_as_is_without_the_line() {
    let mine = ToolDefinition::new(
        "write_todos",
        "My own planner.",
        json!({"type": "object"}),
        handler_fn(|_, _| async { Ok(ToolOutput::text("noted by my planner")) }),
    );
    let model = TestModel::new()
        .then_call("write_todos", json!({"anything": true}))
        .then_reply("ok");
    let agent = Agent::builder()
        .model(model.clone())
        .instructions("Be brief.")
        .tool(mine)
        .build()
        .unwrap();
    assert_eq!(agent.tools().list_tools(), ["write_todos"]);
    let result = agent.run("plan").await.unwrap();
    assert_eq!(
        tool_contents(&result.messages),
        [("noted by my planner".into(), false)]
    );
    for request in model.requests() {
        assert_eq!(request.system.as_deref(), Some("Be brief."));
        assert!(request.messages.iter().all(|m| !matches!(
            m,
            Message::User {
                attachment: Some(_),
                ..
            } | Message::Tool {
                attachment: Some(_),
                ..
            }
        )));
    }
}

#[tokio::test]
async fn a_wrong_shape_gets_a_one_line_error_and_changes_nothing() {
    let model = TestModel::new()
        .then_call(
            "write_todos",
            json!({"todos": [{"content": "Read", "status": "completed"}, {"content": "Write", "status": "pending", "owner": "me"}]}),
        )
        .then_call(
            "write_todos",
            json!({"todos": [{"content": "Read", "status": "completed"}, {"content": "Write", "status": "done"}]}),
        )
        .then_call(
            "write_todos",
            json!({"todos": [{"content": "   ", "status": "pending"}]}),
        )
        .then_call("read_todos", json!({}))
        .then_reply("ok");
    let agent = Agent::builder().model(model).build().unwrap();
    let result = agent.run("plan").await.unwrap();
    let tools = tool_contents(&result.messages);
    assert_eq!(
        tools[0],
        (
            "Todo list updated: 2 items (1 completed, 0 in progress, 1 pending).".into(),
            false
        )
    );
    let (bad_status, is_error) = &tools[1];
    assert!(is_error);
    assert!(!bad_status.contains('\n'));
    assert!(
        bad_status.starts_with("Invalid arguments for `write_todos`: field `todos[1].status`:"),
        "{bad_status}"
    );
    let (blank, is_error) = &tools[2];
    assert!(is_error);
    assert_eq!(
        blank,
        "Invalid todo list: `todos[0].content` is blank. The list was not changed; send the \
         whole list again with every item as {\"content\": \"...\", \"status\": \
         \"pending|in_progress|completed\"}."
    );
    // Nothing changed, and the extra key survived.
    assert_eq!(
        tools[3].0,
        "Current todo list:\n1. [completed] Read\n2. [pending] Write {\"owner\":\"me\"}"
    );
    assert_eq!(result.todos.len(), 2);
    assert_eq!(result.todos[1].extra["owner"], "me");
    assert_eq!(result.todos[1].status, TodoStatus::Pending);
}

#[tokio::test]
async fn the_list_is_attached_to_the_newest_message_and_the_prefix_never_changes() {
    let model = TestModel::new()
        .then_call(
            "write_todos",
            json!({"todos": [{"content": "Read", "status": "in_progress"}, {"content": "Write", "status": "pending"}]}),
        )
        .then_calls([
            ToolCall::json("a", "read_todos", json!({})),
            ToolCall::json(
                "b",
                "write_todos",
                json!({"todos": [{"content": "Read", "status": "completed"}, {"content": "Write", "status": "in_progress"}]}),
            ),
        ])
        .then_call(
            "write_todos",
            json!({"todos": [{"content": "Read", "status": "completed"}, {"content": "Write", "status": "completed"}]}),
        )
        .then_reply("Done.");
    let agent = Agent::builder()
        .model(model.clone())
        .instructions("Work carefully.")
        .build()
        .unwrap();
    agent.run("Do the work.").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 4);

    // Byte-identical prefixes: every request starts with the previous one's messages exactly.
    for pair in requests.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert_eq!(before.system, after.system);
        assert_eq!(
            serde_json::to_string(&before.tools).unwrap(),
            serde_json::to_string(&after.tools).unwrap()
        );
        let prefix = serde_json::to_string(&before.messages).unwrap();
        let next = serde_json::to_string(&after.messages[..before.messages.len()]).unwrap();
        assert_eq!(prefix, next);
    }

    // The first request: the list is empty, nothing attached.
    assert!(matches!(
        &requests[0].messages[0],
        Message::User {
            attachment: None,
            ..
        }
    ));
    // Each later request: the newest message carries the list as it was at that moment.
    let newest = |i: usize| match requests[i].messages.last().unwrap() {
        Message::Tool { attachment, .. } => attachment.clone().unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        newest(1),
        "Current todo list:\n1. [in_progress] Read\n2. [pending] Write"
    );
    assert_eq!(
        newest(2),
        "Current todo list:\n1. [completed] Read\n2. [in_progress] Write"
    );
    assert_eq!(
        newest(3),
        "Current todo list:\n1. [completed] Read\n2. [completed] Write"
    );
    // Only the newest message of a batch carries it.
    let batch = &requests[2].messages[requests[2].messages.len() - 2];
    assert!(matches!(
        batch,
        Message::Tool {
            attachment: None,
            ..
        }
    ));
}

#[test]
fn the_planning_helper_filters_and_fails_on_unknown_names() {
    let registry = ToolRegistry::new();
    let names = register_planning_tools(
        &registry,
        PlanningOptions {
            exclude: vec!["read_todos".into()],
            permission: Some(PermissionLevel::Ask),
            ..PlanningOptions::default()
        },
    )
    .unwrap();
    assert_eq!(names, ["write_todos"]);
    assert_eq!(
        registry.get_tool("write_todos").unwrap().permission,
        Some(PermissionLevel::Ask)
    );

    let err = register_planning_tools(
        &registry,
        PlanningOptions {
            include: Some(vec!["write_todo".into()]),
            ..PlanningOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown planning tool `write_todo`; the planning tools are write_todos, read_todos"
    );
    let err = register_planning_tools(&registry, PlanningOptions::default()).unwrap_err();
    assert!(matches!(err, RegistryError::Duplicate(ref n) if n == "write_todos"));
    let names = register_planning_tools(
        &registry,
        PlanningOptions {
            replace: true,
            ..PlanningOptions::default()
        },
    )
    .unwrap();
    assert_eq!(names, ["write_todos", "read_todos"]);
}

#[tokio::test]
async fn a_bundle_registered_planner_shares_its_list_with_the_agent() {
    let list = TodoList::new();
    let registry = ToolRegistry::new();
    register_planning_tools(
        &registry,
        PlanningOptions {
            list: Some(list.clone()),
            ..PlanningOptions::default()
        },
    )
    .unwrap();
    let model = TestModel::new()
        .then_call(
            "write_todos",
            json!({"todos": [{"content": "One", "status": "pending"}]}),
        )
        .then_reply("ok");
    let agent = Agent::builder()
        .model(model.clone())
        .registry(registry)
        .build()
        .unwrap();
    agent.run("plan").await.unwrap();
    assert_eq!(list.items()[0].content, "One");
    assert_eq!(
        model.requests()[0].system.as_deref(),
        Some(PLANNING_PROMPT_LINE)
    );
}

/// Clearing the list is news too: once a list was attached, the newest message says it is empty.
#[tokio::test]
async fn a_cleared_list_is_attached_as_empty() {
    let model = TestModel::new()
        .then_call(
            "write_todos",
            json!({"todos": [{"content": "Read", "status": "in_progress"}]}),
        )
        .then_call("write_todos", json!({"todos": []}))
        .then_reply("Nothing left.");
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    agent.run("Plan, then clear the plan.").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let newest = |i: usize| match requests[i].messages.last() {
        Some(Message::Tool { attachment, .. } | Message::User { attachment, .. }) => {
            attachment.clone()
        }
        _ => None,
    };
    assert_eq!(newest(0), None, "nothing to attach before any list exists");
    assert_eq!(
        newest(1).as_deref(),
        Some("Current todo list:\n1. [in_progress] Read")
    );
    assert_eq!(newest(2).as_deref(), Some("Current todo list: (empty)"));
}
