//! One MCP session shared by many registries (agents): one server process, the same tools in
//! each, list changes and restarts handled once for all, closing one registry leaving the
//! others working, closing the session ending the process.

use std::time::Duration;

use harnessx::agent::Capability;
use harnessx::mcp::{McpError, McpSession, connect_mcp_server};
use harnessx::model::TestModel;
use harnessx::{Agent, Message, ToolRegistry};
use serde_json::json;

use crate::common::{Counting, call, eventually, kill, stopped};

/// A registry given the session's tools, as an agent's is at `build`.
fn registry_of(session: &McpSession) -> ToolRegistry {
    let registry = ToolRegistry::new();
    session.capability().register(&registry).unwrap();
    registry
}

/// The text of a run's first tool result.
fn first_tool_result(messages: &[Message]) -> (String, bool) {
    messages
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .expect("the run called a tool")
}

#[tokio::test]
async fn two_agents_share_one_session_and_one_server_process() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    assert_eq!(session.tool_names(), ["echo", "pid", "add_tool"]);
    let agent = |message: &str| {
        Agent::builder()
            .model(
                TestModel::new()
                    .then_call("mcp_counting_echo", json!({"message": message}))
                    .then_reply("done"),
            )
            .capability(session.capability())
            .build()
            .unwrap()
    };
    let (first, second) = (agent("one"), agent("two"));
    let expected = [
        "mcp_counting_echo",
        "mcp_counting_pid",
        "mcp_counting_add_tool",
    ];
    let mcp_tools = |agent: &Agent| -> Vec<String> {
        let tools = agent.tools().list_tools();
        tools
            .into_iter()
            .filter(|t| t.starts_with("mcp_"))
            .collect()
    };
    assert_eq!(mcp_tools(&first), expected);
    assert_eq!(mcp_tools(&second), expected);
    assert_eq!(session.registry_count(), 2);

    let (one, two) = tokio::join!(first.run("go"), second.run("go"));
    assert_eq!(
        first_tool_result(&one.unwrap().messages),
        ("Echo: one".to_owned(), false)
    );
    assert_eq!(
        first_tool_result(&two.unwrap().messages),
        ("Echo: two".to_owned(), false)
    );

    // One process, started once, answered both agents.
    let started = counting.started();
    assert_eq!(started.len(), 1, "server starts: {started:?}");
    assert_eq!(session.process_id().await, Some(started[0]));
    for registry in [first.tools(), second.tools()] {
        let pid = call(registry, "mcp_counting_pid", json!({})).await;
        assert_eq!(pid.content, started[0].to_string(), "{pid:?}");
    }
    session.close().await;
}

#[tokio::test]
async fn a_call_through_either_registry_reaches_the_server() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    let (a, b) = (registry_of(&session), registry_of(&session));
    let results = futures::future::join_all((0..10).map(|i| {
        let registry = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move {
            call(
                &registry,
                "mcp_counting_echo",
                json!({"message": i.to_string()}),
            )
            .await
        }
    }))
    .await;
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result.content, format!("Echo: {i}"), "{result:?}");
    }
    assert_eq!(counting.started().len(), 1);
    session.close().await;
}

#[tokio::test]
async fn a_tool_list_change_reaches_every_registry() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    let (a, b) = (registry_of(&session), registry_of(&session));
    let narrow = ToolRegistry::new();
    session
        .capability()
        .allow_tools(["echo"])
        .register(&narrow)
        .unwrap();

    let added = call(&a, "mcp_counting_add_tool", json!({"name": "extra"})).await;
    assert_eq!(added.content, "added extra", "{added:?}");
    for registry in [&a, &b] {
        eventually("the new tool reached the registry", || async {
            registry.contains("mcp_counting_extra")
        })
        .await;
    }
    assert!(session.list_changed_count() >= 1);
    assert!(session.tool_names().contains(&"extra".to_owned()));
    let ran = call(&b, "mcp_counting_extra", json!({})).await;
    assert_eq!(ran.content, "extra ran", "{ran:?}");
    // A registry's own allow-list still holds after the change.
    assert_eq!(narrow.list_tools(), ["mcp_counting_echo"]);
    assert_eq!(counting.started().len(), 1);
    session.close().await;
}

#[tokio::test]
async fn a_killed_server_is_restarted_once_for_every_registry() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    let (a, b) = (registry_of(&session), registry_of(&session));
    let first = session.process_id().await.unwrap();
    kill(first);
    eventually("the session noticed the death", || async {
        !session.is_connected().await
    })
    .await;

    // Calls from both registries at once find the server dead: one restart serves them all.
    let calls = (0..6).map(|i| {
        let registry = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move {
            call(
                &registry,
                "mcp_counting_echo",
                json!({"message": i.to_string()}),
            )
            .await
        }
    });
    for (i, result) in futures::future::join_all(calls).await.iter().enumerate() {
        assert_eq!(result.content, format!("Echo: {i}"), "{result:?}");
    }
    let started = counting.started();
    assert_eq!(started.len(), 2, "server starts: {started:?}");
    assert_eq!(started[0], first);
    let second = session.process_id().await.unwrap();
    assert_eq!(second, started[1]);
    // Both registries still hold every tool, and go to the new process.
    assert_eq!(a.list_tools(), b.list_tools());
    for registry in [&a, &b] {
        let pid = call(registry, "mcp_counting_pid", json!({})).await;
        assert_eq!(pid.content, second.to_string());
    }
    assert_eq!(counting.started().len(), 2);
    session.close().await;
}

#[tokio::test]
async fn closing_one_registry_leaves_the_others_working() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    let (a, b) = (registry_of(&session), registry_of(&session));
    let dropped = registry_of(&session);
    assert_eq!(session.registry_count(), 3);
    let pid = session.process_id().await.unwrap();

    a.close().await;
    assert!(a.is_empty(), "{:?}", a.list_tools());
    drop(dropped);
    assert_eq!(session.registry_count(), 1);
    assert!(session.is_connected().await);
    let result = call(&b, "mcp_counting_echo", json!({"message": "still here"})).await;
    assert_eq!(result.content, "Echo: still here", "{result:?}");
    assert_eq!(session.process_id().await, Some(pid));

    // A closed agent's registry is not brought back by a later list change.
    call(&b, "mcp_counting_add_tool", json!({"name": "later"})).await;
    eventually("the new tool reached the open registry", || async {
        b.contains("mcp_counting_later")
    })
    .await;
    assert!(a.is_empty(), "{:?}", a.list_tools());

    // An agent closed with `Agent::close` lets go the same way.
    let agent = Agent::builder()
        .model(TestModel::new())
        .capability(session.capability())
        .build()
        .unwrap();
    assert_eq!(session.registry_count(), 2);
    agent.close().await;
    assert!(!agent.tools().contains("mcp_counting_echo"));
    assert_eq!(session.registry_count(), 1);
    assert_eq!(counting.started(), [pid]);
    session.close().await;
}

#[tokio::test]
async fn closing_the_session_ends_the_process_and_takes_the_tools_away() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    let (a, b) = (registry_of(&session), registry_of(&session));
    let echo = a.get_tool("mcp_counting_echo").unwrap();
    let pid = session.process_id().await.unwrap();

    session.clone().close().await;
    assert!(session.is_closed());
    assert!(stopped(pid), "server {pid} still runs");
    assert!(a.is_empty() && b.is_empty());
    assert_eq!(session.registry_count(), 0);

    // A handler kept from before fails cleanly, and nothing restarts the server.
    a.register_tool(echo).unwrap();
    let result = call(&a, "mcp_counting_echo", json!({"message": "x"})).await;
    assert!(result.is_error);
    assert!(
        result.content.starts_with(
            "The connection to the MCP server `counting` was closed by the application"
        ),
        "{}",
        result.content
    );
    let err = session
        .capability()
        .register(&ToolRegistry::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the shared session with MCP server `counting` was closed; connect a new one with `McpSession::connect`"
    );
    assert_eq!(counting.started(), [pid]);
}

#[tokio::test]
async fn dropping_the_session_and_its_registries_stops_the_server() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    let registry = registry_of(&session);
    let pid = session.process_id().await.unwrap();
    drop(session);
    // The registry's tools still hold the session.
    let result = call(&registry, "mcp_counting_echo", json!({"message": "x"})).await;
    assert_eq!(result.content, "Echo: x");
    drop(registry);
    eventually("the server process stopped", || async move { stopped(pid) }).await;
}

#[tokio::test]
async fn an_allow_list_narrows_one_registry_and_a_misspelling_fails_the_build() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    let narrow = ToolRegistry::new();
    session
        .capability()
        .allow_tools(["echo", "pid"])
        .deny_tools(["pid"])
        .register(&narrow)
        .unwrap();
    assert_eq!(narrow.list_tools(), ["mcp_counting_echo"]);

    let err = Agent::builder()
        .model(TestModel::new())
        .capability(session.capability().allow_tools(["ecko"]))
        .build()
        .unwrap_err();
    let source = std::error::Error::source(&err)
        .and_then(|e| e.downcast_ref::<McpError>())
        .expect("the MCP error is the source");
    assert_eq!(
        source.to_string(),
        "MCP server `counting` has no tool named ecko (listed in `allow_tools`); its tools are: echo, pid, add_tool"
    );
    assert_eq!(session.registry_count(), 1);
    session.close().await;
}

#[tokio::test]
async fn a_session_honours_the_servers_own_filter() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let session = McpSession::connect(counting.server.clone().deny_tools(["add_tool"]))
        .await
        .unwrap();
    assert_eq!(session.tool_names(), ["echo", "pid"]);
    let tools = session.tools();
    assert_eq!(tools[0].name, "echo");
    assert_eq!(tools[0].description, "Echoes back the message.");
    assert_eq!(tools[0].input_schema["required"], json!(["message"]));
    assert_eq!(tools[0].permission, harnessx::PermissionLevel::Allow);
    assert_eq!(
        registry_of(&session).list_tools(),
        ["mcp_counting_echo", "mcp_counting_pid"]
    );
    session.close().await;
}

#[tokio::test]
async fn a_failed_restart_is_shared_by_the_calls_that_waited_and_then_backs_off() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("down");
    let Some(counting) = Counting::failing_when(&flag) else {
        return;
    };
    let session = McpSession::connect(counting.server.clone()).await.unwrap();
    let (a, b) = (registry_of(&session), registry_of(&session));
    assert_eq!(counting.attempted(), 1);
    std::fs::write(&flag, "").unwrap();
    kill(session.process_id().await.unwrap());
    eventually("the session noticed the death", || async {
        !session.is_connected().await
    })
    .await;

    // Four calls at once from two registries: one restart attempt, failed for all of them.
    let calls = (0..4).map(|i| {
        let registry = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move {
            call(
                &registry,
                "mcp_counting_echo",
                json!({"message": i.to_string()}),
            )
            .await
        }
    });
    for result in futures::future::join_all(calls).await {
        assert!(result.is_error);
        assert!(
            result.content.starts_with("The MCP server `counting` is not reachable: MCP server `counting` (command `sh`) failed the MCP handshake: "),
            "{}",
            result.content
        );
        assert!(
            result.content.ends_with("the server wrote to stderr: down. The call was not run. Try again later, use another tool, or tell the user the server is down."),
            "{}",
            result.content
        );
    }
    assert_eq!(counting.attempted(), 2);

    // After one failure the next call tries again; after two, calls within the backoff fail
    // at once without starting anything.
    let second = call(&a, "mcp_counting_echo", json!({"message": "x"})).await;
    assert!(second.is_error);
    assert_eq!(counting.attempted(), 3);
    let backed_off = call(&b, "mcp_counting_echo", json!({"message": "x"})).await;
    assert!(
        backed_off.content.contains(
            "the server wrote to stderr: down (2 restarts in a row failed; the next is tried in 1 s). The call was not run."
        ),
        "{}",
        backed_off.content
    );
    assert_eq!(counting.attempted(), 3);

    // Up again: once the backoff has passed, the next call restarts it.
    std::fs::remove_file(&flag).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let back = call(&b, "mcp_counting_echo", json!({"message": "up"})).await;
    assert_eq!(back.content, "Echo: up", "{back:?}");
    assert_eq!(counting.attempted(), 4);
    let again = call(&a, "mcp_counting_echo", json!({"message": "up"})).await;
    assert_eq!(again.content, "Echo: up", "{again:?}");
    assert_eq!(counting.started().len(), 2);
    session.close().await;
}

#[tokio::test]
async fn one_registrys_connection_runs_on_the_same_session_code_and_owns_it() {
    let Some(counting) = Counting::new() else {
        return;
    };
    let registry = ToolRegistry::new();
    let connection = connect_mcp_server(&registry, counting.server.clone())
        .await
        .unwrap();
    assert_eq!(
        connection.tool_names(),
        [
            "mcp_counting_echo",
            "mcp_counting_pid",
            "mcp_counting_add_tool"
        ]
    );
    call(&registry, "mcp_counting_add_tool", json!({"name": "extra"})).await;
    eventually("the new tool reached the registry", || async {
        registry.contains("mcp_counting_extra")
    })
    .await;
    assert_eq!(
        connection.original_name("mcp_counting_extra").as_deref(),
        Some("extra")
    );
    let pid = connection.process_id().await.unwrap();
    registry.close().await;
    assert!(registry.is_empty());
    assert!(stopped(pid), "server {pid} still runs");
}

#[tokio::test]
async fn connecting_a_session_to_a_missing_program_fails() {
    let err = McpSession::connect(harnessx::mcp::McpServer::stdio(
        "nothing",
        "/nonexistent/harnessx-mcp-server",
        Vec::<String>::new(),
    ))
    .await
    .unwrap_err();
    assert!(matches!(err, McpError::Spawn { .. }), "{err}");
    let err = McpSession::connect(harnessx::mcp::McpServer::stdio(" ", "node", ["x"]))
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::EmptyName), "{err}");
}

#[tokio::test]
async fn a_session_over_http_serves_every_registry() {
    use harnessx::mcp_server::McpToolServer;
    use harnessx::{
        PermissionLevel, PermissionManager, ReplayPolicy, ToolDefinition, ToolOutput, handler_fn,
    };

    let served = ToolRegistry::new();
    served
        .register_tool(
            ToolDefinition::new(
                "add",
                "Adds two numbers.",
                json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
                handler_fn(|args, _| async move {
                    let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                    Ok(ToolOutput::text(sum.to_string()))
                }),
            )
            .with_permission(PermissionLevel::Allow)
            .with_replay_policy(ReplayPolicy::Safe),
        )
        .unwrap();
    let http = McpToolServer::new(served, PermissionManager::new(PermissionLevel::Allow))
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let session = McpSession::connect(harnessx::mcp::McpServer::http("remote", http.url()))
        .await
        .unwrap();
    assert_eq!(session.process_id().await, None);
    assert_eq!(session.tool_names(), ["add"]);
    let (a, b) = (registry_of(&session), registry_of(&session));
    for (registry, (x, y)) in [(&a, (2, 3)), (&b, (4, 5))] {
        let result = call(registry, "mcp_remote_add", json!({"a": x, "b": y})).await;
        assert_eq!(result.content, (x + y).to_string(), "{result:?}");
    }
    a.close().await;
    let result = call(&b, "mcp_remote_add", json!({"a": 1, "b": 1})).await;
    assert_eq!(result.content, "2", "{result:?}");
    session.close().await;
    assert!(b.is_empty());
    http.shutdown().await;
}
