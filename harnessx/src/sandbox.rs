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

    /// A command that runs `script` with `bash -c` inside the sandbox.
    fn command(&self, script: &str) -> Result<tokio::process::Command, SandboxError>;
}
