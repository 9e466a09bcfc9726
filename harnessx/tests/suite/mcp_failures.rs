//! MCP servers that fail to start, never answer, die mid-run or cannot come back: clear errors
//! and failed tool results, never a panic or a hang.

use std::time::Duration;

use harnessx::mcp::{McpError, McpServer, connect_mcp_server};
use harnessx::{ToolErrorKind, ToolRegistry};
use serde_json::json;

use super::mcp_servers::{
    call, connect, everything, kill, node, reference_server, until_disconnected,
};

/// Guards a test against hanging: the code under test must finish well within this.
const GUARD: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_missing_program_fails_to_start() {
    let registry = ToolRegistry::new();
    let err = connect_mcp_server(
        &registry,
        McpServer::stdio("ghost", "/nonexistent/mcp-server", ["--x"]),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, McpError::Spawn { .. }));
    assert_eq!(
        err.to_string(),
        "could not start MCP server `ghost` with `/nonexistent/mcp-server`; check that the program exists and is on PATH"
    );
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_server_that_exits_at_start_reports_its_stderr() {
    if node().is_none() {
        return;
    }
    let registry = ToolRegistry::new();
    let server = McpServer::stdio(
        "broken",
        "node",
        [
            "-e",
            "console.error('fatal: MCP_TOKEN is not set'); process.exit(3)",
        ],
    );
    let err = connect_mcp_server(&registry, server).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("MCP server `broken` (command `node`) failed the MCP handshake: "),
        "{text}"
    );
    assert!(
        text.ends_with("the server wrote to stderr: fatal: MCP_TOKEN is not set"),
        "{text}"
    );
}

#[tokio::test]
async fn a_stdio_server_that_never_answers_hits_the_connect_deadline() {
    let registry = ToolRegistry::new();
    let server =
        McpServer::stdio("mute", "sleep", ["1000"]).connect_timeout(Duration::from_millis(300));
    let err = tokio::time::timeout(GUARD, connect_mcp_server(&registry, server))
        .await
        .expect("connecting must not hang")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server `mute` (command `sleep`) did not answer within the connect deadline of 0.3 s; check that it is running and speaks MCP, or raise `connect_timeout`"
    );
    assert!(registry.is_empty());
}

#[tokio::test]
async fn an_http_server_that_never_answers_hits_the_connect_deadline() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts connections and never replies.
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let registry = ToolRegistry::new();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let server = McpServer::http("silent", &url).connect_timeout(Duration::from_millis(300));
    let err = tokio::time::timeout(GUARD, connect_mcp_server(&registry, server))
        .await
        .expect("connecting must not hang")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "MCP server `silent` (URL {url}) did not answer within the connect deadline of 0.3 s; check that it is running and speaks MCP, or raise `connect_timeout`"
        )
    );
    hold.abort();
}

#[tokio::test]
async fn bad_urls_and_names_are_rejected() {
    let registry = ToolRegistry::new();
    let err = connect_mcp_server(&registry, McpServer::http("api", "not a url"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the URL `not a url` of MCP server `api` is not valid (relative URL without a base); use a full URL such as `http://127.0.0.1:3001/mcp`"
    );
    let err = connect_mcp_server(&registry, McpServer::stdio(" ", "node", ["x"]))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the MCP server name is empty; give every server a short name such as `files`"
    );
    let err = connect_mcp_server(
        &registry,
        McpServer::http("api", "http://127.0.0.1:9/mcp").header("bad header", "x"),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "the header `bad header` of MCP server `api` is not a valid HTTP header ("
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_killed_mid_call_fails_that_call_and_the_next_call_reconnects() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(server).await;
    let pid = conn.process_id().await.unwrap();

    let slow = {
        let registry = registry.clone();
        tokio::spawn(async move {
            call(
                &registry,
                "mcp_ev_trigger-long-running-operation",
                json!({"duration": 10, "steps": 10}),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    kill(pid);
    let result = tokio::time::timeout(GUARD, slow)
        .await
        .expect("the call must not hang")
        .unwrap();
    assert!(result.is_error);
    assert!(
        result.content.starts_with(
            "The connection to the MCP server `ev` broke while `mcp_ev_trigger-long-running-operation` was running ("
        ),
        "{}",
        result.content
    );
    assert!(result.content.ends_with(
        "The call may have partly run: check its effects before calling it again. The server will be reconnected on the next call."
    ));

    let result = call(&registry, "mcp_ev_echo", json!({"message": "back"})).await;
    assert_eq!(result.content, "Echo: back", "{result:?}");
    let new_pid = conn.process_id().await.unwrap();
    assert_ne!(new_pid, pid);
    registry.close().await;
}

#[tokio::test]
async fn a_server_that_died_between_calls_is_restarted_by_the_next_call() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(server.allow_tools(["echo"])).await;
    let pid = conn.process_id().await.unwrap();
    kill(pid);
    until_disconnected(&conn).await;
    let result = call(&registry, "mcp_ev_echo", json!({"message": "again"})).await;
    assert_eq!(result.content, "Echo: again", "{result:?}");
    assert_ne!(conn.process_id().await.unwrap(), pid);
    registry.close().await;
}

#[tokio::test]
async fn a_server_that_cannot_restart_gives_a_failed_result() {
    let Some(script) = reference_server("server-everything") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("down");
    // Starts server-everything unless the flag file exists.
    let shell = format!(
        "if [ -e '{}' ]; then echo 'maintenance' >&2; exit 1; fi; exec node '{}' stdio",
        flag.display(),
        script.display()
    );
    let server = McpServer::stdio("ev", "sh", ["-c".to_owned(), shell]).allow_tools(["echo"]);
    let (registry, conn) = connect(server).await;
    std::fs::write(&flag, "").unwrap();
    kill(conn.process_id().await.unwrap());
    until_disconnected(&conn).await;
    let result = call(&registry, "mcp_ev_echo", json!({"message": "x"})).await;
    assert!(result.is_error);
    assert_eq!(result.error_kind, Some(ToolErrorKind::Failed));
    assert!(
        result.content.starts_with("The MCP server `ev` is not reachable: MCP server `ev` (command `sh`) failed the MCP handshake: "),
        "{}",
        result.content
    );
    assert!(result.content.ends_with(
        "the server wrote to stderr: maintenance. The call was not run. Try again later, use another tool, or tell the user the server is down."
    ), "{}", result.content);

    std::fs::remove_file(&flag).unwrap();
    let result = call(&registry, "mcp_ev_echo", json!({"message": "up"})).await;
    assert_eq!(result.content, "Echo: up", "{result:?}");
    registry.close().await;
}

#[tokio::test]
async fn calls_past_the_tool_time_limit_time_out() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, _conn) = connect(
        server
            .allow_tools(["trigger-long-running-operation"])
            .call_timeout(Duration::from_millis(300)),
    )
    .await;
    let result = call(
        &registry,
        "mcp_ev_trigger-long-running-operation",
        json!({"duration": 5, "steps": 5}),
    )
    .await;
    assert!(result.is_error);
    assert_eq!(
        result.error_kind,
        Some(ToolErrorKind::TimedOut),
        "{result:?}"
    );
    assert!(
        result.content.starts_with(
            "The tool `mcp_ev_trigger-long-running-operation` timed out after 300 ms."
        )
    );
    // The connection survives a timed-out call.
    registry.close().await;
}

/// A minimal stdio MCP server (node) whose `tools/call` answers with a JSON-RPC error, as some
/// servers do for bad arguments; the reference servers answer with `isError` results instead.
const ERRORING_SERVER: &str = r#"
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') {
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'erroring', version: '1.0.0' } } });
  } else if (m.method === 'tools/list' && process.env.FAIL_LIST) {
    send({ jsonrpc: '2.0', id: m.id, error: { code: -32603, message: 'catalog unavailable' } });
  } else if (m.method === 'tools/list') {
    send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'lookup',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } } } }] } });
  } else if (m.method === 'tools/call') {
    send({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: 'unknown order id' } });
  } else if (m.id !== undefined) {
    send({ jsonrpc: '2.0', id: m.id, result: {} });
  }
});
"#;

#[tokio::test]
async fn a_json_rpc_error_from_the_server_is_a_failed_result() {
    if node().is_none() {
        return;
    }
    let (registry, _conn) =
        connect(McpServer::stdio("orders", "node", ["-e", ERRORING_SERVER])).await;
    // No annotations: MCP defaults, so the tool is not read-only and asks.
    assert_eq!(
        registry.get_tool("mcp_orders_lookup").unwrap().permission,
        Some(harnessx::PermissionLevel::Ask)
    );
    let approve = harnessx::PermissionManager::default()
        .with_approval(|_req| async { harnessx::ApprovalDecision::AllowOnce });
    let call = harnessx::ToolCall::json("c1", "mcp_orders_lookup", json!({"id": "x"}));
    let result = registry.execute(&call, Some(&approve)).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "The MCP server `orders` refused the call to `mcp_orders_lookup`: unknown order id (error -32602). Check the arguments against the tool's description, then try again or use another tool."
    );
    registry.close().await;
}

#[tokio::test]
async fn handlers_called_directly_enforce_their_own_limits_and_report_a_closed_connection() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(
        server
            .allow_tools(["trigger-long-running-operation", "echo"])
            .call_timeout(Duration::from_millis(300)),
    )
    .await;
    let slow = registry
        .get_tool("mcp_ev_trigger-long-running-operation")
        .unwrap();
    let ctx = harnessx::ToolContext::new("c1", "mcp_ev_trigger-long-running-operation");
    let err = slow
        .handler
        .call(json!({"duration": 5, "steps": 5}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "The MCP server `ev` did not answer `mcp_ev_trigger-long-running-operation` within 0.3 s. The call may have partly run: check its effects before calling it again."
    );
    let err = slow
        .handler
        .call(json!([1, 2]), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "The arguments of `mcp_ev_trigger-long-running-operation` must be a JSON object, not [1,2]. Call it again with an object."
    );

    let echo = registry.get_tool("mcp_ev_echo").unwrap();
    conn.close().await;
    assert!(registry.is_empty());
    let err = echo
        .handler
        .call(
            json!({"message": "x"}),
            harnessx::ToolContext::new("c2", "mcp_ev_echo"),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "The connection to the MCP server `ev` was closed by the application, so this tool is no longer available. Use another tool or tell the user."
    );
}

/// A call limit too long to represent is no limit, called through the engine or directly (it
/// once overflowed when the direct call's grace was added to it).
#[tokio::test]
async fn a_call_limit_of_duration_max_means_no_limit() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(server.allow_tools(["echo"]).call_timeout(Duration::MAX)).await;
    let result = call(&registry, "mcp_ev_echo", json!({"message": "far"})).await;
    assert_eq!(result.content, "Echo: far", "{result:?}");
    let direct = registry.get_tool("mcp_ev_echo").unwrap().handler.call(
        json!({"message": "near"}),
        harnessx::ToolContext::new("c2", "mcp_ev_echo"),
    );
    let output = direct.await.expect("a direct call with no practical limit");
    assert!(!output.is_error);
    conn.close().await;
}

#[tokio::test]
async fn a_server_that_cannot_list_its_tools_fails_to_connect() {
    if node().is_none() {
        return;
    }
    let registry = ToolRegistry::new();
    let server = McpServer::stdio("orders", "node", ["-e", ERRORING_SERVER]).env("FAIL_LIST", "1");
    let err = connect_mcp_server(&registry, server).await.unwrap_err();
    assert!(matches!(err, McpError::ListTools { .. }));
    assert_eq!(
        err.to_string(),
        "MCP server `orders` could not list its tools: Mcp error: -32603: catalog unavailable"
    );
    assert!(registry.is_empty());
}
