//! Hostile input sizes: oversized names and argument texts are refused before any work, and
//! every error result, quoting the model's input or not, is cut to the result cap.

use std::sync::atomic::Ordering;

use harnessx::{
    MAX_ARGUMENT_BYTES, MAX_TOOL_NAME_BYTES, PERMISSION_DENIED, PermissionLevel, ToolCall,
    ToolDefinition, ToolErrorKind, ToolOptions, ToolOutput, ToolRegistry, handler_fn,
};
use serde_json::json;

use super::engine_common::{counting_tool, registry_with, sleeping_tool};

#[tokio::test]
async fn a_name_over_the_limit_is_refused_before_lookup_and_repair() {
    assert_eq!(MAX_TOOL_NAME_BYTES, 256);
    let (search, runs) = counting_tool("search_web", "searched");
    let registry = registry_with([search]);
    // Prefixes that repair would strip, making it `search_web`, if the name were looked at.
    let name = format!("{}search_web", "tools.".repeat(42));
    assert_eq!(name.len(), 262);
    let r = registry
        .execute(&ToolCall::new("c", name.as_str(), "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::UnknownTool));
    assert_eq!(
        r.content,
        format!(
            "The tool name `{}… (262 bytes)` is 262 bytes long, over the limit of 256 bytes, so \
             it was not looked up and the call was not run. Call again with the exact name of \
             one of the available tools: search_web.",
            &name[..200]
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // A name at the limit is still repaired.
    let name = format!("{}search_web", "tools.".repeat(41));
    assert_eq!(name.len(), MAX_TOOL_NAME_BYTES);
    let r = registry
        .execute(&ToolCall::new("c", name.as_str(), "{}"), None)
        .await;
    assert_eq!(r.content, "searched");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_ten_megabyte_name_comes_back_short_in_content_and_name() {
    let (search, _) = counting_tool("search_web", "searched");
    let registry = registry_with([search]);
    let name = "x".repeat(10 * 1024 * 1024);
    let r = registry
        .execute(&ToolCall::new("c", name.as_str(), "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::UnknownTool));
    assert_eq!(r.name, format!("{}… (10485760 bytes)", "x".repeat(200)));
    assert!(r.content.len() < 600, "{}", r.content.len());
    assert!(
        r.content
            .contains("is 10485760 bytes long, over the limit of 256 bytes")
    );
}

#[tokio::test]
async fn argument_text_over_the_limit_is_refused_before_parsing() {
    assert_eq!(MAX_ARGUMENT_BYTES, 4 * 1024 * 1024);
    let registry = registry_with([sleeping_tool("echo", 0)]);
    // Not even JSON: it is refused for its size, not parsed.
    let text = "x".repeat(MAX_ARGUMENT_BYTES + 1);
    let r = registry
        .execute(&ToolCall::new("c", "echo", text), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::MalformedArguments));
    assert_eq!(
        r.content,
        "The arguments for `echo` are 4194305 bytes long, over the limit of 4194304 bytes (4 MiB), \
         so they were not read and the tool did not run. Split the work into several smaller calls."
    );

    // Valid arguments of exactly the limit run.
    let frame = r#"{"tag":""}"#.len();
    let tag = "t".repeat(MAX_ARGUMENT_BYTES - frame);
    let text = format!(r#"{{"tag":"{tag}"}}"#);
    assert_eq!(text.len(), MAX_ARGUMENT_BYTES);
    let r = registry
        .execute(&ToolCall::new("c", "echo", text), None)
        .await;
    assert!(!r.is_error, "{}", &r.content[..200]);
    assert!(r.truncated, "the 4 MiB echo is capped like any result");
}

/// A registry with `max_result_bytes` and many tools, so the tool list alone passes the cap.
fn many_tools(cap: usize) -> ToolRegistry {
    let registry = ToolRegistry::builder().max_result_bytes(cap).build();
    for i in 0..100 {
        registry
            .register_tool(sleeping_tool(&format!("tool_number_{i:03}"), 0))
            .unwrap();
    }
    registry
}

#[tokio::test]
async fn an_unknown_name_error_is_capped() {
    let registry = many_tools(500);
    let r = registry
        .execute(&ToolCall::new("c", "nothing_like_it", "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::UnknownTool));
    assert!(r.content.len() <= 500, "{}", r.content.len());
    assert!(r.truncated);
    assert!(r.content.starts_with("Unknown tool `nothing_like_it`."));
}

#[tokio::test]
async fn an_oversized_name_error_is_capped() {
    let registry = many_tools(500);
    let r = registry
        .execute(&ToolCall::new("c", "n".repeat(300), "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::UnknownTool));
    assert!(r.content.len() <= 500 && r.truncated);
}

#[tokio::test]
async fn malformed_and_oversized_argument_errors_are_capped() {
    let registry = many_tools(80);
    for text in ["{broken".to_owned(), " ".repeat(MAX_ARGUMENT_BYTES + 1)] {
        let r = registry
            .execute(&ToolCall::new("c", "tool_number_000", text), None)
            .await;
        assert_eq!(r.error_kind, Some(ToolErrorKind::MalformedArguments));
        assert!(r.content.len() <= 80 && r.truncated, "{}", r.content);
    }
}

#[tokio::test]
async fn a_schema_error_is_capped() {
    let registry = many_tools(60);
    let r = registry
        .execute(&ToolCall::json("c", "tool_number_000", json!({})), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert!(r.content.len() <= 60 && r.truncated, "{}", r.content);
}

#[tokio::test]
async fn a_permission_denial_is_capped() {
    let registry = ToolRegistry::builder().max_result_bytes(10).build();
    registry
        .register_tool_with(
            sleeping_tool("locked", 0),
            ToolOptions::new().permission(PermissionLevel::Deny),
        )
        .unwrap();
    let r = registry
        .execute(&ToolCall::json("c", "locked", json!({"tag": "x"})), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(r.content, &PERMISSION_DENIED[..10]);
    assert!(r.truncated);
}

fn labelled() -> ToolRegistry {
    registry_with([ToolDefinition::new(
        "label",
        "Label things.",
        json!({
            "type": "object",
            "properties": {
                "label": {"type": "string", "maxLength": 40},
                "counts": {"type": "object", "additionalProperties": {"type": "integer"}}
            }
        }),
        handler_fn(|_, _| async { Ok(ToolOutput::text("labelled")) }),
    )])
}

#[tokio::test]
async fn a_schema_error_quotes_a_megabyte_value_shortened() {
    let registry = labelled();
    let value = "a".repeat(1_000_000);
    let r = registry
        .execute(&ToolCall::json("c", "label", json!({"label": value})), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(
        r.content,
        format!(
            "Invalid arguments for `label`: field `label`: \"{}… (1000002 bytes) is longer than 40 \
             characters. Fix it and call `label` again.",
            "a".repeat(199)
        )
    );
}

#[tokio::test]
async fn a_schema_error_quotes_a_megabyte_key_shortened() {
    let registry = labelled();
    let key = "k".repeat(1_000_000);
    let r = registry
        .execute(
            &ToolCall::json("c", "label", json!({"counts": {key: "many"}})),
            None,
        )
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(
        r.content,
        format!(
            "Invalid arguments for `label`: field `counts.{}… (1000007 bytes)`: \"many\" is not \
             of type \"integer\". Fix it and call `label` again.",
            "k".repeat(193)
        )
    );
}
