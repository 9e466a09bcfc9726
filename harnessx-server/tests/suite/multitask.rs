//! A message to a conversation whose run is still going follows the strategy the request
//! chooses: `enqueue` (the default) starts it after, `reject` refuses it with 409, `interrupt`
//! cancels the running run and starts it. Runs of one conversation never run at once.

use serde_json::json;

use crate::common::Server;

const SLEEPER: &str = r#"
[agents.sleeper]
model = "script"
builtins = [{ name = "bash", options = { permission = "allow" } }]
script = [
  { call = "run_bash", arguments = { command = "sleep 3; echo slept" } },
  { reply = "done: {result}" },
]
"#;

async fn start_sleeping(s: &Server, conversation: &str) -> i64 {
    let (status, run) = s
        .post(
            "/v2/runs",
            json!({"agent": "sleeper", "input": "first", "conversation": conversation}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    let id = run["id"].as_i64().unwrap();
    s.events(id, None).await.until("tool_call_started").await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_while_a_run_is_going_is_queued_refused_or_interrupts() {
    let s = Server::start_with(|c| format!("{c}{SLEEPER}"), |o| o).await;

    // enqueue: the second run waits for the first and sees its transcript.
    let first = start_sleeping(&s, "c-enqueue").await;
    let (status, queued) = s
        .post(
            "/v2/conversations/c-enqueue/messages",
            json!({"text": "second"}),
        )
        .await;
    assert_eq!(status, 200, "{queued}");
    let second = queued["run"]["id"].as_i64().unwrap();
    let (_, now) = s.get(&format!("/v2/runs/{second}")).await;
    assert_eq!(now["state"], "queued", "it waits for {first}: {now}");
    let done = s.wait_for(second, &["completed", "failed"]).await;
    assert_eq!(done["state"], "completed", "{done}");
    let (_, first_run) = s.get(&format!("/v2/runs/{first}")).await;
    assert_eq!(first_run["state"], "completed");
    let (_, c) = s.get("/v2/conversations/c-enqueue").await;
    let users: Vec<&str> = c["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first", "second"], "{c}");

    // reject: 409 naming the run that is going.
    let going = start_sleeping(&s, "c-reject").await;
    let (status, refused) = s
        .post(
            "/v2/conversations/c-reject/messages",
            json!({"text": "again", "multitask_strategy": "reject"}),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "conversation_busy");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("run {going} is running")),
        "{refused}"
    );
    let (status, refused) = s
        .post(
            "/v2/runs",
            json!({"agent": "sleeper", "input": "x", "conversation": "c-reject", "multitask_strategy": "reject"}),
        )
        .await;
    assert_eq!(status, 409, "{refused}");

    // interrupt: the running run is cancelled and the new one runs.
    let old = start_sleeping(&s, "c-interrupt").await;
    let (status, started) = s
        .post(
            "/v2/conversations/c-interrupt/messages",
            json!({"text": "instead", "multitask_strategy": "interrupt"}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let new = started["run"]["id"].as_i64().unwrap();
    let old_run = s.wait_for(old, &["cancelled", "completed", "failed"]).await;
    assert_eq!(old_run["state"], "cancelled", "{old_run}");
    let new_run = s.wait_for(new, &["completed", "failed", "cancelled"]).await;
    assert_eq!(new_run["state"], "completed", "{new_run}");

    let (status, bad) = s
        .post(
            "/v2/conversations/c-interrupt/messages",
            json!({"text": "x", "multitask_strategy": "later"}),
        )
        .await;
    assert_eq!(status, 422, "{bad}");
}
