//! The embedded store: SQLite through rusqlite, on a thread of its own (rusqlite blocks; the
//! async workers never do), in WAL mode, a file or in memory.

mod backup;
mod knowledge;
mod resources;
mod webhooks;

use std::fs::File;
use std::path::Path;
use std::sync::mpsc;

use harnessx::BoxFuture;
use harnessx::journal::{InputReply, PendingInput, PendingKind};
use harnessx::{Message, RunResult};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{
    Answered, Asked, Cancelled, Claim, ConversationFilter, ConversationRecord, Lease, LeaseInfo,
    NewRun, Reply, RunCounts, RunEnd, RunFilter, RunRecord, RunStore, SchemaVersion, Step,
    StoreStats, now_ms,
};
use crate::error::{InputError, StoreError};
use crate::types::{ConversationSummary, RunEvent, RunId, RunState, StoredEvent, TITLE_CHARS};

pub use backup::{BackupError, BackupReport};

/// The migrations, numbered, in `migrations/sqlite/`.
// The last migration is the release's schema version.
const _: () = assert!(MIGRATIONS[MIGRATIONS.len() - 1].0 == super::SCHEMA_VERSION);

pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../migrations/sqlite/0001_init.sql")),
    (
        2,
        include_str!("../../migrations/sqlite/0002_steps_with_events.sql"),
    ),
    (
        3,
        include_str!("../../migrations/sqlite/0003_resources.sql"),
    ),
    (
        4,
        include_str!("../../migrations/sqlite/0004_knowledge.sql"),
    ),
    (5, include_str!("../../migrations/sqlite/0005_webhooks.sql")),
    (
        6,
        include_str!("../../migrations/sqlite/0006_retention.sql"),
    ),
];

/// How hard SQLite pushes each commit to disk (`PRAGMA synchronous`).
///
/// `Normal` (the default) survives any crash of the process — `kill -9` included, which the
/// crash tests prove — because in WAL mode a commit is in the log before it returns; only a
/// power cut or kernel crash may roll back the last commits. `Full` also syncs the log at every
/// commit, surviving power loss at the price of one disk flush per step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// `synchronous = NORMAL`.
    #[default]
    Normal,
    /// `synchronous = FULL`.
    Full,
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The SQLite [`RunStore`].
///
/// A file store belongs to one process: it holds `<path>-lock` (an exclusive `flock`) while
/// open, and on open re-queues every run the previous process left running, so they recover
/// at once. Use PostgreSQL for workers in several processes.
///
/// ```
/// use harnessx_runtime::{RunStore, SqliteStore};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx_runtime::StoreError> {
/// let store = SqliteStore::in_memory()?;
/// assert!(store.run(harnessx_runtime::RunId(1)).await?.is_none());
/// # Ok(()) }
/// ```
pub struct SqliteStore {
    jobs: mpsc::Sender<Job>,
    _lock: Option<File>,
    /// Notified when a transaction stored a webhook message.
    webhooks: std::sync::Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

/// `path` with symbolic links and relative parts resolved: the file's, when it exists, else its
/// folder's with the file name (a store about to be created); as given when neither resolves.
fn resolved(path: &Path) -> std::path::PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            std::fs::canonicalize(parent)
                .map(|p| p.join(name))
                .unwrap_or_else(|_| path.to_owned())
        }
        _ => path.to_owned(),
    }
}

impl SqliteStore {
    /// Opens (or creates) the store at `path` with `synchronous = NORMAL`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, Synchronous::Normal)
    }

    /// Opens (or creates) the store at `path`.
    pub fn open_with(path: impl AsRef<Path>, sync: Synchronous) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        // The lock sits beside the file the path resolves to, so a second name for the same file
        // (a symbolic link, `./`, `..`) finds the same lock.
        let lock_path = format!("{}-lock", resolved(path).display());
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| StoreError::backend(format!("opening `{lock_path}`"), e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |_| StoreError::Locked {
                path: shown.clone(),
            },
        )?;
        let conn = Connection::open(path)
            .map_err(|e| StoreError::backend(format!("opening `{shown}`"), e))?;
        check_integrity(&conn, &shown)?;
        let store = Self::start(conn, sync, Some(lock))?;
        Ok(store)
    }

    /// A store in memory (for tests): gone when dropped.
    pub fn in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory()
            .map_err(|e| StoreError::backend("opening an in-memory database", e))?;
        Self::start(conn, Synchronous::Normal, None)
    }

    fn start(
        mut conn: Connection,
        sync: Synchronous,
        lock: Option<File>,
    ) -> Result<Self, StoreError> {
        setup(&mut conn, sync)?;
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("harnessx-sqlite".into())
            .spawn(move || {
                for job in rx {
                    job(&mut conn);
                }
            })
            .map_err(|e| StoreError::backend("starting the store thread", e))?;
        Ok(Self {
            jobs,
            _lock: lock,
            webhooks: std::sync::Arc::default(),
        })
    }

    /// Runs `f` on the store's thread.
    async fn call<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move |conn| {
                let _ = tx.send(f(conn));
            }))
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// The single `MIN(..)` a timer sleeps until (`None` when no row has one).
    async fn earliest_ms(
        &self,
        what: &'static str,
        sql: &'static str,
        params: Vec<String>,
    ) -> Result<Option<i64>, StoreError> {
        self.call(move |conn| {
            conn.query_row(sql, rusqlite::params_from_iter(params), |r| r.get(0))
                .map_err(db(what))
        })
        .await
    }

    /// Puts the running runs that match `filter` (with `?1` bound to `value`) back in the
    /// queue, leaseless; returns how many.
    async fn requeue(
        &self,
        what: &'static str,
        filter: &'static str,
        value: rusqlite::types::Value,
    ) -> Result<u64, StoreError> {
        self.write(what, move |tx| {
            let n = tx
                .execute(
                    &format!(
                        "UPDATE runs SET state = 'queued', owner = NULL, lease_until_ms = NULL
                         WHERE state = 'running' AND {filter}"
                    ),
                    [value],
                )
                .map_err(db(what))?;
            Ok(n as u64)
        })
        .await
    }

    /// Runs `f` in one write transaction on the store's thread.
    async fn write<T, F>(&self, what: &'static str, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        self.call(move |conn| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(|e| StoreError::backend(what, e))?;
            let out = f(&tx)?;
            tx.commit().map_err(|e| StoreError::backend(what, e))?;
            Ok(out)
        })
        .await
    }

    /// `PRAGMA integrity_check`'s answer (`"ok"` when sound).
    pub async fn integrity_check(&self) -> Result<String, StoreError> {
        self.call(|conn| {
            conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
                .map_err(|e| StoreError::backend("checking integrity", e))
        })
        .await
    }

    /// The schema version.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        self.call(|conn| {
            conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
                .map_err(|e| StoreError::backend("reading the schema version", e))
        })
        .await
    }

    /// Copies the store at `source` into a new file `dest` with SQLite's online backup API,
    /// while a server may be using it: the copy is one consistent snapshot (every commit before
    /// it began, none after), checked with `PRAGMA quick_check`, and a store of its own — start
    /// a server on it to restore. It needs no lock (the server keeps its own), writes to a
    /// `.partial` file beside `dest` and moves it into place whole, and never overwrites a
    /// file.
    ///
    /// ```
    /// use harnessx_runtime::{RunStore, SqliteStore};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = SqliteStore::open(dir.path().join("harnessx.db"))?;
    /// let report = SqliteStore::backup(dir.path().join("harnessx.db"), dir.path().join("copy.db"))?;
    /// assert_eq!(report.runs, 0);
    /// let refused = SqliteStore::backup(dir.path().join("harnessx.db"), dir.path().join("copy.db"));
    /// assert!(refused.unwrap_err().to_string().contains("already exists"));
    /// # drop(store); Ok(()) }
    /// ```
    pub fn backup(
        source: impl AsRef<Path>,
        dest: impl AsRef<Path>,
    ) -> Result<BackupReport, BackupError> {
        backup::backup(source.as_ref(), dest.as_ref())
    }

    /// Creates (or brings forward) the database at `path` with the migrations up to schema
    /// `version` only, as a release of that schema left it, and closes it: for upgrade tests,
    /// which then write rows the way that release did.
    #[doc(hidden)]
    pub fn migrate_file_to(path: impl AsRef<Path>, version: i64) -> Result<(), StoreError> {
        let path = path.as_ref();
        let mut conn = Connection::open(path)
            .map_err(|e| StoreError::backend(format!("opening `{}`", path.display()), e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| StoreError::backend("configuring the database", e))?;
        migrate(&mut conn, version)
    }

    /// A bare write transaction (one row), to compare a step's cost with a commit's.
    #[doc(hidden)]
    pub async fn bare_commit(&self) -> Result<(), StoreError> {
        self.write("a bare commit", |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS bench_commits (n INTEGER);
                 INSERT INTO bench_commits VALUES (1);",
            )
            .map_err(|e| StoreError::backend("a bare commit", e))
        })
        .await
    }
}

/// `PRAGMA quick_check` on open: a damaged page would otherwise show later as runs that
/// "do not exist" and lists that quietly omit them. It reads every page once (a second or so for
/// a store of a few hundred megabytes).
fn check_integrity(conn: &Connection, shown: &str) -> Result<(), StoreError> {
    let what = || format!("database `{shown}`");
    let problems: Vec<String> = conn
        .prepare("PRAGMA quick_check(10)")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<_, _>>()
        })
        .map_err(|e| StoreError::Corrupt {
            what: what(),
            message: format!("{e}; restore it from a backup"),
        })?;
    if problems.iter().any(|p| p != "ok") {
        return Err(StoreError::Corrupt {
            what: what(),
            message: format!(
                "SQLite's integrity check found: {}; restore it from a backup",
                problems.join("; ")
            ),
        });
    }
    Ok(())
}

fn setup(conn: &mut Connection, sync: Synchronous) -> Result<(), StoreError> {
    let fail = |e| StoreError::backend("configuring the database", e);
    // Takes effect in a new file only (before its first table): pages freed by deleting runs
    // can then go back to the file system (`PRAGMA incremental_vacuum`, which pruning runs).
    // A file created without it keeps reusing freed pages instead; `VACUUM` converts it.
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
        .map_err(fail)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(fail)?;
    let sync = match sync {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync)
        .map_err(fail)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(fail)?;
    migrate(conn, super::SCHEMA_VERSION)?;
    // One process owns the file: runs it finds running were left by a process that died.
    conn.execute(
        "UPDATE runs SET state = 'queued', owner = NULL, lease_until_ms = NULL WHERE state = 'running'",
        [],
    )
    .map_err(fail)?;
    // Likewise the leases on webhook deliveries: they are sent again at once.
    webhooks::release_all(conn).map_err(fail)?;
    Ok(())
}

/// Applies the migrations up to `up_to` that the database lacks, each in a transaction of its
/// own; refuses a database newer than this release.
fn migrate(conn: &mut Connection, up_to: i64) -> Result<(), StoreError> {
    let fail = |e| StoreError::backend("applying migrations", e);
    conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        .map_err(fail)?;
    let current: i64 = conn
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_version",
            [],
            |r| r.get(0),
        )
        .map_err(fail)?;
    let known = super::SCHEMA_VERSION;
    if current > known {
        return Err(StoreError::TooNew {
            found: current,
            known,
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|m| m.0 > current && m.0 <= up_to) {
        let tx = conn.transaction().map_err(fail)?;
        tx.execute_batch(sql)
            .map_err(|e| StoreError::backend(format!("applying migration {version:04}"), e))?;
        tx.execute("INSERT INTO schema_version VALUES (?1)", [version])
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
    }
    Ok(())
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

fn db(what: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| StoreError::backend(what, e)
}

/// Refuses a write for a run this lease no longer holds (a read: the run's row is not rewritten).
fn fence(tx: &Transaction<'_>, lease: &Lease) -> Result<(), StoreError> {
    tx.prepare_cached(
        "SELECT 1 FROM runs WHERE id = ?1 AND owner = ?2 AND lease_gen = ?3 AND state = 'running'",
    )
    .map_err(db("checking the lease"))?
    .query_row(params![lease.run.0, lease.owner, lease.generation], |_| {
        Ok(())
    })
    .optional()
    .map_err(db("checking the lease"))?
    .ok_or(StoreError::Fenced { run: lease.run })
}

/// Appends events to a run's log, numbered after its last one. A journal step is stored on the
/// row of the event that reports it, so a write lands in one b-tree (usually one page); a step
/// written with no event gets a row of its own whose body is JSON `null`, which readers of
/// events skip. Returns the stored events.
fn append(
    tx: &Transaction<'_>,
    run: RunId,
    rows: Vec<(Option<RunEvent>, Option<Step>)>,
) -> Result<Vec<StoredEvent>, StoreError> {
    let last: i64 = tx
        .prepare_cached("SELECT seq FROM events WHERE run_id = ?1 ORDER BY seq DESC LIMIT 1")
        .map_err(db("numbering events"))?
        .query_row([run.0], |r| r.get(0))
        .optional()
        .map_err(db("numbering events"))?
        .unwrap_or(0);
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO events (run_id, seq, body, step, kind, turn, idx)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(db("writing an event"))?;
    let mut out = Vec::with_capacity(rows.len());
    let at_ms = now_ms();
    for (seq, (event, step)) in (last + 1..).zip(rows) {
        let (turn, idx) = step.as_ref().map(Step::position).unzip();
        let body = match &event {
            Some(event) => super::event_body(event, at_ms)
                .map_err(|e| StoreError::backend("encoding a row", e))?,
            None => "null".to_owned(),
        };
        stmt.execute(params![
            run.0,
            seq,
            body,
            step.as_ref().map(json).transpose()?,
            step.as_ref().map(Step::kind),
            turn,
            idx
        ])
        .map_err(db("writing an event"))?;
        if let Some(event) = event {
            out.push(StoredEvent {
                run,
                seq: seq as u64,
                event,
                at_ms: Some(at_ms),
            });
        }
    }
    Ok(out)
}

/// Events that carry no journal step.
fn only(events: Vec<RunEvent>) -> Vec<(Option<RunEvent>, Option<Step>)> {
    events.into_iter().map(|e| (Some(e), None)).collect()
}

/// `events` with `step` stored on the last one (the event that reports it), or on a row of its
/// own when there is no event.
fn step_on_last(events: Vec<RunEvent>, step: Step) -> Vec<(Option<RunEvent>, Option<Step>)> {
    let mut rows = only(events);
    match rows.last_mut() {
        Some(last) => last.1 = Some(step),
        None => rows.push((None, Some(step))),
    }
    rows
}

/// Sets a run's state, leaseless; a run that ends gets its `finished_ms` (what retention ages it
/// by).
fn set_state(tx: &Transaction<'_>, run: RunId, state: RunState) -> Result<(), StoreError> {
    let finished = state.is_terminal().then(now_ms);
    tx.prepare_cached(
        "UPDATE runs SET state = ?1, owner = NULL, lease_until_ms = NULL, finished_ms = ?3
         WHERE id = ?2",
    )
    .map_err(db("changing a run's state"))?
    .execute(params![state.as_str(), run.0, finished])
    .map_err(db("changing a run's state"))?;
    Ok(())
}

// The SQL of `UPDATED_MS`, as a literal so that `RUN_COLUMNS` can take it in with `concat!`.
macro_rules! updated_ms {
    () => {
        "COALESCE((SELECT json_extract(e.body, '$.at_ms') FROM events e
           WHERE e.run_id = r.id AND e.body <> 'null' ORDER BY e.seq DESC LIMIT 1), r.updated_ms)"
    };
}
/// The time a run last changed, as SQL over `runs` (aliased `r`): the time of its last event
/// (stored in the event's body), else `updated_ms` (its creation, for runs whose events carry
/// no time). Schema 2 stopped rewriting the run's row at every step, so the events say it.
const UPDATED_MS: &str = updated_ms!();

/// Writes the webhook event of `run` entering `state` to the outbox (when a webhook takes it)
/// and wakes this process's sender; called after the state change, in its transaction. The
/// sender's claim waits behind this transaction on the store's one thread, so it sees the
/// commit.
fn outbox(
    tx: &Transaction<'_>,
    run: RunId,
    state: RunState,
    wake: &tokio::sync::Notify,
) -> Result<(), StoreError> {
    if let Some(event) = super::WebhookEvent::of_state(state)
        && webhooks::enqueue(tx, run, event)?
    {
        wake.notify_one();
    }
    Ok(())
}

/// The columns [`RunRow::read`] reads, in its order: `runs` is aliased `r`, and the last column
/// is [`UPDATED_MS`].
const RUN_COLUMNS: &str = concat!(
    "r.id, r.agent, r.conversation, r.input, r.state, r.result, r.error, r.agent_version,
     r.created_ms, ",
    updated_ms!()
);

/// A `runs` row as stored, before its JSON is parsed.
struct RunRow {
    id: RunId,
    agent: String,
    conversation: String,
    input: String,
    state: String,
    result: Option<String>,
    error: Option<String>,
    agent_version: Option<i64>,
    created_ms: i64,
    updated_ms: i64,
}

impl RunRow {
    /// Reads a row selected with [`RUN_COLUMNS`].
    fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: RunId(r.get(0)?),
            agent: r.get(1)?,
            conversation: r.get(2)?,
            input: r.get(3)?,
            state: r.get(4)?,
            result: r.get(5)?,
            error: r.get(6)?,
            agent_version: r.get(7)?,
            created_ms: r.get(8)?,
            updated_ms: r.get(9)?,
        })
    }

    /// The record, with the run's unanswered pending items.
    fn record(self, conn: &Connection) -> Result<RunRecord, StoreError> {
        let id = self.id;
        let state = RunState::parse(&self.state).ok_or_else(|| StoreError::Corrupt {
            what: format!("state of {id}"),
            message: format!("`{}` is not a run state", self.state),
        })?;
        let result = self
            .result
            .map(|r| parse::<RunResult>(&format!("result of {id}"), &r))
            .transpose()?;
        Ok(RunRecord {
            id,
            agent: self.agent,
            conversation: self.conversation,
            input: self.input,
            state,
            pending: unanswered(conn, id)?,
            result,
            error: self.error,
            agent_version: self.agent_version.and_then(|v| u64::try_from(v).ok()),
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
        })
    }
}

fn read_run(conn: &Connection, id: RunId) -> Result<Option<RunRecord>, StoreError> {
    conn.prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs r WHERE id = ?1"))
        .map_err(db("reading a run"))?
        .query_row([id.0], RunRow::read)
        .optional()
        .map_err(db("reading a run"))?
        .map(|row| row.record(conn))
        .transpose()
}

fn unanswered(conn: &Connection, id: RunId) -> Result<Vec<Asked>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT body, deadline_ms FROM pending WHERE run_id = ?1 AND reply IS NULL
             ORDER BY turn, idx",
        )
        .map_err(db("reading pending input"))?;
    let rows = stmt
        .query_map([id.0], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?))
        })
        .map_err(db("reading pending input"))?;
    rows.map(|r| {
        let (body, deadline_ms) = r.map_err(db("reading pending input"))?;
        Ok(Asked {
            pending: parse::<PendingInput>("pending input", &body)?,
            deadline_ms,
        })
    })
    .collect()
}

fn transcript(conn: &Connection, conversation: &str) -> Result<Vec<Message>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT body FROM messages WHERE conversation = ?1 ORDER BY seq")
        .map_err(db("reading a transcript"))?;
    let rows = stmt
        .query_map([conversation], |r| r.get::<_, String>(0))
        .map_err(db("reading a transcript"))?;
    rows.map(|r| parse::<Message>("message", &r.map_err(db("reading a transcript"))?))
        .collect()
}

/// Journals `reply` for the pending item at `(turn, idx)`, and re-queues the run when nothing
/// else is pending. Returns whether it was re-queued and the events.
fn apply_reply(
    tx: &Transaction<'_>,
    run: RunId,
    pending: &PendingInput,
    reply: InputReply,
    by: Option<String>,
) -> Result<Answered, StoreError> {
    tx.prepare_cached("UPDATE pending SET reply = ?1 WHERE run_id = ?2 AND turn = ?3 AND idx = ?4")
        .map_err(db("recording a reply"))?
        .execute(params![
            json(&reply)?,
            run.0,
            pending.key.turn,
            pending.key.index
        ])
        .map_err(db("recording a reply"))?;
    let left: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM pending WHERE run_id = ?1 AND reply IS NULL",
            [run.0],
            |r| r.get(0),
        )
        .map_err(db("recording a reply"))?;
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
        tx.execute("DELETE FROM pending WHERE run_id = ?1", [run.0])
            .map_err(db("recording a reply"))?;
        set_state(tx, run, RunState::Queued)?;
    }
    let mut rows = only(events);
    // The `Answered` event reports the reply.
    rows[0].1 = Some(Step::Replied {
        key: pending.key,
        reply,
    });
    Ok(Answered {
        requeued,
        events: append(tx, run, rows)?,
    })
}

fn run_state(tx: &Transaction<'_>, run: RunId) -> Result<Option<RunState>, StoreError> {
    let state: Option<String> = tx
        .query_row("SELECT state FROM runs WHERE id = ?1", [run.0], |r| {
            r.get(0)
        })
        .optional()
        .map_err(db("reading a run's state"))?;
    Ok(state.and_then(|s| RunState::parse(&s)))
}

// The `RunStore` methods, boxed into the trait's own by `boxed_run_store!` below.
impl SqliteStore {
    async fn stats(&self) -> Result<StoreStats, StoreError> {
        self.call(|conn| {
            let mut stats = StoreStats::default();
            let mut stmt = conn
                .prepare_cached(
                    "SELECT state, COUNT(*) FROM runs
                     WHERE state IN ('queued', 'running', 'waiting_input') GROUP BY state",
                )
                .map_err(db("reading queue depth"))?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .map_err(db("reading queue depth"))?;
            for row in rows {
                let (state, n) = row.map_err(db("reading queue depth"))?;
                let n = u64::try_from(n).unwrap_or(0);
                match state.as_str() {
                    "queued" => stats.queued = n,
                    "running" => stats.running = n,
                    _ => stats.waiting_input = n,
                }
            }
            let mut stmt = conn
                .prepare_cached(
                    "SELECT id, owner, lease_gen, lease_until_ms FROM runs
                     WHERE state = 'running' ORDER BY id",
                )
                .map_err(db("reading leases"))?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(LeaseInfo {
                        run: RunId(r.get(0)?),
                        owner: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                        generation: r.get(2)?,
                        until_ms: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                    })
                })
                .map_err(db("reading leases"))?;
            stats.leases = rows
                .collect::<Result<_, _>>()
                .map_err(db("reading leases"))?;
            Ok(stats)
        })
        .await
    }

    async fn count_runs(&self) -> Result<RunCounts, StoreError> {
        self.call(|conn| {
            let mut counts = RunCounts::default();
            let mut stmt = conn
                .prepare_cached("SELECT state, COUNT(*) FROM runs GROUP BY state")
                .map_err(db("counting runs by state"))?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .map_err(db("counting runs by state"))?;
            for row in rows {
                let (state, n) = row.map_err(db("counting runs by state"))?;
                counts.set(&state, u64::try_from(n).unwrap_or(0));
            }
            Ok(counts)
        })
        .await
    }

    async fn schema(&self) -> Result<SchemaVersion, StoreError> {
        let found = self.schema_version().await?;
        Ok(SchemaVersion {
            found,
            known: super::SCHEMA_VERSION,
        })
    }

    async fn create_run(&self, new: NewRun) -> Result<(RunRecord, bool), StoreError> {
        let (id, created) = self
            .write("creating a run", move |tx| {
                if let Some(key) = &new.idempotency_key {
                    let existing: Option<i64> = tx
                        .query_row(
                            "SELECT id FROM runs WHERE idempotency_key = ?1",
                            [key],
                            |r| r.get(0),
                        )
                        .optional()
                        .map_err(db("creating a run"))?;
                    if let Some(id) = existing {
                        return Ok((RunId(id), false));
                    }
                }
                let now = now_ms();
                // After the largest id ever given (`sqlite_sequence` keeps it for an
                // AUTOINCREMENT table), so a pruned run's id is never given again.
                let next: i64 = tx
                    .query_row(
                        "SELECT MAX(
                           COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'runs'), 0),
                           COALESCE((SELECT MAX(id) FROM runs), 0)) + 1",
                        [],
                        |r| r.get(0),
                    )
                    .map_err(db("creating a run"))?;
                let conversation = new
                    .conversation
                    .clone()
                    .unwrap_or_else(|| format!("run-{next}"));
                tx.execute(
                    "INSERT OR IGNORE INTO conversations (id, created_ms) VALUES (?1, ?2)",
                    params![conversation, now],
                )
                .map_err(db("creating a run"))?;
                tx.execute(
                    "INSERT INTO runs (id, agent, conversation, input, idempotency_key, state,
                       event_seq, created_ms, updated_ms, agent_version)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'queued', 1, ?6, ?6, ?7)",
                    params![
                        next,
                        new.agent,
                        conversation,
                        new.input,
                        new.idempotency_key,
                        now,
                        new.agent_version
                            .map(|v| i64::try_from(v).unwrap_or(i64::MAX))
                    ],
                )
                .map_err(db("creating a run"))?;
                append(
                    tx,
                    RunId(next),
                    only(vec![RunEvent::State {
                        state: RunState::Queued,
                    }]),
                )?;
                Ok((RunId(next), true))
            })
            .await?;
        let run = self.run(id).await?.ok_or_else(|| StoreError::Corrupt {
            what: id.to_string(),
            message: "the run vanished after it was created".into(),
        })?;
        Ok((run, created))
    }

    async fn claim_next(&self, owner: &str, lease_ms: i64) -> Result<Option<Claim>, StoreError> {
        let owner = owner.to_owned();
        self.write("claiming a run", move |tx| {
            let Some(id) = tx
                // The oldest queued run whose conversation has no earlier run still going:
                // runs of one conversation run one after another.
                .prepare_cached(
                    "SELECT id FROM runs r WHERE state = 'queued'
                       AND NOT EXISTS (
                         SELECT 1 FROM runs o WHERE o.conversation = r.conversation
                           AND o.id < r.id AND o.state IN ('queued', 'running', 'waiting_input'))
                     ORDER BY id LIMIT 1",
                )
                .map_err(db("claiming a run"))?
                .query_row([], |r| r.get::<_, i64>(0))
                .optional()
                .map_err(db("claiming a run"))?
            else {
                return Ok(None);
            };
            let generation: i64 = tx
                .prepare_cached(
                    "UPDATE runs SET state = 'running', owner = ?1, lease_gen = lease_gen + 1,
                       lease_until_ms = ?2 WHERE id = ?3 RETURNING lease_gen",
                )
                .map_err(db("claiming a run"))?
                .query_row(params![owner, now_ms() + lease_ms, id], |r| r.get(0))
                .map_err(db("claiming a run"))?;
            let lease = Lease {
                run: RunId(id),
                owner,
                generation,
            };
            append(
                tx,
                lease.run,
                only(vec![RunEvent::State {
                    state: RunState::Running,
                }]),
            )?;
            let run = read_run(tx, lease.run)?.ok_or(StoreError::Fenced { run: lease.run })?;
            let steps = {
                let mut stmt = tx
                    .prepare_cached("SELECT body FROM steps WHERE run_id = ?1 ORDER BY era, seq")
                    .map_err(db("reading a journal"))?;
                let rows = stmt
                    .query_map([id], |r| r.get::<_, String>(0))
                    .map_err(db("reading a journal"))?;
                rows.map(|r| parse::<Step>("journal step", &r.map_err(db("reading a journal"))?))
                    .collect::<Result<Vec<_>, _>>()?
            };
            let grants = {
                let mut stmt = tx
                    .prepare_cached("SELECT tool FROM grants WHERE conversation = ?1")
                    .map_err(db("reading grants"))?;
                let rows = stmt
                    .query_map([&run.conversation], |r| r.get::<_, String>(0))
                    .map_err(db("reading grants"))?;
                rows.collect::<Result<Vec<_>, _>>()
                    .map_err(db("reading grants"))?
            };
            let transcript = transcript(tx, &run.conversation)?;
            let more_queued = tx
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM runs WHERE state = 'queued')")
                .map_err(db("claiming a run"))?
                .query_row([], |r| r.get(0))
                .map_err(db("claiming a run"))?;
            Ok(Some(Claim {
                run,
                lease,
                steps,
                transcript,
                grants,
                more_queued,
            }))
        })
        .await
    }

    async fn append_step(
        &self,
        lease: &Lease,
        step: Step,
        events: Vec<RunEvent>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let lease = lease.clone();
        self.write("writing a step", move |tx| {
            fence(tx, &lease)?;
            append(tx, lease.run, step_on_last(events, step))
        })
        .await
    }

    async fn pause_for_input(
        &self,
        lease: &Lease,
        asked: Vec<Asked>,
        events: Vec<RunEvent>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let lease = lease.clone();
        let wake = std::sync::Arc::clone(&self.webhooks);
        self.write("pausing a run", move |tx| {
            fence(tx, &lease)?;
            let mut rows = only(events);
            // Each question's `NeedsInput` event carries its `Asked` step.
            rows.extend(asked.iter().map(|a| {
                (
                    Some(RunEvent::NeedsInput {
                        pending: a.pending.clone(),
                        deadline_ms: a.deadline_ms,
                    }),
                    Some(Step::Asked {
                        pending: a.pending.clone(),
                    }),
                )
            }));
            rows.push((
                Some(RunEvent::State {
                    state: RunState::WaitingInput,
                }),
                None,
            ));
            let now = now_ms();
            for a in &asked {
                tx.prepare_cached(
                    "INSERT INTO pending (run_id, turn, idx, body, asked_ms, deadline_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(db("pausing a run"))?
                .execute(params![
                    lease.run.0,
                    a.pending.key.turn,
                    a.pending.key.index,
                    json(&a.pending)?,
                    now,
                    a.deadline_ms
                ])
                .map_err(db("pausing a run"))?;
            }
            let stored = append(tx, lease.run, rows)?;
            set_state(tx, lease.run, RunState::WaitingInput)?;
            outbox(tx, lease.run, RunState::WaitingInput, &wake)?;
            Ok(stored)
        })
        .await
    }

    async fn finish(
        &self,
        lease: &Lease,
        end: RunEnd,
        mut events: Vec<RunEvent>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let lease = lease.clone();
        let wake = std::sync::Arc::clone(&self.webhooks);
        self.write("ending a run", move |tx| {
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
            fence(tx, &lease)?;
            // A cancelled run's final `State` event carries the `Cancelled` step.
            let rows = match end {
                RunEnd::Cancelled => step_on_last(events, Step::Cancelled),
                _ => only(events),
            };
            if let RunEnd::Completed(r) = &end {
                let conversation: String = tx
                    .query_row(
                        "SELECT conversation FROM runs WHERE id = ?1",
                        [lease.run.0],
                        |row| row.get(0),
                    )
                    .map_err(db("ending a run"))?;
                let first_seq: i64 = tx
                    .query_row(
                        "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation = ?1",
                        [&conversation],
                        |row| row.get(0),
                    )
                    .map_err(db("ending a run"))?;
                for (next, m) in (first_seq..).zip(&r.messages) {
                    tx.prepare_cached(
                        "INSERT INTO messages (conversation, seq, run_id, body) VALUES (?1, ?2, ?3, ?4)",
                    )
                    .map_err(db("ending a run"))?
                    .execute(params![conversation, next, lease.run.0, json(m)?])
                    .map_err(db("ending a run"))?;
                }
            }
            tx.prepare_cached("UPDATE runs SET result = ?1, error = ?2 WHERE id = ?3")
                .map_err(db("ending a run"))?
                .execute(params![result, error, lease.run.0])
                .map_err(db("ending a run"))?;
            let stored = append(tx, lease.run, rows)?;
            set_state(tx, lease.run, state)?;
            outbox(tx, lease.run, state, &wake)?;
            Ok(stored)
        })
        .await
    }

    async fn answer(
        &self,
        run: RunId,
        reply: Reply,
        by: Option<String>,
    ) -> Result<Result<Answered, InputError>, StoreError> {
        self.write("answering a run", move |tx| {
            let Some(state) = run_state(tx, run)? else {
                return Ok(Err(InputError::UnknownRun(run)));
            };
            if state != RunState::WaitingInput {
                return Ok(Err(InputError::NotWaiting { run, state }));
            }
            let waiting: Vec<PendingInput> = unanswered(tx, run)?
                .into_iter()
                .map(|a| a.pending)
                .collect();
            let (i, journaled) = match crate::answer::check(run, &waiting, &reply) {
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
                tx.execute(
                    "INSERT OR IGNORE INTO grants (conversation, tool)
                     SELECT conversation, ?1 FROM runs WHERE id = ?2",
                    params![request.tool_name, run.0],
                )
                .map_err(db("granting a tool"))?;
            }
            Ok(Ok(apply_reply(tx, run, pending, journaled, by)?))
        })
        .await
    }

    async fn expire_questions(
        &self,
        now: i64,
    ) -> Result<(Vec<RunId>, Vec<StoredEvent>), StoreError> {
        self.write("expiring questions", move |tx| {
            let due: Vec<(i64, String, i64, i64)> = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT run_id, body, asked_ms, deadline_ms FROM pending
                         WHERE reply IS NULL AND deadline_ms <= ?1 ORDER BY deadline_ms",
                    )
                    .map_err(db("expiring questions"))?;
                let rows = stmt
                    .query_map([now], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                    .map_err(db("expiring questions"))?;
                rows.collect::<Result<_, _>>()
                    .map_err(db("expiring questions"))?
            };
            let mut requeued = Vec::new();
            let mut events = Vec::new();
            for (run, body, asked, deadline) in due {
                let pending: PendingInput = parse("pending input", &body)?;
                let window_seconds = u64::try_from((deadline - asked) / 1000).unwrap_or(0);
                let answered = apply_reply(
                    tx,
                    RunId(run),
                    &pending,
                    InputReply::Expired { window_seconds },
                    None,
                )?;
                if answered.requeued {
                    requeued.push(RunId(run));
                }
                events.extend(answered.events);
            }
            Ok((requeued, events))
        })
        .await
    }

    async fn next_deadline(&self) -> Result<Option<i64>, StoreError> {
        self.earliest_ms(
            "reading deadlines",
            "SELECT MIN(deadline_ms) FROM pending WHERE reply IS NULL",
            Vec::new(),
        )
        .await
    }

    async fn cancel(&self, run: RunId) -> Result<Result<Cancelled, InputError>, StoreError> {
        let wake = std::sync::Arc::clone(&self.webhooks);
        self.write("cancelling a run", move |tx| {
            let Some(state) = run_state(tx, run)? else {
                return Ok(Err(InputError::UnknownRun(run)));
            };
            match state {
                RunState::Running => {
                    tx.execute(
                        "UPDATE runs SET cancel_requested = 1 WHERE id = ?1",
                        [run.0],
                    )
                    .map_err(db("cancelling a run"))?;
                    Ok(Ok(Cancelled::Requested))
                }
                RunState::Queued | RunState::WaitingInput => {
                    tx.execute("DELETE FROM pending WHERE run_id = ?1", [run.0])
                        .map_err(db("cancelling a run"))?;
                    set_state(tx, run, RunState::Cancelled)?;
                    outbox(tx, run, RunState::Cancelled, &wake)?;
                    let events = append(
                        tx,
                        run,
                        vec![(
                            Some(RunEvent::State {
                                state: RunState::Cancelled,
                            }),
                            Some(Step::Cancelled),
                        )],
                    )?;
                    Ok(Ok(Cancelled::Now(events)))
                }
                state => Ok(Err(InputError::Finished { run, state })),
            }
        })
        .await
    }

    async fn heartbeat(&self, owner: &str, lease_ms: i64) -> Result<Vec<RunId>, StoreError> {
        let owner = owner.to_owned();
        self.write("renewing leases", move |tx| {
            tx.execute(
                "UPDATE runs SET lease_until_ms = ?1 WHERE owner = ?2 AND state = 'running'",
                params![now_ms() + lease_ms, owner],
            )
            .map_err(db("renewing leases"))?;
            let mut stmt = tx
                .prepare_cached(
                    "SELECT id FROM runs WHERE owner = ?1 AND state = 'running' AND cancel_requested = 1",
                )
                .map_err(db("renewing leases"))?;
            let rows = stmt
                .query_map([owner], |r| r.get::<_, i64>(0))
                .map_err(db("renewing leases"))?;
            rows.map(|r| r.map(RunId).map_err(db("renewing leases")))
                .collect()
        })
        .await
    }

    async fn release_expired_leases(&self, now: i64) -> Result<u64, StoreError> {
        self.requeue(
            "releasing expired leases",
            "lease_until_ms < ?1",
            rusqlite::types::Value::Integer(now),
        )
        .await
    }

    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError> {
        self.requeue(
            "releasing a stopping worker's leases",
            "owner = ?1",
            rusqlite::types::Value::Text(owner.to_owned()),
        )
        .await
    }

    async fn next_lease_expiry(&self, owner: &str) -> Result<Option<i64>, StoreError> {
        self.earliest_ms(
            "reading leases",
            "SELECT MIN(lease_until_ms) FROM runs WHERE state = 'running' AND owner <> ?1",
            vec![owner.to_owned()],
        )
        .await
    }

    async fn run(&self, run: RunId) -> Result<Option<RunRecord>, StoreError> {
        self.call(move |conn| read_run(conn, run)).await
    }

    async fn run_by_idempotency_key(&self, key: &str) -> Result<Option<RunRecord>, StoreError> {
        let key = key.to_owned();
        self.call(move |conn| {
            let id: Option<i64> = conn
                .query_row(
                    "SELECT id FROM runs WHERE idempotency_key = ?1",
                    [&key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(db("reading a run by its idempotency key"))?;
            match id {
                Some(id) => read_run(conn, RunId(id)),
                None => Ok(None),
            }
        })
        .await
    }

    async fn forget_idempotency_key(&self, key: &str) -> Result<(), StoreError> {
        let key = key.to_owned();
        self.write("forgetting an idempotency key", move |tx| {
            tx.execute(
                "UPDATE runs SET idempotency_key = NULL WHERE idempotency_key = ?1",
                [&key],
            )
            .map_err(db("forgetting an idempotency key"))?;
            Ok(())
        })
        .await
    }

    async fn list_runs(
        &self,
        filter: &RunFilter,
        limit: usize,
    ) -> Result<Vec<RunRecord>, StoreError> {
        // Only the conditions given are written, so SQLite reads each page as one range of an
        // index (`runs_by_agent`, `runs_by_state`, `runs_by_agent_state`,
        // `runs_by_conversation`, or the ids) from the cursor.
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM runs r WHERE id < ?1");
        let mut args: Vec<rusqlite::types::Value> =
            vec![filter.before.map_or(i64::MAX, |r| r.0).into()];
        let conditions = [
            ("agent", filter.agent.clone()),
            ("state", filter.state.map(|s| s.as_str().to_owned())),
            ("conversation", filter.conversation.clone()),
        ];
        for (column, value) in conditions {
            if let Some(value) = value {
                args.push(value.into());
                sql.push_str(&format!(" AND {column} = ?{}", args.len()));
            }
        }
        args.push(i64::try_from(limit).unwrap_or(i64::MAX).into());
        sql.push_str(&format!(" ORDER BY id DESC LIMIT ?{}", args.len()));
        self.call(move |conn| {
            let rows = conn
                .prepare_cached(&sql)
                .and_then(|mut stmt| {
                    stmt.query_map(rusqlite::params_from_iter(args), RunRow::read)?
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(db("listing runs"))?;
            rows.into_iter().map(|row| row.record(conn)).collect()
        })
        .await
    }

    async fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>, StoreError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let exists: Option<i64> = conn
                .query_row("SELECT 1 FROM conversations WHERE id = ?1", [&id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(db("reading a conversation"))?;
            if exists.is_none() {
                return Ok(None);
            }
            let runs: Vec<(i64, String)> = {
                let mut stmt = conn
                    .prepare_cached(
                        "SELECT id, state FROM runs WHERE conversation = ?1 ORDER BY id",
                    )
                    .map_err(db("reading a conversation"))?;
                let rows = stmt
                    .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(db("reading a conversation"))?;
                rows.collect::<Result<_, _>>()
                    .map_err(db("reading a conversation"))?
            };
            let mut pending_question = None;
            for (run, state) in &runs {
                if state == RunState::WaitingInput.as_str() {
                    let question = unanswered(conn, RunId(*run))?
                        .into_iter()
                        .find(|a| matches!(a.pending.kind, PendingKind::Question { .. }));
                    if let Some(q) = question {
                        pending_question = Some((RunId(*run), q));
                        break;
                    }
                }
            }
            Ok(Some(ConversationRecord {
                messages: transcript(conn, &id)?,
                runs: runs.into_iter().map(|r| RunId(r.0)).collect(),
                pending_question,
            }))
        })
        .await
    }

    async fn list_conversations(
        &self,
        filter: &ConversationFilter,
        limit: usize,
    ) -> Result<Vec<ConversationSummary>, StoreError> {
        let before = filter.before.map_or(i64::MAX, |r| r.0);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // One character more than a title keeps, so a longer first message is cut with `…`.
        let cut = i64::try_from(TITLE_CHARS + 1).unwrap_or(i64::MAX);
        self.call(move |conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "WITH c AS (
                       SELECT conversation, MAX(id) AS last, MIN(id) AS first, COUNT(*) AS n
                       FROM runs GROUP BY conversation
                     )
                     SELECT c.conversation, c.last, c.n, r.agent, r.state, substr(f.input, 1, ?3),
                       k.created_ms, {UPDATED_MS}
                     FROM c JOIN runs r ON r.id = c.last JOIN runs f ON f.id = c.first
                       JOIN conversations k ON k.id = c.conversation
                     WHERE c.last < ?1 ORDER BY c.last DESC LIMIT ?2"
                ))
                .map_err(db("listing conversations"))?;
            let rows = stmt
                .query_map(params![before, limit, cut], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, i64>(6)?,
                        r.get::<_, i64>(7)?,
                    ))
                })
                .map_err(db("listing conversations"))?;
            rows.map(|row| {
                let (id, last, n, agent, state, first, created_ms, updated_ms) =
                    row.map_err(db("listing conversations"))?;
                let state = RunState::parse(&state).ok_or_else(|| StoreError::Corrupt {
                    what: format!("state of {}", RunId(last)),
                    message: format!("`{state}` is not a run state"),
                })?;
                Ok(ConversationSummary {
                    id,
                    agent,
                    title: crate::types::title(&first),
                    runs: u64::try_from(n).unwrap_or(0),
                    last_run: RunId(last),
                    state,
                    created_ms,
                    updated_ms,
                })
            })
            .collect()
        })
        .await
    }

    async fn events_after(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.call(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT seq, body FROM events WHERE run_id = ?1 AND seq > ?2 AND body <> 'null'
                     ORDER BY seq LIMIT ?3",
                )
                .map_err(db("reading events"))?;
            let rows = stmt
                // Saturating: an `after` past the largest sequence asks for nothing, never for all.
                .query_map(
                    params![
                        run.0,
                        i64::try_from(after).unwrap_or(i64::MAX),
                        i64::try_from(limit).unwrap_or(i64::MAX)
                    ],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
                )
                .map_err(db("reading events"))?;
            rows.map(|r| {
                let (seq, body) = r.map_err(db("reading events"))?;
                let (event, at_ms) =
                    super::parse_event_body(&body).map_err(|e| StoreError::Corrupt {
                        what: "event".to_owned(),
                        message: e.to_string(),
                    })?;
                Ok(StoredEvent {
                    run,
                    seq: seq as u64,
                    event,
                    at_ms,
                })
            })
            .collect()
        })
        .await
    }

    async fn prune_finished(&self, before_ms: i64, batch: usize) -> Result<u64, StoreError> {
        const WHAT: &str = "deleting finished runs";
        let limit = i64::try_from(batch.max(1)).unwrap_or(i64::MAX);
        self.call(move |conn| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(db(WHAT))?;
            let doomed: Vec<(i64, String)> = tx
                .prepare_cached(
                    // By the index on finished_ms, oldest first: left to itself SQLite would
                    // take every finished run by state and sort them, at every batch.
                    "SELECT id, conversation FROM runs INDEXED BY runs_finished
                     WHERE finished_ms < ?1 AND state IN ('completed', 'failed', 'cancelled')
                     ORDER BY finished_ms LIMIT ?2",
                )
                .and_then(|mut stmt| {
                    stmt.query_map(params![before_ms, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect::<Result<_, _>>()
                })
                .map_err(db(WHAT))?;
            for (id, _) in &doomed {
                for sql in [
                    "DELETE FROM events WHERE run_id = ?1",
                    "DELETE FROM steps_v1 WHERE run_id = ?1",
                    "DELETE FROM pending WHERE run_id = ?1",
                    "DELETE FROM webhook_attempts WHERE delivery_id IN (
                       SELECT d.id FROM webhook_deliveries d
                       JOIN webhook_messages m ON m.id = d.message_id WHERE m.run_id = ?1)",
                    "DELETE FROM webhook_deliveries WHERE message_id IN (
                       SELECT id FROM webhook_messages WHERE run_id = ?1)",
                    "DELETE FROM webhook_messages WHERE run_id = ?1",
                    "DELETE FROM runs WHERE id = ?1",
                ] {
                    tx.prepare_cached(sql)
                        .and_then(|mut stmt| stmt.execute([id]))
                        .map_err(db(WHAT))?;
                }
            }
            let conversations: std::collections::BTreeSet<&String> =
                doomed.iter().map(|(_, c)| c).collect();
            for conversation in conversations {
                let left: bool = tx
                    .prepare_cached("SELECT EXISTS (SELECT 1 FROM runs WHERE conversation = ?1)")
                    .and_then(|mut stmt| stmt.query_row([conversation], |r| r.get(0)))
                    .map_err(db(WHAT))?;
                if left {
                    continue;
                }
                for sql in [
                    "DELETE FROM messages WHERE conversation = ?1",
                    "DELETE FROM grants WHERE conversation = ?1",
                    "DELETE FROM conversations WHERE id = ?1",
                ] {
                    tx.prepare_cached(sql)
                        .and_then(|mut stmt| stmt.execute([conversation]))
                        .map_err(db(WHAT))?;
                }
            }
            tx.commit().map_err(db(WHAT))?;
            if !doomed.is_empty() {
                // A file created with `auto_vacuum = INCREMENTAL` (every file this store
                // creates) gives the freed pages back to the file system; otherwise this does
                // nothing and later writes reuse them.
                // Each step of the statement releases one page: step it to the end.
                conn.prepare("PRAGMA incremental_vacuum")
                    .and_then(|mut stmt| {
                        let mut rows = stmt.query([])?;
                        while rows.next()?.is_some() {}
                        Ok(())
                    })
                    .map_err(db("releasing freed pages"))?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }
}

crate::store::boxed_run_store!(SqliteStore);
