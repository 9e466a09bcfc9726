//! Agent integration: `Agent::builder().mcp_server(..)` connects a server before the first model
//! request (or on `agent.connect()`), and `agent.connect_mcp_server(..)` connects one later.
//!
//! Compiled once `harnessx::agent` is merged: the lead adds `mod agent;` in `mcp.rs`.

use super::{McpConnection, McpError, McpServer, connect_mcp_server, error_chain};
use crate::agent::{Agent, AgentBuilder};

impl AgentBuilder {
    /// Connects an MCP server before the agent's first model request (or on
    /// [`Agent::connect`]) and registers its tools as `mcp_<server>_<tool>`.
    ///
    /// A server that cannot be reached within its connect deadline does not fail the run: the
    /// failure is logged (`tracing` warning) and the agent runs without that server's tools.
    /// Use [`Agent::connect_mcp_server`] to handle the error yourself.
    ///
    /// ```no_run
    /// use harnessx::Agent;
    /// use harnessx::mcp::McpServer;
    /// use harnessx::model::TestModel;
    /// # fn main() -> Result<(), harnessx::AgentError> {
    /// let agent = Agent::builder()
    ///     .model(TestModel::new().then_reply("done"))
    ///     .mcp_server(McpServer::stdio("files", "node", ["server-filesystem/dist/index.js", "/srv"]))
    ///     .build()?;
    /// # let _ = agent; Ok(()) }
    /// ```
    pub fn mcp_server(self, server: McpServer) -> Self {
        self.on_start(move |registry| {
            let server = server.clone();
            async move {
                if let Err(e) = connect_mcp_server(&registry, server.clone()).await {
                    tracing::warn!(
                        server = %server.name(),
                        "MCP server unavailable; the agent runs without its tools: {}",
                        error_chain(&e)
                    );
                }
                Ok(())
            }
        })
    }
}

impl Agent {
    /// Connects an MCP server to this agent's tools now (see
    /// [`connect_mcp_server`](super::connect_mcp_server)); the connection closes with the agent.
    pub async fn connect_mcp_server(&self, server: McpServer) -> Result<McpConnection, McpError> {
        connect_mcp_server(self.tools(), server).await
    }
}
