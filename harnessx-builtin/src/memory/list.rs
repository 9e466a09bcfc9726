//! `list_memories`: page through saved memories, newest first.

use std::sync::Arc;

use harnessx::{ToolDefinition, ToolError, ToolOutput};
use serde_json::{Value, json};

use super::{ListQuery, MemoryStore, format, store_handler};

/// Memories per page when the model does not say.
const DEFAULT_LIMIT: usize = 20;

pub(crate) fn definition(store: Arc<dyn MemoryStore>) -> ToolDefinition {
    let max = store.limits().max_results;
    let description = format!(
        "List saved memories, newest first, each with its id, date, tags and the first {} \
         characters of its text (search_memories shows full texts). Returns `limit` memories \
         (default {DEFAULT_LIMIT}, at most {max}) starting at `offset`; the result says which \
         offset shows the next page.",
        format::PREVIEW_CHARS
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "limit": {
                "type": "integer", "minimum": 1, "default": DEFAULT_LIMIT,
                "description": format!("How many memories to return (at most {max}).")
            },
            "offset": {
                "type": "integer", "minimum": 0, "default": 0,
                "description": "How many of the newest memories to skip."
            },
            "tag": {"type": "string", "description": "Only memories with this tag."}
        },
        "required": [],
        "additionalProperties": false
    });
    let handler = store_handler(store, move |store, args: Value| async move {
        let query = ListQuery {
            tag: args["tag"].as_str().map(str::to_owned),
            limit: crate::args::count(&args, "limit")?.unwrap_or(DEFAULT_LIMIT),
            offset: crate::args::count(&args, "offset")?.unwrap_or(0),
        };
        let offset = query.offset;
        let page = store.list(query).await.map_err(ToolError::from)?;
        if page.memories.is_empty() {
            let text = if page.total == 0 {
                "No memories are saved yet.".to_owned()
            } else {
                format!(
                    "offset {offset} is past the end: there are {} memories; call list_memories with a smaller offset.",
                    page.total
                )
            };
            return Ok(ToolOutput::text(text));
        }
        let end = offset + page.memories.len();
        let mut out = format!(
            "Memories {}-{end} of {}, newest first:\n\n",
            offset + 1,
            page.total
        );
        for memory in &page.memories {
            format::memory(&mut out, memory, true);
            out.push('\n');
        }
        if end < page.total {
            out.push_str(&format!(
                "{} more; call list_memories with offset={end} for the next page.\n",
                page.total - end
            ));
        }
        let ids: Vec<i64> = page.memories.iter().map(|m| m.id).collect();
        Ok(ToolOutput::text(out.trim_end().to_owned())
            .with_structured(json!({"ids": ids, "total": page.total})))
    });
    ToolDefinition::new("list_memories", description, schema, handler)
}
