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
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "For long instructions: the line to start from (0 is the first), as the previous call said."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": "For long instructions: the most lines to return."
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
    .with_annotations(
        ToolAnnotations::new()
            .with_title("Skill")
            .with_read_only_hint(true)
            .with_destructive_hint(false)
            .with_idempotent_hint(true)
            .with_open_world_hint(false),
    )
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
            let page = instructions_page(skill.body(), args)?;
            let mut text = format!(
                "# Skill: {}\n\nThis skill's folder is `{}`; paths in its instructions are \
                 relative to it (run its scripts from there with a shell tool, if you have one).\n",
                skill.name(),
                skill.folder().display()
            );
            // Files before the instructions, so a long body cut short never hides them.
            if listed.is_empty() {
                text.push_str("\nThis skill has no other files.\n");
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
                text.push('\n');
            }
            text.push_str("\n## Instructions\n\n");
            text.push_str(page.text);
            if let Some(next) = page.next_offset {
                let _ = write!(
                    text,
                    "\n\n[Instructions continue: lines {}-{} of {} shown. Call Skill with \
                     {{\"name\": \"{}\", \"offset\": {next}}} for the rest.]",
                    page.first_line + 1,
                    next,
                    page.total_lines,
                    skill.name()
                );
            }
            Ok(ToolOutput::text(text).with_structured(json!({
                "skill": skill.name(),
                "description": skill.description(),
                "folder": skill.folder().display().to_string(),
                "files": listed,
                "files_truncated": more,
                "total_lines": page.total_lines,
                "next_offset": page.next_offset,
            })))
        }
    }
}

/// The most bytes of instructions one call returns, well under the engine's result cap so the
/// header and the file list always fit beside them.
pub(crate) const MAX_INSTRUCTION_BYTES: usize = 48 * 1024;

/// One page of a skill's instructions.
struct Page<'a> {
    text: &'a str,
    /// The 0-based index of the first line shown.
    first_line: usize,
    /// The `offset` of the next page, when lines remain.
    next_offset: Option<usize>,
    total_lines: usize,
}

/// The lines of `body` that `offset` (0-based, default 0) and `limit` (default: as many whole
/// lines as fit in [`MAX_INSTRUCTION_BYTES`]) select. At least one line is shown, cut at a
/// character boundary (the rest of that line not shown) when a single line is over the budget.
fn instructions_page<'a>(body: &'a str, args: &Value) -> Result<Page<'a>, ToolError> {
    let number = |key: &str| -> Result<Option<usize>, ToolError> {
        match &args[key] {
            Value::Null => Ok(None),
            v => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    ToolError::invalid_arguments(format!(
                        "`{key}` must be a whole number of lines (0 or more), not {v}."
                    ))
                }),
        }
    };
    let offset = number("offset")?.unwrap_or(0);
    let limit = number("limit")?.unwrap_or(usize::MAX).max(1);
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let total_lines = lines.len();
    if offset > 0 && offset >= total_lines {
        return Err(ToolError::invalid_arguments(format!(
            "`offset` {offset} is past the end of the instructions, which have {total_lines} \
             lines; use an offset below {total_lines}."
        )));
    }
    let start: usize = lines[..offset].iter().map(|l| l.len()).sum();
    let mut end = start;
    let mut shown = 0;
    for line in lines.iter().skip(offset).take(limit) {
        if shown > 0 && end - start + line.len() > MAX_INSTRUCTION_BYTES {
            break;
        }
        end += line.len();
        shown += 1;
    }
    if end - start > MAX_INSTRUCTION_BYTES {
        end = start + MAX_INSTRUCTION_BYTES;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
    }
    let next = offset + shown;
    Ok(Page {
        text: &body[start..end],
        first_line: offset,
        next_offset: (next < total_lines).then_some(next),
        total_lines,
    })
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
