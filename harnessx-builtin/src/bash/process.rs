//! Running one command: its process group, its time limit, its output, and ending it.
//!
//! The command is started through a [`Sandbox`] as the leader of a new process group, with stdin
//! closed and stdout and stderr on one pipe (so they interleave as in a terminal). The group is
//! what gets signalled: on a timeout or a cancellation it gets SIGTERM, then SIGKILL after a
//! grace period.
//!
//! Background processes: a non-interactive bash keeps `cmd &` jobs in its process group. When the
//! main process exits, output is still read until the pipe closes or a short drain window passes
//! (a background job such as `sleep 100 &` keeps the pipe open forever), and then whatever is
//! left in the group is ended (SIGTERM, SIGKILL after the grace period). So a command never hangs
//! on a background child and never leaves processes behind; `run_bash` is not a way to start
//! daemons that outlive the call.
//!
//! If the future is dropped while the command runs (the engine stopped waiting and aborted the
//! handler), the group gets SIGTERM at once and SIGKILL after the grace period from a background
//! task.
//!
//! Processes that leave the group: a process group only holds processes that stay in it, and
//! `setsid cmd &` or a daemon's double fork leaves it. So each command also runs in its own
//! cgroup when the host allows it ([`Containment::Cgroup`](super::Containment::Cgroup)): every
//! signal above also goes to every process in the cgroup, SIGKILL goes through `cgroup.kill`,
//! and the cgroup is removed when it is empty. The cgroup's `pids.max` bounds how many
//! processes the command may have ([`RunLimits::max_processes`]); without a cgroup limit a
//! non-root process gets `RLIMIT_NPROC` instead (see [`ProcessLimit`](super::ProcessLimit)).
//! Without a cgroup only the process group is tracked, unless the sandbox contains its commands
//! itself ([`BubblewrapSandbox`](crate::BubblewrapSandbox)'s PID namespace, or a
//! [`LocalSandbox`](crate::LocalSandbox) with a supervisor).
//! [`Containment::host`](super::Containment::host) says what this host gives, and
//! [`CommandOutcome::containment`] what a command got.
//!
//! None of this runs when this process is killed with SIGKILL: a command it runs directly then
//! lives on until [`reap_orphans`](super::reap_orphans) at the next start ends it, found by its
//! owner's name in [`COMMAND_OWNER_ENV`](super::COMMAND_OWNER_ENV) and in its cgroup's name.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use harnessx::{Sandbox, SandboxError};
use rustix::process::{Pid, Signal, getuid, kill_process_group, test_kill_process_group};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::Child;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::capture::{CapturedOutput, OutputCapture};
use super::cgroup::CommandCgroup;
use super::containment::{self, Containment};
use super::owner::{COMMAND_OWNER_ENV, Owner};
use super::procfs::live_member_of;

/// The variables every command gets, so pagers and credential prompts never wait for input.
///
/// ```
/// assert!(harnessx_builtin::bash::COMMAND_ENV.contains(&("GIT_TERMINAL_PROMPT", "0")));
/// ```
pub const COMMAND_ENV: [(&str, &str); 3] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// How long one command may run and how much of its output is kept.
///
/// ```
/// use harnessx_builtin::bash::RunLimits;
/// use std::time::Duration;
/// let limits = RunLimits { timeout: Duration::from_secs(5), ..RunLimits::default() };
/// assert_eq!(limits.kill_grace, Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLimits {
    /// The command is stopped when it has run this long.
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// After the main process exits, how long output is still read while a background child
    /// keeps the pipe open.
    pub drain: Duration,
    /// How many bytes of output are kept (head and tail); the rest is counted.
    pub max_output_bytes: usize,
    /// How many processes (threads included) the command may have at once (default
    /// [`DEFAULT_MAX_PROCESSES`]); a fork past it fails. What enforces it depends on the host:
    /// see [`ProcessLimit`](super::ProcessLimit).
    pub max_processes: u32,
    /// Run the command in its own cgroup when the host allows it (default `true`). `false`
    /// leaves only the process group and `RLIMIT_NPROC`.
    pub use_cgroup: bool,
}

/// The default of [`RunLimits::max_processes`]: 1024.
pub const DEFAULT_MAX_PROCESSES: u32 = 1024;

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            kill_grace: Duration::from_secs(2),
            drain: Duration::from_millis(250),
            max_output_bytes: 30_000,
            max_processes: DEFAULT_MAX_PROCESSES,
            use_cgroup: true,
        }
    }
}

/// How a command ended.
///
/// ```
/// use harnessx_builtin::bash::{run_command, RunLimits};
/// use harnessx_builtin::LocalSandbox;
/// use std::time::Duration;
/// use tokio_util::sync::CancellationToken;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::SandboxError> {
/// let limits = RunLimits { timeout: Duration::from_millis(200), ..RunLimits::default() };
/// let outcome = run_command(&LocalSandbox::new(), "sleep 10", &limits, &CancellationToken::new()).await?;
/// assert!(outcome.timed_out);
/// assert_eq!(outcome.signal, Some(15)); // SIGTERM was enough
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    /// Its output (stdout and stderr interleaved), capped.
    pub output: CapturedOutput,
    /// The exit code, when it exited rather than being killed by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// It ran out of time and was stopped.
    pub timed_out: bool,
    /// The caller cancelled it and it was stopped.
    pub cancelled: bool,
    /// Processes it left running in its group were ended after it exited.
    pub ended_background: bool,
    /// A fork failed because the command reached its cgroup's process limit
    /// ([`RunLimits::max_processes`]). Only a cgroup reports this; under `RLIMIT_NPROC` the
    /// command just sees its forks fail, and a supervisor that stopped it says so in its output
    /// and exits with [`SUPERVISOR_LIMIT_STATUS`](super::SUPERVISOR_LIMIT_STATUS).
    pub process_limit_reached: bool,
    /// What kept its processes together: [`Containment::Cgroup`] when it ran in its own cgroup,
    /// else [`Containment::ProcessGroup`] (the sandbox may have added its own mechanism).
    pub containment: Containment,
    /// How long it ran.
    pub duration: Duration,
}

/// Runs `script` with `bash -c` in `sandbox` under `limits`, until it exits, runs out of time, or
/// `cancel` fires. Stdin is closed; [`COMMAND_ENV`] is set, and
/// [`COMMAND_OWNER_ENV`](super::COMMAND_OWNER_ENV) names this process as the command's owner.
///
/// This is the plain Rust call behind the `run_bash` tool; it bypasses the registry (no schema,
/// permission or registered timeout).
///
/// ```
/// use harnessx_builtin::bash::{run_command, RunLimits};
/// use harnessx_builtin::LocalSandbox;
/// use tokio_util::sync::CancellationToken;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::SandboxError> {
/// let outcome = run_command(&LocalSandbox::new(), "echo hello; exit 3", &RunLimits::default(),
///     &CancellationToken::new()).await?;
/// assert_eq!(outcome.output.text, "hello\n");
/// assert_eq!(outcome.exit_code, Some(3));
/// # Ok(()) }
/// ```
///
/// # Errors
/// A [`SandboxError`] when the sandbox cannot start or the process cannot be spawned.
pub async fn run_command(
    sandbox: &dyn Sandbox,
    script: &str,
    limits: &RunLimits,
    cancel: &CancellationToken,
) -> Result<CommandOutcome, SandboxError> {
    sandbox.start().await?;
    let spawn_error = |what: &str, e: io::Error| SandboxError {
        sandbox: sandbox.name().to_owned(),
        reason: format!("{what}: {e}"),
    };
    let cgroup = containment::prepare(limits.use_cgroup, limits.max_processes);
    // The command waits on stdin until it is in its cgroup and limited, so that nothing it
    // starts escapes them.
    let gate = cgroup.is_some() || !getuid().is_root();
    let gated;
    let to_run = if gate {
        gated = containment::gated(script);
        &gated
    } else {
        script
    };
    let mut command = sandbox.command_with_env(to_run, &COMMAND_ENV)?;
    // For a supervisor running the command (which removes it): the process bound it enforces.
    command.env(
        super::supervisor::MAX_PROCESSES_ENV,
        limits.max_processes.to_string(),
    );
    // Every process of the command inherits its owner's name, by which the next start finds
    // it if this process dies first (see `reap_orphans`).
    if let Some(owner) = Owner::current() {
        command.env(COMMAND_OWNER_ENV, owner.to_string());
    }
    let (reader, writer) = io::pipe().map_err(|e| spawn_error("could not create a pipe", e))?;
    let writer_err = writer
        .try_clone()
        .map_err(|e| spawn_error("could not create a pipe", e))?;
    let receiver = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| spawn_error("could not read the command's output", e))?;
    command
        .stdin(if gate { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_err))
        .process_group(0)
        .kill_on_drop(false);
    let child = command.spawn();
    // The command keeps our copies of the pipe's write end: drop it so EOF can come.
    drop(command);
    let mut child = child.map_err(|e| spawn_error("could not start the command", e))?;
    let go = child.stdin.take();
    // `None` only if the child has no pid, which a child that was just spawned always has.
    let mut group = ProcessGroup::new(child, limits.kill_grace).ok_or_else(|| SandboxError {
        sandbox: sandbox.name().to_owned(),
        reason: "the command started without a process id to watch it by".to_owned(),
    })?;
    if gate {
        let root = group.pgid.as_raw_nonzero().get();
        match containment::confine(root, cgroup, limits.max_processes) {
            Ok(cgroup) => group.cgroup = cgroup,
            Err(e) => tracing::warn!(
                "run_command: could not put the command in its cgroup or limit it ({e}); only \
                 its process group is tracked"
            ),
        }
    }
    if let Some(mut go) = go {
        // If the command is already gone, there is nobody left to tell.
        let _ = go.write_all(b"\n").await;
    }
    let mut out = OutputPump {
        receiver,
        buf: vec![0; 64 * 1024],
        capture: OutputCapture::new(limits.max_output_bytes),
        eof: false,
    };

    // The command's time runs from its start, not from the sandbox's start-up.
    let started = Instant::now();
    let deadline = started + limits.timeout;
    let end = out
        .pump_until(async {
            tokio::select! {
                status = group.wait() => End::Exited(status),
                () = tokio::time::sleep_until(deadline) => End::TimedOut,
                () = cancel.cancelled() => End::Cancelled,
            }
        })
        .await;
    let (status, timed_out, cancelled) = match end {
        End::Exited(status) => (status, false, false),
        End::TimedOut | End::Cancelled => {
            group.signal(Signal::TERM);
            let grace = tokio::time::timeout(limits.kill_grace, group.wait());
            let status = match out.pump_until(grace).await {
                Ok(status) => status,
                Err(_elapsed) => {
                    group.signal(Signal::KILL);
                    out.pump_until(group.wait()).await
                }
            };
            (
                status,
                matches!(end, End::TimedOut),
                matches!(end, End::Cancelled),
            )
        }
    };
    let status = status.map_err(|e| spawn_error("could not wait for the command", e))?;

    // The main process is gone. Read what is still in flight, then end what is left in its group.
    out.drain(limits.drain).await;
    let mut ended_background = false;
    if group.lingering().await {
        ended_background = true;
        if timed_out || cancelled {
            group.signal(Signal::KILL);
        } else {
            group.signal(Signal::TERM);
            let grace_end = Instant::now() + limits.kill_grace;
            while group.has_members() && Instant::now() < grace_end {
                out.pump_until(tokio::time::sleep(Duration::from_millis(10)))
                    .await;
            }
            group.signal(Signal::KILL);
        }
        out.drain(limits.drain).await;
    }
    let containment = if group.cgroup.is_some() {
        Containment::Cgroup
    } else {
        Containment::ProcessGroup
    };
    let process_limit_reached = group.finish().await;

    Ok(CommandOutcome {
        output: out.capture.finish(),
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        cancelled,
        ended_background,
        process_limit_reached,
        containment,
        duration: started.elapsed(),
    })
}

enum End {
    Exited(io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

/// Reads the command's output into the capture.
struct OutputPump {
    receiver: pipe::Receiver,
    buf: Vec<u8>,
    capture: OutputCapture,
    eof: bool,
}

impl OutputPump {
    async fn read_some(&mut self) {
        match self.receiver.read(&mut self.buf).await {
            Ok(0) => self.eof = true,
            Ok(n) => self.capture.push(&self.buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => self.eof = true,
        }
    }

    /// Awaits `fut`, reading output meanwhile.
    async fn pump_until<F: Future>(&mut self, fut: F) -> F::Output {
        tokio::pin!(fut);
        loop {
            if self.eof {
                return fut.await;
            }
            tokio::select! {
                biased;
                v = &mut fut => return v,
                () = self.read_some() => {}
            }
        }
    }

    /// Reads until the pipe closes or `window` passes.
    async fn drain(&mut self, window: Duration) {
        let end = Instant::now() + window;
        while !self.eof {
            tokio::select! {
                () = self.read_some() => {}
                () = tokio::time::sleep_until(end) => return,
            }
        }
    }
}

/// The command's processes: its process group and, when it has one, its cgroup. Until
/// finished, dropping it ends them: SIGTERM at once, SIGKILL after the grace period.
struct ProcessGroup {
    child: Option<Child>,
    pgid: Pid,
    grace: Duration,
    reaped: bool,
    cgroup: Option<CommandCgroup>,
}

/// How long processes that are already exiting get to finish before they count as left behind.
const SETTLE: Duration = Duration::from_millis(50);

/// How long a killed cgroup may take to empty before it is left for later.
const CGROUP_EMPTY_WAIT: Duration = Duration::from_secs(5);

impl ProcessGroup {
    fn new(child: Child, grace: Duration) -> Option<Self> {
        let pgid = Pid::from_raw(i32::try_from(child.id()?).ok()?)?;
        Some(Self {
            child: Some(child),
            pgid,
            grace,
            reaped: false,
            cgroup: None,
        })
    }

    async fn wait(&mut self) -> io::Result<ExitStatus> {
        let child = self
            .child
            .as_mut()
            .ok_or_else(|| io::Error::other("the command was already released"))?;
        let status = child.wait().await?;
        self.reaped = true;
        Ok(status)
    }

    /// Signals every process in the group and the cgroup. Processes already gone are not an
    /// error.
    fn signal(&self, signal: Signal) {
        signal_all(self.pgid, self.cgroup.as_ref(), signal);
    }

    /// Whether any process is still running in the group or the cgroup. Zombies do not count: a
    /// background child killed after its parent exited waits for init to reap it, which may take
    /// a while.
    fn has_members(&self) -> bool {
        if self
            .cgroup
            .as_ref()
            .is_some_and(CommandCgroup::has_live_members)
        {
            return true;
        }
        if test_kill_process_group(self.pgid).is_err() {
            return false;
        }
        live_member_of(self.pgid.as_raw_nonzero().get()).unwrap_or(true)
    }

    /// Whether processes are still running once the ones already exiting are gone: a sandbox's
    /// helpers may take a few milliseconds to finish after its main process is reaped.
    async fn lingering(&self) -> bool {
        let end = Instant::now() + SETTLE;
        while self.has_members() {
            if Instant::now() >= end {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        false
    }

    /// Releases the processes: kills whatever is still in the cgroup, waits for it to empty and
    /// removes it. Returns whether the command reached its process limit.
    async fn finish(mut self) -> bool {
        self.child = None;
        let Some(cgroup) = self.cgroup.take() else {
            return false;
        };
        let reached = cgroup.limit_reached();
        if cgroup.populated() {
            cgroup.kill();
        }
        let end = Instant::now() + CGROUP_EMPTY_WAIT;
        while !cgroup.remove() && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        reached
    }
}

/// Signals group `pgid` and every process in `cgroup`; SIGKILL kills the cgroup as a whole.
fn signal_all(pgid: Pid, cgroup: Option<&CommandCgroup>, signal: Signal) {
    let _ = kill_process_group(pgid, signal);
    if let Some(cgroup) = cgroup {
        if signal == Signal::KILL {
            cgroup.kill();
        } else {
            cgroup.signal(signal);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let cgroup = self.cgroup.take();
        if self.reaped {
            // Only background leftovers can remain; the pgid stays ours while any member lives.
            signal_all(self.pgid, cgroup.as_ref(), Signal::KILL);
            if let Some(cgroup) = cgroup {
                remove_later(cgroup);
            }
            return;
        }
        signal_all(self.pgid, cgroup.as_ref(), Signal::TERM);
        let (pgid, grace) = (self.pgid, self.grace);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                // The leader stays unreaped (a zombie at worst) until after SIGKILL, so the
                // process group id cannot be reused by another process in between.
                handle.spawn(async move {
                    tokio::time::sleep(grace).await;
                    signal_all(pgid, cgroup.as_ref(), Signal::KILL);
                    let _ = child.wait().await;
                    if let Some(cgroup) = cgroup {
                        let end = Instant::now() + CGROUP_EMPTY_WAIT;
                        while !cgroup.remove() && Instant::now() < end {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                });
            }
            Err(_) => signal_all(pgid, cgroup.as_ref(), Signal::KILL),
        }
    }
}

/// Removes a killed cgroup once it is empty, from a background task when there is a runtime.
fn remove_later(cgroup: CommandCgroup) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            let end = Instant::now() + CGROUP_EMPTY_WAIT;
            while !cgroup.remove() && Instant::now() < end {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
    }
}
