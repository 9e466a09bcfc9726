//! Agent Skills: folders of instructions and resources behind the read-only `Skill` tool.
//! Through the `harnessx` facade: feature `skills`, as `harnessx::skills`.
//!
//! A skill is a folder in the [Agent Skills](https://agentskills.io/specification) layout: a
//! `SKILL.md` whose YAML front matter gives its `name` (1 to 64 of `a-z`, `0-9` and `-`, equal
//! to the folder's name) and `description` (at most 1024 characters), followed by Markdown
//! instructions, plus any resource files (`reference/api.md`, `scripts/fill.py`, ...). Other
//! front matter fields (`license`, `metadata`, ...) are kept and ignored.
//!
//! [`Skills::load`] reads a folder of skills (or one skill folder) and checks every one: a bad
//! folder is left out and reported as a [`SkillError`] naming it in [`Skills::diagnostics`]
//! ([`Skills::load_strict`] fails on it instead). [`register_skills`] (or
//! `Agent::builder().capability(skills)`: [`Skills`] is a
//! [`Capability`](harnessx_core::agent::Capability)) registers the `Skill` tool, whose
//! description lists each skill's name and description, so
//! the model knows what exists while the prompt stays the same from request to request. Calling
//! `Skill {"name": ..}` returns the instructions and lists the skill's files; `Skill {"name":
//! .., "file": "reference/api.md"}` reads one. Files are opened descriptor-relative without
//! following symbolic links, so a path can never leave the skill's folder. The tool is
//! read-only and never asks.
//!
//! ```
//! use harnessx::ToolRegistry;
//! use harnessx::skills::{SKILL_TOOL, Skills, register_skills};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = tempfile::tempdir()?;
//! std::fs::create_dir_all(root.path().join("release-notes/reference"))?;
//! std::fs::write(
//!     root.path().join("release-notes/SKILL.md"),
//!     "---\nname: release-notes\ndescription: Write release notes from merged changes.\n---\n\
//!      Group changes by component. See reference/style.md.\n",
//! )?;
//! std::fs::write(root.path().join("release-notes/reference/style.md"), "Use the past tense.")?;
//!
//! let skills = Skills::load(root.path())?;
//! assert_eq!(skills.names(), ["release-notes"]);
//! let registry = ToolRegistry::new();
//! register_skills(&registry, skills)?;
//! let tool = registry.get_tool(SKILL_TOOL).unwrap();
//! assert!(tool.description.contains("- release-notes: Write release notes from merged changes."));
//! # Ok(()) }
//! ```

mod agent;
mod files;
mod load;
mod tool;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::fs::Dir;
use serde_json::{Map, Value};

pub use load::MAX_SKILL_FILE_BYTES;
pub use tool::SKILL_TOOL;

use harnessx_core::error::RegistryError;
use harnessx_core::registry::ToolRegistry;
use harnessx_core::tool::ToolOptions;

/// The longest description a skill may have, in characters (the Agent Skills limit).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// One skill: its name, description and instructions, and a handle on its folder.
#[derive(Debug)]
pub struct Skill {
    name: String,
    description: String,
    body: String,
    fields: Map<String, Value>,
    folder: PathBuf,
    dir: Dir,
}

impl Skill {
    /// The name from the front matter (equal to the folder's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description from the front matter: what the skill does and when to use it.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The Markdown instructions after the front matter.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// Every front matter field, `name` and `description` included.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The folder it was loaded from.
    pub fn folder(&self) -> &Path {
        &self.folder
    }
}

/// A checked set of skills with unique names, sorted by name.
///
/// ```
/// use harnessx::skills::{SkillError, Skills};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let root = tempfile::tempdir()?;
/// let folder = root.path().join("Bad_Name");
/// std::fs::create_dir(&folder)?;
/// std::fs::write(folder.join("SKILL.md"), "---\nname: Bad_Name\ndescription: x\n---\n")?;
/// // The only folder is invalid, so nothing loads and the error is the folder's.
/// let err = Skills::load(root.path()).unwrap_err();
/// assert!(matches!(err, SkillError::InvalidName { .. }));
/// assert!(err.to_string().contains("Bad_Name"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Vec<Arc<Skill>>,
    diagnostics: Vec<Arc<SkillError>>,
}

impl Skills {
    /// Loads skills from `path`: the one skill there when it holds a `SKILL.md`, otherwise every
    /// valid skill folder in it whose name does not start with `.`. Files directly in `path` are
    /// ignored. A folder that is not a valid skill (an over-long description, a bad name, no
    /// `SKILL.md`, a name another folder already took) is left out and reported in
    /// [`diagnostics`](Self::diagnostics) and as a `tracing` warning, so one bad folder does not
    /// keep the others from loading; when no folder is valid, the first folder's error is
    /// returned. [`load_strict`](Self::load_strict) makes every bad folder an error.
    ///
    /// ```
    /// use harnessx::skills::{SkillError, Skills};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let root = tempfile::tempdir()?;
    /// for (name, description) in [("good", "Does a thing."), ("wordy", &"x".repeat(1068))] {
    ///     std::fs::create_dir(root.path().join(name))?;
    ///     std::fs::write(
    ///         root.path().join(name).join("SKILL.md"),
    ///         format!("---\nname: {name}\ndescription: {description}\n---\nBody."),
    ///     )?;
    /// }
    /// let skills = Skills::load(root.path())?;
    /// assert_eq!(skills.names(), ["good"]);
    /// assert!(matches!(*skills.diagnostics()[0], SkillError::DescriptionTooLong { chars: 1068, .. }));
    /// assert!(Skills::load_strict(root.path()).is_err());
    /// # Ok(()) }
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SkillError> {
        load::load_root(path.as_ref(), false)
    }

    /// Loads skills from `path` like [`load`](Self::load), but the first folder that is not a
    /// valid skill is an error.
    pub fn load_strict(path: impl AsRef<Path>) -> Result<Self, SkillError> {
        load::load_root(path.as_ref(), true)
    }

    /// The folders [`load`](Self::load) left out, each with the reason, in folder order.
    pub fn diagnostics(&self) -> &[Arc<SkillError>] {
        &self.diagnostics
    }

    /// Loads the given skill folders (each holding a `SKILL.md`).
    pub fn from_folders<P: AsRef<Path>>(
        folders: impl IntoIterator<Item = P>,
    ) -> Result<Self, SkillError> {
        let mut skills = Skills::default();
        for folder in folders {
            skills.push(load::load_folder(folder.as_ref())?)?;
        }
        Ok(skills)
    }

    /// Adds the skills (and diagnostics) of `other`; a name both have is a
    /// [`SkillError::Duplicate`].
    pub fn merge(mut self, other: Skills) -> Result<Self, SkillError> {
        for skill in other.skills {
            self.push(skill)?;
        }
        self.diagnostics.extend(other.diagnostics);
        Ok(self)
    }

    fn push(&mut self, skill: Arc<Skill>) -> Result<(), SkillError> {
        match self
            .skills
            .binary_search_by(|s| s.name.as_str().cmp(&skill.name))
        {
            Ok(i) => Err(SkillError::Duplicate {
                name: skill.name.clone(),
                first: self.skills[i].folder.clone(),
                second: skill.folder.clone(),
            }),
            Err(i) => {
                self.skills.insert(i, skill);
                Ok(())
            }
        }
    }

    /// The skill with this name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills
            .binary_search_by(|s| s.name.as_str().cmp(name))
            .ok()
            .map(|i| &*self.skills[i])
    }

    /// The skills' names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }

    /// The skills, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().map(|s| &**s)
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}

/// A skill folder that cannot be used, or a `Skill` tool that cannot be registered. Every
/// variant names the folder (or file) concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A folder or `SKILL.md` could not be read.
    #[error("cannot read `{path}`")]
    Read {
        /// What was being read.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A `SKILL.md` is not a regular file (a pipe, socket or device).
    #[error(
        "`{path}` is not a regular file (a pipe, socket or device); a skill's SKILL.md must be a \
         file"
    )]
    NotAFile {
        /// The SKILL.md.
        path: PathBuf,
    },
    /// A `SKILL.md` is larger than a skill's instructions may be.
    #[error(
        "`{path}` is {bytes} bytes, more than the {max} bytes a SKILL.md may have; move long \
         material into files of the skill folder the instructions point to"
    )]
    TooLarge {
        /// The SKILL.md.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The limit ([`MAX_SKILL_FILE_BYTES`]).
        max: u64,
    },
    /// A folder has no `SKILL.md`.
    #[error(
        "skill folder `{folder}` has no SKILL.md; add one whose front matter gives the skill's \
         `name` and `description`, or move the folder out of the skills directory"
    )]
    MissingSkillFile {
        /// The folder.
        folder: PathBuf,
    },
    /// The skills directory holds no skill folders.
    #[error(
        "`{path}` holds no skill folders; put each skill in its own folder there, with a SKILL.md"
    )]
    NoSkills {
        /// The directory.
        path: PathBuf,
    },
    /// `SKILL.md` is not UTF-8 text.
    #[error("`{folder}/SKILL.md` is not UTF-8 text; save it as UTF-8")]
    NotUtf8 {
        /// The folder.
        folder: PathBuf,
    },
    /// The front matter is missing or does not parse.
    #[error("`{folder}/SKILL.md` cannot be used: {reason}")]
    FrontMatter {
        /// The folder.
        folder: PathBuf,
        /// What is wrong with it, and how to fix it.
        reason: String,
    },
    /// `name` or `description` is missing from the front matter, or is not text.
    #[error("`{folder}/SKILL.md` has no `{field}` in its front matter; add `{field}: ...` as text")]
    MissingField {
        /// The folder.
        folder: PathBuf,
        /// `name` or `description`.
        field: &'static str,
    },
    /// The name uses characters or a length the format does not allow.
    #[error(
        "skill folder `{folder}` names its skill `{name}`, which is not a valid skill name: use 1 \
         to 64 lowercase letters, digits and single `-` between them, not first or last (such \
         as `pdf-forms`)"
    )]
    InvalidName {
        /// The folder.
        folder: PathBuf,
        /// The name as written.
        name: String,
    },
    /// The name differs from the folder's name.
    #[error(
        "skill folder `{folder}` names its skill `{name}`, but a skill's name must equal its \
         folder's name; rename the folder or the skill"
    )]
    NameMismatch {
        /// The folder.
        folder: PathBuf,
        /// The name in the front matter.
        name: String,
    },
    /// The description is empty.
    #[error(
        "skill folder `{folder}` has an empty `description`; say what the skill does and when to \
         use it"
    )]
    EmptyDescription {
        /// The folder.
        folder: PathBuf,
    },
    /// The description is longer than [`MAX_DESCRIPTION_CHARS`].
    #[error(
        "skill folder `{folder}` has a description of {chars} characters; shorten it to at most \
         1024 and move the details into the body of SKILL.md"
    )]
    DescriptionTooLong {
        /// The folder.
        folder: PathBuf,
        /// Its length in characters.
        chars: usize,
    },
    /// Two skills have the same name.
    #[error(
        "two skills are named `{name}`: `{first}` and `{second}`; rename one of them (and its \
         folder)"
    )]
    Duplicate {
        /// The name.
        name: String,
        /// The folder loaded first.
        first: PathBuf,
        /// The other folder.
        second: PathBuf,
    },
    /// The `Skill` tool could not be registered.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// The skills installed in one registry, kept in its shared state.
struct Installed(Mutex<Skills>);

impl Installed {
    fn get(&self) -> Skills {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, skills: Skills) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = skills;
    }
}

/// Registers the `Skill` tool on `registry` for `skills`. Called again, it adds the new skills
/// to those already there (re-registering the tool with the longer list).
///
/// Fails with [`SkillError::Duplicate`] when a name is already installed, and with
/// [`SkillError::Registry`] when the registry has another tool named `Skill`.
pub fn register_skills(registry: &ToolRegistry, skills: Skills) -> Result<(), SkillError> {
    let installed = registry
        .state::<Installed>()
        .filter(|_| registry.contains(SKILL_TOOL));
    let (merged, replace) = match &installed {
        Some(state) => (state.get().merge(skills)?, true),
        None => (skills, false),
    };
    registry.register_tool_with(
        tool::definition(merged.clone()),
        ToolOptions::new().replace(replace),
    )?;
    match installed {
        Some(state) => state.set(merged),
        None => registry.insert_state(Installed(Mutex::new(merged))),
    }
    Ok(())
}

/// The skills the `Skill` tool of `registry` offers (empty when it has none).
pub fn installed_skills(registry: &ToolRegistry) -> Skills {
    match registry.state::<Installed>() {
        Some(state) if registry.contains(SKILL_TOOL) => state.get(),
        _ => Skills::default(),
    }
}
