//! Atomic publication of a file: temp file in the same directory, write, fsync, rename.

use std::ffi::OsStr;
use std::io::{self, Write};

use cap_std::fs::{Dir, File, Permissions};
use cap_tempfile::TempFile;

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
    // Make the rename itself durable; a failure here leaves a complete file either way.
    if let Ok(handle) = dir.open(".") {
        let _ = handle.sync_all();
    }
    Ok(())
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
}
