//! An agent connected to the reference MCP server `@modelcontextprotocol/server-everything` over
//! stdio: the server's tools appear as `mcp_everything_<tool>` and the model calls two of them.
//!
//! Install the server once with `bash .ci/install-mcp-servers.sh`, then run
//! `cargo run --example mcp`. The model is scripted so the example runs offline; set
//! `HARNESSX_MODEL` (and the provider's key) to let a real model choose the calls instead.

mod common;

use futures::StreamExt;
use harnessx::mcp::McpServer;
use harnessx::model::TestModel;
use harnessx::{Agent, AgentEvent, ApprovalDecision};
use serde_json::json;

/// The scripted model of an offline run: it adds two numbers with the server's `get-sum` tool,
/// echoes a message, and answers.
fn scripted_model() -> TestModel {
    TestModel::new()
        .then_call("mcp_everything_get-sum", json!({"a": 19, "b": 23}))
        .then_call("mcp_everything_echo", json!({"message": "hello over MCP"}))
        .then_reply("19 + 23 is 42, and the server echoed my message back.")
}

/// The installed server-everything entry script.
fn server_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".ci/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    let script = server_script();
    if !script.is_file() {
        return Err(format!(
            "{} is missing: run `bash .ci/install-mcp-servers.sh` first",
            script.display()
        )
        .into());
    }
    let server = McpServer::stdio(
        "everything",
        "node",
        [script.display().to_string(), "stdio".to_owned()],
    )
    .allow_tools(["get-sum", "echo"]);
    let agent = Agent::builder()
        .model(common::model_or(scripted_model())?)
        .instructions("Use the MCP tools to answer.")
        .capability(server)
        // Tools the server does not mark read-only ask first; this stands in for a person.
        .approval(|request| async move {
            println!("approve {}? yes", request.tool_name);
            ApprovalDecision::AllowOnce
        })
        .build()?;
    agent.connect().await?;
    println!("tools: {}", agent.tools().list_tools().join(", "));

    let mut events = agent.run_stream("What is 19 + 23? Then echo a greeting.");
    while let Some(event) = events.next().await {
        match event? {
            AgentEvent::ToolCallStart {
                name, arguments, ..
            } => println!("-> {name} {arguments}"),
            AgentEvent::ToolResult { result } => println!("<- {}: {}", result.name, result.content),
            AgentEvent::Completed { result } => println!("assistant: {}", result.output),
            _ => {}
        }
    }
    agent.close().await;
    Ok(())
}
