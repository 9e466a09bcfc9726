//! The bundle's full-text index: one FTS5 row per concept (title, description, tags, body), and
//! the counts [`rank`](super::rank) scores with: how many concepts hold each query word, and how
//! often each concept holds it in each field. The index does no scoring of its own, so concepts
//! of several bundles can be scored together on one scale.

use std::sync::{Arc, Mutex};

use rusqlite::{Connection, params};

use super::Concept;
use crate::KnowledgeError;
use crate::sqlite::on_blocking_pool;

const SCHEMA: &str = "
    CREATE VIRTUAL TABLE concepts USING fts5(
        title, description, tags, body,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE VIRTUAL TABLE concept_terms USING fts5vocab(concepts, instance);
    CREATE VIRTUAL TABLE query USING fts5(
        text,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE VIRTUAL TABLE query_terms USING fts5vocab(query, row);
";

/// The indexed fields, in column order.
pub(super) const FIELDS: [&str; 4] = ["title", "description", "tags", "body"];

/// Counts per field, in [`FIELDS`] order.
pub(super) type PerField = [u32; FIELDS.len()];

/// What one bundle holds of a query's terms.
#[derive(Debug, Clone, Default)]
pub(super) struct Matches {
    /// The query's terms after the tokenizer (lower case, stemmed), sorted; the same list in
    /// every bundle, since every bundle tokenizes alike.
    pub(super) terms: Vec<String>,
    /// How many concepts the bundle has.
    pub(super) concepts: u64,
    /// How many tokens each field holds over all concepts.
    pub(super) field_tokens: [u64; FIELDS.len()],
    /// For each term, how many concepts hold it.
    pub(super) document_frequency: Vec<u64>,
    /// The concepts that hold at least one term.
    pub(super) hits: Vec<ConceptHits>,
}

/// One concept's share of a query's terms.
#[derive(Debug, Clone)]
pub(super) struct ConceptHits {
    /// Its row in the index.
    pub(super) row: i64,
    /// Its ID.
    pub(super) id: String,
    /// How many tokens each of its fields holds.
    pub(super) lengths: PerField,
    /// For each term (in [`Matches::terms`] order), how often each field holds it.
    pub(super) frequencies: Vec<PerField>,
}

/// An in-memory FTS5 index of a bundle's concepts. A concept's row is its position in the
/// sorted IDs, plus one.
pub(super) struct ConceptIndex {
    conn: Arc<Mutex<Connection>>,
    ids: Arc<Vec<String>>,
    /// Tokens per field of each concept, by row - 1.
    lengths: Arc<Vec<PerField>>,
    field_tokens: [u64; FIELDS.len()],
}

impl ConceptIndex {
    /// Indexes `concepts`.
    pub(super) fn build<'a>(concepts: impl Iterator<Item = &'a Concept>) -> rusqlite::Result<Self> {
        let mut conn = Connection::open_in_memory()?;
        conn.execute_batch(SCHEMA)?;
        let mut ids = Vec::new();
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO concepts (rowid, title, description, tags, body)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for concept in concepts {
                ids.push(concept.id.clone());
                insert.execute(params![
                    ids.len() as i64,
                    concept.title().unwrap_or_default(),
                    concept.description().unwrap_or_default(),
                    concept.tags().join(" "),
                    super::links::plain_text(&concept.body),
                ])?;
            }
        }
        tx.commit()?;
        let mut lengths = vec![PerField::default(); ids.len()];
        let mut field_tokens = [0_u64; FIELDS.len()];
        {
            let mut stmt =
                conn.prepare("SELECT doc, col, count(*) FROM concept_terms GROUP BY doc, col")?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let (doc, col, count): (i64, String, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
                let (Some(field), Some(slot)) = (
                    FIELDS.iter().position(|f| *f == col),
                    usize::try_from(doc - 1)
                        .ok()
                        .and_then(|i| lengths.get_mut(i)),
                ) else {
                    continue;
                };
                let count = u32::try_from(count).unwrap_or(u32::MAX);
                slot[field] = count;
                field_tokens[field] += u64::from(count);
            }
        }
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            ids: Arc::new(ids),
            lengths: Arc::new(lengths),
            field_tokens,
        })
    }

    /// The counts of `words` (lower-case words, stop words already left out) in this bundle.
    pub(super) async fn matches(&self, words: &[String]) -> Result<Matches, KnowledgeError> {
        if words.is_empty() {
            return Ok(Matches::default());
        }
        let text = words.join(" ");
        let ids = Arc::clone(&self.ids);
        let lengths = Arc::clone(&self.lengths);
        let field_tokens = self.field_tokens;
        on_blocking_pool(&self.conn, "search the concepts", move |conn| {
            let terms = tokenize(conn, &text)?;
            let mut matches = Matches {
                concepts: ids.len() as u64,
                field_tokens,
                document_frequency: vec![0; terms.len()],
                ..Matches::default()
            };
            // Row → position in `matches.hits`.
            let mut at = std::collections::HashMap::new();
            let mut stmt = conn.prepare_cached(
                "SELECT doc, col, count(*) FROM concept_terms WHERE term = ?1
                 GROUP BY doc, col ORDER BY doc, col",
            )?;
            for (t, term) in terms.iter().enumerate() {
                let mut rows = stmt.query([term])?;
                let mut last_doc = None;
                while let Some(row) = rows.next()? {
                    let (doc, col, count): (i64, String, i64) =
                        (row.get(0)?, row.get(1)?, row.get(2)?);
                    let Some(field) = FIELDS.iter().position(|f| *f == col) else {
                        continue;
                    };
                    let Some(index) = usize::try_from(doc - 1).ok().filter(|i| *i < ids.len())
                    else {
                        continue;
                    };
                    if last_doc != Some(doc) {
                        matches.document_frequency[t] += 1;
                        last_doc = Some(doc);
                    }
                    let slot = *at.entry(doc).or_insert_with(|| {
                        matches.hits.push(ConceptHits {
                            row: doc,
                            id: ids[index].clone(),
                            lengths: lengths[index],
                            frequencies: vec![PerField::default(); terms.len()],
                        });
                        matches.hits.len() - 1
                    });
                    matches.hits[slot].frequencies[t][field] =
                        u32::try_from(count).unwrap_or(u32::MAX);
                }
            }
            matches.terms = terms;
            Ok(matches)
        })
        .await
    }

    /// The best-matching fragment of each concept in `rows` for `words`, matches marked with
    /// `**`, by row.
    pub(super) async fn snippets(
        &self,
        words: &[String],
        rows: Vec<i64>,
    ) -> Result<Vec<(i64, String)>, KnowledgeError> {
        if words.is_empty() || rows.is_empty() {
            return Ok(Vec::new());
        }
        let expression = words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR ");
        let rows = serde_json::to_string(&rows).unwrap_or_else(|_| "[]".to_owned());
        on_blocking_pool(&self.conn, "search the concepts", move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT rowid, snippet(concepts, -1, '**', '**', '…', 16) FROM concepts
                 WHERE concepts MATCH ?1 AND rowid IN (SELECT value FROM json_each(?2))",
            )?;
            stmt.query_map(params![expression, rows], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?
            .collect()
        })
        .await
    }
}

/// The distinct terms the index's tokenizer makes of `text`, sorted.
fn tokenize(conn: &Connection, text: &str) -> rusqlite::Result<Vec<String>> {
    conn.execute("DELETE FROM query", [])?;
    conn.execute("INSERT INTO query (text) VALUES (?1)", [text])?;
    let mut stmt = conn.prepare_cached("SELECT term FROM query_terms ORDER BY term")?;
    stmt.query_map([], |row| row.get(0))?.collect()
}
