//! `delete_memory`: forget a memory by id.

use std::sync::Arc;

use harnessx::{ToolDefinition, ToolError, ToolOutput};
use serde_json::{Value, json};

use super::{MemoryStore, store_handler};

pub(crate) fn definition(store: Arc<dyn MemoryStore>) -> ToolDefinition {
    let description = "Delete a memory by its id, for a memory that is wrong or no longer useful. \
         Ids are shown in brackets by search_memories and list_memories. Deleting cannot be undone; \
         to correct a memory, delete it and save the corrected text.";
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer", "description": "The id of the memory to delete."}
        },
        "required": ["id"],
        "additionalProperties": false
    });
    let handler = store_handler(store, move |store, args: Value| async move {
        // `required` guarantees the field through a registry; a direct handler call without it
        // names it too.
        let id = crate::args::integer(&args, "id")?.ok_or_else(|| {
            ToolError::invalid_arguments("`id` is missing; pass the id of the memory to delete")
        })?;
        if store.delete(id).await.map_err(ToolError::from)? {
            Ok(ToolOutput::text(format!("Deleted memory {id}.")))
        } else {
            Err(ToolError::invalid_arguments(format!(
                "No memory has id {id}; call list_memories or search_memories to find the right id."
            )))
        }
    });
    // Deleting changes the store: one at a time, in the order the model asked.
    ToolDefinition::new("delete_memory", description, schema, handler).with_concurrent(false)
}
