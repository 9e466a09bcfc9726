//! A cgroup per command: every process the command starts stays in it, whatever it does with
//! sessions and process groups, so the whole tree can be listed, limited and killed.
//!
//! Command cgroups are made under the cgroup this process runs in, in the cgroup v2 hierarchy
//! (`harnessx-<owner>-<n>`, where `<owner>` names this process unambiguously: see
//! [`owner`](super::owner)), and killed through `cgroup.kill`. When the `pids` controller is
//! available there, `pids.max` bounds how many processes the command may have at once; this
//! module enables the controller for the children of this process's cgroup when it may
//! (`+pids` in `cgroup.subtree_control`). On hosts that still mount a cgroup v1 `pids`
//! hierarchy (hybrid layouts), a second cgroup there carries the limit and another list of
//! members.
//!
//! Whether this works is found out once per process, by making and removing a probe cgroup:
//! it needs a writable cgroup v2 hierarchy (root, or a delegated subtree such as a systemd user
//! service) and a kernel with `cgroup.kill` (Linux 5.14 or later).
//!
//! The cgroups of a process that died without removing them (killed with SIGKILL while a command
//! ran) are found again by their names: [`stale`] lists those whose owner is gone, for
//! [`reap_orphans`](super::reap_orphans) to kill and remove.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::process::{Pid, Signal, kill_process};

use super::owner::{CgroupOwner, Owner};
use super::procfs::ProcStat;

/// Where this process may make command cgroups.
#[derive(Debug, Default)]
struct CgroupHome {
    /// This process's cgroup in the v2 hierarchy, when children can be made and killed there.
    v2: Option<PathBuf>,
    /// Whether command cgroups in `v2` get a `pids` controller.
    v2_pids: bool,
    /// This process's cgroup in a v1 `pids` hierarchy, when children can be made there.
    pids_v1: Option<PathBuf>,
}

/// What the host allows, found out once.
fn home() -> &'static CgroupHome {
    static HOME: OnceLock<CgroupHome> = OnceLock::new();
    HOME.get_or_init(discover)
}

/// Whether commands run in their own cgroup v2 here (see the module docs).
pub(crate) fn tracking_available() -> bool {
    home().v2.is_some()
}

/// Whether command cgroups carry a process limit (`pids.max`) here.
pub(crate) fn pids_limit_available() -> bool {
    let home = home();
    (home.v2.is_some() && home.v2_pids) || home.pids_v1.is_some()
}

fn discover() -> CgroupHome {
    let (Ok(mountinfo), Ok(own)) = (
        std::fs::read_to_string("/proc/self/mountinfo"),
        std::fs::read_to_string("/proc/self/cgroup"),
    ) else {
        return CgroupHome::default();
    };
    let mut home = CgroupHome::default();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            home.v2 = own_dir(&mountinfo, path, |fstype, _| fstype == "cgroup2")
                .filter(|dir| probe(dir, true));
        } else if controllers.split(',').any(|c| c == "pids") {
            home.pids_v1 = own_dir(&mountinfo, path, |fstype, options| {
                fstype == "cgroup" && options.split(',').any(|o| o == "pids")
            })
            .filter(|dir| probe(dir, false));
        }
    }
    if let Some(dir) = &home.v2 {
        home.v2_pids = enable_pids(dir);
    }
    home
}

/// The directory of this process's cgroup `path` under a mount that `wanted(fstype, options)`
/// accepts.
fn own_dir(mountinfo: &str, path: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        // id parent dev root mountpoint options [optional...] - fstype source superoptions
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (root, mount_point) = (unescape(left.get(3)?), unescape(left.get(4)?));
        if !wanted(right.first()?, right.get(2).unwrap_or(&"")) {
            return None;
        }
        let relative = Path::new(path).strip_prefix(&root).ok()?;
        let dir = Path::new(&mount_point).join(relative);
        dir.is_dir().then_some(dir)
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a child cgroup can be made (and, for v2, killed) under `dir`, and processes moved
/// into it.
fn probe(dir: &Path, v2: bool) -> bool {
    let procs_writable =
        rustix::fs::access(dir.join("cgroup.procs"), rustix::fs::Access::WRITE_OK).is_ok();
    let child = dir.join(format!("harnessx-probe-{}", owner_name()));
    if !procs_writable || std::fs::create_dir(&child).is_err() {
        return false;
    }
    let usable = !v2 || child.join("cgroup.kill").is_file();
    let _ = std::fs::remove_dir(&child);
    usable
}

/// This process's part of its cgroups' names: its owner name, or only its pid when `/proc`
/// does not give one.
fn owner_name() -> String {
    Owner::current().map_or_else(|| std::process::id().to_string(), |o| o.to_string())
}

/// The command cgroups under this process's cgroup whose owner is gone (see the module docs):
/// what a dead process left behind. Each may still hold processes.
pub(crate) fn stale() -> Vec<CommandCgroup> {
    let home = home();
    let Some(v2) = &home.v2 else {
        return Vec::new();
    };
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| CgroupOwner::of(name).is_some_and(|o| o.is_gone()))
            .collect()
    };
    let mut found = names(v2);
    if let Some(v1) = &home.pids_v1 {
        found.extend(names(v1));
    }
    found.sort_unstable();
    found.dedup();
    found
        .into_iter()
        .map(|name| CommandCgroup {
            v2: v2.join(&name),
            pids_v1: home
                .pids_v1
                .as_ref()
                .map(|v1| v1.join(&name))
                .filter(|dir| dir.is_dir()),
            limit: None,
        })
        .collect()
}

/// Makes sure children of `dir` get the `pids` controller, when the hierarchy offers it.
fn enable_pids(dir: &Path) -> bool {
    let has = |file: &str| {
        std::fs::read_to_string(dir.join(file))
            .is_ok_and(|text| text.split_whitespace().any(|c| c == "pids"))
    };
    if !has("cgroup.controllers") {
        return false;
    }
    has("cgroup.subtree_control")
        || std::fs::write(dir.join("cgroup.subtree_control"), "+pids").is_ok()
}

/// One command's cgroup(s). Dropping it removes the directories that are empty by then.
#[derive(Debug)]
pub(crate) struct CommandCgroup {
    /// The v2 cgroup (killed through `cgroup.kill`).
    v2: PathBuf,
    /// The v1 `pids` cgroup, on hybrid hosts.
    pids_v1: Option<PathBuf>,
    /// The `pids.max` written, if one was.
    limit: Option<u32>,
}

impl CommandCgroup {
    /// Makes a cgroup for one command, limited to `max_processes` when the host allows it.
    /// `None` when this host gives no usable cgroup v2 hierarchy.
    pub fn create(max_processes: u32) -> Option<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let home = home();
        let name = format!(
            "harnessx-{}-{}",
            owner_name(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let v2 = home.v2.as_ref()?.join(&name);
        std::fs::create_dir(&v2).ok()?;
        let mut cgroup = Self {
            v2,
            pids_v1: None,
            limit: None,
        };
        let limit = max_processes.to_string();
        if home.v2_pids && std::fs::write(cgroup.v2.join("pids.max"), &limit).is_ok() {
            cgroup.limit = Some(max_processes);
        } else if let Some(base) = &home.pids_v1 {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                if std::fs::write(dir.join("pids.max"), &limit).is_ok() {
                    cgroup.limit = Some(max_processes);
                }
                cgroup.pids_v1 = Some(dir);
            }
        }
        Some(cgroup)
    }

    /// The `pids.max` this cgroup enforces, if any.
    pub fn limit(&self) -> Option<u32> {
        self.limit
    }

    fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.v2).chain(self.pids_v1.as_ref())
    }

    /// Moves process `pid` into the cgroup. Its later children are born in it.
    pub fn enter(&self, pid: i32) -> io::Result<()> {
        std::fs::write(self.v2.join("cgroup.procs"), pid.to_string())?;
        if let Some(dir) = &self.pids_v1 {
            std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }

    /// Every process in the cgroup (v2 and v1 lists merged).
    pub fn members(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .dirs()
            .filter_map(|dir| std::fs::read_to_string(dir.join("cgroup.procs")).ok())
            .flat_map(|text| {
                text.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Whether any process is still in the cgroup.
    pub fn populated(&self) -> bool {
        let events = std::fs::read_to_string(self.v2.join("cgroup.events"));
        let v2 = match events {
            Ok(text) => text.lines().any(|l| l.trim() == "populated 1"),
            Err(_) => false,
        };
        v2 || !self.members().is_empty()
    }

    /// Whether a member is still running: not a zombie, not already gone from `/proc`.
    pub fn has_live_members(&self) -> bool {
        self.members()
            .into_iter()
            .any(|pid| ProcStat::of(pid).is_some_and(|p| !p.dead))
    }

    /// Sends `signal` to every member.
    pub fn signal(&self, signal: Signal) {
        for pid in self.members() {
            if let Some(pid) = Pid::from_raw(pid) {
                let _ = kill_process(pid, signal);
            }
        }
    }

    /// Kills every member at once (`cgroup.kill`), and whatever the v1 list still shows.
    pub fn kill(&self) {
        let _ = std::fs::write(self.v2.join("cgroup.kill"), "1");
        if self.pids_v1.is_some() {
            self.signal(Signal::KILL);
        }
    }

    /// Whether a fork was refused because the command reached its process limit.
    pub fn limit_reached(&self) -> bool {
        self.dirs().any(|dir| {
            std::fs::read_to_string(dir.join("pids.events")).is_ok_and(|text| {
                text.lines().any(|l| {
                    l.strip_prefix("max ")
                        .and_then(|n| n.trim().parse::<u64>().ok())
                        .is_some_and(|n| n > 0)
                })
            })
        })
    }

    /// Removes the cgroup directories, and any cgroups a command made inside them; `false`
    /// while one still holds a process.
    pub fn remove(&self) -> bool {
        let mut all = true;
        for dir in self.dirs() {
            if dir.exists() && !remove_tree(dir, MAX_NESTING) {
                all = false;
            }
        }
        all
    }

    /// The v2 cgroup's directory.
    pub fn path(&self) -> &Path {
        &self.v2
    }
}

/// How deep cgroups a command made inside its own are looked for.
const MAX_NESTING: u32 = 16;

/// Removes cgroup `dir` after the cgroups inside it (a cgroup's own files go with it).
fn remove_tree(dir: &Path, depth: u32) -> bool {
    if depth > 0
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path(), depth - 1);
            }
        }
    }
    std::fs::remove_dir(dir).is_ok() || !dir.exists()
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/sys/fs/my\040cgroup"), "/sys/fs/my cgroup");
        assert_eq!(unescape(r"/plain"), "/plain");
        assert_eq!(unescape(r"trailing\04"), r"trailing\04");
    }

    #[test]
    fn the_cgroup_of_this_process_is_found_under_its_mount() {
        let dir = std::env::temp_dir();
        let mountinfo = format!(
            "41 31 0:38 / {} rw,relatime - cgroup2 cgroup2 rw\n\
             39 31 0:36 / /nonexistent/pids rw - cgroup cgroup rw,pids\n",
            dir.display()
        );
        assert_eq!(
            own_dir(&mountinfo, "/", |fstype, _| fstype == "cgroup2"),
            Some(dir.join(""))
        );
        // A v1 mount whose directory is missing is not used.
        assert_eq!(
            own_dir(&mountinfo, "/", |fstype, o| fstype == "cgroup"
                && o.contains("pids")),
            None
        );
    }
}
