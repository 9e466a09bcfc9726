//! MCP servers as tool sources: connect over stdio or streamable HTTP and register each server
//! tool as `mcp_<server>_<tool>`.
//!
//! [`connect_mcp_server`] starts (or reaches) a server within its connect deadline, lists its
//! tools and registers them on a [`ToolRegistry`]:
//!
//! - names are `mcp_<server>_<tool>`, sanitised to `^[a-zA-Z0-9_-]{1,64}$` and cut with a short
//!   hash when too long; calls are mapped back to the server's own name, so two servers with a
//!   tool of the same name never collide;
//! - a tool the server marks `readOnlyHint: true` is ALLOW, every other tool ASK; annotations are
//!   copied with the MCP defaults for missing hints;
//! - every tool has a 300 s time limit ([`MCP_TOOL_TIMEOUT_SECONDS`]); tools that need the MCP
//!   tasks API (`taskSupport: "required"`) are skipped and logged;
//! - results keep their text and `structuredContent`; other content is summarised; `isError`
//!   makes a failed tool result;
//! - a server that fails, dies or stops answering gives the model a failed tool result, never a
//!   panic or a hang; a dead server is reconnected (a stdio server restarted) on the next call;
//! - a stdio server cannot grow the client's memory: of its stderr only the latest 8 KiB are kept
//!   (lines cut at 1 KiB, with a count of what was dropped; see
//!   [`McpConnection::server_stderr`]), and a message on stdout longer than 16 MiB is dropped
//!   unread, failing the call it answers at once with an error naming its size;
//! - `notifications/tools/list_changed` re-lists the tools and updates the registry;
//! - [`ToolRegistry::close`] shuts the connection down and stops the server process.
//!
//! That is one session per registry. A process that builds many agents over the same server
//! keeps one [`McpSession`] instead: connected once, shared by every agent given its
//! [`capability`](McpSession::capability), whose calls all go to that one session; the tool
//! list, restarts and closing are handled once for all the agents (see [`McpSession`]). Both
//! run on the same connection code; a single registry's connection is a session that registry
//! owns.
//!
//! ```no_run
//! use harnessx::ToolRegistry;
//! use harnessx::mcp::{McpServer, connect_mcp_server};
//!
//! # async fn demo() -> Result<(), harnessx::mcp::McpError> {
//! let registry = ToolRegistry::new();
//! let files = connect_mcp_server(
//!     &registry,
//!     McpServer::stdio("files", "node", ["server-filesystem/dist/index.js", "/srv/data"])
//!         .allow_tools(["read_text_file", "write_file"]),
//! )
//! .await?;
//! assert_eq!(files.tool_names(), ["mcp_files_read_text_file", "mcp_files_write_file"]);
//! registry.close().await; // stops the server
//! # Ok(()) }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent;
mod config;
mod connection;
mod convert;
mod names;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod server;
mod session;
mod stdio;
mod taps;

use std::sync::Arc;

pub use config::{
    DEFAULT_CONNECT_TIMEOUT_SECONDS, MCP_TOOL_TIMEOUT_SECONDS, McpServer, McpTransport,
};
pub use session::{McpCapability, McpSession, McpTool};

#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use oauth::{
    DEFAULT_SIGN_IN_TIMEOUT_SECONDS, FileTokenStore, LoopbackRedirect, McpOAuth, MemoryTokenStore,
    SignIn, SignInFn, SignInRequest, StoredTokens, TokenStore, TokenStoreError,
};

pub(crate) use harnessx_core::error::error_chain;
use harnessx_core::registry::ToolRegistry;

/// A failure to connect to an MCP server or to register its tools.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server name is empty.
    #[error("the MCP server name is empty; give every server a short name such as `files`")]
    EmptyName,
    /// The URL of an HTTP server does not parse.
    #[error(
        "the URL `{url}` of MCP server `{server}` is not valid ({reason}); use a full URL such as `http://127.0.0.1:3001/mcp`"
    )]
    InvalidUrl {
        /// The server.
        server: String,
        /// The URL given.
        url: String,
        /// Why it does not parse.
        reason: String,
    },
    /// A header for an HTTP server is not a valid HTTP header.
    #[error("the header `{name}` of MCP server `{server}` is not a valid HTTP header ({reason})")]
    InvalidHeader {
        /// The server.
        server: String,
        /// The header name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server process could not be started.
    #[error(
        "could not start MCP server `{server}` with `{command}`; check that the program exists and is on PATH"
    )]
    Spawn {
        /// The server.
        server: String,
        /// The program.
        command: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Connecting did not finish within the connect deadline.
    #[error(
        "MCP server `{server}` ({location}) did not answer within the connect deadline of {seconds} s; check that it is running and speaks MCP, or raise `connect_timeout`"
    )]
    ConnectTimeout {
        /// The server.
        server: String,
        /// Its command or URL.
        location: String,
        /// The deadline in seconds.
        seconds: f64,
    },
    /// The server closed the connection or answered the handshake wrongly.
    #[error("MCP server `{server}` ({location}) failed the MCP handshake: {reason}")]
    Handshake {
        /// The server.
        server: String,
        /// Its command or URL.
        location: String,
        /// What went wrong, with the server's stderr when it wrote any.
        reason: String,
    },
    /// Listing the server's tools failed.
    #[error("MCP server `{server}` could not list its tools: {reason}")]
    ListTools {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The server answered `401`: it needs a sign-in, and none is configured.
    #[error(
        "MCP server `{server}` ({location}) needs a sign-in (it answered HTTP 401); configure it with `McpServer::oauth` (feature `mcp-oauth`) or give a token with `bearer_token`"
    )]
    SignInRequired {
        /// The server.
        server: String,
        /// Its URL.
        location: String,
    },
    /// Signing in to the server failed (feature `mcp-oauth`).
    #[error("could not sign in to MCP server `{server}` ({location}): {reason}")]
    SignIn {
        /// The server.
        server: String,
        /// Its URL.
        location: String,
        /// What went wrong and what to do.
        reason: String,
    },
    /// The authorization server refused the sign-in (the person declined, or is not allowed).
    #[error(
        "the sign-in to MCP server `{server}` was refused by its authorization server ({error}{}); sign in again and approve the access, or ask the server's administrator for access",
        if description.is_empty() { String::new() } else { format!(": {description}") }
    )]
    SignInRefused {
        /// The server.
        server: String,
        /// The OAuth error code, such as `access_denied`.
        error: String,
        /// The authorization server's description, when it gave one.
        description: String,
    },
    /// The sign-in redirect's `state` is not the one harnessx sent, so the redirect was refused.
    #[error(
        "the sign-in redirect for MCP server `{server}` carries a `state` that is not the one harnessx sent, so it was refused (it may be forged, or from an older sign-in); connect again to sign in again"
    )]
    SignInState {
        /// The server.
        server: String,
    },
    /// Nobody finished signing in within the sign-in deadline.
    #[error(
        "the sign-in to MCP server `{server}` did not finish within {seconds} s; connect again to sign in, or raise `McpOAuth::sign_in_timeout`"
    )]
    SignInTimeout {
        /// The server.
        server: String,
        /// The deadline in seconds.
        seconds: f64,
    },
    /// `allow_tools` names tools the server does not have.
    #[error(
        "MCP server `{server}` has no tool named {missing} (listed in `allow_tools`); its tools are: {available}"
    )]
    UnknownTools {
        /// The server.
        server: String,
        /// The missing names, comma-separated.
        missing: String,
        /// The server's tools, comma-separated.
        available: String,
    },
    /// The shared session was closed ([`McpSession::close`]), so its tools cannot be given to
    /// another agent.
    #[error(
        "the shared session with MCP server `{server}` was closed; connect a new one with `McpSession::connect`"
    )]
    Closed {
        /// The server.
        server: String,
    },
}

/// A handle to a connected MCP server, returned by [`connect_mcp_server`]. Clones share the
/// connection; it lives as long as the registry holds the server's tools.
///
/// ```no_run
/// # use harnessx::ToolRegistry;
/// # use harnessx::mcp::{McpServer, connect_mcp_server};
/// # async fn demo() -> Result<(), harnessx::mcp::McpError> {
/// # let registry = ToolRegistry::new();
/// let memory = connect_mcp_server(&registry, McpServer::stdio("memory", "node", ["server-memory/dist/index.js"])).await?;
/// assert_eq!(memory.original_name("mcp_memory_read_graph").as_deref(), Some("read_graph"));
/// memory.close().await; // stops the server and removes its tools
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpConnection {
    shared: Arc<connection::Shared>,
    /// The registry this connection registered its tools on.
    binding: Arc<connection::Binding>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.shared.server().name())
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// The server's name.
    pub fn server_name(&self) -> &str {
        self.shared.server().name()
    }

    /// The names this connection registered (`mcp_<server>_<tool>`), in the server's order.
    pub fn tool_names(&self) -> Vec<String> {
        self.binding.tool_names()
    }

    /// The server's own name for a registered tool.
    pub fn original_name(&self, registered: &str) -> Option<String> {
        self.binding.original_name(registered)
    }

    /// Whether a live session exists now (a dead server is reconnected on the next call).
    pub async fn is_connected(&self) -> bool {
        self.shared.is_connected().await
    }

    /// The process id of a stdio server while it runs.
    pub async fn process_id(&self) -> Option<u32> {
        self.shared.process_id().await
    }

    /// The end of what a stdio server's current process wrote to stderr (`None` over HTTP or
    /// when it wrote nothing): its latest lines, at most 8 KiB in all and 1 KiB per line, after a
    /// note of how many bytes were not kept. A server cannot grow the client's memory through
    /// stderr, however much it writes.
    pub async fn server_stderr(&self) -> Option<String> {
        self.shared.server_stderr().await
    }

    /// How many `notifications/tools/list_changed` bursts have been handled so far.
    pub fn list_changed_count(&self) -> u64 {
        self.shared.refreshes()
    }

    /// Re-lists the server's tools now and updates the registry; returns the registered names.
    pub async fn refresh_tools(&self) -> Result<Vec<String>, McpError> {
        self.shared.refresh().await?;
        Ok(self.tool_names())
    }

    /// Shuts the connection down, stops a stdio server and removes this server's tools from the
    /// registry. Calls still holding one of its tools get a failed result saying so.
    pub async fn close(&self) {
        self.shared.close().await;
    }
}

/// Connects to `server` within its connect deadline, lists its tools and registers each
/// exposed one on `registry` as `mcp_<server>_<tool>`. The connection is closed with the
/// registry ([`ToolRegistry::close`]).
///
/// Fails, leaving nothing registered and no process running, when the server cannot be started
/// or reached, does not finish the handshake in time, or lacks a tool named in `allow_tools`.
///
/// ```no_run
/// use std::time::Duration;
/// use harnessx::ToolRegistry;
/// use harnessx::mcp::{McpServer, connect_mcp_server};
///
/// # async fn demo() -> Result<(), harnessx::mcp::McpError> {
/// let registry = ToolRegistry::new();
/// let tickets = connect_mcp_server(
///     &registry,
///     McpServer::http("tickets", "http://127.0.0.1:3001/mcp")
///         .bearer_token("token-from-your-secret-store")
///         .connect_timeout(Duration::from_secs(5)),
/// )
/// .await?;
/// println!("{:?}", tickets.tool_names()); // ["mcp_tickets_search", ...]
/// # Ok(()) }
/// ```
pub async fn connect_mcp_server(
    registry: &ToolRegistry,
    server: McpServer,
) -> Result<McpConnection, McpError> {
    validate(&server)?;
    // A session of its own that feeds this one registry: the same code as a shared
    // `McpSession`, with the registry owning the session instead of only using it.
    let shared = connection::Shared::start(server);
    let binding = shared.attach(registry, connection::ToolFilter::default(), false)?;
    shared.connect().await?;
    tracing::info!(server = %shared.server().name(), tools = binding.tool_names().len(), "connected to MCP server");
    let closer = Arc::clone(&shared);
    registry.on_close(move || async move { closer.close().await });
    Ok(McpConnection { shared, binding })
}

/// Refuses a configuration that cannot work whatever the server does: an empty name, a URL
/// that does not parse.
pub(crate) fn validate(server: &McpServer) -> Result<(), McpError> {
    if server.name.trim().is_empty() {
        return Err(McpError::EmptyName);
    }
    if let McpTransport::Http { url, .. } = &server.transport
        && let Err(e) = url::Url::parse(url)
    {
        return Err(McpError::InvalidUrl {
            server: server.name.clone(),
            url: url.clone(),
            reason: e.to_string(),
        });
    }
    Ok(())
}
