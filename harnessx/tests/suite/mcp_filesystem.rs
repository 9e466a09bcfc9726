#![allow(clippy::unwrap_used)]
//! MCP against the reference filesystem server: ASK for tools that change data, ALLOW for
//! read-only ones, and server-side errors as failed results.

use std::sync::{Arc, Mutex};

use harnessx::{
    ApprovalDecision, PERMISSION_DENIED, PermissionLevel, PermissionManager, ToolCall,
    ToolErrorKind,
};
use serde_json::json;

use super::mcp_servers::{connect, filesystem};

fn recording_manager(decision: ApprovalDecision) -> (PermissionManager, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    let pm = PermissionManager::new(PermissionLevel::Allow).with_approval(
        move |req: harnessx::ApprovalRequest| {
            log.lock().unwrap().push(req.tool_name);
            async move { decision }
        },
    );
    (pm, asked)
}

#[tokio::test]
async fn writes_ask_and_reads_are_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let Some(server) = filesystem("fs", &root) else {
        return;
    };
    let (registry, _conn) = connect(server).await;
    assert_eq!(
        registry.get_tool("mcp_fs_write_file").unwrap().permission,
        Some(PermissionLevel::Ask)
    );
    assert_eq!(
        registry
            .get_tool("mcp_fs_read_text_file")
            .unwrap()
            .permission,
        Some(PermissionLevel::Allow)
    );

    let file = root.join("note.txt");
    let write = ToolCall::json(
        "w1",
        "mcp_fs_write_file",
        json!({"path": file.display().to_string(), "content": "hello"}),
    );
    let (deny, asked) = recording_manager(ApprovalDecision::Deny);
    let result = registry.execute(&write, Some(&deny)).await;
    assert_eq!(result.content, PERMISSION_DENIED);
    assert_eq!(*asked.lock().unwrap(), ["mcp_fs_write_file"]);
    assert!(!file.exists());

    let (allow, asked) = recording_manager(ApprovalDecision::AllowOnce);
    let result = registry.execute(&write, Some(&allow)).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello");
    let read = ToolCall::json(
        "r1",
        "mcp_fs_read_text_file",
        json!({"path": file.display().to_string()}),
    );
    let result = registry.execute(&read, Some(&allow)).await;
    assert_eq!(result.content, "hello");
    assert_eq!(result.structured, Some(json!({"content": "hello"})));
    assert_eq!(
        *asked.lock().unwrap(),
        ["mcp_fs_write_file"],
        "the read must not ask"
    );
    registry.close().await;
}

#[tokio::test]
async fn server_errors_are_failed_results() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let Some(server) = filesystem("fs", &root) else {
        return;
    };
    let (registry, _conn) = connect(server).await;
    let missing = root.join("missing.txt");
    let call = ToolCall::json(
        "r1",
        "mcp_fs_read_text_file",
        json!({"path": missing.display().to_string()}),
    );
    let result = registry.execute(&call, None).await;
    assert!(result.is_error);
    assert_eq!(result.error_kind, Some(ToolErrorKind::Failed));
    assert!(result.content.contains("ENOENT"), "{}", result.content);

    let outside = ToolCall::json(
        "r2",
        "mcp_fs_read_text_file",
        json!({"path": "/etc/hostname"}),
    );
    let result = registry.execute(&outside, None).await;
    assert!(result.is_error);
    assert!(
        result.content.contains("Access denied"),
        "{}",
        result.content
    );
    registry.close().await;
}

#[tokio::test]
async fn a_big_file_is_truncated_and_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let big = root.join("big.txt");
    std::fs::write(&big, "line of text\n".repeat(20_000)).unwrap();
    let Some(server) = filesystem("fs", &root) else {
        return;
    };
    let (registry, _conn) = connect(server.allow_tools(["read_text_file"])).await;
    let call = ToolCall::json(
        "r1",
        "mcp_fs_read_text_file",
        json!({"path": big.display().to_string()}),
    );
    let result = registry.execute(&call, None).await;
    assert!(!result.is_error);
    assert!(result.truncated);
    assert!(result.content.len() <= harnessx::DEFAULT_MAX_RESULT_BYTES);
    assert!(
        result
            .content
            .contains("[truncated: the result was 260000 bytes")
    );
    registry.close().await;
}
