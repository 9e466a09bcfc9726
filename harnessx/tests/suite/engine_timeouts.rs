//! Timeouts: the default, the precedence of registry-wide values, and what the model is told.

use std::sync::Arc;
use std::time::Duration;

use harnessx::{
    DEFAULT_TOOL_TIMEOUT_SECONDS, ToolCall, ToolDefinition, ToolErrorKind, ToolOptions, ToolOutput,
    ToolPolicy, ToolRegistry, handler_fn, sync_handler_fn,
};

use super::engine_common::{empty_schema, sleeping_tool};

#[test]
fn the_default_is_25_seconds() {
    assert_eq!(DEFAULT_TOOL_TIMEOUT_SECONDS, 25.0);
    let registry = ToolRegistry::new();
    assert_eq!(registry.policy().default_timeout_seconds, 25.0);
    assert!(!registry.policy().dedupe_calls);
    let def = registry.register_tool(sleeping_tool("s", 0)).unwrap();
    assert_eq!(
        def.timeout, None,
        "an ordinary registration declares no timeout of its own"
    );
    assert_eq!(registry.effective_timeout(&def), Duration::from_secs(25));
}

#[test]
fn registry_constructor_beats_agent_policy_beats_default() {
    let agent_policy = ToolPolicy::new()
        .with_default_timeout_seconds(60)
        .with_dedupe_calls(true);

    let plain = ToolRegistry::new();
    plain.inherit_policy(agent_policy.clone());
    assert_eq!(plain.policy().default_timeout_seconds, 60.0);
    assert!(plain.policy().dedupe_calls);

    let explicit = ToolRegistry::builder()
        .default_timeout_seconds(5.0)
        .dedupe_calls(false)
        .build();
    explicit.inherit_policy(agent_policy);
    assert_eq!(explicit.policy().default_timeout_seconds, 5.0);
    assert!(!explicit.policy().dedupe_calls);
}

#[test]
fn a_tools_own_timeout_is_never_changed_by_policy() {
    let registry = ToolRegistry::new();
    let def = registry
        .register_tool_with(
            sleeping_tool("slow_query", 0),
            ToolOptions::new().timeout_seconds(120.0),
        )
        .unwrap();
    registry.inherit_policy(ToolPolicy::new().with_default_timeout_seconds(60));
    assert_eq!(registry.effective_timeout(&def), Duration::from_secs(120));
    let other = registry.register_tool(sleeping_tool("fast", 0)).unwrap();
    assert_eq!(registry.effective_timeout(&other), Duration::from_secs(60));
}

#[tokio::test]
async fn a_timed_out_call_tells_the_model_to_check_effects() {
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(
            sleeping_tool("stuck", 10_000),
            ToolOptions::new().timeout_seconds(0.05),
        )
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "stuck", r#"{"tag":"x"}"#), None)
        .await;
    assert!(r.is_error);
    assert_eq!(r.error_kind, Some(ToolErrorKind::TimedOut));
    assert_eq!(
        r.content,
        "The tool `stuck` timed out after 50 ms. It may have partly run: check its effects before calling it again."
    );
    assert_eq!(r.attempts, 1);
}

#[tokio::test]
async fn a_direct_run_answers_a_timeout_without_retrying_even_a_safe_tool() {
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(
            sleeping_tool("stuck", 10_000)
                .with_replay_policy(harnessx::ReplayPolicy::Safe)
                .with_retry(harnessx::ToolRetry {
                    max_attempts: 3,
                    ..harnessx::ToolRetry::default()
                }),
            ToolOptions::new().timeout_seconds(0.05),
        )
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "stuck", r#"{"tag":"x"}"#), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::TimedOut));
    assert_eq!(r.attempts, 1, "only a durable run retries a timed-out call");
}

#[tokio::test]
async fn the_registry_default_applies_to_tools_without_their_own() {
    let registry = ToolRegistry::builder().default_timeout_seconds(1.0).build();
    registry
        .register_tool(sleeping_tool("stuck", 10_000))
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "stuck", r#"{"tag":"x"}"#), None)
        .await;
    assert_eq!(
        r.content,
        "The tool `stuck` timed out after 1 s. It may have partly run: check its effects before calling it again."
    );
}

/// A tool that sleeps 30 s and reports, through the returned receiver, when its cancellation
/// token fires. The report comes from a task of its own: the engine aborts the handler's task.
fn cancellation_watcher(name: &str) -> (ToolDefinition, tokio::sync::oneshot::Receiver<()>) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = std::sync::Mutex::new(Some(tx));
    let def = ToolDefinition::new(
        name,
        "Waits for cancellation.",
        empty_schema(),
        handler_fn(move |_args, ctx| {
            let tx = tx.lock().unwrap().take();
            async move {
                let token = ctx.cancellation().clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    if let Some(tx) = tx {
                        let _ = tx.send(());
                    }
                });
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(ToolOutput::text("never"))
            }
        }),
    );
    (def, rx)
}

#[tokio::test]
async fn a_timeout_cancels_the_handlers_token() {
    let (watcher, rx) = cancellation_watcher("watcher");
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(watcher, ToolOptions::new().timeout_seconds(0.05))
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "watcher", "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::TimedOut));
    tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .unwrap()
        .unwrap();
}

/// A synchronous handler that blocks its thread runs on the blocking pool, so the single async
/// worker of a current-thread runtime stays free: here the blocking handler waits for a signal that
/// only another (async) tool can send. Were it run on the worker, the signal could never come.
#[tokio::test(flavor = "current_thread")]
async fn sync_handlers_never_stall_the_async_worker() {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    let tx = std::sync::Mutex::new(tx);
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "blocking",
            "Blocks its thread until signalled.",
            empty_schema(),
            sync_handler_fn(move |_args, _ctx| {
                let got = rx.lock().unwrap().recv_timeout(Duration::from_secs(10));
                Ok(ToolOutput::text(if got.is_ok() {
                    "signalled"
                } else {
                    "stalled"
                }))
            }),
        ))
        .unwrap();
    registry
        .register_tool(ToolDefinition::new(
            "signal",
            "Signals the blocking tool.",
            empty_schema(),
            handler_fn(move |_args, _ctx| {
                let tx = tx.lock().unwrap().clone();
                async move {
                    tokio::task::yield_now().await;
                    tx.send(()).ok();
                    Ok(ToolOutput::text("sent"))
                }
            }),
        ))
        .unwrap();
    let run = registry.run(None);
    let calls = [
        ToolCall::new("a", "blocking", "{}"),
        ToolCall::new("b", "signal", "{}"),
    ];
    let results = run.execute_batch(&calls, None).await;
    assert_eq!(results[0].content, "signalled");
    assert_eq!(results[1].content, "sent");
}

#[tokio::test]
async fn a_timed_out_sync_handler_stops_the_wait() {
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(
            ToolDefinition::new(
                "sleepy",
                "Blocks.",
                empty_schema(),
                sync_handler_fn(|_args, _ctx| {
                    std::thread::sleep(Duration::from_millis(500));
                    Ok(ToolOutput::text("late"))
                }),
            ),
            ToolOptions::new().timeout_seconds(0.02),
        )
        .unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "sleepy", "{}"), None)
        .await;
    assert_eq!(r.error_kind, Some(ToolErrorKind::TimedOut));
}

/// Dropping the `execute` future (the caller's own timeout) stops the handler: its token fires.
#[tokio::test]
async fn dropping_the_call_cancels_the_handler() {
    let (long, rx) = cancellation_watcher("long");
    let registry = ToolRegistry::new();
    registry.register_tool(long).unwrap();
    let call = ToolCall::new("c", "long", "{}");
    let outer =
        tokio::time::timeout(Duration::from_millis(50), registry.execute(&call, None)).await;
    assert!(outer.is_err(), "the caller gave up first");
    tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .unwrap()
        .unwrap();
}

#[test]
fn timeouts_that_are_not_positive_are_refused_at_registration() {
    let registry = ToolRegistry::new();
    for bad in [0.0, -1.0, f64::NAN] {
        let err = registry
            .register_tool_with(
                sleeping_tool("t", 0),
                ToolOptions::new().timeout_seconds(bad),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the timeout of tool `t` must be a positive number of seconds; leave it unset to use the registry's default"
        );
        let err = registry
            .register_tool(sleeping_tool("t", 0).with_timeout_seconds(bad))
            .unwrap_err();
        assert!(matches!(err, harnessx::RegistryError::InvalidTimeout(_)));
    }
    assert!(registry.is_empty());
    // Huge values do not panic: they mean no practical limit.
    let def = registry
        .register_tool_with(
            sleeping_tool("t", 0),
            ToolOptions::new().timeout_seconds(1e300),
        )
        .unwrap();
    assert_eq!(def.timeout, Some(Duration::MAX));
    let def = registry
        .register_tool(sleeping_tool("u", 0).with_timeout_seconds(f64::INFINITY))
        .unwrap();
    assert_eq!(def.timeout, Some(Duration::MAX));
}

#[tokio::test]
async fn a_huge_timeout_runs_the_tool_normally() {
    let registry = ToolRegistry::builder()
        .default_timeout_seconds(1e300)
        .build();
    registry.register_tool(sleeping_tool("t", 1)).unwrap();
    let r = registry
        .execute(&ToolCall::new("c", "t", r#"{"tag":"ok"}"#), None)
        .await;
    assert_eq!(r.content, "ok");
}

/// A tool that, once its token fires, cleans up for 20 ms and then reports that it finished:
/// the grace period a given-up handler gets.
fn cleaning_tool() -> (ToolDefinition, tokio::sync::oneshot::Receiver<()>) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = std::sync::Mutex::new(Some(tx));
    let def = ToolDefinition::new(
        "cleaner",
        "Cleans up after cancellation.",
        empty_schema(),
        handler_fn(move |_args, ctx| {
            let tx = tx.lock().unwrap().take();
            async move {
                ctx.cancellation().cancelled().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                if let Some(tx) = tx {
                    let _ = tx.send(());
                }
                Ok(ToolOutput::text("cleaned"))
            }
        }),
    );
    (def, rx)
}

/// Both ways a handler runs (polled in place: a call alone, any call on a current-thread
/// runtime; on a task of its own: calls of one batch side by side on a multi-thread runtime), a
/// timed-out handler is cancelled and still gets its grace period to clean up; a panic is a
/// crash result.
async fn given_up_handlers_get_their_grace_and_panics_are_contained(side_by_side: bool) {
    let (cleaner, cleaned) = cleaning_tool();
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(cleaner, ToolOptions::new().timeout_seconds(0.02))
        .unwrap();
    registry
        .register_tool(ToolDefinition::new(
            "boom",
            "Panics after a yield.",
            empty_schema(),
            handler_fn(|_args, _ctx| async {
                tokio::task::yield_now().await;
                panic!("late boom")
            }),
        ))
        .unwrap();
    let calls = [
        ToolCall::new("c1", "cleaner", "{}"),
        ToolCall::new("c2", "boom", "{}"),
    ];
    let results = if side_by_side {
        registry.execute_batch(&calls, None).await
    } else {
        vec![
            registry.execute(&calls[0], None).await,
            registry.execute(&calls[1], None).await,
        ]
    };
    assert_eq!(results[0].error_kind, Some(ToolErrorKind::TimedOut));
    tokio::time::timeout(Duration::from_secs(5), cleaned)
        .await
        .expect("the handler finished its clean-up within the grace period")
        .unwrap();
    assert_eq!(results[1].error_kind, Some(ToolErrorKind::Crashed));
    assert!(
        results[1].content.contains("crashed: late boom."),
        "{}",
        results[1].content
    );
}

#[tokio::test(flavor = "current_thread")]
async fn inline_handlers_get_their_grace_and_panics_are_contained() {
    given_up_handlers_get_their_grace_and_panics_are_contained(false).await;
    given_up_handlers_get_their_grace_and_panics_are_contained(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lone_calls_inline_on_a_multi_thread_runtime_get_their_grace_and_panics_are_contained() {
    given_up_handlers_get_their_grace_and_panics_are_contained(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_handlers_get_their_grace_and_panics_are_contained() {
    given_up_handlers_get_their_grace_and_panics_are_contained(true).await;
}

/// The task each call's handler ran in, by call id.
type TasksSeen = Arc<std::sync::Mutex<Vec<(String, tokio::task::Id)>>>;

/// A tool that notes which task its handler runs in.
fn task_recorder() -> (ToolDefinition, TasksSeen) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let def = ToolDefinition::new(
        "where",
        "Notes the task it runs in.",
        empty_schema(),
        handler_fn(move |_args, ctx| {
            let record = Arc::clone(&record);
            async move {
                tokio::task::yield_now().await;
                let task = tokio::task::try_id().expect("handlers run in a task");
                record
                    .lock()
                    .unwrap()
                    .push((ctx.call_id().to_owned(), task));
                Ok(ToolOutput::text("noted"))
            }
        }),
    );
    (def, seen)
}

/// On a multi-thread runtime a call that runs alone — a direct `execute`, a turn of one call —
/// is polled in the caller's task (a task of its own would only add a hop to another thread
/// and back), while the calls of a batch that run side by side get a task each, so they run in
/// parallel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lone_calls_run_in_the_callers_task_and_calls_side_by_side_in_their_own() {
    let (def, seen) = task_recorder();
    let registry = ToolRegistry::new();
    registry.register_tool(def).unwrap();
    // The caller is a task too (a test's body is not), as an agent's run is.
    let caller = tokio::spawn(async move {
        registry
            .execute(&ToolCall::new("direct", "where", "{}"), None)
            .await;
        let run = registry.run(None);
        run.execute_batch(&[ToolCall::new("lone", "where", "{}")], None)
            .await;
        run.execute_batch(
            &[
                ToolCall::new("pair-1", "where", "{}"),
                ToolCall::new("pair-2", "where", "{}"),
            ],
            None,
        )
        .await;
        tokio::task::id()
    })
    .await
    .unwrap();
    let seen = seen.lock().unwrap().clone();
    let task_of = |id: &str| {
        seen.iter()
            .find(|(call, _)| call == id)
            .map(|(_, task)| *task)
            .unwrap_or_else(|| panic!("{id} did not run: {seen:?}"))
    };
    assert_eq!(task_of("direct"), caller);
    assert_eq!(task_of("lone"), caller);
    assert_ne!(task_of("pair-1"), caller);
    assert_ne!(task_of("pair-2"), caller);
    assert_ne!(task_of("pair-1"), task_of("pair-2"));
}

/// A handler task cancelled under a waiting call — what the tokio runtime does when it shuts
/// down — leaves the call without a result: nothing is reported (and a durable run journals
/// nothing) for a call the process stopped in the middle of, so a resumed run calls it again
/// instead of being told it crashed. The calls (two side by side, so each has a task of its
/// own) are awaited on a thread of their own with the runtime entered, so the runtime can shut
/// down while the wait goes on.
#[test]
fn a_call_cut_off_by_its_runtime_shutting_down_reports_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "forever",
            "Never finishes.",
            empty_schema(),
            handler_fn(move |_args, _ctx| {
                let started = started_tx.clone();
                async move {
                    let _ = started.send(());
                    std::future::pending::<()>().await;
                    Ok(ToolOutput::text("never"))
                }
            }),
        ))
        .unwrap();
    let handle = rt.handle().clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _entered = handle.enter();
        let calls = [
            ToolCall::new("c1", "forever", "{}"),
            ToolCall::new("c2", "forever", "{}"),
        ];
        let results = futures::executor::block_on(registry.execute_batch(&calls, None));
        let _ = done_tx.send(results);
    });
    for _ in 0..2 {
        started_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the handlers start");
    }
    rt.shutdown_background();
    // The waiter either waits on or ends without a result (its timer belonged to the runtime
    // that stopped); what it must never do is report one.
    if let Ok(result) = done_rx.recv_timeout(Duration::from_millis(500)) {
        panic!("a result was reported for a call its runtime stopped: {result:?}");
    }
}

/// A call that finished was not given up on: its token stays as it was, on both ways a handler
/// runs (polled in place, or on a task of its own: calls side by side on a multi-thread
/// runtime). Work the handler left behind decides for itself when to stop.
async fn finished_calls_leave_their_token_alone() {
    let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
    let slot = Arc::clone(&kept);
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "quick",
            "Keeps its token and returns.",
            empty_schema(),
            handler_fn(move |_args, ctx| {
                slot.lock().unwrap().push(ctx.cancellation().clone());
                async { Ok(ToolOutput::text("done")) }
            }),
        ))
        .unwrap();
    let result = registry
        .execute(&ToolCall::new("c", "quick", "{}"), None)
        .await;
    assert_eq!(result.content, "done");
    let side_by_side = registry
        .execute_batch(
            &[
                ToolCall::new("c1", "quick", "{}"),
                ToolCall::new("c2", "quick", "{}"),
            ],
            None,
        )
        .await;
    assert!(side_by_side.iter().all(|r| r.content == "done"));
    let tokens = std::mem::take(&mut *kept.lock().unwrap());
    assert_eq!(tokens.len(), 3, "every call ran");
    assert!(
        tokens.iter().all(|t| !t.is_cancelled()),
        "a finished call's token was cancelled"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn finished_inline_calls_leave_their_token_alone() {
    finished_calls_leave_their_token_alone().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn finished_spawned_calls_leave_their_token_alone() {
    finished_calls_leave_their_token_alone().await;
}
