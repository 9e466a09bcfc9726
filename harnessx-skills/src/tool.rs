//! The `Skill` tool: lists the skills in its description, returns a skill's instructions and
//! reads its files.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::Skills;
use super::files::{self, MAX_LISTED};
use harnessx_core::output::{ToolError, ToolOutput};
use harnessx_core::tool::{
    PermissionLevel, ReplayPolicy, ToolAnnotations, ToolDefinition, sync_handler_fn,
};

/// The tool's name.
pub const SKILL_TOOL: &str = "Skill";

/// The tool over `skills`. Its description lists them, so it stays the same for the agent's
/// life and the prompt prefix stays cacheable.
pub(super) fn definition(skills: Skills) -> ToolDefinition {
    let mut description = String::from(
        "Load a skill: instructions for a kind of task, with optional resource files. Before \
         doing a task a skill below covers, call Skill with its `name` and follow the \
         instructions it returns. To read one of the skill's files (the call lists them), call \
         Skill again with `name` and `file` set to the file's path, such as \
         `reference/api.md`.\n\nAvailable skills:",
    );
    for skill in skills.iter() {
        let _ = write!(
            description,
            "\n- {}: {}",
            skill.name(),
            one_line(skill.description())
        );
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "minLength": 1,
                "description": "The skill's name, as listed in this tool's description."
            },
            "file": {
                "type": "string",
                "description": "A file of the skill to read, relative to its folder (as the skill lists it). Leave it out to get the skill's instructions."
            }
        },
        "required": ["name"],
        "additionalProperties": false
    });
    ToolDefinition::new(
        SKILL_TOOL,
        description,
        schema,
        sync_handler_fn(move |args, _ctx| call(&skills, &args)),
    )
    .with_permission(PermissionLevel::Allow)
    .with_replay_policy(ReplayPolicy::Safe)
    .with_annotations(ToolAnnotations {
        title: Some("Skill".to_owned()),
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
    })
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn call(skills: &Skills, args: &Value) -> Result<ToolOutput, ToolError> {
    let name = args["name"].as_str().unwrap_or_default().trim();
    let Some(skill) = skills.get(name) else {
        return Err(unknown(skills, name));
    };
    match args["file"].as_str() {
        Some(file) => {
            let text = files::read_text(&skill.dir, skill.name(), file.trim())?;
            Ok(ToolOutput::text(text).with_structured(json!({
                "skill": skill.name(),
                "file": file.trim(),
            })))
        }
        None => {
            let (listed, more) = files::list(&skill.dir);
            let mut text = format!("# Skill: {}\n\n{}\n", skill.name(), skill.body());
            if listed.is_empty() {
                text.push_str("\nThis skill has no other files.");
            } else {
                let _ = write!(
                    text,
                    "\nFiles in this skill (read one with Skill {{\"name\": \"{}\", \"file\": \
                     \"<path>\"}}):",
                    skill.name()
                );
                for file in &listed {
                    let _ = write!(text, "\n- {} ({} bytes)", file.path, file.bytes);
                }
                if more {
                    let _ = write!(text, "\n(only the first {MAX_LISTED} files are listed)");
                }
            }
            Ok(ToolOutput::text(text).with_structured(json!({
                "skill": skill.name(),
                "description": skill.description(),
                "files": listed,
                "files_truncated": more,
            })))
        }
    }
}

fn unknown(skills: &Skills, name: &str) -> ToolError {
    let names = skills.names();
    let closest = names
        .iter()
        .map(|n| (strsim::jaro_winkler(n, &name.to_lowercase()), *n))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| format!(" Did you mean `{n}`?"))
        .unwrap_or_default();
    ToolError::invalid_arguments(format!(
        "There is no skill named `{name}`.{closest} Available skills: {}. Call Skill again with \
         one of these names.",
        names.join(", ")
    ))
}
