//! Starting a server: the store, the runtime with one factory per agent, the API state, and the
//! listener.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use harnessx_runtime::store::{
    KnowledgeStore, PlatformStore, PostgresStore, ResourceStore, WebhookStore,
};
use harnessx_runtime::{RunStore, Runtime, SqliteStore};
use tokio::net::TcpListener;

use crate::agents::{Agents, Catalog};
use crate::api::{ApiKeys, AppState, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_SUBSCRIBERS, router};
use crate::config::Config;
use crate::error::ServeError;
use crate::metrics::Metrics;
use crate::webhooks::{DeliverySettings, Webhooks};
use harnessx_runtime::store::Seeded;

mod key;

pub(crate) use key::random_key;
pub use key::{GeneratedKey, KeptIn, SERVER_KEY_KIND, SERVER_KEY_NAME, key_file};

/// The default address: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1:8080";

/// The environment variable holding the API key: the one a client sends and a server accepts.
pub const API_KEY_ENV: &str = "HARNESSX_API_KEY";

/// The environment variable holding several API keys a server accepts, comma-separated.
pub const API_KEYS_ENV: &str = "HARNESSX_API_KEYS";

/// The environment variable naming the database: a `postgresql://` URL or a SQLite file.
pub const DATABASE_URL_ENV: &str = "HARNESSX_DATABASE_URL";

/// The SQLite file used when nothing names a database.
pub const DEFAULT_SQLITE: &str = "harnessx.db";

/// What the command line adds to a configuration.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Listen here instead (`--bind`).
    pub bind: Option<SocketAddr>,
    /// API keys besides the configuration's.
    pub api_keys: Vec<String>,
    /// The database instead of the configuration's (`--db`): a `postgresql://` (or
    /// `postgres://`) URL, a SQLite file, or `:memory:` for none.
    pub database: Option<String>,
    /// How long a client has to send a request's headers, and a kept-alive connection may stay
    /// idle (default [`DEFAULT_HEADER_READ_TIMEOUT`], 10 s).
    pub header_read_timeout: Option<Duration>,
    /// When neither these options nor the configuration give an API key, accept the key kept
    /// with the database, generating it on the first start (see [`GeneratedKey`]):
    /// `<db>.key` beside a SQLite file, a stored resource in PostgreSQL, a new one each start
    /// for `:memory:`. Without this, a server given no key accepts none.
    pub generate_key: bool,
}

impl ServeOptions {
    /// Listen on `addr`.
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = Some(addr);
        self
    }

    /// Accept `key` too.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_keys.push(key.into());
        self
    }

    /// Keep runs in this SQLite file (`:memory:` for none).
    pub fn sqlite(mut self, path: impl Into<String>) -> Self {
        self.database = Some(path.into());
        self
    }

    /// Keep runs in this database: a `postgresql://user@host/db?sslmode=verify-full` URL (any
    /// number of servers may share it) or a SQLite file.
    pub fn database(mut self, url_or_path: impl Into<String>) -> Self {
        self.database = Some(url_or_path.into());
        self
    }

    /// Accept the key kept with the database (generated on the first start) when no key is
    /// given: see [`generate_key`](Self::generate_key).
    pub fn generate_key(mut self) -> Self {
        self.generate_key = true;
        self
    }

    /// Close a connection whose request headers take longer than `timeout` (and one idle that
    /// long between requests).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = Some(timeout);
        self
    }
}

pub use crate::listen::DEFAULT_HEADER_READ_TIMEOUT;

/// Keys from `HARNESSX_API_KEY` and `HARNESSX_API_KEYS` (comma-separated), in that order.
pub fn keys_from_env() -> Vec<String> {
    let one = std::env::var(API_KEY_ENV).unwrap_or_default();
    let many = std::env::var(API_KEYS_ENV).unwrap_or_default();
    let mut keys: Vec<String> = std::iter::once(one.as_str())
        .chain(many.split(','))
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect();
    keys.dedup();
    keys
}

/// Where a server keeps its runs, as the options, the environment and the configuration name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A PostgreSQL URL: any number of servers may share it.
    Postgres(String),
    /// A SQLite file (`:memory:`: nothing kept): one server process at a time.
    Sqlite(String),
}

impl Database {
    /// `postgresql://` and `postgres://` URLs (and libpq's `key=value` strings holding
    /// `host=`) are PostgreSQL; anything else is a SQLite file's path.
    ///
    /// ```
    /// use harnessx_server::server::Database;
    /// assert!(matches!(Database::parse("postgresql://hx@db.internal/hx"), Database::Postgres(_)));
    /// assert!(matches!(Database::parse("runs.db"), Database::Sqlite(_)));
    /// ```
    pub fn parse(s: &str) -> Self {
        let t = s.trim();
        if t.starts_with("postgresql://")
            || t.starts_with("postgres://")
            || (t.contains("host=") && t.contains('='))
        {
            Self::Postgres(t.to_owned())
        } else {
            Self::Sqlite(s.to_owned())
        }
    }

    /// The database `options`, `HARNESSX_DATABASE_URL` and `config` name, in that order of
    /// precedence; `harnessx.db` when none does.
    pub fn choose(config: &Config, options: &ServeOptions) -> Result<Self, ServeError> {
        if let Some(db) = &options.database {
            return Ok(Self::parse(db));
        }
        match std::env::var(DATABASE_URL_ENV) {
            Ok(url) if !url.trim().is_empty() => return Ok(Self::parse(&url)),
            Ok(_) | Err(std::env::VarError::NotPresent) => {}
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(ServeError::Database(format!(
                    "{DATABASE_URL_ENV} is not valid UTF-8; set it to a postgresql:// URL or a \
                     SQLite file's path"
                )));
            }
        }
        if let Some(url) = &config.store.postgres {
            return Ok(Self::Postgres(url.get_ref().clone()));
        }
        Ok(Self::Sqlite(config.store.sqlite.as_ref().map_or_else(
            || DEFAULT_SQLITE.to_owned(),
            |s| s.get_ref().clone(),
        )))
    }

    /// Opens (and migrates) the store.
    pub async fn open(&self) -> Result<Arc<dyn PlatformStore>, ServeError> {
        Ok(match self {
            Self::Sqlite(path) if path == ":memory:" => {
                Arc::new(SqliteStore::in_memory().map_err(|e| ServeError::Runtime(e.into()))?)
            }
            Self::Sqlite(path) => {
                Arc::new(SqliteStore::open(path).map_err(|e| ServeError::Runtime(e.into()))?)
            }
            Self::Postgres(url) => Arc::new(
                PostgresStore::connect(url)
                    .await
                    .map_err(|e| ServeError::Runtime(e.into()))?,
            ),
        })
    }

    /// How it is shown at start-up: a file's path, or a URL without its password.
    pub fn display(&self) -> String {
        match self {
            Self::Sqlite(path) => path.clone(),
            Self::Postgres(url) => crate::redact::database_url(url),
        }
    }
}

/// Builds the runtime and the API state for `config`, opening the database the options, the
/// environment or the configuration name.
pub async fn state(config: &Config, options: &ServeOptions) -> Result<Arc<AppState>, ServeError> {
    let store = Database::choose(config, options)?.open().await?;
    state_on(config, options, store).await
}

/// Builds the runtime and the API state for `config` over an open store.
/// Stores the configuration's agents there first (see [`Agents::seed`]), and ends the commands a
/// server that died on this host left running
/// ([`reap_orphans`](harnessx_builtin::bash::reap_orphans)) before the workers start.
pub async fn state_on(
    config: &Config,
    options: &ServeOptions,
    store: Arc<dyn PlatformStore>,
) -> Result<Arc<AppState>, ServeError> {
    let window =
        harnessx_builtin::ask_user::question_window_from_env().map_err(|e| ServeError::Agent {
            agent: "*".into(),
            message: e.to_string(),
        })?;
    let resources: Arc<dyn ResourceStore> = store.clone();
    let key = crate::connectors::oauth::SecretKey::choose(
        config
            .server
            .secret_key
            .as_ref()
            .map(|k| k.get_ref().as_str()),
    );
    let documents: Arc<dyn KnowledgeStore> = store.clone();
    let agents = Arc::new(
        Agents::new(resources, window)
            .secret_key(key)
            .with_knowledge(documents),
    );
    if let Some(url) = &config.server.public_url {
        agents.connectors().oauth().set_public_url(url.get_ref());
    }
    for (name, seeded) in agents
        .seed(config)
        .await
        .map_err(|(agent, message)| ServeError::Agent { agent, message })?
    {
        match seeded {
            Seeded::Created(r) => {
                tracing::info!(agent = %name, version = r.version, "agent stored from the configuration")
            }
            Seeded::Changed(r) => {
                tracing::info!(agent = %name, version = r.version, "the configuration changed the agent: a new version")
            }
            _ => {}
        }
    }
    let webhooks = Arc::new(Webhooks::new(Arc::clone(&store)));
    for (id, seeded) in webhooks
        .seed(config)
        .await
        .map_err(|(webhook, message)| ServeError::Webhook { webhook, message })?
    {
        match seeded {
            Seeded::Created(r) => {
                tracing::info!(webhook = %id, version = r.version, "webhook stored from the configuration")
            }
            Seeded::Changed(r) => {
                tracing::info!(webhook = %id, version = r.version, "the configuration changed the webhook: a new version")
            }
            _ => {}
        }
    }
    let backlog: Arc<dyn WebhookStore> = store.clone();
    let store: Arc<dyn RunStore> = store;
    let workers = config
        .store
        .workers
        .as_ref()
        .map_or(4, |w| usize::try_from(*w.get_ref()).unwrap_or(4));
    // Before any worker resumes a run: commands a killed predecessor left running on this host
    // end first, so nobody is asked whether an interrupted command took effect while it still
    // runs.
    if let Err(e) = tokio::task::spawn_blocking(harnessx_builtin::bash::reap_orphans).await {
        tracing::warn!(error = %e, "looking for commands a previous server left running failed");
    }
    let mut builder = Runtime::builder()
        .store_arc(store)
        .workers(workers)
        .question_window(window);
    if let Some(lease) = &config.store.lease_seconds {
        builder = builder.lease(Duration::from_secs_f64(*lease.get_ref()));
    }
    builder = builder.catalog(Catalog(Arc::clone(&agents)));
    let metrics = Arc::new(Metrics::new().webhook_backlog(backlog));
    builder = builder.observer_arc(metrics.clone());
    let runtime = builder.build().map_err(ServeError::Runtime)?;
    let keys = ApiKeys::new(
        config
            .server
            .api_keys
            .iter()
            .map(|k| k.get_ref().clone())
            .chain(options.api_keys.iter().cloned()),
    );
    let subscribers = config
        .server
        .max_subscribers
        .as_ref()
        .map_or(DEFAULT_MAX_SUBSCRIBERS, |n| {
            usize::try_from(*n.get_ref()).unwrap_or(1)
        });
    let body = config
        .server
        .max_body_bytes
        .as_ref()
        .map_or(DEFAULT_MAX_BODY_BYTES, |n| {
            usize::try_from(*n.get_ref()).unwrap_or(1024)
        });
    webhooks.start(delivery_settings(config));
    Ok(Arc::new(
        AppState::new(runtime, agents, keys)
            .max_subscribers(subscribers)
            .max_body_bytes(body)
            .metrics(metrics)
            .metrics_open(config.server.metrics_open())
            .webhooks(webhooks),
    ))
}

/// How this server attempts webhook deliveries: `[server] webhook_max_attempts` and
/// `webhook_first_retry_seconds` over the defaults.
fn delivery_settings(config: &Config) -> DeliverySettings {
    let mut settings = DeliverySettings::default();
    if let Some(n) = &config.server.webhook_max_attempts {
        settings = settings.max_attempts(u32::try_from(*n.get_ref()).unwrap_or(1));
    }
    if let Some(t) = &config.server.webhook_first_retry_seconds {
        settings = settings.first_retry(Duration::from_secs_f64(*t.get_ref()));
    }
    settings
}

/// A server listening.
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its state.
    pub state: Arc<AppState>,
    /// Where it keeps its runs.
    pub database: Database,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    stop: tokio_util_free::Stop,
    /// The API key generated for this server (or kept from an earlier start), when
    /// [`ServeOptions::generate_key`] was asked for and no key was given.
    pub generated_key: Option<GeneratedKey>,
    /// What the configuration does that works but is likely a mistake, each naming its line
    /// (see [`Config::check_start`]).
    pub warnings: Vec<String>,
    /// The retention task (`[store] retain_days`), stopped with the server.
    retention: Option<tokio::task::JoinHandle<()>>,
}

mod tokio_util_free {
    /// Tells the server to stop.
    #[derive(Debug)]
    pub(super) struct Stop(pub(super) Option<tokio::sync::oneshot::Sender<()>>);
}

impl Running {
    /// Stops accepting, lets open requests finish (at most `grace`), stops the runtime's
    /// workers (at most `grace` again; runs in flight go back to the queue as last journaled,
    /// see [`Runtime::shutdown`](harnessx_runtime::Runtime::shutdown) — past the grace, their
    /// leases lapse instead), stops sending webhooks (attempts under way get `grace` too; what
    /// is left is sent by another server or the next start), ends the connector sign-ins still
    /// waiting for their browser to come back, and returns once nothing of this
    /// server holds its database any more (at most `grace` again), so a server started next in
    /// this process can open the same SQLite file.
    pub async fn stop(mut self, grace: Duration) {
        let store = Arc::downgrade(self.state.runtime.store());
        if let Some(tx) = self.stop.0.take() {
            let _ = tx.send(());
        }
        if let Some(retention) = self.retention.take() {
            retention.abort();
        }
        self.state.background.end();
        let _ = tokio::time::timeout(grace, &mut self.task).await;
        self.task.abort();
        if tokio::time::timeout(grace, self.state.runtime.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                "the workers did not stop within {grace:?} (a store call still running); their \
                 runs resume when their leases lapse"
            );
        }
        if let Some(webhooks) = &self.state.webhooks {
            webhooks.stop(grace).await;
        }
        // Aborted tasks and a connector's connection let go of the store a moment after they
        // are told to stop; the SQLite file's lock goes with the store's last handle.
        drop(self);
        let deadline = tokio::time::Instant::now() + grace;
        while store.strong_count() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if store.strong_count() > 0 {
            tracing::warn!(
                "the database is still in use {grace:?} after the server stopped (a task still \
                 holds it); it is released when that task ends"
            );
        }
    }

    /// Serves until the process gets Ctrl-C / SIGTERM or the listener fails.
    pub async fn wait(self) -> std::io::Result<()> {
        self.task.await.unwrap_or(Ok(()))
    }
}

/// Binds and serves `config` (on `127.0.0.1:8080` unless the configuration or `options` say
/// otherwise) until [`Running::stop`].
pub async fn serve(config: &Config, mut options: ServeOptions) -> Result<Running, ServeError> {
    let warnings = config.check_start()?;
    let database = Database::choose(config, &options)?;
    let store = database.open().await?;
    let mut generated_key = None;
    if options.generate_key && config.server.api_keys.is_empty() && options.api_keys.is_empty() {
        let generated = key::kept_key(&database, store.as_ref()).await?;
        options.api_keys.push(generated.key.clone());
        generated_key = Some(generated);
    }
    let state = state_on(config, &options, store).await?;
    let addr = match options.bind {
        Some(addr) => addr,
        None => config
            .server
            .bind
            .as_ref()
            .map(|b| b.get_ref().as_str())
            .unwrap_or(DEFAULT_BIND)
            .parse()
            .map_err(|_| ServeError::Bind {
                addr: DEFAULT_BIND.into(),
                source: std::io::Error::other("not an address"),
            })?,
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    // Without `[server] public_url`, browsers come back to the address bound.
    state
        .agents
        .connectors()
        .oauth()
        .set_public_url(&format!("http://{addr}"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let app = router(Arc::clone(&state));
    let header_read_timeout = options
        .header_read_timeout
        .unwrap_or(DEFAULT_HEADER_READ_TIMEOUT);
    let task = tokio::spawn(crate::listen::serve(listener, app, header_read_timeout, rx));
    let retention = config
        .store
        .retain_days()
        .map(|days| crate::retention::spawn(Arc::clone(state.runtime.store()), days));
    Ok(Running {
        addr,
        state,
        database,
        task,
        stop: tokio_util_free::Stop(Some(tx)),
        generated_key,
        warnings,
        retention,
    })
}
