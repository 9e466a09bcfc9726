//! [`SqliteMemoryStore`]: memories in a SQLite file with FTS5 full-text search, surviving
//! restarts of the process.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harnessx::BoxFuture;
use rusqlite::{Connection, TransactionBehavior, params};

use super::sanitize;
use super::{
    ListQuery, Memory, MemoryError, MemoryHit, MemoryLimits, MemoryPage, MemoryStore, SearchQuery,
};

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

const SCHEMA_V1: &str = "
CREATE TABLE memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    created_at_ms INTEGER NOT NULL
);
CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags,
    content = 'memories', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_after_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, tags) VALUES (new.id, new.content, new.tags);
END;
CREATE TRIGGER memories_after_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags)
    VALUES ('delete', old.id, old.content, old.tags);
END;
PRAGMA user_version = 1;
";

/// Keeps rows whose JSON `tags` array holds `?N` (ASCII case-insensitive), or all rows when
/// `?N` is NULL.
const TAG_FILTER: &str = "(?{n} IS NULL OR EXISTS (SELECT 1 FROM json_each(m.tags) t WHERE lower(t.value) = lower(?{n})))";

/// A durable [`MemoryStore`] in one SQLite file.
///
/// - WAL journal, so readers never block the writer, and a 5 s busy timeout, so several
///   processes can share the file.
/// - A versioned schema ([`SCHEMA_VERSION`]); a file from a newer version is refused rather
///   than misread.
/// - Full-text search with FTS5 (Unicode words, diacritics folded), ranked by BM25. The search
///   text is reduced to words and each is quoted, so user text can never break the `MATCH`
///   syntax; a memory matches when it contains any of the words, and ranks higher with more.
/// - Every query runs on tokio's blocking pool.
///
/// ```
/// use harnessx_builtin::memory::{MemoryStore, SqliteMemoryStore, ListQuery};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("memories.db");
/// let store = SqliteMemoryStore::open(&path)?;
/// store.save("Prefers metric units".into(), vec!["user".into()]).await?;
/// drop(store);
/// let reopened = SqliteMemoryStore::open(&path)?;
/// let page = reopened.list(ListQuery::default()).await?;
/// assert_eq!(page.memories[0].content, "Prefers metric units");
/// # Ok::<(), harnessx_builtin::memory::MemoryError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct SqliteMemoryStore {
    path: PathBuf,
    limits: MemoryLimits,
    conn: Arc<Mutex<Connection>>,
}

impl SqliteMemoryStore {
    /// Opens (or creates, with its parent directories) the database at `path`, with the default
    /// [`MemoryLimits`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        Self::open_with_limits(path, MemoryLimits::default())
    }

    /// Opens (or creates) the database at `path` with these limits. Blocking file I/O: call it
    /// during setup or on the blocking pool.
    pub fn open_with_limits(
        path: impl AsRef<Path>,
        limits: MemoryLimits,
    ) -> Result<Self, MemoryError> {
        let path = path.as_ref().to_path_buf();
        let storage = |e: &dyn std::fmt::Display| MemoryError::Storage {
            path: path.clone(),
            reason: e.to_string(),
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| storage(&e))?;
        }
        let mut conn = Connection::open(&path).map_err(|e| storage(&e))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| storage(&e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| storage(&e))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| storage(&e))?;
        migrate(&mut conn, &path)?;
        Ok(Self {
            path,
            limits,
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with the connection on the blocking pool.
    async fn with_conn<T, F>(&self, f: F) -> Result<T, MemoryError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &MemoryLimits) -> Result<T, MemoryError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let limits = self.limits.clone();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut conn, &limits)
        })
        .await
        .map_err(|e| MemoryError::Storage {
            path,
            reason: format!("the database task failed: {e}"),
        })?
    }

    fn storage(&self) -> impl Fn(rusqlite::Error) -> MemoryError + Send + 'static {
        let path = self.path.clone();
        move |e| MemoryError::Storage {
            path: path.clone(),
            reason: e.to_string(),
        }
    }
}

/// Brings the schema to [`SCHEMA_VERSION`], refusing files from newer versions.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), MemoryError> {
    let storage = |e: rusqlite::Error| MemoryError::Storage {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(storage)?;
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(storage)?;
    match version {
        0 => tx.execute_batch(SCHEMA_V1).map_err(storage)?,
        SCHEMA_VERSION => {}
        found => {
            return Err(MemoryError::SchemaVersion {
                path: path.to_path_buf(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
    }
    tx.commit().map_err(storage)
}

fn to_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn from_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

fn row_to_memory(row: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
    let tags: String = row.get(2)?;
    Ok(Memory {
        id: row.get(0)?,
        content: row.get(1)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        created_at: from_ms(row.get(3)?),
    })
}

fn usize_param(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl MemoryStore for SqliteMemoryStore {
    fn save(
        &self,
        content: String,
        tags: Vec<String>,
    ) -> BoxFuture<'_, Result<Memory, MemoryError>> {
        let storage = self.storage();
        // Cleaning and checking the caller's text and tags happens before the connection is
        // taken, so a huge list of tags never holds up other calls on the store.
        let (content, tags) = match sanitize::new_memory(&content, &tags, &self.limits) {
            Ok(cleaned) => cleaned,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        Box::pin(self.with_conn(move |conn, limits| {
            let tags_json = serde_json::to_string(&tags).unwrap_or_else(|_| "[]".to_owned());
            let created_at = SystemTime::now();
            // IMMEDIATE takes the write lock first, so the count and the insert are atomic even
            // across processes sharing the file.
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&storage)?;
            let count: i64 = tx
                .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
                .map_err(&storage)?;
            if count >= usize_param(limits.max_memories) {
                return Err(MemoryError::Full {
                    limit: limits.max_memories,
                });
            }
            tx.execute(
                "INSERT INTO memories (content, tags, created_at_ms) VALUES (?1, ?2, ?3)",
                params![content, tags_json, to_ms(created_at)],
            )
            .map_err(&storage)?;
            let id = tx.last_insert_rowid();
            tx.commit().map_err(&storage)?;
            Ok(Memory {
                id,
                content,
                tags,
                created_at: from_ms(to_ms(created_at)),
            })
        }))
    }

    fn search(&self, query: SearchQuery) -> BoxFuture<'_, Result<Vec<MemoryHit>, MemoryError>> {
        let storage = self.storage();
        // The caller's text is reduced to words before the connection is taken.
        let terms = match sanitize::search_terms(&query.text, &self.limits) {
            Ok(terms) => terms,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let tag = sanitize::tag_filter(query.tag.as_deref());
        Box::pin(self.with_conn(move |conn, limits| {
            // Each word quoted (inner quotes doubled): a phrase of one word, never an operator.
            let fts_query = terms
                .iter()
                .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
                .collect::<Vec<_>>()
                .join(" OR ");
            let limit = sanitize::clamp_limit(query.limit, limits);
            let sql = format!(
                "SELECT m.id, m.content, m.tags, m.created_at_ms, bm25(memories_fts) AS rank
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1 AND {}
                 ORDER BY rank, m.id DESC LIMIT ?3",
                TAG_FILTER.replace("{n}", "2")
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(&storage)?;
            let rows = stmt
                .query_map(params![fts_query, tag, usize_param(limit)], |row| {
                    Ok(MemoryHit {
                        memory: row_to_memory(row)?,
                        score: -row.get::<_, f64>(4)?,
                    })
                })
                .map_err(&storage)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(&storage)
        }))
    }

    fn list(&self, query: ListQuery) -> BoxFuture<'_, Result<MemoryPage, MemoryError>> {
        let storage = self.storage();
        let tag = sanitize::tag_filter(query.tag.as_deref());
        Box::pin(self.with_conn(move |conn, limits| {
            let limit = sanitize::clamp_limit(query.limit, limits);
            let filter = TAG_FILTER.replace("{n}", "1");
            let total: i64 = conn
                .query_row(
                    &format!("SELECT count(*) FROM memories m WHERE {filter}"),
                    params![tag],
                    |r| r.get(0),
                )
                .map_err(&storage)?;
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT m.id, m.content, m.tags, m.created_at_ms FROM memories m
                     WHERE {filter} ORDER BY m.id DESC LIMIT ?2 OFFSET ?3"
                ))
                .map_err(&storage)?;
            let memories = stmt
                .query_map(
                    params![tag, usize_param(limit), usize_param(query.offset)],
                    row_to_memory,
                )
                .map_err(&storage)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(&storage)?;
            Ok(MemoryPage {
                memories,
                total: usize::try_from(total).unwrap_or(0),
            })
        }))
    }

    fn delete(&self, id: i64) -> BoxFuture<'_, Result<bool, MemoryError>> {
        let storage = self.storage();
        Box::pin(self.with_conn(move |conn, _| {
            let deleted = conn
                .execute("DELETE FROM memories WHERE id = ?1", params![id])
                .map_err(&storage)?;
            Ok(deleted > 0)
        }))
    }

    fn limits(&self) -> &MemoryLimits {
        &self.limits
    }
}

/// Reads the schema version of a database file without migrating it.
#[cfg(test)]
fn schema_version(path: &Path) -> Option<i64> {
    let conn = Connection::open(path).ok()?;
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;

    /// The caller's input is checked before the connection is taken: with the connection held
    /// by someone else, a save of 100 000 tags, an over-long search and an over-long tag filter
    /// are all answered on their first poll instead of queueing behind the lock.
    #[tokio::test]
    async fn input_is_checked_without_taking_the_connection() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteMemoryStore::open(dir.path().join("m.db")).unwrap();
        let held = store.conn.lock().unwrap();
        let tags: Vec<String> = (0..100_000).map(|i| format!("t{i}")).collect();
        let saved = store.save("x".into(), tags).now_or_never();
        assert_eq!(
            saved,
            Some(Err(MemoryError::TooManyTags {
                count: 100_000,
                limit: 16
            }))
        );
        let query = SearchQuery {
            text: "word ".repeat(1000),
            ..SearchQuery::default()
        };
        assert!(matches!(
            store.search(query).now_or_never(),
            Some(Err(MemoryError::TooLarge { field: "query", .. }))
        ));
        // A valid save does need the connection: it waits until it is free.
        let mut pending = Box::pin(store.save("kept".into(), vec!["a".into()]));
        assert!((&mut pending).now_or_never().is_none());
        drop(held);
        assert_eq!(pending.await.unwrap().content, "kept");
    }

    #[test]
    fn a_new_file_gets_the_current_schema_in_wal_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/m.db");
        let store = SqliteMemoryStore::open(&path).unwrap();
        assert_eq!(schema_version(&path), Some(SCHEMA_VERSION));
        let conn = store.conn.lock().unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_file_from_a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 7)
            .unwrap();
        let err = SqliteMemoryStore::open(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the memory database {} has schema version 7, but this build of harnessx supports up to version 1; upgrade harnessx or use another file",
                path.display()
            )
        );
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_storage_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        std::fs::write(
            &path,
            b"this is not sqlite, just text that is long enough to matter....",
        )
        .unwrap();
        let err = SqliteMemoryStore::open(&path).unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "the memory database {} cannot be used: ",
                path.display()
            )),
            "{err}"
        );
    }
}
