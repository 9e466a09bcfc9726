//! The bundle's full-text index: one FTS5 row per concept (title, description, tags, body),
//! ranked with bm25 and returned with a snippet.

use std::sync::{Arc, Mutex};

use rusqlite::{Connection, params};

use super::Concept;
use crate::KnowledgeError;
use crate::query::match_expression;
use crate::sqlite::on_blocking_pool;

const SCHEMA: &str = "
    CREATE VIRTUAL TABLE concepts USING fts5(
        id UNINDEXED, title, description, tags, body,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
";

/// Column weights for bm25, in column order: a match in the title counts most.
const RANK: &str = "bm25(concepts, 0.0, 4.0, 2.0, 2.0, 1.0)";

/// A concept that matched a query.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hit {
    /// The concept's ID.
    pub(super) id: String,
    /// Relevance: higher is better.
    pub(super) score: f64,
    /// The best-matching fragment, matches marked with `**`.
    pub(super) snippet: String,
}

/// An in-memory FTS5 index of a bundle's concepts.
pub(super) struct ConceptIndex {
    conn: Arc<Mutex<Connection>>,
}

impl ConceptIndex {
    /// Indexes `concepts`.
    pub(super) fn build<'a>(concepts: impl Iterator<Item = &'a Concept>) -> rusqlite::Result<Self> {
        let mut conn = Connection::open_in_memory()?;
        conn.execute_batch(SCHEMA)?;
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO concepts (id, title, description, tags, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for concept in concepts {
                insert.execute(params![
                    concept.id,
                    concept.title().unwrap_or_default(),
                    concept.description().unwrap_or_default(),
                    concept.tags().join(" "),
                    super::links::plain_text(&concept.body),
                ])?;
            }
        }
        tx.commit()?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Up to `limit` concepts matching the words of `query`, best first.
    pub(super) async fn search(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Hit>, KnowledgeError> {
        let Some(expression) = match_expression(query) else {
            return Ok(Vec::new());
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        on_blocking_pool(&self.conn, "search the concepts", move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT id, {RANK} AS rank, snippet(concepts, -1, '**', '**', '…', 16)
                 FROM concepts WHERE concepts MATCH ?1
                 ORDER BY rank, id LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![expression, limit], |row| {
                let rank: f64 = row.get(1)?;
                Ok(Hit {
                    id: row.get(0)?,
                    score: -rank,
                    snippet: row.get(2)?,
                })
            })?;
            rows.collect()
        })
        .await
    }
}
