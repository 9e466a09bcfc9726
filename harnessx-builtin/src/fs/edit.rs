//! `edit_file`: replace one exact string (or every occurrence with `replace_all`), keeping line
//! endings and a byte-order mark, published atomically.

use std::io::Read;

use harnessx::ToolError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::atomic::publish_bytes;
use super::root::io_error;
use super::text::count;
use super::write::writable;
use super::{Call, Spec, object_schema, parse_args};

/// The largest file `edit_file` loads.
pub(crate) const MAX_EDIT_BYTES: u64 = 32 * 1024 * 1024;
const BOM: &str = "\u{feff}";
/// At most this many line numbers are listed for an ambiguous match.
const MAX_LISTED_LINES: usize = 20;

pub(crate) const SPEC: Spec = Spec {
    name: "edit_file",
    description: "Replace an exact string in a text file. `old_string` must match the file's \
        text exactly, including whitespace and indentation, and must occur exactly once; if it \
        occurs more often the edit is refused with the line numbers of the matches, so add \
        surrounding lines to make it unique, or pass `replace_all: true` to change every \
        occurrence. Line endings (CRLF) and a byte-order mark are kept. The write is atomic. Use \
        it to grow a long file a section at a time instead of rewriting it whole.",
    schema,
    concurrent: false,
    run,
};

fn schema() -> Value {
    object_schema(
        json!({
            "path": {"type": "string", "description": "The file to edit."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence instead of exactly one. Default false."
            }
        }),
        &["path", "old_string", "new_string"],
    )
}

#[derive(Deserialize)]
struct Args {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("edit_file", args)?;
    if args.old_string.is_empty() {
        return Err(ToolError::invalid_arguments(
            "`old_string` is empty. Give the exact text to replace; to write a new file use \
             write_file.",
        ));
    }
    if args.old_string == args.new_string {
        return Err(ToolError::invalid_arguments(
            "`old_string` and `new_string` are the same, so the edit would change nothing. Give \
             the new text in `new_string`.",
        ));
    }
    let target = call.root.resolve(&args.path, false)?;
    let shown = target.shown.clone();
    let Some(meta) = writable(&target, true)? else {
        return Err(io_error(
            &shown,
            &std::io::Error::from(std::io::ErrorKind::NotFound),
        ));
    };
    if meta.len() > MAX_EDIT_BYTES {
        return Err(ToolError::failed(format!(
            "`{shown}` is {} bytes, more than edit_file loads ({MAX_EDIT_BYTES} bytes). Edit a \
             smaller file.",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    target
        .open_read()?
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(&shown, &e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        ToolError::failed(format!(
            "`{shown}` is not valid UTF-8 text (the first invalid byte is at offset {at}), so \
             edit_file will not rewrite it: that could corrupt it. Leave it as it is, or replace \
             it whole with write_file if that is really intended."
        ))
    })?;
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(body) => (BOM, body),
        None => ("", text.as_str()),
    };
    let (old, new) = match_line_endings(body, &args.old_string, &args.new_string);
    let starts = overlapping_starts(body, &old);
    if starts.is_empty() {
        return Err(ToolError::failed(format!(
            "`old_string` was not found in `{shown}`. Read the file again and copy the exact \
             text, including whitespace and indentation."
        )));
    }
    if starts.len() > 1 && !args.replace_all {
        return Err(ToolError::failed(format!(
            "`old_string` occurs {} times in `{shown}` ({}). Include more surrounding lines to \
             make it unique, or pass `replace_all: true` to replace every occurrence.",
            starts.len(),
            line_list(body, &starts)
        )));
    }
    let (replaced, starts) = if args.replace_all {
        // Overlapping occurrences cannot all be replaced: like `str::replace`, each match is
        // taken from the end of the one before, and the count reports what was replaced.
        let taken = body.match_indices(old.as_str()).map(|(i, _)| i).collect();
        (body.replace(old.as_str(), &new), taken)
    } else {
        (body.replacen(old.as_str(), &new, 1), starts)
    };
    let mut out = String::with_capacity(bom.len() + replaced.len());
    out.push_str(bom);
    out.push_str(&replaced);
    let name = target.name.as_deref().unwrap_or_default();
    publish_bytes(
        &target.parent,
        name,
        Some(meta.permissions()),
        out.as_bytes(),
    )
    .map_err(|e| io_error(&shown, &e))?;
    Ok(format!(
        "Edited `{shown}`: replaced {} ({}).",
        count(starts.len(), "occurrence", "occurrences"),
        line_list(body, &starts)
    ))
}

/// Line endings for a file with CRLF in it: `\n` in `old` means `\r\n` when `old` does not
/// occur as given, and `new` is written with CRLF line breaks whenever the file's lines end in
/// CRLF (judged by its first line) or the text it replaces does, so the file keeps one ending.
fn match_line_endings(body: &str, old: &str, new: &str) -> (String, String) {
    if !body.contains("\r\n") {
        return (old.to_owned(), new.to_owned());
    }
    let to_crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
    let crlf_lines = body.find('\n').is_some_and(|i| body[..i].ends_with('\r'));
    let old = if old.contains('\n') && !body.contains(old) {
        to_crlf(old)
    } else {
        old.to_owned()
    };
    if crlf_lines || old.contains("\r\n") {
        (old, to_crlf(new))
    } else {
        (old, new.to_owned())
    }
}

/// The byte offsets of every occurrence of `needle` in `body`, overlapping ones included
/// (`aa` occurs twice in `aaa`), so an edit is refused as ambiguous whenever it is.
fn overlapping_starts(body: &str, needle: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(i) = body.get(from..).and_then(|rest| rest.find(needle)) {
        let at = from + i;
        starts.push(at);
        from = at + body[at..].chars().next().map_or(1, char::len_utf8);
    }
    starts
}

fn line_list(body: &str, starts: &[usize]) -> String {
    let mut lines = Vec::new();
    let mut line = 1;
    let mut pos = 0;
    for &start in starts.iter().take(MAX_LISTED_LINES) {
        line += body.as_bytes()[pos..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        pos = start;
        lines.push(line.to_string());
    }
    let label = if lines.len() == 1 { "line" } else { "lines" };
    let mut text = format!("{label} {}", lines.join(", "));
    if starts.len() > MAX_LISTED_LINES {
        text.push_str(&format!(" and {} more", starts.len() - MAX_LISTED_LINES));
    }
    text
}
