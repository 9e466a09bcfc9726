//! `read_concept`: a concept's front matter and body, by ID.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};

use super::Attached;
use super::lookup::{find, id_schema, problems_note, read_only};
use harnessx_core::output::{ToolError, ToolOutput};
use harnessx_core::tool::{ToolDefinition, sync_handler_fn};

/// The tool's name.
pub const READ_CONCEPT: &str = "read_concept";

pub(super) fn definition(attached: Arc<Attached>) -> ToolDefinition {
    read_only(
        ToolDefinition::new(
            READ_CONCEPT,
            "Read a concept of the knowledge bundles by its ID: its front matter (type, title, \
             description, tags, ...) and its Markdown text.",
            id_schema(),
            sync_handler_fn(move |args, _ctx| read(&args, &attached)),
        ),
        "Read concept",
    )
}

fn read(args: &Value, attached: &Attached) -> Result<ToolOutput, ToolError> {
    let (bundle, id) = find(attached, args, READ_CONCEPT)?;
    let Some(concept) = bundle.concept(&id) else {
        return Err(ToolError::failed(format!(
            "Concept `{id}` is no longer in bundle `{}`. Call search_concepts again.",
            bundle.name()
        )));
    };
    let mut text = format!("Concept `{id}` (bundle `{}`)\n---", bundle.name());
    for (key, value) in &concept.front_matter {
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = write!(text, "\n{key}: {shown}");
    }
    let _ = write!(text, "\n---\n{}", concept.body.trim());
    let outgoing = concept.links.len();
    let incoming = bundle.incoming(&id).len();
    let _ = write!(
        text,
        "\n\nLinks: {outgoing} from this concept, {incoming} to it (get_neighbors lists them)."
    );
    text.push_str(&problems_note(&bundle, &id));
    Ok(ToolOutput::text(text).with_structured(json!({
        "bundle": bundle.name(),
        "id": id,
        "front_matter": concept.front_matter,
        "body": concept.body,
        "diagnostics": bundle.diagnostics_for(&id),
    })))
}
