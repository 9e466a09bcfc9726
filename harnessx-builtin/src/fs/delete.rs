//! `delete`: remove a file, a symbolic link (never its target) or, with `recursive`, a
//! directory tree; never the root.

use std::io;

use cap_fs_ext::DirExt;
use harnessx::ToolError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::remove_tree::remove_tree;
use super::root::io_error;
use super::text::count;
use super::{Call, Spec, object_schema, parse_args};

pub(crate) const SPEC: Spec = Spec {
    name: "delete",
    description: "Delete a file, an empty directory, or a symbolic link (the link itself, never \
        what it points to). A directory that is not empty is deleted only with `recursive: \
        true`, which removes everything in it. The workspace root itself is never deleted.",
    schema,
    concurrent: false,
    run,
};

fn schema() -> Value {
    object_schema(
        json!({
            "path": {"type": "string", "description": "The file, link or directory to delete."},
            "recursive": {
                "type": "boolean",
                "description": "Delete a non-empty directory and everything in it. Default false."
            }
        }),
        &["path"],
    )
}

#[derive(Deserialize)]
struct Args {
    path: String,
    #[serde(default)]
    recursive: bool,
}

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("delete", args)?;
    let target = call.root.resolve(&args.path, false)?;
    let shown = &target.shown;
    let Some(name) = &target.name else {
        return Err(ToolError::failed(format!(
            "`{}` is the root directory, which delete never removes. Delete the files or \
             directories inside it one by one.",
            if args.path.is_empty() {
                "."
            } else {
                &args.path
            }
        )));
    };
    let Some(meta) = target.lstat()? else {
        return Err(io_error(shown, &io::Error::from(io::ErrorKind::NotFound)));
    };
    let dir = &target.parent;
    if meta.file_type().is_symlink() {
        dir.remove_file_or_symlink(name)
            .map_err(|e| io_error(shown, &e))?;
        return Ok(format!(
            "Deleted the symbolic link `{shown}` (its target was not touched)."
        ));
    }
    if !meta.is_dir() {
        dir.remove_file(name).map_err(|e| io_error(shown, &e))?;
        return Ok(format!("Deleted the file `{shown}`."));
    }
    if args.recursive {
        remove_tree(dir, name).map_err(|e| io_error(shown, &e))?;
        return Ok(format!(
            "Deleted the directory `{shown}` and everything in it."
        ));
    }
    match dir.remove_dir(name) {
        Ok(()) => Ok(format!("Deleted the empty directory `{shown}`.")),
        Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => {
            let entries = target
                .open_dir()
                .ok()
                .and_then(|d| d.entries().ok())
                .map_or(0, Iterator::count);
            Err(ToolError::failed(format!(
                "`{shown}` is a directory that is not empty ({}). Pass `recursive: true` to \
                 delete it and everything in it.",
                count(entries, "entry", "entries")
            )))
        }
        Err(e) => Err(io_error(shown, &e)),
    }
}
