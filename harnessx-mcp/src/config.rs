//! What to connect to: [`McpServer`], a server's transport, tool filter and deadlines.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How long connecting (start, handshake, first tool list) may take by default: 30 seconds.
pub const DEFAULT_CONNECT_TIMEOUT_SECONDS: f64 = 30.0;

/// The time limit of every MCP tool by default: 300 seconds.
pub const MCP_TOOL_TIMEOUT_SECONDS: f64 = 300.0;

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set on top of `PATH` and `HOME`; nothing else is inherited.
        env: BTreeMap<String, String>,
        /// The working directory (the caller's when `None`).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint URL (for example `http://127.0.0.1:3001/mcp`).
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// A bearer token sent as `Authorization: Bearer <token>`.
        bearer_token: Option<String>,
    },
}

/// An MCP server to connect to: its name (the `<server>` in `mcp_<server>_<tool>`), its
/// transport, which of its tools to expose, and its deadlines.
///
/// ```
/// use harnessx::mcp::McpServer;
/// use std::time::Duration;
///
/// let server = McpServer::stdio("files", "node", ["server.js", "/srv/data"])
///     .env("LOG_LEVEL", "warn")
///     .allow_tools(["read_text_file", "list_directory"])
///     .connect_timeout(Duration::from_secs(10));
/// assert_eq!(server.name(), "files");
///
/// let remote = McpServer::http("tickets", "https://mcp.example.com/mcp")
///     .header("X-Team", "support")
///     .deny_tools(["delete_ticket"]);
/// assert_eq!(remote.name(), "tickets");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    pub(crate) name: String,
    pub(crate) transport: McpTransport,
    pub(crate) allow: Option<Vec<String>>,
    pub(crate) deny: Vec<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) call_timeout: Duration,
    #[cfg(feature = "oauth")]
    pub(crate) oauth: Option<super::McpOAuth>,
}

impl McpServer {
    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            allow: None,
            deny: Vec::new(),
            connect_timeout: Duration::from_secs_f64(DEFAULT_CONNECT_TIMEOUT_SECONDS),
            call_timeout: Duration::from_secs_f64(MCP_TOOL_TIMEOUT_SECONDS),
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }

    /// A server started as a child process. The child gets a cleared environment with only
    /// `PATH` and `HOME` from this process, plus what [`env`](Self::env) adds, so secrets in the
    /// agent's environment never reach it.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::new(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server reached over streamable HTTP at `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer_token: None,
            },
        )
    }

    /// Sets an environment variable for a stdio server (ignored for HTTP servers).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory of a stdio server (ignored for HTTP servers).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every request to an HTTP server (ignored for stdio servers).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` to an HTTP server (ignored for stdio servers).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let McpTransport::Http { bearer_token, .. } = &mut self.transport {
            *bearer_token = Some(token.into());
        }
        self
    }

    /// Exposes only these tools (by the server's own names). Connecting fails if one of them
    /// does not exist, so a misspelling never silently hides a tool.
    pub fn allow_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allow = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Never exposes these tools (by the server's own names).
    pub fn deny_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.deny.extend(tools.into_iter().map(Into::into));
        self
    }

    /// The deadline for starting the server, the handshake and listing its tools
    /// (default 30 s). Reconnecting uses it too.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The time limit of each of the server's tools (default 300 s).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Signs in to an HTTP server that needs OAuth 2.1, as [`McpOAuth`](super::McpOAuth)
    /// describes (ignored for stdio servers). A [`bearer_token`](Self::bearer_token) set as
    /// well is not sent.
    ///
    /// ```
    /// use harnessx::mcp::{McpOAuth, McpServer, SignInFn, SignInRequest};
    ///
    /// let sign_in = SignInFn(|request: SignInRequest| async move {
    ///     Err::<String, _>(format!("open {} to sign in", request.url))
    /// });
    /// let server = McpServer::http("tickets", "https://mcp.example.com/mcp")
    ///     .oauth(McpOAuth::new("http://127.0.0.1:8765/callback", sign_in));
    /// assert!(server.oauth_config().is_some());
    /// ```
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: super::McpOAuth) -> Self {
        if matches!(self.transport, McpTransport::Http { .. }) {
            self.oauth = Some(oauth);
        }
        self
    }

    /// The sign-in settings given with [`oauth`](Self::oauth).
    #[cfg(feature = "oauth")]
    pub fn oauth_config(&self) -> Option<&super::McpOAuth> {
        self.oauth.as_ref()
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the server is reached.
    pub fn transport(&self) -> &McpTransport {
        &self.transport
    }

    /// Whether the filter lets a tool through.
    pub(crate) fn exposes(&self, tool: &str) -> bool {
        let allowed = self
            .allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == tool));
        allowed && !self.deny.iter().any(|d| d == tool)
    }

    /// A short description of where the server is, for error messages.
    pub(crate) fn location(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, .. } => format!("command `{command}`"),
            McpTransport::Http { url, .. } => format!("URL {url}"),
        }
    }
}
