//! [`KnowledgeStore`] on PostgreSQL: documents in `knowledge_documents`, whose generated
//! `search` column (an English `tsvector`, the title weighing more than the body) sits under a
//! GIN index; ranked by `ts_rank`, with `ts_headline` snippets.

use std::collections::BTreeMap;

use harnessx::BoxFuture;

use super::retry::pg;
use super::{PostgresStore, exec, rows};
use crate::error::StoreError;
use crate::store::knowledge::{
    DocumentError, DocumentFormat, DocumentInfo, KnowledgeHit, KnowledgeStore, NewDocument,
    query_words,
};

fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn to_info(r: &tokio_postgres::Row) -> Result<DocumentInfo, StoreError> {
    let id: i64 = r.get(0);
    let base: String = r.get(1);
    let format: String = r.get(3);
    Ok(DocumentInfo {
        format: DocumentFormat::parse(&format).ok_or_else(|| StoreError::Corrupt {
            what: format!("document {id} of knowledge base `{base}`"),
            message: format!("its format `{format}` is neither `text` nor `markdown`"),
        })?,
        id: unsigned(id),
        base,
        title: r.get(2),
        bytes: unsigned(r.get(4)),
        created_ms: r.get(5),
    })
}

// The `KnowledgeStore` methods, boxed into the trait's own by `boxed_knowledge_store!` below.
impl PostgresStore {
    async fn add_document(
        &self,
        document: NewDocument,
    ) -> Result<Result<DocumentInfo, DocumentError>, StoreError> {
        const WHAT: &str = "adding a document";
        if let Err(e) = document.check() {
            return Ok(Err(e));
        }
        let bytes = i64::try_from(document.body.len()).unwrap_or(i64::MAX);
        let format = document.format.as_str();
        // One statement: a retry after a lost acknowledgement may add the document twice, which
        // a person sees in the list and deletes; it never loses one.
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let stmt = c
                .prepare_cached(
                    "INSERT INTO knowledge_documents (base, title, format, body, bytes, created_ms)
                     VALUES ($1, $2, $3, $4, $5, harnessx_now_ms())
                     RETURNING id, base, title, format, bytes, created_ms",
                )
                .await
                .map_err(pg(WHAT))?;
            match c
                .query_one(
                    &stmt,
                    &[
                        &document.base,
                        &document.title,
                        &format,
                        &document.body,
                        &bytes,
                    ],
                )
                .await
            {
                Ok(row) => Ok(Ok(to_info(&row)?)),
                Err(e)
                    if e.code()
                        == Some(&tokio_postgres::error::SqlState::PROGRAM_LIMIT_EXCEEDED) =>
                {
                    Ok(Err(DocumentError::Unindexable {
                        message: e
                            .as_db_error()
                            .map_or_else(|| e.to_string(), |d| d.message().to_owned()),
                    }))
                }
                Err(e) => Err(pg(WHAT)(e)),
            }
        })
        .await
    }

    async fn documents(&self, base: &str) -> Result<Vec<DocumentInfo>, StoreError> {
        const WHAT: &str = "listing documents";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let found = rows(
                &c,
                WHAT,
                "SELECT id, base, title, format, bytes, created_ms FROM knowledge_documents
                 WHERE base = $1 ORDER BY id",
                &[&base],
            )
            .await?;
            Ok(found.iter().map(to_info).collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    async fn document_counts(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        const WHAT: &str = "counting documents";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let found = rows(
                &c,
                WHAT,
                "SELECT base, COUNT(*) FROM knowledge_documents GROUP BY base",
                &[],
            )
            .await?;
            Ok(found
                .iter()
                .map(|r| (r.get::<_, String>(0), unsigned(r.get(1))))
                .collect())
        })
        .await
    }

    async fn delete_document(&self, base: &str, id: u64) -> Result<bool, StoreError> {
        const WHAT: &str = "deleting a document";
        let id = signed(id);
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let n = exec(
                &c,
                WHAT,
                "DELETE FROM knowledge_documents WHERE base = $1 AND id = $2",
                &[&base, &id],
            )
            .await?;
            Ok(n > 0)
        })
        .await
    }

    async fn delete_documents(&self, base: &str) -> Result<u64, StoreError> {
        const WHAT: &str = "deleting documents";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            exec(
                &c,
                WHAT,
                "DELETE FROM knowledge_documents WHERE base = $1",
                &[&base],
            )
            .await
        })
        .await
    }

    async fn search_documents(
        &self,
        bases: &[String],
        query: &str,
        limit: usize,
    ) -> Result<Vec<KnowledgeHit>, StoreError> {
        const WHAT: &str = "searching knowledge bases";
        let words = query_words(query);
        if words.is_empty() || bases.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        // Letters and digits only, so always valid `to_tsquery` syntax: any word may match.
        let tsquery = words.join(" | ");
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let found = rows(
                &c,
                WHAT,
                "SELECT d.id, d.base, d.title,
                        ts_headline('english', d.body, q,
                                    'MaxWords=48, MinWords=16, StartSel=\"\", StopSel=\"\"'),
                        ts_rank(d.search, q)::float8
                 FROM knowledge_documents d, to_tsquery('english', $1) q
                 WHERE d.base = ANY($2) AND d.search @@ q
                 ORDER BY 5 DESC, d.id LIMIT $3",
                &[&tsquery, &bases, &limit],
            )
            .await?;
            Ok(found
                .iter()
                .map(|r| KnowledgeHit {
                    document: unsigned(r.get(0)),
                    base: r.get(1),
                    title: r.get(2),
                    snippet: r.get(3),
                    score: r.get(4),
                })
                .collect())
        })
        .await
    }
}

crate::store::knowledge::boxed_knowledge_store!(PostgresStore);
