//! An isolating sandbox on bubblewrap (`bwrap`) that owns its filesystem: a host directory
//! mounted read-write at `/workspace`, the system read-only, no network unless asked.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harnessx::{BoxFuture, Sandbox, SandboxError};
use tokio::sync::OnceCell;

use crate::bash::Containment;

/// Where the sandbox's root is mounted unless [`BubblewrapSandbox::mount_point`] says otherwise.
const DEFAULT_MOUNT_POINT: &str = "/workspace";

/// Top-level system directories made visible read-only (or recreated as the same symlink, on
/// merged-`/usr` systems).
const SYSTEM_DIRS: [&str; 6] = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// The parts of `/etc` commands need (dynamic linker, users and groups for `id`/`ls -l`, name
/// resolution, TLS roots, time zone, Debian's alternatives). Everything else in `/etc`
/// (`shadow`, `ssh`, ...) stays out.
const ETC_ENTRIES: [&str; 22] = [
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "resolv.conf",
    "gai.conf",
    "protocols",
    "services",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "localtime",
    "timezone",
    "mime.types",
    "os-release",
    "gitconfig",
];

/// Paths a mount point may not take: the sandbox builds them itself.
const RESERVED: [&str; 12] = [
    "/", "/usr", "/etc", "/proc", "/dev", "/tmp", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
    "/libx32",
];

/// How long the start-up probe may take unless [`BubblewrapSandbox::start_timeout`] says
/// otherwise.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The `PATH` commands get inside the sandbox.
const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A real isolating sandbox on [bubblewrap](https://github.com/containers/bubblewrap) that owns
/// its filesystem.
///
/// Each command runs in fresh Linux namespaces (`--unshare-all`: user, mount, PID, IPC, UTS,
/// cgroup and network) and sees:
/// - the sandbox's root, a host directory, read-write at `/workspace` (the working directory and
///   `HOME`);
/// - `/usr`, `/bin`, `/lib*` and a selected part of `/etc` read-only;
/// - a private `/proc`, a minimal read-only `/dev` with an empty `/dev/shm`, and an empty tmpfs
///   `/tmp` (both gone when the command ends);
/// - everything else read-only: the sandbox's own `/` is remounted read-only once it is built,
///   so `/workspace`, `/tmp` and `/dev/shm` are the only writable places;
/// - no network unless [`share_network`](Self::share_network) is set;
/// - a clean environment (`PATH`, `HOME`, `TMPDIR`, `LANG`, `TERM` plus what the tool and
///   [`env`](Self::env) add): the host's variables and secrets do not leak in.
///
/// Commands run as an unprivileged user with no capabilities, whether the host process runs as
/// root or not: a new user namespace maps the sandbox user ([`DEFAULT_UID`](Self::DEFAULT_UID) and
/// [`DEFAULT_GID`](Self::DEFAULT_GID) unless [`user`](Self::user) says otherwise, never 0) to the host
/// process's own user (`--unshare-user --uid --gid`), every capability is dropped
/// (`--cap-drop ALL`), and where bwrap supports it (0.8 and later) no further user namespace can
/// be created inside (`--disable-userns`). So a command cannot remount a read-only bind
/// read-write, and files it creates in the root appear on the host owned by the host process's
/// user. The root must therefore be writable by that user (it is when the sandbox created it).
///
/// Nothing else of the host is visible. The command runs in a new session and dies with its
/// `bwrap` parent (`--new-session`, `--die-with-parent`), and the PID namespace ends every
/// process in it when the command exits, so signalling `bwrap`'s process group ends the whole
/// sandboxed tree, including processes that started their own session.
///
/// [`filesystem_root`](Sandbox::filesystem_root) is the host directory, so the file tools operate
/// inside it (with a 300-second limit; their `base_path` does not apply).
///
/// `bwrap` must be installed (Debian and Ubuntu: `apt-get install bubblewrap`) and the kernel must
/// allow user namespaces or the process must run as root. [`start`](Sandbox::start) checks both by
/// running a trivial command and says why the sandbox cannot start; the bash tool calls it before
/// the first command.
///
/// ```
/// use std::sync::Arc;
/// use harnessx::{Sandbox, ToolRegistry};
/// use harnessx_builtin::BubblewrapSandbox;
/// use harnessx_builtin::bash::{register_bash_tools, BashOptions};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // `BubblewrapSandbox::new(dir)` uses a directory of yours; this one is removed on drop.
/// let sandbox = BubblewrapSandbox::temporary()?.share_network(false);
/// assert!(sandbox.filesystem_root().is_some());
/// let registry = ToolRegistry::new();
/// // Bind before registering, so run_bash's description tells the model about the sandbox.
/// registry.set_sandbox(Some(Arc::new(sandbox)));
/// register_bash_tools(&registry, BashOptions::default())?;
/// assert!(registry.get_tool("run_bash").unwrap().description.contains("/workspace"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct BubblewrapSandbox {
    root: PathBuf,
    remove_on_drop: bool,
    mount_point: PathBuf,
    share_network: bool,
    program: PathBuf,
    read_only: Vec<(PathBuf, PathBuf)>,
    env: Vec<(String, String)>,
    uid: u32,
    gid: u32,
    start_timeout: Duration,
    started: OnceCell<()>,
    /// Whether `bwrap` understands `--disable-userns`; cleared by the probe when it does not.
    disable_userns: AtomicBool,
}

impl BubblewrapSandbox {
    /// The user id commands run as inside the sandbox unless [`user`](Self::user) says
    /// otherwise: never root, whoever the host process runs as.
    pub const DEFAULT_UID: u32 = 1000;

    /// The group id commands run as inside the sandbox unless [`user`](Self::user) says
    /// otherwise.
    pub const DEFAULT_GID: u32 = 1000;

    /// A sandbox whose filesystem is the host directory `root`, created if missing.
    ///
    /// # Errors
    /// The directory cannot be created or resolved.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref();
        std::fs::create_dir_all(root)?;
        Ok(Self::with_root(root.canonicalize()?, false))
    }

    /// A sandbox on a new, empty directory under the system's temporary directory, removed with
    /// everything in it when the sandbox is dropped.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn temporary() -> io::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!(
                "harnessx-sandbox-{}-{nanos:08x}-{n}",
                std::process::id()
            ));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(Self::with_root(dir.canonicalize()?, true)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn with_root(root: PathBuf, remove_on_drop: bool) -> Self {
        Self {
            root,
            remove_on_drop,
            mount_point: PathBuf::from(DEFAULT_MOUNT_POINT),
            share_network: false,
            program: PathBuf::from("bwrap"),
            read_only: Vec::new(),
            env: Vec::new(),
            uid: Self::DEFAULT_UID,
            gid: Self::DEFAULT_GID,
            start_timeout: PROBE_TIMEOUT,
            started: OnceCell::new(),
            disable_userns: AtomicBool::new(true),
        }
    }

    /// Shares the host's network with commands (default: no network at all).
    pub fn share_network(mut self, share: bool) -> Self {
        self.share_network = share;
        self
    }

    /// Mounts the root at another absolute path inside the sandbox (default `/workspace`).
    pub fn mount_point(mut self, path: impl Into<PathBuf>) -> Self {
        self.mount_point = path.into();
        self
    }

    /// Runs this `bwrap` binary (default: `bwrap` from `PATH`).
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = program.into();
        self
    }

    /// Makes the host path `host` visible read-only at `dest` inside the sandbox (a toolchain,
    /// a reference checkout).
    pub fn read_only(mut self, host: impl Into<PathBuf>, dest: impl Into<PathBuf>) -> Self {
        self.read_only.push((host.into(), dest.into()));
        self
    }

    /// Sets an environment variable for every command.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs commands as user `uid` and group `gid` inside the sandbox (default
    /// [`DEFAULT_UID`](Self::DEFAULT_UID) and [`DEFAULT_GID`](Self::DEFAULT_GID)). Either being 0 (root) is refused
    /// when the sandbox starts. Whatever the ids, they map to the host process's own user.
    ///
    /// ```
    /// use harnessx_builtin::BubblewrapSandbox;
    /// let sandbox = BubblewrapSandbox::temporary()?.user(65534, 65534);
    /// assert_eq!(sandbox.user_ids(), (65534, 65534));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn user(mut self, uid: u32, gid: u32) -> Self {
        self.uid = uid;
        self.gid = gid;
        self
    }

    /// The user and group ids commands run as inside the sandbox.
    pub fn user_ids(&self) -> (u32, u32) {
        (self.uid, self.gid)
    }

    /// How long starting may take: running a trivial command in a new sandbox (default 30 s).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// What keeps a command's processes inside the call: [`Containment::Cgroup`] where the
    /// host lets this process make cgroups (see [`run_command`](crate::bash::run_command)), else
    /// [`Containment::PidNamespace`]. Either way, a process that starts its own session inside
    /// the sandbox still dies with it: the PID namespace ends when its first process does.
    pub fn containment(&self) -> Containment {
        match Containment::host() {
            Containment::Cgroup => Containment::Cgroup,
            _ => Containment::PidNamespace,
        }
    }

    /// The host directory that is the sandbox's filesystem.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the root appears inside the sandbox.
    pub fn mount_point_path(&self) -> &Path {
        &self.mount_point
    }

    fn error(&self, reason: String) -> SandboxError {
        SandboxError {
            sandbox: "bubblewrap".to_owned(),
            reason,
        }
    }

    /// Checks the settings a command is built from: the mount point and the sandbox user.
    fn check_config(&self) -> Result<(), SandboxError> {
        if self.uid == 0 || self.gid == 0 {
            return Err(self.error(format!(
                "its user would be root inside (uid {}, gid {}): give `BubblewrapSandbox::user` \
                 ids other than 0 (for example {} and {})",
                self.uid,
                self.gid,
                Self::DEFAULT_UID,
                Self::DEFAULT_GID
            )));
        }
        self.check_mount_point()
    }

    fn check_mount_point(&self) -> Result<(), SandboxError> {
        let mp = &self.mount_point;
        let normal = mp.is_absolute()
            && mp
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        // Not a directory the sandbox builds, nor inside one that is read-only or special.
        let reserved = RESERVED
            .iter()
            .any(|r| mp == Path::new(r) || (!matches!(*r, "/" | "/tmp") && mp.starts_with(r)));
        if !normal || reserved {
            return Err(self.error(format!(
                "its mount point {} is not usable: give `mount_point` an absolute path without \
                 `.` or `..` that is not a system directory (for example /workspace)",
                mp.display()
            )));
        }
        Ok(())
    }

    /// The `bwrap` arguments that run `script` with `env` set.
    fn args(&self, script: &str, env: &[(&str, &str)]) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        let mut push = |items: &[&dyn AsRef<std::ffi::OsStr>]| {
            args.extend(items.iter().map(|i| i.as_ref().to_owned()));
        };
        push(&[&"--unshare-all"]);
        if self.share_network {
            push(&[&"--share-net"]);
        }
        // An unprivileged user without capabilities, even when the host process is root: without
        // these, bwrap run by root keeps every capability and a command can remount the
        // read-only binds read-write.
        let (uid, gid) = (self.uid.to_string(), self.gid.to_string());
        push(&[&"--unshare-user", &"--uid", &uid, &"--gid", &gid]);
        push(&[&"--cap-drop", &"ALL"]);
        if self.disable_userns.load(Ordering::Relaxed) {
            push(&[&"--disable-userns"]);
        }
        push(&[&"--die-with-parent", &"--new-session"]);
        push(&[&"--ro-bind", &"/usr", &"/usr"]);
        for dir in SYSTEM_DIRS {
            let path = Path::new(dir);
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(path) {
                        push(&[&"--symlink", &target, &dir]);
                    }
                }
                Ok(meta) if meta.is_dir() => push(&[&"--ro-bind", &dir, &dir]),
                _ => {}
            }
        }
        for entry in ETC_ENTRIES {
            let path = Path::new("/etc").join(entry);
            push(&[&"--ro-bind-try", &path, &path]);
        }
        push(&[
            &"--proc",
            &"/proc",
            &"--dev",
            &"/dev",
            &"--tmpfs",
            &"/dev/shm",
        ]);
        push(&[&"--tmpfs", &"/tmp"]);
        for (host, dest) in &self.read_only {
            push(&[&"--ro-bind", host, dest]);
        }
        push(&[&"--bind", &self.root, &self.mount_point]);
        // Once everything is mounted, the sandbox's own `/` (a tmpfs holding the mount points)
        // and `/dev` become read-only: only the root, `/tmp` and `/dev/shm` stay writable.
        push(&[&"--remount-ro", &"/dev", &"--remount-ro", &"/"]);
        push(&[&"--chdir", &self.mount_point]);
        push(&[&"--hostname", &"sandbox"]);
        push(&[&"--clearenv"]);
        let base = [
            ("PATH", SANDBOX_PATH),
            ("HOME", &*self.mount_point.to_string_lossy()),
            ("TMPDIR", "/tmp"),
            ("LANG", "C.UTF-8"),
            ("TERM", "dumb"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let extra = self.env.iter().cloned();
        let call = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        for (key, value) in base.into_iter().chain(extra).chain(call) {
            push(&[&"--setenv", &key, &value]);
        }
        push(&[&"--", &"bash", &"-c", &script]);
        args
    }

    /// Runs `true` in the sandbox and explains a failure. A `bwrap` older than 0.8 does not know
    /// `--disable-userns`: the probe then runs again without it.
    async fn probe(&self) -> Result<(), SandboxError> {
        self.check_config()?;
        match self.probe_once().await {
            Err(ProbeFailure::Stderr(_, stderr))
                if stderr.contains("--disable-userns")
                    && self.disable_userns.swap(false, Ordering::Relaxed) =>
            {
                self.probe_once().await.map_err(|f| self.explain(f))
            }
            result => result.map_err(|f| self.explain(f)),
        }
    }

    /// Runs `true` in the sandbox once.
    async fn probe_once(&self) -> Result<(), ProbeFailure> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(self.args("true", &[]))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = command.spawn().map_err(|e| {
            ProbeFailure::Spawn(match e.kind() {
                io::ErrorKind::NotFound => self.error(format!(
                    "bubblewrap (`{}`) is not installed or not on PATH. Install it (Debian and \
                 Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`; Arch: \
                 `pacman -S bubblewrap`) or point `BubblewrapSandbox::program` at the binary",
                    self.program.display()
                )),
                _ => self.error(format!(
                    "`{}` could not be run ({e}); check that it is an executable bubblewrap binary",
                    self.program.display()
                )),
            })
        })?;
        let output = tokio::time::timeout(self.start_timeout, child.wait_with_output())
            .await
            .map_err(|_| {
                ProbeFailure::Spawn(self.error(format!(
                    "`{}` did not run a trivial command within {:.1} s; check that it is \
                     bubblewrap and that the machine is not overloaded, or allow more time with \
                     `BubblewrapSandbox::start_timeout`",
                    self.program.display(),
                    self.start_timeout.as_secs_f64()
                )))
            })?
            .map_err(|e| {
                ProbeFailure::Spawn(self.error(format!(
                    "waiting for `{}` failed: {e}",
                    self.program.display()
                )))
            })?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        Err(ProbeFailure::Stderr(output.status, stderr))
    }

    /// The error a failed probe becomes.
    fn explain(&self, failure: ProbeFailure) -> SandboxError {
        let (status, stderr) = match failure {
            ProbeFailure::Spawn(error) => return error,
            ProbeFailure::Stderr(status, stderr) => (status, stderr),
        };
        let refused = [
            "namespace",
            "uid map",
            "Operation not permitted",
            "Permission denied",
            "mount proc",
        ]
        .iter()
        .any(|needle| stderr.contains(needle));
        self.error(if refused {
            format!(
                "the kernel refused to create the namespaces it needs (bwrap said: {stderr}). \
                 Allow user namespaces, which the sandbox needs even when the process runs as \
                 root (`sysctl -w kernel.unprivileged_userns_clone=1` on Debian, `sysctl -w \
                 user.max_user_namespaces=15000`, and on Ubuntu 23.10 or later `sysctl -w \
                 kernel.apparmor_restrict_unprivileged_userns=0`); inside a container, the \
                 container must allow namespaces (for Docker: `--security-opt \
                 seccomp=unconfined --security-opt apparmor=unconfined`, or `--privileged`)"
            )
        } else {
            format!("bwrap failed to run a trivial command ({status}): {stderr}")
        })
    }
}

/// Why one probe run failed: an error already explained, or what bwrap said.
enum ProbeFailure {
    Spawn(SandboxError),
    Stderr(std::process::ExitStatus, String),
}

impl Sandbox for BubblewrapSandbox {
    fn name(&self) -> &str {
        "bubblewrap"
    }

    fn filesystem_root(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn filesystem_mount_point(&self) -> Option<&Path> {
        Some(&self.mount_point)
    }

    fn summary(&self) -> String {
        let network = if self.share_network {
            "The network is shared with the host."
        } else {
            "There is no network access."
        };
        format!(
            "Commands run in an isolated sandbox. Its working directory {} (also `HOME`) is the \
             only place whose files persist between commands; `/tmp` is empty at the start of \
             every command; the system directories are read-only and the rest of the host is not \
             visible. Commands run as an unprivileged user without root rights (installing system \
             packages is not possible). {network}",
            self.mount_point.display()
        )
    }

    fn start(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            self.started.get_or_try_init(|| self.probe()).await?;
            Ok(())
        })
    }

    fn command(&self, script: &str) -> Result<tokio::process::Command, SandboxError> {
        self.command_with_env(script, &[])
    }

    fn command_with_env(
        &self,
        script: &str,
        env: &[(&str, &str)],
    ) -> Result<tokio::process::Command, SandboxError> {
        self.check_config()?;
        let mut command = tokio::process::Command::new(&self.program);
        command.args(self.args(script, env));
        Ok(command)
    }
}

impl Drop for BubblewrapSandbox {
    fn drop(&mut self) {
        if self.remove_on_drop {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}
