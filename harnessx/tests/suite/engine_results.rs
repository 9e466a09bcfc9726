//! What comes back: the result cap, handler errors as error results, crashes contained.

use harnessx::{
    DEFAULT_MAX_RESULT_BYTES, ToolCall, ToolDefinition, ToolError, ToolErrorKind, ToolOutput,
    ToolRegistry, handler_fn, sync_handler_fn,
};
use serde_json::json;

use super::engine_common::empty_schema;

fn big_tool(bytes: usize, ch: char) -> ToolDefinition {
    ToolDefinition::new(
        "big",
        "Return a lot of text.",
        empty_schema(),
        handler_fn(move |_args, _ctx| async move {
            Ok(ToolOutput::text(
                ch.to_string().repeat(bytes / ch.len_utf8()),
            ))
        }),
    )
}

#[tokio::test]
async fn results_are_capped_at_64_kb_by_default_and_flagged() {
    assert_eq!(DEFAULT_MAX_RESULT_BYTES, 65_536);
    let registry = ToolRegistry::new();
    registry.register_tool(big_tool(200_000, 'a')).unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "big", "{}"), None)
        .await;
    assert!(r.truncated);
    assert!(!r.is_error);
    assert!(r.content.len() <= 65_536);
    let kept = r.content.find("\n\n[truncated:").unwrap();
    assert_eq!(
        &r.content[kept..],
        format!(
            "\n\n[truncated: the result was 200000 bytes; the first {kept} are shown and {} were cut. Ask for less at a time (an offset, a limit, or a narrower query) to see the rest.]",
            200_000 - kept
        )
    );
}

#[tokio::test]
async fn the_cap_is_configurable_and_cuts_on_a_character_boundary() {
    let registry = ToolRegistry::builder().max_result_bytes(1_000).build();
    registry.register_tool(big_tool(30_000, '€')).unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "big", "{}"), None)
        .await;
    assert!(r.truncated);
    assert!(r.content.len() <= 1_000);
    let body = r.content.split("\n\n[truncated:").next().unwrap();
    assert!(body.chars().all(|c| c == '€'));
    assert_eq!(body.len() % 3, 0);
}

#[tokio::test]
async fn small_results_are_untouched() {
    let registry = ToolRegistry::new();
    registry.register_tool(big_tool(10, 'x')).unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "big", "{}"), None)
        .await;
    assert!(!r.truncated);
    assert_eq!(r.content, "xxxxxxxxxx");
}

#[tokio::test]
async fn handler_errors_become_error_results() {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "fails",
            "Always fails.",
            empty_schema(),
            handler_fn(|_args, _ctx| async {
                Err(ToolError::failed(
                    "the record `42` does not exist; list records first",
                ))
            }),
        ))
        .unwrap();
    registry
        .register_tool(ToolDefinition::new(
            "reports",
            "Reports failure in its output.",
            empty_schema(),
            handler_fn(|_args, _ctx| async { Ok(ToolOutput::error("disk full")) }),
        ))
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "fails", "{}"), None)
        .await;
    assert!(r.is_error);
    assert_eq!(r.error_kind, Some(ToolErrorKind::Failed));
    assert_eq!(
        r.content,
        "the record `42` does not exist; list records first"
    );
    let r = registry
        .execute(&ToolCall::new("c", "reports", "{}"), None)
        .await;
    assert!(r.is_error);
    assert_eq!(r.content, "disk full");
}

#[tokio::test]
async fn a_panicking_handler_is_contained() {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "boom",
            "Panics.",
            empty_schema(),
            handler_fn(|_args, _ctx| async { panic!("index out of bounds") }),
        ))
        .unwrap();
    registry
        .register_tool(ToolDefinition::new(
            "sync_boom",
            "Panics on the blocking pool.",
            empty_schema(),
            sync_handler_fn(|_args, _ctx| panic!("sync kaboom")),
        ))
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "boom", "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::Crashed));
    assert_eq!(
        r.content,
        "The tool `boom` crashed: index out of bounds. This is a fault in the tool, not in your call; it may have partly run. Try another approach or report it to the user."
    );
    let r = registry
        .execute(&ToolCall::new("c", "sync_boom", "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::Crashed));
    assert_eq!(
        r.content,
        "The tool `sync_boom` crashed: sync kaboom. This is a fault in the tool, not in your call; it may have partly run. Try another approach or report it to the user."
    );
}

#[tokio::test]
async fn structured_output_is_kept() {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "stats",
            "Stats.",
            empty_schema(),
            handler_fn(|_args, _ctx| async { Ok(ToolOutput::json(json!({"rows": 3}))) }),
        ))
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "stats", "{}"), None)
        .await;
    assert_eq!(r.content, r#"{"rows":3}"#);
    assert_eq!(r.structured, Some(json!({"rows": 3})));
    // Results serialise for logs and replay.
    let text = serde_json::to_string(&r).unwrap();
    let back: harnessx::ToolResult = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
}

#[tokio::test]
async fn shared_state_reaches_handlers() {
    struct Db(&'static str);
    let registry = ToolRegistry::new();
    registry.insert_state(Db("postgres://test"));
    registry
        .register_tool(ToolDefinition::new(
            "dsn",
            "Show the DSN.",
            empty_schema(),
            handler_fn(|_args, ctx| async move {
                let db: harnessx::State<Db> = harnessx::FromToolContext::from_tool_context(&ctx)?;
                Ok(ToolOutput::text(db.0.0))
            }),
        ))
        .unwrap();
    registry
        .register_tool(ToolDefinition::new(
            "missing",
            "Needs state nobody registered.",
            empty_schema(),
            handler_fn(|_args, ctx| async move {
                let n: harnessx::State<u64> = harnessx::FromToolContext::from_tool_context(&ctx)?;
                Ok(ToolOutput::text(n.to_string()))
            }),
        ))
        .unwrap();
    assert_eq!(
        registry
            .execute(&ToolCall::new("c", "dsn", "{}"), None)
            .await
            .content,
        "postgres://test"
    );
    let r = registry
        .execute(&ToolCall::new("c", "missing", "{}"), None)
        .await;
    assert_eq!(
        r.content,
        "the tool `missing` needs shared state of type `u64`, but none was registered; the application must call `registry.insert_state(..)` before running it"
    );
}

/// Work a handler does before it returns its future runs inside the engine's task too: a panic
/// there is a crash result, not a crashed run.
#[tokio::test]
async fn a_panic_before_the_future_is_contained() {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "eager",
            "Panics while building its future.",
            empty_schema(),
            handler_fn(
                |_args, _ctx| -> std::future::Ready<Result<ToolOutput, ToolError>> {
                    panic!("eager panic")
                },
            ),
        ))
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "eager", "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::Crashed));
    assert!(r.content.contains("eager panic"), "{}", r.content);
}

#[tokio::test]
async fn invalid_argument_errors_from_a_handler_keep_their_kind() {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "picky",
            "Refuses its input.",
            empty_schema(),
            handler_fn(|_args, _ctx| async {
                Err(ToolError::invalid_arguments(
                    "`when` must be a date like 2026-11-30",
                ))
            }),
        ))
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "picky", "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(r.content, "`when` must be a date like 2026-11-30");
}
