//! Reading and checking skill folders.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::{MAX_DESCRIPTION_CHARS, Skill, SkillError, Skills};
use harnessx_core::frontmatter::{self, text_field};

/// The file that makes a folder a skill.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

/// The largest `SKILL.md` read, in bytes (1 MiB): instructions, not data.
pub const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;

/// Reads a folder's `SKILL.md`: opened without blocking (a FIFO without a writer does not hang
/// the load), a regular file only, at most [`MAX_SKILL_FILE_BYTES`].
fn read_skill_file(dir: &Dir, folder: &Path) -> Result<Vec<u8>, SkillError> {
    use std::io::Read as _;
    let path = folder.join(SKILL_FILE);
    let read_error = |source| SkillError::Read {
        path: path.clone(),
        source,
    };
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    super::files::nonblocking(&mut options);
    let file = match dir.open_with(SKILL_FILE, &options) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(SkillError::MissingSkillFile {
                folder: folder.to_owned(),
            });
        }
        Err(e) => return Err(read_error(e)),
    };
    let meta = file.metadata().map_err(read_error)?;
    if !meta.is_file() {
        return Err(SkillError::NotAFile { path });
    }
    if meta.len() > MAX_SKILL_FILE_BYTES {
        return Err(SkillError::TooLarge {
            path,
            bytes: meta.len(),
            max: MAX_SKILL_FILE_BYTES,
        });
    }
    let mut bytes = Vec::new();
    file.into_std()
        .take(MAX_SKILL_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    Ok(bytes)
}

/// Loads the skill at `path`, or every skill folder in it: with `strict`, the first bad folder
/// is the error; without, bad folders become diagnostics unless none is good.
pub(super) fn load_root(path: &Path, strict: bool) -> Result<Skills, SkillError> {
    let read = |source| SkillError::Read {
        path: path.to_owned(),
        source,
    };
    if path.join(SKILL_FILE).is_file() {
        let mut skills = Skills::default();
        skills.push(load_folder(path)?)?;
        return Ok(skills);
    }
    let mut folders: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(path).map_err(read)? {
        let entry = entry.map_err(read)?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        // A link to a skill folder is followed: the folder is the application's choice.
        // Containment applies inside each skill's folder.
        if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
            folders.push(entry.path());
        }
    }
    if folders.is_empty() {
        return Err(SkillError::NoSkills {
            path: path.to_owned(),
        });
    }
    folders.sort();
    if strict {
        return Skills::from_folders(folders);
    }
    let mut skills = Skills::default();
    let mut rejected = Vec::new();
    for folder in &folders {
        if let Err(e) = load_folder(folder).and_then(|skill| skills.push(skill)) {
            tracing::warn!(folder = %folder.display(), error = %e, "skill folder left out");
            rejected.push(e);
        }
    }
    if skills.is_empty() && !rejected.is_empty() {
        return Err(rejected.remove(0));
    }
    skills.diagnostics = rejected.into_iter().map(Arc::new).collect();
    Ok(skills)
}

/// Loads and checks one skill folder.
pub(super) fn load_folder(folder: &Path) -> Result<Arc<Skill>, SkillError> {
    let folder = folder.to_owned();
    let dir =
        Dir::open_ambient_dir(&folder, ambient_authority()).map_err(|source| SkillError::Read {
            path: folder.clone(),
            source,
        })?;
    let bytes = read_skill_file(&dir, &folder)?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(SkillError::NotUtf8 { folder });
    };
    let split = match frontmatter::split(&text) {
        Ok(split) => split,
        Err(e) => {
            return Err(SkillError::FrontMatter {
                folder,
                reason: e.to_string(),
            });
        }
    };
    let Some(name) = text_field(&split.fields, "name") else {
        return Err(SkillError::MissingField {
            folder,
            field: "name",
        });
    };
    if !valid_name(&name) {
        return Err(SkillError::InvalidName { folder, name });
    }
    if folder_name(&folder).as_deref() != Some(name.as_str()) {
        return Err(SkillError::NameMismatch { folder, name });
    }
    let Some(description) = text_field(&split.fields, "description") else {
        return Err(SkillError::MissingField {
            folder,
            field: "description",
        });
    };
    let description = description.trim().to_owned();
    if description.is_empty() {
        return Err(SkillError::EmptyDescription { folder });
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(SkillError::DescriptionTooLong { folder, chars });
    }
    Ok(Arc::new(Skill {
        name,
        description,
        body: split.body.trim().to_owned(),
        fields: split.fields,
        folder,
        dir,
    }))
}

/// `^[a-z0-9-]{1,64}$`, neither starting nor ending with `-` and without `--`.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The folder's own name (resolving `.` and `..` first).
fn folder_name(folder: &Path) -> Option<String> {
    let name = match folder.file_name() {
        Some(name) => name.to_owned(),
        None => std::fs::canonicalize(folder).ok()?.file_name()?.to_owned(),
    };
    name.into_string().ok()
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn names_follow_the_pattern() {
        for good in ["a", "pdf-forms", "x1", &"a".repeat(64), "a-b-c"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            "PDF",
            "pdf_forms",
            "pdf forms",
            "ünï",
            &"a".repeat(65),
            "a/b",
            ".",
            "-",
            "-pdf",
            "pdf-",
            "pdf--forms",
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
