//! What `/proc` says about processes: parents, groups and states, to find a command's
//! descendants and whether any of them still runs.

/// One line of `/proc/<pid>/stat`, the fields the bash tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// Exited and waiting to be reaped (`Z`) or dead (`X`).
    pub dead: bool,
    /// When it started, in clock ticks since boot: with the pid, it names one process for as
    /// long as the host runs.
    pub start: u64,
}

impl ProcStat {
    /// Parses `pid (comm) state ppid pgrp ... starttime ...`; `comm` may hold spaces and
    /// parentheses.
    fn parse(stat: &str) -> Option<Self> {
        let (head, rest) = stat.rsplit_once(')')?;
        let pid = head.split_whitespace().next()?.parse().ok()?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // After `comm`: state is field 3 of proc(5), ppid 4, pgrp 5, starttime 22.
        let state = *fields.first()?;
        let ppid = fields.get(1)?.parse().ok()?;
        let pgrp = fields.get(2)?.parse().ok()?;
        let start = fields.get(19)?.parse().ok()?;
        Some(Self {
            pid,
            ppid,
            pgrp,
            dead: matches!(state, "Z" | "X"),
            start,
        })
    }

    /// The process `pid`, when it exists.
    pub fn of(pid: i32) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }
}

/// Every process `/proc` shows; `None` when `/proc` cannot be read.
pub(crate) fn processes() -> Option<Vec<ProcStat>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    Some(
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let name = name.to_str()?;
                if !name.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                ProcStat::of(name.parse().ok()?)
            })
            .collect(),
    )
}

/// The descendants of `root` among `procs` (children, their children, ...), not `root` itself.
pub(crate) fn descendants(root: i32, procs: &[ProcStat]) -> Vec<ProcStat> {
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for p in procs.iter().filter(|p| p.ppid == parent && p.pid != root) {
            if !found.iter().any(|f: &ProcStat| f.pid == p.pid) {
                found.push(*p);
                frontier.push(p.pid);
            }
        }
    }
    found
}

/// Whether `/proc` shows a process of group `pgid` that is not a zombie; `None` when `/proc`
/// cannot be read (then the caller assumes there is one).
pub(crate) fn live_member_of(pgid: i32) -> Option<bool> {
    Some(processes()?.iter().any(|p| p.pgrp == pgid && !p.dead))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_odd_command_names() {
        let tail = "0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        let p = ProcStat::parse(&format!("42 (a (b) c) S 7 42 42 {tail}")).unwrap();
        assert_eq!(
            p,
            ProcStat {
                pid: 42,
                ppid: 7,
                pgrp: 42,
                dead: false,
                start: 98765,
            }
        );
        assert!(
            ProcStat::parse(&format!("43 (z) Z 7 42 42 {tail}"))
                .unwrap()
                .dead
        );
        assert!(ProcStat::parse("43 (z) Z 7 42 42").is_none(), "cut short");
        assert!(ProcStat::parse("garbage").is_none());
        assert!(ProcStat::parse("").is_none());
    }

    #[test]
    fn descendants_follow_every_generation() {
        let p = |pid, ppid| ProcStat {
            pid,
            ppid,
            pgrp: 1,
            dead: false,
            start: 0,
        };
        let procs = [p(1, 0), p(2, 1), p(3, 2), p(4, 3), p(5, 1), p(6, 99)];
        let mut found: Vec<i32> = descendants(2, &procs).iter().map(|p| p.pid).collect();
        found.sort_unstable();
        assert_eq!(found, [3, 4]);
        assert!(descendants(6, &procs).is_empty());
    }

    #[test]
    fn this_process_is_seen() {
        let me = i32::try_from(std::process::id()).unwrap();
        let procs = processes().unwrap();
        assert!(procs.iter().any(|p| p.pid == me && !p.dead && p.start > 0));
    }
}
