//! MCP over streamable HTTP against server-everything started on 127.0.0.1, side by side with
//! the same server over stdio.

use harnessx::mcp::{McpServer, connect_mcp_server};
use harnessx::{ApprovalDecision, PermissionManager, ToolCall, ToolRegistry};
use serde_json::json;

use super::mcp_servers::{HttpEverything, call, everything};

#[tokio::test]
async fn http_and_stdio_servers_with_the_same_tools_never_collide() {
    let Some(http) = HttpEverything::start().await else {
        return;
    };
    let Some(local) = everything("local") else {
        return;
    };
    let registry = ToolRegistry::new();
    let remote = connect_mcp_server(
        &registry,
        McpServer::http("remote", http.url()).header("X-Harnessx-Test", "1"),
    )
    .await
    .unwrap();
    let local = connect_mcp_server(&registry, local).await.unwrap();
    assert!(remote.tool_names().contains(&"mcp_remote_echo".to_owned()));
    assert!(local.tool_names().contains(&"mcp_local_echo".to_owned()));
    assert_eq!(remote.process_id().await, None);

    for name in ["mcp_remote_echo", "mcp_local_echo"] {
        let result = call(&registry, name, json!({"message": "hi"})).await;
        assert_eq!(result.content, "Echo: hi", "{name}: {result:?}");
    }
    // Each name reaches its own server: only the HTTP one was started with PORT set.
    let remote_env = call(&registry, "mcp_remote_get-env", json!({})).await;
    let local_env = call(&registry, "mcp_local_get-env", json!({})).await;
    assert!(
        remote_env.content.contains("\"PORT\""),
        "{}",
        remote_env.content
    );
    assert!(
        !local_env.content.contains("\"PORT\""),
        "{}",
        local_env.content
    );

    let structured = call(
        &registry,
        "mcp_remote_get-structured-content",
        json!({"location": "Los Angeles"}),
    )
    .await;
    assert_eq!(
        structured.structured,
        Some(json!({"temperature": 73, "conditions": "Sunny / Clear", "humidity": 48}))
    );
    registry.close().await;
    http.stop().await;
}

#[tokio::test]
async fn a_tool_that_needs_the_tasks_api_is_removed_when_called() {
    // Over HTTP harnessx cannot see `execution.taskSupport` in the listing (over stdio the tool
    // is skipped at listing time); the server's refusal removes it.
    let Some(http) = HttpEverything::start().await else {
        return;
    };
    let registry = ToolRegistry::new();
    let remote = connect_mcp_server(&registry, McpServer::http("remote", http.url()))
        .await
        .unwrap();
    let name = "mcp_remote_simulate-research-query";
    assert!(registry.contains(name));
    let approve =
        PermissionManager::default().with_approval(|_req| async { ApprovalDecision::AllowOnce });
    let call = ToolCall::json("c1", name, json!({"topic": "rust"}));
    let result = registry.execute(&call, Some(&approve)).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "The tool `mcp_remote_simulate-research-query` of the MCP server `remote` only runs through the MCP tasks API, which harnessx does not support, so it has been removed from your tools. Use another tool or tell the user."
    );
    assert!(!registry.contains(name));
    let names = remote.refresh_tools().await.unwrap();
    assert!(!names.contains(&name.to_owned()), "{names:?}");
    assert!(registry.contains("mcp_remote_echo"));
    registry.close().await;
    http.stop().await;
}

#[tokio::test]
async fn a_stopped_http_server_gives_a_failed_result_and_is_reconnected() {
    let Some(http) = HttpEverything::start().await else {
        return;
    };
    let url = http.url();
    let port = http.port();
    let registry = ToolRegistry::new();
    connect_mcp_server(
        &registry,
        McpServer::http("remote", &url)
            .allow_tools(["echo"])
            .connect_timeout(std::time::Duration::from_secs(2)),
    )
    .await
    .unwrap();
    http.stop().await;
    let result = call(&registry, "mcp_remote_echo", json!({"message": "hi"})).await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result.content.starts_with(
            "The connection to the MCP server `remote` broke while `mcp_remote_echo` was running"
        ) || result
            .content
            .starts_with("The MCP server `remote` is not reachable:"),
        "{}",
        result.content
    );
    // Back on the same port: the next call opens a new session and succeeds.
    let Some(again) = HttpEverything::start_on(port).await else {
        return;
    };
    let result = call(&registry, "mcp_remote_echo", json!({"message": "back"})).await;
    assert_eq!(result.content, "Echo: back", "{result:?}");
    registry.close().await;
    again.stop().await;
}
