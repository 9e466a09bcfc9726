//! `read_file`: numbered lines of a text file, paged with `offset` and `limit`, streamed so a
//! read near the end of a huge file uses bounded memory.

use std::io::{self, BufRead, BufReader};

use harnessx::ToolError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::root::io_error;
use super::text::{MAX_LINE_CHARS, count, cut_line};
use super::write::not_a_regular_file;
use super::{Call, Spec, object_schema, parse_args};

/// Lines returned when the model gives no `limit`.
pub(crate) const DEFAULT_LIMIT: u64 = 2_000;
/// Bytes inspected for a NUL byte to tell a binary file.
const BINARY_SNIFF_BYTES: usize = 8_192;

pub(crate) const SPEC: Spec = Spec {
    name: "read_file",
    description: "Read a text file. Returns its lines numbered from 1, like `cat -n`. Reads up to \
        2000 lines from `offset` (default 1) at a time, fewer when the output would get too long; \
        a footer then says which `offset` reads on. Lines longer than 2000 characters are cut with \
        a marker. Binary files are refused; for a directory use list_directory.",
    schema,
    concurrent: true,
    run,
};

fn schema() -> Value {
    object_schema(
        json!({
            "path": {"type": "string", "description": "The file to read."},
            "offset": {
                "type": ["integer", "null"], "minimum": 1,
                "description": "The line number to start at (1-based). Default 1."
            },
            "limit": {
                "type": ["integer", "null"], "minimum": 1,
                "description": "The most lines to return. Default 2000."
            }
        }),
        &["path"],
    )
}

#[derive(Deserialize)]
struct Args {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("read_file", args)?;
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let target = call.root.resolve(&args.path, false)?;
    let shown = &target.shown;
    if let Some(meta) = target.lstat()?
        && !meta.is_file()
        && !meta.is_dir()
        && !meta.file_type().is_symlink()
    {
        // Opening a FIFO would block; a device could be endless.
        return Err(not_a_regular_file(shown));
    }
    let file = target.open_read()?;
    let meta = file.metadata().map_err(|e| io_error(shown, &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "`{shown}` is a directory, not a file. Call list_directory with path `{shown}` to see \
             its entries."
        )));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(|e| io_error(shown, &e))?;
    if head.is_empty() {
        return Ok(format!("`{shown}` is empty (0 bytes)."));
    }
    if head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(ToolError::failed(format!(
            "`{shown}` is a binary file ({} bytes), so read_file will not show it. Only text \
             files can be read.",
            meta.len()
        )));
    }
    read_lines(
        &mut reader,
        shown,
        offset,
        limit,
        call.options.max_read_bytes,
    )
    .map_err(|e| io_error(shown, &e))?
}

fn read_lines(
    reader: &mut impl BufRead,
    shown: &str,
    offset: u64,
    limit: u64,
    max_bytes: u64,
) -> io::Result<Result<String, ToolError>> {
    let mut line_no = 1;
    while line_no < offset {
        if !skip_line(reader)? {
            let lines = line_no - 1;
            return Ok(Err(ToolError::failed(format!(
                "offset {offset} is past the end of `{shown}`, which has {}. Call read_file with \
                 an offset of at most {lines}.",
                count(lines as usize, "line", "lines")
            ))));
        }
        line_no += 1;
    }
    let mut out = String::new();
    let mut line = Vec::new();
    let mut stopped_by_bytes = false;
    let max_bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    while line_no < offset.saturating_add(limit) {
        let Some(extra) = read_capped_line(reader, &mut line, MAX_LINE_CHARS * 4)? else {
            break;
        };
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let shown_line = if extra > 0 {
            cut_with_extra(text, extra)
        } else {
            cut_line(text, MAX_LINE_CHARS)
        };
        let entry = format!("{line_no:>6}\t{shown_line}\n");
        if !out.is_empty() && out.len() + entry.len() > max_bytes {
            stopped_by_bytes = true;
            // Put nothing back: the footer tells the model to read on from this line.
            break;
        }
        out.push_str(&entry);
        line_no += 1;
    }
    let more = stopped_by_bytes || !reader.fill_buf()?.is_empty();
    if more {
        let why = if stopped_by_bytes {
            format!("the output reached the {max_bytes}-byte limit")
        } else {
            format!("the limit of {}", count(limit as usize, "line", "lines"))
        };
        out.push_str(&format!(
            "\n[Showing lines {offset}-{} ({why}); the file continues. Call read_file with \
             offset={line_no} to read on.]",
            line_no - 1
        ));
    } else {
        out.push_str(&format!("\n[End of file: {} lines.]", line_no - 1));
    }
    Ok(Ok(out))
}

fn cut_with_extra(text: &str, extra: usize) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!(
            "{}… [line cut: {} more bytes not shown]",
            &text[..at],
            text.len() - at + extra
        ),
        None => format!("{text}… [line cut: {extra} more bytes not shown]"),
    }
}

/// Skips one line without keeping it; false at the end of the input.
fn skip_line(reader: &mut impl BufRead) -> io::Result<bool> {
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(true);
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}

/// Reads one line into `line`, keeping at most `cap` bytes; returns how many bytes of the line
/// were dropped, or `None` at the end of the input.
fn read_capped_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<usize>> {
    line.clear();
    let mut dropped = 0;
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(dropped));
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let room = cap.saturating_sub(line.len());
        let keep = room.min(chunk.len());
        line.extend_from_slice(&chunk[..keep]);
        dropped += chunk.len() - keep;
        let n = chunk.len();
        reader.consume(n);
        if done {
            // When bytes were dropped, the newline was among them; it is not content.
            dropped = dropped.saturating_sub(1);
            return Ok(Some(dropped));
        }
    }
}
