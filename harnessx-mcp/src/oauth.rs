//! MCP sign-in: OAuth 2.1 for streamable HTTP servers, as the MCP authorization spec describes.
//!
//! A server configured with [`McpServer::oauth`](super::McpServer::oauth) is connected with the
//! tokens its [`TokenStore`] holds; when there are none, or the server refuses them and they
//! cannot be refreshed, harnessx signs in:
//!
//! 1. the server's `401` names its protected resource metadata (RFC 9728,
//!    `WWW-Authenticate: Bearer resource_metadata=...`), which names its authorization server,
//!    whose metadata (RFC 8414 or OpenID Connect discovery) gives the endpoints;
//! 2. harnessx registers itself as a client (RFC 7591) when the authorization server offers
//!    registration, else uses the client id given with [`McpOAuth::client_id`];
//! 3. it builds the sign-in address with a PKCE S256 challenge, a fresh `state` and the
//!    server's URL as the `resource` (RFC 8707), and hands it to the application's [`SignIn`]
//!    callback, which sends the person there and returns the address the browser was
//!    redirected to;
//! 4. the redirect's `state` must be the one sent (anything else is refused), its `code` is
//!    exchanged for tokens, which are saved in the store;
//! 5. later connections reuse the stored tokens; an expired token (or one the server answers
//!    with `401`) is refreshed with the refresh token, without a new sign-in.
//!
//! The protocol work (discovery, registration, PKCE, exchange, refresh) is rmcp's `auth`
//! implementation; this module adds the token stores, the sign-in callback and errors that name
//! the server and say what to do.
//!
//! ```no_run
//! use harnessx::ToolRegistry;
//! use harnessx::mcp::{FileTokenStore, McpOAuth, McpServer, SignInFn, SignInRequest, connect_mcp_server};
//!
//! # async fn demo() -> Result<(), harnessx::mcp::McpError> {
//! let sign_in = SignInFn(|request: SignInRequest| async move {
//!     // Send the person to `request.url`; the authorization server sends the browser back to
//!     // `request.redirect_uri` with `code` and `state`. Here the person pastes that address;
//!     // an application can instead listen on the redirect URI's loopback port.
//!     println!("Sign in to {} at {}, then paste the address you land on:", request.server, request.url);
//!     let mut redirect = String::new();
//!     std::io::stdin().read_line(&mut redirect).map_err(|e| e.to_string())?;
//!     Ok(redirect.trim().to_owned())
//! });
//! let oauth = McpOAuth::new("http://127.0.0.1:8765/callback", sign_in)
//!     .token_store(FileTokenStore::new("/home/me/.config/my-app/mcp-tokens.json"));
//! let registry = ToolRegistry::new();
//! connect_mcp_server(
//!     &registry,
//!     McpServer::http("tickets", "https://mcp.example.com/mcp").oauth(oauth),
//! )
//! .await?;
//! # Ok(()) }
//! ```

mod flow;
mod loopback;
mod store;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use flow::connect;
pub use loopback::LoopbackRedirect;
pub use store::{FileTokenStore, MemoryTokenStore, StoredTokens, TokenStore, TokenStoreError};

use harnessx_core::tool::BoxFuture;

/// How long the person has to sign in by default: 300 seconds.
pub const DEFAULT_SIGN_IN_TIMEOUT_SECONDS: f64 = 300.0;

/// What the application needs to send the person to sign in, given to its [`SignIn`] callback.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SignInRequest {
    /// The MCP server's name (as given to [`McpServer::http`](super::McpServer::http)).
    pub server: String,
    /// The MCP server's URL: the resource the tokens are for.
    pub resource: String,
    /// The authorization server's sign-in address to send the person to (with the PKCE
    /// challenge, `state` and `resource` in its query).
    pub url: String,
    /// Where the authorization server will send the browser back to, with `code` and `state`
    /// (the redirect URI given to [`McpOAuth::new`]).
    pub redirect_uri: String,
}

/// The application's part of signing in: send the person to [`SignInRequest::url`] (open a
/// browser, show a link) and return the full address the browser was redirected to — the
/// redirect URI with `code` and `state` (or `error`) in its query. An `Err` says why the person
/// could not sign in (the window was closed, nobody answered); it ends the connect with an
/// error naming the server.
///
/// [`SignInFn`] makes one from an async closure.
pub trait SignIn: Send + Sync + 'static {
    /// Runs one sign-in.
    fn sign_in(&self, request: SignInRequest) -> BoxFuture<'static, Result<String, String>>;
}

/// A [`SignIn`] from an async closure.
///
/// ```
/// use harnessx::mcp::{McpOAuth, SignInFn, SignInRequest};
///
/// let oauth = McpOAuth::new(
///     "http://127.0.0.1:8765/callback",
///     SignInFn(|request: SignInRequest| async move {
///         Err::<String, _>(format!("no browser here; open {} yourself", request.url))
///     }),
/// );
/// assert_eq!(oauth.redirect_uri(), "http://127.0.0.1:8765/callback");
/// ```
pub struct SignInFn<F>(pub F);

impl<F, Fut> SignIn for SignInFn<F>
where
    F: Fn(SignInRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, String>> + Send + 'static,
{
    fn sign_in(&self, request: SignInRequest) -> BoxFuture<'static, Result<String, String>> {
        Box::pin((self.0)(request))
    }
}

/// How to sign in to an MCP server that needs OAuth 2.1: where the browser comes back to, the
/// application's [`SignIn`] callback, where tokens are kept, and the client's identity.
///
/// Tokens are kept in a [`MemoryTokenStore`] (for this process only) unless
/// [`token_store`](Self::token_store) says otherwise; clones share the store, so a server
/// reconnected with a clone of the same `McpOAuth` does not ask the person again. Clones also
/// sign in to one server one at a time: connects of the same server at once (the runs of a busy
/// agent, say) ask the person once, and the others use the tokens that sign-in gave.
///
/// ```
/// use std::time::Duration;
/// use harnessx::mcp::{McpOAuth, McpServer, MemoryTokenStore, SignInFn, SignInRequest};
///
/// let oauth = McpOAuth::new(
///     "http://127.0.0.1:8765/callback",
///     SignInFn(|request: SignInRequest| async move { Err::<String, _>(request.url) }),
/// )
/// .token_store(MemoryTokenStore::new())
/// .client_id("my-registered-app") // when the authorization server has no registration
/// .scopes(["tickets:read"])
/// .client_name("My Agent")
/// .sign_in_timeout(Duration::from_secs(120));
/// let server = McpServer::http("tickets", "https://mcp.example.com/mcp").oauth(oauth);
/// assert!(server.oauth_config().is_some());
/// ```
#[derive(Clone)]
pub struct McpOAuth {
    pub(crate) redirect_uri: String,
    pub(crate) sign_in: Arc<dyn SignIn>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) client_name: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) sign_in_timeout: Duration,
    pub(crate) allow_private_addresses: bool,
    /// One lock per server URL, shared by clones: connects of the same server sign in one at
    /// a time, and a connect that waited uses the tokens the one before it got.
    pub(crate) sign_ins: Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl McpOAuth {
    /// Sign-in that brings the browser back to `redirect_uri` (for example a loopback address
    /// the application listens on, `http://127.0.0.1:<port>/callback`) and sends the person to
    /// sign in through `sign_in`.
    pub fn new(redirect_uri: impl Into<String>, sign_in: impl SignIn) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            sign_in: Arc::new(sign_in),
            store: Arc::new(MemoryTokenStore::new()),
            client_id: None,
            client_secret: None,
            client_name: "harnessx".to_owned(),
            scopes: Vec::new(),
            sign_in_timeout: Duration::from_secs_f64(DEFAULT_SIGN_IN_TIMEOUT_SECONDS),
            allow_private_addresses: false,
            sign_ins: Arc::default(),
        }
    }

    /// The lock that keeps sign-ins to the server at `url` one at a time.
    pub(crate) fn sign_in_lock(&self, url: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.sign_ins.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(locks.entry(url.to_owned()).or_default())
    }

    /// Where tokens are kept between connections (default: a [`MemoryTokenStore`]). Entries
    /// are keyed by the server's URL, so one store can serve many servers.
    pub fn token_store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// A client id registered with the authorization server beforehand. It is used instead of
    /// dynamic client registration; without it, the authorization server must offer
    /// registration.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The secret of the [`client_id`](Self::client_id), for a confidential client.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The name harnessx registers under (default `harnessx`); authorization servers show it
    /// on the sign-in page.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The scopes to ask for. Without them, the server's challenge and metadata decide.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// How long a sign-in may take, from discovery to the token (default 300 s). The connect
    /// deadline of the server applies to the connection attempts around it, not to the person.
    pub fn sign_in_timeout(mut self, timeout: Duration) -> Self {
        self.sign_in_timeout = timeout;
        self
    }

    /// Lets the metadata name an authorization server at a private address (such as `10.x` or
    /// `192.168.x`). Loopback servers are allowed when the MCP server itself is on loopback;
    /// link-local and other reserved addresses are always refused.
    pub fn allow_private_addresses(mut self) -> Self {
        self.allow_private_addresses = true;
        self
    }

    /// The redirect URI.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// The token store.
    pub fn store(&self) -> &Arc<dyn TokenStore> {
        &self.store
    }
}

impl std::fmt::Debug for McpOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .field("sign_in_timeout", &self.sign_in_timeout)
            .field("allow_private_addresses", &self.allow_private_addresses)
            .finish_non_exhaustive()
    }
}

/// Equal when the settings are equal and the callback and store are the same objects.
impl PartialEq for McpOAuth {
    fn eq(&self, other: &Self) -> bool {
        self.redirect_uri == other.redirect_uri
            && Arc::ptr_eq(&self.sign_in, &other.sign_in)
            && Arc::ptr_eq(&self.store, &other.store)
            && self.client_id == other.client_id
            && self.client_secret == other.client_secret
            && self.client_name == other.client_name
            && self.scopes == other.scopes
            && self.sign_in_timeout == other.sign_in_timeout
            && self.allow_private_addresses == other.allow_private_addresses
    }
}
