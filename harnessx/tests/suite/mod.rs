//! One module per topic.

mod knowledge;
mod mcp_failures;
mod mcp_filesystem;
mod mcp_http;
mod mcp_servers;
mod mcp_stdio;
