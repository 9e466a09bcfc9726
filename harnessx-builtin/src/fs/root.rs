//! The containment layer: a model's path becomes a directory handle plus one name, opened
//! descriptor-relative and without following symbolic links when the tools have a root.
//!
//! With a root, a path is split into components; `..` and absolute paths outside the root are
//! refused; every directory component is opened with `openat(.., O_NOFOLLOW | O_DIRECTORY)`
//! relative to the handle of the one before (cap-fs-ext's `open_dir_nofollow`), and the final
//! component is opened, inspected or replaced relative to its parent's handle, never followed.
//! A symbolic link anywhere in the path is refused. Because each step holds a descriptor, a
//! directory swapped for a symbolic link while an operation runs is met as a link (refused) or
//! as the original directory (still inside the root), never as a path that leads outside.
//!
//! Out of scope, as the spec says: hard links to files outside the root, mount points inside
//! it, and another process moving a directory that is already open out of the root. Those need
//! an OS sandbox.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, Metadata, OpenOptions, OpenOptionsExt as _};
use harnessx::ToolError;
use rustix::fs::OFlags;

use super::write::not_a_regular_file;

/// A directory the tools are contained in.
#[derive(Debug)]
pub(crate) struct Jail {
    dir: Dir,
    host: PathBuf,
    /// The root as configured, when that differs from its canonical form (a path through a
    /// symbolic link such as macOS's `/tmp`): absolute paths under it are accepted too.
    alias: Option<PathBuf>,
    /// Absolute paths outside `host` are read as relative to the root (a sandbox's own view of
    /// its filesystem) instead of being refused.
    chroot: bool,
    /// Where the root appears inside a sandbox (`/workspace`): absolute paths below it are read
    /// relative to the root.
    mount_point: Option<PathBuf>,
    /// The root is `generate_file`'s output directory, not the workspace: errors say so.
    output: bool,
}

impl Jail {
    /// Opens the root directory, which must exist.
    pub(crate) fn open(path: &Path) -> io::Result<Jail> {
        let host = std::fs::canonicalize(path)?;
        let dir = Dir::open_ambient_dir(&host, ambient_authority())?;
        let alias = std::path::absolute(path).ok().filter(|p| *p != host);
        Ok(Jail {
            dir,
            host,
            alias,
            chroot: false,
            mount_point: None,
            output: false,
        })
    }

    /// Opens `generate_file`'s output directory, which must exist.
    pub(crate) fn open_output(path: &Path) -> io::Result<Jail> {
        let mut jail = Jail::open(path)?;
        jail.output = true;
        Ok(jail)
    }

    /// Opens a sandbox's filesystem root: absolute paths are the sandbox's own view, with the
    /// root at `mount_point` (or at `/` when there is none).
    pub(crate) fn open_sandbox(path: &Path, mount_point: Option<&Path>) -> io::Result<Jail> {
        let mut jail = Jail::open(path)?;
        jail.chroot = true;
        jail.mount_point = mount_point.map(Path::to_owned);
        Ok(jail)
    }

    /// The canonical host path of the root.
    pub(crate) fn host(&self) -> &Path {
        &self.host
    }

    fn parts(&self, raw: &str) -> Result<Vec<OsString>, ToolError> {
        let path = Path::new(raw);
        let in_mount = || {
            let mount = self.mount_point.as_deref()?;
            path.strip_prefix(mount).ok()
        };
        let rest = if !path.is_absolute() {
            path
        } else if let Ok(rest) = path.strip_prefix(&self.host) {
            rest
        } else if let Some(rest) = self
            .alias
            .as_deref()
            .and_then(|a| path.strip_prefix(a).ok())
        {
            rest
        } else if let Some(rest) = in_mount() {
            rest
        } else if self.chroot || path == Path::new("/") {
            path
        } else if self.output {
            return Err(ToolError::failed(format!(
                "`{raw}` is an absolute path, but downloads are written to the output directory \
                 `{}`. Give a file name relative to it, such as `report.md`.",
                self.host.display()
            )));
        } else {
            return Err(ToolError::failed(format!(
                "`{raw}` is outside the workspace root `{}`. Use a path relative to the root, \
                 such as `src/main.rs`.",
                self.host.display()
            )));
        };
        let mut parts = Vec::new();
        for component in rest.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_owned()),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                Component::ParentDir if self.output => {
                    return Err(ToolError::failed(format!(
                        "`{raw}` contains `..`, which is not allowed in a download's name. Give \
                         a file name inside the output directory, such as `report.md`."
                    )));
                }
                Component::ParentDir => {
                    return Err(ToolError::failed(format!(
                        "`{raw}` contains `..`, which is not allowed inside the workspace root. \
                         Use a path relative to the root without `..`."
                    )));
                }
            }
        }
        Ok(parts)
    }

    fn resolve(&self, raw: &str, create_parents: bool) -> Result<Target, ToolError> {
        let parts = self.parts(raw)?;
        let shown = show(&parts);
        let mut dir = self.dir.try_clone().map_err(|e| io_error(&shown, &e))?;
        let Some((last, parents)) = parts.split_last() else {
            return Ok(Target {
                parent: dir,
                name: None,
                shown,
                contained: true,
                host_path: None,
            });
        };
        for (i, part) in parents.iter().enumerate() {
            let so_far = show(&parts[..=i]);
            dir = match dir.open_dir_nofollow(part) {
                Ok(next) => next,
                Err(e) if e.kind() == io::ErrorKind::NotFound && create_parents => {
                    match dir.create_dir(part) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(io_error(&so_far, &e)),
                    }
                    dir.open_dir_nofollow(part)
                        .map_err(|e| component_error(&dir, part, &so_far, &shown, &e))?
                }
                Err(e) => return Err(component_error(&dir, part, &so_far, &shown, &e)),
            };
        }
        Ok(Target {
            parent: dir,
            name: Some(last.clone()),
            shown,
            contained: true,
            host_path: None,
        })
    }
}

/// Where the tools operate: inside a root, or on the host under the process's permissions.
#[derive(Debug, Clone)]
pub(crate) enum Root {
    /// Contained in a directory.
    Jail(Arc<Jail>),
    /// Host filesystem access; symbolic links are followed as the OS follows them.
    Host,
}

impl Root {
    /// Resolves a model's path to its parent directory handle and final name.
    ///
    /// With `create_parents`, missing parent directories are created (each one inside the root).
    pub(crate) fn resolve(&self, raw: &str, create_parents: bool) -> Result<Target, ToolError> {
        match self {
            Root::Jail(jail) => jail.resolve(raw, create_parents),
            Root::Host => resolve_host(raw, create_parents),
        }
    }
}

fn resolve_host(raw: &str, create_parents: bool) -> Result<Target, ToolError> {
    let shown = if raw.is_empty() {
        ".".to_owned()
    } else {
        raw.to_owned()
    };
    let path = Path::new(&shown);
    let open = |dir: &Path| {
        Dir::open_ambient_dir(dir, ambient_authority()).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ToolError::failed(format!(
                "the directory `{}` does not exist, so `{shown}` cannot be reached. Check the \
                 path with list_directory or glob and call again.",
                dir.display()
            )),
            _ => io_error(&dir.display().to_string(), &e),
        })
    };
    match path.file_name() {
        None => Ok(Target {
            parent: open(path)?,
            name: None,
            host_path: Some(path.to_owned()),
            shown,
            contained: false,
        }),
        Some(name) => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if create_parents {
                std::fs::create_dir_all(parent)
                    .map_err(|e| io_error(&parent.display().to_string(), &e))?;
            }
            Ok(Target {
                parent: open(parent)?,
                name: Some(name.to_owned()),
                host_path: Some(path.to_owned()),
                shown,
                contained: false,
            })
        }
    }
}

/// A resolved path: the handle of its parent directory and its final name.
#[derive(Debug)]
pub(crate) struct Target {
    /// The directory that holds the final component (the root itself when `name` is `None`).
    pub(crate) parent: Dir,
    /// The final component; `None` when the path names the root (or, on the host, a path such
    /// as `/` or `.` that has no final name).
    pub(crate) name: Option<OsString>,
    /// The path as shown to the model.
    pub(crate) shown: String,
    /// Whether symbolic links are refused.
    pub(crate) contained: bool,
    /// On the host, the path itself: the final component is then opened by path, following
    /// links as the OS does (a handle-relative open would confine links to the parent).
    host_path: Option<PathBuf>,
}

impl Target {
    /// The symbolic-link metadata of the final component; `None` when it does not exist.
    pub(crate) fn lstat(&self) -> Result<Option<Metadata>, ToolError> {
        let result = match &self.name {
            Some(name) => self.parent.symlink_metadata(name),
            None => self.parent.dir_metadata(),
        };
        match result {
            Ok(meta) => Ok(Some(meta)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&self.shown, &e)),
        }
    }

    /// Opens the final component for reading; never follows a symbolic link when contained.
    /// The file may be a directory: callers check its metadata. A FIFO, socket or device (or,
    /// on the host, a link to one) is refused: it is opened non-blocking, so a FIFO without a
    /// writer cannot hang the call, and checked through the opened handle.
    pub(crate) fn open_read(&self) -> Result<File, ToolError> {
        let Some(name) = &self.name else {
            return self.parent.open(".").map_err(|e| io_error(&self.shown, &e));
        };
        let file = match &self.host_path {
            Some(path) => std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(nonblocking())
                .open(path)
                .map(File::from_std),
            None => {
                let mut options = OpenOptions::new();
                options
                    .read(true)
                    .follow(FollowSymlinks::No)
                    .custom_flags(nonblocking());
                self.parent.open_with(name, &options)
            }
        }
        .map_err(|e| self.final_error(name, &e))?;
        regular_or_dir(file, &self.shown)
    }

    /// Opens the final component as a directory; never follows a symbolic link when contained.
    pub(crate) fn open_dir(&self) -> Result<Dir, ToolError> {
        let Some(name) = &self.name else {
            return self
                .parent
                .try_clone()
                .map_err(|e| io_error(&self.shown, &e));
        };
        let result = match &self.host_path {
            Some(path) => Dir::open_ambient_dir(path, ambient_authority()),
            None => self.parent.open_dir_nofollow(name),
        };
        result.map_err(|e| self.final_error(name, &e))
    }

    fn final_error(&self, name: &OsStr, e: &io::Error) -> ToolError {
        match self.parent.symlink_metadata(name) {
            Ok(meta) if meta.file_type().is_symlink() && self.contained => {
                symlink_refused(&self.shown, &self.shown)
            }
            Ok(meta) if meta.file_type().is_symlink() && e.kind() == io::ErrorKind::NotFound => {
                ToolError::failed(format!(
                    "`{}` is a symbolic link whose target does not exist. Use the path of a \
                     real file.",
                    self.shown
                ))
            }
            Ok(meta) if !meta.is_dir() && is_not_a_directory(e) => ToolError::failed(format!(
                "`{}` is a file, not a directory. Call read_file to read it.",
                self.shown
            )),
            _ => io_error(&self.shown, e),
        }
    }
}

/// `O_NONBLOCK` for [`custom_flags`](std::os::unix::fs::OpenOptionsExt::custom_flags): opening
/// a FIFO then returns at once instead of waiting for a writer. Reads of regular files and
/// directories are unaffected.
pub(crate) fn nonblocking() -> i32 {
    OFlags::NONBLOCK.bits().cast_signed()
}

/// Keeps `file` if it is a regular file or a directory; anything else (a FIFO, socket or
/// device) is refused, judged by the opened handle so a swap after a check cannot slip by.
fn regular_or_dir(file: File, shown: &str) -> Result<File, ToolError> {
    let kind = file
        .metadata()
        .map_err(|e| io_error(shown, &e))?
        .file_type();
    if kind.is_file() || kind.is_dir() {
        Ok(file)
    } else {
        Err(not_a_regular_file(shown))
    }
}

fn is_not_a_directory(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotADirectory
}

fn show(parts: &[OsString]) -> String {
    if parts.is_empty() {
        return ".".to_owned();
    }
    let parts: Vec<_> = parts.iter().map(|p| p.to_string_lossy()).collect();
    parts.join("/")
}

fn component_error(dir: &Dir, part: &OsStr, so_far: &str, shown: &str, e: &io::Error) -> ToolError {
    match dir.symlink_metadata(part) {
        Ok(meta) if meta.file_type().is_symlink() => symlink_refused(so_far, shown),
        Ok(meta) if !meta.is_dir() => ToolError::failed(format!(
            "`{so_far}` is a file, not a directory, so `{shown}` cannot exist. Check the path \
             with list_directory and call again."
        )),
        _ => io_error(shown, e),
    }
}

/// The error for a symbolic link met inside the root.
pub(crate) fn symlink_refused(link: &str, shown: &str) -> ToolError {
    let what = if link == shown {
        format!("`{shown}` is a symbolic link")
    } else {
        format!("`{shown}` goes through `{link}`, which is a symbolic link")
    };
    ToolError::failed(format!(
        "{what}, and symbolic links are refused inside the workspace root because they can lead \
         outside it. Use the path of the real file or directory instead."
    ))
}

/// An I/O error worded for the model, naming the path.
pub(crate) fn io_error(shown: &str, e: &io::Error) -> ToolError {
    match e.kind() {
        io::ErrorKind::NotFound => ToolError::failed(format!(
            "`{shown}` does not exist. Check the path with list_directory or glob and call again."
        )),
        io::ErrorKind::PermissionDenied => ToolError::failed(format!(
            "permission denied for `{shown}`: the process may not access it. Choose another path."
        )),
        _ => ToolError::failed(format!(
            "cannot access `{shown}`: {e}. Check the path and call again."
        )),
    }
}
