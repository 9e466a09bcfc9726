//! Helpers shared by the runtime's tests: a scripted model that answers by position in the run
//! (so a resumed run gets the same answers), and counting tools.

#![allow(dead_code)]
#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed unwrap fails the test"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

pub mod stores;

use harnessx::model::FunctionModel;
use harnessx::{
    Message, ModelRequest, ModelResponse, PermissionLevel, ReplayPolicy, StopReason, ToolCall,
    ToolDefinition, ToolOutput, handler_fn,
};
use serde_json::{Value, json};

/// One model turn of a script.
#[derive(Clone)]
pub enum Turn {
    /// Call a tool.
    Call(&'static str, Value),
    /// Answer, quoting the last tool result: `saw: <content>`.
    Quote,
}

/// A model that plays `script` by the number of assistant turns since the last user message,
/// counting its calls.
pub fn scripted(script: Vec<Turn>) -> (FunctionModel, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let model = FunctionModel::new(move |request: &ModelRequest, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        let since_user = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .collect::<Vec<_>>();
        let k = since_user
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let last_tool = since_user.iter().find_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        });
        match script.get(k).cloned().unwrap_or(Turn::Quote) {
            Turn::Call(name, args) => ModelResponse::default()
                .with_tool_calls(vec![ToolCall::json(format!("call_{k}"), name, args)])
                .with_stop_reason(StopReason::ToolUse),
            Turn::Quote => ModelResponse::text(format!("saw: {}", last_tool.unwrap_or_default())),
        }
    });
    (model, calls)
}

/// A tool counting its handler runs, answering `"<name> done"`.
pub fn counting(
    name: &'static str,
    policy: ReplayPolicy,
    permission: PermissionLevel,
) -> (ToolDefinition, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let def = ToolDefinition::new(
        name,
        "A counting tool.",
        json!({"type": "object"}),
        handler_fn(move |_, _| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text(format!("{name} done")))
            }
        }),
    )
    .with_replay_policy(policy)
    .with_permission(permission);
    (def, runs)
}

/// A tool that signals it started and then never returns (its worker "dies", or stops,
/// meanwhile).
pub fn stuck(
    name: &'static str,
    policy: ReplayPolicy,
    started: Arc<tokio::sync::Notify>,
) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Never finishes.",
        json!({"type": "object"}),
        handler_fn(move |_, _| {
            let started = Arc::clone(&started);
            async move {
                started.notify_one();
                std::future::pending::<()>().await;
                Ok(ToolOutput::text("unreachable"))
            }
        }),
    )
    .with_replay_policy(policy)
    .with_timeout_seconds(600.0)
}

/// The structured ask_user question used by the tests.
pub fn format_question() -> Value {
    json!({"questions": [{"header": "Format", "question": "Which format?",
        "options": [{"label": "CSV"}, {"label": "JSON"}]}]})
}

pub fn count(c: &Arc<AtomicUsize>) -> usize {
    c.load(Ordering::SeqCst)
}

/// A new run of agent `a` with `input`, in a conversation of its own, without idempotency key.
pub fn new_run(input: &str) -> harnessx_runtime::store::NewRun {
    harnessx_runtime::store::NewRun {
        agent: "a".into(),
        input: input.into(),
        conversation: None,
        idempotency_key: None,
        agent_version: None,
    }
}
