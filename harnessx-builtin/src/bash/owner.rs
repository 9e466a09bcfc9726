//! Who started a command: the owning process, named so that no other process can be taken for
//! it — neither a later process given the same pid nor one in another PID namespace.
//!
//! An owner's name is `<pid>.<start>.<pidns>`: its pid, its start time in clock ticks since boot
//! (field 22 of `/proc/<pid>/stat`) and the inode of its PID namespace (`/proc/self/ns/pid`).
//! Within one boot a pid and a start time name one process, and the namespace says which pids
//! the name counts in. Every command carries its owner's name in the environment variable
//! [`COMMAND_OWNER_ENV`] (inherited by whatever it starts) and in its cgroup's name
//! (`harnessx-<owner>-<n>`), so what a dead process left behind can be found and ended
//! ([`reap_orphans`](super::reap_orphans)).

use std::fmt;
use std::sync::OnceLock;

use super::procfs::ProcStat;

/// The environment variable every command gets holding its owner's name
/// (`<pid>.<start>.<pidns>`, see [`reap_orphans`](super::reap_orphans)): every process the
/// command starts inherits it, which is how the processes of a dead owner are found again on a
/// host without cgroups.
///
/// ```
/// assert_eq!(harnessx_builtin::bash::COMMAND_OWNER_ENV, "HARNESSX_COMMAND");
/// ```
pub const COMMAND_OWNER_ENV: &str = "HARNESSX_COMMAND";

/// A process that starts commands (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Owner {
    pub pid: i32,
    /// Start time in clock ticks since boot.
    pub start: u64,
    /// The inode of its PID namespace; 0 when it could not be read.
    pub pidns: u64,
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.pid, self.start, self.pidns)
    }
}

impl Owner {
    /// This process; `None` when `/proc` does not show its start time.
    pub fn current() -> Option<Self> {
        static CURRENT: OnceLock<Option<Owner>> = OnceLock::new();
        *CURRENT.get_or_init(|| {
            let pid = i32::try_from(std::process::id()).ok()?;
            let stat = ProcStat::of(pid)?;
            Some(Owner {
                pid,
                start: stat.start,
                pidns: pid_namespace(),
            })
        })
    }

    /// Reads `<pid>.<start>.<pidns>`; anything else is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split('.');
        let owner = Owner {
            pid: parts.next()?.parse().ok().filter(|&pid: &i32| pid > 0)?,
            start: parts.next()?.parse().ok()?,
            pidns: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(owner)
    }

    /// What can be said about this owner from here.
    pub fn liveness(&self) -> Liveness {
        if self.pidns != pid_namespace() {
            return Liveness::Unknown;
        }
        match ProcStat::of(self.pid) {
            Some(p) if !p.dead && p.start == self.start => Liveness::Alive,
            _ => Liveness::Gone,
        }
    }
}

/// Whether a command's owner still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// The owner runs: its commands are its own business.
    Alive,
    /// The owner exited (or was killed): nobody will end its commands but the next start.
    Gone,
    /// The owner's pids count in another PID namespace: it cannot be looked up from here.
    Unknown,
}

/// The inode of this process's PID namespace; 0 when it cannot be read.
fn pid_namespace() -> u64 {
    static NS: OnceLock<u64> = OnceLock::new();
    *NS.get_or_init(|| {
        std::fs::read_link("/proc/self/ns/pid")
            .ok()
            .and_then(|link| namespace_inode(&link.to_string_lossy()))
            .unwrap_or(0)
    })
}

/// The inode in a namespace link's text, `pid:[4026531836]`.
fn namespace_inode(link: &str) -> Option<u64> {
    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// The owner named in a process's environment (`/proc/<pid>/environ`: `NAME=value` entries,
/// each ended by a NUL byte), when it has [`COMMAND_OWNER_ENV`].
pub(crate) fn owner_in_environ(environ: &[u8]) -> Option<Owner> {
    let prefix = format!("{COMMAND_OWNER_ENV}=");
    environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .and_then(|value| std::str::from_utf8(value).ok())
        .and_then(Owner::parse)
}

/// Who made a command cgroup, read from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CgroupOwner {
    /// `harnessx-<owner>-<n>` and `harnessx-probe-<owner>`.
    Named(Owner),
    /// `harnessx-<pid>-<n>` and `harnessx-probe-<pid>`, as earlier versions named them: only
    /// the pid is known, so a live process of that pid may or may not be the owner.
    Pid(i32),
}

impl CgroupOwner {
    /// The owner of a cgroup named `name`; `None` for a name this library does not give.
    pub fn of(name: &str) -> Option<Self> {
        let rest = name.strip_prefix("harnessx-")?;
        let owner = match rest.strip_prefix("probe-") {
            Some(owner) => owner,
            None => {
                let (owner, n) = rest.rsplit_once('-')?;
                n.parse::<u64>().ok()?;
                owner
            }
        };
        if owner.contains('.') {
            Owner::parse(owner).map(Self::Named)
        } else {
            owner
                .parse()
                .ok()
                .filter(|&pid: &i32| pid > 0)
                .map(Self::Pid)
        }
    }

    /// Whether the cgroup's owner is certainly gone, so what is in the cgroup is left over. A
    /// live process with an old-style name's pid is taken for its owner.
    pub fn is_gone(&self) -> bool {
        match self {
            Self::Named(owner) => owner.liveness() == Liveness::Gone,
            Self::Pid(pid) => ProcStat::of(*pid).is_none_or(|p| p.dead),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_names_round_trip_and_bad_ones_are_refused() {
        let owner = Owner {
            pid: 42,
            start: 123_456,
            pidns: 4_026_531_836,
        };
        assert_eq!(owner.to_string(), "42.123456.4026531836");
        assert_eq!(Owner::parse(&owner.to_string()), Some(owner));
        for bad in [
            "",
            "42",
            "42.1",
            "42.1.2.3",
            "-1.1.2",
            "0.1.2",
            "a.b.c",
            "42..2",
            "99999999999999999999.1.2",
            "42.1.2 ",
        ] {
            assert_eq!(Owner::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_later_process_with_its_pid_is_not_it() {
        let me = Owner::current().expect("this process shows in /proc");
        assert_eq!(me.liveness(), Liveness::Alive);
        let reused = Owner {
            start: me.start + 1,
            ..me
        };
        assert_eq!(reused.liveness(), Liveness::Gone);
        let elsewhere = Owner {
            pidns: me.pidns + 1,
            ..me
        };
        assert_eq!(elsewhere.liveness(), Liveness::Unknown);
    }

    #[test]
    fn the_owner_is_found_in_an_environment_block() {
        let env = b"PATH=/bin\0HARNESSX_COMMANDX=1.2.3\0HARNESSX_COMMAND=7.8.9\0HOME=/\0";
        assert_eq!(
            owner_in_environ(env),
            Some(Owner {
                pid: 7,
                start: 8,
                pidns: 9
            })
        );
        assert_eq!(owner_in_environ(b"PATH=/bin\0"), None);
        assert_eq!(owner_in_environ(b"HARNESSX_COMMAND=\xff\0"), None);
        assert_eq!(owner_in_environ(b""), None);
    }

    #[test]
    fn cgroup_names_tell_their_owner() {
        let named = Owner {
            pid: 12,
            start: 34,
            pidns: 56,
        };
        assert_eq!(
            CgroupOwner::of("harnessx-12.34.56-7"),
            Some(CgroupOwner::Named(named))
        );
        assert_eq!(
            CgroupOwner::of("harnessx-probe-12.34.56"),
            Some(CgroupOwner::Named(named))
        );
        assert_eq!(CgroupOwner::of("harnessx-12-0"), Some(CgroupOwner::Pid(12)));
        assert_eq!(
            CgroupOwner::of("harnessx-probe-12"),
            Some(CgroupOwner::Pid(12))
        );
        for other in [
            "harnessx-",
            "harnessx-12",
            "harnessx-12-x",
            "harnessx--1",
            "harnessx-0-1",
            "harnessx-12.34-1",
            "harnessx-probe-",
            "user.slice",
            "harnessx-a-b-c",
        ] {
            assert_eq!(CgroupOwner::of(other), None, "{other:?}");
        }
    }

    #[test]
    fn a_namespace_link_gives_its_inode() {
        assert_eq!(namespace_inode("pid:[4026531836]"), Some(4_026_531_836));
        assert_eq!(namespace_inode("net:[1]"), None);
        assert_eq!(namespace_inode("pid:[x]"), None);
    }
}
