//! The examples run offline and print what they show; a failing one reports the error's message
//! and its causes, not its `Debug` form.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The example `name` next to this test binary (`target/<profile>/examples/`).
/// `cargo test --workspace` builds the examples before running tests; run alone
/// (`cargo test --test all`), this test builds it first.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps");
    let binary = profile_dir.join("examples").join(name);
    if binary.is_file() {
        return binary;
    }
    let target_dir = profile_dir.parent().expect("target/<profile>");
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build
        .args(["build", "--quiet", "--example", name, "--target-dir"])
        .arg(target_dir);
    if profile_dir.ends_with("release") {
        build.arg("--release");
    }
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "building the {name} example failed");
    binary
}

/// Runs the example `name` offline (no real model, no collector) and returns its standard
/// output, failing when it fails.
fn run_offline(name: &str) -> String {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(example(name))
        .env_remove("HARNESSX_MODEL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(status.success(), "{name} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Asserts that `out` holds each of `lines` as a whole line.
fn assert_lines(out: &str, lines: &[&str]) {
    for line in lines {
        assert!(
            out.lines().any(|l| l == *line),
            "no line `{line}` in:\n{out}"
        );
    }
}

#[test]
fn a_failing_example_prints_the_error_message_not_its_debug_form() {
    let out = Command::new(example("quickstart"))
        .env("HARNESSX_MODEL", "bogus:model")
        .output()
        .expect("the example runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "error: HARNESSX_MODEL: the model spec `bogus:model` names the unknown provider `bogus`"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("Error: "), "{stderr}");
}

#[test]
fn quickstart_answers_from_its_tools() {
    let out = run_offline("quickstart");
    assert_lines(
        &out,
        &["assistant: The sentence has 9 words, and 21 °C is 69.8 °F."],
    );
}

#[test]
fn hooks_deny_a_call_and_the_budget_stops_the_run() {
    let out = run_offline("hooks");
    assert_lines(
        &out,
        &[
            "  hook: delete(drafts/old.md)",
            "  hook: delete(README.md)",
            "stopped: 3 tool_calls, over the budget of 2",
        ],
    );
}

#[test]
fn typed_output_parses_the_answer_after_a_retry() {
    let out = run_offline("typed_output");
    assert_lines(
        &out,
        &[
            "customer: Acme, total: 12900 cents, overdue: true",
            "3 model requests",
        ],
    );
}

#[test]
fn knowledge_finds_the_passage() {
    let out = run_offline("knowledge");
    assert_lines(
        &out,
        &[
            "[1] Leave — handbook/leave.md (score 1.00)",
            "Parental leave is 16 weeks, fully paid, for every parent.",
        ],
    );
}

#[test]
fn skills_load_the_folder_and_the_model_reads_one() {
    let out = run_offline("skills");
    assert!(out.starts_with("skill: release-notes — "), "{out}");
    assert!(
        out.contains("Skill returned 13 lines, starting: # Skill: release-notes"),
        "{out}"
    );
}

#[test]
fn builtin_writes_reads_and_remembers() {
    let out = run_offline("builtin");
    assert_lines(
        &out,
        &[
            "  approve write_file? yes",
            "<- write_file: Created `notes.md` (16 bytes, 1 line).",
            "<- save_memory: Saved memory 1.",
        ],
    );
}

#[test]
fn mcp_server_serves_a_tool_the_agent_calls() {
    let out = run_offline("mcp_server");
    assert_lines(
        &out,
        &[
            "tools: write_todos, read_todos, mcp_words_word_count",
            "mcp_words_word_count: 6",
        ],
    );
}

#[test]
fn otel_prints_the_span_tree_without_a_collector() {
    let out = run_offline("otel");
    assert_lines(
        &out,
        &[
            "span invoke_agent forecaster",
            "  span chat test",
            "  span execute_tool weather",
        ],
    );
}

/// `durable` with `HARNESSX_DURABLE_DB` set to `db` and `args`; returns whether it succeeded,
/// its stdout and its stderr.
fn durable(db: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(example("durable"))
        .args(args)
        .env("HARNESSX_DURABLE_DB", db)
        .output()
        .expect("the example runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn durable_answers_in_a_second_process_and_says_when_nothing_waits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("durable.db");
    // Answering first: no run waits yet, and the message (not a Debug form) says what to do.
    let (ok, _, stderr) = durable(&db, &["JSON"]);
    assert!(!ok);
    assert_eq!(
        stderr,
        format!(
            "error: no run is waiting in {} yet: start one with `cargo run --example durable`, \
             then answer it with `cargo run --example durable -- JSON`\n",
            db.display()
        )
    );

    let (ok, out, stderr) = durable(&db, &[]);
    assert!(ok, "{stderr}");
    assert_lines(
        &out,
        &[
            "run 1 is waiting_input.",
            "The agent asks: Export order A-17 as? (CSV / JSON)",
        ],
    );
    let (ok, _, stderr) = durable(&db, &["XML"]);
    assert!(!ok);
    assert!(
        stderr.starts_with("error: the answer to run 1's question does not fit it: "),
        "{stderr}"
    );
    assert!(!stderr.contains("Error"), "{stderr}");
    let (ok, out, stderr) = durable(&db, &["JSON"]);
    assert!(ok, "{stderr}");
    assert!(
        out.contains("run 1 completed: Exporting order A-17. "),
        "{out}"
    );
    assert!(
        !out.contains("lookup_order ran"),
        "the journaled tool call ran again: {out}"
    );
}
