//! Approvals a person can judge, over HTTP on both stores: the request carries the tool's input
//! schema, `POST /v2/runs/{id}/approval` takes edited `arguments` (checked against it, a 422
//! naming the field when they do not fit) and the call runs with them; the run's `answered`
//! event records the decision, the arguments and who decided (the API key by its last four
//! characters), and every event and run carries its times.

use serde_json::{Value, json};

use crate::common::Server;

/// An agent whose `list_directory` asks first, in a folder holding `notes.txt` and
/// `sub/inner.txt`.
fn config(folder: &std::path::Path) -> String {
    format!(
        r#"
[agents.lister]
model = "script"
builtins = [{{ name = "list_directory", options = {{ permission = "ask", base_path = "{}" }} }}]
script = [
  {{ call = "list_directory", arguments = {{ path = "." }} }},
  {{ reply = "saw: {{result}}" }},
]

[agents.asker]
model = "script"
script = [
  {{ ask = "Proceed?" }},
  {{ reply = "saw: {{result}}" }},
]
"#,
        folder.display()
    )
}

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/inner.txt"), "i").unwrap();
    dir
}

/// `2026-01-02T03:04:05.678Z`.
fn is_rfc3339(v: &Value) -> bool {
    let Some(s) = v.as_str() else { return false };
    let b = s.as_bytes();
    s.len() == 24
        && b[4] == b'-'
        && b[10] == b'T'
        && b[19] == b'.'
        && s.ends_with('Z')
        && s.chars().filter(|c| c.is_ascii_digit()).count() == 17
}

async fn refused(s: &Server, id: i64, body: Value) -> (String, String) {
    let (status, err) = s.post(&format!("/v2/runs/{id}/approval"), body).await;
    assert_eq!(status, 422, "{err}");
    (
        err["error"]["code"].as_str().unwrap().to_owned(),
        err["error"]["message"].as_str().unwrap().to_owned(),
    )
}

async fn an_approval_runs_with_edited_arguments(s: &Server) {
    let run = s.start_run("lister", "What is in the folder?").await;
    let id = run["id"].as_i64().unwrap();
    assert!(is_rfc3339(&run["created_at"]), "{run}");
    assert!(is_rfc3339(&run["updated_at"]), "{run}");
    let waiting = s.wait_for(id, &["waiting_input"]).await;
    let request = &waiting["needs_input"][0];
    assert_eq!(request["tool_name"], "list_directory");
    assert_eq!(request["arguments"], json!({"path": "."}));
    assert_eq!(
        request["input_schema"]["properties"]["path"]["type"],
        json!(["string", "null"]),
        "{request}"
    );
    assert!(waiting["updated_at"].as_str() >= waiting["created_at"].as_str());

    // Arguments that do not fit are refused, naming the field; nothing changes.
    let (code, message) = refused(
        s,
        id,
        json!({"decision": "allow_once", "arguments": {"path": 5}}),
    )
    .await;
    assert_eq!(code, "invalid_arguments");
    assert_eq!(
        message,
        format!(
            "the edited arguments for run {id}'s `list_directory` call cannot be used: \
             `arguments.path`: 5 is not of types \"null\", \"string\"; nothing was changed"
        )
    );
    let (_, message) = refused(
        s,
        id,
        json!({"decision": "allow_once", "arguments": {"folder": "sub"}}),
    )
    .await;
    assert!(
        message.contains("cannot be used: `arguments`: Additional properties are not allowed"),
        "{message}"
    );
    let (_, message) = refused(
        s,
        id,
        json!({"decision": "deny", "arguments": {"path": "sub"}}),
    )
    .await;
    assert!(
        message.contains("`arguments`: a denied call does not run, so it takes no arguments"),
        "{message}"
    );
    let (_, message) = refused(s, id, json!({"decision": "allow_once", "arguments": "sub"})).await;
    assert!(
        message.contains("`arguments`: a string given; give the call's arguments as a JSON object"),
        "{message}"
    );
    let (_, still) = s.get(&format!("/v2/runs/{id}")).await;
    assert_eq!(still["state"], "waiting_input");

    let (status, decided) = s
        .post(
            &format!("/v2/runs/{id}/approval"),
            json!({"decision": "allow_once", "arguments": {"path": "sub"}}),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    let done = s.wait_for(id, &["completed", "failed"]).await;
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("inner.txt"), "{output}");
    assert!(
        !output.contains("notes.txt"),
        "the model's own arguments did not run: {output}"
    );

    // The events: each with its time; the decision with its arguments and who decided; the
    // call as it ran.
    let mut frames = s.events(id, None).await;
    let frames = frames.until("completed").await;
    let data: Vec<Value> = frames.iter().map(|f| f.data.clone()).collect();
    assert!(data.iter().all(|d| is_rfc3339(&d["at"])), "{data:?}");
    let answered = data.iter().find(|d| d["type"] == "answered").unwrap();
    assert_eq!(
        answered["reply"],
        json!({"type": "decision", "decision": "allow_once", "arguments": {"path": "sub"}})
    );
    assert_eq!(answered["by"], "API key …cdef");
    let started = data
        .iter()
        .find(|d| d["type"] == "tool_call_started")
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(started["arguments"].as_str().unwrap()).unwrap(),
        json!({"path": "sub"})
    );
}

async fn an_answer_names_who_gave_it(s: &Server) {
    let run = s.start_run("asker", "Go?").await;
    let id = run["id"].as_i64().unwrap();
    s.wait_for(id, &["waiting_input"]).await;
    let (status, body) = s
        .post(&format!("/v2/runs/{id}/answer"), json!({"text": "yes, go"}))
        .await;
    assert_eq!(status, 200, "{body}");
    s.wait_for(id, &["completed"]).await;
    let mut frames = s.events(id, None).await;
    let answered = frames.until("answered").await.pop().unwrap().data;
    assert_eq!(answered["by"], "API key …cdef", "{answered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_approvals_and_who_decided_on_sqlite() {
    let dir = folder();
    let s = Server::on(&config(dir.path()), ":memory:").await;
    an_approval_runs_with_edited_arguments(&s).await;
    an_answer_names_who_gave_it(&s).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_approvals_and_who_decided_on_postgresql() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let dir = folder();
    let s = Server::on(&config(dir.path()), &pg.url()).await;
    an_approval_runs_with_edited_arguments(&s).await;
    an_answer_names_who_gave_it(&s).await;
    s.stop().await;
}
