//! Ranking passages with a relevance a model can read: in `(0, 1]` on a corpus of any size.
//!
//! FTS5's bm25 is relative and, on a small corpus, next to zero for every passage (its inverse
//! document frequency is clamped to 1e-6 once a word occurs in half the passages), so it cannot
//! be shown as a score. Here each query word that occurs in the knowledge base gets a weight
//! from how rare it is (Lucene's always-positive idf, `ln(1 + (N - n + 0.5) / (n + 0.5))`), and
//! a passage's relevance is the weight of the words it contains over the weight of all of them.
//! bm25 still orders passages of equal relevance and picks the candidates.

use rusqlite::{Connection, params};

use super::Passage;

/// How many passages bm25 puts forward for ranking, at least.
const MIN_CANDIDATES: usize = 50;

struct Candidate {
    rowid: i64,
    rank: f64,
    passage: Passage,
}

/// Up to `limit` passages matching any of `terms` (quoted FTS5 strings), best first.
pub(crate) fn search(
    conn: &Connection,
    terms: &[String],
    limit: usize,
    kb: &str,
) -> rusqlite::Result<Vec<Passage>> {
    let expression = terms.join(" OR ");
    let pool = i64::try_from(limit.saturating_mul(4).max(MIN_CANDIDATES)).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(
        "SELECT p.rowid, d.source, d.title, p.text, bm25(passages, 2.0, 1.0) AS rank
         FROM passages p JOIN documents d ON d.id = p.doc_id
         WHERE passages MATCH ?1
         ORDER BY rank, d.source, p.seq
         LIMIT ?2",
    )?;
    let mut candidates: Vec<Candidate> = stmt
        .query_map(params![expression, pool], |row| {
            Ok(Candidate {
                rowid: row.get(0)?,
                rank: row.get(4)?,
                passage: Passage {
                    source: row.get(1)?,
                    title: row.get(2)?,
                    text: row.get(3)?,
                    score: 0.0,
                    knowledge_base: kb.to_owned(),
                },
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    if candidates.is_empty() {
        return Ok(Vec::new());
    }

    let total: f64 =
        conn.query_row("SELECT count(*) FROM passages", [], |r| r.get::<_, i64>(0))? as f64;
    let ids = serde_json::to_string(&candidates.iter().map(|c| c.rowid).collect::<Vec<_>>())
        .unwrap_or_else(|_| "[]".to_owned());
    let mut count = conn.prepare_cached("SELECT count(*) FROM passages WHERE passages MATCH ?1")?;
    let mut hits = conn.prepare_cached(
        "SELECT rowid FROM passages
         WHERE passages MATCH ?1 AND rowid IN (SELECT value FROM json_each(?2))",
    )?;
    let mut known_weight = 0.0;
    let mut gained = vec![0.0_f64; candidates.len()];
    for term in terms {
        let n = count.query_row([term], |r| r.get::<_, i64>(0))? as f64;
        if n == 0.0 {
            continue; // a word the knowledge base never uses says nothing about its passages
        }
        let weight = (1.0 + (total - n + 0.5) / (n + 0.5)).ln();
        known_weight += weight;
        let matched: Vec<i64> = hits
            .query_map(params![term, ids], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for (c, g) in candidates.iter().zip(gained.iter_mut()) {
            if matched.contains(&c.rowid) {
                *g += weight;
            }
        }
    }
    for (c, g) in candidates.iter_mut().zip(gained) {
        // Every candidate matched a known word, so its relevance is above zero.
        c.passage.score = if known_weight > 0.0 {
            (g / known_weight).clamp(0.0, 1.0)
        } else {
            0.0
        };
    }
    // Stable: equal relevance keeps bm25's order (then source and position).
    candidates.sort_by(|a, b| {
        b.passage
            .score
            .total_cmp(&a.passage.score)
            .then(a.rank.total_cmp(&b.rank))
    });
    candidates.truncate(limit);
    Ok(candidates.into_iter().map(|c| c.passage).collect())
}
