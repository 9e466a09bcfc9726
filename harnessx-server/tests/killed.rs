//! A `harnessx serve` process killed with SIGKILL while a run's `run_bash` command sleeps: the
//! command outlives it (nothing of the killed server runs to end it), and the next server on the
//! same SQLite file ends it — and removes its cgroup — before it resumes the run, so by the time
//! the run waits on the recovery question the command is gone.
//!
//! A test binary of its own: any server started in the same process by another test would end
//! the killed server's commands first (as it should), before this test saw them outlive it.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns; a failure is the test failing"
)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::ServeProcess;

/// An agent whose one call sleeps for 30 seconds, with a `setsid` sleeper beside it that
/// leaves the command's process group. Both are told apart from every other process by their
/// arguments, `30.<mark>` and `31.<mark>`.
fn config(mark: u32) -> String {
    format!(
        r#"
[store]
lease_seconds = 2

[agents.sleeper]
model = "script"
builtins = [{{ name = "bash", options = {{ permission = "allow" }} }}]
script = [
  {{ call = "run_bash", arguments = {{ command = "setsid sleep 31.{mark} & sleep 30.{mark}" }} }},
  {{ reply = "saw: {{result}}" }},
]
"#
    )
}

/// A `harnessx serve` process on `db` (a SQLite file or a PostgreSQL URL) with the sleeper
/// agent, logging to `log`.
async fn spawn_server(dir: &Path, db: &str, mark: u32, log: &Path) -> ServeProcess {
    let file = dir.join("harnessx.toml");
    std::fs::write(&file, config(mark)).unwrap();
    let log = std::fs::File::create(log).unwrap();
    ServeProcess::spawn(
        &file,
        db,
        &[("RUST_LOG", "harnessx_builtin=info")],
        log.into(),
    )
    .await
}

/// Live processes run as exactly `sleep <seconds>`.
fn sleepers(seconds: &str) -> Vec<i32> {
    let wanted = format!("sleep\0{seconds}\0");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted.as_bytes())
                && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    stat.rsplit_once(')')
                        .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
                })
        })
        .collect()
}

/// Both sleepers of `mark`.
fn both(mark: u32) -> Vec<i32> {
    let mut pids = sleepers(&format!("30.{mark}"));
    pids.extend(sleepers(&format!("31.{mark}")));
    pids
}

/// The cgroup v2 directory of process `pid`, when it is in a command cgroup.
fn command_cgroup(pid: i32) -> Option<PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    if !path.rsplit('/').next()?.starts_with("harnessx-") {
        return None;
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split(' ').next()? == "cgroup2").then(|| left.split(' ').nth(4))?
    })?;
    Some(PathBuf::from(mount).join(path.trim_start_matches('/')))
}

/// Kills what a failing test would leave behind.
fn kill_sleepers(mark: u32) {
    for pid in both(mark) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
}

/// On each store in turn, not at once: a starting server ends every dead server's commands,
/// the other test's too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_command_has_the_command_ended_before_the_next_one_asks() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("runs.db");
    killed_mid_command(file.to_str().unwrap(), std::process::id() * 10).await;
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    killed_mid_command(&pg.url(), std::process::id() * 10 + 1).await;
}

async fn killed_mid_command(db: &str, mark: u32) {
    let dir = tempfile::tempdir().unwrap();
    let first = spawn_server(dir.path(), db, mark, &dir.path().join("first.log")).await;
    let id = first.server.start_run("sleeper", "nap").await["id"]
        .as_i64()
        .unwrap();
    let mut running = Vec::new();
    for _ in 0..600 {
        running = both(mark);
        if running.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(running.len(), 2, "the command's sleepers did not start");
    let cgroup = command_cgroup(running[0]);

    let mut killed = first.child;
    killed.start_kill().unwrap();
    killed.wait().await.unwrap();
    // Nothing of the killed server is left to end the command (unless a supervisor runs it:
    // then it dies with the server, which is fine too).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let outlived = both(mark);
    if cgroup.is_some() {
        assert_eq!(
            outlived.len(),
            2,
            "the command should outlive the killed server until the next start"
        );
    }

    let log = dir.path().join("second.log");
    let second = spawn_server(dir.path(), db, mark, &log).await;
    let run = second
        .server
        .wait_for(id, &["waiting_input", "completed", "failed"])
        .await;
    let left = both(mark);
    let cgroup_left = cgroup.as_ref().filter(|c| c.exists()).cloned();
    kill_sleepers(mark);
    assert_eq!(run["state"], "waiting_input", "{run}");
    assert_eq!(run["needs_input"][0]["kind"], "recovery", "{run}");
    assert_eq!(run["needs_input"][0]["reason"], "interrupted", "{run}");
    assert_eq!(run["needs_input"][0]["tool_name"], "run_bash", "{run}");
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "the interrupted command still ran when the server asked about it"
    );
    assert_eq!(
        cgroup_left, None,
        "the killed server's command cgroup is left"
    );
    if !outlived.is_empty() {
        let log = std::fs::read_to_string(&log).unwrap();
        assert!(
            log.contains("ended the commands a process that died left behind"),
            "the second server did not say it ended them: {log}"
        );
    }
    drop(second);
}
