//! Ending what the commands of a dead process left running: [`reap_orphans`].
//!
//! A process killed with SIGKILL while a command runs cannot end the command. Under a
//! supervisor ([`Containment::Subreaper`](super::Containment::Subreaper)) the supervisor notices
//! at once (its parent-death signal) and kills every process of the command. A command run
//! directly — in its cgroup or only its process group — lives on, re-parented to init, until
//! [`reap_orphans`] at the next start finds it by the name of its owner (see
//! [`owner`](super::owner)), which nothing else shares:
//! - the command cgroups under this process's cgroup whose owner is gone are killed
//!   (`cgroup.kill`) and removed once empty;
//! - every process whose environment holds [`COMMAND_OWNER_ENV`](super::COMMAND_OWNER_ENV)
//!   naming a gone owner gets SIGKILL, round after round until a walk of `/proc` finds none, so
//!   a process forked meanwhile is found in the next round. That finds the command's processes
//!   on a host without cgroups, those that left its process group (`setsid`) included; only one
//!   that replaced its environment (`env -i`) escapes it.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, kill_process, pidfd_open, pidfd_send_signal};

use super::cgroup;
use super::owner::{Liveness, Owner, owner_in_environ};
use super::procfs::{self, ProcStat};

/// How long [`reap_orphans`] waits at most for what it killed to be gone: 5 seconds.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// How often it looks again while waiting.
const POLL: Duration = Duration::from_millis(10);

/// The most kill-and-walk rounds over `/proc`.
const MAX_ROUNDS: u32 = 1_000;

/// What [`reap_orphans`] ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reaped {
    /// Stale command cgroups killed and removed.
    pub cgroups: usize,
    /// Processes of a dead owner's commands killed by their marker
    /// ([`COMMAND_OWNER_ENV`](super::COMMAND_OWNER_ENV)); those in a cgroup are not counted (the
    /// cgroup ended them).
    pub processes: usize,
    /// Stale cgroups that could not be removed and processes still running when it gave up
    /// waiting (they are logged).
    pub left: usize,
}

impl Reaped {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl fmt::Display for Reaped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} stale command cgroup(s) removed, {} leftover process(es) killed",
            self.cgroups, self.processes
        )?;
        if self.left > 0 {
            write!(f, ", {} could not be ended", self.left)?;
        }
        Ok(())
    }
}

/// Ends every command a dead process left running on this host — its processes and its command
/// cgroups — so none still runs while someone is asked whether it took effect. Call it once at
/// start, before anything resumes interrupted calls: `harnessx serve` does, before its workers
/// start; a program driving durable runs calls it before `Runtime::builder().build()`.
///
/// What it looks for (see [`Containment`](super::Containment)):
/// - the command cgroups (`harnessx-<owner>-<n>`, and `harnessx-<pid>-<n>` as earlier versions
///   named them) under this process's own cgroup whose owner no longer runs. They are killed
///   through `cgroup.kill` and removed (with any cgroups made inside them) once empty;
/// - processes whose environment holds [`COMMAND_OWNER_ENV`](super::COMMAND_OWNER_ENV) naming
///   an owner that no longer runs. They get SIGKILL.
///
/// An owner counts as gone when no process has its pid, or the process with its pid started at
/// another time (the pid was reused), or it is a zombie. Owners in another PID namespace are
/// left alone (they cannot be looked up from here), as are cgroups of the old naming whose pid
/// belongs to a live process. This process and its ancestors are never killed.
///
/// It blocks until what it killed is gone, at most 5 seconds; from async code, run it on a
/// blocking thread (`tokio::task::spawn_blocking`). It never fails: what it cannot read it
/// skips, and what it cannot end is counted in [`Reaped::left`] and logged.
///
/// ```
/// use harnessx_builtin::bash::reap_orphans;
///
/// // At start, before resuming anything:
/// let reaped = reap_orphans();
/// if !reaped.is_empty() {
///     println!("a process that died left commands behind: {reaped}");
/// }
/// ```
pub fn reap_orphans() -> Reaped {
    let deadline = Instant::now() + REAP_WAIT;
    let mut reaped = Reaped::default();
    reap_cgroups(deadline, &mut reaped);
    reap_marked(deadline, &mut reaped);
    if reaped.left > 0 {
        tracing::warn!(
            %reaped,
            "some commands left behind by a process that died could not be ended"
        );
    } else if !reaped.is_empty() {
        tracing::info!(%reaped, "ended the commands a process that died left behind");
    }
    reaped
}

/// Kills the stale command cgroups at once, then removes each once it is empty.
fn reap_cgroups(deadline: Instant, reaped: &mut Reaped) {
    let stale = cgroup::stale();
    for cgroup in &stale {
        if cgroup.populated() {
            cgroup.kill();
        }
    }
    for cgroup in stale {
        loop {
            if cgroup.remove() {
                reaped.cgroups += 1;
                break;
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    cgroup = %cgroup.path().display(),
                    "a stale command cgroup could not be removed"
                );
                reaped.left += 1;
                break;
            }
            // It still holds processes that are exiting; kill again what may have been
            // moved in meanwhile.
            cgroup.kill();
            std::thread::sleep(POLL);
        }
    }
}

/// Kills every process marked with a gone owner, walk after walk until none is found, then
/// waits for them to be gone.
fn reap_marked(deadline: Instant, reaped: &mut Reaped) {
    let spared = this_process_and_ancestors();
    let mut verdicts: HashMap<Owner, bool> = HashMap::new();
    let mut killed: HashSet<i32> = HashSet::new();
    for _ in 0..MAX_ROUNDS {
        let Some(procs) = procfs::processes() else {
            return;
        };
        let marked: Vec<(i32, Owner)> = procs
            .iter()
            .filter(|p| !p.dead && !spared.contains(&p.pid))
            .filter_map(|p| {
                let owner = marked_owner(p.pid)?;
                let gone = *verdicts
                    .entry(owner)
                    .or_insert_with(|| owner.liveness() == Liveness::Gone);
                gone.then_some((p.pid, owner))
            })
            .collect();
        if marked.is_empty() {
            break;
        }
        for (pid, owner) in marked {
            if kill_if_marked(pid, owner) {
                killed.insert(pid);
            }
        }
        if Instant::now() >= deadline {
            break;
        }
        // Children of the killed are re-parented meanwhile; the next walk finds them.
        std::thread::sleep(Duration::from_millis(1));
    }
    reaped.processes += killed.len();
    // They are not this process's children: init reaps them. A zombie counts as gone.
    let running = |pid: &i32| ProcStat::of(*pid).is_some_and(|p| !p.dead);
    while killed.iter().any(running) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    let left: Vec<i32> = killed.iter().copied().filter(running).collect();
    if !left.is_empty() {
        tracing::warn!(
            pids = ?left,
            "processes of a dead process's commands still run after SIGKILL"
        );
        reaped.left += left.len();
    }
}

/// Sends SIGKILL to process `pid` if it is still marked with `owner`. Through a pidfd where the
/// kernel has them (Linux 5.3): once the pidfd is open, the signal reaches that process or none,
/// even if it exits and its pid goes to another process after the check.
fn kill_if_marked(pid: i32, owner: Owner) -> bool {
    let Some(target) = Pid::from_raw(pid) else {
        return false;
    };
    match pidfd_open(target, PidfdFlags::empty()) {
        Ok(pidfd) => {
            marked_owner(pid) == Some(owner) && pidfd_send_signal(&pidfd, Signal::KILL).is_ok()
        }
        Err(Errno::SRCH) => false,
        Err(_) => kill_process(target, Signal::KILL).is_ok(),
    }
}

/// The owner in the environment of process `pid`, when it has
/// [`COMMAND_OWNER_ENV`](super::COMMAND_OWNER_ENV).
fn marked_owner(pid: i32) -> Option<Owner> {
    owner_in_environ(&std::fs::read(format!("/proc/{pid}/environ")).ok()?)
}

/// This process and every process it descends from.
fn this_process_and_ancestors() -> HashSet<i32> {
    let mut spared = HashSet::new();
    let mut pid = i32::try_from(std::process::id()).unwrap_or(0);
    while pid > 0 && spared.insert(pid) {
        pid = ProcStat::of(pid).map_or(0, |p| p.ppid);
    }
    spared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_spared() {
        let spared = this_process_and_ancestors();
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(spared.contains(&me));
        assert!(!spared.contains(&0));
    }

    #[test]
    fn a_report_reads_as_a_sentence() {
        let reaped = Reaped {
            cgroups: 1,
            processes: 2,
            left: 0,
        };
        assert_eq!(
            reaped.to_string(),
            "1 stale command cgroup(s) removed, 2 leftover process(es) killed"
        );
        assert!(!reaped.is_empty());
        assert!(Reaped::default().is_empty());
    }
}
