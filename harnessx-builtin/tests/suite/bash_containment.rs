//! Processes that leave the command's process group (`setsid`, a daemon's double fork) end with
//! the call too, and a command cannot start unbounded numbers of processes.
//!
//! Each mechanism is tested where it can run: the cgroup (the default where the host lets this
//! process make cgroups, as root on CI), the subreaper supervisor (forced with `use_cgroup:
//! false`), bubblewrap's PID namespace, and the bare process group, whose known escape is shown.

use std::sync::Arc;
use std::time::Duration;

use harnessx::Sandbox;
use harnessx_builtin::bash::{
    BashOptions, Containment, ProcessLimit, RunLimits, SUPERVISOR_LIMIT_STATUS, run_command,
};
use harnessx_builtin::{BubblewrapSandbox, LocalSandbox};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::bash_support::{
    bwrap_available, export_marker, fast_options, field, kill_marked, marked, marker,
    registry_with, run, wait_gone,
};

/// Waits up to two seconds for every marked process to be gone; returns those left.
async fn left_after(marker: &str) -> Vec<i32> {
    for _ in 0..100 {
        if marked(marker).is_empty() {
            return Vec::new();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    marked(marker)
}

/// A script that starts a `setsid` sleeper and a double-forked daemon under `marker`, and waits
/// until both run.
fn escapes(marker: &str) -> String {
    format!(
        "{}setsid bash -c 'exec -a \"$HXM-setsid\" sleep 1000' &\n\
         ( setsid bash -c '( exec -a \"$HXM-daemon\" sleep 1000 ) & exit 0' & )\n\
         for _ in $(seq 100); do [ \"$(pgrep -fc -- \"$HXM\")\" -ge 2 ] && break; sleep 0.05; done\n\
         echo started $(pgrep -fc -- \"$HXM\")",
        export_marker(marker)
    )
}

/// Whether this host gives the cgroup path; under CI it must.
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

fn limits(timeout: f64, use_cgroup: bool) -> RunLimits {
    RunLimits {
        timeout: Duration::from_secs_f64(timeout),
        kill_grace: Duration::from_millis(300),
        drain: Duration::from_millis(200),
        use_cgroup,
        ..RunLimits::default()
    }
}

#[tokio::test]
async fn setsid_and_double_forked_processes_end_with_the_call() {
    if !cgroups_here() {
        return;
    }
    let mark = marker("cgroup-exit");
    assert_eq!(LocalSandbox::new().containment(), Containment::Cgroup);
    let registry = registry_with(fast_options());
    let result = run(&registry, &escapes(&mark), None).await;
    let left = left_after(&mark).await;
    kill_marked(&mark);
    assert!(
        result.content.starts_with("started 2\n"),
        "{}",
        result.content
    );
    assert_eq!(field(&result, "ended_background"), &json!(true));
    assert_eq!(left, Vec::<i32>::new(), "processes outlived the call");
}

#[tokio::test]
async fn setsid_and_double_forked_processes_end_on_timeout_and_cancel() {
    if !cgroups_here() {
        return;
    }
    let mark = marker("cgroup-timeout");
    let script = format!("{}\nsleep 100", escapes(&mark));
    let outcome = run_command(
        &LocalSandbox::new(),
        &script,
        &limits(2.0, true),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let left = left_after(&mark).await;
    kill_marked(&mark);
    assert!(outcome.timed_out);
    assert_eq!(outcome.containment, Containment::Cgroup);
    assert!(
        outcome.output.text.starts_with("started 2"),
        "{:?}",
        outcome.output
    );
    assert_eq!(left, Vec::<i32>::new(), "processes outlived the timeout");

    // Cancelled: the same.
    let mark = marker("cgroup-cancel");
    let script = format!("{}\nsleep 100", escapes(&mark));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watch = mark.clone();
    tokio::spawn(async move {
        for _ in 0..200 {
            if marked(&watch).len() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trigger.cancel();
    });
    let outcome = run_command(&LocalSandbox::new(), &script, &limits(30.0, true), &cancel)
        .await
        .unwrap();
    let left = left_after(&mark).await;
    kill_marked(&mark);
    assert!(outcome.cancelled);
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "processes outlived the cancellation"
    );
}

#[tokio::test]
async fn a_dropped_call_ends_escaped_processes_too() {
    if !cgroups_here() {
        return;
    }
    let mark = marker("cgroup-drop");
    let script = format!("{}\nsleep 100", escapes(&mark));
    let (sandbox, limits, cancel) = (
        LocalSandbox::new(),
        limits(30.0, true),
        CancellationToken::new(),
    );
    let run = run_command(&sandbox, &script, &limits, &cancel);
    // The engine gives up on the call: the future is dropped while the command runs.
    let dropped = tokio::time::timeout(Duration::from_secs(2), run).await;
    assert!(
        dropped.is_err(),
        "the command should still have been running"
    );
    let left = left_after(&mark).await;
    kill_marked(&mark);
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "processes outlived the dropped call"
    );
}

#[tokio::test]
async fn the_supervisor_ends_escaped_processes_without_cgroups() {
    let supervisor = env!("CARGO_BIN_EXE_harnessx-supervisor");
    let sandbox = LocalSandbox::new().with_supervisor(supervisor, None::<&str>);
    assert!(matches!(
        sandbox.containment(),
        Containment::Cgroup | Containment::Subreaper
    ));

    let mark = marker("subreaper-exit");
    let outcome = run_command(
        &sandbox,
        &format!("{}; exit 3", escapes(&mark)),
        &limits(20.0, false),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let left = left_after(&mark).await;
    kill_marked(&mark);
    assert_eq!(outcome.containment, Containment::ProcessGroup);
    assert_eq!(outcome.output.text, "started 2\n");
    assert_eq!(
        outcome.exit_code,
        Some(3),
        "the command's status comes through"
    );
    assert_eq!(left, Vec::<i32>::new(), "processes outlived the call");

    let mark = marker("subreaper-timeout");
    let outcome = run_command(
        &sandbox,
        &format!("{}\nsleep 100", escapes(&mark)),
        &limits(2.0, false),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let left = left_after(&mark).await;
    kill_marked(&mark);
    assert!(outcome.timed_out);
    assert!(outcome.output.text.starts_with("started 2"));
    assert_eq!(left, Vec::<i32>::new(), "processes outlived the timeout");
}

#[tokio::test]
async fn a_missing_supervisor_is_explained() {
    let sandbox =
        LocalSandbox::new().with_supervisor("/nonexistent/harnessx-supervisor", None::<&str>);
    let err = sandbox.start().await.unwrap_err().to_string();
    assert_eq!(
        err,
        "the local sandbox cannot start: its supervisor /nonexistent/harnessx-supervisor does not \
         exist; build it (`cargo build -p harnessx-builtin --bin harnessx-supervisor`) or give \
         `LocalSandbox::with_supervisor` the path of a program that calls \
         `harnessx_builtin::bash::supervise`"
    );
}

#[tokio::test]
async fn the_supervisor_explains_its_own_failures() {
    let supervisor = env!("CARGO_BIN_EXE_harnessx-supervisor");
    let usage = tokio::process::Command::new(supervisor)
        .output()
        .await
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&usage.stderr),
        "harnessx supervisor: no command to run; usage: harnessx-supervisor PROGRAM [ARGS...]\n"
    );
    let missing = tokio::process::Command::new(supervisor)
        .arg("/nonexistent/program")
        .output()
        .await
        .unwrap();
    assert_eq!(missing.status.code(), Some(127));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "harnessx supervisor: could not start `/nonexistent/program`: No such file or directory \
         (os error 2)\n"
    );
    let killed = tokio::process::Command::new(supervisor)
        .args(["bash", "-c", "kill -9 $$"])
        .output()
        .await
        .unwrap();
    assert_eq!(killed.status.code(), Some(128 + 9));
}

#[tokio::test]
async fn without_cgroup_or_supervisor_setsid_escapes_the_process_group() {
    // The documented limit of the bare process group: a new session is not in it.
    let mark = marker("group-only");
    let outcome = run_command(
        &LocalSandbox::new(),
        &format!(
            "{}setsid bash -c 'exec -a \"$HXM\" sleep 1000' & sleep 0.3; echo started",
            export_marker(&mark)
        ),
        &limits(20.0, false),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let survivors = marked(&mark);
    kill_marked(&mark);
    assert_eq!(outcome.containment, Containment::ProcessGroup);
    assert_eq!(outcome.output.text, "started\n");
    assert_eq!(
        survivors.len(),
        1,
        "the escape this test documents did not happen"
    );
    for pid in survivors {
        assert!(wait_gone(pid, Duration::from_secs(2)).await);
    }
}

#[tokio::test]
async fn a_fork_bomb_is_bounded_and_reported() {
    if !cgroups_here() {
        return;
    }
    if ProcessLimit::host() != ProcessLimit::Cgroup {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run where command cgroups get a pids limit"
        );
        eprintln!("skipping: no cgroup pids controller here");
        return;
    }
    let mark = marker("bomb");
    let registry = registry_with(BashOptions {
        max_processes: 64,
        ..fast_options()
    });
    let watch = mark.clone();
    let sampler = tokio::spawn(async move {
        let mut peak = 0;
        for _ in 0..250 {
            peak = peak.max(marked(&watch).len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        peak
    });
    let result = run(
        &registry,
        &format!(
            "{}for i in $(seq 10000); do (exec -a \"$HXM\" sleep 1000) & done 2>/dev/null; \
             echo looped",
            export_marker(&mark)
        ),
        Some(3.0),
    )
    .await;
    let peak = sampler.await.unwrap();
    let left = left_after(&mark).await;
    kill_marked(&mark);
    assert_eq!(
        field(&result, "process_limit_reached"),
        &json!(true),
        "{}",
        result.content
    );
    assert!(
        result.content.contains(
            "[note: the command reached its limit of 64 processes at once, so some of its forks \
             failed (`Resource temporarily unavailable`); start fewer processes at once]"
        ),
        "{}",
        result.content
    );
    assert!(
        peak <= 64,
        "{peak} sleepers ran at once, more than the limit of 64"
    );
    assert!(
        peak >= 32,
        "only {peak} sleepers ran: the loop did not get going"
    );
    assert_eq!(left, Vec::<i32>::new(), "sleepers outlived the call");
}

#[tokio::test]
async fn too_small_a_process_limit_is_refused() {
    let err = harnessx_builtin::bash::register_bash_tools(
        &harnessx::ToolRegistry::new(),
        BashOptions {
            max_processes: 3,
            ..BashOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "bash option `max_processes` is 3, but it must be at least 8"
    );
}

#[tokio::test]
async fn bubblewrap_ends_escaped_processes_with_its_pid_namespace() {
    if !bwrap_available().await {
        return;
    }
    let sandbox = Arc::new(BubblewrapSandbox::temporary().unwrap());
    // Without the cgroup: the PID namespace alone (its init dies, and the kernel kills the rest).
    for use_cgroup in [false, true] {
        let mark = marker(&format!("bwrap-{use_cgroup}"));
        let outcome = run_command(
            sandbox.as_ref(),
            &escapes(&mark),
            &limits(20.0, use_cgroup),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        let left = left_after(&mark).await;
        kill_marked(&mark);
        assert_eq!(outcome.output.text, "started 2\n", "{:?}", outcome.output);
        assert_eq!(
            left,
            Vec::<i32>::new(),
            "cgroup {use_cgroup}: processes outlived the call"
        );

        let mark = marker(&format!("bwrap-timeout-{use_cgroup}"));
        let outcome = run_command(
            sandbox.as_ref(),
            &format!("{}\nsleep 100", escapes(&mark)),
            &limits(2.0, use_cgroup),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        let left = left_after(&mark).await;
        kill_marked(&mark);
        assert!(outcome.timed_out);
        assert_eq!(
            left,
            Vec::<i32>::new(),
            "cgroup {use_cgroup}: processes outlived the timeout"
        );
    }
    assert!(matches!(
        sandbox.containment(),
        Containment::Cgroup | Containment::PidNamespace
    ));
}

/// Root on a host without cgroups has no `RLIMIT_NPROC`: the supervisor is its process bound.
/// (Run with cgroups off; as another user `RLIMIT_NPROC` stops the forks first.)
#[tokio::test]
async fn the_supervisor_stops_a_command_past_its_process_limit() {
    let supervisor = env!("CARGO_BIN_EXE_harnessx-supervisor");
    let sandbox = LocalSandbox::new().with_supervisor(supervisor, None::<&str>);
    assert_ne!(sandbox.process_limit(), ProcessLimit::None);
    let mark = marker("supervised-bomb");
    let script = format!(
        "{}for i in $(seq 1 200); do bash -c 'exec -a \"$HXM-sleeper\" sleep 1000' & done\nwait",
        export_marker(&mark)
    );
    let outcome = run_command(
        &sandbox,
        &script,
        &RunLimits {
            max_processes: 20,
            ..limits(30.0, false)
        },
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let left = left_after(&mark).await;
    kill_marked(&mark);
    assert_eq!(left, Vec::<i32>::new(), "processes outlived the call");
    assert!(!outcome.timed_out, "{outcome:?}");
    if rustix::process::getuid().is_root() {
        assert_eq!(
            outcome.exit_code,
            Some(SUPERVISOR_LIMIT_STATUS),
            "{outcome:?}"
        );
        assert!(
            outcome.output.text.contains(
                "harnessx supervisor: the command had more than 20 processes at once (its \
                 limit), so every one of them was stopped"
            ),
            "{}",
            outcome.output.text
        );
    }
}
