//! Built-in bundles by name: the filesystem tools confined to one folder (asking before each
//! call), the memory tools, and the planning tools every agent has. The model writes a file,
//! reads it back and saves a memory.
//!
//! ```sh
//! cargo run --example builtin
//! ```
//!
//! The files live in a temporary folder that is removed at the end. It runs offline on a
//! scripted model; with `HARNESSX_MODEL` (and the provider's key) set, a real model decides.

mod common;

use futures::StreamExt;
use harnessx::{Agent, AgentEvent, ApprovalDecision, TestModel};
use harnessx_builtin::prelude::BuiltinBuilderExt;
use serde_json::json;

/// The scripted model of an offline run.
fn script() -> TestModel {
    TestModel::new()
        .then_call(
            "write_file",
            json!({"path": "notes.md", "content": "Ship on Friday.\n"}),
        )
        .then_call("read_file", json!({"path": "notes.md"}))
        .then_call(
            "save_memory",
            json!({"content": "The team ships on Fridays."}),
        )
        .then_reply("I wrote notes.md, checked it, and will remember that you ship on Fridays.")
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    let workspace = tempfile::tempdir()?;
    let agent = Agent::builder()
        .model(common::model_or(script())?)
        .builtin_with(
            "filesystem",
            json!({"base_path": workspace.path(), "permission": "ask"}),
        )?
        .builtin("memory")?
        // The filesystem tools ask first; this stands in for a person.
        .approval(|request| async move {
            println!("  approve {}? yes", request.tool_name);
            ApprovalDecision::AllowOnce
        })
        .build()?;
    println!("tools: {}", agent.tools().list_tools().join(", "));

    let mut events = agent.run_stream("Note that we ship on Friday, and remember it.");
    while let Some(event) = events.next().await {
        match event? {
            AgentEvent::ToolCallStart { name, .. } => println!("-> {name}"),
            AgentEvent::ToolResult { result } => println!("<- {}: {}", result.name, result.content),
            AgentEvent::Completed { result } => println!("assistant: {}", result.output),
            _ => {}
        }
    }
    Ok(())
}
