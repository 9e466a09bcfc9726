//! `glob`: the files whose paths match a glob pattern, found with ripgrep's walker.

use std::path::Path;
use std::sync::Mutex;

use globset::{GlobBuilder, GlobMatcher};
use harnessx::ToolError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::grep::cancelled_error;
use super::text::count;
use super::walk::{Batch, Scope, include_ignored_schema, skipped_hint};
use super::{Call, Spec, object_schema, parse_args};

pub(crate) const SPEC: Spec = Spec {
    name: "glob",
    description: "Find files by name with a glob pattern, such as `**/*.rs` or `src/**/test_*.py`. \
        A pattern without `/` matches file names at any depth (`*.md`); a pattern with `/` \
        matches paths relative to `path` (default: the workspace root). `*` stays within one \
        directory, `**` crosses directories, `{a,b}` gives alternatives. Files ignored by \
        .gitignore and hidden files are skipped unless `include_ignored` is true; symbolic links \
        are not followed. Results are sorted and capped; a footer says how many more matched.",
    schema,
    concurrent: true,
    run,
};

fn schema() -> Value {
    object_schema(
        json!({
            "pattern": {"type": "string", "description": "The glob pattern."},
            "path": {
                "type": ["string", "null"],
                "description": "The directory to search. Default: the workspace root."
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
    #[serde(default)]
    include_ignored: bool,
}

/// A compiled glob that matches either a file name or a relative path.
pub(crate) struct PathGlob {
    matcher: GlobMatcher,
    by_name: bool,
}

impl PathGlob {
    /// Compiles `pattern` for the argument `field`.
    pub(crate) fn new(pattern: &str, field: &str) -> Result<PathGlob, ToolError> {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                ToolError::invalid_arguments(format!(
                    "`{field}` is not a valid glob pattern: {e}. Fix the pattern (for example \
                     `**/*.rs`) and call again."
                ))
            })?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
            by_name: !pattern.contains('/'),
        })
    }

    /// Whether the file at `rel` matches.
    pub(crate) fn is_match(&self, rel: &Path) -> bool {
        if self.by_name {
            rel.file_name().is_some_and(|n| self.matcher.is_match(n))
        } else {
            self.matcher.is_match(rel)
        }
    }
}

fn run(call: &Call<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args("glob", args)?;
    let glob = PathGlob::new(&args.pattern, "pattern")?;
    let scope = Scope::resolve(call, args.path.as_deref(), args.include_ignored)?;
    let found = Mutex::new(Vec::new());
    scope.for_each_file(&call.cancel, || {
        let mut batch = Batch::new(&found);
        let glob = &glob;
        move |rel: &Path| {
            if glob.is_match(rel) {
                batch.push(rel.to_path_buf());
            }
        }
    });
    if call.cancel.is_cancelled() {
        return Err(cancelled_error());
    }
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    let total = found.len();
    let max = call.options.max_search_results;
    if total > max {
        // Only the first `max` paths in order are shown: select them, then sort those.
        found.select_nth_unstable(max);
        found.truncate(max);
    }
    found.sort_unstable();
    let where_ = &scope.shown;
    if total == 0 {
        let hint = skipped_hint(args.include_ignored);
        return Ok(format!(
            "No files match `{}` in `{where_}`.{hint}{}",
            args.pattern,
            scope.ignore_notes()
        ));
    }
    let mut out = format!(
        "{} `{}` in `{where_}`:\n",
        count(total, "file matches", "files match"),
        args.pattern
    );
    for rel in &found {
        out.push_str(&scope.show(rel));
        out.push('\n');
    }
    if total > max {
        out.push_str(&format!(
            "\n[{} more files matched and are not shown ({total} in all). Narrow the pattern or \
             the path to see them.]",
            total - max
        ));
    }
    out.push_str(&scope.ignore_notes());
    Ok(out)
}
