//! The host as a sandbox: commands run as the current user, file tools stay on the host.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use harnessx::{BoxFuture, Sandbox, SandboxError};

use crate::bash::{Containment, ProcessLimit};

/// Runs commands on the host, as the current user, with `bash` from `PATH`.
///
/// It isolates nothing: it is the bash tool's engine when no other sandbox is bound. It does not
/// own a filesystem ([`filesystem_root`](Sandbox::filesystem_root) is `None`), so the file tools
/// stay on the host and keep their own `base_path`.
///
/// What keeps a command's processes inside the call is reported by
/// [`containment`](Self::containment): each command's own cgroup where the host allows it (see
/// [`run_command`](crate::bash::run_command)); else a child-subreaper supervisor process per
/// command — the one given to [`with_supervisor`](Self::with_supervisor), or else the
/// `harnessx-supervisor` binary found on its own (see [`find_supervisor`]); else only the process
/// group, which `setsid cmd &` or a daemon's double fork leaves (such processes then outlive the
/// call). Install the supervisor on hosts without usable cgroups with
/// `cargo install harnessx-builtin --features bash --bin harnessx-supervisor`. A supervisor also
/// ends its command when this process dies, even by SIGKILL; without one, the next start does
/// ([`reap_orphans`](crate::bash::reap_orphans)).
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
    /// [`Containment::Subreaper`] with a supervisor (given, or found), else
    /// [`Containment::ProcessGroup`].
    pub fn containment(&self) -> Containment {
        match Containment::host() {
            Containment::Cgroup => Containment::Cgroup,
            _ if self.supervisor().is_some() => Containment::Subreaper,
            other => other,
        }
    }

    /// What bounds the number of processes of a command run through this sandbox (with
    /// [`RunLimits::use_cgroup`](crate::bash::RunLimits::use_cgroup) left on): the cgroup's
    /// `pids.max` where the host has it, else `RLIMIT_NPROC` for a user other than root, else
    /// the supervisor when there is one, else nothing.
    ///
    /// ```
    /// use harnessx_builtin::LocalSandbox;
    /// use harnessx_builtin::bash::ProcessLimit;
    /// let sandbox = LocalSandbox::new().with_supervisor("/usr/local/bin/harnessx-supervisor", None::<&str>);
    /// assert_ne!(sandbox.process_limit(), ProcessLimit::None);
    /// ```
    pub fn process_limit(&self) -> ProcessLimit {
        match ProcessLimit::host() {
            ProcessLimit::None if self.supervisor().is_some() => ProcessLimit::Supervisor,
            other => other,
        }
    }

    /// The supervisor commands run under: the one given, else — on a host without cgroup
    /// tracking — the one [`find_supervisor`] finds (looked up once per process).
    fn supervisor(&self) -> Option<(PathBuf, Vec<OsString>)> {
        if let Some(given) = &self.supervisor {
            return Some(given.clone());
        }
        if Containment::host() == Containment::Cgroup {
            return None;
        }
        static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
        FOUND
            .get_or_init(|| {
                find_supervisor(
                    std::env::var_os(SUPERVISOR_ENV).as_deref(),
                    std::env::current_exe().ok().as_deref(),
                    std::env::var_os("PATH").as_deref(),
                )
            })
            .clone()
            .map(|program| (program, Vec::new()))
    }
}

/// The error for a `HARNESSX_SUPERVISOR` that names no executable file (`None` when it does, or
/// is empty).
fn unusable_env(named: &std::ffi::OsStr) -> Option<SandboxError> {
    if named.is_empty() || find_supervisor(Some(named), None, None).is_some() {
        return None;
    }
    Some(SandboxError {
        sandbox: "local".to_owned(),
        reason: format!(
            "{SUPERVISOR_ENV} names {}, which is not an executable file; point it at the \
             harnessx-supervisor binary or unset it",
            Path::new(named).display()
        ),
    })
}

/// The environment variable naming the supervisor program [`find_supervisor`] uses first.
pub const SUPERVISOR_ENV: &str = "HARNESSX_SUPERVISOR";

/// Finds the `harnessx-supervisor` program for a [`LocalSandbox`] on a host without cgroup
/// tracking, when none was given with [`LocalSandbox::with_supervisor`]: the path in
/// `HARNESSX_SUPERVISOR` (`env`), else `harnessx-supervisor` beside the running executable
/// (`exe`; or one directory up, where cargo puts a package's binaries beside its test
/// executables in `deps/`), else the first one on `PATH`. Only executable regular files count.
///
/// ```
/// use harnessx_builtin::find_supervisor;
/// assert_eq!(find_supervisor(None, None, None), None);
/// ```
pub fn find_supervisor(
    env: Option<&std::ffi::OsStr>,
    exe: Option<&Path>,
    path: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    const NAME: &str = "harnessx-supervisor";
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if let Some(env) = env.filter(|e| !e.is_empty()) {
        return Some(PathBuf::from(env)).filter(|p| executable(p));
    }
    let beside = exe.and_then(Path::parent).into_iter().flat_map(|dir| {
        [Some(dir.join(NAME)), dir.parent().map(|up| up.join(NAME))]
            .into_iter()
            .flatten()
    });
    let on_path = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(NAME));
    beside.chain(on_path).find(|p| executable(p))
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
            if let Some(error) = std::env::var_os(SUPERVISOR_ENV).and_then(|v| unusable_env(&v)) {
                return Err(error);
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
        let mut command = match &self.supervisor() {
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

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn program(path: &Path, mode: u32) -> PathBuf {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path.to_owned()
    }

    #[test]
    fn the_supervisor_is_found_by_env_then_beside_the_executable_then_on_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let named = program(&root.join("custom/sup"), 0o755);
        let beside = program(&root.join("target/debug/harnessx-supervisor"), 0o755);
        let on_path = program(&root.join("bin/harnessx-supervisor"), 0o755);
        let exe = root.join("target/debug/deps/suite-123");
        let path = std::env::join_paths([root.join("nowhere"), root.join("bin")]).expect("PATH");

        // The environment wins, and only an executable file counts there.
        let found = find_supervisor(Some(named.as_os_str()), Some(&exe), Some(&path));
        assert_eq!(found, Some(named.clone()));
        let plain = program(&root.join("custom/plain"), 0o644);
        assert_eq!(
            find_supervisor(Some(plain.as_os_str()), Some(&exe), Some(&path)),
            None
        );
        // Beside the executable, or one directory up (cargo's `deps/`).
        assert_eq!(
            find_supervisor(None, Some(&exe), Some(&path)),
            Some(beside.clone())
        );
        // Else on PATH; relative PATH entries are ignored.
        assert_eq!(find_supervisor(None, None, Some(&path)), Some(on_path));
        let relative = OsStr::new("bin");
        assert_eq!(find_supervisor(None, None, Some(relative)), None);
        assert_eq!(find_supervisor(None, None, None), None);
    }

    #[test]
    fn a_supervisor_variable_naming_no_program_is_refused_by_name() {
        assert!(unusable_env(OsStr::new("")).is_none());
        let error = unusable_env(OsStr::new("/nonexistent/sup")).expect("refused");
        assert_eq!(
            error.to_string(),
            "the local sandbox cannot start: HARNESSX_SUPERVISOR names /nonexistent/sup, which \
             is not an executable file; point it at the harnessx-supervisor binary or unset it"
        );
    }
}
