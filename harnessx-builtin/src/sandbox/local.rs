//! The host as a sandbox: commands run as the current user, file tools stay on the host.

use std::path::{Path, PathBuf};

use harnessx::{BoxFuture, Sandbox, SandboxError};

/// Runs commands on the host, as the current user, with `bash` from `PATH`.
///
/// It isolates nothing: it is the bash tool's engine when no other sandbox is bound. It does not
/// own a filesystem ([`filesystem_root`](Sandbox::filesystem_root) is `None`), so the file tools
/// stay on the host and keep their own `base_path`.
///
/// ```
/// use harnessx::Sandbox;
/// use harnessx_builtin::LocalSandbox;
/// let sandbox = LocalSandbox::new().with_working_dir("/tmp");
/// assert_eq!(sandbox.name(), "local");
/// assert!(sandbox.filesystem_root().is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct LocalSandbox {
    working_dir: Option<PathBuf>,
}

impl LocalSandbox {
    /// Commands run in the process's current directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Commands run in `dir` instead.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// The directory commands run in, when one was set.
    pub fn working_dir(&self) -> Option<&Path> {
        self.working_dir.as_deref()
    }
}

impl Sandbox for LocalSandbox {
    fn name(&self) -> &str {
        "local"
    }

    fn filesystem_root(&self) -> Option<&Path> {
        None
    }

    fn summary(&self) -> String {
        match &self.working_dir {
            Some(dir) => format!(
                "Commands run on the host as the current user, starting in {}.",
                dir.display()
            ),
            None => "Commands run on the host as the current user.".to_owned(),
        }
    }

    fn start(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            match &self.working_dir {
                Some(dir) if !dir.is_dir() => Err(SandboxError {
                    sandbox: "local".to_owned(),
                    reason: format!(
                        "its working directory {} does not exist or is not a directory; create \
                         it or give `LocalSandbox::with_working_dir` an existing directory",
                        dir.display()
                    ),
                }),
                _ => Ok(()),
            }
        })
    }

    fn command(&self, script: &str) -> Result<tokio::process::Command, SandboxError> {
        let mut command = tokio::process::Command::new("bash");
        command.arg("-c").arg(script);
        if let Some(dir) = &self.working_dir {
            command.current_dir(dir);
        }
        Ok(command)
    }
}
