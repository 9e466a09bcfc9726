//! Connects to the reference MCP server `@modelcontextprotocol/server-everything` over stdio and
//! runs the tool calls a model makes against it.
//!
//! Install the server once with `bash .ci/install-mcp-servers.sh`, then run
//! `cargo run --example mcp`. The model is scripted so the example runs offline: [`model`]
//! decides the calls. (Once the agent loop is merged this becomes
//! `Agent::builder().model(..).mcp_server(server)`.)

use harnessx::mcp::{McpServer, connect_mcp_server};
use harnessx::{PermissionManager, ToolCall, ToolEvent, ToolRegistry};
use serde_json::json;

/// The model's turn: the tool calls it makes, given the tools it was offered.
fn model(tools: &[String]) -> Vec<ToolCall> {
    assert!(tools.iter().any(|t| t == "mcp_everything_get-sum"));
    vec![
        ToolCall::json(
            "call_1",
            "mcp_everything_get-sum",
            json!({"a": 19, "b": 23}),
        ),
        ToolCall::json(
            "call_2",
            "mcp_everything_echo",
            json!({"message": "hello over MCP"}),
        ),
    ]
}

/// The installed server-everything entry script.
fn server_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".ci/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let script = server_script();
    if !script.is_file() {
        return Err(format!(
            "{} is missing: run `bash .ci/install-mcp-servers.sh` first",
            script.display()
        )
        .into());
    }
    let registry = ToolRegistry::new();
    let server = McpServer::stdio(
        "everything",
        "node",
        [script.display().to_string(), "stdio".to_owned()],
    )
    .allow_tools(["get-sum", "echo"]);
    let connection = connect_mcp_server(&registry, server).await?;
    println!(
        "connected to `{}`: {}",
        connection.server_name(),
        connection.tool_names().join(", ")
    );

    let calls = model(&registry.list_tools());
    let run = registry.run(Some(PermissionManager::default()));
    let print = |event: ToolEvent| match event {
        ToolEvent::ToolCallStart {
            name, arguments, ..
        } => println!("-> {name} {arguments}"),
        ToolEvent::ToolResult { result } => println!("<- {}: {}", result.name, result.content),
    };
    run.execute_batch(&calls, Some(&print)).await;
    registry.close().await;
    Ok(())
}
