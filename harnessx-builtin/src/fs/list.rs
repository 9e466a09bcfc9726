//! `list_directory`: a directory's entries, sorted, with their types marked, capped.

use harnessx::ToolError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::root::io_error;
use super::text::count;
use super::{Call, Spec, object_schema, parse_args};

pub(crate) const SPEC: Spec = Spec {
    name: "list_directory",
    description: "List a directory's entries, sorted by name. Directories end in `/`, symbolic \
        links in `@`, other special files in `|`; files show their size. Very large directories \
        are cut with a footer saying how many entries were not shown; then list a subdirectory \
        or use glob with a pattern. `path` defaults to the workspace root.",
    schema,
    concurrent: true,
    run,
};

fn schema() -> Value {
    object_schema(
        json!({
            "path": {
                "type": ["string", "null"],
                "description": "The directory to list. Default: the workspace root (`.`)."
            }
        }),
        &[],
    )
}

#[derive(Deserialize)]
struct Args {
    path: Option<String>,
}

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("list_directory", args)?;
    let path = args.path.unwrap_or_default();
    let target = call.root.resolve(&path, false)?;
    let shown = &target.shown;
    let dir = target.open_dir()?;
    let mut entries = Vec::new();
    for entry in dir.entries().map_err(|e| io_error(shown, &e))? {
        let entry = entry.map_err(|e| io_error(shown, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().map_err(|e| io_error(shown, &e))?;
        let line = if kind.is_dir() {
            format!("{name}/")
        } else if kind.is_symlink() {
            format!("{name}@")
        } else if kind.is_file() {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            format!(
                "{name}  ({})",
                count(usize::try_from(size).unwrap_or(usize::MAX), "byte", "bytes")
            )
        } else {
            format!("{name}|")
        };
        entries.push((name, line));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let total = entries.len();
    if total == 0 {
        return Ok(format!("`{shown}` is an empty directory."));
    }
    let max = call.options.max_directory_entries;
    let mut out = format!("`{shown}` ({}):\n", count(total, "entry", "entries"));
    for (_, line) in entries.iter().take(max) {
        out.push_str(line);
        out.push('\n');
    }
    if total > max {
        out.push_str(&format!(
            "\n[{} more entries not shown ({total} in all). List a subdirectory, or use glob with \
             a pattern to find specific files.]",
            total - max
        ));
    }
    Ok(out)
}
