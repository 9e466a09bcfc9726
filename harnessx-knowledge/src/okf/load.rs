//! Reading a bundle: walking its directory, parsing each concept, resolving links.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::links::{self, Target};
use super::{Bundle, Concept, Diagnostic, DiagnosticKind, Link, OkfError, index};
use harnessx_core::frontmatter;

/// The largest concept file read.
pub(crate) const MAX_CONCEPT_BYTES: u64 = 4 * 1024 * 1024;
/// How deep the walk goes.
const MAX_DEPTH: usize = 32;
/// Files that are not concepts, at every level.
const RESERVED: [&str; 2] = ["index.md", "log.md"];

/// A concept file found by the walk.
struct Found {
    id: String,
    path: PathBuf,
}

pub(super) fn load(root: &Path) -> Result<Bundle, OkfError> {
    let read_root = |source| OkfError::Read {
        path: root.to_owned(),
        source,
    };
    let meta = std::fs::metadata(root).map_err(read_root)?;
    if !meta.is_dir() {
        return Err(read_root(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    let mut found = Vec::new();
    let mut diagnostics = Vec::new();
    walk(root, "", 0, &mut found, &mut diagnostics).map_err(read_root)?;

    let ids: BTreeSet<String> = found.iter().map(|f| f.id.clone()).collect();
    let mut concepts = BTreeMap::new();
    for file in found {
        if let Some(concept) = read_concept(&file, &ids, &mut diagnostics) {
            concepts.insert(concept.id.clone(), concept);
        }
    }
    let mut incoming: BTreeMap<String, Vec<Link>> = BTreeMap::new();
    for concept in concepts.values() {
        for link in &concept.links {
            incoming
                .entry(link.to.clone())
                .or_default()
                .push(link.clone());
        }
    }
    diagnostics.sort_by(|a, b| a.path.cmp(&b.path));
    let index =
        index::ConceptIndex::build(concepts.values()).map_err(|source| OkfError::Index {
            path: root.to_owned(),
            source,
        })?;
    Ok(Bundle {
        root: root.to_owned(),
        concepts,
        incoming,
        diagnostics,
        index,
    })
}

fn skipped(path: String, why: impl Into<String>) -> Diagnostic {
    Diagnostic {
        path,
        kind: DiagnosticKind::Skipped,
        message: why.into(),
    }
}

/// Collects the concept files under `dir` (its bundle path is `prefix`), sorted, skipping
/// names that start with `.`, reserved files and anything that is not a `.md` file. Symbolic
/// links are not followed (they could lead outside the bundle) and are reported.
fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    found: &mut Vec<Found>,
    diagnostics: &mut Vec<Diagnostic>,
) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(name) = entry.file_name().into_string() else {
            diagnostics.push(skipped(
                format!("{prefix}{}", entry.file_name().to_string_lossy()),
                "skipped: its name is not valid UTF-8; rename it",
            ));
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let shown = format!("{prefix}{name}");
        let kind = match entry.file_type() {
            Ok(kind) => kind,
            Err(e) => {
                diagnostics.push(skipped(shown, format!("skipped: cannot be read ({e})")));
                continue;
            }
        };
        if kind.is_symlink() {
            if name.ends_with(".md") || std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
                diagnostics.push(skipped(
                    shown,
                    "skipped: it is a symbolic link, which is not followed because it can lead \
                     outside the bundle; put the file itself in the bundle",
                ));
            }
        } else if kind.is_dir() {
            if depth + 1 >= MAX_DEPTH {
                diagnostics.push(skipped(
                    shown,
                    format!("skipped: folders nested deeper than {MAX_DEPTH} levels are not read"),
                ));
                continue;
            }
            if let Err(e) = walk(
                &entry.path(),
                &format!("{shown}/"),
                depth + 1,
                found,
                diagnostics,
            ) {
                diagnostics.push(skipped(shown, format!("skipped: cannot be read ({e})")));
            }
        } else if kind.is_file()
            && let Some(stem) = name.strip_suffix(".md")
            && !RESERVED.contains(&name.as_str())
            && !stem.is_empty()
        {
            found.push(Found {
                id: format!("{prefix}{stem}"),
                path: entry.path(),
            });
        }
    }
    Ok(())
}

fn read_concept(
    file: &Found,
    ids: &BTreeSet<String>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Concept> {
    let shown = format!("{}.md", file.id);
    let note = |diagnostics: &mut Vec<Diagnostic>, kind, message: String| {
        diagnostics.push(Diagnostic {
            path: shown.clone(),
            kind,
            message,
        });
    };
    match std::fs::metadata(&file.path) {
        Ok(meta) if meta.len() > MAX_CONCEPT_BYTES => {
            diagnostics.push(skipped(
                shown,
                format!(
                    "skipped: it is {} bytes, more than the {MAX_CONCEPT_BYTES} bytes a concept \
                     may have; split it into smaller concepts",
                    meta.len()
                ),
            ));
            return None;
        }
        Ok(_) => {}
        Err(e) => {
            diagnostics.push(skipped(shown, format!("skipped: cannot be read ({e})")));
            return None;
        }
    }
    let bytes = match std::fs::read(&file.path) {
        Ok(bytes) => bytes,
        Err(e) => {
            diagnostics.push(skipped(shown, format!("skipped: cannot be read ({e})")));
            return None;
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        diagnostics.push(skipped(
            shown,
            "skipped: it is not UTF-8 text; save it as UTF-8",
        ));
        return None;
    };
    let (front_matter, body, parsed) = match frontmatter::split(&text) {
        Ok(split) => (split.fields, split.body.to_owned(), true),
        Err(e) => {
            note(
                diagnostics,
                DiagnosticKind::FrontMatter,
                format!("{e}; the concept is loaded without front matter fields"),
            );
            let body = frontmatter::after_block(&text).to_owned();
            (serde_json::Map::new(), body, false)
        }
    };
    if parsed {
        match front_matter.get("type") {
            Some(Value::String(t)) if !t.trim().is_empty() => {}
            _ => note(
                diagnostics,
                DiagnosticKind::MissingType,
                "its front matter has no `type` (text), which OKF requires; add one such as \
                 `type: concept`"
                    .to_owned(),
            ),
        }
    }
    for key in [
        "title",
        "description",
        "resource",
        "timestamp",
        "status",
        "stale_after",
    ] {
        if front_matter.get(key).is_some_and(|v| !v.is_string()) {
            note(
                diagnostics,
                DiagnosticKind::InvalidField,
                format!("`{key}` should be text; it is ignored"),
            );
        }
    }
    match front_matter.get("tags") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(tags)) if tags.iter().all(Value::is_string) => {}
        Some(_) => note(
            diagnostics,
            DiagnosticKind::InvalidField,
            "`tags` should be a list of text (`tags: [a, b]`); the entries that are not text are \
             ignored"
                .to_owned(),
        ),
    }
    for problem in v02_problems(&front_matter) {
        note(diagnostics, DiagnosticKind::InvalidField, problem);
    }

    let mut links = Vec::new();
    for raw in links::extract(&body) {
        match links::resolve(&file.id, &raw.destination, ids) {
            Target::Concept(to) if to != file.id => {
                let link = Link {
                    from: file.id.clone(),
                    to,
                    text: raw.text,
                    kind: raw.kind,
                };
                if !links.contains(&link) {
                    links.push(link);
                }
            }
            Target::Missing(to) => note(
                diagnostics,
                DiagnosticKind::BrokenLink,
                format!(
                    "the link \"{}\" points to `{}`, but the bundle has no concept `{to}`",
                    raw.text, raw.destination
                ),
            ),
            Target::Outside => note(
                diagnostics,
                DiagnosticKind::BrokenLink,
                format!(
                    "the link \"{}\" points to `{}`, which is outside the bundle",
                    raw.text, raw.destination
                ),
            ),
            Target::Concept(_) | Target::Other => {}
        }
    }
    Some(Concept {
        id: file.id.clone(),
        front_matter,
        body,
        links,
    })
}

/// What is wrong with the shape of OKF v0.2's provenance, trust and lifecycle fields, each
/// worded as the fix. The concept keeps what can be read of them.
fn v02_problems(front_matter: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    let actor = |v: &Value| v.get("by").and_then(Value::as_str).is_some();
    if let Some(generated) = front_matter.get("generated")
        && !(generated.is_object() && actor(generated))
    {
        problems.push(
            "`generated` should be a mapping with `by` (and `at`), such as \
             `generated: { by: human:ana, at: 2026-06-20T09:00:00Z }`; it is ignored"
                .to_owned(),
        );
    }
    match front_matter.get("verified") {
        None => {}
        Some(one @ Value::Object(_)) if actor(one) => {}
        Some(Value::Array(list)) if list.iter().all(|v| v.is_object() && actor(v)) => {}
        Some(_) => problems.push(
            "`verified` should be a list of `{ by, at }` entries (or one such mapping); the \
             entries without `by` are ignored"
                .to_owned(),
        ),
    }
    if let Some(status) = front_matter.get("status").and_then(Value::as_str)
        && !["draft", "stable", "deprecated"]
            .iter()
            .any(|known| status.trim().eq_ignore_ascii_case(known))
    {
        problems.push(format!(
            "`status` is `{status}`; OKF knows `draft`, `stable` and `deprecated`, so the concept \
             is read as current"
        ));
    }
    if let Some(date) = front_matter.get("stale_after").and_then(Value::as_str)
        && super::iso_date(date).is_none()
    {
        problems.push(format!(
            "`stale_after` is `{date}`, not a date; write it as `YYYY-MM-DD` (it is ignored)"
        ));
    }
    match front_matter.get("sources") {
        None => {}
        Some(Value::Array(list))
            if list.iter().all(|v| {
                v.get("resource")
                    .and_then(Value::as_str)
                    .is_some_and(|r| !r.trim().is_empty())
            }) => {}
        Some(Value::Array(_)) => problems.push(
            "some `sources` entries have no `resource` (text), which OKF requires in each; they \
             are ignored"
                .to_owned(),
        ),
        Some(_) => problems.push(
            "`sources` should be a list of entries with a `resource` each; it is ignored"
                .to_owned(),
        ),
    }
    problems
}
