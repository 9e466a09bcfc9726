//! `search_concepts`: full-text search over the attached bundles' concepts.

use std::fmt::Write as _;
use std::sync::Arc;

use futures::future::join_all;
use serde_json::{Value, json};

use super::lookup::read_only;
use super::{Attached, OkfBundle};
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
    score: f64,
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
    let results = join_all(bundles.iter().map(|b| b.inner.index.search(&query, limit))).await;
    let mut found = Vec::new();
    let mut failures = Vec::new();
    for (bundle, result) in bundles.iter().zip(results) {
        match result {
            Ok(hits) => found.extend(hits.into_iter().filter_map(|hit| describe(bundle, hit))),
            Err(e) => failures.push(format!(
                "`{}`: {}",
                bundle.name(),
                harnessx_core::error::error_chain(&e)
            )),
        }
    }
    if found.is_empty() && failures.len() == bundles.len() {
        return Err(ToolError::failed(format!(
            "Searching the knowledge bundles failed ({}). Try again later or answer without them.",
            failures.join("; ")
        )));
    }
    found.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    found.truncate(limit);
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
            facts.push(format!("score {:.2}", f.score));
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

fn describe(bundle: &OkfBundle, hit: super::index::Hit) -> Option<Found> {
    let concept = bundle.concept(&hit.id)?;
    Some(Found {
        bundle: bundle.name().to_owned(),
        concept_type: concept.concept_type().map(str::to_owned),
        title: concept.title().map(str::to_owned),
        description: concept.description().map(str::to_owned),
        tags: concept.tags().into_iter().map(str::to_owned).collect(),
        snippet: hit.snippet,
        score: hit.score,
        problems: bundle.diagnostics_for(&hit.id).len(),
        id: hit.id,
    })
}
