//! ToolRetry: only safe and idempotent tools, on transient errors or retry_if_result.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use harnessx::{
    ReplayPolicy, ToolCall, ToolDefinition, ToolError, ToolErrorKind, ToolOptions, ToolOutput,
    ToolPolicy, ToolRegistry, ToolRetry, handler_fn,
};

use super::engine_common::empty_schema;

fn quick(max_attempts: u32) -> ToolRetry {
    ToolRetry {
        max_attempts,
        initial_backoff: Duration::from_millis(1),
        multiplier: 1.0,
        max_backoff: Duration::from_millis(1),
    }
}

/// A tool named `flaky` whose attempt number `n` (1-based, checked against the context)
/// answers `answer(n)`; the counter says how many attempts ran.
fn counting(
    answer: impl Fn(u32) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
) -> (ToolDefinition, Arc<AtomicU32>) {
    let attempts = Arc::new(AtomicU32::new(0));
    let a = Arc::clone(&attempts);
    let def = ToolDefinition::new(
        "flaky",
        "Answers by attempt.",
        empty_schema(),
        handler_fn(move |_args, ctx| {
            let n = a.fetch_add(1, Ordering::SeqCst) + 1;
            assert_eq!(ctx.attempt(), n);
            std::future::ready(answer(n))
        }),
    );
    (def, attempts)
}

/// A tool that fails transiently `fail_times` times, then succeeds; counts attempts.
fn flaky(fail_times: u32) -> (ToolDefinition, Arc<AtomicU32>) {
    counting(move |n| {
        if n <= fail_times {
            Err(ToolError::transient(format!("upstream busy (attempt {n})")))
        } else {
            Ok(ToolOutput::text(format!("ok on attempt {n}")))
        }
    })
}

async fn call(registry: &ToolRegistry) -> harnessx::ToolResult {
    registry
        .execute(&ToolCall::new("c", "flaky", "{}"), None)
        .await
}

#[tokio::test]
async fn safe_and_idempotent_tools_retry_transient_errors() {
    for policy in [ReplayPolicy::Safe, ReplayPolicy::Idempotent] {
        let (def, attempts) = flaky(2);
        let registry = ToolRegistry::new();
        registry
            .register_tool_with(
                def,
                ToolOptions::new().replay_policy(policy).retry(quick(3)),
            )
            .unwrap();
        let r = call(&registry).await;
        assert_eq!(r.content, "ok on attempt 3", "{policy}");
        assert_eq!(r.attempts, 3);
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
    }
}

#[tokio::test]
async fn a_manual_tool_is_never_rerun() {
    let (def, attempts) = flaky(2);
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(def, ToolOptions::new().retry(quick(5)))
        .unwrap();
    let r = call(&registry).await;
    assert!(r.is_error);
    assert_eq!(r.content, "upstream busy (attempt 1)");
    assert_eq!(r.error_kind, Some(ToolErrorKind::Failed));
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn retries_stop_at_max_attempts() {
    let (def, attempts) = flaky(10);
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(
            def,
            ToolOptions::new()
                .replay_policy(ReplayPolicy::Safe)
                .retry(quick(3)),
        )
        .unwrap();
    let r = call(&registry).await;
    assert_eq!(
        r.content,
        "upstream busy (attempt 3) (failed after 3 attempts)"
    );
    assert_eq!(r.attempts, 3);
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_permanent_error_is_not_retried() {
    let (def, attempts) = counting(|_| Err(ToolError::failed("no such record")));
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(
            def,
            ToolOptions::new()
                .replay_policy(ReplayPolicy::Safe)
                .retry(quick(4)),
        )
        .unwrap();
    assert_eq!(call(&registry).await.content, "no such record");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn retry_if_result_asks_for_another_attempt() {
    let (def, attempts) = counting(|n| {
        Ok(ToolOutput::text(if n < 3 {
            "HTTP 503"
        } else {
            "HTTP 200"
        }))
    });
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(
            def,
            ToolOptions::new()
                .replay_policy(ReplayPolicy::Idempotent)
                .retry(quick(5))
                .retry_if_result(|out| out.content.contains("503")),
        )
        .unwrap();
    let r = call(&registry).await;
    assert_eq!(r.content, "HTTP 200");
    assert_eq!(r.attempts, 3);
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn retry_if_result_does_not_rerun_a_manual_tool() {
    let (def, attempts) = counting(|_| Ok(ToolOutput::text("HTTP 503")));
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(
            def,
            ToolOptions::new()
                .retry(quick(5))
                .retry_if_result(|out| out.content.contains("503")),
        )
        .unwrap();
    assert_eq!(call(&registry).await.content, "HTTP 503");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

/// Precedence: per-tool > registry constructor > agent policy > ToolRetry::default().
#[tokio::test]
async fn retry_precedence() {
    // Agent policy only: 2 attempts.
    let (def, attempts) = flaky(10);
    let registry = ToolRegistry::new();
    registry.inherit_policy(ToolPolicy::new().with_retry(quick(2)));
    registry
        .register_tool_with(def, ToolOptions::new().replay_policy(ReplayPolicy::Safe))
        .unwrap();
    call(&registry).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 2);

    // Registry constructor beats the agent: 4 attempts.
    let (def, attempts) = flaky(10);
    let registry = ToolRegistry::builder().retry(quick(4)).build();
    registry.inherit_policy(ToolPolicy::new().with_retry(quick(2)));
    registry
        .register_tool_with(def, ToolOptions::new().replay_policy(ReplayPolicy::Safe))
        .unwrap();
    call(&registry).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 4);

    // The tool's own beats both: 1 attempt.
    let (def, attempts) = flaky(10);
    let registry = ToolRegistry::builder().retry(quick(4)).build();
    registry
        .register_tool_with(
            def,
            ToolOptions::new()
                .replay_policy(ReplayPolicy::Safe)
                .retry(quick(1)),
        )
        .unwrap();
    call(&registry).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 1);

    // Nothing configured: ToolRetry::default().
    assert_eq!(
        ToolRegistry::new().policy().retry,
        Some(ToolRetry::default())
    );
    assert_eq!(ToolRetry::default().max_attempts, 3);
}

#[test]
fn backoff_grows_and_is_capped() {
    let r = ToolRetry {
        max_attempts: 10,
        initial_backoff: Duration::from_millis(100),
        multiplier: 2.0,
        max_backoff: Duration::from_millis(500),
    };
    assert_eq!(r.backoff_for(1), Duration::from_millis(100));
    assert_eq!(r.backoff_for(3), Duration::from_millis(400));
    assert_eq!(r.backoff_for(9), Duration::from_millis(500));
}
