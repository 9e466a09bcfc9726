//! A live session with one MCP server, and the registries its tools are registered into:
//! connecting under a deadline, reconnecting a dead server (with a backoff once restarts keep
//! failing), calling tools under a time limit, and keeping every registry's tools in step with
//! the server's tool list.
//!
//! One [`Shared`] is one session. It feeds any number of registries, each a [`Binding`] with
//! its own tool filter and its own exposed names; a registry holds only a weak reference to
//! nothing here (its tools' handlers hold the session), and the session holds each registry
//! weakly, so a dropped registry simply falls out at the next sync.
//! [`connect_mcp_server`](super::connect_mcp_server) is a session with one binding that the
//! registry owns; [`McpSession`](super::McpSession) is one that many registries share.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation, Tool};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{MutexGuard, mpsc, watch};

use super::config::{McpServer, McpTransport};
use super::stdio::ServerProcess;
use super::taps::{MAX_MESSAGE_BYTES, OversizedReply, TaskRequired};
use super::{McpError, convert, error_chain, names, stdio};
use harnessx_core::context::ToolContext;
use harnessx_core::error::RegistryError;
use harnessx_core::output::{ToolError, ToolOutput};
use harnessx_core::registry::{ToolRegistry, WeakToolRegistry};
use harnessx_core::tool::{BoxFuture, ToolDefinition, ToolHandler, ToolOptions, ToolRetry};

/// The handler of one server tool: the shared session and the tool's name on the server.
struct McpToolHandler {
    target: Arc<(Arc<Shared>, String)>,
}

impl ToolHandler for McpToolHandler {
    fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let target = Arc::clone(&self.target);
        let exposed = ctx.tool_name().to_owned();
        Box::pin(async move {
            let (shared, original) = &*target;
            shared.call(original, &exposed, args).await
        })
    }
}

/// How long a closing server may take to exit after its input closes, before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The client side of the protocol: identifies harnessx and turns
/// `notifications/tools/list_changed` into a refresh of the registered tools.
#[derive(Clone)]
struct Client {
    list_changed: mpsc::UnboundedSender<()>,
}

/// How much longer than its time limit a directly called MCP handler waits for the server, so
/// that through the engine the engine's own limit always fires first.
const DIRECT_CALL_GRACE: Duration = Duration::from_secs(1);

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.client_info = Implementation::new("harnessx", env!("CARGO_PKG_VERSION"));
        config
    }
}

/// One connected session: the protocol service and, for stdio, the server process.
struct Session {
    service: RunningService<RoleClient, Client>,
    process: Option<ServerProcess>,
    generation: u64,
}

impl Session {
    fn alive(&self) -> bool {
        !self.service.is_closed()
            && !self.service.peer().is_transport_closed()
            && self.process.as_ref().is_none_or(|p| !p.has_exited())
    }

    /// What a call needs of this session, for [`Shared::live`].
    fn live(&self) -> Live {
        Live {
            peer: self.service.peer().clone(),
            generation: self.generation,
            exited: self.process.as_ref().map(ServerProcess::exit_watch),
        }
    }

    async fn shutdown(mut self) {
        let _ = self.service.close_with_timeout(EXIT_GRACE).await;
        if let Some(process) = self.process.take() {
            process.stop(EXIT_GRACE).await;
        }
    }
}

/// What a call needs of the current session — its peer and whether it still lives — readable
/// without the session's async lock, which a call would otherwise take (and hand on) each time.
/// It is replaced whenever the session is ([`Shared::install`], [`Shared::take_session`]). A session that it
/// reports alive may be closing (the service cancelled, its loop not yet ended): a call sent
/// then fails as a broken connection, as one sent a moment earlier would. Calls share it
/// behind an `Arc`: a clone of rmcp's `Peer` takes (and its drop gives back) nine reference
/// counts and its channel's sender count — memory rmcp's service task works in too — where a
/// call of rmcp's own client clones none.
struct Live {
    peer: Peer<RoleClient>,
    generation: u64,
    exited: Option<watch::Receiver<bool>>,
}

impl Live {
    fn alive(&self) -> bool {
        !self.peer.is_transport_closed() && self.exited.as_ref().is_none_or(|e| !*e.borrow())
    }
}

/// Which of a session's tools a registry takes, by the server's own names: all of them, only
/// those allowed, never those denied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ToolFilter {
    pub(crate) allow: Option<Vec<String>>,
    pub(crate) deny: Vec<String>,
}

impl ToolFilter {
    fn exposes(&self, tool: &str) -> bool {
        let allowed = self
            .allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == tool));
        allowed && !self.deny.iter().any(|d| d == tool)
    }
}

/// One registry the session's tools are registered into: the registry (weakly), which tools it
/// takes, and the names they have there.
pub(crate) struct Binding {
    registry: WeakToolRegistry,
    filter: ToolFilter,
    /// Exposed name → the server's own name, for the tools registered on this registry.
    names: Mutex<IndexMap<String, String>>,
}

impl Binding {
    fn names(&self) -> std::sync::MutexGuard<'_, IndexMap<String, String>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The names registered on this registry, in the server's order.
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.names().keys().cloned().collect()
    }

    /// The server's own name for a tool registered on this registry.
    pub(crate) fn original_name(&self, exposed: &str) -> Option<String> {
        self.names().get(exposed).cloned()
    }

    /// Takes this registry's tools off it and forgets them.
    fn unregister_all(&self) {
        let names = std::mem::take(&mut *self.names());
        if let Some(registry) = self.registry.upgrade() {
            for name in names.keys() {
                registry.unregister(name);
            }
        }
    }
}

/// The session's latest tool list and the registries it feeds, changed together under one lock
/// so a registry joining while the list changes never keeps the older list.
#[derive(Default)]
struct Catalog {
    /// The server's tools this session exposes (its server's filter applied, tools that need
    /// the tasks API left out), from the latest listing.
    tools: Arc<Vec<Tool>>,
    bindings: Vec<Arc<Binding>>,
}

/// How a dead server's restarts went, for sharing one failed restart among the calls that
/// waited for it and for the backoff after repeated failures.
#[derive(Default)]
struct Restarts {
    /// Restart attempts finished so far.
    attempts: u64,
    /// Failed attempts in a row since the last success.
    failures: u32,
    /// When the latest failed attempt ended, and why it failed.
    last_failure: Option<(Instant, String)>,
}

/// After two failed restarts in a row, calls within this long of the last attempt fail at once;
/// the wait doubles with each further failure, up to [`RESTART_BACKOFF_MAX`].
pub(crate) const RESTART_BACKOFF_START: Duration = Duration::from_secs(1);
/// The longest wait between restart attempts of a server that keeps failing to start.
pub(crate) const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(30);

impl Restarts {
    /// How long after the latest failure the next attempt waits: none after one failure (a
    /// server that failed once is tried again by the next call), then 1 s, 2 s, 4 s … 30 s.
    fn backoff(&self) -> Duration {
        match self.failures {
            0 | 1 => Duration::ZERO,
            n => RESTART_BACKOFF_START
                .saturating_mul(1u32 << (n - 2).min(16))
                .min(RESTART_BACKOFF_MAX),
        }
    }
}

/// One session with a server, shared by a handle, the handlers of its tools in every registry
/// it feeds, and its refresh task.
pub(crate) struct Shared {
    server: McpServer,
    session: tokio::sync::Mutex<Option<Session>>,
    /// The current session's [`Live`] part, kept in step with `session`.
    live: Mutex<Option<Arc<Live>>>,
    generation: AtomicU64,
    catalog: Mutex<Catalog>,
    restarts: Mutex<Restarts>,
    closed: AtomicBool,
    list_changed: mpsc::UnboundedSender<()>,
    refreshes: AtomicU64,
    task_required: TaskRequired,
}

impl Shared {
    /// Builds the shared state and starts the task that refreshes tools on `list_changed`. It
    /// feeds no registry until one is [attached](Self::attach).
    pub(crate) fn start(server: McpServer) -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Self {
            server,
            session: tokio::sync::Mutex::new(None),
            live: Mutex::new(None),
            generation: AtomicU64::new(0),
            catalog: Mutex::new(Catalog::default()),
            restarts: Mutex::new(Restarts::default()),
            closed: AtomicBool::new(false),
            list_changed: tx,
            refreshes: AtomicU64::new(0),
            task_required: TaskRequired::default(),
        });
        tokio::spawn(refresh_on_list_changed(Arc::downgrade(&shared), rx));
        shared
    }

    pub(crate) fn server(&self) -> &McpServer {
        &self.server
    }

    fn catalog(&self) -> std::sync::MutexGuard<'_, Catalog> {
        self.catalog.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn restarts(&self) -> std::sync::MutexGuard<'_, Restarts> {
        self.restarts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Connects for the first time and lists the tools (registering them on the registries
    /// attached so far); on failure the session is closed and nothing stays behind.
    pub(crate) async fn connect(self: &Arc<Self>) -> Result<(), McpError> {
        let started = tokio::time::Instant::now();
        let session = self.open().await?;
        let live = self.install(&mut self.session.lock().await, session);
        let left = self
            .server
            .connect_timeout
            .saturating_sub(started.elapsed());
        match self.sync_tools(&live.peer, true, left).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.close().await;
                Err(e)
            }
        }
    }

    /// Registers the session's current tools that `filter` lets through on `registry`, and
    /// keeps them in step with the server from now on. `strict` fails, registering nothing,
    /// when the filter allows a tool the session does not have.
    pub(crate) fn attach(
        self: &Arc<Self>,
        registry: &ToolRegistry,
        filter: ToolFilter,
        strict: bool,
    ) -> Result<Arc<Binding>, McpError> {
        // Checked under the catalog's lock, which `close` takes after setting the flag: a
        // registry is either refused here or has its tools removed by `close`.
        let mut catalog = self.catalog();
        if self.closed.load(Ordering::SeqCst) {
            return Err(McpError::Closed {
                server: self.server.name.clone(),
            });
        }
        if strict && let Some(allow) = &filter.allow {
            let missing: Vec<&str> = allow
                .iter()
                .filter(|a| !catalog.tools.iter().any(|t| t.name == a.as_str()))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(McpError::UnknownTools {
                    server: self.server.name.clone(),
                    missing: missing.join(", "),
                    available: tool_list(&catalog.tools),
                });
            }
        }
        let binding = Arc::new(Binding {
            registry: registry.downgrade(),
            filter,
            names: Mutex::new(IndexMap::new()),
        });
        let tools = Arc::clone(&catalog.tools);
        self.sync_binding(registry, &binding, &tools);
        catalog.bindings.retain(|b| b.registry.upgrade().is_some());
        catalog.bindings.push(Arc::clone(&binding));
        Ok(binding)
    }

    /// Takes a registry's tools off it and stops feeding it; the session goes on.
    pub(crate) fn detach(&self, binding: &Arc<Binding>) {
        let mut catalog = self.catalog();
        catalog.bindings.retain(|b| !Arc::ptr_eq(b, binding));
        binding.unregister_all();
    }

    /// How many registries that still exist the session feeds.
    pub(crate) fn registry_count(&self) -> usize {
        let mut catalog = self.catalog();
        catalog.bindings.retain(|b| b.registry.upgrade().is_some());
        catalog.bindings.len()
    }

    /// The tools this session exposes, from its latest listing.
    pub(crate) fn tools(&self) -> Arc<Vec<Tool>> {
        Arc::clone(&self.catalog().tools)
    }

    /// Starts the server (stdio) or opens the session (HTTP) and completes the handshake, all
    /// within the connect deadline.
    async fn open(&self) -> Result<Session, McpError> {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let client = Client {
            list_changed: self.list_changed.clone(),
        };
        let deadline = self.server.connect_timeout;
        let timed_out = || McpError::ConnectTimeout {
            server: self.server.name.clone(),
            location: self.server.location(),
            seconds: deadline.as_secs_f64(),
        };
        match &self.server.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (mut process, transport) = stdio::spawn(
                    &self.server,
                    command,
                    args,
                    env,
                    cwd.as_deref(),
                    Arc::clone(&self.task_required),
                )?;
                match tokio::time::timeout(deadline, client.serve(transport)).await {
                    Ok(Ok(service)) => Ok(Session {
                        service,
                        process: Some(process),
                        generation,
                    }),
                    Ok(Err(e)) => {
                        let stderr = process.stderr_after_exit().await;
                        process.stop(Duration::ZERO).await;
                        Err(McpError::Handshake {
                            server: self.server.name.clone(),
                            location: self.server.location(),
                            reason: with_stderr(e.to_string(), stderr),
                        })
                    }
                    Err(_) => {
                        process.stop(Duration::ZERO).await;
                        Err(timed_out())
                    }
                }
            }
            McpTransport::Http {
                url,
                headers,
                bearer_token,
            } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(header_map(&self.server.name, headers)?);
                #[cfg(feature = "oauth")]
                if let Some(oauth) = &self.server.oauth {
                    let service =
                        super::oauth::connect(&self.server, oauth, url, config, client).await?;
                    return Ok(Session {
                        service,
                        process: None,
                        generation,
                    });
                }
                if let Some(token) = bearer_token {
                    config = config.auth_header(token.clone());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                match tokio::time::timeout(deadline, client.serve(transport)).await {
                    Ok(Ok(service)) => Ok(Session {
                        service,
                        process: None,
                        generation,
                    }),
                    Ok(Err(e)) if e.is_authorization_required() && bearer_token.is_none() => {
                        Err(McpError::SignInRequired {
                            server: self.server.name.clone(),
                            location: self.server.location(),
                        })
                    }
                    Ok(Err(e)) if e.is_authorization_required() => Err(McpError::Handshake {
                        server: self.server.name.clone(),
                        location: self.server.location(),
                        reason: "the server refused the bearer token (HTTP 401); check that the \
                                 token is current and meant for this server"
                            .to_owned(),
                    }),
                    Ok(Err(e)) => Err(McpError::Handshake {
                        server: self.server.name.clone(),
                        location: self.server.location(),
                        reason: error_chain(&e),
                    }),
                    Err(_) => Err(timed_out()),
                }
            }
        }
    }

    /// Lists the server's tools (within `deadline`) and makes every registry the session feeds
    /// match: new tools registered, changed ones replaced, vanished ones removed; registries
    /// that no longer exist are dropped. `strict` (the first connect) fails on tools the
    /// server's `allow_tools` names that the server does not have.
    pub(crate) async fn sync_tools(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
        strict: bool,
        deadline: Duration,
    ) -> Result<(), McpError> {
        let server = &self.server;
        // Over stdio, the tap on the server's output reads the listing's reply for tools that
        // need the tasks API (rmcp's `Tool` drops that field).
        let listing = self.task_required.listing();
        let tools = tokio::time::timeout(deadline, peer.list_all_tools()).await;
        drop(listing);
        let tools = tools
            .map_err(|_| McpError::ConnectTimeout {
                server: server.name.clone(),
                location: server.location(),
                seconds: server.connect_timeout.as_secs_f64(),
            })?
            .map_err(|e| McpError::ListTools {
                server: server.name.clone(),
                reason: error_chain(&e),
            })?;
        if strict && let Some(allow) = &server.allow {
            let missing: Vec<&str> = allow
                .iter()
                .filter(|a| !tools.iter().any(|t| t.name == a.as_str()))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(McpError::UnknownTools {
                    server: server.name.clone(),
                    missing: missing.join(", "),
                    available: tool_list(&tools),
                });
            }
        }
        let exposed: Vec<Tool> = {
            let task_required = self.task_required.names();
            tools
                .into_iter()
                .filter(|t| server.exposes(&t.name))
                .filter(|t| {
                    let skip = task_required.contains(t.name.as_ref());
                    if skip {
                        tracing::warn!(
                            server = %server.name,
                            tool = %t.name,
                            "skipping MCP tool: it requires the MCP tasks API, which harnessx does not support"
                        );
                    }
                    !skip
                })
                .collect()
        };
        let tools = Arc::new(exposed);
        let mut catalog = self.catalog();
        catalog.tools = Arc::clone(&tools);
        catalog.bindings.retain(|binding| {
            let Some(registry) = binding.registry.upgrade() else {
                return false;
            };
            self.sync_binding(&registry, binding, &tools);
            true
        });
        Ok(())
    }

    /// Makes one registry's tools match `tools` (the session's, through the binding's filter).
    /// Called with the catalog locked.
    fn sync_binding(self: &Arc<Self>, registry: &ToolRegistry, binding: &Binding, tools: &[Tool]) {
        let server = &self.server;
        let chosen: Vec<&Tool> = tools
            .iter()
            .filter(|t| binding.filter.exposes(&t.name))
            .collect();
        let mut names = binding.names();
        let owned: HashSet<String> = names.keys().cloned().collect();
        let assigned = names::assign(&server.name, chosen.iter().map(|t| t.name.as_ref()), |n| {
            registry.contains(n) && !owned.contains(n)
        });
        let mut fresh = IndexMap::new();
        for (tool, (original, exposed)) in chosen.into_iter().zip(assigned) {
            match self.register(registry, tool, &exposed) {
                Ok(()) => {
                    fresh.insert(exposed, original);
                }
                Err(e) => tracing::warn!(
                    server = %server.name,
                    tool = %original,
                    "skipping MCP tool: {}",
                    error_chain(&e)
                ),
            }
        }
        for old in names.keys() {
            if !fresh.contains_key(old) {
                registry.unregister(old);
            }
        }
        *names = fresh;
    }

    /// Registers one server tool under its exposed name. A schema the validator cannot compile
    /// is replaced by a plain object schema, so the server does the validating.
    fn register(
        self: &Arc<Self>,
        registry: &ToolRegistry,
        tool: &Tool,
        exposed: &str,
    ) -> Result<(), RegistryError> {
        let options = ToolOptions::new().replace(true);
        match registry.register_tool_with(self.definition(tool, exposed, None), options.clone()) {
            Err(RegistryError::InvalidSchema { reason, .. }) => {
                tracing::warn!(
                    server = %self.server.name,
                    tool = %tool.name,
                    "the tool's input schema does not compile ({reason}); arguments are checked by the server only"
                );
                let loose = json!({"type": "object", "additionalProperties": true});
                registry
                    .register_tool_with(self.definition(tool, exposed, Some(loose)), options)
                    .map(drop)
            }
            other => other.map(drop),
        }
    }

    fn definition(
        self: &Arc<Self>,
        tool: &Tool,
        exposed: &str,
        schema: Option<Value>,
    ) -> ToolDefinition {
        let annotations = convert::annotations(tool);
        let target = Arc::new((Arc::clone(self), tool.name.to_string()));
        // The handler's future only waits for the server (rmcp's service task writes the
        // request and reads the reply): the engine awaits it in the caller's task instead of
        // giving each call a task of its own, which saved a hop between threads each way. It
        // keeps only what the call needs of the context (the name it is exposed under, taken
        // from it, and whether the engine's limit bounds it), not the whole context, so the
        // future is smaller to make and box; the names are shared, not copied.
        let handler = Arc::new(McpToolHandler { target });
        ToolDefinition::new(
            exposed,
            convert::description(tool, &self.server.name),
            schema.unwrap_or_else(|| convert::input_schema(tool)),
            handler,
        )
        .with_permission(convert::permission(&annotations))
        .with_replay_policy(convert::replay_policy(&annotations))
        .with_concurrent(annotations.read_only_hint == Some(true))
        .with_timeout_seconds(self.server.call_timeout.as_secs_f64())
        .with_retry(ToolRetry::none())
        .with_annotations(annotations)
    }

    /// Makes `session` the current one, and its [`Live`] part (returned) the current one's; a
    /// session it replaces is dropped.
    fn install(&self, guard: &mut MutexGuard<'_, Option<Session>>, session: Session) -> Arc<Live> {
        let live = Arc::new(session.live());
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&live));
        **guard = Some(session);
        live
    }

    /// Takes the current session (and its [`Live`] part) away, returning it.
    fn take_session(&self, guard: &mut MutexGuard<'_, Option<Session>>) -> Option<Session> {
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = None;
        guard.take()
    }

    /// The current session's live part, when it lives (without the session's lock).
    fn live_now(&self) -> Option<Arc<Live>> {
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.as_ref().filter(|live| live.alive()).map(Arc::clone)
    }

    /// A live peer: the current session's, or a new one when the server died (a stdio server is
    /// restarted) — in which case the tool list is synced again.
    async fn live_peer(self: &Arc<Self>) -> Result<Arc<Live>, ToolError> {
        // The common case without the session's lock: a session that lives.
        match self.live_now() {
            Some(live) => Ok(live),
            None => self.revive().await,
        }
    }

    /// [`live_peer`](Self::live_peer) when [`live_now`](Self::live_now) found no live session:
    /// under the session's lock, the session another call revived meanwhile, or a new one.
    ///
    /// A dead server is restarted once per failure, however many calls (from however many
    /// registries) find it dead: they queue on the session's lock, the first restarts it and
    /// the others take the session it made. When that restart fails, the calls that waited for
    /// it fail with its error instead of each trying again; after two failures in a row, calls
    /// within the backoff ([`Restarts::backoff`]) of the last attempt fail at once.
    async fn revive(self: &Arc<Self>) -> Result<Arc<Live>, ToolError> {
        let seen = self.restarts().attempts;
        let guard = self.session.lock().await;
        if self.closed.load(Ordering::SeqCst) {
            return Err(self.closed_error());
        }
        if let Some(session) = guard.as_ref()
            && session.alive()
        {
            return Ok(Arc::new(session.live()));
        }
        {
            let restarts = self.restarts();
            if let Some((at, reason)) = &restarts.last_failure {
                if restarts.attempts != seen {
                    // Another call tried while this one waited, and failed.
                    return Err(self.unreachable(reason, None));
                }
                let wait = restarts.backoff().saturating_sub(at.elapsed());
                if !wait.is_zero() {
                    return Err(self.unreachable(reason, Some((restarts.failures, wait))));
                }
            }
        }
        // Boxed: every call's future holds what its wait for the peer holds, and reconnecting
        // (starting the server, its handshake, listing its tools) holds kilobytes that a call
        // to a live server would otherwise allocate and move each time.
        Box::pin(self.reconnect(guard)).await
    }

    /// The failure of a call that found the server dead and could not restart it: `reason`
    /// is why the latest attempt failed; `backoff` (failures in a row, time left) when no
    /// attempt was made because of the backoff.
    fn unreachable(&self, reason: &str, backoff: Option<(u32, Duration)>) -> ToolError {
        let wait = match backoff {
            Some((failures, left)) => format!(
                " ({failures} restarts in a row failed; the next is tried in {:.0} s)",
                left.as_secs_f64().ceil()
            ),
            None => String::new(),
        };
        ToolError::failed(format!(
            "The MCP server `{}` is not reachable: {reason}{wait}. The call was not run. Try \
             again later, use another tool, or tell the user the server is down.",
            self.server.name,
        ))
    }

    /// [`revive`](Self::revive) when the session is gone: a new one, its tools synced.
    async fn reconnect(
        self: &Arc<Self>,
        mut guard: tokio::sync::MutexGuard<'_, Option<Session>>,
    ) -> Result<Arc<Live>, ToolError> {
        if let Some(dead) = self.take_session(&mut guard) {
            tracing::info!(server = %self.server.name, "MCP server connection lost; reconnecting");
            dead.shutdown().await;
        }
        let session = match self.open().await {
            Ok(session) => {
                let mut restarts = self.restarts();
                restarts.attempts += 1;
                restarts.failures = 0;
                restarts.last_failure = None;
                session
            }
            Err(e) => {
                let reason = error_chain(&e);
                let mut restarts = self.restarts();
                restarts.attempts += 1;
                restarts.failures = restarts.failures.saturating_add(1);
                restarts.last_failure = Some((Instant::now(), reason.clone()));
                tracing::warn!(
                    server = %self.server.name,
                    failures = restarts.failures,
                    "restarting the MCP server failed: {reason}"
                );
                return Err(self.unreachable(&reason, None));
            }
        };
        let live = self.install(&mut guard, session);
        drop(guard);
        if let Err(e) = self
            .sync_tools(&live.peer, false, self.server.connect_timeout)
            .await
        {
            tracing::warn!(server = %self.server.name, "re-listing tools after reconnecting failed: {}", error_chain(&e));
        }
        Ok(live)
    }

    /// Calls a server tool by its own name; `exposed` names it in messages to the model.
    async fn call(
        self: &Arc<Self>,
        original: &str,
        exposed: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        // `live_peer` written out: a live session is taken without awaiting the path that
        // revives one (a future of its own, resumed and dropped on every call otherwise).
        let live = match self.live_now() {
            Some(live) => live,
            None => self.revive().await?,
        };
        let mut params = CallToolRequestParams::new(original.to_owned());
        match args {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => {
                return Err(ToolError::invalid_arguments(format!(
                    "The arguments of `{exposed}` must be a JSON object, not {other}. Call it again with an object."
                )));
            }
        }
        let server = &self.server.name;
        // Called through the engine, the tool's time limit (the same `call_timeout`) ends the
        // call first and reports it as timed out. The handler bounds its own wait too, for a
        // caller that calls it directly: a little later than the engine's, so the two never
        // race.
        let deadline = self.server.call_timeout.saturating_add(DIRECT_CALL_GRACE);
        // Boxed where it is made: rmcp's call future is ~4.7 KB in a release build, and held in
        // this future it would be copied whole each time this one moved (into the engine's box,
        // into its caller). And made in its box: the box is
        // allocated first, so the future is built in it, where `Box::pin(peer.call_tool(..))`
        // builds it on the stack and copies all 4.7 KB in (~470 instructions, and ~120 cache
        // misses a call when the call runs cold, right after a reply).
        let reply = Box::into_pin(Box::write(Box::new_uninit(), live.peer.call_tool(params)));
        let outcome = tokio::time::timeout(deadline, reply).await;
        match outcome {
            Ok(Ok(result)) => {
                let output = convert::output(result);
                if output.is_error && needs_tasks(&output.content) {
                    return Err(self.remove_task_tool(original, exposed));
                }
                Ok(output)
            }
            // A reply too large for the transport: over stdio, the tap on the server's output
            // put this error in its place.
            Ok(Err(ServiceError::McpError(e))) if let Some(reply) = OversizedReply::of(&e) => {
                Err(ToolError::failed(format!(
                    "The MCP server `{server}` sent a reply to `{exposed}` of {}{} bytes, more \
                     than the {MAX_MESSAGE_BYTES} bytes (16 MiB) harnessx reads in one message, \
                     so the reply was dropped. The call ran: ask for less output (a narrower \
                     query, a smaller page or range) or use another tool.",
                    if reply.complete { "" } else { "more than " },
                    reply.bytes
                )))
            }
            Ok(Err(ServiceError::McpError(e))) if needs_tasks(&e.message) => {
                Err(self.remove_task_tool(original, exposed))
            }
            Ok(Err(ServiceError::McpError(e))) => Err(ToolError::failed(format!(
                "The MCP server `{server}` refused the call to `{exposed}`: {} (error {}). Check \
                 the arguments against the tool's description, then try again or use another tool.",
                e.message, e.code.0
            ))),
            Ok(Err(e)) => {
                // Boxed, like reconnecting: a rare path a call's future should not carry.
                Box::pin(self.forget(live.generation)).await;
                Err(ToolError::failed(format!(
                    "The connection to the MCP server `{server}` broke while `{exposed}` was \
                     running ({}). The call may have partly run: check its effects before calling \
                     it again. The server will be reconnected on the next call.",
                    error_chain(&e)
                )))
            }
            Err(_) => Err(ToolError::failed(format!(
                "The MCP server `{server}` did not answer `{exposed}` within {} s. The call may \
                 have partly run: check its effects before calling it again.",
                self.server.call_timeout.as_secs_f64()
            ))),
        }
    }

    /// Forgets a tool the server runs only as a task (its listing did not say so, as over
    /// HTTP, where harnessx cannot see the `execution` field): unregistered now from every
    /// registry the session feeds, skipped on every refresh.
    fn remove_task_tool(&self, original: &str, exposed: &str) -> ToolError {
        tracing::warn!(server = %self.server.name, tool = %original, "removing MCP tool: it requires the MCP tasks API");
        self.task_required.names().insert(original.to_owned());
        let mut catalog = self.catalog();
        if catalog.tools.iter().any(|t| t.name == original) {
            let kept = catalog
                .tools
                .iter()
                .filter(|t| t.name != original)
                .cloned()
                .collect();
            catalog.tools = Arc::new(kept);
        }
        for binding in &catalog.bindings {
            let mut names = binding.names();
            let gone: Vec<String> = names
                .iter()
                .filter(|(_, o)| o.as_str() == original)
                .map(|(e, _)| e.clone())
                .collect();
            let registry = binding.registry.upgrade();
            for name in gone {
                names.shift_remove(&name);
                if let Some(registry) = &registry {
                    registry.unregister(&name);
                }
            }
        }
        drop(catalog);
        ToolError::failed(format!(
            "The tool `{exposed}` of the MCP server `{}` only runs through the MCP tasks API, \
             which harnessx does not support, so it has been removed from your tools. Use another \
             tool or tell the user.",
            self.server.name
        ))
    }

    /// Drops the session of that generation (the server died); the next call reconnects.
    async fn forget(&self, generation: u64) {
        let dead = {
            let mut guard = self.session.lock().await;
            match guard.as_ref() {
                Some(s) if s.generation == generation => self.take_session(&mut guard),
                _ => None,
            }
        };
        if let Some(dead) = dead {
            dead.shutdown().await;
        }
    }

    fn closed_error(&self) -> ToolError {
        ToolError::failed(format!(
            "The connection to the MCP server `{}` was closed by the application, so this tool is \
             no longer available. Use another tool or tell the user.",
            self.server.name
        ))
    }

    /// Shuts the session down (stopping a stdio server) and removes its tools from every
    /// registry it feeds. Later calls fail cleanly.
    pub(crate) async fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let session = self.take_session(&mut self.session.lock().await);
        if let Some(session) = session {
            session.shutdown().await;
        }
        let bindings = std::mem::take(&mut self.catalog().bindings);
        for binding in bindings {
            binding.unregister_all();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub(crate) async fn is_connected(&self) -> bool {
        let guard = self.session.lock().await;
        guard.as_ref().is_some_and(Session::alive)
    }

    pub(crate) async fn process_id(&self) -> Option<u32> {
        let guard = self.session.lock().await;
        guard.as_ref()?.process.as_ref()?.id()
    }

    pub(crate) async fn server_stderr(&self) -> Option<String> {
        let guard = self.session.lock().await;
        guard.as_ref()?.process.as_ref()?.stderr().text()
    }

    pub(crate) fn refreshes(&self) -> u64 {
        self.refreshes.load(Ordering::SeqCst)
    }

    /// Re-lists the tools now over the current session (reconnecting a dead server) and
    /// updates every registry the session feeds.
    pub(crate) async fn refresh(self: &Arc<Self>) -> Result<(), McpError> {
        let live = self.live_peer().await.map_err(|e| McpError::ListTools {
            server: self.server.name.clone(),
            reason: e.to_string(),
        })?;
        self.sync_tools(&live.peer, false, self.server.connect_timeout)
            .await
    }

    async fn current_peer(&self) -> Option<Peer<RoleClient>> {
        let guard = self.session.lock().await;
        let session = guard.as_ref()?;
        session.alive().then(|| session.service.peer().clone())
    }
}

/// Waits for `list_changed` notifications and re-lists the tools; bursts are coalesced. Holds
/// only a weak reference, so it ends when the session is gone.
async fn refresh_on_list_changed(shared: Weak<Shared>, mut rx: mpsc::UnboundedReceiver<()>) {
    while rx.recv().await.is_some() {
        while rx.try_recv().is_ok() {}
        let Some(shared) = shared.upgrade() else {
            break;
        };
        if shared.closed.load(Ordering::SeqCst) {
            break;
        }
        if let Some(peer) = shared.current_peer().await {
            match shared
                .sync_tools(&peer, false, shared.server.connect_timeout)
                .await
            {
                Ok(()) => {
                    tracing::debug!(server = %shared.server.name, tools = shared.tools().len(), "MCP tool list refreshed")
                }
                Err(e) => {
                    tracing::warn!(server = %shared.server.name, "refreshing the MCP tool list failed: {}", error_chain(&e))
                }
            }
        }
        shared.refreshes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Whether a server error says the tool must be called as a task (`taskSupport: "required"`).
fn needs_tasks(message: &str) -> bool {
    message.contains("task augmentation") || message.contains("taskSupport")
}

/// The names of `tools`, comma-separated, for error messages.
fn tool_list(tools: &[Tool]) -> String {
    tools
        .iter()
        .map(|t| t.name.as_ref())
        .collect::<Vec<_>>()
        .join(", ")
}

fn header_map(
    server: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, McpError> {
    let invalid = |name: &str, reason: String| McpError::InvalidHeader {
        server: server.to_owned(),
        name: name.to_owned(),
        reason,
    };
    headers
        .iter()
        .map(|(k, v)| {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| invalid(k, e.to_string()))?;
            let value =
                reqwest::header::HeaderValue::from_str(v).map_err(|e| invalid(k, e.to_string()))?;
            Ok((name, value))
        })
        .collect()
}

fn with_stderr(reason: String, stderr: Option<String>) -> String {
    match stderr {
        Some(text) => format!("{reason}; the server wrote to stderr: {text}"),
        None => reason,
    }
}
