//! The directory walk shared by `glob` and `grep`: ripgrep's `ignore` walker, anchored on a
//! descriptor of the directory being searched, with `.gitignore` respected and links not
//! followed. Inside a root, the ignore files are read by [`IgnoreRules`], never by the walker.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt as _};
use harnessx::ToolError;
use ignore::{WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use super::Call;
use super::ignore_rules::{IgnoreRules, Level, Notes};
use super::root::{io_error, nonblocking};

/// What a search walks: a directory handle (or one file in it) and how results are shown.
pub(crate) struct Scope {
    /// The directory searched (the parent directory when searching one file).
    pub(crate) dir: Dir,
    /// What the walker is given: `/proc/self/fd/N` of `dir` where available, so the walk starts
    /// at the very directory that was resolved, whatever happens to its path meanwhile.
    walk_root: PathBuf,
    /// A single file in `dir` to search instead of the whole directory.
    file: Option<String>,
    /// The searched directory as shown to the model (`.` for the root).
    pub(crate) shown: String,
    /// Inside a root, unless ignored files are searched too: the ignore rules, read by the
    /// tools (contained, no-follow, non-blocking, capped) rather than by the walker.
    rules: Option<Arc<IgnoreRules>>,
    /// Hidden and ignored files are searched too.
    include_ignored: bool,
}

impl Scope {
    /// Resolves the search path (default: the root). A file is searched alone.
    pub(crate) fn resolve(
        call: &Call<'_>,
        path: Option<&str>,
        include_ignored: bool,
    ) -> Result<Scope, ToolError> {
        let raw = path.unwrap_or("");
        let target = call.root.resolve(raw, false)?;
        let meta = target
            .lstat()?
            .ok_or_else(|| io_error(&target.shown, &std::io::ErrorKind::NotFound.into()))?;
        let contained = target.contained;
        let single_file = meta.is_file() && target.name.is_some();
        let (dir, file, shown) = if single_file {
            let name = target
                .name
                .as_ref()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let parent_shown = match target.shown.rsplit_once('/') {
                Some((parent, _)) if !parent.is_empty() => parent.to_owned(),
                Some(_) => "/".to_owned(),
                None => ".".to_owned(),
            };
            (target.parent, Some(name), parent_shown)
        } else {
            (target.open_dir()?, None, target.shown.clone())
        };
        let walk_root = anchor(&dir, &shown, contained);
        let rules = if contained && !include_ignored && file.is_none() {
            let notes = Notes::default();
            let ancestors = ancestor_levels(call, &shown, &notes);
            let own = dir.try_clone().map_err(|e| io_error(&shown, &e))?;
            Some(Arc::new(IgnoreRules::new(
                own,
                shown.clone(),
                ancestors,
                notes,
            )))
        } else {
            None
        };
        Ok(Scope {
            dir,
            walk_root,
            file,
            shown,
            rules,
            include_ignored,
        })
    }

    /// What the result says about ignore files that were not applied (empty when none).
    pub(crate) fn ignore_notes(&self) -> String {
        self.rules
            .as_ref()
            .map_or_else(String::new, |r| r.notes.footer())
    }

    /// The path shown to the model for a file at `rel` below the searched directory.
    pub(crate) fn show(&self, rel: &Path) -> String {
        let rel = rel.to_string_lossy();
        match self.shown.as_str() {
            "." => rel.into_owned(),
            "/" => format!("/{rel}"),
            dir => format!("{dir}/{rel}"),
        }
    }

    /// Opens a file found by the walk, relative to the searched directory's handle and without
    /// following a symbolic link (cap-std also refuses any path that would leave the directory).
    /// Anything but a regular file (say a FIFO swapped in after the walk saw a file) is refused,
    /// opened non-blocking so it cannot hang the search. Returns the file and its length when
    /// opened.
    pub(crate) fn open(&self, rel: &Path) -> std::io::Result<(File, u64)> {
        let mut options = OpenOptions::new();
        options
            .read(true)
            .follow(FollowSymlinks::No)
            .custom_flags(nonblocking());
        let file = self.dir.open_with(rel, &options)?;
        let meta = file.metadata()?;
        if meta.is_file() {
            Ok((file, meta.len()))
        } else {
            Err(std::io::Error::other("not a regular file"))
        }
    }

    /// Walks the regular files below the searched directory on several threads, calling the
    /// visitor made by `make` (one per thread) with each file's path relative to the directory.
    ///
    /// The walk stops early once `cancel` fires.
    pub(crate) fn for_each_file<'s, F>(
        &'s self,
        cancel: &'s CancellationToken,
        mut make: impl FnMut() -> F,
    ) where
        F: FnMut(&Path) + Send + 's,
    {
        if let Some(file) = &self.file {
            if cancel.is_cancelled() {
                return;
            }
            let mut visit = make();
            visit(Path::new(file));
            return;
        }
        let mut builder = WalkBuilder::new(&self.walk_root);
        builder
            .follow_links(false)
            .require_git(false)
            .standard_filters(!self.include_ignored);
        if let Some(rules) = &self.rules {
            // Inside a root the walker reads no ignore file itself (it would open them by path,
            // following links and blocking); the rules are applied by `IgnoreRules`.
            builder.standard_filters(false);
            rules.enter(Path::new(""));
            let rules = Arc::clone(rules);
            let walk_root = self.walk_root.clone();
            builder.filter_entry(move |entry| {
                if entry.depth() == 0 {
                    return true;
                }
                let Some(rel) = below(entry.path(), &walk_root) else {
                    return true;
                };
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                let keep = rules.keep(rel, is_dir);
                if keep && is_dir {
                    rules.enter(rel);
                }
                keep
            });
        }
        let walk_root = &self.walk_root;
        builder.build_parallel().run(|| {
            let mut visit = make();
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                    && let Some(rel) = below(entry.path(), walk_root)
                {
                    visit(rel);
                }
                WalkState::Continue
            })
        });
    }
}

/// The part of `path`, found by the walk of `root`, below `root`: the walker builds every path
/// by joining names onto `root`, so cutting the bytes of `root` and one separator is enough
/// (a component-wise `strip_prefix` per entry showed up in profiles).
fn below<'p>(path: &'p Path, root: &Path) -> Option<&'p Path> {
    use std::os::unix::ffi::OsStrExt;
    let (path, root) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
    let rest = path.strip_prefix(root)?;
    let rest = if root.ends_with(b"/") {
        rest
    } else {
        rest.strip_prefix(b"/")?
    };
    Some(Path::new(std::ffi::OsStr::from_bytes(rest)))
}

/// A path for the walker that names exactly the directory `dir` holds open.
fn anchor(dir: &Dir, shown: &str, contained: bool) -> PathBuf {
    let fd_path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    if contained && fd_path.is_dir() {
        return fd_path;
    }
    if contained {
        // Without /proc the walk goes by path; files are still opened through `dir`.
        return std::fs::read_link(&fd_path).unwrap_or_else(|_| PathBuf::from(shown));
    }
    PathBuf::from(shown)
}

/// The ignore rules of every directory from the root down to (not including) `shown`, each
/// with the path of `shown` relative to it, outermost first. Read through the containment layer.
fn ancestor_levels(call: &Call<'_>, shown: &str, notes: &Notes) -> Vec<(PathBuf, Level)> {
    let parts: Vec<&str> = shown
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut out = Vec::new();
    for depth in 0..parts.len() {
        let ancestor = parts[..depth].join("/");
        let Ok(dir) = call
            .root
            .resolve(&ancestor, false)
            .and_then(|t| t.open_dir())
        else {
            continue;
        };
        let shown = if ancestor.is_empty() { "." } else { &ancestor };
        if let Some(level) = Level::read(&dir, Path::new(""), shown, notes) {
            out.push((PathBuf::from(parts[depth..].join("/")), level));
        }
    }
    out
}

/// Items one walker thread collects, added to the shared list when the thread's visitor is
/// dropped at the end of the walk (one lock per thread, not per item).
pub(crate) struct Batch<'a, T> {
    local: Vec<T>,
    shared: &'a Mutex<Vec<T>>,
}

impl<'a, T> Batch<'a, T> {
    /// A batch that empties into `shared`.
    pub(crate) fn new(shared: &'a Mutex<Vec<T>>) -> Self {
        Batch {
            local: Vec::new(),
            shared,
        }
    }

    /// Adds an item.
    pub(crate) fn push(&mut self, item: T) {
        self.local.push(item);
    }
}

impl<T> Drop for Batch<'_, T> {
    fn drop(&mut self) {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(&mut self.local);
    }
}

/// The schema of the `include_ignored` argument of `glob` and `grep`.
pub(crate) fn include_ignored_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "boolean",
        "description": "Also search hidden files and files ignored by .gitignore. Default false."
    })
}

/// What an empty search result adds when ignored and hidden files were skipped.
pub(crate) fn skipped_hint(include_ignored: bool) -> &'static str {
    if include_ignored {
        ""
    } else {
        " Hidden files and files ignored by .gitignore were skipped; pass `include_ignored: true` \
         to search them too."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_cuts_the_root_and_one_separator() {
        let root = Path::new("/proc/self/fd/7");
        assert_eq!(
            below(Path::new("/proc/self/fd/7/a/b.rs"), root),
            Some(Path::new("a/b.rs"))
        );
        assert_eq!(below(Path::new("/proc/self/fd/7"), root), None);
        assert_eq!(below(Path::new("/proc/self/fd/70/a"), root), None);
        assert_eq!(below(Path::new("/x/a"), root), None);
        assert_eq!(
            below(Path::new("/a/b"), Path::new("/")),
            Some(Path::new("a/b"))
        );
    }
}
