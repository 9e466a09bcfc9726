//! A live connection to one MCP server: connecting under a deadline, reconnecting a dead
//! server, calling tools under a time limit, and keeping the registered tools in step with the
//! server's tool list.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

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

/// The state shared by a connection handle, its tools' handlers and its refresh task.
pub(crate) struct Shared {
    server: McpServer,
    registry: WeakToolRegistry,
    session: tokio::sync::Mutex<Option<Session>>,
    /// The current session's [`Live`] part, kept in step with `session`.
    live: Mutex<Option<Arc<Live>>>,
    generation: AtomicU64,
    /// Exposed name → the server's own name, for the tools this connection registered.
    names: Mutex<IndexMap<String, String>>,
    closed: AtomicBool,
    list_changed: mpsc::UnboundedSender<()>,
    refreshes: AtomicU64,
    task_required: TaskRequired,
}

impl Shared {
    /// Builds the shared state and starts the task that refreshes tools on `list_changed`.
    pub(crate) fn start(server: McpServer, registry: &ToolRegistry) -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Self {
            server,
            registry: registry.downgrade(),
            session: tokio::sync::Mutex::new(None),
            live: Mutex::new(None),
            generation: AtomicU64::new(0),
            names: Mutex::new(IndexMap::new()),
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

    /// Connects for the first time and registers the tools; on failure nothing stays behind.
    pub(crate) async fn connect(self: &Arc<Self>) -> Result<Vec<String>, McpError> {
        let started = tokio::time::Instant::now();
        let session = self.open().await?;
        let live = self.install(&mut self.session.lock().await, session);
        let left = self
            .server
            .connect_timeout
            .saturating_sub(started.elapsed());
        match self.sync_tools(&live.peer, true, left).await {
            Ok(names) => Ok(names),
            Err(e) => {
                self.close().await;
                Err(e)
            }
        }
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

    /// Lists the server's tools (within `deadline`) and makes the registry match: new tools
    /// registered, changed ones replaced, vanished ones removed. `strict` (the first connect)
    /// fails on allowed tools the server does not have.
    pub(crate) async fn sync_tools(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
        strict: bool,
        deadline: Duration,
    ) -> Result<Vec<String>, McpError> {
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
                    available: tools
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        let Some(registry) = self.registry.upgrade() else {
            return Ok(Vec::new());
        };
        let task_required = self.task_required.names().clone();
        let chosen: Vec<&Tool> = tools
            .iter()
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
            .collect();
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        let owned: HashSet<String> = names.keys().cloned().collect();
        let assigned = names::assign(&server.name, chosen.iter().map(|t| t.name.as_ref()), |n| {
            registry.contains(n) && !owned.contains(n)
        });
        let mut fresh = IndexMap::new();
        for (tool, (original, exposed)) in chosen.into_iter().zip(assigned) {
            match self.register(&registry, tool, &exposed) {
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
        Ok(names.keys().cloned().collect())
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
    async fn revive(self: &Arc<Self>) -> Result<Arc<Live>, ToolError> {
        let guard = self.session.lock().await;
        if self.closed.load(Ordering::SeqCst) {
            return Err(self.closed_error());
        }
        if let Some(session) = guard.as_ref()
            && session.alive()
        {
            return Ok(Arc::new(session.live()));
        }
        // Boxed: every call's future holds what its wait for the peer holds, and reconnecting
        // (starting the server, its handshake, listing its tools) holds kilobytes that a call
        // to a live server would otherwise allocate and move each time.
        Box::pin(self.reconnect(guard)).await
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
        let session = self.open().await.map_err(|e| {
            ToolError::failed(format!(
                "The MCP server `{}` is not reachable: {}. The call was not run. Try again \
                 later, use another tool, or tell the user the server is down.",
                self.server.name,
                error_chain(&e)
            ))
        })?;
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
    /// HTTP, where harnessx cannot see the `execution` field): unregistered now, skipped on
    /// every refresh.
    fn remove_task_tool(&self, original: &str, exposed: &str) -> ToolError {
        tracing::warn!(server = %self.server.name, tool = %original, "removing MCP tool: it requires the MCP tasks API");
        self.task_required.names().insert(original.to_owned());
        self.names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .shift_remove(exposed);
        if let Some(registry) = self.registry.upgrade() {
            registry.unregister(exposed);
        }
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

    /// Shuts the session down and removes this connection's tools. Later calls fail cleanly.
    pub(crate) async fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let session = self.take_session(&mut self.session.lock().await);
        if let Some(session) = session {
            session.shutdown().await;
        }
        let names = std::mem::take(&mut *self.names.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(registry) = self.registry.upgrade() {
            for name in names.keys() {
                registry.unregister(name);
            }
        }
    }

    pub(crate) fn tool_names(&self) -> Vec<String> {
        let names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        names.keys().cloned().collect()
    }

    pub(crate) fn original_name(&self, exposed: &str) -> Option<String> {
        let names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        names.get(exposed).cloned()
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

    /// Re-lists the tools now over the current session (reconnecting a dead server).
    pub(crate) async fn refresh(self: &Arc<Self>) -> Result<Vec<String>, McpError> {
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
/// only a weak reference, so it ends when the connection is gone.
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
                Ok(names) => {
                    tracing::debug!(server = %shared.server.name, tools = names.len(), "MCP tool list refreshed")
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
