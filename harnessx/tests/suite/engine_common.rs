//! Helpers shared by the engine tests: small tools built without the macro.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harnessx::{ToolDefinition, ToolOutput, ToolRegistry, handler_fn};
use serde_json::{Value, json};

/// An object schema with no parameters.
pub fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// A tool that answers `text` and counts its runs.
pub fn counting_tool(name: &str, text: &'static str) -> (ToolDefinition, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    let def = ToolDefinition::new(
        name,
        format!("Answer {text}."),
        empty_schema(),
        handler_fn(move |_args, _ctx| {
            r.fetch_add(1, Ordering::SeqCst);
            async move { Ok(ToolOutput::text(text)) }
        }),
    );
    (def, runs)
}

/// A tool that sleeps for `ms` milliseconds, then echoes its `tag` argument.
pub fn sleeping_tool(name: &str, ms: u64) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Sleep, then echo the tag.",
        json!({"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]}),
        handler_fn(move |args, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text(
                args["tag"].as_str().unwrap_or_default().to_owned(),
            ))
        }),
    )
}

/// A registry with the given definitions registered.
pub fn registry_with(defs: impl IntoIterator<Item = ToolDefinition>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    for def in defs {
        registry.register_tool(def).unwrap();
    }
    registry
}
