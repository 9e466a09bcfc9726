//! dedupe_calls: identical calls within one run return the first result.

use std::sync::atomic::Ordering;

use harnessx::{ToolCall, ToolPolicy, ToolRegistry};

use super::engine_common::counting_tool;

#[tokio::test]
async fn identical_calls_in_one_run_run_once() {
    let (def, runs) = counting_tool("lookup", "value");
    let registry = ToolRegistry::builder().dedupe_calls(true).build();
    registry.register_tool(def).unwrap();
    let run = registry.run(None);
    let first = run.execute(&ToolCall::new("c1", "lookup", r#"{}"#)).await;
    let second = run
        .execute(&ToolCall::new("c2", "lookup", r#"  { }  "#))
        .await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!first.deduplicated);
    assert!(second.deduplicated);
    assert_eq!(
        second.call_id, "c2",
        "the answer is addressed to the second call"
    );
    assert_eq!(second.content, first.content);
}

#[tokio::test]
async fn canonically_equal_arguments_are_identical_and_others_are_not() {
    let registry = ToolRegistry::new();
    registry.inherit_policy(ToolPolicy::new().with_dedupe_calls(true));
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let r = runs.clone();
    registry
        .register_tool(harnessx::ToolDefinition::new(
            "find",
            "Find.",
            serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}),
            harnessx::handler_fn(move |args, _ctx| {
                r.fetch_add(1, Ordering::SeqCst);
                async move { Ok(harnessx::ToolOutput::json(args)) }
            }),
        ))
        .unwrap();
    let run = registry.run(None);
    run.execute(&ToolCall::new("1", "find", r#"{"q": "a", "n": 1}"#))
        .await;
    let again = run
        .execute(&ToolCall::new("2", "find", r#"{"n":1,"q":"a"}"#))
        .await;
    assert!(again.deduplicated);
    let different = run
        .execute(&ToolCall::new("3", "find", r#"{"n":2,"q":"a"}"#))
        .await;
    assert!(!different.deduplicated);
    // A repaired name is the same tool.
    let repaired = run
        .execute(&ToolCall::new("4", "Find", r#"{"q":"a","n":1}"#))
        .await;
    assert!(repaired.deduplicated);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn identical_calls_in_one_batch_run_once() {
    let (def, runs) = counting_tool("lookup", "value");
    let registry = ToolRegistry::builder().dedupe_calls(true).build();
    registry.register_tool(def).unwrap();
    let calls: Vec<_> = (0..5)
        .map(|i| ToolCall::new(format!("c{i}"), "lookup", "{}"))
        .collect();
    let results = registry.run(None).execute_batch(&calls, None).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(results.iter().filter(|r| r.deduplicated).count(), 4);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.call_id, format!("c{i}"));
    }
}

#[tokio::test]
async fn without_dedupe_or_across_runs_calls_run_again() {
    let (def, runs) = counting_tool("lookup", "value");
    let registry = ToolRegistry::new();
    registry.register_tool(def).unwrap();
    let run = registry.run(None);
    run.execute(&ToolCall::new("1", "lookup", "{}")).await;
    run.execute(&ToolCall::new("2", "lookup", "{}")).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let (def, runs) = counting_tool("lookup", "value");
    let registry = ToolRegistry::builder().dedupe_calls(true).build();
    registry.register_tool(def).unwrap();
    registry
        .run(None)
        .execute(&ToolCall::new("1", "lookup", "{}"))
        .await;
    registry
        .run(None)
        .execute(&ToolCall::new("2", "lookup", "{}"))
        .await;
    assert_eq!(runs.load(Ordering::SeqCst), 2, "dedupe memory is per run");
}

/// A timed-out call may or may not have taken effect, so its answer is not replayed: the model
/// was told to check and call again, and the identical call runs again.
#[tokio::test]
async fn a_timed_out_call_is_not_replayed_to_an_identical_call() {
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let r = runs.clone();
    let registry = ToolRegistry::builder().dedupe_calls(true).build();
    registry
        .register_tool_with(
            harnessx::ToolDefinition::new(
                "slow_then_fast",
                "Slow the first time.",
                serde_json::json!({"type": "object"}),
                harnessx::handler_fn(move |_args, _ctx| {
                    let n = r.fetch_add(1, Ordering::SeqCst);
                    async move {
                        if n == 0 {
                            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                        }
                        Ok(harnessx::ToolOutput::text("done"))
                    }
                }),
            ),
            harnessx::ToolOptions::new().timeout_seconds(0.05),
        )
        .unwrap();
    let run = registry.run(None);
    let first = run
        .execute(&ToolCall::new("1", "slow_then_fast", "{}"))
        .await;
    assert_eq!(first.error_kind, Some(harnessx::ToolErrorKind::TimedOut));
    let second = run
        .execute(&ToolCall::new("2", "slow_then_fast", "{}"))
        .await;
    assert_eq!(second.content, "done");
    assert!(!second.deduplicated);
    let third = run
        .execute(&ToolCall::new("3", "slow_then_fast", "{}"))
        .await;
    assert!(third.deduplicated, "a completed answer is replayed");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
