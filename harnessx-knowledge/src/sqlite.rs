//! [`SqliteKnowledgeBase`]: documents chunked into passages in an embedded SQLite FTS5 index,
//! ranked with bm25.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::{Document, KnowledgeBase, KnowledgeError, Passage, chunk, query, relevance};
use harnessx_core::tool::BoxFuture;

/// The default passage size in characters.
pub const DEFAULT_PASSAGE_CHARS: usize = 1200;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS documents (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL UNIQUE,
        title TEXT
    );
    CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
        title, text, doc_id UNINDEXED, seq UNINDEXED,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
";

/// An embedded full-text knowledge base: SQLite's FTS5 with Porter stemming and Unicode-aware
/// tokens. A passage's score is its relevance in `(0, 1]`: the share of the query's words it
/// contains, each word weighted by how rare it is in the knowledge base (words the knowledge base
/// never uses are left out), so `1.00` means "every known word of the query is here" on a corpus
/// of any size. Passages are ranked by it, ties by bm25 (titles weigh double). Documents are cut into passages of about
/// [`DEFAULT_PASSAGE_CHARS`]; adding a document with a source already present replaces it.
/// Work runs on tokio's blocking pool.
///
/// ```
/// use harnessx::knowledge::{Document, KnowledgeBase, SqliteKnowledgeBase};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::knowledge::KnowledgeError> {
/// let kb = SqliteKnowledgeBase::in_memory()?.named("handbook");
/// kb.add_documents(vec![
///     Document::new("handbook/vpn.md", "Connect to the VPN with the WireGuard profile from the portal.")
///         .with_title("VPN access"),
///     Document::new("handbook/leave.md", "Request leave in the HR tool two weeks ahead."),
/// ])
/// .await?;
/// let hits = kb.search("how do I get on the vpn?", 3).await?;
/// assert_eq!(hits[0].source, "handbook/vpn.md");
/// assert_eq!(hits[0].title.as_deref(), Some("VPN access"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SqliteKnowledgeBase {
    name: String,
    conn: Arc<Mutex<Connection>>,
    passage_chars: usize,
    path: Option<PathBuf>,
}

impl std::fmt::Debug for SqliteKnowledgeBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteKnowledgeBase")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("passage_chars", &self.passage_chars)
            .finish_non_exhaustive()
    }
}

impl SqliteKnowledgeBase {
    /// Opens (or creates) a knowledge base stored in the file at `path`. Its name is the file
    /// stem.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, KnowledgeError> {
        let path = path.as_ref();
        let conn = Connection::open(path).map_err(|source| KnowledgeError::Open {
            path: path.display().to_string(),
            source,
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "knowledge".to_owned());
        Self::init(conn, name, Some(path.to_path_buf()))
    }

    /// A knowledge base held in memory, named `knowledge`.
    pub fn in_memory() -> Result<Self, KnowledgeError> {
        let conn = Connection::open_in_memory().map_err(|source| KnowledgeError::Open {
            path: ":memory:".to_owned(),
            source,
        })?;
        Self::init(conn, "knowledge".to_owned(), None)
    }

    fn init(conn: Connection, name: String, path: Option<PathBuf>) -> Result<Self, KnowledgeError> {
        let where_ = path
            .as_ref()
            .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string());
        conn.execute_batch(SCHEMA)
            .map_err(|source| KnowledgeError::Open {
                path: where_,
                source,
            })?;
        Ok(Self {
            name,
            conn: Arc::new(Mutex::new(conn)),
            passage_chars: DEFAULT_PASSAGE_CHARS,
            path,
        })
    }

    /// Sets the name shown with its passages.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the passage size in characters for documents added from now on.
    pub fn passage_chars(mut self, chars: usize) -> Self {
        self.passage_chars = chars;
        self
    }

    /// Removes the document with this source; returns whether it existed.
    pub async fn remove_document(&self, source: &str) -> Result<bool, KnowledgeError> {
        let source = source.to_owned();
        self.blocking("remove a document", move |conn| {
            let tx = conn.transaction()?;
            let removed = delete_source(&tx, &source)?;
            tx.commit()?;
            Ok(removed)
        })
        .await
    }

    /// The number of documents and passages stored.
    pub async fn counts(&self) -> Result<(usize, usize), KnowledgeError> {
        self.blocking("count documents", |conn| {
            let docs: i64 = conn.query_row("SELECT count(*) FROM documents", [], |r| r.get(0))?;
            let passages: i64 =
                conn.query_row("SELECT count(*) FROM passages", [], |r| r.get(0))?;
            Ok((docs as usize, passages as usize))
        })
        .await
    }

    /// Runs `f` with the connection on the blocking pool.
    async fn blocking<T, F>(&self, operation: &'static str, f: F) -> Result<T, KnowledgeError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        on_blocking_pool(&self.conn, operation, f).await
    }
}

/// Runs `f` with the shared connection on tokio's blocking pool; the store's own errors become
/// [`KnowledgeError::Storage`], a lost worker [`KnowledgeError::Crashed`].
pub(crate) async fn on_blocking_pool<T, F>(
    conn: &Arc<Mutex<Connection>>,
    operation: &'static str,
    f: F,
) -> Result<T, KnowledgeError>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
{
    let conn = Arc::clone(conn);
    let result = tokio::task::spawn_blocking(move || {
        let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn)
    })
    .await
    .map_err(|e| KnowledgeError::Crashed {
        operation,
        reason: e.to_string(),
    })?;
    result.map_err(|source| KnowledgeError::Storage { operation, source })
}

fn delete_source(conn: &Connection, source: &str) -> rusqlite::Result<bool> {
    let id: Option<i64> = conn
        .query_row(
            "SELECT id FROM documents WHERE source = ?1",
            [source],
            |r| r.get(0),
        )
        .optional()?;
    let Some(id) = id else { return Ok(false) };
    conn.execute("DELETE FROM passages WHERE doc_id = ?1", [id])?;
    conn.execute("DELETE FROM documents WHERE id = ?1", [id])?;
    Ok(true)
}

impl KnowledgeBase for SqliteKnowledgeBase {
    fn name(&self) -> &str {
        &self.name
    }

    fn search<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Passage>, KnowledgeError>> {
        let terms = query::terms(query);
        let kb = self.name.clone();
        Box::pin(async move {
            if terms.is_empty() || limit == 0 {
                return Ok(Vec::new());
            }
            self.blocking("search", move |conn| {
                relevance::search(conn, &terms, limit, &kb)
            })
            .await
        })
    }

    fn add_documents<'a>(
        &'a self,
        documents: Vec<Document>,
    ) -> BoxFuture<'a, Result<usize, KnowledgeError>> {
        Box::pin(async move {
            if let Some(i) = documents.iter().position(|d| d.source.trim().is_empty()) {
                return Err(KnowledgeError::EmptySource { index: i });
            }
            let max = self.passage_chars;
            self.blocking("add documents", move |conn| {
                let tx = conn.transaction()?;
                let mut added = 0;
                for doc in &documents {
                    delete_source(&tx, &doc.source)?;
                    tx.execute(
                        "INSERT INTO documents (source, title) VALUES (?1, ?2)",
                        params![doc.source, doc.title],
                    )?;
                    let id = tx.last_insert_rowid();
                    for (seq, text) in chunk::chunk(&doc.text, max).into_iter().enumerate() {
                        tx.execute(
                            "INSERT INTO passages (title, text, doc_id, seq) VALUES (?1, ?2, ?3, ?4)",
                            params![doc.title.as_deref().unwrap_or(""), text, id, seq as i64],
                        )?;
                        added += 1;
                    }
                }
                tx.commit()?;
                Ok(added)
            })
            .await
        })
    }
}
