//! Serving a [`ToolRegistry`] as an MCP server, over stdio or streamable HTTP.
//!
//! [`McpToolServer`] exposes every tool of a registry (built-in bundles, `#[tool]` functions,
//! even tools of other MCP servers) to any MCP client. Calls go through the same engine an agent
//! uses: the input is validated against the tool's schema, the owner's [`PermissionManager`]
//! decides (an ASK tool without an approval callback is denied, exactly as in an agent run), the
//! tool's time limit and the result cap apply. Every failure — denied, timed out, bad
//! arguments, unknown tool, tool error — comes back as a result with `isError: true` and the
//! engine's message as its text.
//!
//! Tools are listed with their name, description and input schema unchanged, and with MCP
//! annotations taken from their metadata. `readOnlyHint` follows one rule:
//!
//! 1. a tool the owner's manager DENIES is never read-only;
//! 2. otherwise the tool's own `read_only_hint` annotation decides when it sets one;
//! 3. otherwise a tool is read-only exactly when its own permission is ALLOW and its replay
//!    policy is `Safe`.
//!
//! `destructiveHint` (default `true`) and `idempotentHint` (from the annotation, else a replay
//! policy of `Idempotent`) are sent for tools that are not read-only; `title` and
//! `openWorldHint` when the tool sets them. The tool list is read on every `tools/list`, so tools
//! registered later are served too.
//!
//! ```no_run
//! use harnessx::{PermissionLevel, PermissionManager, ToolRegistry};
//! use harnessx::mcp_server::McpToolServer;
//!
//! # async fn demo() -> Result<(), harnessx::mcp_server::McpServeError> {
//! let registry = ToolRegistry::new();
//! // ... register tools or bundles ...
//! let server = McpToolServer::new(registry, PermissionManager::new(PermissionLevel::Allow))
//!     .server_info("my-tools", "1.0.0");
//! let http = server.clone().serve_http("127.0.0.1:0").await?;
//! println!("MCP endpoint: {}", http.url());
//! server.serve_stdio().await?; // until the client closes stdin
//! http.shutdown().await;
//! # Ok(()) }
//! ```

mod checks;
mod handler;
mod http;

use std::sync::Arc;

pub use http::McpHttpServer;

use harnessx_core::permissions::PermissionManager;
use harnessx_core::registry::ToolRegistry;

/// A failure to start or run an MCP server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The HTTP listener could not be opened.
    #[error(
        "could not listen for MCP over HTTP on `{address}`; choose a free port, or port 0 for any free one"
    )]
    Bind {
        /// The address asked for.
        address: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The client did not complete the MCP handshake.
    #[error("the MCP client on {transport} did not complete the handshake: {reason}")]
    Handshake {
        /// `stdio` or the transport's name.
        transport: String,
        /// What went wrong.
        reason: String,
    },
}

/// A registry served as an MCP server. Clones share the registry and the permission manager,
/// so one server can be served over several transports at once.
///
/// ```
/// use harnessx::{PermissionLevel, PermissionManager, ToolRegistry};
/// use harnessx::mcp_server::McpToolServer;
///
/// let server = McpToolServer::new(ToolRegistry::new(), PermissionManager::new(PermissionLevel::Ask))
///     .server_info("files", "0.3.0")
///     .instructions("Tools over the project's files.");
/// assert!(server.tools().is_empty());
/// ```
#[derive(Clone)]
pub struct McpToolServer {
    served: handler::Served,
    /// The browser origins [`serve_http`](Self::serve_http) answers.
    allowed_origins: Vec<String>,
    /// The bearer keys [`serve_http`](Self::serve_http) requires (none: no authentication).
    api_keys: Vec<String>,
}

/// The origins a streamable HTTP server answers by default: pages served from this machine.
pub const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

impl Clone for handler::Served {
    fn clone(&self) -> Self {
        Self {
            registry: self.registry.clone(),
            permissions: self.permissions.clone(),
            name: self.name.clone(),
            version: self.version.clone(),
            instructions: self.instructions.clone(),
            denied_advice: self.denied_advice.clone(),
        }
    }
}

impl std::fmt::Debug for McpToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolServer")
            .field("name", &self.served.name)
            .field("version", &self.served.version)
            .field("tools", &self.served.registry.list_tools())
            .finish_non_exhaustive()
    }
}

impl McpToolServer {
    /// Serves `registry`, checking every call with `permissions` (the owner's manager: its
    /// default, overrides, session grants and approval callback apply as in an agent run).
    /// The server introduces itself as `harnessx` with this crate's version until
    /// [`server_info`](Self::server_info) says otherwise.
    pub fn new(registry: ToolRegistry, permissions: PermissionManager) -> Self {
        Self {
            served: handler::Served {
                registry,
                permissions,
                name: "harnessx".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                instructions: None,
                denied_advice: None,
            },
            allowed_origins: LOOPBACK_ORIGINS.map(str::to_owned).to_vec(),
            api_keys: Vec::new(),
        }
    }

    /// The name and version sent to clients in the `initialize` answer.
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.served.name = name.into();
        self.served.version = version.into();
        self
    }

    /// The browser origins [`serve_http`](Self::serve_http) answers, replacing the default
    /// ([`LOOPBACK_ORIGINS`]): a request that carries an `Origin` header not in the list gets
    /// 403, as the MCP transport requires against DNS rebinding; a request without one (a
    /// program, not a page) is served. Each entry is `scheme://host` with a port, or `:*` for any
    /// port (`https://app.example.com:443`, `http://localhost:*`).
    ///
    /// ```
    /// use harnessx::{PermissionManager, ToolRegistry};
    /// use harnessx::mcp_server::McpToolServer;
    /// let server = McpToolServer::new(ToolRegistry::new(), PermissionManager::default())
    ///     .allow_origins(["https://tools.example.com:443"]);
    /// # let _ = server;
    /// ```
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Requires every request to [`serve_http`](Self::serve_http) to carry
    /// `Authorization: Bearer <key>` with one of `keys`; others get 401. Without keys the
    /// HTTP transport has no authentication: anyone who reaches the port can call the tools.
    ///
    /// ```
    /// use harnessx::{PermissionManager, ToolRegistry};
    /// use harnessx::mcp_server::McpToolServer;
    /// let server = McpToolServer::new(ToolRegistry::new(), PermissionManager::default())
    ///     .require_api_keys(["a-long-random-key-for-the-client"]);
    /// # let _ = server;
    /// ```
    pub fn require_api_keys(mut self, keys: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.api_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Instructions sent to clients in the `initialize` answer.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.served.instructions = Some(text.into());
        self
    }

    /// Advice appended to every permission denial, given the denied tool's name: how the
    /// server's owner grants it (a flag, a setting). Without it a denial reads
    /// `Permission denied`, as in an agent run.
    ///
    /// ```
    /// use harnessx::{PermissionLevel, PermissionManager, ToolRegistry};
    /// use harnessx::mcp_server::McpToolServer;
    ///
    /// let server = McpToolServer::new(ToolRegistry::new(), PermissionManager::new(PermissionLevel::Ask))
    ///     .denied_advice(|tool| format!("Restart the server with `--grant {tool}` to allow it"));
    /// # let _ = server;
    /// ```
    pub fn denied_advice(
        mut self,
        advice: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> Self {
        self.served.denied_advice = Some(Arc::new(advice));
        self
    }

    /// The served registry.
    pub fn registry(&self) -> &ToolRegistry {
        &self.served.registry
    }

    /// The tools as clients see them in `tools/list`, as JSON (name, description,
    /// `inputSchema`, annotations).
    pub fn tools(&self) -> Vec<serde_json::Value> {
        self.handler()
            .tools()
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect()
    }

    fn handler(&self) -> handler::Handler {
        handler::Handler {
            served: Arc::new(self.served.clone()),
        }
    }

    /// Serves one client over this process's stdin and stdout until the client closes the
    /// connection. Nothing else may write to stdout meanwhile (log to stderr).
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout(), "stdio")
            .await
    }

    /// Serves one client over any byte stream pair (a pipe, a socket, an in-memory duplex)
    /// until the client closes it. `transport` names it in errors.
    pub async fn serve_io<R, W>(
        self,
        read: R,
        write: W,
        transport: &str,
    ) -> Result<(), McpServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        use rmcp::ServiceExt;
        // A relay in front of the protocol layer answers what it would not (a line that is not
        // JSON, a malformed `tools/call`) and passes every other line through; one writer puts
        // both sides' answers on `write`, a whole line at a time.
        let (to_protocol, protocol_in) = tokio::io::duplex(64 * 1024);
        let (protocol_out, from_protocol) = tokio::io::duplex(64 * 1024);
        let (lines, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let mut write = write;
            while let Some(line) = outgoing.recv().await {
                if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                    break;
                }
            }
        });
        let answers = lines.clone();
        let relay_out = tokio::spawn(async move {
            use tokio::io::AsyncBufReadExt;
            let mut from_protocol = tokio::io::BufReader::new(from_protocol);
            loop {
                let mut line = Vec::new();
                match from_protocol.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if lines.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let relay_in = tokio::spawn(relay_in(read, to_protocol, answers));
        let running = self
            .handler()
            .serve((protocol_in, protocol_out))
            .await
            .map_err(|e| McpServeError::Handshake {
                transport: transport.to_owned(),
                reason: e.to_string(),
            });
        let outcome = match running {
            Err(e) => Err(e),
            Ok(running) => match running.waiting().await {
                // A panic in the session task is the server's own bug: pass it on unchanged.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                _ => Ok(()),
            },
        };
        relay_in.abort();
        let _ = relay_out.await;
        let _ = writer.await;
        outcome
    }

    /// Serves any number of clients over streamable HTTP at `http://<address>/mcp` until the
    /// returned handle is shut down or dropped. Port 0 picks a free port (see
    /// [`McpHttpServer::url`]). Against DNS rebinding, only requests whose `Host` is `localhost`,
    /// `127.0.0.1` or `::1` are answered (put a reverse proxy in front to serve others), and a
    /// request from a browser page only when its `Origin` is allowed (see
    /// [`allow_origins`](Self::allow_origins)); others get 403.
    pub async fn serve_http(self, address: &str) -> Result<McpHttpServer, McpServeError> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| McpServeError::Bind {
                address: address.to_owned(),
                source,
            })?;
        http::serve(
            self.handler(),
            listener,
            &self.allowed_origins,
            self.api_keys,
        )
        .map_err(|source| McpServeError::Bind {
            address: address.to_owned(),
            source,
        })
    }
}

/// Reads the client's lines: each one [`checks::check`] answers goes to `answers`, every other
/// one to the protocol layer; the protocol layer's input closes when the client's does.
async fn relay_in<R>(
    read: R,
    mut to_protocol: tokio::io::DuplexStream,
    answers: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
) where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
{
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut read = tokio::io::BufReader::new(read);
    loop {
        let mut line = Vec::new();
        match read.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let message = line.trim_ascii();
        if message.is_empty() {
            continue;
        }
        match checks::check(message) {
            checks::Verdict::Forward => {
                if to_protocol.write_all(&line).await.is_err() {
                    break;
                }
            }
            checks::Verdict::Answer(answer) => {
                let mut out = serde_json::to_vec(&answer).unwrap_or_default();
                out.push(b'\n');
                if answers.send(out).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to_protocol.shutdown().await;
}
