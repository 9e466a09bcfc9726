//! The `harnessx` command in a pseudo-terminal (util-linux `script` gives it one): `run` streams
//! the offline agent's run, asks its question at the prompt, and prints the reply; `runs` lists
//! it; `--detach` returns at once; `answer` answers a waiting run and refuses what does not fit.
//! Embedded on a SQLite file, no server.

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

#[test]
fn an_option_is_picked_by_its_label_in_any_case() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let Some((ok, out)) = in_pty(
        &["run", "assistant", "hi", "--db", db.to_str().unwrap()],
        "CASUALLY\n",
    ) else {
        return;
    };
    assert!(ok, "{out}");
    assert!(
        out.contains("Hello! You chose:") && out.contains("→ Casually"),
        "{out}"
    );
}

/// Nobody at the prompt (stdin closed, as under a script or a pipe): the run is left waiting —
/// a question unanswered, an approval not denied — and the command says what answers it later.
#[test]
fn a_closed_input_leaves_the_run_waiting_and_says_how_to_answer_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    let Some((ok, out)) = in_pty(&["run", "assistant", "hi", "--db", db], "") else {
        return;
    };
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!(
            "· nobody can answer here (the input is closed); run 1 is left waiting. Answer it \
             later:\n  harnessx answer 1 --select LABEL --db {db}   (or: harnessx answer 1 \
             \"your words\" --db {db})\n  or in the console of `harnessx serve --db {db}`\n"
        )),
        "{out}"
    );
    wait_for_state(db, "1", "waiting_input");
    let (ok, out) = in_pty(&["answer", "1", "--select", "formally", "--db", db], "").unwrap();
    assert!(ok, "{out}");
    wait_for_state(db, "1", "completed");

    let config = dir.path().join("harnessx.toml");
    let cfg = config.to_str().unwrap();
    std::fs::write(
        &config,
        format!(
            "[agents.approver]\nmodel = \"script\"\nbuiltins = [{{ name = \"list_directory\", \
             options = {{ permission = \"ask\", base_path = \"{}\" }} }}]\nscript = [\n  {{ call = \
             \"list_directory\", arguments = {{ path = \".\" }} }},\n  {{ reply = \"saw: {{result}}\" \
             }},\n]\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let (ok, out) = in_pty(
        &["run", "approver", "list", "--config", cfg, "--db", db],
        "",
    )
    .unwrap();
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!(
            "run 2 is left waiting. Answer it later:\n  harnessx approve 2 \
             allow|conversation|deny --db {db} --config {cfg}\n"
        )),
        "{out}"
    );
    let list = wait_for_state(db, "2", "waiting_input");
    assert!(!list.contains("denied"), "{list}");
}

/// A recovery question at the prompt: t, r or s, asked again until one is typed.
#[test]
fn a_recovery_question_is_asked_at_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("harnessx.toml");
    std::fs::write(
        &config,
        r#"
[agents.sleeper]
model = "script"
builtins = [{ name = "bash", options = { permission = "allow" } }]
tool_timeouts = { run_bash = 0.5 }
script = [
  { call = "run_bash", arguments = { command = "sleep 30" } },
  { reply = "saw: {result}" },
]
"#,
    )
    .unwrap();
    let db = dir.path().join("h.db");
    let Some((ok, out)) = in_pty(
        &[
            "run",
            "sleeper",
            "nap",
            "--config",
            config.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        "maybe\nr\n",
    ) else {
        return;
    };
    assert!(ok, "{out}");
    assert!(
        out.contains(
            "! `run_bash` with {\"command\":\"sleep 30\"} was cut off before its outcome was known."
        ),
        "{out}"
    );
    assert!(out.contains("  Type t, r or s."), "{out}");
    // Run again: it times out again and asks again; the input is then closed.
    assert!(out.contains("run 1 is left waiting"), "{out}");
    assert!(
        out.contains("harnessx recover 1 took-effect|run-again|skip --db "),
        "{out}"
    );
}

/// `harnessx runs` until run `id`'s row shows `state` (each call opens the embedded runtime,
/// which drives queued runs as far as they go); bounded in attempts.
fn wait_for_state(db: &str, id: &str, state: &str) -> String {
    let mut last = String::new();
    for _ in 0..30 {
        let (ok, list) = in_pty(&["runs", "--db", db], "").unwrap();
        assert!(ok, "{list}");
        if list
            .lines()
            .any(|l| l.split_whitespace().next() == Some(id) && l.contains(state))
        {
            return list;
        }
        last = list;
    }
    panic!("run {id} never reached {state}: {last}");
}

#[test]
fn answer_answers_a_waiting_run_and_refuses_what_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    let Some((ok, out)) = in_pty(&["run", "assistant", "hi", "--detach", "--db", db], "") else {
        return;
    };
    assert!(ok && out.contains("run 1 started"), "{out}");
    wait_for_state(db, "1", "waiting_input");

    let (ok, out) = in_pty(&["answer", "1", "--select", "Sideways", "--db", db], "").unwrap();
    assert!(!ok, "{out}");
    assert!(
        out.contains("`Sideways` is not one of the options (Formally, Casually)")
            && out.contains("nothing was changed"),
        "{out}"
    );

    let (ok, out) = in_pty(&["answer", "1", "--select", "Casually", "--db", db], "").unwrap();
    assert!(ok, "{out}");
    // The answer is accepted and the run goes back to work; the embedded runtime may already
    // have picked it up (or even finished it) by the time the reply is printed.
    assert!(
        ["queued", "running", "completed"]
            .iter()
            .any(|s| out.contains(&format!("run 1 is {s}"))),
        "{out}"
    );
    wait_for_state(db, "1", "completed");

    let (ok, out) = in_pty(&["answer", "1", "--select", "Casually", "--db", db], "").unwrap();
    assert!(!ok, "{out}");
    assert!(
        out.contains("run 1 is completed, not waiting for input; nothing was changed"),
        "{out}"
    );
}

/// `harnessx serve` logs to stderr: a connector that cannot be started is reported there when
/// its tools are listed, not only in the API's answer.
#[tokio::test]
async fn serve_logs_warnings_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("harnessx.toml");
    let key = "a-long-enough-test-key-0123456789";
    std::fs::write(
        &config,
        format!(
            "[server]\napi_keys = [\"{key}\"]\n\n[connectors.broken]\ncommand = \"/nonexistent/harnessx-test-server\"\n"
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bind = format!("127.0.0.1:{port}");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args([
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--bind",
            &bind,
        ])
        .arg("--db")
        .arg(dir.path().join("h.db"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let base = format!("http://{bind}");
    let mut up = false;
    for _ in 0..100 {
        if http.get(format!("{base}/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(up, "the server did not start");
    let listed = http
        .get(format!("{base}/v2/connectors"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    child.start_kill().unwrap();
    let out = child.wait_with_output().await.unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("WARN") && log.contains("listing the connector's tools failed"),
        "{log}"
    );
    assert!(!log.contains(key), "the API key was logged: {log}");
}

/// A model's text and a tool's output reach the terminal with their control characters made
/// visible: no OSC 52 (clipboard), no retitling, no clearing.
#[test]
fn hostile_bytes_are_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("harnessx.toml");
    std::fs::write(
        &config,
        r#"
[agents.sly]
model = "script"
ask_user = false
script = [
  { call = "write_todos", arguments = { todos = [{ content = "\u001b]0;pwned\u0007", status = "pending" }] } },
  { reply = "done \u001b]52;c;cHduZWQ=\u0007 \u001b[2J" },
]
"#,
    )
    .unwrap();
    let db = dir.path().join("h.db");
    let Some((ok, out)) = in_pty(
        &[
            "run",
            "sly",
            "go",
            "--config",
            config.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        "",
    ) else {
        return;
    };
    assert!(ok, "{out}");
    assert!(out.contains("done \\u{1b}]52;c;cHduZWQ=\\u{7}"), "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
}

#[test]
fn names_a_person_guesses_are_understood() {
    use harnessx_server::cli::{Args, Command};
    let parse = |a: &[&str]| Args::parse(a.iter().map(|s| (*s).to_owned()));
    let serve = parse(&["serve", "--port", "9001"]).unwrap();
    assert_eq!(serve.bind, Some("127.0.0.1:9001".parse().unwrap()));
    assert_eq!(
        parse(&["serve", "--port", "x"]).unwrap_err(),
        "--port `x` is not a port number (1 to 65535), such as 8080"
    );
    assert_eq!(
        parse(&["serve", "--port", "1", "--bind", "0.0.0.0:2"]).unwrap_err(),
        "give --bind or --port, not both"
    );
    assert_eq!(parse(&["--version"]).unwrap().command, Command::Version);
    let approve = parse(&["approve", "7", "conversation"]).unwrap();
    assert_eq!(
        approve.command,
        Command::Approve {
            run: 7,
            decision: "conversation".into()
        }
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("harnessx "));
}

/// The CLI's decision words are the API's: `allow` / `conversation` / `deny` on both, and the
/// API's own names on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_choices_are_named_the_same_in_the_cli_and_the_api() {
    let s = crate::common::Server::start().await;
    for (word, allowed) in [("allow", true), ("conversation", true), ("deny", false)] {
        let id = s.start_run("approver", "list it").await["id"]
            .as_i64()
            .unwrap();
        s.wait_for(id, &["waiting_input"]).await;
        let (status, run) = s
            .post(
                &format!("/v2/runs/{id}/approval"),
                serde_json::json!({"decision": word}),
            )
            .await;
        assert_eq!(status, 200, "{word}: {run}");
        let run = s.wait_for(id, &["completed", "failed"]).await;
        let output = run["output"].as_str().unwrap();
        assert_eq!(!output.contains("denied"), allowed, "{word}: {run}");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(["approve", "1", "maybe", "--server", "127.0.0.1:9"])
        .env("HARNESSX_API_KEY", "a-long-enough-test-key-123")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "`maybe` is not a decision; use allow (this call), conversation (this tool for the \
             rest of the conversation) or deny"
        ),
        "{err}"
    );
}
