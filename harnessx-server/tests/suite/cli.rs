//! The `harnessx` command in a pseudo-terminal (util-linux `script` gives it one): `run` streams
//! the offline agent's run, asks its question at the prompt, and prints the reply; `runs` lists
//! it; `--detach` returns at once. Embedded on a SQLite file, no server.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `harnessx ARGS` in a pseudo-terminal with `input` typed; returns what it printed.
fn in_pty(args: &[&str], input: &str) -> Option<(bool, String)> {
    if Command::new("script").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "`script` (util-linux) is missing"
        );
        eprintln!("skipping: `script` (util-linux) is not installed");
        return None;
    }
    let bin = env!("CARGO_BIN_EXE_harnessx");
    let mut command = String::from(bin);
    for a in args {
        command.push_str(&format!(" '{}'", a.replace('\'', "'\\''")));
    }
    let mut child = Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .env("ASK_USER_TIMEOUT_SECONDS", "600")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    Some((out.status.success(), text))
}

#[test]
fn run_asks_at_the_prompt_streams_the_reply_and_runs_lists_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    let Some((ok, out)) = in_pty(&["run", "assistant", "hi", "--db", db], "2\n") else {
        return;
    };
    assert!(ok, "{out}");
    assert!(
        out.contains("? [Greeting] How should I greet you?"),
        "{out}"
    );
    assert!(
        out.contains("1. Formally") && out.contains("2. Casually"),
        "{out}"
    );
    assert!(
        out.contains("Hello! You chose:") && out.contains("Casually"),
        "{out}"
    );
    assert!(out.contains("→ ask_user("), "the tool call is shown: {out}");
    assert!(
        out.contains("· running") && out.contains("· waiting_input"),
        "progress lines: {out}"
    );

    let (ok, list) = in_pty(&["runs", "--db", db], "").unwrap();
    assert!(ok, "{list}");
    let row = list
        .lines()
        .find(|l| l.contains("assistant"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains("completed") && row.contains("hi"), "{list}");

    let (ok, detached) =
        in_pty(&["run", "assistant", "later", "--detach", "--db", db], "").unwrap();
    assert!(ok, "{detached}");
    assert!(detached.contains("run 2 started"), "{detached}");
}

#[test]
fn bad_command_lines_are_named() {
    let Some((ok, out)) = in_pty(&["run", "assistant"], "") else {
        return;
    };
    assert!(!ok);
    assert!(
        out.contains("run needs a \"prompt\" after the agent"),
        "{out}"
    );
    let (ok, out) = in_pty(&["answer", "abc", "x"], "").unwrap();
    assert!(!ok);
    assert!(out.contains("`abc` is not a run id"), "{out}");
    let (ok, out) = in_pty(&["serve", "--bind", "nowhere"], "").unwrap();
    assert!(!ok);
    assert!(out.contains("--bind `nowhere` is not an address"), "{out}");
    let (ok, out) = in_pty(&["run", "nobody", "x", "--db", ":memory:"], "").unwrap();
    assert!(!ok);
    assert!(out.contains("no agent is named `nobody`"), "{out}");
}
