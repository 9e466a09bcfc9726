//! How a command's processes are kept together so all of them end with the call, and how many
//! it may have: [`Containment`] and [`ProcessLimit`].
//!
//! [`run_command`](super::run_command) runs every command in its own cgroup when the host allows
//! it (see [`Containment::Cgroup`]); otherwise it only has the command's process group, and a
//! sandbox may add its own mechanism ([`Containment::PidNamespace`] for bubblewrap,
//! [`Containment::Subreaper`] for a [`LocalSandbox`](crate::LocalSandbox) with a supervisor).
//!
//! To put the command in its cgroup before it can start anything, the script is gated: it
//! first waits for one line on its stdin, which is sent once the command's processes are in the
//! cgroup (and limited), then closes stdin and runs the script with `exec bash -c`.

use rustix::process::{Pid, Resource, Rlimit, getuid, prlimit};

use super::cgroup::{self, CommandCgroup};
use super::procfs::{self, ProcStat};

/// What keeps every process a command starts inside the call, so none outlives it.
///
/// ```
/// use harnessx_builtin::bash::Containment;
/// use harnessx_builtin::LocalSandbox;
/// let mechanism = LocalSandbox::new().containment();
/// // Cgroup where this host lets the process make cgroups; else Subreaper when the supervisor
/// // binary is found, ProcessGroup otherwise.
/// assert!(matches!(
///     mechanism,
///     Containment::Cgroup | Containment::Subreaper | Containment::ProcessGroup
/// ));
/// println!("{mechanism}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Containment {
    /// Each command runs in its own cgroup v2; every descendant stays in it whatever it does
    /// (`setsid`, double forks), and the cgroup is killed as a whole (`cgroup.kill`) on timeout,
    /// cancellation and when the command ends, then removed. If the process running the command
    /// is killed (SIGKILL), the cgroup and its processes stay until the next start's
    /// [`reap_orphans`](super::reap_orphans) kills and removes it.
    Cgroup,
    /// The command runs in its own PID namespace (bubblewrap), whose processes all die when its
    /// first process does — also when the process running the command dies (bubblewrap's
    /// `--die-with-parent`).
    PidNamespace,
    /// A supervisor process that is a child subreaper (`PR_SET_CHILD_SUBREAPER`) runs the
    /// command: processes that leave the process group or lose their parent are re-parented to
    /// it, and it kills every one of them before it exits. It also kills them when the process
    /// that started it dies, even by SIGKILL (its parent-death signal, `PR_SET_PDEATHSIG`).
    Subreaper,
    /// Only the process group: a process that starts its own session or group (`setsid`) can
    /// outlive the call. If the process running the command is killed (SIGKILL), the command's
    /// processes stay until the next start's [`reap_orphans`](super::reap_orphans) finds them by
    /// [`COMMAND_OWNER_ENV`](super::COMMAND_OWNER_ENV).
    ProcessGroup,
}

impl std::fmt::Display for Containment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Cgroup => "a cgroup per command (cgroup v2, killed with cgroup.kill)",
            Self::PidNamespace => "a PID namespace per command",
            Self::Subreaper => "a child-subreaper supervisor per command",
            Self::ProcessGroup => "the process group only (setsid escapes it)",
        })
    }
}

impl Containment {
    /// What [`run_command`](super::run_command) itself gives every command on this host:
    /// [`Cgroup`](Self::Cgroup) when this process can make cgroup v2 children with
    /// `cgroup.kill` (found out once), else [`ProcessGroup`](Self::ProcessGroup).
    ///
    /// ```
    /// use harnessx_builtin::bash::Containment;
    /// let here = Containment::host();
    /// assert!(matches!(here, Containment::Cgroup | Containment::ProcessGroup));
    /// ```
    pub fn host() -> Self {
        if cgroup::tracking_available() {
            Self::Cgroup
        } else {
            Self::ProcessGroup
        }
    }
}

/// What bounds the number of processes a command may have
/// ([`RunLimits::max_processes`](super::RunLimits::max_processes)).
///
/// ```
/// use harnessx_builtin::bash::ProcessLimit;
/// println!("on this host: {:?}", ProcessLimit::host());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessLimit {
    /// The command's cgroup has `pids.max`: a fork past the limit fails, for root too.
    Cgroup,
    /// `RLIMIT_NPROC` on the command's processes, set to the number of processes the user
    /// already has plus the limit. It counts every process of the same real user (not only the
    /// command's), and root (or a process with `CAP_SYS_RESOURCE`) is not bound by it.
    Rlimit,
    /// The supervisor running the command ([`Containment::Subreaper`]) counts its processes at
    /// every tick and stops all of them once there are more than the limit — for root too; a
    /// fast fork bomb may pass the limit for a moment before it is stopped.
    Supervisor,
    /// Nothing: there is no cgroup process limit and the process runs as root, which
    /// `RLIMIT_NPROC` does not bind.
    None,
}

impl ProcessLimit {
    /// What holds for commands run from this process with cgroups allowed.
    pub fn host() -> Self {
        if cgroup::pids_limit_available() {
            Self::Cgroup
        } else if getuid().is_root() {
            Self::None
        } else {
            Self::Rlimit
        }
    }
}

/// Prepares a cgroup for a command when `use_cgroup` and the host allow it.
pub(crate) fn prepare(use_cgroup: bool, max_processes: u32) -> Option<CommandCgroup> {
    if use_cgroup {
        CommandCgroup::create(max_processes)
    } else {
        None
    }
}

/// What a gated script starts with: it waits for one line on stdin (the go-ahead, sent once the
/// command is in its cgroup and limited), then closes stdin. A sandbox that gives its commands
/// no stdin makes the wait end at once (end of file), so the script still runs. The gate shares
/// the script's first line, so line numbers in the script's error messages do not change (a
/// script cannot begin with a token that may not follow `;` without being a syntax error on its
/// own).
pub(crate) const GATE: &str = "IFS= read -r _;exec 0</dev/null;";

/// `script` behind the [`GATE`].
pub(crate) fn gated(script: &str) -> String {
    format!("{GATE}{script}")
}

/// Puts the started command (process `root` and anything it already started) in `cgroup`, or
/// when there is none or it has no process limit, limits it with `RLIMIT_NPROC` (not for root).
/// Fails when `root` cannot be moved into the cgroup or limited; returns the cgroup otherwise.
pub(crate) fn confine(
    root: i32,
    cgroup: Option<CommandCgroup>,
    max_processes: u32,
) -> std::io::Result<Option<CommandCgroup>> {
    let limited_by_cgroup = cgroup.as_ref().is_some_and(|c| c.limit().is_some());
    let rlimit = (!limited_by_cgroup && !getuid().is_root())
        .then(|| user_process_count().map(|n| n.saturating_add(u64::from(max_processes))))
        .flatten();
    let apply = |pid: i32| -> std::io::Result<()> {
        if let Some(c) = &cgroup {
            c.enter(pid)?;
        }
        if let (Some(limit), Some(pid)) = (rlimit, Pid::from_raw(pid)) {
            let value = Rlimit {
                current: Some(limit),
                maximum: Some(limit),
            };
            prlimit(Some(pid), Resource::Nproc, value)?;
        }
        Ok(())
    };
    apply(root)?;
    // A process moved before it forks has its children born in the cgroup. Those it started
    // before it was moved (a sandbox's helpers) are found and moved here, until none is new.
    let mut done = vec![root];
    for _ in 0..64 {
        let Some(procs) = procfs::processes() else {
            break;
        };
        let new: Vec<ProcStat> = procfs::descendants(root, &procs)
            .into_iter()
            .filter(|p| !p.dead && !done.contains(&p.pid))
            .collect();
        if new.is_empty() {
            break;
        }
        for p in new {
            // It may have exited meanwhile.
            let _ = apply(p.pid);
            done.push(p.pid);
        }
    }
    Ok(cgroup)
}

/// How many processes (threads, as `RLIMIT_NPROC` counts them) this process's real user has.
fn user_process_count() -> Option<u64> {
    let uid = getuid().as_raw().to_string();
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut count = 0u64;
    for entry in entries.flatten() {
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let mine = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().next())
            == Some(uid.as_str());
        if mine {
            count += status
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(1);
        }
    }
    Some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gated_script_waits_for_the_go_ahead_then_runs_unchanged() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let script = "echo \"line $LINENO: $(cat | wc -c)\"; nosuchcommand-xyz";
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(gated(script))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // More than the go-ahead is sent: the script must not see it (stdin is closed).
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"\nextra input\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "line 1: 0\n");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("line 1: nosuchcommand-xyz"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(127));

        // While the go-ahead has not come, the script waits; it runs once it comes.
        let marker = std::env::temp_dir().join(format!("hx-gate-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(gated(&format!("echo ran > '{}'", marker.display())))
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut go = child.stdin.take().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!marker.exists(), "the script ran before the go-ahead");
        go.write_all(b"\n").unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
        let _ = std::fs::remove_file(&marker);

        // Without stdin (a sandbox that does not pass it on) the script runs at once.
        let out = Command::new("bash")
            .arg("-c")
            .arg(gated("echo ran"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"ran\n");
    }

    #[test]
    fn this_user_has_processes() {
        assert!(user_process_count().is_some_and(|n| n >= 1));
    }
}
