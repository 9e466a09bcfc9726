//! `grep`: lines matching a regular expression, searched with ripgrep's crates (`ignore`,
//! `grep-regex`, `grep-searcher`).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkFinish, SinkMatch};
use harnessx::ToolError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::glob::PathGlob;
use super::line_cap::{LineCap, MAX_LINE_BYTES};
use super::text::{MAX_PREVIEW_CHARS, count, preview};
use super::walk::{Scope, include_ignored_schema, skipped_hint};
use super::{Call, Spec, object_schema, parse_args};

pub(crate) const SPEC: Spec = Spec {
    name: "grep",
    description: "Search file contents with a regular expression (Rust regex syntax, like \
        ripgrep). Returns matching lines as `path:line: text`, sorted by path and line. Searches \
        `path` (a directory, default the workspace root, or one file); `glob` limits the files \
        searched (`*.rs`, `src/**/*.ts`). Files ignored by .gitignore, hidden files and binary \
        files are skipped unless `include_ignored` is true (binary files always are); symbolic \
        links are not followed. Long lines are shown as a preview around the match; only the \
        first 64 KiB of a line are searched. Results are capped; a footer says how many more \
        matched.",
    schema,
    concurrent: true,
    run,
};

fn schema() -> Value {
    object_schema(
        json!({
            "pattern": {"type": "string", "description": "The regular expression to search for."},
            "path": {
                "type": ["string", "null"],
                "description": "The directory or file to search. Default: the workspace root."
            },
            "glob": {
                "type": ["string", "null"],
                "description": "Only search files matching this glob pattern."
            },
            "ignore_case": {
                "type": "boolean",
                "description": "Match letters regardless of case. Default false."
            },
            "include_ignored": include_ignored_schema()
        }),
        &["pattern"],
    )
}

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    include_ignored: bool,
}

/// A match's sort key: the file's relative path and the line number.
type Key = (std::path::PathBuf, u64);

/// The most bytes the compiled form of a `grep` pattern may take (its NFA); a pattern that
/// needs more, such as a large counted repetition, is refused before any file is read.
pub(crate) const MAX_PATTERN_PROGRAM_BYTES: usize = 8 << 20;
/// The most memory each search thread's lazy DFA cache may use.
const MAX_DFA_CACHE_BYTES: usize = 8 << 20;
/// Files up to this length are read whole and searched as one slice; longer ones are streamed.
const MAX_SLICE_BYTES: u64 = 256 * 1024;
/// The most characters of a refused pattern quoted back in an error.
const MAX_QUOTED_PATTERN_CHARS: usize = 200;

/// What the walker threads found: the first `max` matches in sort order, and counts of all.
struct Found {
    kept: BTreeMap<Key, String>,
    lines: usize,
    files: usize,
    /// Lines longer than [`MAX_LINE_BYTES`], searched only in their first bytes.
    cut_lines: usize,
    /// Files that had such lines.
    cut_files: usize,
}

impl Found {
    fn new() -> Self {
        Found {
            kept: BTreeMap::new(),
            lines: 0,
            files: 0,
            cut_lines: 0,
            cut_files: 0,
        }
    }

    /// Keeps a match if it is among the first `max` in sort order; `lines` counts separately.
    fn keep(&mut self, key: Key, text: String, max: usize) {
        if self.kept.len() < max {
            self.kept.insert(key, text);
        } else if let Some(last) = self.kept.last_key_value().map(|(k, _)| k.clone())
            && key < last
        {
            self.kept.remove(&last);
            self.kept.insert(key, text);
        }
    }

    /// How many lines of the file at `rel` could still be kept: `max` less the kept matches of
    /// files that sort before it, which no line of this file can displace.
    fn room_for(&self, rel: &Path, max: usize) -> usize {
        let before = self.kept.range(..(rel.to_path_buf(), 0)).count();
        max.saturating_sub(before)
    }

    fn merge(&mut self, other: &mut Found, max: usize) {
        for (key, text) in std::mem::take(&mut other.kept) {
            self.keep(key, text, max);
        }
        self.lines += other.lines;
        self.files += other.files;
        self.cut_lines += other.cut_lines;
        self.cut_files += other.cut_files;
    }
}

/// One thread's findings, merged into the shared result when the thread's visitor is dropped.
struct ThreadFound<'a> {
    found: Found,
    shared: &'a Mutex<Found>,
    max: usize,
}

impl Drop for ThreadFound<'_> {
    fn drop(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        shared.merge(&mut self.found, self.max);
    }
}

/// Collects one file's matching lines; a file found to be binary is dropped whole. Only the
/// first `room` matches are kept (no later one could be shown); the rest are only counted, so
/// memory stays bounded however many lines of a huge file match. The room is worked out at the
/// file's first match, so a file without one costs nothing here.
struct FileSink<'m> {
    matcher: &'m RegexMatcher,
    lines: Vec<(u64, String)>,
    room: Room<'m>,
    matched: usize,
    binary: bool,
}

/// How many matches of one file may be kept: known, or to be asked of the thread's findings.
enum Room<'m> {
    Known(usize),
    Ask {
        found: &'m Found,
        rel: &'m Path,
        max: usize,
    },
}

impl Room<'_> {
    fn get(&mut self) -> usize {
        if let Room::Ask { found, rel, max } = *self {
            *self = Room::Known(found.room_for(rel, max));
        }
        match *self {
            Room::Known(room) => room,
            Room::Ask { .. } => 0,
        }
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matched += 1;
        if self.lines.len() >= self.room.get() {
            return Ok(true);
        }
        let line = String::from_utf8_lossy(mat.bytes());
        let line = line.trim_end_matches(['\n', '\r']);
        let text = if line.chars().count() > MAX_PREVIEW_CHARS {
            let focus = self
                .matcher
                .find(line.as_bytes())
                .ok()
                .flatten()
                .map_or(0, |m| m.start());
            preview(line, focus, MAX_PREVIEW_CHARS)
        } else {
            line.to_owned()
        };
        self.lines.push((mat.line_number().unwrap_or(0), text));
        Ok(true)
    }

    fn finish(&mut self, _: &Searcher, finish: &SinkFinish) -> Result<(), io::Error> {
        self.binary = finish.binary_byte_offset().is_some();
        Ok(())
    }
}

/// Compiles `pattern` with the size limits, or says why it cannot be used.
fn compile(pattern: &str, ignore_case: bool) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .line_terminator(Some(b'\n'))
        .size_limit(MAX_PATTERN_PROGRAM_BYTES)
        .dfa_size_limit(MAX_DFA_CACHE_BYTES)
        .build(pattern)
        .map_err(|e| {
            let e = e.to_string();
            if e.contains("exceeds size limit") {
                let shown = match pattern.char_indices().nth(MAX_QUOTED_PATTERN_CHARS) {
                    Some((at, _)) => format!("{}…", &pattern[..at]),
                    None => pattern.to_owned(),
                };
                ToolError::invalid_arguments(format!(
                    "`pattern` `{shown}` is too large: compiled, it would take more than the \
                     {} MiB that grep allows for a pattern. Large counted repetitions such as \
                     `{{1000}}` multiply its size; use a smaller count or a simpler pattern, and \
                     call again.",
                    MAX_PATTERN_PROGRAM_BYTES >> 20
                ))
            } else {
                ToolError::invalid_arguments(format!(
                    "`pattern` is not a valid regular expression: {e}. Escape special characters \
                     such as ( ) [ ] {{ }} . * + ? with a backslash to match them literally, and \
                     call again."
                ))
            }
        })
}

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("grep", args)?;
    let matcher = compile(&args.pattern, args.ignore_case)?;
    let glob = args
        .glob
        .as_deref()
        .map(|g| PathGlob::new(g, "glob"))
        .transpose()?;
    let scope = Scope::resolve(call, args.path.as_deref(), args.include_ignored)?;
    let max = call.options.max_search_results;
    let shared = Mutex::new(Found::new());
    let cancel = &call.cancel;
    scope.for_each_file(cancel, || {
        let mut mine = ThreadFound {
            found: Found::new(),
            shared: &shared,
            max,
        };
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let mut whole = Vec::new();
        let (matcher, glob, scope) = (&matcher, glob.as_ref(), &scope);
        move |rel: &Path| {
            if glob.is_some_and(|g| !g.is_match(rel)) {
                return;
            }
            let Ok((file, len)) = scope.open(rel) else {
                return;
            };
            let mut sink = FileSink {
                matcher,
                lines: Vec::new(),
                room: Room::Ask {
                    found: &mine.found,
                    rel,
                    max,
                },
                matched: 0,
                binary: false,
            };
            let mut reader = LineCap::new(file.into_std(), MAX_LINE_BYTES, cancel);
            let searched = if len <= MAX_SLICE_BYTES {
                // A small file (most of them) is read whole into the thread's buffer with one
                // read and searched in place: no copy into the searcher's own buffer, no
                // second read to find the end. Bytes appended after the `fstat` are not read.
                match reader.read_capped(&mut whole, len) {
                    // A byte-order mark: the stream path transcodes the text before searching.
                    Ok(())
                        if whole.starts_with(&[0xFF, 0xFE]) || whole.starts_with(&[0xFE, 0xFF]) =>
                    {
                        searcher.search_reader(matcher, whole.as_slice(), &mut sink)
                    }
                    // A slice search looks for binary data only near its start; the stream
                    // sees every byte, so a NUL anywhere drops the file, here as there.
                    Ok(()) if memchr::memchr(0, &whole).is_some() => {
                        sink.binary = true;
                        Ok(())
                    }
                    Ok(()) => searcher.search_slice(matcher, &whole, &mut sink),
                    Err(e) => Err(e),
                }
            } else {
                searcher.search_reader(matcher, &mut reader, &mut sink)
            };
            let FileSink {
                lines,
                matched,
                binary,
                ..
            } = sink;
            if reader.cut_lines() > 0 && !binary {
                mine.found.cut_lines += reader.cut_lines();
                mine.found.cut_files += 1;
            }
            if searched.is_err() || binary || matched == 0 {
                return;
            }
            mine.found.files += 1;
            mine.found.lines += matched;
            for (line, text) in lines {
                mine.found.keep((rel.to_path_buf(), line), text, max);
            }
        }
    });
    if cancel.is_cancelled() {
        return Err(cancelled_error());
    }
    let found = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    let where_ = &scope.shown;
    let cut = format!("{}{}", cut_note(&found), scope.ignore_notes());
    if found.lines == 0 {
        let hint = skipped_hint(args.include_ignored);
        return Ok(format!(
            "No lines match `{}` in `{where_}`.{hint}{cut}",
            args.pattern
        ));
    }
    let mut out = format!(
        "{} in {} for `{}`:\n",
        count(found.lines, "matching line", "matching lines"),
        count(found.files, "file", "files"),
        args.pattern
    );
    for ((rel, line), text) in &found.kept {
        out.push_str(&format!("{}:{line}: {text}\n", scope.show(rel)));
    }
    if found.lines > found.kept.len() {
        out.push_str(&format!(
            "\n[{} more matching lines are not shown ({} in all). Narrow the pattern, the path or \
             the glob to see them.]",
            found.lines - found.kept.len(),
            found.lines
        ));
    }
    out.push_str(&cut);
    Ok(out)
}

/// The error of a search stopped by its call's cancellation (nobody waits for its result).
pub(crate) fn cancelled_error() -> ToolError {
    ToolError::failed(
        "the search was stopped before it finished: the call was cancelled (its time limit \
         passed or the run ended)",
    )
}

/// What the result says about lines searched only in part; empty when none were cut.
fn cut_note(found: &Found) -> String {
    if found.cut_lines == 0 {
        return String::new();
    }
    format!(
        "\n[Only the first {} KiB of {} longer than that were searched ({}); matches further \
         along them are not found. Use read_file to look at those lines.]",
        MAX_LINE_BYTES / 1024,
        count(found.cut_lines, "line", "lines"),
        count(found.cut_files, "file", "files"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_sink_keeps_only_its_room_and_counts_the_rest() {
        let matcher = RegexMatcher::new_line_matcher("match").expect("a valid pattern");
        let text: String = (1..=10_000).map(|i| format!("match {i}\n")).collect();
        let mut sink = FileSink {
            matcher: &matcher,
            lines: Vec::new(),
            room: Room::Known(2),
            matched: 0,
            binary: false,
        };
        SearcherBuilder::new()
            .line_number(true)
            .build()
            .search_slice(&matcher, text.as_bytes(), &mut sink)
            .expect("an in-memory search");
        assert_eq!(sink.matched, 10_000);
        assert_eq!(
            sink.lines,
            vec![(1, "match 1".to_owned()), (2, "match 2".to_owned())]
        );
    }

    #[test]
    fn room_is_what_files_sorted_before_leave() {
        let mut found = Found::new();
        for (file, line) in [("a", 1), ("a", 2), ("c", 1)] {
            found.keep((file.into(), line), String::new(), 3);
        }
        assert_eq!(found.room_for(Path::new("0"), 3), 3);
        assert_eq!(found.room_for(Path::new("b"), 3), 1);
        assert_eq!(found.room_for(Path::new("d"), 3), 0);
    }
}
