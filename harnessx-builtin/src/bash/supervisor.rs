//! A supervisor process that keeps every descendant of a command, for hosts without usable
//! cgroups ([`Containment::Subreaper`](super::Containment::Subreaper)).
//!
//! The subreaper attribute (`PR_SET_CHILD_SUBREAPER`) belongs to a whole process, so the library
//! never sets it on the application's process: a separate, small supervisor process does, one
//! per command. [`supervise`] is its body. Run it from the `harnessx-supervisor` binary this
//! crate builds, or from the application's own binary (see [`SUPERVISOR_FLAG`]), and point a
//! [`LocalSandbox`](crate::LocalSandbox) at it with
//! [`with_supervisor`](crate::LocalSandbox::with_supervisor).
//!
//! What it does: it becomes a child subreaper and starts the command. Every process the command
//! starts is its descendant, or is re-parented to it when its parent exits (a daemon's double
//! fork, `setsid cmd &`), so it can always find them by walking `/proc` from itself.
//! - When the command exits, the processes it left get SIGTERM, then SIGKILL after
//!   [`SUPERVISOR_GRACE`]; the supervisor exits with the command's status once none is left.
//! - When the supervisor gets SIGTERM (the bash tool stopping the command on timeout or
//!   cancellation), it kills every descendant at once with SIGKILL and exits with status 143. The
//!   processes in the command's group got the same SIGTERM from the bash tool; the supervisor
//!   does not wait for them, so that none can escape while it waits.
//!
//! Killing is done so nothing can slip through: every live descendant gets SIGKILL, the dead are
//! reaped, and the walk is repeated until it finds nobody. Killed processes' children are
//! re-parented to the supervisor, so the next walk sees them.
//!
//! - When the command has more processes at once than `HARNESSX_MAX_PROCESSES` (set by
//!   [`run_command`](super::run_command) from [`RunLimits::max_processes`](super::RunLimits)),
//!   every one of them is killed, a line on stderr says so, and the supervisor exits with status
//!   [`SUPERVISOR_LIMIT_STATUS`]. It counts at every tick, so a fast fork bomb may pass the limit
//!   for a moment before it is stopped; this is the only process bound for root on a host
//!   without cgroups, where `RLIMIT_NPROC` does not apply.
//!
//! - When the process that started it dies — even by SIGKILL, which no cleanup of its own
//!   survives — the supervisor gets SIGHUP (its parent-death signal, `PR_SET_PDEATHSIG`), kills
//!   every descendant at once and exits with status 129. A SIGHUP while its parent still runs
//!   (the parent's thread that started it exited, or a stray signal) changes nothing. The signal
//!   is armed before the command starts. A parent that died before that is caught — the parent
//!   changed between the reads before and after arming, or is not the owner named in
//!   [`COMMAND_OWNER_ENV`](super::COMMAND_OWNER_ENV), which is gone — and the supervisor then
//!   exits with status 2 without starting the command.
//!
//! Only SIGKILL of the supervisor itself defeats it: its descendants are then re-parented to the
//! next subreaper or init and live on until [`reap_orphans`](super::reap_orphans) finds them by
//! their owner once that owner is gone. The bash tool sends SIGKILL only after its grace period,
//! which the supervisor does not need.

use std::ffi::OsString;
use std::time::Duration;

use rustix::process::{
    Pid, Signal, WaitOptions, WaitStatus, getpid, getppid, kill_process, set_child_subreaper,
    set_parent_process_death_signal, waitpid,
};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use super::owner::{COMMAND_OWNER_ENV, Liveness, Owner};
use super::procfs::{self, ProcStat};

/// The first argument that tells an application's own binary to act as the supervisor, for a
/// [`LocalSandbox`](crate::LocalSandbox) that re-executes the application instead of using the
/// `harnessx-supervisor` binary.
///
/// ```no_run
/// use harnessx_builtin::bash::{SUPERVISOR_FLAG, supervise};
/// use harnessx_builtin::LocalSandbox;
///
/// fn main() -> std::io::Result<()> {
///     let mut args = std::env::args_os().skip(1);
///     if args.next().as_deref() == Some(SUPERVISOR_FLAG.as_ref()) {
///         std::process::exit(supervise(args));
///     }
///     let sandbox = LocalSandbox::new()
///         .with_supervisor(std::env::current_exe()?, [SUPERVISOR_FLAG]);
///     // ... bind `sandbox` to the registry ...
///     # let _ = sandbox;
///     Ok(())
/// }
/// ```
pub const SUPERVISOR_FLAG: &str = "--harnessx-supervise";

/// How long the processes a command left behind have between SIGTERM and SIGKILL when the
/// command exits on its own: 1 second.
pub const SUPERVISOR_GRACE: Duration = Duration::from_secs(1);

/// The variable [`run_command`](super::run_command) passes the command's process limit in; the
/// supervisor reads it and removes it from the command's environment.
pub const MAX_PROCESSES_ENV: &str = "HARNESSX_MAX_PROCESSES";

/// The status the supervisor exits with when it stopped a command for having too many
/// processes: 125.
pub const SUPERVISOR_LIMIT_STATUS: i32 = 125;

/// How often the supervisor reaps and checks for a signal.
const TICK: Duration = Duration::from_millis(10);

/// The most kill-and-walk rounds before giving up on a descendant that cannot be killed.
const MAX_KILL_ROUNDS: u32 = 10_000;

/// Runs `command` (a program and its arguments, such as `bash -c <script>`) as a child subreaper
/// supervisor and returns the status to exit with: the command's exit code, 128 plus the signal
/// that killed it, 143 when the supervisor itself was told to stop, 129 when the process that
/// started it died, 2 when it cannot be a subreaper or its starter is already gone and 127 when
/// the command cannot be started (with a message on stderr).
///
/// It blocks until the command and every process it started are gone. Call it only in a
/// process made for it (the `harnessx-supervisor` binary, or a binary started with
/// [`SUPERVISOR_FLAG`]): it makes the calling process a child subreaper.
pub fn supervise<I, S>(command: I) -> i32
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let command: Vec<OsString> = command.into_iter().map(Into::into).collect();
    let Some((program, args)) = command.split_first() else {
        eprintln!(
            "harnessx supervisor: no command to run; usage: harnessx-supervisor PROGRAM [ARGS...]"
        );
        return 2;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("harnessx supervisor: could not start its runtime: {e}");
            return 2;
        }
    };
    runtime.block_on(run(program, args))
}

async fn run(program: &OsString, args: &[OsString]) -> i32 {
    // Listen before anything is started, so a stop request is never missed.
    let mut term = match signal(SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            eprintln!("harnessx supervisor: could not listen for SIGTERM: {e}");
            return 2;
        }
    };
    let mut hangup = match signal(SignalKind::hangup()) {
        Ok(hangup) => hangup,
        Err(e) => {
            eprintln!("harnessx supervisor: could not listen for SIGHUP: {e}");
            return 2;
        }
    };
    let me = getpid();
    if let Err(e) = set_child_subreaper(Some(me)) {
        eprintln!(
            "harnessx supervisor: could not become a child subreaper ({e}); it needs Linux 3.4 \
             or later"
        );
        return 2;
    }
    let Some(parent) = watch_parent() else {
        return 2;
    };
    let limit = std::env::var(MAX_PROCESSES_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0);
    let main = match std::process::Command::new(program)
        .args(args)
        .env_remove(MAX_PROCESSES_ENV)
        .spawn()
    {
        // It is reaped below with the others, by pid.
        Ok(child) => child.id(),
        Err(e) => {
            eprintln!(
                "harnessx supervisor: could not start `{}`: {e}",
                program.to_string_lossy()
            );
            return 127;
        }
    };
    let main = i32::try_from(main).unwrap_or(i32::MAX);
    let mut status = None;

    loop {
        reap(main, &mut status);
        if status.is_some() {
            break;
        }
        if let Some(limit) = limit
            && live_descendants(me).len() > limit
        {
            kill_all(me).await;
            eprintln!(
                "harnessx supervisor: the command had more than {limit} processes at once (its \
                 limit), so every one of them was stopped"
            );
            return SUPERVISOR_LIMIT_STATUS;
        }
        tokio::select! {
            _ = term.recv() => {
                kill_all(me).await;
                return 143;
            }
            _ = hangup.recv() => {
                if parent_gone(parent) {
                    kill_all(me).await;
                    return PARENT_GONE_STATUS;
                }
            }
            () = tokio::time::sleep(TICK) => {}
        }
    }

    // The command exited: what it left gets SIGTERM, then SIGKILL after the grace period.
    let left = live_descendants(me);
    if !left.is_empty() {
        for p in &left {
            send(p.pid, Signal::TERM);
        }
        let end = Instant::now() + SUPERVISOR_GRACE;
        while Instant::now() < end && !live_descendants(me).is_empty() {
            tokio::select! {
                _ = term.recv() => break,
                _ = hangup.recv() => if parent_gone(parent) { break },
                () = tokio::time::sleep(TICK) => reap(main, &mut status),
            }
        }
        kill_all(me).await;
    }
    exit_code(status)
}

/// The status the supervisor exits with when the process that started it died: 129 (128 plus
/// SIGHUP, its parent-death signal).
const PARENT_GONE_STATUS: i32 = 129;

/// Arms the parent-death signal (SIGHUP) and returns the parent it watches; `None` (after a
/// message on stderr) when it cannot be armed or the parent already died: between the reads of
/// the parent before and after arming, or — when [`COMMAND_OWNER_ENV`] names the owner — even
/// before the first read.
fn watch_parent() -> Option<Option<Pid>> {
    let parent = getppid();
    if let Err(e) = set_parent_process_death_signal(Some(Signal::HUP)) {
        eprintln!("harnessx supervisor: could not ask for a signal when its parent dies: {e}");
        return None;
    }
    let owner = std::env::var(COMMAND_OWNER_ENV)
        .ok()
        .and_then(|v| Owner::parse(&v));
    // From now on a parent that dies sends the signal; one that died before re-parented it.
    let started_by_owner =
        |owner: &Owner| parent.is_some_and(|p| p.as_raw_nonzero().get() == owner.pid);
    let gone = if getppid() != parent {
        parent.map(|p| p.as_raw_nonzero().get())
    } else {
        owner
            .filter(|o| !started_by_owner(o) && o.liveness() == Liveness::Gone)
            .map(|o| o.pid)
    };
    match gone {
        Some(pid) => {
            eprintln!(
                "harnessx supervisor: the process that started the command (pid {pid}) has \
                 already exited, so the command is not started"
            );
            None
        }
        None => Some(parent),
    }
}

/// Whether the parent watched is gone: the supervisor was re-parented. (A SIGHUP while the
/// parent runs comes from one of its threads exiting, or from elsewhere.)
fn parent_gone(parent: Option<Pid>) -> bool {
    getppid() != parent
}

/// Sends `signal` to process `pid`; one already gone is not an error.
fn send(pid: i32, signal: Signal) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = kill_process(pid, signal);
    }
}

/// The status to exit with for the command's `status`.
fn exit_code(status: Option<WaitStatus>) -> i32 {
    match status {
        Some(s) => s
            .exit_status()
            .or_else(|| s.terminating_signal().map(|sig| 128 + sig))
            .unwrap_or(1),
        None => 1,
    }
}

/// Reaps every child that has exited, noting the command's status.
fn reap(main: i32, status: &mut Option<WaitStatus>) {
    while let Ok(Some((pid, s))) = waitpid(None, WaitOptions::NOHANG) {
        if pid.as_raw_nonzero().get() == main {
            *status = Some(s);
        }
    }
}

/// Every live descendant of the supervisor.
fn live_descendants(me: Pid) -> Vec<ProcStat> {
    let procs = procfs::processes().unwrap_or_default();
    procfs::descendants(me.as_raw_nonzero().get(), &procs)
        .into_iter()
        .filter(|p| !p.dead)
        .collect()
}

/// Kills every descendant, repeating until a walk finds nobody (see the module docs).
async fn kill_all(me: Pid) {
    let mut ignored = None;
    for _ in 0..MAX_KILL_ROUNDS {
        let live = live_descendants(me);
        if live.is_empty() {
            break;
        }
        for p in &live {
            send(p.pid, Signal::KILL);
        }
        reap(0, &mut ignored);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    reap(0, &mut ignored);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_command_is_a_usage_error() {
        assert_eq!(supervise(Vec::<OsString>::new()), 2);
    }
}
