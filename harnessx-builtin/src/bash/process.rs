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

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use harnessx::{Sandbox, SandboxError};
use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::Child;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::capture::{CapturedOutput, OutputCapture};

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
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            kill_grace: Duration::from_secs(2),
            drain: Duration::from_millis(250),
            max_output_bytes: 30_000,
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
    /// How long it ran.
    pub duration: Duration,
}

/// Runs `script` with `bash -c` in `sandbox` under `limits`, until it exits, runs out of time, or
/// `cancel` fires. Stdin is closed; [`COMMAND_ENV`] is set.
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
    let mut command = sandbox.command_with_env(script, &COMMAND_ENV)?;
    let (reader, writer) = io::pipe().map_err(|e| spawn_error("could not create a pipe", e))?;
    let writer_err = writer
        .try_clone()
        .map_err(|e| spawn_error("could not create a pipe", e))?;
    let receiver = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| spawn_error("could not read the command's output", e))?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_err))
        .process_group(0)
        .kill_on_drop(false);
    let child = command.spawn();
    // The command keeps our copies of the pipe's write end: drop it so EOF can come.
    drop(command);
    let child = child.map_err(|e| spawn_error("could not start the command", e))?;
    // `None` only if the child has no pid, which a child that was just spawned always has.
    let mut group = ProcessGroup::new(child, limits.kill_grace).ok_or_else(|| SandboxError {
        sandbox: sandbox.name().to_owned(),
        reason: "the command started without a process id to watch it by".to_owned(),
    })?;
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
    if group.has_members() {
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
    group.disarm();

    Ok(CommandOutcome {
        output: out.capture.finish(),
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        cancelled,
        ended_background,
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

/// The command's process group. Until disarmed, dropping it ends the group: SIGTERM at once,
/// SIGKILL after the grace period.
struct ProcessGroup {
    child: Option<Child>,
    pgid: Pid,
    grace: Duration,
    reaped: bool,
}

impl ProcessGroup {
    fn new(child: Child, grace: Duration) -> Option<Self> {
        let pgid = Pid::from_raw(i32::try_from(child.id()?).ok()?)?;
        Some(Self {
            child: Some(child),
            pgid,
            grace,
            reaped: false,
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

    /// Signals every process in the group. A group that is already gone is not an error.
    fn signal(&self, signal: Signal) {
        let _ = kill_process_group(self.pgid, signal);
    }

    /// Whether any process is still running in the group. Zombies do not count: a background
    /// child killed after its parent exited waits for init to reap it, which may take a while.
    fn has_members(&self) -> bool {
        if test_kill_process_group(self.pgid).is_err() {
            return false;
        }
        live_member_of(self.pgid.as_raw_nonzero().get()).unwrap_or(true)
    }

    fn disarm(&mut self) {
        self.child = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if self.reaped {
            // Only background leftovers can remain; the pgid stays ours while any member lives.
            self.signal(Signal::KILL);
            return;
        }
        self.signal(Signal::TERM);
        let (pgid, grace) = (self.pgid, self.grace);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                // The leader stays unreaped (a zombie at worst) until after SIGKILL, so the
                // process group id cannot be reused by another process in between.
                handle.spawn(async move {
                    tokio::time::sleep(grace).await;
                    let _ = kill_process_group(pgid, Signal::KILL);
                    let _ = child.wait().await;
                });
            }
            Err(_) => {
                let _ = kill_process_group(pgid, Signal::KILL);
            }
        }
    }
}

/// Whether `/proc` shows a process of group `pgid` that is not a zombie; `None` when `/proc`
/// cannot be read (then the caller assumes there is one).
fn live_member_of(pgid: i32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let live = entries.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        group == Some(pgid) && !matches!(state, Some("Z" | "X"))
    });
    Some(live)
}
