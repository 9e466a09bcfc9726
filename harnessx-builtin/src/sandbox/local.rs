//! The host as a sandbox: commands run as the current user, file tools stay on the host.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use harnessx::{BoxFuture, Sandbox, SandboxError};

use crate::bash::Containment;

/// Runs commands on the host, as the current user, with `bash` from `PATH`.
///
/// It isolates nothing: it is the bash tool's engine when no other sandbox is bound. It does not
/// own a filesystem ([`filesystem_root`](Sandbox::filesystem_root) is `None`), so the file tools
/// stay on the host and keep their own `base_path`.
///
/// What keeps a command's processes inside the call is reported by
/// [`containment`](Self::containment): each command's own cgroup where the host allows it (see
/// [`run_command`](crate::bash::run_command)); else, with [`with_supervisor`](Self::with_supervisor),
/// a child-subreaper supervisor process per command; else only the process group, which
/// `setsid cmd &` or a daemon's double fork leaves (such processes then outlive the call).
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
    supervisor: Option<(PathBuf, Vec<OsString>)>,
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

    /// Runs every command under a supervisor: `program args... bash -c <script>`, where the
    /// program calls [`supervise`](crate::bash::supervise) (the `harnessx-supervisor` binary
    /// this crate builds, or the application's own binary given
    /// [`SUPERVISOR_FLAG`](crate::bash::SUPERVISOR_FLAG)). The supervisor is a child subreaper:
    /// it ends every process the command started, even those that left its process group, so
    /// nothing outlives the call on hosts without usable cgroups.
    ///
    /// ```
    /// use harnessx_builtin::LocalSandbox;
    /// use harnessx_builtin::bash::Containment;
    /// let sandbox = LocalSandbox::new().with_supervisor("/usr/local/bin/harnessx-supervisor", None::<&str>);
    /// assert!(matches!(sandbox.containment(), Containment::Cgroup | Containment::Subreaper));
    /// ```
    pub fn with_supervisor<S: Into<OsString>>(
        mut self,
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        self.supervisor = Some((program.into(), args.into_iter().map(Into::into).collect()));
        self
    }

    /// What keeps the processes of a command run through this sandbox inside the call (with
    /// [`RunLimits::use_cgroup`](crate::bash::RunLimits::use_cgroup) left on):
    /// [`Containment::Cgroup`] when this host lets the process make cgroups, else
    /// [`Containment::Subreaper`] with a supervisor, else [`Containment::ProcessGroup`].
    pub fn containment(&self) -> Containment {
        match (Containment::host(), &self.supervisor) {
            (Containment::Cgroup, _) => Containment::Cgroup,
            (_, Some(_)) => Containment::Subreaper,
            (other, None) => other,
        }
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
            if let Some((program, _)) = &self.supervisor
                && program.components().count() > 1
                && !program.is_file()
            {
                return Err(SandboxError {
                    sandbox: "local".to_owned(),
                    reason: format!(
                        "its supervisor {} does not exist; build it (`cargo build -p \
                         harnessx-builtin --bin harnessx-supervisor`) or give \
                         `LocalSandbox::with_supervisor` the path of a program that calls \
                         `harnessx_builtin::bash::supervise`",
                        program.display()
                    ),
                });
            }
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
        let mut command = match &self.supervisor {
            Some((program, args)) => {
                let mut command = tokio::process::Command::new(program);
                command.args(args).arg("bash");
                command
            }
            None => tokio::process::Command::new("bash"),
        };
        command.arg("-c").arg(script);
        if let Some(dir) = &self.working_dir {
            command.current_dir(dir);
        }
        Ok(command)
    }
}
