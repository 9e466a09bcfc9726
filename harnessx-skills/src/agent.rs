//! Skills as an agent [`Capability`]: `Agent::builder().capability(Skills::load(..)?)`.

use std::borrow::Cow;

use harnessx_core::agent::{Capability, CapabilityError};
use harnessx_core::registry::ToolRegistry;

use super::{Skills, register_skills};

/// Gives the agent the `Skill` tool (read-only, never asks) serving these skills' instructions
/// and files. Given more than once, the skills add up; a name given twice fails `build` with
/// [`SkillError::Duplicate`](crate::SkillError::Duplicate) as the source of
/// [`AgentError::Setup`](harnessx_core::AgentError::Setup).
///
/// ```
/// use harnessx::Agent;
/// use harnessx::model::TestModel;
/// use harnessx::skills::{Skills, installed_skills};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let root = tempfile::tempdir()?;
/// std::fs::create_dir(root.path().join("triage"))?;
/// std::fs::write(
///     root.path().join("triage/SKILL.md"),
///     "---\nname: triage\ndescription: Sort incoming bug reports.\n---\nLabel by component.",
/// )?;
/// let agent = Agent::builder()
///     .model(TestModel::new())
///     .capability(Skills::load(root.path())?)
///     .build()?;
/// assert!(agent.tools().contains("Skill"));
/// assert_eq!(installed_skills(agent.tools()).names(), ["triage"]);
/// # Ok(()) }
/// ```
impl Capability for Skills {
    fn name(&self) -> Cow<'_, str> {
        "skills".into()
    }

    fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
        Ok(register_skills(registry, self.clone())?)
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use harnessx_core::AgentError;

    use crate::{SkillError, Skills};

    #[test]
    fn a_name_given_twice_fails_the_build_naming_the_capability() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("triage")).unwrap();
        std::fs::write(
            root.path().join("triage/SKILL.md"),
            "---\nname: triage\ndescription: Sort bug reports.\n---\nLabel them.",
        )
        .unwrap();
        let skills = Skills::load(root.path()).unwrap();
        let err = harnessx_core::Agent::builder()
            .model(harnessx_core::model::TestModel::new())
            .capability(skills.clone())
            .capability(skills)
            .build()
            .unwrap_err();
        assert!(matches!(&err, AgentError::Setup { capability, .. } if capability == "skills"));
        assert_eq!(err.to_string(), "could not set up the agent's skills");
        let source = err.source().unwrap();
        assert!(matches!(
            source.downcast_ref::<SkillError>(),
            Some(SkillError::Duplicate { .. })
        ));
    }
}
