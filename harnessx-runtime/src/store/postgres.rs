//! The PostgreSQL store, for workers in many processes on many machines: runs claimed with
//! `FOR UPDATE SKIP LOCKED` under a lease a heartbeat renews, every write fenced by the lease's
//! generation, `LISTEN/NOTIFY` to wake idle workers, lost connections retried with backoff, and
//! TLS as libpq's `sslmode` asks.

mod conninfo;
mod knowledge;
mod listen;
mod resources;
mod retry;
mod tls;
mod webhooks;

use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod};
use harnessx::BoxFuture;
use harnessx::journal::{InputReply, PendingInput, PendingKind};
use harnessx::{Message, RunResult};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;
use tokio_postgres::types::ToSql;

use retry::{Attempt, pg, pg_commit, pool};
pub use tls::SslMode;

use super::{
    Answered, Asked, Cancelled, Claim, ConversationFilter, ConversationRecord, Lease, LeaseInfo,
    NewRun, Reply, RunCounts, RunEnd, RunFilter, RunRecord, RunStore, SchemaVersion, Step,
    StoreStats, Wakeup, WebhookEvent,
};
use crate::error::{InputError, StoreError};
use crate::types::{ConversationSummary, RunEvent, RunId, RunState, StoredEvent, TITLE_CHARS};

/// The migrations, numbered, in `migrations/postgres/`.
// The last migration is the release's schema version.
const _: () = assert!(MIGRATIONS[MIGRATIONS.len() - 1].0 == super::SCHEMA_VERSION);

pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../migrations/postgres/0001_init.sql")),
    (
        2,
        include_str!("../../migrations/postgres/0002_event_notices.sql"),
    ),
    (
        3,
        include_str!("../../migrations/postgres/0003_resources.sql"),
    ),
    (
        4,
        include_str!("../../migrations/postgres/0004_knowledge.sql"),
    ),
    (
        5,
        include_str!("../../migrations/postgres/0005_webhooks.sql"),
    ),
    (
        6,
        include_str!("../../migrations/postgres/0006_retention.sql"),
    ),
];

/// Serializes migrations of concurrently starting workers (`pg_advisory_xact_lock`).
const MIGRATION_LOCK: i64 = 0x6861_726e_6573_7378;

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// How a [`PostgresStore`] connects.
///
/// ```
/// use std::time::Duration;
/// use harnessx_runtime::store::{PostgresConfig, SslMode};
/// let config = PostgresConfig::new("postgresql://postgres@db.example:5432/postgres")
///     .pool_size(8)
///     .retry_for(Duration::from_secs(30))
///     .ssl_mode(SslMode::VerifyFull)
///     .root_certificates("/etc/harnessx/db-ca.pem");
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    url: String,
    pool_size: usize,
    retry_for: Duration,
    ssl_mode: Option<SslMode>,
    root_certificates: Option<PathBuf>,
}

impl PostgresConfig {
    /// A connection URL (`postgresql://user@host:port/db?sslmode=verify-full`) or key-value
    /// string (`host=db.example user=app sslmode=verify-full`). Besides what tokio-postgres
    /// reads, it may hold `sslmode` and `sslrootcert` (see [`PostgresStore`]).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            pool_size: 16,
            retry_for: Duration::from_secs(60),
            ssl_mode: None,
            root_certificates: None,
        }
    }

    /// Whether and how to use TLS; overrides `sslmode` in the URL. Without either, the mode is
    /// [`SslMode::Prefer`] (or `verify-full` with `sslrootcert=system`), as in libpq.
    ///
    /// ```
    /// use harnessx_runtime::store::{PostgresConfig, SslMode};
    /// // The URL asks for `require`; the builder wins.
    /// let config = PostgresConfig::new("postgresql://app@db.example/app?sslmode=require")
    ///     .ssl_mode(SslMode::VerifyCa);
    /// # let _ = config;
    /// ```
    pub fn ssl_mode(mut self, mode: SslMode) -> Self {
        self.ssl_mode = Some(mode);
        self
    }

    /// A PEM file of the CA certificates that may sign the server's certificate, for
    /// `verify-ca` and `verify-full` (and `require`, which then checks the CA, as libpq does);
    /// overrides `sslrootcert` in the URL. `"system"` means the system's trusted roots and
    /// needs `verify-full`, as in libpq 16 (name a file called `system` as `./system`). Without
    /// either, `verify-ca` and `verify-full` use the system's roots. The file is read when the
    /// store connects; an unreadable one fails [`PostgresStore::connect_with`] with
    /// [`StoreError::Setting`].
    ///
    /// ```
    /// use harnessx_runtime::store::{PostgresConfig, SslMode};
    /// let config = PostgresConfig::new("postgresql://app@db.example/app")
    ///     .ssl_mode(SslMode::VerifyFull)
    ///     .root_certificates("/etc/harnessx/db-ca.pem");
    /// # let _ = config;
    /// ```
    pub fn root_certificates(mut self, path: impl Into<PathBuf>) -> Self {
        self.root_certificates = Some(path.into());
        self
    }

    /// How many pooled connections (default 16; the listening connection is extra).
    pub fn pool_size(mut self, n: usize) -> Self {
        self.pool_size = n.max(1);
        self
    }

    /// How long a call retries a lost connection before it fails (default 60 s).
    pub fn retry_for(mut self, d: Duration) -> Self {
        self.retry_for = d;
        self
    }
}

/// The PostgreSQL [`RunStore`], shared by any number of worker processes.
///
/// # TLS
///
/// The connection string's `sslmode` says whether connections are encrypted and what is
/// checked, as libpq reads it (see [`SslMode`]): `disable`; `prefer`, the default, which
/// encrypts when the server offers TLS and falls back to plain text when it does not; `require`,
/// which encrypts without checking the certificate; `verify-ca`, which checks that a trusted CA
/// signed the server's certificate; `verify-full`, which also checks it names the host
/// connected to. `sslrootcert` names a PEM file of trusted CA certificates; without it,
/// `verify-ca` and `verify-full` trust the system's roots (as `rustls-native-certs` finds them,
/// honouring `SSL_CERT_FILE` and `SSL_CERT_DIR`), and `sslrootcert=system` asks for them
/// explicitly (with `verify-full` only). Unlike libpq, `~/.postgresql/root.crt` is not read,
/// `sslmode=allow` and client certificates (`sslcert`) are not supported, and `prefer` falls back
/// to plain text only when the server offers no TLS, not when a handshake fails. Over Unix
/// sockets no TLS is asked for, as in libpq. Every connection, the pool's and the listening
/// one, uses the same setting. A failed check is reported at once as [`StoreError::Tls`],
/// naming the check, and is not retried like a lost connection.
///
/// ```no_run
/// use harnessx_runtime::store::PostgresStore;
/// # async fn f() -> Result<(), harnessx_runtime::StoreError> {
/// let store = PostgresStore::connect(
///     "postgresql://app@db.example/app?sslmode=verify-full&sslrootcert=/etc/harnessx/db-ca.pem",
/// )
/// .await?;
/// assert!(store.is_encrypted().await?);
/// # Ok(()) }
/// ```
///
/// ```no_run
/// use harnessx_runtime::store::PostgresStore;
/// # async fn f() -> Result<(), harnessx_runtime::StoreError> {
/// let store = PostgresStore::connect("postgresql://postgres@127.0.0.1:5432/postgres").await?;
/// assert_eq!(store.schema_version().await?, harnessx_runtime::store::SCHEMA_VERSION);
/// # Ok(()) }
/// ```
pub struct PostgresStore {
    pool: Pool,
    tls: tls::Settings,
    /// The hosts of the connection string, for messages.
    hosts: String,
    wake: broadcast::Sender<Wakeup>,
    listener: tokio::task::JoinHandle<()>,
    retry_for: Duration,
    losses: Arc<AtomicU64>,
    listening: Arc<AtomicBool>,
    tokens: RandomState,
    next_token: AtomicU64,
    /// Notified when this process committed a webhook message.
    webhooks: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl PostgresStore {
    /// Connects with the defaults of [`PostgresConfig`], applies the migrations and starts
    /// listening; must be called inside a tokio runtime.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(PostgresConfig::new(url)).await
    }

    /// Connects with `config`.
    ///
    /// # Errors
    /// [`StoreError::Setting`] for a bad `sslmode` or `sslrootcert`, [`StoreError::Tls`] when
    /// the server fails a TLS check, [`StoreError::Backend`] for a URL that does not parse or
    /// a server unreachable for [`PostgresConfig::retry_for`].
    pub async fn connect_with(config: PostgresConfig) -> Result<Self, StoreError> {
        Self::open(config, super::SCHEMA_VERSION).await
    }

    /// Brings the database at `url` to schema `version` only (the migrations up to it), as a
    /// release of that schema left it: for upgrade tests, which then write rows the way that
    /// release did.
    #[doc(hidden)]
    pub async fn migrate_to(url: &str, version: i64) -> Result<(), StoreError> {
        Self::open(PostgresConfig::new(url), version)
            .await
            .map(drop)
    }

    /// Connects and applies the migrations up to `up_to`.
    async fn open(config: PostgresConfig, up_to: i64) -> Result<Self, StoreError> {
        let conninfo = conninfo::split(&config.url)?;
        let mut pg_config: tokio_postgres::Config =
            conninfo.rest.parse().map_err(|e| StoreError::Backend {
                context: "reading the PostgreSQL URL".into(),
                message: format!("{e}; give a URL such as postgresql://user@host:5432/database"),
            })?;
        pg_config.connect_timeout(Duration::from_secs(5));
        let settings = tls::Settings::resolve(
            config.ssl_mode.or(conninfo.ssl_mode),
            config.root_certificates.or(conninfo.root_cert),
        )?;
        pg_config.ssl_mode(settings.negotiation(&pg_config));
        let connector = tls::MakeRustls::new(settings.clone())?;
        let manager = Manager::from_config(
            pg_config.clone(),
            connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(config.pool_size)
            .build()
            .map_err(|e| StoreError::backend("building the connection pool", e))?;
        let losses = Arc::new(AtomicU64::new(0));
        let wake = broadcast::channel(1024).0;
        let listening = Arc::new(AtomicBool::new(false));
        let hosts = tls::hosts(&pg_config);
        let listener = tokio::spawn(listen::listen(
            pg_config,
            connector,
            wake.clone(),
            Arc::clone(&losses),
            Arc::clone(&listening),
        ));
        let store = Self {
            pool,
            tls: settings,
            hosts,
            wake,
            listener,
            retry_for: config.retry_for,
            losses,
            listening,
            tokens: RandomState::new(),
            next_token: AtomicU64::new(0),
            webhooks: Arc::default(),
        };
        store
            .retry("applying migrations", || store.migrate(up_to))
            .await?;
        Ok(store)
    }

    async fn migrate(&self, up_to: i64) -> Result<(), Attempt> {
        const WHAT: &str = "applying migrations";
        let mut client = self.client(WHAT).await?;
        let tx = client.transaction().await.map_err(pg(WHAT))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(pg(WHAT))?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version bigint NOT NULL)")
            .await
            .map_err(pg(WHAT))?;
        let current: i64 = tx
            .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])
            .await
            .map_err(pg(WHAT))?
            .get(0);
        let known = super::SCHEMA_VERSION;
        if current > known {
            return Err(StoreError::TooNew {
                found: current,
                known,
            }
            .into());
        }
        for (version, sql) in MIGRATIONS.iter().filter(|m| m.0 > current && m.0 <= up_to) {
            tx.batch_execute(sql).await.map_err(|e| Attempt {
                transient: retry::is_transient(&e),
                ambiguous: false,
                error: StoreError::backend(format!("applying migration {version:04}"), e),
            })?;
            tx.execute("INSERT INTO schema_version VALUES ($1)", &[version])
                .await
                .map_err(pg(WHAT))?;
        }
        tx.commit().await.map_err(pg(WHAT))
    }

    /// The schema version.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        self.retry("reading the schema version", || async {
            let c = self.client("reading the schema version").await?;
            let row = one(
                &c,
                "reading the schema version",
                "SELECT MAX(version) FROM schema_version",
                &[],
            )
            .await?;
            Ok(row.get(0))
        })
        .await
    }

    /// Whether a pooled connection is encrypted with TLS, as the server reports it
    /// (`pg_stat_ssl`). Under `sslmode=prefer` this tells whether the server offered TLS.
    ///
    /// ```no_run
    /// # async fn f(store: harnessx_runtime::PostgresStore) -> Result<(), harnessx_runtime::StoreError> {
    /// if !store.is_encrypted().await? {
    ///     eprintln!("warning: the run store's connections are not encrypted");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn is_encrypted(&self) -> Result<bool, StoreError> {
        const WHAT: &str = "reading whether the connection is encrypted";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let row = opt(
                &c,
                WHAT,
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await?;
            Ok(row.is_some_and(|r| r.get(0)))
        })
        .await
    }

    /// How many times a connection was lost since the store was opened (each one was retried
    /// with backoff and logged with `tracing`).
    pub fn connection_losses(&self) -> u64 {
        self.losses.load(Ordering::Relaxed)
    }

    /// Whether the listening connection is up (`LISTEN` is in effect). While it is down,
    /// workers poll with backoff instead.
    pub fn is_listening(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// A bare one-row commit on a pooled connection, to compare a step's cost with.
    #[doc(hidden)]
    pub async fn bare_commit(&self) -> Result<(), StoreError> {
        self.retry("a bare commit", || async {
            let c = self.client("a bare commit").await?;
            c.batch_execute("CREATE TABLE IF NOT EXISTS bench_commits (n bigint)")
                .await
                .map_err(pg("a bare commit"))?;
            exec(
                &c,
                "a bare commit",
                "INSERT INTO bench_commits VALUES (1)",
                &[],
            )
            .await?;
            Ok(())
        })
        .await
    }

    fn token(&self) -> i64 {
        let n = self.next_token.fetch_add(1, Ordering::Relaxed);
        self.tokens.hash_one((n, std::process::id())) as i64
    }

    /// A pooled connection. A refused TLS connection is final; other failures to connect are
    /// retried.
    async fn client(&self, what: &'static str) -> Result<deadpool_postgres::Object, Attempt> {
        self.pool.get().await.map_err(|e| {
            if let deadpool_postgres::PoolError::Backend(backend) = &e
                && let Some(refused) = tls::refusal(backend, &self.tls, &self.hosts)
            {
                return refused.into();
            }
            pool(what)(e)
        })
    }

    /// Reports a lost connection and waits before the next attempt.
    async fn back_off(&self, what: &str, attempt: &Attempt, delay: &mut Duration) {
        self.losses.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            error = %attempt.error,
            retry_in_ms = delay.as_millis() as u64,
            "the PostgreSQL run store lost its connection while {what}; retrying"
        );
        tokio::time::sleep(*delay).await;
        *delay = retry::next_delay(*delay);
    }

    /// The single `MIN(..)` a timer sleeps until (`None` when no row has one), read with retries.
    async fn earliest_ms(
        &self,
        what: &'static str,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<i64>, StoreError> {
        self.retry(what, || async {
            let c = self.client(what).await?;
            Ok(one(&c, what, sql, params).await?.get(0))
        })
        .await
    }

    /// Puts the running runs that match `filter` (with `$1` bound to `value`) back in the
    /// queue, leaseless, and wakes the workers; returns how many. Safe to retry: a run it
    /// re-queued no longer matches.
    async fn requeue(
        &self,
        what: &'static str,
        filter: &str,
        value: &(dyn ToSql + Sync),
    ) -> Result<u64, StoreError> {
        let sql = format!(
            "UPDATE runs SET state = 'queued', owner = NULL, lease_until_ms = NULL
             WHERE state = 'running' AND {filter}"
        );
        self.retry(what, || async {
            let mut c = self.client(what).await?;
            let tx = c.transaction().await.map_err(pg(what))?;
            let n = exec(&tx, what, &sql, &[value]).await?;
            if n > 0 {
                notify(&tx, "queued").await?;
            }
            tx.commit().await.map_err(pg_commit(what))?;
            Ok(n)
        })
        .await
    }

    /// Runs `attempt` until it succeeds, fails for good, or connections stay lost for
    /// `retry_for`. An ambiguous failure is returned as an error (for reads and writes that are
    /// safe to report so).
    async fn retry<T, F, Fut>(&self, what: &'static str, mut attempt: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Attempt>>,
    {
        let start = Instant::now();
        let mut delay = retry::FIRST_DELAY;
        loop {
            match attempt().await {
                Ok(v) => return Ok(v),
                Err(a) if a.transient && !a.ambiguous && start.elapsed() < self.retry_for => {
                    self.back_off(what, &a, &mut delay).await;
                }
                Err(a) => return Err(a.error),
            }
        }
    }

    /// Like [`retry`](Self::retry) for a write that sets `runs.last_write` to a token: after an
    /// ambiguous failure, `verify` says whether the write took effect (and returns its result),
    /// so it is tried again only when it did not.
    async fn retry_verified<T, F, Fut, V, VFut>(
        &self,
        what: &'static str,
        mut attempt: F,
        mut verify: V,
    ) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Attempt>>,
        V: FnMut() -> VFut,
        VFut: Future<Output = Result<Option<T>, Attempt>>,
    {
        let start = Instant::now();
        let mut delay = retry::FIRST_DELAY;
        loop {
            match attempt().await {
                Ok(v) => return Ok(v),
                Err(a) if a.transient && start.elapsed() < self.retry_for => {
                    let ambiguous = a.ambiguous;
                    self.back_off(what, &a, &mut delay).await;
                    if ambiguous {
                        let done = self.retry(what, &mut verify).await?;
                        if let Some(v) = done {
                            return Ok(v);
                        }
                    }
                }
                Err(a) => return Err(a.error),
            }
        }
    }
}

fn json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::backend("encoding a row", e))
}

fn parse<T: DeserializeOwned>(what: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        what: what.to_owned(),
        message: e.to_string(),
    })
}

fn int(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

async fn rows<C: GenericClient>(
    c: &C,
    what: &'static str,
    sql: &str,
    params: Params<'_>,
) -> Result<Vec<tokio_postgres::Row>, Attempt> {
    let stmt = c.prepare_cached(sql).await.map_err(pg(what))?;
    c.query(&stmt, params).await.map_err(pg(what))
}

async fn opt<C: GenericClient>(
    c: &C,
    what: &'static str,
    sql: &str,
    params: Params<'_>,
) -> Result<Option<tokio_postgres::Row>, Attempt> {
    let stmt = c.prepare_cached(sql).await.map_err(pg(what))?;
    c.query_opt(&stmt, params).await.map_err(pg(what))
}

async fn one<C: GenericClient>(
    c: &C,
    what: &'static str,
    sql: &str,
    params: Params<'_>,
) -> Result<tokio_postgres::Row, Attempt> {
    let stmt = c.prepare_cached(sql).await.map_err(pg(what))?;
    c.query_one(&stmt, params).await.map_err(pg(what))
}

async fn exec<C: GenericClient>(
    c: &C,
    what: &'static str,
    sql: &str,
    params: Params<'_>,
) -> Result<u64, Attempt> {
    let stmt = c.prepare_cached(sql).await.map_err(pg(what))?;
    c.execute(&stmt, params).await.map_err(pg(what))
}

async fn notify<C: GenericClient>(c: &C, payload: &str) -> Result<(), Attempt> {
    exec(
        c,
        "notifying workers",
        "SELECT pg_notify('harnessx_runs', $1)",
        &[&payload],
    )
    .await?;
    Ok(())
}

/// Inserts `events` numbered from `first`, stored at `at_ms`; returns them stored.
async fn insert_events<C: GenericClient>(
    c: &C,
    run: RunId,
    first: i64,
    events: Vec<RunEvent>,
    at_ms: i64,
) -> Result<Vec<StoredEvent>, Attempt> {
    let bodies = event_bodies(&events, at_ms)?;
    exec(
        c,
        "writing events",
        "INSERT INTO events (run_id, seq, body)
         SELECT $1, $2 + o.n - 1, o.body FROM unnest($3::text[]) WITH ORDINALITY AS o(body, n)",
        &[&run.0, &first, &bodies],
    )
    .await?;
    Ok(stored(run, first, events, at_ms))
}

/// The bodies of `events` stored at `at_ms` (see [`super::event_body`]).
fn event_bodies(events: &[RunEvent], at_ms: i64) -> Result<Vec<String>, StoreError> {
    events
        .iter()
        .map(|e| super::event_body(e, at_ms).map_err(|e| StoreError::backend("encoding a row", e)))
        .collect()
}

fn stored(run: RunId, first: i64, events: Vec<RunEvent>, at_ms: i64) -> Vec<StoredEvent> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| StoredEvent {
            run,
            seq: (first + i as i64) as u64,
            event,
            at_ms: Some(at_ms),
        })
        .collect()
}

async fn insert_step<C: GenericClient>(
    c: &C,
    run: RunId,
    seq: i64,
    step: &Step,
) -> Result<(), Attempt> {
    let (turn, idx) = step.position();
    exec(
        c,
        "writing a step",
        "INSERT INTO steps (run_id, seq, kind, turn, idx, body) VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &run.0,
            &seq,
            &step.kind(),
            &int(turn),
            &int(idx),
            &json(step)?,
        ],
    )
    .await?;
    Ok(())
}

/// Reserves step and event numbers for a run `lease` holds, tagging it with `token`; refuses
/// when the lease moved on. Returns the first of each.
async fn reserve<C: GenericClient>(
    c: &C,
    lease: &Lease,
    token: i64,
    steps: i64,
    events: i64,
) -> Result<(i64, i64), Attempt> {
    opt(
        c,
        "reserving sequence numbers",
        "UPDATE runs SET step_seq = step_seq + $1, event_seq = event_seq + $2,
           updated_ms = harnessx_now_ms(), last_write = $3
         WHERE id = $4 AND owner = $5 AND lease_gen = $6 AND state = 'running'
         RETURNING step_seq, event_seq",
        &[
            &steps,
            &events,
            &token,
            &lease.run.0,
            &lease.owner,
            &lease.generation,
        ],
    )
    .await?
    .map(|r| {
        (
            r.get::<_, i64>(0) - steps + 1,
            r.get::<_, i64>(1) - events + 1,
        )
    })
    .ok_or_else(|| StoreError::Fenced { run: lease.run }.into())
}

/// The same for a run no worker holds (answers, cancels, expiries).
async fn reserve_unleased<C: GenericClient>(
    c: &C,
    run: RunId,
    token: i64,
    steps: i64,
    events: i64,
) -> Result<(i64, i64), Attempt> {
    let r = one(
        c,
        "reserving sequence numbers",
        "UPDATE runs SET step_seq = step_seq + $1, event_seq = event_seq + $2,
           updated_ms = harnessx_now_ms(), last_write = $3
         WHERE id = $4 RETURNING step_seq, event_seq",
        &[&steps, &events, &token, &run.0],
    )
    .await?;
    Ok((
        r.get::<_, i64>(0) - steps + 1,
        r.get::<_, i64>(1) - events + 1,
    ))
}

async fn set_state<C: GenericClient>(c: &C, run: RunId, state: RunState) -> Result<(), Attempt> {
    exec(
        c,
        "changing a run's state",
        "UPDATE runs SET state = $1, owner = NULL, lease_until_ms = NULL WHERE id = $2",
        &[&state.as_str(), &run.0],
    )
    .await?;
    Ok(())
}

/// The columns [`record`] reads, in its order.
const RUN_COLUMNS: &str =
    "id, agent, conversation, input, state, result, error, agent_version, created_ms, updated_ms";

/// A run from a row selected with [`RUN_COLUMNS`], with its unanswered pending items.
fn record(row: &tokio_postgres::Row, pending: Vec<Asked>) -> Result<RunRecord, Attempt> {
    let id = RunId(row.get(0));
    let state: String = row.get(4);
    let state = RunState::parse(&state).ok_or_else(|| StoreError::Corrupt {
        what: format!("state of {id}"),
        message: format!("`{state}` is not a run state"),
    })?;
    let result = row
        .get::<_, Option<String>>(5)
        .map(|r| parse::<RunResult>(&format!("result of {id}"), &r))
        .transpose()?;
    Ok(RunRecord {
        id,
        agent: row.get(1),
        conversation: row.get(2),
        input: row.get(3),
        state,
        pending,
        result,
        error: row.get(6),
        agent_version: row
            .get::<_, Option<i64>>(7)
            .and_then(|v| u64::try_from(v).ok()),
        created_ms: row.get(8),
        // Every write to a run (each step, answer, state change) sets it.
        updated_ms: row.get(9),
    })
}

async fn read_run<C: GenericClient>(c: &C, id: RunId) -> Result<Option<RunRecord>, Attempt> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1");
    let Some(row) = opt(c, "reading a run", &sql, &[&id.0]).await? else {
        return Ok(None);
    };
    Ok(Some(record(&row, unanswered(c, id).await?)?))
}

async fn unanswered<C: GenericClient>(c: &C, id: RunId) -> Result<Vec<Asked>, Attempt> {
    rows(
        c,
        "reading pending input",
        "SELECT body, deadline_ms FROM pending WHERE run_id = $1 AND reply IS NULL
         ORDER BY turn, idx",
        &[&id.0],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(Asked {
            pending: parse::<PendingInput>("pending input", r.get(0))?,
            deadline_ms: r.get(1),
        })
    })
    .collect()
}

async fn transcript<C: GenericClient>(c: &C, conversation: &str) -> Result<Vec<Message>, Attempt> {
    rows(
        c,
        "reading a transcript",
        "SELECT body FROM messages WHERE conversation = $1 ORDER BY seq",
        &[&conversation],
    )
    .await?
    .iter()
    .map(|r| Ok(parse::<Message>("message", r.get(0))?))
    .collect()
}

/// The journal, transcript and grants of a run claimed under `lease`; `more_queued` is what the
/// claim saw behind it (see [`Claim::more_queued`]).
async fn load_claim<C: GenericClient>(
    c: &C,
    lease: Lease,
    more_queued: bool,
) -> Result<Claim, Attempt> {
    let run = read_run(c, lease.run)
        .await?
        .ok_or(StoreError::Fenced { run: lease.run })?;
    let steps = rows(
        c,
        "reading a journal",
        "SELECT body FROM steps WHERE run_id = $1 ORDER BY seq",
        &[&lease.run.0],
    )
    .await?
    .iter()
    .map(|r| parse::<Step>("journal step", r.get(0)))
    .collect::<Result<Vec<_>, _>>()?;
    let grants = rows(
        c,
        "reading grants",
        "SELECT tool FROM grants WHERE conversation = $1",
        &[&run.conversation],
    )
    .await?
    .iter()
    .map(|r| r.get(0))
    .collect();
    let transcript = transcript(c, &run.conversation).await?;
    Ok(Claim {
        run,
        lease,
        steps,
        transcript,
        grants,
        more_queued,
    })
}

/// Journals `reply` for `pending`, and re-queues the run (notifying workers) when nothing else
/// is pending.
async fn apply_reply<C: GenericClient>(
    c: &C,
    run: RunId,
    token: i64,
    pending: &PendingInput,
    reply: InputReply,
    by: Option<String>,
) -> Result<Answered, Attempt> {
    exec(
        c,
        "recording a reply",
        "UPDATE pending SET reply = $1 WHERE run_id = $2 AND turn = $3 AND idx = $4",
        &[
            &json(&reply)?,
            &run.0,
            &int(pending.key.turn),
            &int(pending.key.index),
        ],
    )
    .await?;
    let left: i64 = one(
        c,
        "recording a reply",
        "SELECT COUNT(*) FROM pending WHERE run_id = $1 AND reply IS NULL",
        &[&run.0],
    )
    .await?
    .get(0);
    let requeued = left == 0;
    let mut events = vec![RunEvent::Answered {
        call_id: pending.call_id.clone(),
        reply: reply.clone(),
        by,
    }];
    if requeued {
        events.push(RunEvent::State {
            state: RunState::Queued,
        });
        exec(
            c,
            "recording a reply",
            "DELETE FROM pending WHERE run_id = $1",
            &[&run.0],
        )
        .await?;
        set_state(c, run, RunState::Queued).await?;
        notify(c, "queued").await?;
    }
    let (step, first) = reserve_unleased(c, run, token, 1, events.len() as i64).await?;
    insert_step(
        c,
        run,
        step,
        &Step::Replied {
            key: pending.key,
            reply,
        },
    )
    .await?;
    Ok(Answered {
        requeued,
        events: insert_events(c, run, first, events, super::now_ms()).await?,
    })
}

/// The events a write tagged `token` stored, if that write was the run's last: the answer to
/// "did my commit take effect?" after a lost connection.
async fn written<C: GenericClient>(
    c: &C,
    run: RunId,
    token: i64,
    events: Vec<RunEvent>,
    at_ms: i64,
) -> Result<Option<Vec<StoredEvent>>, Attempt> {
    let row = opt(
        c,
        "checking a lost commit",
        "SELECT event_seq FROM runs WHERE id = $1 AND last_write = $2",
        &[&run.0, &token],
    )
    .await?;
    Ok(row.map(|r| {
        let last: i64 = r.get(0);
        stored(run, last - events.len() as i64 + 1, events, at_ms)
    }))
}

const APPEND: &str = "
WITH r AS (
    UPDATE runs SET step_seq = step_seq + 1, event_seq = event_seq + $5,
        updated_ms = harnessx_now_ms(), last_write = $4
    WHERE id = $1 AND owner = $2 AND lease_gen = $3 AND state = 'running'
    RETURNING step_seq, event_seq
), s AS (
    INSERT INTO steps (run_id, seq, kind, turn, idx, body)
    SELECT $1, r.step_seq, $6, $7, $8, $9 FROM r
), e AS (
    INSERT INTO events (run_id, seq, body)
    SELECT $1, r.event_seq - $5 + o.n, o.body
    FROM r, unnest($10::text[]) WITH ORDINALITY AS o(body, n)
)
SELECT event_seq FROM r";

// The `RunStore` methods, boxed into the trait's own by `boxed_run_store!` below.
impl PostgresStore {
    async fn stats(&self) -> Result<StoreStats, StoreError> {
        const WHAT: &str = "reading queue depth and leases";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let mut stats = StoreStats::default();
            for r in rows(
                &c,
                WHAT,
                "SELECT state, COUNT(*) FROM runs
                 WHERE state IN ('queued', 'running', 'waiting_input') GROUP BY state",
                &[],
            )
            .await?
            {
                let n = u64::try_from(r.get::<_, i64>(1)).unwrap_or(0);
                match r.get::<_, &str>(0) {
                    "queued" => stats.queued = n,
                    "running" => stats.running = n,
                    _ => stats.waiting_input = n,
                }
            }
            stats.leases = rows(
                &c,
                WHAT,
                "SELECT id, owner, lease_gen, lease_until_ms FROM runs
                 WHERE state = 'running' ORDER BY id",
                &[],
            )
            .await?
            .iter()
            .map(|r| LeaseInfo {
                run: RunId(r.get(0)),
                owner: r.get::<_, Option<String>>(1).unwrap_or_default(),
                generation: r.get(2),
                until_ms: r.get::<_, Option<i64>>(3).unwrap_or(0),
            })
            .collect();
            Ok(stats)
        })
        .await
    }

    async fn count_runs(&self) -> Result<RunCounts, StoreError> {
        const WHAT: &str = "counting runs by state";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let mut counts = RunCounts::default();
            for r in rows(
                &c,
                WHAT,
                "SELECT state, COUNT(*) FROM runs GROUP BY state",
                &[],
            )
            .await?
            {
                counts.set(
                    r.get::<_, &str>(0),
                    u64::try_from(r.get::<_, i64>(1)).unwrap_or(0),
                );
            }
            Ok(counts)
        })
        .await
    }

    async fn schema(&self) -> Result<SchemaVersion, StoreError> {
        const WHAT: &str = "reading the schema version";
        // One attempt, no retry: a probe wants to know now that the database is unreachable.
        let attempt = async {
            let c = self.client(WHAT).await?;
            let row = one(
                &c,
                WHAT,
                "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                &[],
            )
            .await?;
            Ok::<i64, Attempt>(row.get(0))
        };
        let found = attempt.await.map_err(|a| a.error)?;
        Ok(SchemaVersion {
            found,
            known: super::SCHEMA_VERSION,
        })
    }

    async fn create_run(&self, new: NewRun) -> Result<(RunRecord, bool), StoreError> {
        const WHAT: &str = "creating a run";
        let token = self.token();
        let queued = super::event_body(
            &RunEvent::State {
                state: RunState::Queued,
            },
            super::now_ms(),
        )
        .map_err(|e| StoreError::backend("encoding a row", e))?;
        let (id, created) = self
            .retry_verified(
                WHAT,
                || async {
                    let mut c = self.client(WHAT).await?;
                    let tx = c.transaction().await.map_err(pg(WHAT))?;
                    if let Some(key) = &new.idempotency_key
                        && let Some(r) = opt(
                            &tx,
                            WHAT,
                            "SELECT id FROM runs WHERE idempotency_key = $1",
                            &[key],
                        )
                        .await?
                    {
                        return Ok((RunId(r.get(0)), false));
                    }
                    let id: i64 = one(&tx, WHAT, "SELECT nextval(pg_get_serial_sequence('runs', 'id'))", &[])
                        .await?
                        .get(0);
                    let conversation = new
                        .conversation
                        .clone()
                        .unwrap_or_else(|| format!("run-{id}"));
                    // An existing conversation's row is locked (an update that changes nothing),
                    // so retention, which skips locked conversations, cannot delete it before
                    // this run is committed in it; one it deleted a moment ago is made again.
                    exec(
                        &tx,
                        WHAT,
                        "INSERT INTO conversations (id, created_ms) VALUES ($1, harnessx_now_ms())
                         ON CONFLICT (id) DO UPDATE SET created_ms = conversations.created_ms",
                        &[&conversation],
                    )
                    .await?;
                    let inserted = opt(
                        &tx,
                        WHAT,
                        "INSERT INTO runs (id, agent, conversation, input, idempotency_key, state,
                           event_seq, last_write, created_ms, updated_ms, agent_version)
                         VALUES ($1, $2, $3, $4, $5, 'queued', 1, $6, harnessx_now_ms(), harnessx_now_ms(), $7)
                         ON CONFLICT (idempotency_key) DO NOTHING RETURNING id",
                        &[
                            &id,
                            &new.agent,
                            &conversation,
                            &new.input,
                            &new.idempotency_key,
                            &token,
                            &new.agent_version.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
                        ],
                    )
                    .await?;
                    if inserted.is_none() {
                        // Another process created it with the same key a moment ago.
                        drop(tx);
                        let r = one(
                            &c,
                            WHAT,
                            "SELECT id FROM runs WHERE idempotency_key = $1",
                            &[&new.idempotency_key],
                        )
                        .await?;
                        return Ok((RunId(r.get(0)), false));
                    }
                    exec(
                        &tx,
                        WHAT,
                        "INSERT INTO events (run_id, seq, body) VALUES ($1, 1, $2)",
                        &[&id, &queued],
                    )
                    .await?;
                    notify(&tx, "queued").await?;
                    tx.commit().await.map_err(pg_commit(WHAT))?;
                    Ok((RunId(id), true))
                },
                || async {
                    let c = self.client(WHAT).await?;
                    Ok(opt(&c, WHAT, "SELECT id FROM runs WHERE last_write = $1", &[&token])
                        .await?
                        .map(|r| (RunId(r.get(0)), true)))
                },
            )
            .await?;
        let run = self.run(id).await?.ok_or_else(|| StoreError::Corrupt {
            what: id.to_string(),
            message: "the run vanished after it was created".into(),
        })?;
        Ok((run, created))
    }

    async fn claim_next(&self, owner: &str, lease_ms: i64) -> Result<Option<Claim>, StoreError> {
        const WHAT: &str = "claiming a run";
        let token = self.token();
        let running = super::event_body(
            &RunEvent::State {
                state: RunState::Running,
            },
            super::now_ms(),
        )
        .map_err(|e| StoreError::backend("encoding a row", e))?;
        self.retry_verified(
            WHAT,
            || async {
                let c = self.client(WHAT).await?;
                // One statement, committed on its own: the oldest queued run whose
                // conversation has no earlier run still going (runs of one conversation run one
                // after another), else one whose lease lapsed (its worker died), with its
                // `running` event. Rows another worker
                // is claiming right now are skipped, not waited for; an empty queue costs one
                // round trip and no transaction.
                let stmt = c
                    .prepare_cached(
                        "WITH q AS (
                            SELECT id FROM runs r WHERE state = 'queued'
                              AND NOT EXISTS (
                                SELECT 1 FROM runs o WHERE o.conversation = r.conversation
                                  AND o.id < r.id
                                  AND o.state IN ('queued', 'running', 'waiting_input'))
                            ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
                         ), l AS (
                            SELECT id FROM runs
                            WHERE state = 'running' AND lease_until_ms < harnessx_now_ms()
                              AND NOT EXISTS (SELECT 1 FROM q)
                            ORDER BY lease_until_ms LIMIT 1 FOR UPDATE SKIP LOCKED
                         ), claimed AS (
                            UPDATE runs SET state = 'running', owner = $1,
                               lease_gen = lease_gen + 1, lease_until_ms = harnessx_now_ms() + $2,
                               event_seq = event_seq + 1, cancel_requested = false,
                               last_write = $3, updated_ms = harnessx_now_ms()
                            WHERE id = (SELECT id FROM q UNION ALL SELECT id FROM l LIMIT 1)
                            RETURNING id, lease_gen, event_seq
                         ), ev AS (
                            INSERT INTO events (run_id, seq, body)
                            SELECT id, event_seq, $4::text FROM claimed
                         )
                         SELECT id, lease_gen,
                                EXISTS (SELECT 1 FROM runs
                                        WHERE state = 'queued' AND id > claimed.id)
                         FROM claimed",
                    )
                    .await
                    .map_err(pg(WHAT))?;
                let Some(r) = c
                    .query_opt(&stmt, &[&owner, &lease_ms, &token, &running])
                    .await
                    .map_err(pg_commit(WHAT))?
                else {
                    return Ok(None);
                };
                let lease = Lease {
                    run: RunId(r.get(0)),
                    owner: owner.to_owned(),
                    generation: r.get(1),
                };
                // Queued runs after this one (rows other workers are claiming included).
                let more_queued: bool = r.get(2);
                match load_claim(&c, lease.clone(), more_queued).await {
                    Ok(claim) => Ok(Some(claim)),
                    // The claim is committed: a lost connection is settled by `verify`, which
                    // finds the run by this attempt's token.
                    Err(a) if a.transient => Err(Attempt {
                        ambiguous: true,
                        ..a
                    }),
                    // An unreadable run goes back to the queue rather than staying leased (and
                    // renewed) with no task driving it.
                    Err(a) => {
                        let _ = exec(
                            &c,
                            WHAT,
                            "UPDATE runs SET state = 'queued', owner = NULL, lease_until_ms = NULL
                             WHERE id = $1 AND owner = $2 AND lease_gen = $3",
                            &[&lease.run.0, &lease.owner, &lease.generation],
                        )
                        .await;
                        Err(a)
                    }
                }
            },
            || async {
                let c = self.client(WHAT).await?;
                let Some(r) = opt(
                    &c,
                    WHAT,
                    "SELECT id, lease_gen FROM runs
                     WHERE last_write = $1 AND owner = $2 AND state = 'running'",
                    &[&token, &owner],
                )
                .await?
                else {
                    return Ok(None);
                };
                let lease = Lease {
                    run: RunId(r.get(0)),
                    owner: owner.to_owned(),
                    generation: r.get(1),
                };
                // What the lost claim saw behind it is unknown: unsure means look again.
                Ok(Some(Some(load_claim(&c, lease, true).await?)))
            },
        )
        .await
    }

    async fn append_step(
        &self,
        lease: &Lease,
        step: Step,
        events: Vec<RunEvent>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        const WHAT: &str = "writing a step";
        let token = self.token();
        let (turn, idx) = step.position();
        let body = json(&step)?;
        let at_ms = super::now_ms();
        let bodies = event_bodies(&events, at_ms)?;
        let n = bodies.len() as i64;
        let events = &events;
        self.retry_verified(
            WHAT,
            || async {
                let c = self.client(WHAT).await?;
                let stmt = c.prepare_cached(APPEND).await.map_err(pg(WHAT))?;
                // One statement, so one round trip and one commit.
                let row = c
                    .query_opt(
                        &stmt,
                        &[
                            &lease.run.0,
                            &lease.owner,
                            &lease.generation,
                            &token,
                            &n,
                            &step.kind(),
                            &int(turn),
                            &int(idx),
                            &body,
                            &bodies,
                        ],
                    )
                    .await
                    .map_err(pg_commit(WHAT))?
                    .ok_or(StoreError::Fenced { run: lease.run })?;
                Ok(stored(
                    lease.run,
                    row.get::<_, i64>(0) - n + 1,
                    events.clone(),
                    at_ms,
                ))
            },
            || async {
                let c = self.client(WHAT).await?;
                written(&c, lease.run, token, events.clone(), at_ms).await
            },
        )
        .await
    }

    async fn pause_for_input(
        &self,
        lease: &Lease,
        asked: Vec<Asked>,
        mut events: Vec<RunEvent>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        const WHAT: &str = "pausing a run";
        let token = self.token();
        events.extend(asked.iter().map(|a| RunEvent::NeedsInput {
            pending: a.pending.clone(),
            deadline_ms: a.deadline_ms,
        }));
        events.push(RunEvent::State {
            state: RunState::WaitingInput,
        });
        let at_ms = super::now_ms();
        let (events, asked) = (&events, &asked);
        self.retry_verified(
            WHAT,
            || async {
                let mut c = self.client(WHAT).await?;
                let tx = c.transaction().await.map_err(pg(WHAT))?;
                let (seq, first) =
                    reserve(&tx, lease, token, asked.len() as i64, events.len() as i64).await?;
                for (i, a) in asked.iter().enumerate() {
                    let step = Step::Asked {
                        pending: a.pending.clone(),
                    };
                    insert_step(&tx, lease.run, seq + i as i64, &step).await?;
                    exec(
                        &tx,
                        WHAT,
                        "INSERT INTO pending (run_id, turn, idx, body, asked_ms, deadline_ms)
                         VALUES ($1, $2, $3, $4, $5, $6)",
                        &[
                            &lease.run.0,
                            &int(a.pending.key.turn),
                            &int(a.pending.key.index),
                            &json(&a.pending)?,
                            &super::now_ms(),
                            &a.deadline_ms,
                        ],
                    )
                    .await?;
                }
                let out = insert_events(&tx, lease.run, first, events.clone(), at_ms).await?;
                set_state(&tx, lease.run, RunState::WaitingInput).await?;
                let hooked = webhooks::enqueue(&tx, lease.run, WebhookEvent::WaitingInput).await?;
                if asked.iter().any(|a| a.deadline_ms.is_some()) {
                    notify(&tx, "asked").await?;
                }
                tx.commit().await.map_err(pg_commit(WHAT))?;
                if hooked {
                    self.webhooks.notify_one();
                }
                Ok(out)
            },
            || async {
                let c = self.client(WHAT).await?;
                written(&c, lease.run, token, events.clone(), at_ms).await
            },
        )
        .await
    }

    async fn finish(
        &self,
        lease: &Lease,
        end: RunEnd,
        mut events: Vec<RunEvent>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        const WHAT: &str = "ending a run";
        let token = self.token();
        let (state, result, error) = match &end {
            RunEnd::Completed(r) => (RunState::Completed, Some(json(r)?), None),
            RunEnd::Failed(e) => (RunState::Failed, None, Some(e.clone())),
            RunEnd::Cancelled => (RunState::Cancelled, None, None),
        };
        match &end {
            RunEnd::Completed(result) => events.push(RunEvent::Completed {
                result: result.clone(),
            }),
            RunEnd::Failed(error) => events.push(RunEvent::Failed {
                error: error.clone(),
            }),
            RunEnd::Cancelled => {}
        }
        events.push(RunEvent::State { state });
        let messages = match &end {
            RunEnd::Completed(r) => r.messages.iter().map(json).collect::<Result<Vec<_>, _>>()?,
            _ => Vec::new(),
        };
        let steps = i64::from(matches!(end, RunEnd::Cancelled));
        let at_ms = super::now_ms();
        let (events, messages, result, error) = (&events, &messages, &result, &error);
        self.retry_verified(
            WHAT,
            || async {
                let mut c = self.client(WHAT).await?;
                let tx = c.transaction().await.map_err(pg(WHAT))?;
                let (seq, first) = reserve(&tx, lease, token, steps, events.len() as i64).await?;
                if steps == 1 {
                    insert_step(&tx, lease.run, seq, &Step::Cancelled).await?;
                }
                if !messages.is_empty() {
                    // The conversation's row lock orders runs finishing in it at once.
                    let conversation: String = one(
                        &tx,
                        WHAT,
                        "SELECT c.id FROM conversations c JOIN runs r ON r.conversation = c.id
                         WHERE r.id = $1 FOR UPDATE OF c",
                        &[&lease.run.0],
                    )
                    .await?
                    .get(0);
                    exec(
                        &tx,
                        WHAT,
                        "INSERT INTO messages (conversation, seq, run_id, body)
                         SELECT $1, (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation = $1) + o.n,
                                $2, o.body
                         FROM unnest($3::text[]) WITH ORDINALITY AS o(body, n)",
                        &[&conversation, &lease.run.0, messages],
                    )
                    .await?;
                }
                exec(
                    &tx,
                    WHAT,
                    "UPDATE runs SET result = $1, error = $2, state = $3, owner = NULL,
                       lease_until_ms = NULL WHERE id = $4",
                    &[result, error, &state.as_str(), &lease.run.0],
                )
                .await?;
                let out = insert_events(&tx, lease.run, first, events.clone(), at_ms).await?;
                let hooked = match WebhookEvent::of_state(state) {
                    Some(event) => webhooks::enqueue(&tx, lease.run, event).await?,
                    None => false,
                };
                tx.commit().await.map_err(pg_commit(WHAT))?;
                if hooked {
                    self.webhooks.notify_one();
                }
                Ok(out)
            },
            || async {
                let c = self.client(WHAT).await?;
                written(&c, lease.run, token, events.clone(), at_ms).await
            },
        )
        .await
    }

    async fn answer(
        &self,
        run: RunId,
        reply: Reply,
        by: Option<String>,
    ) -> Result<Result<Answered, InputError>, StoreError> {
        const WHAT: &str = "answering a run";
        let token = self.token();
        let (reply, by) = (&reply, &by);
        self.retry(WHAT, || async {
            let mut c = self.client(WHAT).await?;
            let tx = c.transaction().await.map_err(pg(WHAT))?;
            let Some(r) = opt(
                &tx,
                WHAT,
                "SELECT state FROM runs WHERE id = $1 FOR UPDATE",
                &[&run.0],
            )
            .await?
            else {
                return Ok(Err(InputError::UnknownRun(run)));
            };
            let state = RunState::parse(r.get(0)).unwrap_or(RunState::Failed);
            if state != RunState::WaitingInput {
                return Ok(Err(InputError::NotWaiting { run, state }));
            }
            let waiting: Vec<PendingInput> = unanswered(&tx, run)
                .await?
                .into_iter()
                .map(|a| a.pending)
                .collect();
            let (i, journaled) = match crate::answer::check(run, &waiting, reply) {
                Ok(ok) => ok,
                Err(e) => return Ok(Err(e)),
            };
            let pending = &waiting[i];
            if let (
                PendingKind::Approval { request },
                InputReply::Decision {
                    decision: harnessx::ApprovalDecision::AllowSession,
                    ..
                },
            ) = (&pending.kind, &journaled)
            {
                exec(
                    &tx,
                    "granting a tool",
                    "INSERT INTO grants (conversation, tool)
                     SELECT conversation, $1 FROM runs WHERE id = $2 ON CONFLICT DO NOTHING",
                    &[&request.tool_name, &run.0],
                )
                .await?;
            }
            let answered = apply_reply(&tx, run, token, pending, journaled, by.clone()).await?;
            tx.commit().await.map_err(pg_commit(WHAT))?;
            Ok(Ok(answered))
        })
        .await
    }

    async fn expire_questions(
        &self,
        now: i64,
    ) -> Result<(Vec<RunId>, Vec<StoredEvent>), StoreError> {
        const WHAT: &str = "expiring questions";
        self.retry(WHAT, || async {
            let mut c = self.client(WHAT).await?;
            let tx = c.transaction().await.map_err(pg(WHAT))?;
            // Locked rows are being expired (or answered) by another worker right now: skipped,
            // so each question expires exactly once across all workers.
            let due = rows(
                &tx,
                WHAT,
                "SELECT p.run_id, p.body, p.asked_ms, p.deadline_ms
                 FROM pending p JOIN runs r ON r.id = p.run_id
                 WHERE p.reply IS NULL AND p.deadline_ms <= $1 AND r.state = 'waiting_input'
                 ORDER BY p.deadline_ms LIMIT 256
                 FOR UPDATE OF r, p SKIP LOCKED",
                &[&now],
            )
            .await?;
            let mut requeued = Vec::new();
            let mut events = Vec::new();
            for r in due {
                let run = RunId(r.get(0));
                let pending: PendingInput = parse("pending input", r.get(1))?;
                let (asked, deadline): (i64, i64) = (r.get(2), r.get(3));
                let window_seconds = u64::try_from((deadline - asked) / 1000).unwrap_or(0);
                let answered = apply_reply(
                    &tx,
                    run,
                    self.token(),
                    &pending,
                    InputReply::Expired { window_seconds },
                    None,
                )
                .await?;
                if answered.requeued {
                    requeued.push(run);
                }
                events.extend(answered.events);
            }
            tx.commit().await.map_err(pg_commit(WHAT))?;
            Ok((requeued, events))
        })
        .await
    }

    async fn next_deadline(&self) -> Result<Option<i64>, StoreError> {
        self.earliest_ms(
            "reading deadlines",
            "SELECT MIN(deadline_ms) FROM pending WHERE reply IS NULL",
            &[],
        )
        .await
    }

    async fn cancel(&self, run: RunId) -> Result<Result<Cancelled, InputError>, StoreError> {
        const WHAT: &str = "cancelling a run";
        let token = self.token();
        let cancelled = vec![RunEvent::State {
            state: RunState::Cancelled,
        }];
        let cancelled = &cancelled;
        self.retry(WHAT, || async {
            let mut c = self.client(WHAT).await?;
            let tx = c.transaction().await.map_err(pg(WHAT))?;
            let Some(r) = opt(
                &tx,
                WHAT,
                "SELECT state FROM runs WHERE id = $1 FOR UPDATE",
                &[&run.0],
            )
            .await?
            else {
                return Ok(Err(InputError::UnknownRun(run)));
            };
            let mut hooked = false;
            let out = match RunState::parse(r.get(0)).unwrap_or(RunState::Failed) {
                RunState::Running => {
                    exec(
                        &tx,
                        WHAT,
                        "UPDATE runs SET cancel_requested = true WHERE id = $1",
                        &[&run.0],
                    )
                    .await?;
                    notify(&tx, &format!("cancel:{}", run.0)).await?;
                    Ok(Cancelled::Requested)
                }
                RunState::Queued | RunState::WaitingInput => {
                    let (seq, first) = reserve_unleased(&tx, run, token, 1, 1).await?;
                    insert_step(&tx, run, seq, &Step::Cancelled).await?;
                    exec(
                        &tx,
                        WHAT,
                        "DELETE FROM pending WHERE run_id = $1",
                        &[&run.0],
                    )
                    .await?;
                    set_state(&tx, run, RunState::Cancelled).await?;
                    hooked = webhooks::enqueue(&tx, run, WebhookEvent::Cancelled).await?;
                    Ok(Cancelled::Now(
                        insert_events(&tx, run, first, cancelled.clone(), super::now_ms()).await?,
                    ))
                }
                state => Err(InputError::Finished { run, state }),
            };
            tx.commit().await.map_err(pg_commit(WHAT))?;
            if hooked {
                self.webhooks.notify_one();
            }
            Ok(out)
        })
        .await
    }

    async fn heartbeat(&self, owner: &str, lease_ms: i64) -> Result<Vec<RunId>, StoreError> {
        const WHAT: &str = "renewing leases";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            Ok(rows(
                &c,
                WHAT,
                "UPDATE runs SET lease_until_ms = harnessx_now_ms() + $2
                 WHERE owner = $1 AND state = 'running' RETURNING id, cancel_requested",
                &[&owner, &lease_ms],
            )
            .await?
            .iter()
            .filter(|r| r.get::<_, bool>(1))
            .map(|r| RunId(r.get(0)))
            .collect())
        })
        .await
    }

    async fn release_expired_leases(&self, now: i64) -> Result<u64, StoreError> {
        self.requeue("releasing expired leases", "lease_until_ms < $1", &now)
            .await
    }

    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError> {
        self.requeue("releasing a stopping worker's leases", "owner = $1", &owner)
            .await
    }

    async fn next_lease_expiry(&self, owner: &str) -> Result<Option<i64>, StoreError> {
        self.earliest_ms(
            "reading leases",
            "SELECT MIN(lease_until_ms) FROM runs WHERE state = 'running' AND owner <> $1",
            &[&owner],
        )
        .await
    }

    async fn run(&self, run: RunId) -> Result<Option<RunRecord>, StoreError> {
        self.retry("reading a run", || async {
            let c = self.client("reading a run").await?;
            read_run(&c, run).await
        })
        .await
    }

    async fn run_by_idempotency_key(&self, key: &str) -> Result<Option<RunRecord>, StoreError> {
        const WHAT: &str = "reading a run by its idempotency key";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let ids = rows(
                &c,
                WHAT,
                "SELECT id FROM runs WHERE idempotency_key = $1",
                &[&key],
            )
            .await?;
            match ids.first() {
                Some(row) => read_run(&c, RunId(row.get(0))).await,
                None => Ok(None),
            }
        })
        .await
    }

    async fn forget_idempotency_key(&self, key: &str) -> Result<(), StoreError> {
        const WHAT: &str = "forgetting an idempotency key";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            exec(
                &c,
                WHAT,
                "UPDATE runs SET idempotency_key = NULL WHERE idempotency_key = $1",
                &[&key],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn list_runs(
        &self,
        filter: &RunFilter,
        limit: usize,
    ) -> Result<Vec<RunRecord>, StoreError> {
        const WHAT: &str = "listing runs";
        // Only the conditions given are written, so each page is one range of an index
        // (`runs_by_agent`, `runs_by_state`, `runs_by_agent_state`, `runs_by_conversation`,
        // or the primary key) from the cursor, in any plan the server caches.
        let before = filter.before.map_or(i64::MAX, |r| r.0);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let state = filter.state.map(|s| s.as_str().to_owned());
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id < $1");
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&before];
        for (column, value) in [
            ("agent", &filter.agent),
            ("state", &state),
            ("conversation", &filter.conversation),
        ] {
            if let Some(value) = value {
                params.push(value);
                sql.push_str(&format!(" AND {column} = ${}", params.len()));
            }
        }
        params.push(&limit);
        sql.push_str(&format!(" ORDER BY id DESC LIMIT ${}", params.len()));
        let (sql, params) = (&sql, &params);
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let page = rows(&c, WHAT, sql, params).await?;
            let ids: Vec<i64> = page.iter().map(|r| r.get(0)).collect();
            // Every run's pending items in one query.
            let mut pending: std::collections::HashMap<i64, Vec<Asked>> =
                std::collections::HashMap::new();
            for r in rows(
                &c,
                "reading pending input",
                "SELECT run_id, body, deadline_ms FROM pending
                 WHERE run_id = ANY($1) AND reply IS NULL ORDER BY run_id, turn, idx",
                &[&ids],
            )
            .await?
            {
                pending.entry(r.get(0)).or_default().push(Asked {
                    pending: parse::<PendingInput>("pending input", r.get(1))?,
                    deadline_ms: r.get(2),
                });
            }
            page.iter()
                .map(|row| record(row, pending.remove(&row.get(0)).unwrap_or_default()))
                .collect()
        })
        .await
    }

    async fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>, StoreError> {
        const WHAT: &str = "reading a conversation";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            if opt(
                &c,
                WHAT,
                "SELECT 1 FROM conversations WHERE id = $1",
                &[&id],
            )
            .await?
            .is_none()
            {
                return Ok(None);
            }
            let runs: Vec<(i64, String)> = rows(
                &c,
                WHAT,
                "SELECT id, state FROM runs WHERE conversation = $1 ORDER BY id",
                &[&id],
            )
            .await?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
            let mut pending_question = None;
            for (run, state) in &runs {
                if state == RunState::WaitingInput.as_str()
                    && let Some(q) = unanswered(&c, RunId(*run))
                        .await?
                        .into_iter()
                        .find(|a| matches!(a.pending.kind, PendingKind::Question { .. }))
                {
                    pending_question = Some((RunId(*run), q));
                    break;
                }
            }
            Ok(Some(ConversationRecord {
                messages: transcript(&c, id).await?,
                runs: runs.into_iter().map(|r| RunId(r.0)).collect(),
                pending_question,
            }))
        })
        .await
    }

    async fn events_after(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        const WHAT: &str = "reading events";
        // Saturating: an `after` past the largest sequence asks for nothing, never for all.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            rows(
                &c,
                WHAT,
                "SELECT seq, body FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&run.0, &after, &limit],
            )
            .await?
            .iter()
            .map(|r| {
                let (event, at_ms) =
                    super::parse_event_body(r.get(1)).map_err(|e| StoreError::Corrupt {
                        what: "event".to_owned(),
                        message: e.to_string(),
                    })?;
                Ok(StoredEvent {
                    run,
                    seq: r.get::<_, i64>(0) as u64,
                    event,
                    at_ms,
                })
            })
            .collect()
        })
        .await
    }

    async fn list_conversations(
        &self,
        filter: &ConversationFilter,
        limit: usize,
    ) -> Result<Vec<ConversationSummary>, StoreError> {
        const WHAT: &str = "listing conversations";
        let before = filter.before.map_or(i64::MAX, |r| r.0);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // One character more than a title keeps, so a longer first message is cut with `…`.
        let cut = i32::try_from(TITLE_CHARS + 1).unwrap_or(i32::MAX);
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            rows(
                &c,
                WHAT,
                "WITH c AS (
                   SELECT conversation, MAX(id) AS last, MIN(id) AS first, COUNT(*) AS n
                   FROM runs GROUP BY conversation
                 )
                 SELECT c.conversation, c.last, c.n, r.agent, r.state, left(f.input, $3),
                   k.created_ms, r.updated_ms
                 FROM c JOIN runs r ON r.id = c.last JOIN runs f ON f.id = c.first
                   JOIN conversations k ON k.id = c.conversation
                 WHERE c.last < $1 ORDER BY c.last DESC LIMIT $2",
                &[&before, &limit, &cut],
            )
            .await?
            .iter()
            .map(|r| {
                let last = RunId(r.get(1));
                let state: String = r.get(4);
                let state = RunState::parse(&state).ok_or_else(|| StoreError::Corrupt {
                    what: format!("state of {last}"),
                    message: format!("`{state}` is not a run state"),
                })?;
                Ok(ConversationSummary {
                    id: r.get(0),
                    agent: r.get(3),
                    title: crate::types::title(r.get(5)),
                    runs: u64::try_from(r.get::<_, i64>(2)).unwrap_or(0),
                    last_run: last,
                    state,
                    created_ms: r.get(6),
                    updated_ms: r.get(7),
                })
            })
            .collect()
        })
        .await
    }

    async fn prune_finished(&self, before_ms: i64, batch: usize) -> Result<u64, StoreError> {
        const WHAT: &str = "deleting finished runs";
        let limit = i64::try_from(batch.max(1)).unwrap_or(i64::MAX);
        self.retry(WHAT, || async {
            let mut c = self.client(WHAT).await?;
            let tx = c.transaction().await.map_err(pg(WHAT))?;
            // The oldest finished runs, skipping rows another transaction holds (another
            // server pruning, an answer or cancel reading the run): nobody waits on a batch.
            let gone = rows(
                &tx,
                WHAT,
                "WITH doomed AS (
                    SELECT id FROM runs
                    WHERE finished_ms < $1 AND state IN ('completed', 'failed', 'cancelled')
                    ORDER BY finished_ms LIMIT $2 FOR UPDATE SKIP LOCKED
                 ), e AS (
                    DELETE FROM events WHERE run_id IN (SELECT id FROM doomed)
                 ), s AS (
                    DELETE FROM steps WHERE run_id IN (SELECT id FROM doomed)
                 ), p AS (
                    DELETE FROM pending WHERE run_id IN (SELECT id FROM doomed)
                 ), wm AS (
                    SELECT id FROM webhook_messages WHERE run_id IN (SELECT id FROM doomed)
                 ), wd AS (
                    SELECT id FROM webhook_deliveries WHERE message_id IN (SELECT id FROM wm)
                 ), wa AS (
                    DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM wd)
                 ), wdd AS (
                    DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM wd)
                 ), wmm AS (
                    DELETE FROM webhook_messages WHERE id IN (SELECT id FROM wm)
                 )
                 DELETE FROM runs WHERE id IN (SELECT id FROM doomed) RETURNING conversation",
                &[&before_ms, &limit],
            )
            .await?;
            let mut conversations: Vec<String> = gone.iter().map(|r| r.get(0)).collect();
            conversations.sort();
            conversations.dedup();
            // A separate statement, so it sees the runs just deleted as gone. A conversation
            // locked by a run being created in it is skipped: it keeps its transcript.
            exec(
                &tx,
                WHAT,
                "WITH empty AS (
                    SELECT id FROM conversations c
                    WHERE id = ANY($1)
                      AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation = c.id)
                    FOR UPDATE SKIP LOCKED
                 ), m AS (
                    DELETE FROM messages WHERE conversation IN (SELECT id FROM empty)
                 ), g AS (
                    DELETE FROM grants WHERE conversation IN (SELECT id FROM empty)
                 )
                 DELETE FROM conversations WHERE id IN (SELECT id FROM empty)",
                &[&conversations],
            )
            .await?;
            tx.commit().await.map_err(pg_commit(WHAT))?;
            Ok(gone.len() as u64)
        })
        .await
    }
}

crate::store::boxed_run_store!(PostgresStore {
    fn wakeups(&self) -> Option<broadcast::Receiver<Wakeup>> {
        Some(self.wake.subscribe())
    }
});
