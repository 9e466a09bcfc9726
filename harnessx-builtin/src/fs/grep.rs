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
        links are not followed. Long lines are shown as a preview around the match. Results are \
        capped; a footer says how many more matched.",
    schema,
    concurrent: true,
    read_only: true,
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

/// What the walker threads found: the first `max` matches in sort order, and counts of all.
struct Found {
    kept: BTreeMap<Key, String>,
    lines: usize,
    files: usize,
}

impl Found {
    fn new() -> Self {
        Found {
            kept: BTreeMap::new(),
            lines: 0,
            files: 0,
        }
    }

    fn add(&mut self, key: Key, text: String, max: usize) {
        self.lines += 1;
        if self.kept.len() < max {
            self.kept.insert(key, text);
        } else if let Some(last) = self.kept.last_key_value().map(|(k, _)| k.clone())
            && key < last
        {
            self.kept.remove(&last);
            self.kept.insert(key, text);
        }
    }

    fn merge(&mut self, other: &mut Found, max: usize) {
        let lines = self.lines + other.lines;
        for (key, text) in std::mem::take(&mut other.kept) {
            self.add(key, text, max);
        }
        self.lines = lines;
        self.files += other.files;
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

/// Collects one file's matching lines; a file found to be binary is dropped whole.
struct FileSink<'m> {
    matcher: &'m RegexMatcher,
    lines: Vec<(u64, String)>,
    binary: bool,
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
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

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("grep", args)?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| {
            ToolError::invalid_arguments(format!(
                "`pattern` is not a valid regular expression: {e}. Escape special characters \
                 such as ( ) [ ] {{ }} . * + ? with a backslash to match them literally, and call \
                 again."
            ))
        })?;
    let glob = args
        .glob
        .as_deref()
        .map(|g| PathGlob::new(g, "glob"))
        .transpose()?;
    let scope = Scope::resolve(call, args.path.as_deref())?;
    let max = call.options.max_search_results;
    let shared = Mutex::new(Found::new());
    scope.for_each_file(args.include_ignored, || {
        let mut mine = ThreadFound {
            found: Found::new(),
            shared: &shared,
            max,
        };
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let (matcher, glob, scope) = (&matcher, glob.as_ref(), &scope);
        move |rel: &Path| {
            if glob.is_some_and(|g| !g.is_match(rel)) {
                return;
            }
            let Ok(file) = scope.open(rel) else {
                return;
            };
            let mut sink = FileSink {
                matcher,
                lines: Vec::new(),
                binary: false,
            };
            if searcher
                .search_file(matcher, &file.into_std(), &mut sink)
                .is_err()
                || sink.binary
                || sink.lines.is_empty()
            {
                return;
            }
            mine.found.files += 1;
            for (line, text) in sink.lines {
                mine.found.add((rel.to_path_buf(), line), text, max);
            }
        }
    });
    let found = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    let where_ = &scope.shown;
    if found.lines == 0 {
        let hint = skipped_hint(args.include_ignored);
        return Ok(format!(
            "No lines match `{}` in `{where_}`.{hint}",
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
    Ok(out)
}
