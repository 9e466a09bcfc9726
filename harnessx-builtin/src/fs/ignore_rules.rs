//! The ignore rules of a contained search (`.ignore`, `.gitignore`, `.git/info/exclude`), read
//! by the tools themselves instead of by ripgrep's walker.
//!
//! The walker opens ignore files by path, following links and blocking: a `.gitignore` linked
//! to `/dev/zero` would be read without end, one linked outside the root would be applied (a
//! side channel on files outside it), and a FIFO of that name would hang the search. Here every
//! ignore file is opened relative to the searched directory's handle, never through a symbolic
//! link, non-blocking, and read only when it is a regular file of at most
//! [`MAX_IGNORE_FILE_BYTES`]; any other is not applied and the result says so.
//!
//! The rules are those of the walker with `require_git(false)`: in each directory `.ignore`,
//! `.gitignore` and, when `.git` is a directory there, `.git/info/exclude`; a match in a deeper
//! directory wins within a kind, and `.ignore` wins over `.gitignore`, which wins over the
//! exclude file. Hidden names are skipped unless a rule whitelists them.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt as _};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::root::nonblocking;

/// The largest ignore file applied; a larger one is not applied at all (a partial rule list
/// could un-ignore what its later lines ignore), and the result says so.
pub(crate) const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// How many ignore files that were not applied a result names; the rest are counted.
const MAX_NOTED: usize = 5;

/// The rules of one directory, one matcher per kind.
pub(crate) struct Level {
    ignore: Gitignore,
    gitignore: Gitignore,
    exclude: Gitignore,
}

impl Level {
    /// Reads the ignore files of the directory `rel` below `dir`. `None` when it has none.
    /// `shown` is the directory as shown to the model (`.` for the searched one).
    pub(crate) fn read(dir: &Dir, rel: &Path, shown: &str, notes: &Notes) -> Option<Level> {
        let file = |name: &str| read_rules(dir, &rel.join(name), &join_shown(shown, name), notes);
        let ignore = file(".ignore");
        let gitignore = file(".gitignore");
        let has_git = dir
            .symlink_metadata(rel.join(".git"))
            .is_ok_and(|m| m.is_dir());
        let exclude = if has_git {
            file(".git/info/exclude")
        } else {
            Gitignore::empty()
        };
        if ignore.is_empty() && gitignore.is_empty() && exclude.is_empty() {
            return None;
        }
        Some(Level {
            ignore,
            gitignore,
            exclude,
        })
    }
}

/// What one search learned about ignore files it did not apply.
#[derive(Default)]
pub(crate) struct Notes(Mutex<Vec<String>>);

impl Notes {
    fn push(&self, note: String) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(note);
    }

    /// A footer naming the ignore files that were not applied; empty when there were none.
    pub(crate) fn footer(&self) -> String {
        let mut notes = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if notes.is_empty() {
            return String::new();
        }
        notes.sort();
        let more = notes.len().saturating_sub(MAX_NOTED);
        notes.truncate(MAX_NOTED);
        let mut list = notes.join("; ");
        if more > 0 {
            list.push_str(&format!("; and {more} more"));
        }
        format!(
            "\n[Ignore files not applied: {list}. Ignore files are applied only when they are \
             regular files of at most {} MiB inside the workspace.]",
            MAX_IGNORE_FILE_BYTES >> 20
        )
    }
}

/// The ignore rules of one search: those of the directories above the searched one, and those
/// found during the walk.
pub(crate) struct IgnoreRules {
    /// The searched directory.
    dir: Dir,
    /// How the searched directory is shown (`.` for the root).
    shown: String,
    /// The rules of the directories from the root down to the searched one (not included),
    /// outermost first, each with the searched directory's path relative to it.
    ancestors: Vec<(PathBuf, Level)>,
    /// The rules of directories in the walk, by path relative to the searched directory
    /// (`""` for the searched directory itself); only directories that have rules.
    levels: RwLock<HashMap<PathBuf, Level>>,
    /// Some directory in the walk has rules (`levels` is not empty). Set after the insertion, and
    /// a directory's rules are read before the walk lists it, so an entry that sees `false` has
    /// no rules above it in the walk.
    any_levels: AtomicBool,
    pub(crate) notes: Notes,
}

impl IgnoreRules {
    /// Rules for a search of `dir` (shown as `shown`), below directories with `ancestors`.
    pub(crate) fn new(
        dir: Dir,
        shown: String,
        ancestors: Vec<(PathBuf, Level)>,
        notes: Notes,
    ) -> IgnoreRules {
        IgnoreRules {
            dir,
            shown,
            ancestors,
            levels: RwLock::new(HashMap::new()),
            any_levels: AtomicBool::new(false),
            notes,
        }
    }

    /// Reads the ignore files of the directory `rel` (relative to the searched directory),
    /// which the walk is about to enter.
    pub(crate) fn enter(&self, rel: &Path) {
        let shown = if rel.as_os_str().is_empty() {
            self.shown.clone()
        } else {
            join_shown(&self.shown, &rel.to_string_lossy())
        };
        if let Some(level) = Level::read(&self.dir, rel, &shown, &self.notes) {
            self.levels
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(rel.to_owned(), level);
            self.any_levels.store(true, Ordering::Release);
        }
    }

    /// Whether the entry at `rel` (relative to the searched directory) is searched.
    pub(crate) fn keep(&self, rel: &Path, is_dir: bool) -> bool {
        if self.ancestors.is_empty() && !self.any_levels.load(Ordering::Acquire) {
            // No rules anywhere above `rel` (most trees have none): only hidden names are skipped.
            return !is_hidden(rel.file_name());
        }
        let (mut ignore, mut gitignore, mut exclude) = (Match::None, Match::None, Match::None);
        let mut first = |level: &Level, matched: &dyn Fn(&Gitignore) -> Match<()>| {
            if ignore.is_none() {
                ignore = matched(&level.ignore);
            }
            if gitignore.is_none() {
                gitignore = matched(&level.gitignore);
            }
            if exclude.is_none() {
                exclude = matched(&level.exclude);
            }
        };
        {
            let levels = self.levels.read().unwrap_or_else(|p| p.into_inner());
            let mut dir = rel.parent();
            while let Some(d) = dir {
                if let Some(level) = levels.get(d) {
                    let below = rel.strip_prefix(d).unwrap_or(rel);
                    first(level, &|g| g.matched(below, is_dir).map(|_| ()));
                }
                dir = d.parent();
            }
        }
        for (prefix, level) in self.ancestors.iter().rev() {
            let path = prefix.join(rel);
            first(level, &|g| {
                g.matched_path_or_any_parents(&path, is_dir).map(|_| ())
            });
        }
        let decided = if ignore.is_none() {
            if gitignore.is_none() {
                exclude
            } else {
                gitignore
            }
        } else {
            ignore
        };
        match decided {
            Match::Ignore(()) => false,
            Match::Whitelist(()) => true,
            Match::None => !is_hidden(rel.file_name()),
        }
    }
}

fn is_hidden(name: Option<&OsStr>) -> bool {
    name.is_some_and(|n| n.as_bytes().first() == Some(&b'.'))
}

fn join_shown(dir: &str, name: &str) -> String {
    match dir {
        "." | "" => name.to_owned(),
        "/" => format!("/{name}"),
        dir => format!("{dir}/{name}"),
    }
}

/// The rules of the ignore file at `rel` below `dir`: empty when it does not exist, or when it
/// is not applied (noted in `notes`).
fn read_rules(dir: &Dir, rel: &Path, shown: &str, notes: &Notes) -> Gitignore {
    let bytes = match read_capped(dir, rel) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Gitignore::empty(),
        Err(why) => {
            notes.push(format!("`{shown}` {why}"));
            return Gitignore::empty();
        }
    };
    let mut builder = GitignoreBuilder::new("");
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // Like git and the walker: lines that are not UTF-8 are skipped, a BOM is dropped.
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        // An invalid glob skips its line only, as the walker does.
        let _ = builder.add_line(None, line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The contents of the regular file at `rel` below `dir`, opened without following a link and
/// without blocking. `Ok(None)` when nothing is there; `Err` says why it is not read.
fn read_capped(dir: &Dir, rel: &Path) -> Result<Option<Vec<u8>>, String> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .follow(FollowSymlinks::No)
        .custom_flags(nonblocking());
    let file = match dir.open_with(rel, &options) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(match dir.symlink_metadata(rel) {
                Ok(meta) if meta.file_type().is_symlink() => "is a symbolic link".to_owned(),
                _ => format!("cannot be opened ({e})"),
            });
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read ({e})"))?;
    if meta.is_dir() {
        // A directory of that name holds no rules, as for git.
        return Ok(None);
    }
    if !meta.is_file() {
        return Err("is not a regular file (a FIFO, socket or device)".to_owned());
    }
    let mut bytes = Vec::new();
    file.take(MAX_IGNORE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() as u64 > MAX_IGNORE_FILE_BYTES {
        return Err(format!(
            "is larger than {} MiB",
            MAX_IGNORE_FILE_BYTES >> 20
        ));
    }
    Ok(Some(bytes))
}
