//! Recursive removal of a directory tree without recursion: however deep a tree is (a write can
//! create thousands of levels), removing it uses a constant amount of stack and two directory
//! descriptors at a time.
//!
//! The walk is descriptor-relative and never follows a symbolic link: each subdirectory is
//! opened relative to its parent's handle with `O_NOFOLLOW`, and links are removed as links.
//! Going back up opens `..` of the current directory and checks that it is the very directory
//! (same device and inode) that was descended from; a tree moved by another process in the
//! middle of the removal stops it with an error instead of leading it outside the root.

use std::ffi::{OsStr, OsString};
use std::io;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use rustix::fs::{Mode, OFlags};

/// How often a directory is scanned again when entries keep appearing in it while it is being
/// emptied (another process writing into the tree); past that the removal stops with an error.
const MAX_SCANS: u32 = 4;

/// The identity of a directory: its device and inode.
type Ident = (u64, u64);

/// One directory on the way down: its name in its parent, its identity, and the subdirectories
/// still to remove.
struct Level {
    name: OsString,
    ident: Ident,
    pending: Vec<OsString>,
    scans: u32,
}

/// Removes the directory `name` in `parent` and everything below it.
///
/// # Errors
///
/// The first I/O error met (the tree is then partly removed), or an error of kind `Other` when
/// the tree changes underneath the removal in a way that would lead it elsewhere.
pub(crate) fn remove_tree(parent: &Dir, name: &OsStr) -> io::Result<()> {
    let mut current = parent.open_dir_nofollow(name)?;
    let mut levels = vec![Level {
        name: name.to_owned(),
        ident: ident(&current)?,
        pending: Vec::new(),
        scans: 0,
    }];
    loop {
        let Some(level) = levels.last_mut() else {
            return Ok(());
        };
        if let Some(child) = level.pending.pop() {
            match current.open_dir_nofollow(&child) {
                Ok(dir) => {
                    levels.push(Level {
                        name: child,
                        ident: ident(&dir)?,
                        pending: Vec::new(),
                        scans: 0,
                    });
                    current = dir;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                // No longer a directory (replaced by a file or a link): remove it as such.
                Err(_) if !is_dir_nofollow(&current, &child) => {
                    remove_entry(&current, &child)?;
                }
                Err(e) => return Err(e),
            }
            continue;
        }
        if level.scans < MAX_SCANS {
            level.scans += 1;
            level.pending = empty_files(&current)?;
            if !level.pending.is_empty() || level.scans == 1 {
                continue;
            }
        }
        // This directory holds nothing more: go up and remove it.
        let Some(done) = levels.pop() else {
            return Ok(());
        };
        match levels.last() {
            Some(up) => {
                let above = open_parent(&current, up.ident)?;
                drop(std::mem::replace(&mut current, above));
                current.remove_dir(&done.name)?;
            }
            None => {
                drop(current);
                return parent.remove_dir(&done.name);
            }
        }
    }
}

/// Removes every entry of `dir` that is not a directory and returns the names of the
/// directories, read whole before anything is removed.
fn empty_files(dir: &Dir) -> io::Result<Vec<OsString>> {
    let mut entries = Vec::new();
    for entry in dir.entries()? {
        let entry = entry?;
        let is_dir = entry.file_type()?.is_dir();
        entries.push((entry.file_name(), is_dir));
    }
    let mut dirs = Vec::new();
    for (name, is_dir) in entries {
        if is_dir {
            dirs.push(name);
        } else {
            remove_entry(dir, &name)?;
        }
    }
    Ok(dirs)
}

fn remove_entry(dir: &Dir, name: &OsStr) -> io::Result<()> {
    match dir.remove_file_or_symlink(name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn is_dir_nofollow(dir: &Dir, name: &OsStr) -> bool {
    dir.symlink_metadata(name).is_ok_and(|m| m.is_dir())
}

/// Opens `..` of `dir` and checks that it is the directory `expected` came from.
fn open_parent(dir: &Dir, expected: Ident) -> io::Result<Dir> {
    let fd = rustix::fs::openat(
        dir,
        "..",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let up = Dir::from(fd);
    if ident(&up)? == expected {
        Ok(up)
    } else {
        Err(moved())
    }
}

fn ident(dir: &Dir) -> io::Result<Ident> {
    let stat = rustix::fs::fstat(dir)?;
    Ok((stat.st_dev, stat.st_ino))
}

fn moved() -> io::Error {
    io::Error::other(
        "a directory of the tree was moved by another process while it was being deleted, so \
         the deletion stopped",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;

    fn open(path: &std::path::Path) -> Dir {
        Dir::open_ambient_dir(path, ambient_authority()).expect("a directory")
    }

    #[test]
    fn removes_a_mixed_tree_and_leaves_link_targets_alone() {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).expect("mkdir");
        std::fs::write(outside.join("keep.txt"), "keep").expect("write");
        let tree = tmp.path().join("tree");
        for dir in ["a/b/c", "a/d", "e"] {
            std::fs::create_dir_all(tree.join(dir)).expect("mkdir");
        }
        for file in ["f.txt", "a/g.txt", "a/b/c/h.txt", "a/d/i.txt"] {
            std::fs::write(tree.join(file), file).expect("write");
        }
        std::os::unix::fs::symlink(&outside, tree.join("a/b/link")).expect("symlink");
        remove_tree(&open(tmp.path()), OsStr::new("tree")).expect("removed");
        assert!(!tree.exists());
        assert_eq!(
            std::fs::read_to_string(outside.join("keep.txt")).expect("kept"),
            "keep"
        );
    }

    #[test]
    fn removes_a_tree_5000_levels_deep_holding_two_descriptors() {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let mut dir = open(tmp.path());
        for _ in 0..5_000 {
            dir.create_dir("x").expect("mkdir");
            dir = dir.open_dir("x").expect("open");
        }
        dir.write("leaf.txt", "leaf").expect("write");
        drop(dir);
        remove_tree(&open(tmp.path()), OsStr::new("x")).expect("removed");
        assert!(!tmp.path().join("x").exists());
    }
}
