//! Between MCP and harnessx: a server tool's metadata as a definition's, a call result as a
//! [`ToolOutput`].

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::{Map, Value};

use harnessx_core::output::ToolOutput;
use harnessx_core::tool::{PermissionLevel, ReplayPolicy, ToolAnnotations};

/// The annotations of a server tool with the MCP defaults filled in for missing hints
/// (`readOnlyHint` false, `destructiveHint` true, `idempotentHint` false, `openWorldHint` true).
pub(crate) fn annotations(tool: &Tool) -> ToolAnnotations {
    let a = tool.annotations.clone().unwrap_or_default();
    let mut annotations = ToolAnnotations::new()
        .with_read_only_hint(a.read_only_hint.unwrap_or(false))
        .with_destructive_hint(a.destructive_hint.unwrap_or(true))
        .with_idempotent_hint(a.idempotent_hint.unwrap_or(false))
        .with_open_world_hint(a.open_world_hint.unwrap_or(true));
    annotations.title = tool.title.clone().or(a.title);
    annotations
}

/// ALLOW for a tool the server marks `readOnlyHint: true`, ASK for every other.
pub(crate) fn permission(annotations: &ToolAnnotations) -> PermissionLevel {
    if annotations.read_only_hint == Some(true) {
        PermissionLevel::Allow
    } else {
        PermissionLevel::Ask
    }
}

/// Read-only tools are safe to repeat, idempotent ones idempotent, the rest manual.
pub(crate) fn replay_policy(annotations: &ToolAnnotations) -> ReplayPolicy {
    if annotations.read_only_hint == Some(true) {
        ReplayPolicy::Safe
    } else if annotations.idempotent_hint == Some(true) {
        ReplayPolicy::Idempotent
    } else {
        ReplayPolicy::Manual
    }
}

/// The tool's input schema with an object root: `"type": "object"` is added when missing
/// (servers send `{}` for tools without arguments).
pub(crate) fn input_schema(tool: &Tool) -> Value {
    let mut schema: Map<String, Value> = (*tool.input_schema).clone();
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        _ => {
            schema.insert("type".to_owned(), Value::String("object".to_owned()));
        }
    }
    Value::Object(schema)
}

/// The description the model reads.
pub(crate) fn description(tool: &Tool, server: &str) -> String {
    match tool.description.as_deref().map(str::trim) {
        Some(d) if !d.is_empty() => d.to_owned(),
        _ => match &tool.title {
            Some(title) => title.clone(),
            None => format!("The `{}` tool of the MCP server `{server}`.", tool.name),
        },
    }
}

/// A call result as an output: text blocks joined, other content summarised, structured
/// content kept, `isError` carried over. The text of a reply's blocks is moved, not copied: a
/// reply of one text block becomes the output's text as it is.
pub(crate) fn output(result: CallToolResult) -> ToolOutput {
    let CallToolResult {
        content: blocks,
        structured_content,
        is_error,
        ..
    } = result;
    let mut content = String::new();
    for part in blocks.into_iter().map(block_text) {
        if part.is_empty() {
            continue;
        }
        if content.is_empty() {
            content = part;
        } else {
            content.push('\n');
            content.push_str(&part);
        }
    }
    if content.is_empty()
        && let Some(structured) = &structured_content
    {
        content = structured.to_string();
    }
    ToolOutput {
        content,
        structured: structured_content,
        is_error: is_error.unwrap_or(false),
    }
}

fn block_text(block: ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text,
        ContentBlock::Image(i) => format!(
            "[image: {}, {} bytes; images are not shown as text]",
            i.mime_type,
            base64_len(&i.data)
        ),
        ContentBlock::Audio(a) => format!(
            "[audio: {}, {} bytes; audio is not shown as text]",
            a.mime_type,
            base64_len(&a.data)
        ),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[binary resource {uri}: {}, {} bytes; not shown as text]",
                mime_type.as_deref().unwrap_or("unknown type"),
                base64_len(blob)
            ),
            _ => "[embedded resource of a kind harnessx does not show]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => {
            let mut s = format!("[resource link: {} <{}>", link.name, link.uri);
            if let Some(mime) = &link.mime_type {
                s.push_str(&format!(", {mime}"));
            }
            if let Some(d) = &link.description {
                s.push_str(&format!(": {d}"));
            }
            s.push(']');
            s
        }
        _ => "[content of a kind harnessx does not show]".to_owned(),
    }
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn missing_hints_take_mcp_defaults_and_ask() {
        let t = tool(json!({"name": "write", "inputSchema": {"type": "object"}}));
        let a = annotations(&t);
        assert_eq!(a.read_only_hint, Some(false));
        assert_eq!(a.destructive_hint, Some(true));
        assert_eq!(a.idempotent_hint, Some(false));
        assert_eq!(a.open_world_hint, Some(true));
        assert_eq!(permission(&a), PermissionLevel::Ask);
        assert_eq!(replay_policy(&a), ReplayPolicy::Manual);
    }

    #[test]
    fn read_only_tools_are_allowed() {
        let t = tool(json!({"name": "read", "title": "Read", "inputSchema": {},
            "annotations": {"readOnlyHint": true}}));
        let a = annotations(&t);
        assert_eq!(a.title.as_deref(), Some("Read"));
        assert_eq!(permission(&a), PermissionLevel::Allow);
        assert_eq!(replay_policy(&a), ReplayPolicy::Safe);
        assert_eq!(input_schema(&t), json!({"type": "object"}));
    }

    #[test]
    fn results_keep_text_structure_and_summaries() {
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"}
            ],
            "structuredContent": {"n": 1},
            "isError": true
        }))
        .unwrap();
        let out = output(r);
        assert!(out.is_error);
        assert_eq!(out.structured, Some(json!({"n": 1})));
        assert_eq!(
            out.content,
            "hello\n[image: image/png, 3 bytes; images are not shown as text]\n[resource link: a <file:///a>, text/plain]"
        );
        let one: CallToolResult = serde_json::from_value(
            json!({"content": [{"type": "text", "text": ""}, {"type": "text", "text": "only"}]}),
        )
        .unwrap();
        let out = output(one);
        assert_eq!(out.content, "only");
        assert!(!out.is_error && out.structured.is_none());
        let only_structured: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": {"n": 2}})).unwrap();
        assert_eq!(output(only_structured).content, r#"{"n":2}"#);
    }
}
