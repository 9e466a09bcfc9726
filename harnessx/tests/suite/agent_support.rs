//! Helpers shared by the agent, planning and subagent tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harnessx::{Message, ToolDefinition, ToolOutput, handler_fn};
use serde_json::json;

/// `add(a, b)`: adds two integers.
pub fn add_tool() -> ToolDefinition {
    ToolDefinition::new(
        "add",
        "Add two integers.",
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": false
        }),
        handler_fn(|args, _| async move {
            let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
            Ok(ToolOutput::json(json!(sum)))
        }),
    )
}

/// A tool that counts its calls and answers `"<name> ran"`.
pub fn counting_tool(name: &str, calls: Arc<AtomicUsize>) -> ToolDefinition {
    let label = format!("{name} ran");
    ToolDefinition::new(
        name,
        "Count a call.",
        json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
        handler_fn(move |_, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            let label = label.clone();
            async move { Ok(ToolOutput::text(label)) }
        }),
    )
}

/// A tool that sleeps `ms` milliseconds and then answers its name.
pub fn sleepy_tool(name: &str, ms: u64) -> ToolDefinition {
    let label = name.to_owned();
    ToolDefinition::new(
        name,
        "Sleep, then answer.",
        json!({"type": "object"}),
        handler_fn(move |_, _| {
            let label = label.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(ToolOutput::text(label))
            }
        }),
    )
}

/// A serial tool that records the most calls it ever saw running at once.
pub fn serial_probe(
    name: &str,
    active: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "A serial tool that measures overlap.",
        json!({"type": "object"}),
        handler_fn(move |_, _| {
            let active = Arc::clone(&active);
            let peak = Arc::clone(&peak);
            async move {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(30)).await;
                active.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolOutput::text("probed"))
            }
        }),
    )
    .with_concurrent(false)
}

/// The content and error flag of every tool message, in order.
pub fn tool_contents(messages: &[Message]) -> Vec<(String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}
