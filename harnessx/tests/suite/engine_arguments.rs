//! Malformed and invalid arguments never run the tool; the model gets an error it can fix.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx::{ToolCall, ToolDefinition, ToolErrorKind, ToolOutput, ToolRegistry, handler_fn};
use serde_json::json;

fn nested_tool() -> (ToolRegistry, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "save",
            "Save a file.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "items": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
                        "required": ["name"],
                        "additionalProperties": false
                    }}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            handler_fn(move |_args, _ctx| {
                r.fetch_add(1, Ordering::SeqCst);
                async { Ok(ToolOutput::text("saved")) }
            }),
        ))
        .unwrap();
    (registry, runs)
}

async fn run(registry: &ToolRegistry, args: &str) -> harnessx::ToolResult {
    registry
        .execute(&ToolCall::new("c", "save", args), None)
        .await
}

#[tokio::test]
async fn arguments_cut_off_mid_stream_never_run() {
    let (registry, runs) = nested_tool();
    let r = run(
        &registry,
        r#"{"path": "notes.md", "items": [{"name": "first line of a fi"#,
    )
    .await;
    assert!(r.is_error);
    assert_eq!(r.error_kind, Some(ToolErrorKind::MalformedArguments));
    assert!(
        r.content
            .starts_with("The arguments for `save` were cut off before the JSON ended ("),
        "{}",
        r.content
    );
    assert!(
        r.content
            .ends_with("The tool did not run. Send the call again with the complete JSON object.")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn garbled_arguments_never_run() {
    let (registry, runs) = nested_tool();
    let r = run(&registry, r#"{"path": "a" "items": []}"#).await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::MalformedArguments));
    assert!(
        r.content
            .starts_with("The arguments for `save` are not valid JSON ("),
        "{}",
        r.content
    );
    assert!(
        r.content
            .ends_with("Send the call again with a valid JSON object.")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn arguments_that_are_not_an_object_never_run() {
    let (registry, runs) = nested_tool();
    for (args, what) in [
        ("[1,2]", "an array"),
        ("\"path\"", "a string"),
        ("42", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ] {
        let r = run(&registry, args).await;
        assert_eq!(
            r.content,
            format!(
                "The arguments for `save` must be a JSON object, but they are {what}. The tool did not run. Send the call again with a JSON object."
            )
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn schema_errors_name_the_field_on_one_line() {
    let (registry, runs) = nested_tool();
    let r = run(&registry, r#"{"path": 7}"#).await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(
        r.content,
        "Invalid arguments for `save`: field `path`: 7 is not of type \"string\". Fix it and call `save` again."
    );

    let r = run(
        &registry,
        r#"{"path": "a", "items": [{"name": "x"}, {"name": "y", "count": "3"}]}"#,
    )
    .await;
    assert_eq!(
        r.content,
        "Invalid arguments for `save`: field `items[1].count`: \"3\" is not of type \"integer\". Fix it and call `save` again."
    );

    let r = run(&registry, r#"{"items": []}"#).await;
    assert_eq!(
        r.content,
        "Invalid arguments for `save`: the arguments: \"path\" is a required property. Fix it and call `save` again."
    );

    let r = run(&registry, r#"{"path": "a", "colour": "red"}"#).await;
    assert!(
        r.content.contains("colour"),
        "a misspelled argument is named: {}",
        r.content
    );
    assert!(!r.content.contains('\n'));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn several_schema_errors_are_counted() {
    let (registry, _) = nested_tool();
    let r = run(&registry, r#"{"path": 1, "items": 2}"#).await;
    assert!(
        r.content.contains("(1 more problem after this one)"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn empty_arguments_count_as_an_empty_object_when_nothing_is_required() {
    let (def, runs) = super::engine_common::counting_tool("ping", "pong");
    let registry = super::engine_common::registry_with([def]);
    for args in ["", "  ", "{}"] {
        let r = registry
            .execute(&ToolCall::new("c", "ping", args), None)
            .await;
        assert_eq!(r.content, "pong", "{args:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);

    let (registry, runs) = nested_tool();
    let r = run(&registry, "").await;
    assert_eq!(
        r.content,
        "The call to `save` had no arguments, but it needs a JSON object with its required fields: `path`. The tool did not run. Send the call again with the arguments."
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn valid_arguments_run() {
    let (registry, runs) = nested_tool();
    let r = run(
        &registry,
        r#"{"path": "a", "items": [{"name": "x", "count": 2}]}"#,
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
