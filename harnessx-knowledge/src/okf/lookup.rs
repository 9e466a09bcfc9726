//! What `read_concept` and `get_neighbors` share: finding a concept by ID among the attached
//! bundles, the note about its problems, and the tools' common metadata.

use serde_json::{Value, json};

use super::{Attached, OkfBundle};
use harnessx_core::output::ToolError;
use harnessx_core::tool::{PermissionLevel, ReplayPolicy, ToolAnnotations, ToolDefinition};

/// Makes a definition read-only, never asking, and safe to repeat.
pub(super) fn read_only(definition: ToolDefinition, title: &str) -> ToolDefinition {
    definition
        .with_permission(PermissionLevel::Allow)
        .with_replay_policy(ReplayPolicy::Safe)
        .with_annotations(
            ToolAnnotations::new()
                .with_title(title)
                .with_read_only_hint(true)
                .with_destructive_hint(false)
                .with_idempotent_hint(true)
                .with_open_world_hint(false),
        )
}

/// The schema of a tool that takes a concept ID and, optionally, a bundle.
pub(super) fn id_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {
                "type": "string",
                "minLength": 1,
                "description": "The concept's ID: its path in the bundle without `.md`, as search_concepts returns it (for example `tables/orders`)."
            },
            "bundle": {
                "type": "string",
                "description": "The bundle to look in; needed only when several bundles are attached and have a concept with this ID."
            }
        },
        "required": ["id"],
        "additionalProperties": false
    })
}

/// The ID as the model may write it: a leading `/` or `./` and a trailing `.md` are dropped.
pub(super) fn normalize(raw: &str) -> String {
    let id = raw.trim();
    let id = id.strip_prefix("./").unwrap_or(id);
    let id = id.trim_start_matches('/');
    id.strip_suffix(".md").unwrap_or(id).to_owned()
}

/// Finds the bundle that has concept `id` (in `bundle`, when given).
pub(super) fn find(
    attached: &Attached,
    args: &Value,
    tool: &str,
) -> Result<(OkfBundle, String), ToolError> {
    let id = normalize(args["id"].as_str().unwrap_or_default());
    if id.is_empty() {
        return Err(ToolError::invalid_arguments(format!(
            "`id` is empty. Call {tool} with a concept ID from search_concepts."
        )));
    }
    let bundles = attached.list();
    if bundles.is_empty() {
        return Err(ToolError::failed(
            "No knowledge bundle is attached any more. Answer without it or tell the user.",
        ));
    }
    let names = || {
        bundles
            .iter()
            .map(|b| format!("`{}`", b.name()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let candidates: Vec<&OkfBundle> = match args["bundle"].as_str().map(str::trim) {
        Some(name) if !name.is_empty() => {
            let Some(bundle) = bundles.iter().find(|b| b.name() == name) else {
                return Err(ToolError::invalid_arguments(format!(
                    "No bundle named `{name}` is attached. Attached bundles: {}. Call {tool} \
                     again with one of them, or without `bundle`.",
                    names()
                )));
            };
            vec![bundle]
        }
        _ => bundles.iter().collect(),
    };
    let holders: Vec<&OkfBundle> = candidates
        .iter()
        .copied()
        .filter(|b| b.concept(&id).is_some())
        .collect();
    match holders.as_slice() {
        [bundle] => Ok(((*bundle).clone(), id)),
        [] => Err(ToolError::failed(format!(
            "There is no concept `{id}`{}.{} Call search_concepts to find concept IDs.",
            if candidates.len() == 1 {
                format!(" in bundle `{}`", candidates[0].name())
            } else {
                String::new()
            },
            suggestion(&candidates, &id)
        ))),
        many => Err(ToolError::invalid_arguments(format!(
            "Concept `{id}` exists in several bundles ({}). Call {tool} again with `bundle` set \
             to one of them.",
            many.iter()
                .map(|b| format!("`{}`", b.name()))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// " Did you mean `x`?" for the closest ID, when one is close.
fn suggestion(bundles: &[&OkfBundle], id: &str) -> String {
    bundles
        .iter()
        .flat_map(|b| b.ids())
        .map(|candidate| (strsim::jaro_winkler(candidate, id), candidate))
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| format!(" Did you mean `{candidate}`?"))
        .unwrap_or_default()
}

/// A note listing the problems found in concept `id`'s file, or nothing.
pub(super) fn problems_note(bundle: &OkfBundle, id: &str) -> String {
    let problems = bundle.diagnostics_for(id);
    if problems.is_empty() {
        return String::new();
    }
    let list: Vec<String> = problems.iter().map(|d| d.message.clone()).collect();
    format!(
        "\n\nNote: this concept's file has problems, so some fields or links may be missing: {}.",
        list.join("; ")
    )
}
