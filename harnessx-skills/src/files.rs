//! Reading a skill's files without leaving its folder.
//!
//! The same approach as the builtin file tools' containment layer: the model's path is split
//! into components (absolute paths and `..` are refused), each directory is opened relative to
//! the handle of the one before with `O_NOFOLLOW | O_DIRECTORY` (cap-fs-ext's
//! `open_dir_nofollow`), and the file itself is opened relative to its parent's handle without
//! following a symbolic link. A link anywhere in the path is refused, so no path reaches
//! outside the folder, even if the folder changes while the call runs.

use std::ffi::OsStr;
use std::io::{self, Read as _};
use std::path::{Component, Path};

use cap_fs_ext::{DirExt as _, FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::fs::{Dir, OpenOptions};

use harnessx_core::output::ToolError;

/// The largest file the tool reads.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most files a listing shows.
pub(crate) const MAX_LISTED: usize = 200;
/// How deep a listing goes.
const MAX_DEPTH: usize = 8;

/// A file in a skill's folder, as listed to the model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Listed {
    /// The path relative to the folder, with `/` separators.
    pub(crate) path: String,
    /// Its size in bytes.
    pub(crate) bytes: u64,
}

/// Reads the text file at `raw` (relative to the skill folder `dir`).
pub(crate) fn read_text(dir: &Dir, skill: &str, raw: &str) -> Result<String, ToolError> {
    let parts = components(skill, raw)?;
    let Some((last, parents)) = parts.split_last() else {
        return Err(ToolError::invalid_arguments(format!(
            "`file` is empty. Call Skill with {{\"name\": \"{skill}\"}} to see its files, then \
             give one of their paths."
        )));
    };
    let mut current = dir.try_clone().map_err(|e| io_error(skill, raw, &e))?;
    for (i, part) in parents.iter().enumerate() {
        current = current
            .open_dir_nofollow(part)
            .map_err(|e| step_error(&current, part, &parts[..=i].join("/"), skill, raw, &e))?;
    }
    let mut options = OpenOptions::new();
    options.read(true).follow(FollowSymlinks::No);
    nonblocking(&mut options);
    let file = current
        .open_with(last, &options)
        .map_err(|e| step_error(&current, last, raw, skill, raw, &e))?;
    let meta = file.metadata().map_err(|e| io_error(skill, raw, &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "`{raw}` is a folder in skill `{skill}`, not a file. Call Skill with {{\"name\": \
             \"{skill}\"}} to see its files."
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::failed(format!(
            "`{raw}` in skill `{skill}` is not a regular file (a pipe, socket or device); only \
             files can be read."
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ToolError::failed(format!(
            "`{raw}` in skill `{skill}` is {} bytes, more than the {MAX_FILE_BYTES} bytes the \
             Skill tool reads. Use the skill's instructions without it.",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.into_std()
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(skill, raw, &e))?;
    String::from_utf8(bytes).map_err(|_| {
        ToolError::failed(format!(
            "`{raw}` in skill `{skill}` is not a text file (it is not UTF-8), so it cannot be \
             shown. Use the skill's instructions to decide how to use it."
        ))
    })
}

/// The model's path as components; absolute paths and `..` are refused.
fn components<'a>(skill: &str, raw: &'a str) -> Result<Vec<&'a str>, ToolError> {
    let path = Path::new(raw);
    if path.is_absolute() {
        return Err(ToolError::invalid_arguments(format!(
            "`{raw}` is an absolute path; give a path inside skill `{skill}`'s folder, relative \
             to it, such as `reference/api.md`."
        )));
    }
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str().unwrap_or_default()),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::invalid_arguments(format!(
                    "`{raw}` contains `..`; a skill's files are read from inside its folder \
                     only. Give a path relative to skill `{skill}`'s folder without `..`."
                )));
            }
        }
    }
    Ok(parts)
}

fn step_error(
    parent: &Dir,
    part: &str,
    so_far: &str,
    skill: &str,
    raw: &str,
    e: &io::Error,
) -> ToolError {
    if e.kind() == io::ErrorKind::NotFound
        && let Some(twin) = case_twin(parent, part)
    {
        // `so_far` ends with `part`; what follows it in `raw` is kept when `raw` spells the
        // same prefix, so the suggestion is a whole path the model can send back.
        let prefix = &so_far[..so_far.len() - part.len()];
        let rest = raw.strip_prefix(so_far).unwrap_or_default();
        return ToolError::failed(format!(
            "skill `{skill}` has no file `{raw}`; did you mean `{prefix}{twin}{rest}`? File \
             names are case-sensitive."
        ));
    }
    match parent.symlink_metadata(part) {
        Ok(meta) if meta.file_type().is_symlink() => ToolError::failed(format!(
            "`{so_far}` in skill `{skill}` is a symbolic link; links are not followed because \
             they can lead outside the skill's folder. Read the file it stands for by its own \
             path, if that is inside the skill."
        )),
        Ok(meta) if so_far != raw && !meta.is_dir() => ToolError::failed(format!(
            "`{so_far}` in skill `{skill}` is a file, not a folder, so `{raw}` does not exist. \
             Call Skill with {{\"name\": \"{skill}\"}} to see its files."
        )),
        _ => io_error(skill, raw, e),
    }
}

/// The entry of `dir` whose name differs from `name` only in ASCII case (`forms.md` for
/// `FORMS.md`), if there is exactly such an entry.
fn case_twin(dir: &Dir, name: &str) -> Option<String> {
    dir.entries()
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .find(|entry| entry != name && entry.eq_ignore_ascii_case(name))
}

fn io_error(skill: &str, raw: &str, e: &io::Error) -> ToolError {
    match e.kind() {
        io::ErrorKind::NotFound => ToolError::failed(format!(
            "skill `{skill}` has no file `{raw}`. Call Skill with {{\"name\": \"{skill}\"}} to \
             see its files."
        )),
        _ => ToolError::failed(format!(
            "cannot read `{raw}` in skill `{skill}`: {e}. Continue without it."
        )),
    }
}

/// Opening a FIFO without a writer returns at once instead of hanging the call.
#[cfg(unix)]
pub(crate) fn nonblocking(options: &mut OpenOptions) {
    use cap_std::fs::OpenOptionsExt as _;
    options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed());
}

#[cfg(not(unix))]
pub(crate) fn nonblocking(_: &mut OpenOptions) {}

/// The files in a skill's folder other than `SKILL.md`, sorted, without following links and
/// skipping names that start with `.`; at most [`MAX_LISTED`], and whether more were left out.
pub(crate) fn list(dir: &Dir) -> (Vec<Listed>, bool) {
    let mut found = Vec::new();
    let mut more = false;
    walk(dir, "", 0, &mut found, &mut more);
    found.sort_by(|a, b| a.path.cmp(&b.path));
    (found, more)
}

fn walk(dir: &Dir, prefix: &str, depth: usize, found: &mut Vec<Listed>, more: &mut bool) {
    let Ok(entries) = dir.entries() else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| !n.starts_with('.')) else {
            continue;
        };
        let path = format!("{prefix}{name}");
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if depth + 1 < MAX_DEPTH
                && let Ok(sub) = dir.open_dir_nofollow(OsStr::new(name))
            {
                walk(&sub, &format!("{path}/"), depth + 1, found, more);
            }
        } else if kind.is_file() && path != super::load::SKILL_FILE {
            if found.len() == MAX_LISTED {
                *more = true;
                return;
            }
            let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
            found.push(Listed { path, bytes });
        }
    }
}
