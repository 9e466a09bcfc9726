//! One live session with an MCP server, shared by many agents: [`McpSession`] connects once,
//! and each agent takes the server's tools through an [`McpCapability`] whose calls all go to
//! that one session.
//!
//! Why: a platform that builds many agents (one per stored agent version, say) over the same
//! connector would otherwise start one server process, and hold one session, per agent, and pay
//! the start and the handshake each time an agent is built. A shared session is connected once
//! per process; giving an agent its tools is then only registering them.
//!
//! The session keeps every registry it feeds in step with the server: a
//! `notifications/tools/list_changed` re-lists the tools once and updates each registry; a dead
//! stdio server is restarted once, by the first call that finds it dead, for every registry; a
//! registry that was closed or dropped is let go (the session holds registries weakly). Closing
//! one agent's registry takes the tools off that registry only; [`McpSession::close`] ends the
//! session, stops the server and takes the tools off every registry.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::connection::{Shared, ToolFilter};
use super::{McpError, McpServer, convert, validate};
use harnessx_core::agent::{Capability, CapabilityError};
use harnessx_core::registry::ToolRegistry;
use harnessx_core::tool::{PermissionLevel, ToolAnnotations};

/// One live session with an MCP server, shared by every agent given its
/// [`capability`](Self::capability). Clones share the session (an `Arc` inside).
///
/// [`connect`](Self::connect) starts the server (or reaches it over HTTP) and lists its tools;
/// each [`McpCapability`] then registers those tools on one agent's registry as
/// `mcp_<server>_<tool>`, and every call, from every agent, goes to this one session. What
/// happens to the session happens once, for all of them:
///
/// - a `notifications/tools/list_changed` re-lists the tools once and updates every registry
///   (each through its own filter);
/// - a dead stdio server is restarted by the first call that finds it dead, and the other calls
///   waiting meanwhile use the session it made; when the restart fails they share its failure,
///   and after two failures in a row calls within 1 s, 2 s, 4 s … (at most 30 s) of the last
///   attempt fail at once instead of starting the server again;
/// - registries are held weakly: one that is closed has its tools taken off and is let go, one
///   that is dropped falls out at the next update; neither affects the session.
///
/// The session ends with [`close`](Self::close), or when the last clone, and the last registry
/// holding one of its tools, are dropped.
///
/// ```no_run
/// use harnessx::Agent;
/// use harnessx::mcp::{McpServer, McpSession};
/// use harnessx::model::TestModel;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// // Once per process: one server process, one session.
/// let files = McpSession::connect(McpServer::stdio("files", "node", ["server-filesystem/dist/index.js", "/srv"])).await?;
///
/// // Per agent: no new process, no handshake; the tools are registered at `build`.
/// let reader = Agent::builder()
///     .model(TestModel::new().then_reply("done"))
///     .capability(files.capability().allow_tools(["read_text_file"]))
///     .build()?;
/// let writer = Agent::builder()
///     .model(TestModel::new().then_reply("done"))
///     .capability(files.capability())
///     .build()?;
/// assert!(reader.tools().contains("mcp_files_read_text_file"));
///
/// reader.close().await; // takes the tools off `reader` only; `writer` keeps working
/// files.close().await; // stops the server
/// # drop(writer); Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpSession {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession")
            .field("server", &self.server_name())
            .field("tools", &self.tool_names())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl McpSession {
    /// Connects to `server` within its connect deadline and lists its tools, registering them
    /// nowhere yet.
    ///
    /// Fails, leaving no process running, when the server cannot be started or reached, does
    /// not finish the handshake in time, or lacks a tool named in
    /// [`McpServer::allow_tools`]; and at once when the name is empty or the URL does not parse.
    ///
    /// ```no_run
    /// use harnessx::mcp::{McpServer, McpSession};
    ///
    /// # async fn demo() -> Result<(), harnessx::mcp::McpError> {
    /// let tickets = McpSession::connect(
    ///     McpServer::http("tickets", "http://127.0.0.1:3001/mcp").bearer_token("secret"),
    /// )
    /// .await?;
    /// println!("{:?}", tickets.tool_names()); // ["search", "create", ...]
    /// # Ok(()) }
    /// ```
    pub async fn connect(server: McpServer) -> Result<Self, McpError> {
        validate(&server)?;
        let shared = Shared::start(server);
        shared.connect().await?;
        tracing::info!(
            server = %shared.server().name(),
            tools = shared.tools().len(),
            "connected a shared MCP session"
        );
        Ok(Self { shared })
    }

    /// The server's name.
    pub fn server_name(&self) -> &str {
        self.shared.server().name()
    }

    /// The server's configuration.
    pub fn server(&self) -> &McpServer {
        self.shared.server()
    }

    /// The server's own names of the tools this session exposes (after the server's
    /// [`allow_tools`](McpServer::allow_tools) and [`deny_tools`](McpServer::deny_tools), and
    /// without tools that need the MCP tasks API), from its latest listing, in the server's
    /// order.
    pub fn tool_names(&self) -> Vec<String> {
        self.shared
            .tools()
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// The tools this session exposes, as [`tool_names`](Self::tool_names) lists them, with
    /// what a registry is given for each.
    ///
    /// ```no_run
    /// # use harnessx::mcp::{McpServer, McpSession};
    /// # async fn demo(session: McpSession) {
    /// for tool in session.tools() {
    ///     println!("{}: {} ({:?})", tool.name, tool.description, tool.permission);
    /// }
    /// # }
    /// ```
    pub fn tools(&self) -> Vec<McpTool> {
        let server = self.server_name();
        self.shared
            .tools()
            .iter()
            .map(|tool| {
                let annotations = convert::annotations(tool);
                McpTool {
                    name: tool.name.to_string(),
                    description: convert::description(tool, server),
                    input_schema: convert::input_schema(tool),
                    permission: convert::permission(&annotations),
                    annotations,
                }
            })
            .collect()
    }

    /// A [`Capability`] that registers this session's tools on an agent's registry (all of
    /// them; narrow it with [`McpCapability::allow_tools`] and
    /// [`McpCapability::deny_tools`]). Make one per agent, or share one: each registry it is
    /// registered on is fed separately.
    pub fn capability(&self) -> McpCapability {
        McpCapability {
            session: self.clone(),
            filter: ToolFilter::default(),
        }
    }

    /// How many registries that still exist hold this session's tools.
    pub fn registry_count(&self) -> usize {
        self.shared.registry_count()
    }

    /// Whether a live session exists now (a dead server is reconnected on the next call).
    pub async fn is_connected(&self) -> bool {
        self.shared.is_connected().await
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// The process id of a stdio server while it runs.
    pub async fn process_id(&self) -> Option<u32> {
        self.shared.process_id().await
    }

    /// The end of what a stdio server's current process wrote to stderr, as
    /// [`McpConnection::server_stderr`](super::McpConnection::server_stderr) describes.
    pub async fn server_stderr(&self) -> Option<String> {
        self.shared.server_stderr().await
    }

    /// How many `notifications/tools/list_changed` bursts have been handled so far.
    pub fn list_changed_count(&self) -> u64 {
        self.shared.refreshes()
    }

    /// Re-lists the server's tools now (reconnecting a dead server) and updates every registry
    /// the session feeds; returns [`tool_names`](Self::tool_names).
    pub async fn refresh_tools(&self) -> Result<Vec<String>, McpError> {
        self.shared.refresh().await?;
        Ok(self.tool_names())
    }

    /// Ends the session: stops a stdio server and removes the session's tools from every
    /// registry. Calls still holding one of its tools get a failed result saying so, and
    /// registering its capability afterwards fails with [`McpError::Closed`].
    pub async fn close(&self) {
        self.shared.close().await;
    }
}

/// One of the tools an [`McpSession`] exposes, as [`McpSession::tools`] lists it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpTool {
    /// The server's own name (registered as `mcp_<server>_<name>`).
    pub name: String,
    /// The description the model reads.
    pub description: String,
    /// The input schema, with an object root.
    pub input_schema: Value,
    /// The server's annotations, with the MCP defaults for missing hints.
    pub annotations: ToolAnnotations,
    /// ALLOW for a tool the server marks read-only, ASK for every other.
    pub permission: PermissionLevel,
}

/// An agent's share of an [`McpSession`], made with [`McpSession::capability`]: given to
/// [`AgentBuilder::capability`](harnessx_core::AgentBuilder::capability), it registers the
/// session's tools on the agent's registry at `build`, without connecting anything.
///
/// Closing the registry ([`Agent::close`](harnessx_core::Agent::close)) takes the tools off it
/// and leaves the session running for the other agents.
///
/// ```no_run
/// use harnessx::ToolRegistry;
/// use harnessx::agent::{Capability, CapabilityError};
/// use harnessx::mcp::{McpServer, McpSession};
///
/// # async fn demo() -> Result<(), CapabilityError> {
/// let memory = McpSession::connect(McpServer::stdio("memory", "node", ["server-memory/dist/index.js"])).await?;
/// let first = ToolRegistry::new();
/// let second = ToolRegistry::new();
/// memory.capability().allow_tools(["read_graph"]).register(&first)?;
/// memory.capability().register(&second)?;
/// assert_eq!(first.list_tools(), ["mcp_memory_read_graph"]);
/// first.close().await; // `second` still has its tools, and the server still runs
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct McpCapability {
    session: McpSession,
    filter: ToolFilter,
}

impl McpCapability {
    /// Registers only these tools (by the server's own names). Registering fails with
    /// [`McpError::UnknownTools`] if the session does not expose one of them, so a misspelling
    /// never silently hides a tool.
    pub fn allow_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.filter.allow = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Never registers these tools (by the server's own names).
    pub fn deny_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.filter.deny.extend(tools.into_iter().map(Into::into));
        self
    }

    /// The session the tools come from.
    pub fn session(&self) -> &McpSession {
        &self.session
    }
}

/// Registers the session's tools (those the filter lets through) on the agent's registry at
/// `build`, as `mcp_<server>_<tool>`, and takes them off again when the registry is closed.
/// Fails `build` with [`McpError::UnknownTools`] for an allowed tool the session does not
/// expose, and with [`McpError::Closed`] once the session is closed.
impl Capability for McpCapability {
    fn name(&self) -> Cow<'_, str> {
        format!(
            "MCP server `{}` (shared session)",
            self.session.server_name()
        )
        .into()
    }

    fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
        let shared = &self.session.shared;
        let binding = shared.attach(registry, self.filter.clone(), true)?;
        let session = Arc::downgrade(shared);
        registry.on_close(move || async move {
            if let Some(session) = session.upgrade() {
                session.detach(&binding);
            }
        });
        Ok(())
    }
}
