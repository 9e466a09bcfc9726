//! Where shell commands run: the [`Sandbox`] trait the bash tool executes through.

use std::path::Path;

use crate::tool::BoxFuture;

/// Why a sandbox could not run a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {sandbox} sandbox cannot start: {reason}")]
pub struct SandboxError {
    /// Which sandbox.
    pub sandbox: String,
    /// What went wrong and what to do about it.
    pub reason: String,
}

/// An engine for the model's shell commands.
///
/// The bash tool asks the sandbox for a command that runs a script with `bash -c` inside it, then
/// owns the process: its process group, its time limit, its output. A sandbox that owns its
/// filesystem reports the host directory that backs it, and the file tools then operate inside
/// that directory (contained, whatever `base_path` says).
///
/// The bash tool starts the returned command as the leader of a new process group and ends a
/// command by signalling that group. A sandbox whose processes leave that group (a new session,
/// a new PID namespace) must make sure they die when the returned process dies.
pub trait Sandbox: Send + Sync + 'static {
    /// A short name for messages (`"local"`, `"bubblewrap"`).
    fn name(&self) -> &str;

    /// The host directory that is the sandbox's filesystem, when it owns one.
    fn filesystem_root(&self) -> Option<&Path>;

    /// Where [`filesystem_root`](Self::filesystem_root) appears inside the sandbox (for example
    /// `/workspace`), so the file tools can read the absolute paths the sandbox's own commands
    /// print. `None` (the default) means the root is the sandbox's `/`.
    fn filesystem_mount_point(&self) -> Option<&Path> {
        None
    }

    /// Prepares the sandbox; called before the first command. Must be cheap when already started.
    fn start(&self) -> BoxFuture<'_, Result<(), SandboxError>>;

    /// One or two sentences for the model: where its commands run and what they can reach. The
    /// bash tool puts them in its description when the sandbox is bound before the tool is
    /// registered.
    fn summary(&self) -> String {
        format!("Commands run in the `{}` sandbox.", self.name())
    }

    /// A command that runs `script` with `bash -c` inside the sandbox.
    fn command(&self, script: &str) -> Result<tokio::process::Command, SandboxError>;

    /// A command that runs `script` with `bash -c` inside the sandbox, with the variables in `env`
    /// set where the script runs.
    ///
    /// The default sets them on the command returned by [`command`](Self::command), which is right
    /// for a sandbox that passes its environment through. A sandbox that starts its commands with
    /// a clean environment overrides this to set them inside.
    fn command_with_env(
        &self,
        script: &str,
        env: &[(&str, &str)],
    ) -> Result<tokio::process::Command, SandboxError> {
        let mut command = self.command(script)?;
        command.envs(env.iter().copied());
        Ok(command)
    }
}
