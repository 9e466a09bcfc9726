//! Scoring concepts of every attached bundle on one scale.
//!
//! Each bundle has an index of its own, and FTS5's bm25 weighs a word by how rare it is *in that
//! index*: a word that is rare in a small bundle outweighs the same word in a large one, and in a
//! bundle of a few concepts every word is "common", so bm25 is next to zero for all of them.
//! Raw bm25 scores of separate indexes are therefore not comparable, and merging them buries the
//! right concept under the small bundles' noise.
//!
//! So the indexes only count ([`Matches`]) and the scoring happens here, over all bundles at
//! once, as if they were one index:
//!
//! - a query word's weight is its inverse document frequency over the concepts of **all**
//!   attached bundles (Lucene's always-positive form, `ln(1 + (N - n + 0.5) / (n + 0.5))`);
//!   words no bundle uses are left out;
//! - a concept's evidence for a word is BM25F's: the word's counts in the title, description,
//!   tags and body, weighted 4, 2, 2 and 1 and each normalised by the field's length against the
//!   average over all bundles (`b = 0.75`), then saturated as `tf / (tf + k1)` (`k1 = 1.2`);
//! - the score is the weighted evidence over the weight of all the query's known words.
//!
//! The score is thus in `(0, 1)`: above zero for every concept that holds a word of the query,
//! and the same number for the same concept whichever other bundles are attached beside it
//! (up to the shared word weights). Stop words never reach the index (see
//! [`words`](crate::query::words)).

use super::index::{FIELDS, Matches};

/// How much a match in each field counts, in [`FIELDS`] order: title, description, tags, body.
const FIELD_WEIGHTS: [f64; FIELDS.len()] = [4.0, 2.0, 2.0, 1.0];
/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// A concept's score, with where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Scored {
    /// The position of its bundle in the list given to [`score`].
    pub(super) bundle: usize,
    /// Its row in that bundle's index.
    pub(super) row: i64,
    /// Its ID.
    pub(super) id: String,
    /// Relevance in `(0, 1)`.
    pub(super) score: f64,
}

/// Scores every concept of `bundles` that holds a query word, best first (ties by bundle
/// position, then ID). Every [`Matches`] must come from the same query.
pub(super) fn score(bundles: &[Matches]) -> Vec<Scored> {
    let Some(terms) = bundles.iter().map(|m| m.terms.len()).max() else {
        return Vec::new();
    };
    let concepts: u64 = bundles.iter().map(|m| m.concepts).sum();
    let n = concepts as f64;
    let mut average = [0.0_f64; FIELDS.len()];
    for (f, slot) in average.iter_mut().enumerate() {
        let tokens: u64 = bundles.iter().map(|m| m.field_tokens[f]).sum();
        *slot = if concepts > 0 { tokens as f64 / n } else { 0.0 };
    }
    let weights: Vec<f64> = (0..terms)
        .map(|t| {
            let df: u64 = bundles
                .iter()
                .filter_map(|m| m.document_frequency.get(t))
                .sum();
            if df == 0 {
                0.0 // no bundle uses it: it says nothing about any concept
            } else {
                let df = df as f64;
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            }
        })
        .collect();
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut scored = Vec::new();
    for (b, matches) in bundles.iter().enumerate() {
        for hit in &matches.hits {
            let mut gained = 0.0;
            for (t, counts) in hit.frequencies.iter().enumerate() {
                let mut tf = 0.0;
                for f in 0..FIELDS.len() {
                    if counts[f] == 0 {
                        continue;
                    }
                    let norm = if average[f] > 0.0 {
                        1.0 - B + B * f64::from(hit.lengths[f]) / average[f]
                    } else {
                        1.0
                    };
                    tf += FIELD_WEIGHTS[f] * f64::from(counts[f]) / norm.max(f64::EPSILON);
                }
                if tf > 0.0 {
                    gained += weights.get(t).copied().unwrap_or(0.0) * tf / (tf + K1);
                }
            }
            if gained > 0.0 {
                scored.push(Scored {
                    bundle: b,
                    row: hit.row,
                    id: hit.id.clone(),
                    score: (gained / total).clamp(f64::MIN_POSITIVE, 1.0),
                });
            }
        }
    }
    scored.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.bundle.cmp(&b.bundle))
            .then_with(|| a.id.cmp(&b.id))
    });
    scored
}

#[cfg(test)]
mod tests {
    use super::super::index::{ConceptHits, PerField};
    use super::*;

    fn hits(id: &str, lengths: PerField, frequencies: Vec<PerField>) -> ConceptHits {
        ConceptHits {
            row: 1,
            id: id.to_owned(),
            lengths,
            frequencies,
        }
    }

    #[test]
    fn every_match_scores_above_zero_and_below_one() {
        let tiny = Matches {
            terms: vec!["revenu".into()],
            concepts: 1,
            field_tokens: [1, 0, 0, 10],
            document_frequency: vec![1],
            hits: vec![hits("revenue", [1, 0, 0, 10], vec![[1, 0, 0, 0]])],
        };
        let scored = score(std::slice::from_ref(&tiny));
        assert_eq!(scored.len(), 1);
        assert!(scored[0].score > 0.0 && scored[0].score < 1.0, "{scored:?}");
    }

    #[test]
    fn word_weights_are_shared_by_all_bundles() {
        // "churn" is in every concept of the small bundle but rare overall: the concept that
        // holds the rarer word of the query wins wherever it is.
        let small = Matches {
            terms: vec!["churn".into(), "monthli".into()],
            concepts: 2,
            field_tokens: [2, 0, 0, 20],
            document_frequency: vec![2, 0],
            hits: vec![
                hits("a", [1, 0, 0, 10], vec![[0, 0, 0, 1], [0, 0, 0, 0]]),
                hits("b", [1, 0, 0, 10], vec![[0, 0, 0, 1], [0, 0, 0, 0]]),
            ],
        };
        let large = Matches {
            terms: vec!["churn".into(), "monthli".into()],
            concepts: 100,
            field_tokens: [100, 0, 0, 1000],
            document_frequency: vec![1, 40],
            hits: vec![hits(
                "monthly-churn",
                [2, 0, 0, 10],
                vec![[1, 0, 0, 0], [1, 0, 0, 0]],
            )],
        };
        let scored = score(&[small, large]);
        assert_eq!(scored[0].id, "monthly-churn", "{scored:?}");
        assert_eq!(scored[0].bundle, 1);
    }

    #[test]
    fn nothing_known_scores_nothing() {
        assert!(score(&[]).is_empty());
        let unknown = Matches {
            terms: vec!["zebra".into()],
            concepts: 3,
            document_frequency: vec![0],
            ..Matches::default()
        };
        assert!(score(&[unknown]).is_empty());
    }
}
