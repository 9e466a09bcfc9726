//! The `harnessx` binary's commands about runs against a server given as `--server
//! 127.0.0.1:PORT` (no scheme): `runs` with its filters, `show` (state, what the run waits
//! for, transcript), `answer` with labels in any case, `approve`, `recover`, `cancel`, each
//! command's help, and the errors worded for a person (a refused key, an unknown agent, an
//! answer of the wrong kind).

use std::process::{Command, Stdio};

use crate::common::{KEY, Server};

/// `harnessx ARGS` with stdin closed; returns whether it succeeded, its stdout and its stderr.
async fn harnessx(args: &[&str], key: Option<&str>) -> (bool, String, String) {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let key = key.map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_harnessx"));
        command
            .args(&args)
            .env_remove("HARNESSX_API_KEY")
            .env_remove("HARNESSX_API_KEYS")
            .env_remove("HARNESSX_DATABASE_URL")
            .stdin(Stdio::null());
        if let Some(key) = key {
            command.env("HARNESSX_API_KEY", key);
        }
        let out = command.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

/// `127.0.0.1:PORT` of a test server: an address without a scheme, as a person types it.
fn address(s: &Server) -> String {
    s.base.trim_start_matches("http://").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_filtered_shown_answered_in_any_case_and_cancelled() {
    let s = Server::start().await;
    let server = address(&s);
    let asked = s.start_run("asker", "export it").await["id"]
        .as_i64()
        .unwrap();
    s.wait_for(asked, &["waiting_input"]).await;
    let replied = s.start_run("replier", "hello there").await["id"]
        .as_i64()
        .unwrap();
    s.wait_for(replied, &["completed"]).await;

    let (ok, out, err) = harnessx(
        &[
            "runs",
            "--server",
            &server,
            "--state",
            "waiting_input",
            "--agent",
            "asker",
        ],
        Some(KEY),
    )
    .await;
    assert!(ok, "{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert!(
        rows[0]
            .trim_start()
            .starts_with(&format!("{asked}  waiting_input  asker")),
        "{out}"
    );
    let (ok, out, _) = harnessx(&["runs", "--server", &server, "--limit", "1"], Some(KEY)).await;
    assert!(ok);
    assert_eq!(
        out.lines().count(),
        3,
        "a header, one run, and a note: {out}"
    );
    assert!(out.contains(&format!("{replied}  completed")), "{out}");
    assert!(
        out.ends_with("(more runs: raise --limit, up to 200)\n"),
        "{out}"
    );
    let (ok, out, _) = harnessx(
        &["runs", "--server", &server, "--agent", "nobody"],
        Some(KEY),
    )
    .await;
    assert!(ok);
    assert_eq!(out, "no runs\n");

    let (ok, out, err) = harnessx(
        &["show", &asked.to_string(), "--server", &server],
        Some(KEY),
    )
    .await;
    assert!(ok, "{err}");
    let conversation = format!("run-{asked}");
    let console = format!("{}/console/#/conversations/{conversation}", s.base);
    for expected in [
        format!("run {asked} of asker (version 1), created "),
        format!(
            "\nconversation: {conversation}\nstate: waiting_input\nwaits for an answer:\n  ? [Format] Which format?\n      1. CSV\n      2. JSON\nanswer it:\n  harnessx answer {asked} --select LABEL --server {server}   (or: harnessx answer {asked} \"your words\" --server {server})\n  or in the console: {console}\n"
        ),
        "\ntranscript:\n  you: export it\n  → ask_user(".to_owned(),
        "\n  ? [Format] Which format?\n      1. CSV\n      2. JSON\n".to_owned(),
    ] {
        assert!(
            out.contains(&expected),
            "{expected:?} is missing from:\n{out}"
        );
    }

    // A label in another case is the option's own.
    let (ok, out, err) = harnessx(
        &[
            "answer",
            &asked.to_string(),
            "--select",
            "json",
            "--server",
            &server,
        ],
        Some(KEY),
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.starts_with(&format!("run {asked} is ")), "{out}");
    let done = s.wait_for(asked, &["completed", "failed"]).await;
    assert!(done["output"].as_str().unwrap().ends_with("JSON"), "{done}");

    let (ok, out, _) = harnessx(
        &["show", &asked.to_string(), "--server", &server],
        Some(KEY),
    )
    .await;
    assert!(ok);
    assert!(out.contains("\nstate: completed\n"), "{out}");
    assert!(out.contains("\noutput: saw: "), "{out}");
    assert!(out.contains("\n    answered: JSON\n"), "{out}");
    assert!(!out.contains("waits for"), "{out}");
    assert_eq!(
        out.matches("→ ask_user(").count(),
        1,
        "the call the resumed run made again is shown once: {out}"
    );

    let waiting = s.start_run("asker2", "proceed?").await["id"]
        .as_i64()
        .unwrap();
    s.wait_for(waiting, &["waiting_input"]).await;
    let (ok, out, err) = harnessx(
        &["cancel", &waiting.to_string(), "--server", &server],
        Some(KEY),
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(out, format!("run {waiting} is cancelled\n"));
    let (ok, _, err) = harnessx(
        &["cancel", &waiting.to_string(), "--server", &server],
        Some(KEY),
    )
    .await;
    assert!(!ok);
    assert_eq!(
        err,
        format!("harnessx: run {waiting} is already cancelled; it cannot be cancelled\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_of_the_wrong_kind_names_the_command_that_fits() {
    let s = Server::start().await;
    let server = address(&s);
    let id = s.start_run("approver", "list it").await["id"]
        .as_i64()
        .unwrap();
    s.wait_for(id, &["waiting_input"]).await;

    let (ok, _, err) = harnessx(
        &["answer", &id.to_string(), "yes", "--server", &server],
        Some(KEY),
    )
    .await;
    assert!(!ok);
    assert_eq!(
        err,
        format!(
            "harnessx: run {id} waits for an approval decision, not an answer; nothing was \
             changed. Answer it with:\n  harnessx approve {id} allow|conversation|deny --server \
             {server}\n  or in the console: {}/console/#/conversations/run-{id}\n",
            s.base
        )
    );
    let (ok, _, err) = harnessx(
        &["recover", &id.to_string(), "skip", "--server", &server],
        Some(KEY),
    )
    .await;
    assert!(!ok);
    assert!(
        err.starts_with(&format!(
            "harnessx: run {id} waits for an approval decision, not a recovery choice; nothing \
             was changed. Answer it with:\n  harnessx approve {id}"
        )),
        "{err}"
    );
    let (ok, out, err) = harnessx(
        &["approve", &id.to_string(), "Allow", "--server", &server],
        Some(KEY),
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.starts_with(&format!("run {id} is ")), "{out}");
    let done = s.wait_for(id, &["completed"]).await;
    assert!(
        done["output"].as_str().unwrap().contains("notes.txt"),
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovery_question_is_answered_with_recover() {
    let s = Server::start_with(
        |c| {
            c + r#"
[agents.sleeper]
model = "script"
builtins = [{ name = "bash", options = { permission = "allow" } }]
tool_timeouts = { run_bash = 0.5 }
script = [
  { call = "run_bash", arguments = { command = "sleep 30" } },
  { reply = "saw: {result}" },
]
"#
        },
        |o| o,
    )
    .await;
    let server = address(&s);
    let id = s.start_run("sleeper", "nap").await["id"].as_i64().unwrap();
    let run = s.wait_for(id, &["waiting_input", "failed"]).await;
    assert_eq!(run["needs_input"][0]["kind"], "recovery", "{run}");

    let (ok, out, _) = harnessx(&["show", &id.to_string(), "--server", &server], Some(KEY)).await;
    assert!(ok);
    assert!(
        out.contains(&format!(
            "waits for a recovery decision:\n  ! recovery: `run_bash` with {{\"command\":\"sleep \
             30\"}} was cut off before its outcome was known\nanswer it:\n  harnessx recover {id} \
             took-effect|run-again|skip --server {server}\n"
        )),
        "{out}"
    );
    let (ok, _, err) = harnessx(
        &["recover", &id.to_string(), "later", "--server", &server],
        Some(KEY),
    )
    .await;
    assert!(!ok);
    assert_eq!(
        err,
        "harnessx: `later` is not a recovery choice; use took-effect [RESULT], run-again or skip \
         [NOTE]\n"
    );
    let (ok, out, err) = harnessx(
        &[
            "recover",
            &id.to_string(),
            "took-effect",
            "it slept",
            "--server",
            &server,
        ],
        Some(KEY),
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.starts_with(&format!("run {id} is ")), "{out}");
    let done = s.wait_for(id, &["completed", "failed"]).await;
    assert_eq!(done["output"], "saw: it slept", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_worded_for_a_person() {
    let s = Server::start().await;
    let server = address(&s);
    let (ok, _, err) = harnessx(
        &["runs", "--server", &server],
        Some("a-key-the-server-never-had-0123"),
    )
    .await;
    assert!(!ok);
    assert_eq!(
        err,
        "harnessx: the server refused the API key; give the key it was started with (--api-key \
         KEY or HARNESSX_API_KEY): a server that generated its key printed it when it started \
         and keeps it in <db>.key beside its database\n"
    );
    let (ok, _, err) = harnessx(&["run", "nobody", "hi", "--server", &server], Some(KEY)).await;
    assert!(!ok);
    assert_eq!(
        err,
        "harnessx: no agent is named `nobody`; the agents are: approver, asker, asker2, replier\n"
    );
    let (ok, _, err) = harnessx(&["show", "999999", "--server", &server], Some(KEY)).await;
    assert!(!ok);
    assert_eq!(
        err,
        "harnessx: run 999999 does not exist; check the run id\n"
    );
}

#[tokio::test]
async fn each_command_has_its_help() {
    for (command, first) in [
        ("show", "usage: harnessx show RUN\n"),
        ("cancel", "usage: harnessx cancel RUN\n"),
        (
            "runs",
            "usage: harnessx runs [--agent NAME] [--state STATE] [--limit N]\n",
        ),
        (
            "approve",
            "usage: harnessx approve RUN (allow | conversation | deny)\n",
        ),
        (
            "recover",
            "usage: harnessx recover RUN (took-effect [RESULT] | run-again | skip [NOTE])\n",
        ),
    ] {
        let (ok, out, _) = harnessx(&[command, "--help"], None).await;
        assert!(ok);
        assert!(out.starts_with(first), "{command}: {out}");
        let (ok, again, _) = harnessx(&["help", command], None).await;
        assert!(ok);
        assert_eq!(again, out);
    }
    let (ok, out, _) = harnessx(&["run", "--help"], None).await;
    assert!(ok);
    assert!(out.contains("--server ADDRESS"), "{out}");
    let (ok, out, _) = harnessx(&["serve", "--help"], None).await;
    assert!(ok);
    assert!(!out.contains("--server ADDRESS"), "{out}");
    let (ok, _, err) = harnessx(&["show", "1", "--select", "x"], None).await;
    assert!(!ok);
    assert!(
        err.starts_with(
            "harnessx: --select is not an option of `show`; `harnessx show --help` lists its \
             options\n"
        ),
        "{err}"
    );
}
