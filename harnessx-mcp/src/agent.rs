//! An MCP server as an agent [`Capability`]: `Agent::builder().capability(server)` connects it
//! before the first model request (or on `agent.connect()`); [`connect_mcp_server`] on the
//! agent's registry connects one later.
//!
//! A server that cannot be reached at start does not fail the run. Its place in the tool list is
//! taken by one tool, `mcp_<server>_connect`, whose every call retries the connection: the model
//! gets the connection failure as a failed tool result it can work around or report, and once the
//! server answers, its tools replace the placeholder.

use std::borrow::Cow;

use serde_json::json;

use super::names::{hashed, plain};
use super::{McpError, McpServer, connect_mcp_server, error_chain};
use harnessx_core::agent::{Capability, CapabilityError};
use harnessx_core::registry::ToolRegistry;
use harnessx_core::tool::BoxFuture;
use harnessx_core::{ToolDefinition, ToolError, ToolOptions, ToolOutput, handler_fn};

/// The name of the placeholder tool for a server that could not be reached.
pub(crate) fn reconnect_tool_name(server: &str) -> String {
    plain(server, "connect").unwrap_or_else(|| hashed(server, "connect"))
}

/// Registers `mcp_<server>_connect`: each call retries the connection and, on success, removes
/// itself so the server's own tools take its place.
fn register_reconnect_tool(registry: &ToolRegistry, server: McpServer, reason: &str) {
    let name = reconnect_tool_name(server.name());
    let connect_deadline = server.connect_timeout;
    let weak = registry.downgrade();
    let tool_name = name.clone();
    let definition = ToolDefinition::new(
        name.clone(),
        format!(
            "The MCP server `{}` could not be reached when the agent started ({reason}), so its \
             tools are not available. Call this tool to try connecting again; if it still fails, \
             work around the missing tools or tell the user.",
            server.name()
        ),
        json!({"type": "object", "properties": {}, "additionalProperties": false}),
        handler_fn(move |_args, _ctx| {
            let weak = weak.clone();
            let server = server.clone();
            let tool_name = tool_name.clone();
            async move {
                let Some(registry) = weak.upgrade() else {
                    return Err(ToolError::failed("the agent was closed; the server cannot be connected"));
                };
                match connect_mcp_server(&registry, server.clone()).await {
                    Ok(connection) => {
                        registry.unregister(&tool_name);
                        Ok(ToolOutput::text(format!(
                            "Connected to the MCP server `{}`. Its tools are available from your next \
                             turn: {}.",
                            server.name(),
                            connection.tool_names().join(", ")
                        )))
                    }
                    Err(e) => Err(ToolError::failed(format!(
                        "The MCP server `{}` is still unreachable: {}. Work around its tools or tell \
                         the user.",
                        server.name(),
                        error_chain(&e)
                    ))),
                }
            }
        }),
    )
    .with_permission(harnessx_core::PermissionLevel::Allow)
    .with_concurrent(false)
    // Longer than the connect deadline, so a slow server reports its connect failure.
    .with_timeout_seconds(connect_deadline.as_secs_f64() + 5.0);
    if let Err(e) = registry.register_tool_with(definition, ToolOptions::new().replace(true)) {
        tracing::warn!(tool = %name, "could not register the reconnect tool: {e}");
    }
}

/// Connects the server before the agent's first model request (or on
/// [`Agent::connect`](harnessx_core::Agent::connect)) and registers its tools as
/// `mcp_<server>_<tool>`.
///
/// A server that cannot be reached within its connect deadline does not fail the run: the
/// failure is logged (`tracing` warning) and a tool `mcp_<server>_connect` is registered in its
/// place. Calling it retries the connection; a failure reaches the model as a failed tool
/// result, and success replaces the placeholder with the server's tools. Use
/// [`connect_mcp_server`] to handle the error yourself. A mistake in the server's configuration
/// (an empty name, a bad URL or header, an `allow_tools` name the server does not have) fails
/// the agent's setup instead ([`AgentError::Setup`](harnessx_core::AgentError::Setup) with the
/// [`McpError`] as its source, from `agent.connect()` or the first run).
///
/// ```no_run
/// use harnessx::Agent;
/// use harnessx::mcp::McpServer;
/// use harnessx::model::TestModel;
/// # fn main() -> Result<(), harnessx::AgentError> {
/// let agent = Agent::builder()
///     .model(TestModel::new().then_reply("done"))
///     .capability(McpServer::stdio("files", "node", ["server-filesystem/dist/index.js", "/srv"]))
///     .build()?;
/// # let _ = agent; Ok(()) }
/// ```
impl Capability for McpServer {
    fn name(&self) -> Cow<'_, str> {
        format!("MCP server `{}`", McpServer::name(self)).into()
    }

    fn setup<'a>(
        &'a self,
        registry: &'a ToolRegistry,
    ) -> BoxFuture<'a, Result<(), CapabilityError>> {
        Box::pin(async move {
            if let Err(e) = connect_mcp_server(registry, self.clone()).await {
                // A mistake in the configuration will not heal by reconnecting: fail setup.
                if matches!(
                    e,
                    McpError::EmptyName
                        | McpError::InvalidUrl { .. }
                        | McpError::InvalidHeader { .. }
                        | McpError::UnknownTools { .. }
                ) {
                    return Err(e.into());
                }
                let reason = error_chain(&e);
                tracing::warn!(
                    server = %McpServer::name(self),
                    "MCP server unavailable; registering a reconnect tool in its place: {reason}"
                );
                register_reconnect_tool(registry, self.clone(), &reason);
            }
            Ok(())
        })
    }
}
