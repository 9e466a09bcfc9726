//! `search_concepts`: full-text search over the attached bundles' concepts.

use std::fmt::Write as _;
use std::sync::Arc;

use futures::future::join_all;
use serde_json::{Value, json};

use super::index::Matches;
use super::lookup::read_only;
use super::{Attached, Concept, OkfBundle, Trust, rank};
use crate::query::words;
use harnessx_core::output::{ToolError, ToolOutput};
use harnessx_core::tool::{ToolDefinition, handler_fn};

/// The tool's name.
pub const SEARCH_CONCEPTS: &str = "search_concepts";

const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: u64 = 20;

pub(super) fn definition(attached: Arc<Attached>) -> ToolDefinition {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "What to look for, in plain words."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "How many concepts to return (1 to 20, default 5)."
            }
        },
        "required": ["query"],
        "additionalProperties": false
    });
    read_only(
        ToolDefinition::new(
            SEARCH_CONCEPTS,
            "Search the knowledge bundles' concepts (their titles, descriptions, tags and text) \
             for a query. Returns the best matches, each with its ID, type, title and a snippet; \
             read one with read_concept and follow its links with get_neighbors.",
            schema,
            handler_fn(move |args, _ctx| {
                let attached = Arc::clone(&attached);
                async move { search(&args, &attached).await }
            }),
        ),
        "Search concepts",
    )
}

/// One result, as the model receives it in `structured`.
#[derive(serde::Serialize)]
struct Found {
    bundle: String,
    id: String,
    #[serde(rename = "type")]
    concept_type: Option<String>,
    title: Option<String>,
    description: Option<String>,
    tags: Vec<String>,
    snippet: String,
    /// Relevance in `(0, 1)`, on one scale across bundles.
    score: f64,
    status: Option<String>,
    deprecated: bool,
    trust: Trust,
    stale_after: Option<String>,
    stale: bool,
    timestamp: Option<String>,
    problems: usize,
}

async fn search(args: &Value, attached: &Attached) -> Result<ToolOutput, ToolError> {
    let query = args["query"].as_str().unwrap_or_default().trim().to_owned();
    if query.is_empty() {
        return Err(ToolError::invalid_arguments(
            "`query` is empty. Call search_concepts again with the words to look for.",
        ));
    }
    let limit = args["limit"]
        .as_u64()
        .map_or(DEFAULT_LIMIT, |l| l.clamp(1, MAX_LIMIT) as usize);
    let bundles = attached.list();
    if bundles.is_empty() {
        return Err(ToolError::failed(
            "No knowledge bundle is attached any more. Answer without it or tell the user.",
        ));
    }
    let words = words(&query);
    if words.is_empty() {
        return Ok(ToolOutput::text(format!(
            "\"{query}\" has only very common words (such as \"the\", \"for\" or \"in\"), which \
             match nothing. Call search_concepts again with the words that name what you look for."
        ))
        .with_structured(json!({ "results": [] })));
    }
    let results = join_all(bundles.iter().map(|b| b.inner.index.matches(&words))).await;
    let mut searched = Vec::new();
    let mut failures = Vec::new();
    for (bundle, result) in bundles.iter().zip(results) {
        match result {
            Ok(matches) => searched.push((bundle, matches)),
            Err(e) => failures.push(format!(
                "`{}`: {}",
                bundle.name(),
                harnessx_core::error::error_chain(&e)
            )),
        }
    }
    if searched.is_empty() {
        return Err(ToolError::failed(format!(
            "Searching the knowledge bundles failed ({}). Try again later or answer without them.",
            failures.join("; ")
        )));
    }
    let matches: Vec<Matches> = searched.iter().map(|(_, m)| m.clone()).collect();
    let mut scored: Vec<(bool, rank::Scored)> = rank::score(&matches)
        .into_iter()
        .map(|s| {
            let deprecated = searched[s.bundle]
                .0
                .concept(&s.id)
                .is_some_and(Concept::is_deprecated);
            (deprecated, s)
        })
        .collect();
    // Deprecated concepts are kept for links and history: they come after every current one.
    scored.sort_by_key(|(deprecated, _)| *deprecated);
    scored.truncate(limit);

    let snippets = join_all(searched.iter().enumerate().map(|(b, (bundle, _))| {
        let rows = scored
            .iter()
            .filter(|(_, s)| s.bundle == b)
            .map(|(_, s)| s.row)
            .collect();
        bundle.inner.index.snippets(&words, rows)
    }))
    .await;
    let snippets: Vec<Vec<(i64, String)>> = snippets
        .into_iter()
        .map(Result::unwrap_or_default)
        .collect();
    let found: Vec<Found> = scored
        .into_iter()
        .filter_map(|(_, s)| {
            let snippet = snippets[s.bundle]
                .iter()
                .find(|(row, _)| *row == s.row)
                .map(|(_, text)| text.clone())
                .unwrap_or_default();
            describe(searched[s.bundle].0, s, snippet)
        })
        .collect();

    let several = bundles.len() > 1;
    let mut text = if found.is_empty() {
        format!(
            "No concepts matched \"{query}\". Try other words, fewer words, or a broader query."
        )
    } else {
        let mut text = String::new();
        for (i, f) in found.iter().enumerate() {
            if i > 0 {
                text.push_str("\n\n");
            }
            let _ = write!(text, "[{}] {}", i + 1, f.id);
            if let Some(title) = &f.title {
                let _ = write!(text, " — {title}");
            }
            let mut facts = vec![format!(
                "type: {}",
                f.concept_type.as_deref().unwrap_or("none")
            )];
            if several {
                facts.push(format!("bundle: {}", f.bundle));
            }
            facts.push(format!("score {}", shown_score(f.score)));
            if f.deprecated {
                facts.push("DEPRECATED".to_owned());
            }
            if f.stale {
                facts.push(format!(
                    "stale since {}",
                    f.stale_after.as_deref().unwrap_or_default()
                ));
            }
            if f.trust != Trust::Unverified {
                facts.push(f.trust.as_str().to_owned());
            }
            let _ = write!(text, " ({})", facts.join("; "));
            if let Some(description) = &f.description {
                let _ = write!(text, "\n{description}");
            }
            if !f.tags.is_empty() {
                let _ = write!(text, "\ntags: {}", f.tags.join(", "));
            }
            let _ = write!(
                text,
                "\n{}",
                f.snippet.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            if f.deprecated {
                text.push_str(
                    "\n(note: this concept is deprecated: kept for history, no longer current; \
                     prefer a current concept)",
                );
            }
            if f.problems > 0 {
                text.push_str(
                    "\n(note: this concept's file has problems; read_concept lists them)",
                );
            }
        }
        text
    };
    if !failures.is_empty() {
        let _ = write!(
            text,
            "\n\n(Some bundles could not be searched: {}.)",
            failures.join("; ")
        );
    }
    Ok(ToolOutput::text(text).with_structured(json!({ "results": found })))
}

/// A score as the text shows it: two decimals, and never `0.00` for a concept that matched.
fn shown_score(score: f64) -> String {
    if score > 0.0 && score < 0.005 {
        "<0.01".to_owned()
    } else {
        format!("{score:.2}")
    }
}

fn describe(bundle: &OkfBundle, scored: rank::Scored, snippet: String) -> Option<Found> {
    let concept = bundle.concept(&scored.id)?;
    let owned = |s: Option<&str>| s.map(str::to_owned);
    Some(Found {
        bundle: bundle.name().to_owned(),
        concept_type: owned(concept.concept_type()),
        title: owned(concept.title()),
        description: owned(concept.description()),
        tags: concept.tags().into_iter().map(str::to_owned).collect(),
        snippet,
        score: scored.score,
        status: owned(concept.status()),
        deprecated: concept.is_deprecated(),
        trust: concept.trust(),
        stale_after: owned(concept.stale_after()),
        stale: concept.is_stale(),
        timestamp: owned(concept.timestamp()),
        problems: bundle.diagnostics_for(&scored.id).len(),
        id: scored.id,
    })
}

#[cfg(test)]
mod tests {
    use super::shown_score;

    #[test]
    fn a_match_is_never_shown_as_zero() {
        assert_eq!(shown_score(0.004), "<0.01");
        assert_eq!(shown_score(0.005), "0.01");
        assert_eq!(shown_score(0.4567), "0.46");
    }
}
