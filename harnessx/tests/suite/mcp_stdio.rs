//! MCP over stdio against the reference server `@modelcontextprotocol/server-everything`.

use harnessx::mcp::{MCP_TOOL_TIMEOUT_SECONDS, McpError, connect_mcp_server};
use harnessx::{PermissionLevel, ReplayPolicy, ToolRegistry};
use serde_json::json;

use super::mcp_servers::{call, connect, eventually, everything, valid_name};

#[tokio::test]
async fn tools_are_listed_prefixed_and_mapped_back() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(server).await;
    let names = conn.tool_names();
    for expected in [
        "mcp_ev_echo",
        "mcp_ev_get-sum",
        "mcp_ev_get-structured-content",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} missing from {names:?}"
        );
    }
    assert!(names.iter().all(|n| valid_name(n)), "{names:?}");
    assert_eq!(registry.list_tools(), names);
    assert_eq!(
        conn.original_name("mcp_ev_get-sum").as_deref(),
        Some("get-sum")
    );
    // taskSupport: "required" tools cannot run without the tasks API: skipped.
    assert!(
        !names.iter().any(|n| n.contains("simulate-research-query")),
        "{names:?}"
    );

    let result = call(&registry, "mcp_ev_get-sum", json!({"a": 2, "b": 3})).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "The sum of 2 and 3 is 5.");
    registry.close().await;
}

#[tokio::test]
async fn read_only_tools_allow_others_ask_and_annotations_are_copied() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, _conn) = connect(server).await;

    let echo = registry.get_tool("mcp_ev_echo").unwrap();
    assert_eq!(echo.permission, Some(PermissionLevel::Allow));
    assert_eq!(echo.replay_policy, ReplayPolicy::Safe);
    assert_eq!(echo.annotations.read_only_hint, Some(true));
    assert_eq!(echo.annotations.destructive_hint, Some(false));
    assert_eq!(echo.annotations.idempotent_hint, Some(true));
    assert_eq!(echo.annotations.open_world_hint, Some(false));
    assert_eq!(echo.annotations.title.as_deref(), Some("Echo Tool"));
    assert_eq!(echo.description, "Echoes back the input string");
    assert_eq!(echo.input_schema["type"], "object");
    assert_eq!(echo.input_schema["required"], json!(["message"]));
    assert_eq!(
        echo.timeout,
        Some(std::time::Duration::from_secs_f64(MCP_TOOL_TIMEOUT_SECONDS))
    );

    let toggle = registry
        .get_tool("mcp_ev_toggle-simulated-logging")
        .unwrap();
    assert_eq!(toggle.permission, Some(PermissionLevel::Ask));
    assert_eq!(toggle.annotations.read_only_hint, Some(false));
    assert!(!toggle.concurrent);
    registry.close().await;
}

#[tokio::test]
async fn results_keep_text_and_structured_content() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, _conn) = connect(server).await;
    let result = call(
        &registry,
        "mcp_ev_get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    let expected = json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82});
    assert_eq!(result.structured, Some(expected.clone()));
    let text: serde_json::Value = serde_json::from_str(&result.content).unwrap();
    assert_eq!(text, expected);
    registry.close().await;
}

#[tokio::test]
async fn results_over_the_cap_are_truncated_and_flagged() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, _conn) = connect(server).await;
    let message = "x".repeat(100_000);
    let result = call(&registry, "mcp_ev_echo", json!({"message": message})).await;
    assert!(
        !result.is_error,
        "{}",
        &result.content[..200.min(result.content.len())]
    );
    assert!(result.truncated);
    assert!(result.content.len() <= harnessx::DEFAULT_MAX_RESULT_BYTES);
    assert!(result.content.starts_with("Echo: xxx"));
    assert!(
        result
            .content
            .contains("[truncated: the result was 100006 bytes")
    );
    registry.close().await;
}

#[tokio::test]
async fn the_child_gets_no_inherited_environment() {
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some() || std::env::var_os("PATH").is_some(),
        "the test needs a variable in its own environment"
    );
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, _conn) = connect(server.env("HARNESSX_PASSED", "yes")).await;
    let result = call(&registry, "mcp_ev_get-env", json!({})).await;
    let env: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&result.content).unwrap();
    assert_eq!(env.get("HARNESSX_PASSED"), Some(&json!("yes")));
    assert!(env.contains_key("PATH"));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key != "PATH" && key != "HOME" {
            assert!(
                !env.contains_key(key.as_ref()),
                "{key} leaked into the server"
            );
        }
    }
    registry.close().await;
}

#[tokio::test]
async fn allow_and_deny_filters_choose_the_tools() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(
        server
            .allow_tools(["echo", "get-sum", "get-env"])
            .deny_tools(["get-env"]),
    )
    .await;
    assert_eq!(conn.tool_names(), ["mcp_ev_echo", "mcp_ev_get-sum"]);
    registry.close().await;

    let Some(server) = everything("ev") else {
        return;
    };
    let registry = ToolRegistry::new();
    let err = connect_mcp_server(&registry, server.allow_tools(["echo", "ecko"]))
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::UnknownTools { .. }));
    let text = err.to_string();
    assert!(
        text.starts_with("MCP server `ev` has no tool named ecko (listed in `allow_tools`); its tools are: echo, "),
        "{text}"
    );
    assert!(registry.is_empty());
}

#[tokio::test]
async fn list_changed_notifications_refresh_the_tools() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(server).await;
    // server-everything announces its conditional tools right after `initialized`.
    eventually("the list_changed notification was handled", || {
        let conn = conn.clone();
        async move { conn.list_changed_count() >= 1 }
    })
    .await;
    assert!(registry.contains("mcp_ev_echo"));
    // A refresh puts back what the server lists, and removes nothing it still has.
    registry.unregister("mcp_ev_echo");
    let names = conn.refresh_tools().await.unwrap();
    assert!(names.contains(&"mcp_ev_echo".to_owned()));
    assert!(registry.contains("mcp_ev_echo"));
    registry.close().await;
}

#[tokio::test]
async fn closing_the_registry_stops_the_server_and_removes_its_tools() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(server).await;
    let pid = conn.process_id().await.expect("a stdio server has a pid");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    registry.close().await;
    assert!(registry.is_empty(), "{:?}", registry.list_tools());
    assert!(!conn.is_connected().await);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} still runs"
    );
}

#[tokio::test]
async fn dropping_the_registry_without_closing_stops_the_server() {
    let Some(server) = everything("ev") else {
        return;
    };
    let (registry, conn) = connect(server.allow_tools(["echo"])).await;
    let pid = conn.process_id().await.expect("a stdio server has a pid");
    drop(conn);
    drop(registry);
    // Gone, or a zombie waiting for the runtime to reap it: either way no longer running.
    eventually("the server process stopped", || async move {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    })
    .await;
}
