//! A process killed with SIGKILL in the middle of a command leaves nothing running for long:
//! under a supervisor the command ends at once (the supervisor's parent-death signal); run
//! directly, in its cgroup or only its process group, it lives on until the next start calls
//! `reap_orphans`, which ends it and removes its cgroup.
//!
//! "The killed process" is this test binary run again with only
//! [`acts_as_the_killed_process`] selected: it starts `run_command` with the script and the
//! containment the parent test chose, and waits. The parent test SIGKILLs it once the command's
//! sleepers run.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use harnessx::Sandbox;
use harnessx_builtin::bash::{Containment, RunLimits, reap_orphans, run_command};
use harnessx_builtin::{BubblewrapSandbox, LocalSandbox};
use tokio_util::sync::CancellationToken;

use super::bash_support::{bwrap_available, export_marker, kill_marked, marked, marker};

/// The variable that makes this binary act as the killed process: the containment to use.
const ROLE_ENV: &str = "HX_ORPHANS_ROLE";
/// The script the killed process runs.
const SCRIPT_ENV: &str = "HX_ORPHANS_SCRIPT";

/// One test at a time: `reap_orphans` in one would end the orphans another is looking at.
static SERIAL: Mutex<()> = Mutex::new(());

/// How the killed process runs its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Under the `harnessx-supervisor` binary, without a cgroup.
    Supervisor,
    /// Directly, in its own cgroup.
    Cgroup,
    /// Directly, in its process group only.
    Group,
    /// In a bubblewrap sandbox's PID namespace, without a cgroup.
    Bubblewrap,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Self::Supervisor => "supervisor",
            Self::Cgroup => "cgroup",
            Self::Group => "group",
            Self::Bubblewrap => "bubblewrap",
        }
    }
}

/// Not a test of its own: the body of the process the other tests kill (see the module docs).
#[test]
fn acts_as_the_killed_process() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let script = std::env::var(SCRIPT_ENV).expect("the script to run");
    let (sandbox, use_cgroup): (Box<dyn Sandbox>, bool) = match role.as_str() {
        "supervisor" => (
            Box::new(
                LocalSandbox::new()
                    .with_supervisor(env!("CARGO_BIN_EXE_harnessx-supervisor"), None::<&str>),
            ),
            false,
        ),
        "cgroup" => (Box::new(LocalSandbox::new()), true),
        "group" => (Box::new(LocalSandbox::new()), false),
        "bubblewrap" => (
            Box::new(BubblewrapSandbox::temporary().expect("a sandbox root")),
            false,
        ),
        other => panic!("unknown role {other}"),
    };
    let limits = RunLimits {
        timeout: Duration::from_secs(60),
        use_cgroup,
        ..RunLimits::default()
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let outcome = runtime.block_on(run_command(
        sandbox.as_ref(),
        &script,
        &limits,
        &CancellationToken::new(),
    ));
    panic!("the command was to be killed, yet it ended: {outcome:?}");
}

/// This binary, run as the killed process with `role` and `script`.
fn spawn_killed_process(role: Role, script: &str) -> Child {
    Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            "suite::bash_orphans::acts_as_the_killed_process",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ROLE_ENV, role.name())
        .env(SCRIPT_ENV, script)
        .env_remove("HARNESSX_SUPERVISOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the killed process starts")
}

/// A script that runs `sleep 30` under `mark`, and with `background` first a `setsid sleep 30 &`
/// that leaves the command's process group.
fn script(mark: &str, background: bool) -> String {
    let background = if background {
        "setsid bash -c 'exec -a \"$HXM-bg\" sleep 30' &\n"
    } else {
        ""
    };
    format!(
        "{}{background}exec -a \"$HXM-fg\" sleep 30",
        export_marker(mark)
    )
}

/// Waits until `n` marked processes run (at most 30 seconds: the process has to start).
fn wait_for_sleepers(mark: &str, n: usize, child: &mut Child) {
    let end = Instant::now() + Duration::from_secs(30);
    while marked(mark).len() < n {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the process to kill exited first: {status}");
        }
        assert!(Instant::now() < end, "the command's sleepers did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to `within` for every marked process to be gone; returns those left.
fn left_after(mark: &str, within: Duration) -> Vec<i32> {
    let end = Instant::now() + within;
    loop {
        let left = marked(mark);
        if left.is_empty() || Instant::now() >= end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The cgroup v2 directory process `pid` is in.
fn cgroup_of(pid: i32) -> Option<PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split(' ').next()? == "cgroup2").then(|| left.split(' ').nth(4))?
    })?;
    Some(PathBuf::from(mount).join(path.trim_start_matches('/')))
}

/// SIGKILL, and wait for it so it is not left a zombie.
fn kill(mut child: Child) {
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

/// Whether this host gives commands a cgroup; under CI it must.
fn cgroups_here() -> bool {
    if Containment::host() == Containment::Cgroup {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must run where this process can make cgroup v2 children (root with a writable \
         cgroup2 mount); here commands are only contained by their process group"
    );
    eprintln!("skipping: no writable cgroup v2 hierarchy here");
    false
}

#[test]
fn a_supervised_command_ends_when_its_process_is_killed() {
    // No restart and no reaping: the supervisor's parent-death signal alone.
    ends_with_its_process(Role::Supervisor, "supervisor");
}

/// Runs a command (and, the second time, one that leaves a background child) under `role` in a
/// process, kills the process, and checks that no sleeper of the command is left 3 s later,
/// with nothing restarted or reaped.
fn ends_with_its_process(role: Role, name: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for background in [false, true] {
        let mark = marker(&format!("orphan-{name}-{background}"));
        let mut child = spawn_killed_process(role, &script(&mark, background));
        wait_for_sleepers(&mark, 1 + usize::from(background), &mut child);
        kill(child);
        let left = left_after(&mark, Duration::from_secs(3));
        kill_marked(&mark);
        assert_eq!(
            left,
            Vec::<i32>::new(),
            "background {background}: the command outlived the process that ran it"
        );
    }
}

#[tokio::test]
async fn a_bubblewrap_command_ends_when_its_process_is_killed() {
    if !bwrap_available().await {
        return;
    }
    // bubblewrap dies with its parent, and the PID namespace with it.
    ends_with_its_process(Role::Bubblewrap, "bwrap");
}

#[test]
fn the_next_start_ends_a_killed_process_s_cgroup_and_removes_it() {
    if !cgroups_here() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for background in [false, true] {
        let mark = marker(&format!("orphan-cgroup-{background}"));
        let mut child = spawn_killed_process(Role::Cgroup, &script(&mark, background));
        let killed_pid = i32::try_from(child.id()).unwrap();
        wait_for_sleepers(&mark, 1 + usize::from(background), &mut child);
        let sleepers = marked(&mark);
        let cgroup = cgroup_of(sleepers[0]).expect("the sleeper's cgroup");
        let name = cgroup.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!("harnessx-{killed_pid}.")),
            "the command ran in {}",
            cgroup.display()
        );
        for pid in &sleepers {
            assert_eq!(
                cgroup_of(*pid).as_ref(),
                Some(&cgroup),
                "every sleeper in it"
            );
        }
        kill(child);
        // Nothing ends them on its own: the owner is gone and they were re-parented.
        std::thread::sleep(Duration::from_millis(300));
        let orphans = marked(&mark);
        assert_eq!(orphans.len(), sleepers.len(), "they should still run");
        assert!(cgroup.is_dir());

        // This process starts after the killed one: it ends them.
        let reaped = reap_orphans();
        let left = marked(&mark);
        let still_there = cgroup.exists();
        kill_marked(&mark);
        assert_eq!(
            left,
            Vec::<i32>::new(),
            "background {background}: {reaped:?}"
        );
        assert!(
            !still_there,
            "{} was not removed: {reaped:?}",
            cgroup.display()
        );
        assert!(reaped.cgroups >= 1, "{reaped:?}");
        assert_eq!(reaped.left, 0, "{reaped:?}");
    }
}

#[test]
fn the_next_start_ends_a_killed_process_s_commands_by_their_marker() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for background in [false, true] {
        let mark = marker(&format!("orphan-group-{background}"));
        let mut child = spawn_killed_process(Role::Group, &script(&mark, background));
        let killed_pid = child.id();
        wait_for_sleepers(&mark, 1 + usize::from(background), &mut child);
        let sleepers = marked(&mark);
        for pid in &sleepers {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
            let prefix = format!("HARNESSX_COMMAND={killed_pid}.");
            assert!(
                environ
                    .split(|&b| b == 0)
                    .any(|e| e.starts_with(prefix.as_bytes())),
                "sleeper {pid} does not name its owner"
            );
        }
        kill(child);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(marked(&mark).len(), sleepers.len(), "they should still run");

        let reaped = reap_orphans();
        let left = marked(&mark);
        kill_marked(&mark);
        assert_eq!(
            left,
            Vec::<i32>::new(),
            "background {background}: {reaped:?}"
        );
        assert!(reaped.processes >= sleepers.len(), "{reaped:?}");
        assert_eq!(reaped.left, 0, "{reaped:?}");
    }
}

#[test]
fn the_commands_of_a_live_process_are_left_alone() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mark = marker("orphan-live");
    let mut child = spawn_killed_process(Role::Group, &script(&mark, true));
    wait_for_sleepers(&mark, 2, &mut child);
    let _ = reap_orphans();
    let still = marked(&mark).len();
    kill(child);
    let _ = reap_orphans();
    let after = left_after(&mark, Duration::from_secs(1));
    kill_marked(&mark);
    assert_eq!(still, 2, "the sleepers of a live process were killed");
    assert_eq!(after, Vec::<i32>::new());
}

#[test]
fn a_supervisor_outlives_the_thread_that_started_it() {
    // The parent-death signal comes when the parent's thread exits; the supervisor then finds
    // its parent process still there and goes on.
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mark = marker("orphan-thread");
    let script = format!("{}exec -a \"$HXM\" sleep 30", export_marker(&mark));
    let watched = mark.clone();
    // The thread stays until the command runs, so the supervisor has armed its signal by then.
    let mut supervisor = std::thread::spawn(move || {
        let mut supervisor = Command::new(env!("CARGO_BIN_EXE_harnessx-supervisor"))
            .args(["bash", "-c", &script])
            .stdin(Stdio::null())
            .spawn()
            .expect("the supervisor starts");
        wait_for_sleepers(&watched, 1, &mut supervisor);
        supervisor
    })
    .join()
    .expect("the thread that started it");
    std::thread::sleep(Duration::from_millis(300));
    let running = marked(&mark).len();
    let exited = supervisor.try_wait().expect("its status");
    supervisor.kill().expect("SIGKILL");
    supervisor.wait().expect("reaped");
    kill_marked(&mark);
    assert_eq!(exited, None, "the supervisor stopped when a thread exited");
    assert_eq!(running, 1, "the command stopped when a thread exited");
}

#[test]
fn a_supervisor_whose_starter_already_died_starts_nothing() {
    let gone = Command::new("true").spawn().expect("true starts");
    let gone_pid = gone.id();
    let mut gone = gone;
    gone.wait().expect("true exits");
    let pidns = std::fs::read_link("/proc/self/ns/pid").expect("the PID namespace");
    let pidns = pidns.to_string_lossy();
    let inode = pidns
        .strip_prefix("pid:[")
        .and_then(|s| s.strip_suffix(']'))
        .expect("pid:[inode]");
    let mark = marker("orphan-late");
    let out = Command::new(env!("CARGO_BIN_EXE_harnessx-supervisor"))
        .args([
            "bash",
            "-c",
            &format!("{}exec -a \"$HXM\" sleep 30", export_marker(&mark)),
        ])
        .env("HARNESSX_COMMAND", format!("{gone_pid}.1.{inode}"))
        .output()
        .expect("the supervisor runs");
    let started = marked(&mark);
    kill_marked(&mark);
    assert_eq!(started, Vec::<i32>::new(), "the command was started");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "harnessx supervisor: the process that started the command (pid {gone_pid}) has \
             already exited, so the command is not started\n"
        )
    );
}
