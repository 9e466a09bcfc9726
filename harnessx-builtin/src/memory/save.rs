//! `save_memory`: keep a fact, preference or decision for later conversations.

use std::sync::Arc;

use harnessx::{ToolDefinition, ToolError, ToolOutput};
use serde_json::{Value, json};

use super::{MemoryStore, store_handler};

pub(crate) fn definition(store: Arc<dyn MemoryStore>) -> ToolDefinition {
    let limits = store.limits().clone();
    let description = format!(
        "Save a memory: a short, self-contained fact, preference or decision worth remembering in \
         later conversations. Returns the new memory's id. Content is at most {} bytes and up to \
         {} tags of at most {} bytes each; the store keeps at most {} memories, so delete stale \
         ones with delete_memory. Find memories again with search_memories or list_memories.",
        limits.max_content_bytes, limits.max_tags, limits.max_tag_bytes, limits.max_memories
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "content": {
                "type": "string",
                "description": format!("The text to remember, written to make sense on its own (at most {} bytes).", limits.max_content_bytes)
            },
            // Bounded here too, so an oversized list is refused by the registry's schema check
            // before the handler runs. `maxLength` counts characters, the store's limit bytes:
            // the store refuses a tag within the first but over the second.
            "tags": {
                "type": "array",
                "items": {"type": "string", "maxLength": limits.max_tag_bytes},
                "maxItems": limits.max_tags,
                "default": [],
                "description": "Short labels to filter by later, such as \"user\" or \"project-x\"."
            }
        },
        "required": ["content"],
        "additionalProperties": false
    });
    let handler = store_handler(store, move |store, args: Value| async move {
        let content = args["content"].as_str().unwrap_or_default().to_owned();
        let tags: Vec<String> = args["tags"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let memory = store.save(content, tags).await.map_err(ToolError::from)?;
        let tags = if memory.tags.is_empty() {
            String::new()
        } else {
            format!(" with tags: {}", memory.tags.join(", "))
        };
        Ok(
            ToolOutput::text(format!("Saved memory {}{tags}.", memory.id))
                .with_structured(json!({"id": memory.id, "tags": memory.tags})),
        )
    });
    // Saving changes the store: one at a time, in the order the model asked.
    ToolDefinition::new("save_memory", description, schema, handler).with_concurrent(false)
}
