//! The `knowledge_search` tool: searches every attached knowledge base and returns the best
//! passages with their sources.

use std::sync::Arc;

use futures::future::join_all;
use serde_json::{Value, json};

use super::{Attached, Passage};
use harnessx_core::output::{ToolError, ToolOutput};
use harnessx_core::tool::{
    PermissionLevel, ReplayPolicy, ToolAnnotations, ToolDefinition, handler_fn,
};

/// The tool's name.
pub const KNOWLEDGE_SEARCH: &str = "knowledge_search";

const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: u64 = 20;

/// The tool over `attached`; copies of the definition (a subagent's registry) search the same
/// knowledge bases.
pub(crate) fn definition(attached: Arc<Attached>) -> ToolDefinition {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "What to look for, in plain words (a question or key terms)."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "How many passages to return (1 to 20, default 5)."
            }
        },
        "required": ["query"],
        "additionalProperties": false
    });
    ToolDefinition::new(
        KNOWLEDGE_SEARCH,
        "Search the attached knowledge bases for passages relevant to a query. Returns the best \
         passages, each with its source, title and score (for the built-in knowledge base, a \
         relevance from 0 to 1: the share of the query's words the passage contains, rare words \
         counting more); cite the source when you use a passage.",
        schema,
        handler_fn(move |args, _ctx| {
            let attached = Arc::clone(&attached);
            async move { search(args, &attached).await }
        }),
    )
    .with_permission(PermissionLevel::Allow)
    .with_replay_policy(ReplayPolicy::Safe)
    .with_annotations(
        ToolAnnotations::new()
            .with_title("Knowledge search")
            .with_read_only_hint(true)
            .with_destructive_hint(false)
            .with_idempotent_hint(true)
            .with_open_world_hint(false),
    )
}

/// `limit` as a count: the default when absent, `5` for `5` and for `5.0` (JSON Schema's
/// `integer` accepts a float without a fraction, and the schema checked this one), clamped to
/// 1..=20; anything else is an error naming the field.
fn read_limit(value: &Value) -> Result<usize, ToolError> {
    if value.is_null() {
        return Ok(DEFAULT_LIMIT);
    }
    let whole = value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && (0.0..1.8e19).contains(f))
            .map(|f| f as u64)
    });
    match whole {
        Some(n) => Ok(n.clamp(1, MAX_LIMIT) as usize),
        None => Err(ToolError::invalid_arguments(format!(
            "`limit` must be a whole number from 1 to {MAX_LIMIT}, not {value}; pass it without \
             a fraction, or leave it out for {DEFAULT_LIMIT}"
        ))),
    }
}

async fn search(args: Value, attached: &Attached) -> Result<ToolOutput, ToolError> {
    let query = args["query"].as_str().unwrap_or_default().trim().to_owned();
    if query.is_empty() {
        return Err(ToolError::invalid_arguments(
            "`query` is empty. Call knowledge_search again with the words to look for.",
        ));
    }
    let limit = read_limit(&args["limit"])?;
    let bases = attached.list();
    if bases.is_empty() {
        return Err(ToolError::failed(
            "No knowledge base is attached any more. Answer without it or tell the user.",
        ));
    }
    let results = join_all(bases.iter().map(|kb| kb.search(&query, limit))).await;
    let mut passages: Vec<Passage> = Vec::new();
    let mut failures = Vec::new();
    for (kb, result) in bases.iter().zip(results) {
        match result {
            Ok(found) => passages.extend(found),
            Err(e) => failures.push(format!(
                "`{}`: {}",
                kb.name(),
                harnessx_core::error::error_chain(&e)
            )),
        }
    }
    if passages.is_empty() && failures.len() == bases.len() {
        return Err(ToolError::failed(format!(
            "Searching the knowledge bases failed ({}). Try again later or answer without them.",
            failures.join("; ")
        )));
    }
    passages.sort_by(|a, b| b.score.total_cmp(&a.score));
    passages.truncate(limit);
    let mut text = if passages.is_empty() {
        format!(
            "No passages matched \"{query}\". Try other words, fewer words, or a broader query."
        )
    } else {
        passages
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let title = p
                    .title
                    .as_deref()
                    .map(|t| format!("{t} — "))
                    .unwrap_or_default();
                format!(
                    "[{}] {title}{} (score {:.2})\n{}",
                    i + 1,
                    p.source,
                    p.score,
                    p.text
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    if !failures.is_empty() {
        text.push_str(&format!(
            "\n\n(Some knowledge bases could not be searched: {}.)",
            failures.join("; ")
        ));
    }
    Ok(ToolOutput::text(text).with_structured(json!({ "passages": passages })))
}
