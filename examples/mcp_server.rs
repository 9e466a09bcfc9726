//! Serving tools over MCP: a registry of `#[tool]` functions served as an MCP server over
//! streamable HTTP, through the same engine as an agent's calls (schema checks, permissions,
//! time limits). An agent then connects to it as any MCP client would and calls its tool.
//!
//! ```sh
//! cargo run --example mcp_server
//! ```
//!
//! The server listens on a free port of 127.0.0.1 for the length of the example;
//! `McpToolServer::serve_stdio` serves over stdin and stdout instead (the `harnessx-mcp-server`
//! binary of `harnessx-builtin` serves the built-in tools that way). It runs offline on a
//! scripted model; with `HARNESSX_MODEL` (and the provider's key) set, a real model calls.

mod common;

use harnessx::mcp::McpServer;
use harnessx::mcp_server::McpToolServer;
use harnessx::{Agent, Message, PermissionManager, TestModel, ToolRegistry, tool};
use serde_json::json;

/// Count the words in a text.
///
/// Args:
///     text: The text to count.
#[tool(permission = "allow", replay_policy = "safe")]
fn word_count(text: String) -> usize {
    text.split_whitespace().count()
}

/// The scripted model of an offline run.
fn script() -> TestModel {
    TestModel::new()
        .then_call(
            "mcp_words_word_count",
            json!({"text": "to be or not to be"}),
        )
        .then_reply("The line has 6 words.")
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    let registry = ToolRegistry::new();
    registry.register_tool(word_count)?;
    let server = McpToolServer::new(registry, PermissionManager::default())
        .server_info("words", "1.0.0")
        .serve_http("127.0.0.1:0")
        .await?;
    println!("serving MCP at {}", server.url());

    // The tool is ALLOW with a safe replay policy, so the server marks it read-only and the
    // client runs it without asking.
    let agent = Agent::builder()
        .model(common::model_or(script())?)
        .capability(McpServer::http("words", server.url()))
        .build()?;
    agent.connect().await?;
    println!("tools: {}", agent.tools().list_tools().join(", "));
    let result = agent
        .run("How many words are in 'to be or not to be'?")
        .await?;
    for message in &result.messages {
        if let Message::Tool { name, content, .. } = message {
            println!("{name}: {content}");
        }
    }
    println!("assistant: {}", result.output);
    agent.close().await;
    server.shutdown().await;
    Ok(())
}
