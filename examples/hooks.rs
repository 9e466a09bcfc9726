//! Hooks: middleware around every model request and tool call. A hook prints each call and
//! refuses to delete anything outside `drafts/`, with a reason the model reads; a usage budget
//! (a built-in hook) ends the run at its third tool call.
//!
//! ```sh
//! cargo run --example hooks
//! ```
//!
//! It runs offline on a scripted model; with `HARNESSX_MODEL` (and the provider's key) set, a
//! real model chooses the calls.

mod common;

use harnessx::hooks::{BeforeTool, Hook, HookContext, HookStop, ToolInvocation, UsageLimits};
use harnessx::{Agent, AgentError, BoxFuture, TestModel, tool};
use serde_json::json;

/// Delete a file.
///
/// Args:
///     path: The file to delete.
#[tool(permission = "allow")]
fn delete(path: String) -> String {
    format!("deleted {path}")
}

/// Prints every call; denies deleting a file outside `drafts/`.
struct DraftsOnly;

impl Hook for DraftsOnly {
    fn before_tool<'a>(
        &'a self,
        _ctx: &'a HookContext,
        call: &'a mut ToolInvocation,
    ) -> BoxFuture<'a, Result<BeforeTool, HookStop>> {
        let path = call.arguments()["path"].as_str().unwrap_or_default();
        println!("  hook: {}({path})", call.tool());
        let decision = match path.starts_with("drafts/") {
            true => BeforeTool::Continue,
            false => BeforeTool::Deny(format!("{path} is not a draft; leave it")),
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
}

/// The scripted model of an offline run.
fn script() -> TestModel {
    TestModel::new()
        .then_call("delete", json!({"path": "drafts/old.md"}))
        .then_call("delete", json!({"path": "README.md"}))
        .then_call("delete", json!({"path": "drafts/new.md"}))
        .then_reply("Done.")
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    // At most two tool calls per run: the scripted model's third call ends the run.
    let budget = UsageLimits {
        tool_calls: Some(2),
        ..UsageLimits::default()
    };
    let agent = Agent::builder()
        .model(common::model_or(script())?)
        .tool(delete)
        .hook(DraftsOnly);
    let agent = agent.usage_limits(budget).build()?;
    match agent
        .run("Delete drafts/old.md, README.md and drafts/new.md.")
        .await
    {
        Ok(result) => println!("assistant: {}", result.output),
        Err(AgentError::UsageLimitExceeded {
            limit,
            max,
            reached,
        }) => {
            println!("stopped: {reached} {limit}, over the budget of {max}")
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
