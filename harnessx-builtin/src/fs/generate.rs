//! `generate_file`: write a downloadable file into the application's output directory.

use std::ffi::OsString;
use std::sync::Arc;

use harnessx::ToolError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::atomic::publish_new_bytes;
use super::root::{Jail, Root, io_error};
use super::text::count;
use super::{Call, Spec, object_schema, output_dir, parse_args};

/// How many numbered alternatives are tried when the name is taken.
const MAX_NAME_ATTEMPTS: u32 = 1_000;

pub(crate) const SPEC: Spec = Spec {
    name: "generate_file",
    description: "Create a file for the user to download, such as a report, an export or a \
        generated document. It is written to the application's output directory (not the \
        workspace) and the tool returns its path. If a file of that name already exists, a \
        numbered name (`report-1.md`) is used instead, so earlier downloads are never \
        overwritten.",
    schema,
    concurrent: false,
    run,
};

fn schema() -> Value {
    object_schema(
        json!({
            "filename": {
                "type": "string",
                "description": "The file name, such as `report.md`; may include subdirectories."
            },
            "content": {"type": "string", "description": "The content of the file."}
        }),
        &["filename", "content"],
    )
}

#[derive(Deserialize)]
struct Args {
    filename: String,
    content: String,
}

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("generate_file", args)?;
    let dir = output_dir(call.options);
    let shown_dir = dir.display().to_string();
    std::fs::create_dir_all(&dir).map_err(|e| {
        ToolError::failed(format!(
            "the output directory `{shown_dir}` cannot be created: {e}. Report this to the user."
        ))
    })?;
    let jail = Jail::open_output(&dir).map_err(|e| io_error(&shown_dir, &e))?;
    let host = jail.host().to_owned();
    let root = Root::Jail(Arc::new(jail));
    let target = root.resolve(&args.filename, true)?;
    let Some(name) = target.name.clone() else {
        return Err(ToolError::invalid_arguments(
            "`filename` names no file. Give a file name such as `report.md`.",
        ));
    };
    let mut chosen: Option<OsString> = None;
    for n in 0..MAX_NAME_ATTEMPTS {
        let candidate = numbered(&name, n);
        match target.parent.symlink_metadata(&candidate) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&target.shown, &e)),
            Ok(_) => continue,
        }
        // Never replaces: a name taken since the look above moves on to the next number.
        match publish_new_bytes(&target.parent, &candidate, args.content.as_bytes()) {
            Ok(()) => {
                chosen = Some(candidate);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_error(&target.shown, &e)),
        }
    }
    let Some(chosen) = chosen else {
        return Err(ToolError::failed(format!(
            "`{}` and {MAX_NAME_ATTEMPTS} numbered variants already exist in the output \
             directory. Choose another file name.",
            target.shown
        )));
    };
    let rel = match target.shown.rsplit_once('/') {
        Some((parent, _)) => format!("{parent}/{}", chosen.to_string_lossy()),
        None => chosen.to_string_lossy().into_owned(),
    };
    let path = host.join(rel);
    Ok(format!(
        "Created the download `{}` ({}).",
        path.display(),
        count(args.content.len(), "byte", "bytes")
    ))
}

/// `name` for 0, else `stem-n.ext`.
fn numbered(name: &OsString, n: u32) -> OsString {
    if n == 0 {
        return name.clone();
    }
    let text = name.to_string_lossy();
    match text.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem}-{n}.{ext}").into(),
        _ => format!("{text}-{n}").into(),
    }
}
