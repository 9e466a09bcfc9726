//! [`KnowledgeStore`] on SQLite: documents in `knowledge_documents`, searched through the
//! external-content FTS5 table `knowledge_fts` that triggers keep in step, ranked by bm25.

use std::collections::BTreeMap;

use harnessx::BoxFuture;
use rusqlite::{Connection, params};

use super::{SqliteStore, db};
use crate::error::StoreError;
use crate::store::knowledge::{
    DocumentError, DocumentFormat, DocumentInfo, KnowledgeHit, KnowledgeStore, NewDocument,
    query_words,
};
use crate::store::now_ms;

fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn info(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, String, String, String, i64, i64)> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

fn to_info(
    (id, base, title, format, bytes, created_ms): (i64, String, String, String, i64, i64),
) -> Result<DocumentInfo, StoreError> {
    Ok(DocumentInfo {
        format: DocumentFormat::parse(&format).ok_or_else(|| StoreError::Corrupt {
            what: format!("document {id} of knowledge base `{base}`"),
            message: format!("its format `{format}` is neither `text` nor `markdown`"),
        })?,
        id: unsigned(id),
        base,
        title,
        bytes: unsigned(bytes),
        created_ms,
    })
}

/// The FTS5 query for `words`: each one quoted (they are letters and digits only), any of
/// them matching.
fn fts_query(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}

fn search(
    conn: &Connection,
    bases: &str,
    query: &str,
    limit: i64,
) -> Result<Vec<KnowledgeHit>, StoreError> {
    const WHAT: &str = "searching knowledge bases";
    let mut stmt = conn
        .prepare_cached(
            "SELECT d.id, d.base, d.title,
                    snippet(knowledge_fts, 1, '', '', '…', 48),
                    bm25(knowledge_fts, 2.0, 1.0)
             FROM knowledge_fts JOIN knowledge_documents d ON d.id = knowledge_fts.rowid
             WHERE knowledge_fts MATCH ?1 AND d.base IN (SELECT value FROM json_each(?2))
             ORDER BY bm25(knowledge_fts, 2.0, 1.0), d.id LIMIT ?3",
        )
        .map_err(db(WHAT))?;
    let rows = stmt
        .query_map(params![query, bases, limit], |r| {
            Ok(KnowledgeHit {
                document: unsigned(r.get(0)?),
                base: r.get(1)?,
                title: r.get(2)?,
                snippet: r.get(3)?,
                score: -r.get::<_, f64>(4)?,
            })
        })
        .map_err(db(WHAT))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db(WHAT))?;
    Ok(rows)
}

// The `KnowledgeStore` methods, boxed into the trait's own by `boxed_knowledge_store!` below.
impl SqliteStore {
    async fn add_document(
        &self,
        document: NewDocument,
    ) -> Result<Result<DocumentInfo, DocumentError>, StoreError> {
        if let Err(e) = document.check() {
            return Ok(Err(e));
        }
        self.write("adding a document", move |tx| {
            let now = now_ms();
            let bytes = i64::try_from(document.body.len()).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT INTO knowledge_documents (base, title, format, body, bytes, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    document.base,
                    document.title,
                    document.format.as_str(),
                    document.body,
                    bytes,
                    now
                ],
            )
            .map_err(db("adding a document"))?;
            Ok(Ok(DocumentInfo {
                id: unsigned(tx.last_insert_rowid()),
                base: document.base,
                title: document.title,
                format: document.format,
                bytes: unsigned(bytes),
                created_ms: now,
            }))
        })
        .await
    }

    async fn documents(&self, base: &str) -> Result<Vec<DocumentInfo>, StoreError> {
        let base = base.to_owned();
        self.call(move |conn| {
            const WHAT: &str = "listing documents";
            let mut stmt = conn
                .prepare_cached(
                    "SELECT id, base, title, format, bytes, created_ms FROM knowledge_documents
                     WHERE base = ?1 ORDER BY id",
                )
                .map_err(db(WHAT))?;
            let rows = stmt
                .query_map([&base], info)
                .map_err(db(WHAT))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(db(WHAT))?;
            rows.into_iter().map(to_info).collect()
        })
        .await
    }

    async fn document_counts(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        self.call(|conn| {
            const WHAT: &str = "counting documents";
            let mut stmt = conn
                .prepare_cached("SELECT base, COUNT(*) FROM knowledge_documents GROUP BY base")
                .map_err(db(WHAT))?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, unsigned(r.get(1)?))))
                .map_err(db(WHAT))?
                .collect::<Result<BTreeMap<_, _>, _>>()
                .map_err(db(WHAT))?;
            Ok(rows)
        })
        .await
    }

    async fn delete_document(&self, base: &str, id: u64) -> Result<bool, StoreError> {
        let base = base.to_owned();
        self.write("deleting a document", move |tx| {
            let n = tx
                .execute(
                    "DELETE FROM knowledge_documents WHERE base = ?1 AND id = ?2",
                    params![base, signed(id)],
                )
                .map_err(db("deleting a document"))?;
            Ok(n > 0)
        })
        .await
    }

    async fn delete_documents(&self, base: &str) -> Result<u64, StoreError> {
        let base = base.to_owned();
        self.write("deleting documents", move |tx| {
            let n = tx
                .execute("DELETE FROM knowledge_documents WHERE base = ?1", [&base])
                .map_err(db("deleting documents"))?;
            Ok(n as u64)
        })
        .await
    }

    async fn search_documents(
        &self,
        bases: &[String],
        query: &str,
        limit: usize,
    ) -> Result<Vec<KnowledgeHit>, StoreError> {
        let words = query_words(query);
        if words.is_empty() || bases.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let query = fts_query(&words);
        let bases = serde_json::to_string(bases)
            .map_err(|e| StoreError::backend("searching knowledge bases", e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.call(move |conn| search(conn, &bases, &query, limit))
            .await
    }
}

crate::store::knowledge::boxed_knowledge_store!(SqliteStore);
