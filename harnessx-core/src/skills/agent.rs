//! Agent integration: `Agent::builder().skills(..)` and `agent.skills()`.

use super::{IntoSkills, Skills, installed_skills, register_skills};
use crate::agent::{Agent, AgentBuilder};

impl AgentBuilder {
    /// Gives the agent skills: the `Skill` tool (read-only, never asks) lists them and serves
    /// their instructions and files. Pass [`Skills`] or a path to load them from
    /// ([`Skills::load`]); the folders are read now and a bad one makes [`build`](Self::build)
    /// fail with [`AgentError::Skills`](crate::AgentError::Skills) naming it. Called more than
    /// once, the skills add up (a name given twice is an error). Feature `skills`, not on by
    /// default.
    ///
    /// ```
    /// use harnessx::Agent;
    /// use harnessx::model::TestModel;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let root = tempfile::tempdir()?;
    /// std::fs::create_dir(root.path().join("triage"))?;
    /// std::fs::write(
    ///     root.path().join("triage/SKILL.md"),
    ///     "---\nname: triage\ndescription: Sort incoming bug reports.\n---\nLabel by component.",
    /// )?;
    /// let agent = Agent::builder().model(TestModel::new()).skills(root.path()).build()?;
    /// assert!(agent.tools().contains("Skill"));
    /// assert_eq!(agent.skills().names(), ["triage"]);
    /// # Ok(()) }
    /// ```
    pub fn skills(self, skills: impl IntoSkills) -> Self {
        let loaded = skills.into_skills();
        self.defer_step(move |registry| Ok(register_skills(registry, loaded?)?))
    }
}

impl Agent {
    /// The skills the agent's `Skill` tool offers.
    pub fn skills(&self) -> Skills {
        installed_skills(self.tools())
    }
}

#[cfg(test)]
mod tests {
    use crate::AgentError;

    #[test]
    fn a_bad_folder_fails_the_build() {
        let root = tempfile::tempdir().unwrap();
        let err = crate::Agent::builder()
            .model(crate::model::TestModel::new())
            .skills(root.path())
            .build()
            .unwrap_err();
        assert!(matches!(
            err,
            AgentError::Skills(super::super::SkillError::NoSkills { .. })
        ));
        assert!(err.to_string().contains("holds no skill folders"), "{err}");
    }
}
