//! Atomic publication of a file: temp file in the same directory, write, fsync, rename.
//!
//! Between a tool's check of the target (absent, or a regular file) and the rename, another
//! process may put something else there. [`publish_new`] therefore never replaces anything (the
//! final step is `renameat2(RENAME_NOREPLACE)`, or a hard link where the filesystem lacks it),
//! and [`publish_over`] checks, right before the rename and without following links, that the
//! target is still the very regular file that was checked.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, File, MetadataExt, OpenOptions, Permissions};
use cap_tempfile::TempFile;
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

/// The error of [`publish_over`] when the target is no longer the file that was checked.
#[derive(Debug, thiserror::Error)]
#[error("the file was replaced by another process while the new version was being written")]
pub(crate) struct Swapped;

/// Whether `e` is [`publish_over`]'s [`Swapped`] error.
pub(crate) fn is_swapped(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Swapped>())
}

/// Writes a new version of `name` in `dir` so that readers see either the old file or the whole
/// new one, never a truncated file.
///
/// The content goes to an unnamed temporary file in the same directory (Linux `O_TMPFILE`, a
/// random name elsewhere), is flushed to disk, gets `permissions` (an existing file's mode), and
/// is renamed over `name`. If anything fails before the rename, the temporary file is removed and
/// `name` is untouched. A symbolic link at `name` is replaced by the file, never followed.
pub(crate) fn publish(
    dir: &Dir,
    name: &OsStr,
    permissions: Option<Permissions>,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut temp = TempFile::new(dir)?;
    fill(temp.as_file_mut())?;
    temp.as_file_mut().flush()?;
    if let Some(permissions) = permissions {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.as_file().sync_all()?;
    temp.replace(name)?;
    sync_dir(dir);
    Ok(())
}

/// Like [`publish`], but replaces `name` only if it is a regular file, and the same one from
/// the start of the write to the rename: the file is held (an `O_PATH` descriptor, opened
/// without following a link, so its inode cannot be reused meanwhile), the new version gets its
/// permissions, and right before the rename `name` is looked at again without following a link.
/// Anything else there by then (a symbolic link, a directory, another file) is left alone and
/// the error is [`Swapped`]. The window left is the one between that look and the rename
/// itself, which no rename call closes.
pub(crate) fn publish_over(
    dir: &Dir,
    name: &OsStr,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let held = match rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => File::from(fd),
        Err(Errno::NOENT) => return Err(io::Error::other(Swapped)),
        Err(e) => return Err(e.into()),
    };
    let checked = held.metadata()?;
    if !checked.is_file() {
        return Err(io::Error::other(Swapped));
    }
    let mut temp = TempFile::new(dir)?;
    fill(temp.as_file_mut())?;
    temp.as_file_mut().flush()?;
    temp.as_file().set_permissions(checked.permissions())?;
    temp.as_file().sync_all()?;
    let now = match dir.symlink_metadata(name) {
        Ok(now) => now,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(io::Error::other(Swapped)),
        Err(e) => return Err(e),
    };
    if !now.is_file() || now.dev() != checked.dev() || now.ino() != checked.ino() {
        return Err(io::Error::other(Swapped));
    }
    temp.replace(name)?;
    drop(held);
    sync_dir(dir);
    Ok(())
}

/// Creates `name` in `dir` with the content `fill` writes, atomically, and never replaces
/// anything: if `name` exists when the file is published (whatever it is, even a dangling
/// symbolic link), the error is [`io::ErrorKind::AlreadyExists`] and nothing is changed.
pub(crate) fn publish_new(
    dir: &Dir,
    name: &OsStr,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut temp = NamedTemp::create(dir)?;
    fill(&mut temp.file)?;
    temp.file.flush()?;
    temp.file.sync_all()?;
    match rustix::fs::renameat_with(dir, &temp.name, dir, name, RenameFlags::NOREPLACE) {
        Ok(()) => temp.published = true,
        // The filesystem has no RENAME_NOREPLACE: a hard link never replaces either.
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
            rustix::fs::linkat(dir, &temp.name, dir, name, AtFlags::empty())?;
        }
        Err(e) => return Err(e.into()),
    }
    drop(temp);
    sync_dir(dir);
    Ok(())
}

/// Writes `bytes` as a new file (see [`publish_new`]).
pub(crate) fn publish_new_bytes(dir: &Dir, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
    publish_new(dir, name, |file| file.write_all(bytes))
}

/// Writes `bytes` over the regular file `name` (see [`publish_over`]).
pub(crate) fn publish_over_bytes(dir: &Dir, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
    publish_over(dir, name, |file| file.write_all(bytes))
}

/// Makes a rename durable; a failure here leaves a complete file either way.
fn sync_dir(dir: &Dir) {
    if let Ok(handle) = dir.open(".") {
        let _ = handle.sync_all();
    }
}

/// A temporary file with a name of its own in the target directory, removed when dropped
/// unless it was renamed into place.
struct NamedTemp<'d> {
    dir: &'d Dir,
    name: OsString,
    file: File,
    published: bool,
}

impl<'d> NamedTemp<'d> {
    fn create(dir: &'d Dir) -> io::Result<NamedTemp<'d>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..100 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let name = OsString::from(format!(
                ".harnessx-{}-{}-{nanos}.tmp",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match dir.open_with(&name, &options) {
                Ok(file) => {
                    return Ok(NamedTemp {
                        dir,
                        name,
                        file,
                        published: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}

impl Drop for NamedTemp<'_> {
    fn drop(&mut self) {
        if !self.published {
            let _ = self.dir.remove_file(&self.name);
        }
    }
}

/// Writes `bytes` atomically (see [`publish`]).
pub(crate) fn publish_bytes(
    dir: &Dir,
    name: &OsStr,
    permissions: Option<Permissions>,
    bytes: &[u8],
) -> io::Result<()> {
    publish(dir, name, permissions, |file| file.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "old content\n").unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        let err = publish(&dir, OsStr::new("a.txt"), None, |file| {
            file.write_all(b"half of the new")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(),
            "old content\n"
        );
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsStr::new("a.txt").to_owned()]);
    }

    #[test]
    fn publish_replaces_the_whole_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "a much longer old content\n").unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        publish_bytes(&dir, OsStr::new("a.txt"), None, b"new").unwrap();
        assert_eq!(std::fs::read(tmp.path().join("a.txt")).unwrap(), b"new");
    }

    fn names(dir: &std::path::Path) -> Vec<OsString> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    }

    /// A workspace `ws/` holding `a.txt`, beside `outside/secret.txt`.
    fn workspace() -> (tempfile::TempDir, std::path::PathBuf, Dir) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(tmp.path().join("outside")).unwrap();
        std::fs::write(tmp.path().join("outside/secret.txt"), "secret\n").unwrap();
        let dir = Dir::open_ambient_dir(&ws, ambient_authority()).unwrap();
        (tmp, ws, dir)
    }

    #[test]
    fn publish_new_creates_the_file_and_leaves_no_temp_file() {
        let (_tmp, ws, dir) = workspace();
        publish_new_bytes(&dir, OsStr::new("a.txt"), b"new").unwrap();
        assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"new");
        assert_eq!(names(&ws), vec![OsString::from("a.txt")]);
    }

    #[test]
    fn publish_new_never_replaces_what_appeared_after_the_check() {
        let (tmp, ws, dir) = workspace();
        let secret = tmp.path().join("outside/secret.txt");
        // The swap happens while the content is written: after any check, before the rename.
        let err = publish_new(&dir, OsStr::new("link"), |file| {
            std::os::unix::fs::symlink(&secret, ws.join("link"))?;
            file.write_all(b"new")
        })
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert!(ws.join("link").symlink_metadata().unwrap().is_symlink());
        assert_eq!(std::fs::read(&secret).unwrap(), b"secret\n");

        let err = publish_new(&dir, OsStr::new("theirs.txt"), |file| {
            std::fs::write(ws.join("theirs.txt"), "theirs")?;
            file.write_all(b"new")
        })
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read(ws.join("theirs.txt")).unwrap(), b"theirs");

        let err = publish_new(&dir, OsStr::new("sub"), |file| {
            std::fs::create_dir(ws.join("sub"))?;
            file.write_all(b"new")
        })
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert!(ws.join("sub").is_dir());
        assert_eq!(
            names(&ws),
            ["link", "sub", "theirs.txt"].map(OsString::from).to_vec(),
            "no temporary file is left behind"
        );
    }

    #[test]
    fn publish_over_replaces_the_checked_file_keeping_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (_tmp, ws, dir) = workspace();
        std::fs::write(ws.join("a.txt"), "old").unwrap();
        std::fs::set_permissions(ws.join("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
        publish_over_bytes(&dir, OsStr::new("a.txt"), b"new").unwrap();
        assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"new");
        let mode = std::fs::metadata(ws.join("a.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    #[test]
    fn publish_over_refuses_a_target_swapped_after_the_check() {
        let (tmp, ws, dir) = workspace();
        let secret = tmp.path().join("outside/secret.txt");
        type Swap = Box<dyn Fn(&std::path::Path) -> io::Result<()>>;
        let link_outside: Swap = {
            let secret = secret.clone();
            Box::new(move |p| {
                std::fs::remove_file(p)?;
                std::os::unix::fs::symlink(&secret, p)
            })
        };
        let another_file: Swap = Box::new(|p| {
            std::fs::remove_file(p)?;
            std::fs::write(p, "another file")
        });
        let a_directory: Swap = Box::new(|p| {
            std::fs::remove_file(p)?;
            std::fs::create_dir(p)
        });
        let removed: Swap = Box::new(|p| std::fs::remove_file(p));
        for swap in [link_outside, another_file, a_directory, removed] {
            let _ = std::fs::remove_file(ws.join("a.txt"));
            let _ = std::fs::remove_dir(ws.join("a.txt"));
            std::fs::write(ws.join("a.txt"), "old").unwrap();
            let state = || {
                let path = ws.join("a.txt");
                let kind = std::fs::symlink_metadata(&path).map(|m| m.file_type()).ok();
                (
                    kind,
                    std::fs::read_link(&path).ok(),
                    std::fs::read(&path).ok(),
                )
            };
            let mut swapped = None;
            let err = publish_over(&dir, OsStr::new("a.txt"), |file| {
                swap(&ws.join("a.txt"))?;
                swapped = Some(state());
                file.write_all(b"new")
            })
            .unwrap_err();
            assert!(is_swapped(&err), "{err}");
            assert_eq!(
                Some(state()),
                swapped,
                "what was swapped in is left as it is"
            );
            assert_eq!(std::fs::read(&secret).unwrap(), b"secret\n");
        }
        assert!(
            ws.join("a.txt").symlink_metadata().is_err(),
            "the last swap removed it"
        );
    }
}
