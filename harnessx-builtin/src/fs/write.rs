//! `write_file`: create or (with `overwrite`) replace a file, published atomically.

use harnessx::ToolError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::atomic::{is_swapped, publish_new_bytes, publish_over_bytes};
use super::root::{Target, io_error};
use super::text::count;
use super::{Call, Spec, object_schema, parse_args};

pub(crate) const SPEC: Spec = Spec {
    name: "write_file",
    description: "Write a whole file. Creates the file and any missing parent directories. An \
        existing file is replaced only with `overwrite: true`; to change part of a file use \
        edit_file instead. The write is atomic: readers see the old file or the complete new \
        one, never a partial write. An existing file keeps its permissions. Symbolic links are \
        never written through.",
    schema,
    concurrent: false,
    run,
};

fn schema() -> Value {
    object_schema(
        json!({
            "path": {"type": "string", "description": "The file to write."},
            "content": {"type": "string", "description": "The complete new content of the file."},
            "overwrite": {
                "type": "boolean",
                "description": "Replace the file if it exists. Default false."
            }
        }),
        &["path", "content"],
    )
}

#[derive(Deserialize)]
struct Args {
    path: String,
    content: String,
    #[serde(default)]
    overwrite: bool,
}

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("write_file", args)?;
    let target = call.root.resolve(&args.path, true)?;
    let existed = writable(&target, args.overwrite)?;
    let Some(name) = target.name.as_deref() else {
        return Err(root_is_a_directory(&target.shown));
    };
    let bytes = args.content.as_bytes();
    let shown = &target.shown;
    match &existed {
        None => publish_new_bytes(&target.parent, name, bytes).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                ToolError::failed(format!(
                    "`{shown}` was created by another process while write_file was writing it, \
                     so nothing was written and what is there now was not touched. Look at it \
                     with read_file, then call again (with `overwrite: true` to replace it)."
                ))
            } else {
                io_error(shown, &e)
            }
        })?,
        Some(_) => {
            publish_over_bytes(&target.parent, name, bytes).map_err(|e| {
                if is_swapped(&e) {
                    ToolError::failed(format!(
                        "`{shown}` was replaced by another process (with a link, a directory or \
                         another file) while write_file was writing it, so nothing was written \
                         and what is there now was not touched. Look at it, then call again."
                    ))
                } else {
                    io_error(shown, &e)
                }
            })?;
        }
    }
    let lines = args.content.lines().count();
    let verb = if existed.is_some() {
        "Overwrote"
    } else {
        "Created"
    };
    Ok(format!(
        "{verb} `{}` ({}, {}).",
        target.shown,
        count(args.content.len(), "byte", "bytes"),
        count(lines, "line", "lines")
    ))
}

fn root_is_a_directory(shown: &str) -> ToolError {
    ToolError::failed(format!(
        "`{shown}` is a directory; give the path of a file inside it, such as `{shown}/notes.md`."
    ))
}

/// Checks that `target` may be written: not a directory, not a symbolic link, and either absent
/// or `overwrite` given. Returns the existing file's metadata.
pub(crate) fn writable(
    target: &Target,
    overwrite: bool,
) -> Result<Option<cap_std::fs::Metadata>, ToolError> {
    if target.name.is_none() {
        return Err(root_is_a_directory(&target.shown));
    }
    let Some(meta) = target.lstat()? else {
        return Ok(None);
    };
    let shown = &target.shown;
    if meta.file_type().is_symlink() {
        return Err(ToolError::failed(format!(
            "`{shown}` is a symbolic link; write_file does not write through links. Write to the \
             real file's path instead."
        )));
    }
    if meta.is_dir() {
        return Err(root_is_a_directory(shown));
    }
    if !meta.is_file() {
        return Err(not_a_regular_file(shown));
    }
    if !overwrite {
        return Err(ToolError::failed(format!(
            "`{shown}` already exists ({}). Pass `overwrite: true` to replace it whole, or use \
             edit_file to change part of it.",
            count(
                usize::try_from(meta.len()).unwrap_or(usize::MAX),
                "byte",
                "bytes"
            )
        )));
    }
    Ok(Some(meta))
}

/// The error for a FIFO, socket or device, which the tools never open.
pub(crate) fn not_a_regular_file(shown: &str) -> ToolError {
    ToolError::failed(format!(
        "`{shown}` is not a regular file (it is a FIFO, socket or device), and the file tools \
         only work on regular files. Choose another path."
    ))
}
