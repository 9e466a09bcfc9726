//! Serial lanes outside a batch: direct `execute` calls, concurrent runs and nested serial calls
//! all take turns, and a serial tool that runs serial tools itself never waits for its own turn.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harnessx::{ToolCall, ToolDefinition, ToolOutput, ToolRegistry, handler_fn};
use serde_json::json;

use super::agent_support::serial_probe;

/// A registry with the serial `probe`, and the probe's (active, peak) counters.
fn probe_registry() -> (ToolRegistry, Arc<AtomicUsize>) {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    registry
        .register_tool(serial_probe("probe", active, Arc::clone(&peak)))
        .unwrap();
    (registry, peak)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_executes_of_a_serial_tool_take_turns() {
    let (registry, peak) = probe_registry();
    let calls: Vec<_> = (0..12)
        .map(|i| ToolCall::json(format!("c{i}"), "probe", json!({})))
        .collect();
    let results = futures::future::join_all(calls.iter().map(|c| registry.execute(c, None))).await;
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    assert_eq!(peak.load(Ordering::SeqCst), 1, "serial calls overlapped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_of_one_registry_take_turns_on_its_lane() {
    let (registry, peak) = probe_registry();
    let runs: Vec<_> = (0..4).map(|_| registry.run(None)).collect();
    let batch = [
        ToolCall::json("a", "probe", json!({})),
        ToolCall::json("b", "probe", json!({})),
    ];
    let results =
        futures::future::join_all(runs.iter().map(|run| run.execute_batch(&batch, None))).await;
    assert!(results.iter().flatten().all(|r| !r.is_error));
    assert_eq!(peak.load(Ordering::SeqCst), 1, "serial calls overlapped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serial_tool_running_serial_tools_itself_does_not_deadlock_and_they_take_turns() {
    let (registry, peak) = probe_registry();
    // `outer` holds the lane while it runs `probe` three times at once through the same registry.
    let inner = registry.downgrade();
    registry
        .register_tool(
            ToolDefinition::new(
                "outer",
                "Probe three times.",
                json!({"type": "object"}),
                handler_fn(move |_, _| {
                    let registry = inner.upgrade();
                    async move {
                        let registry = registry.expect("the registry outlives its calls");
                        let calls: Vec<_> = (0..3)
                            .map(|i| ToolCall::json(format!("n{i}"), "probe", json!({})))
                            .collect();
                        let results = futures::future::join_all(
                            calls.iter().map(|c| registry.execute(c, None)),
                        )
                        .await;
                        let ok = results.iter().filter(|r| !r.is_error).count();
                        Ok(ToolOutput::text(format!("{ok} probes")))
                    }
                }),
            )
            .with_concurrent(false),
        )
        .unwrap();
    let outer = ToolCall::json("o", "outer", json!({}));
    let top = ToolCall::json("t", "probe", json!({}));
    let (outer_result, top_result) = tokio::time::timeout(
        Duration::from_secs(10),
        futures::future::join(registry.execute(&outer, None), registry.execute(&top, None)),
    )
    .await
    .expect("a nested serial call never waits for its caller's own turn");
    assert_eq!(outer_result.content, "3 probes");
    assert!(!top_result.is_error);
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "nested serial calls take turns with each other and with calls outside"
    );
}
