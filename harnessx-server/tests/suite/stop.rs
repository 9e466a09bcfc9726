//! A server stopped (SIGTERM's path: `Running::stop`) while a run's command is in flight hands
//! the run back as last journaled: no result is recorded for the cut-off call, and the next
//! server on the same store asks whether the interrupted command took effect (`run_bash` is a
//! `manual` tool) instead of finishing the run on a made-up failure.

use harnessx_server::{Config, ServeOptions, serve};

use crate::common::{KEY, Server};

fn config() -> Config {
    Config::parse(
        r#"
[agents.sleeper]
model = "script"
builtins = [{ name = "bash", options = { permission = "allow" } }]
script = [
  { call = "run_bash", arguments = { command = "sleep 30" } },
  { reply = "saw: {result}" },
]
"#,
    )
    .unwrap()
}

async fn server_on(db: &std::path::Path) -> Server {
    let running = serve(
        &config(),
        ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .api_key(KEY)
            .sqlite(db.to_str().unwrap()),
    )
    .await
    .unwrap();
    Server::attach(running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_mid_command_hands_the_run_back_and_the_next_one_asks_about_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut first = server_on(&db).await;
    let id = first.start_run("sleeper", "nap").await["id"]
        .as_i64()
        .unwrap();
    first
        .events(id, None)
        .await
        .until("tool_call_started")
        .await;
    first
        .running
        .take()
        .unwrap()
        .stop(std::time::Duration::from_secs(5))
        .await;

    let second = server_on(&db).await;
    let run = second
        .wait_for(id, &["waiting_input", "completed", "failed"])
        .await;
    assert_eq!(run["state"], "waiting_input", "{run}");
    assert_eq!(run["needs_input"][0]["kind"], "recovery", "{run}");
    let frames = second.events(id, Some(0)).await.until("recovery").await;
    assert!(
        !frames.iter().any(|f| f.event == "tool_result"),
        "a result was recorded for the command the stop cut off: {frames:?}"
    );
}

/// Spec 000: "In a durable runtime, a manual tool that times out stops the run awaiting input."
/// `run_bash` is `manual`; the agent's `tool_timeouts` gives it half a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_call_that_times_out_in_a_served_run_waits_for_a_person() {
    let config = Config::parse(
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
    let dir = tempfile::tempdir().unwrap();
    let running = serve(
        &config,
        ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .api_key(KEY)
            .sqlite(dir.path().join("runs.db").to_str().unwrap()),
    )
    .await
    .unwrap();
    let server = Server::attach(running);
    let id = server.start_run("sleeper", "nap").await["id"]
        .as_i64()
        .unwrap();
    let run = server
        .wait_for(id, &["waiting_input", "completed", "failed"])
        .await;
    assert_eq!(run["state"], "waiting_input", "{run}");
    assert_eq!(run["needs_input"][0]["kind"], "recovery", "{run}");
    assert_eq!(run["needs_input"][0]["reason"], "timed_out", "{run}");
    assert_eq!(run["needs_input"][0]["tool_name"], "run_bash", "{run}");
}
