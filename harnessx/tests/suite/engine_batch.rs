//! Scheduling one model turn: concurrent tools together, serial ones in order, results and
//! start events in call order, failures isolated.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harnessx::{
    SerialLane, ToolCall, ToolDefinition, ToolErrorKind, ToolEvent, ToolOptions, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde_json::json;

/// A tool that logs `start:<tag>` and `end:<tag>` around a sleep of `ms` (from the arguments).
fn logging_tool(name: &str, log: Arc<Mutex<Vec<String>>>) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Log around a sleep.",
        json!({"type": "object", "properties": {"tag": {"type": "string"}, "ms": {"type": "integer"}}, "required": ["tag", "ms"]}),
        handler_fn(move |args, _ctx| {
            let log = Arc::clone(&log);
            async move {
                let tag = args["tag"].as_str().unwrap_or_default().to_owned();
                log.lock().unwrap().push(format!("start:{tag}"));
                tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
                log.lock().unwrap().push(format!("end:{tag}"));
                if tag.starts_with("fail") {
                    return Err(harnessx::ToolError::failed(format!("{tag} failed")));
                }
                Ok(ToolOutput::text(tag))
            }
        }),
    )
}

fn call(id: &str, name: &str, tag: &str, ms: u64) -> ToolCall {
    ToolCall::json(id, name, json!({"tag": tag, "ms": ms}))
}

fn setup() -> (ToolRegistry, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let registry = ToolRegistry::new();
    registry
        .register_tool(logging_tool("read", Arc::clone(&log)))
        .unwrap();
    registry
        .register_tool_with(
            logging_tool("write", Arc::clone(&log)),
            ToolOptions::new().concurrent(false),
        )
        .unwrap();
    (registry, log)
}

#[tokio::test]
async fn serial_tools_run_one_at_a_time_in_call_order() {
    let (registry, log) = setup();
    let calls = [
        call("1", "write", "w1", 30),
        call("2", "write", "w2", 1),
        call("3", "write", "w3", 10),
    ];
    let results = registry.run(None).execute_batch(&calls, None).await;
    let contents: Vec<_> = results.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(contents, ["w1", "w2", "w3"]);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "start:w1", "end:w1", "start:w2", "end:w2", "start:w3", "end:w3"
        ]
    );
}

#[tokio::test]
async fn concurrent_tools_overlap_and_do_not_wait_for_serial_ones() {
    let (registry, log) = setup();
    // The serial write is long; the reads must all start before it ends.
    let calls = [
        call("1", "write", "w1", 200),
        call("2", "read", "r1", 20),
        call("3", "read", "r2", 20),
    ];
    let results = registry.run(None).execute_batch(&calls, None).await;
    assert!(results.iter().all(|r| !r.is_error));
    let log = log.lock().unwrap().clone();
    let end_w1 = log.iter().position(|e| e == "end:w1").unwrap();
    for tag in ["r1", "r2"] {
        let end = log.iter().position(|e| *e == format!("end:{tag}")).unwrap();
        assert!(end < end_w1, "{tag} waited for the serial write: {log:?}");
    }
    // Both reads started before either ended: they overlapped.
    let first_end = log.iter().position(|e| e.starts_with("end:r")).unwrap();
    let starts_before = log[..first_end]
        .iter()
        .filter(|e| e.starts_with("start:r"))
        .count();
    assert_eq!(starts_before, 2, "{log:?}");
}

#[tokio::test]
async fn results_and_start_events_come_in_call_order() {
    let (registry, _log) = setup();
    let calls = [
        call("a", "read", "slow", 80),
        call("b", "write", "w", 5),
        call("c", "read", "fast", 1),
        ToolCall::new("d", "nope", "{}"),
    ];
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = Arc::clone(&events);
        move |e: ToolEvent| events.lock().unwrap().push(e)
    };
    let results = registry.run(None).execute_batch(&calls, Some(&sink)).await;
    let ids: Vec<_> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    let events = events.lock().unwrap();
    let order: Vec<String> = events
        .iter()
        .map(|e| match e {
            ToolEvent::ToolCallStart { call_id, .. } => format!("start:{call_id}"),
            ToolEvent::ToolResult { result } => format!("result:{}", result.call_id),
        })
        .collect();
    assert_eq!(
        order,
        [
            "start:a", "start:b", "start:c", "start:d", "result:a", "result:b", "result:c",
            "result:d"
        ]
    );
}

#[tokio::test]
async fn one_failing_or_timed_out_call_cancels_none_of_the_others() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let registry = ToolRegistry::new();
    registry
        .register_tool(logging_tool("read", Arc::clone(&log)))
        .unwrap();
    registry
        .register_tool_with(
            logging_tool("slowpoke", Arc::clone(&log)),
            ToolOptions::new().timeout_seconds(0.05),
        )
        .unwrap();
    let calls = [
        call("1", "read", "fail-1", 5),
        call("2", "slowpoke", "sleeper", 5_000),
        call("3", "read", "ok-3", 30),
        ToolCall::new("4", "read", "{broken"),
    ];
    let results = registry.run(None).execute_batch(&calls, None).await;
    assert_eq!(results[0].content, "fail-1 failed");
    assert_eq!(results[1].error_kind, Some(ToolErrorKind::TimedOut));
    assert_eq!(results[2].content, "ok-3");
    assert!(!results[2].is_error);
    assert_eq!(
        results[3].error_kind,
        Some(ToolErrorKind::MalformedArguments)
    );
}

#[tokio::test]
async fn a_shared_lane_makes_serial_tools_of_two_registries_take_turns() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let parent = ToolRegistry::new();
    let child = ToolRegistry::new();
    let lane = SerialLane::new();
    parent.set_serial_lane(lane.clone());
    child.set_serial_lane(lane.clone());
    assert!(parent.serial_lane().same_lane(&child.serial_lane()));
    for reg in [&parent, &child] {
        reg.register_tool_with(
            logging_tool("write", Arc::clone(&log)),
            ToolOptions::new().concurrent(false),
        )
        .unwrap();
    }
    let p = parent.run(None);
    let c = child.run(None);
    let pc = [call("1", "write", "p1", 40), call("2", "write", "p2", 40)];
    let cc = [call("1", "write", "c1", 40), call("2", "write", "c2", 40)];
    tokio::join!(p.execute_batch(&pc, None), c.execute_batch(&cc, None));
    let log = log.lock().unwrap().clone();
    // Never two serial tools at once: every start is followed by its own end.
    for pair in log.chunks(2) {
        let tag = pair[0].strip_prefix("start:").unwrap();
        assert_eq!(pair[1], format!("end:{tag}"), "{log:?}");
    }
    // Separate lanes do overlap.
    let log2 = Arc::new(Mutex::new(Vec::new()));
    let a = ToolRegistry::new();
    let b = ToolRegistry::new();
    for reg in [&a, &b] {
        reg.register_tool_with(
            logging_tool("write", Arc::clone(&log2)),
            ToolOptions::new().concurrent(false),
        )
        .unwrap();
    }
    let (ra, rb) = (a.run(None), b.run(None));
    let (ca, cb) = (
        [call("1", "write", "a1", 60)],
        [call("1", "write", "b1", 60)],
    );
    tokio::join!(ra.execute_batch(&ca, None), rb.execute_batch(&cb, None));
    let log2 = log2.lock().unwrap().clone();
    assert!(
        log2[0].starts_with("start:") && log2[1].starts_with("start:"),
        "{log2:?}"
    );
}

#[tokio::test]
async fn an_empty_batch_is_fine() {
    let (registry, _) = setup();
    assert!(registry.run(None).execute_batch(&[], None).await.is_empty());
}
