//! `search_memories`: full-text search over saved memories, most relevant first.

use std::sync::Arc;

use harnessx::{ToolDefinition, ToolError, ToolOutput};
use serde_json::{Value, json};

use super::{MemoryStore, SearchQuery, format, store_handler};

/// Hits returned when the model does not say.
const DEFAULT_LIMIT: usize = 10;

pub(crate) fn definition(store: Arc<dyn MemoryStore>) -> ToolDefinition {
    let max = store.limits().max_results;
    let description = format!(
        "Search saved memories by keywords and return the most relevant first, each with its id, \
         date, tags and full text. A memory matches when it contains any of the words; \
         punctuation and search operators are ignored. Returns at most `limit` memories (default \
         {DEFAULT_LIMIT}, at most {max}); for more, search with other or more specific words, or \
         page through everything with list_memories."
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords to look for."},
            "limit": {
                "type": "integer", "minimum": 1, "default": DEFAULT_LIMIT,
                "description": format!("How many memories to return (at most {max}).")
            },
            "tag": {"type": "string", "description": "Only memories with this tag."}
        },
        "required": ["query"],
        "additionalProperties": false
    });
    let handler = store_handler(store, move |store, args: Value| async move {
        let text = args["query"].as_str().unwrap_or_default().to_owned();
        let requested = crate::args::count(&args, "limit")?.unwrap_or(DEFAULT_LIMIT);
        let query = SearchQuery {
            text: text.clone(),
            tag: args["tag"].as_str().map(str::to_owned),
            limit: requested,
        };
        let hits = store.search(query).await.map_err(ToolError::from)?;
        if hits.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No memories match \"{text}\". Try other words, or list_memories to see what is saved."
            )));
        }
        let mut out = format!(
            "{} {} for \"{text}\", most relevant first:\n\n",
            hits.len(),
            if hits.len() == 1 {
                "memory matches"
            } else {
                "memories match"
            },
        );
        for hit in &hits {
            format::memory(&mut out, &hit.memory, false);
            out.push('\n');
        }
        if requested > max && hits.len() == max {
            out.push_str(&format!(
                    "Showing the {max} best matches, the most one search returns; use more specific words to narrow it down.\n"
                ));
        }
        let ids: Vec<i64> = hits.iter().map(|h| h.memory.id).collect();
        Ok(ToolOutput::text(out.trim_end().to_owned()).with_structured(json!({"ids": ids})))
    });
    ToolDefinition::new("search_memories", description, schema, handler)
}
