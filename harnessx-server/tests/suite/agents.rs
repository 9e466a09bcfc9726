//! Agents are stored, versioned resources: created, changed and deleted over HTTP, seen at once
//! by every server on the database, kept across restarts, and a run resumes on the version it
//! started with.

use serde_json::json;

use crate::common::Server;

const FILE: &str = r#"
[agents.greeter]
model = "script"
instructions = "From the file."
script = [{ reply = "hello from the file" }]
"#;

fn asker(reply: &str) -> serde_json::Value {
    json!({
        "id": "helper",
        "model": "script",
        "instructions": "Ask, then answer.",
        "script": [
            {"ask": "Which format?"},
            {"reply": reply},
        ],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_are_created_changed_and_deleted_and_a_run_keeps_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let s = Server::on(FILE, db.to_str().unwrap()).await;

    let (status, created) = s.post("/v2/agents", asker("first: {result}")).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["version"], 1);
    assert_eq!(created["builtin_tools"][0]["key"], "ask_user");
    assert_eq!(created["builtin_tools"][0]["enabled"], true, "{created}");
    let (status, again) = s.post("/v2/agents", asker("x")).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"]["code"], "agent_exists");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("PATCH /v2/agents/helper"),
        "{again}"
    );
    let (status, bad) = s
        .post("/v2/agents", json!({"id": "no spaces", "model": "script"}))
        .await;
    assert_eq!(status, 422, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`no spaces` is not a valid name")
    );

    // A run of version 1 waits on its question while the agent changes.
    let old = s.start_run("helper", "go").await["id"].as_i64().unwrap();
    let run = s.wait_for(old, &["waiting_input"]).await;
    assert_eq!(run["agent_version"], 1, "{run}");
    let (status, patched) = s
        .patch(
            "/v2/agents/helper",
            json!({"instructions": "Changed.", "script": [{"ask": "Which format?"}, {"reply": "second: {result}"}]}),
        )
        .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["version"], 2);
    assert_eq!(patched["instructions"], "Changed.");
    let (status, _) = s
        .post(&format!("/v2/runs/{old}/answer"), json!({"text": "CSV"}))
        .await;
    assert_eq!(status, 200);
    let run = s.wait_for(old, &["completed", "failed"]).await;
    assert_eq!(run["agent_version"], 1, "{run}");
    // The run finished on version 1's script; a new run plays version 2's.
    assert!(
        run["output"].as_str().unwrap().starts_with("first: "),
        "{run}"
    );
    let new = s.start_run("helper", "go").await;
    assert_eq!(new["agent_version"], 2, "{new}");
    let id = new["id"].as_i64().unwrap();
    s.wait_for(id, &["waiting_input"]).await;
    s.post(&format!("/v2/runs/{id}/answer"), json!({"text": "CSV"}))
        .await;
    let new = s.wait_for(id, &["completed", "failed"]).await;
    assert!(
        new["output"].as_str().unwrap().starts_with("second: "),
        "{new}"
    );

    // Deleted: gone from the list, new runs refused, the version chain kept.
    let (status, _) = s.delete("/v2/agents/helper").await;
    assert_eq!(status, 200);
    let (status, gone) = s.get("/v2/agents/helper").await;
    assert_eq!(status, 404, "{gone}");
    let (status, refused) = s
        .post("/v2/runs", json!({"agent": "helper", "input": "hi"}))
        .await;
    assert_eq!(status, 404, "{refused}");
    let (status, _) = s.delete("/v2/agents/helper").await;
    assert_eq!(status, 404);
    let (_, list) = s.get("/v2/agents").await;
    let names: Vec<&str> = list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["greeter"]);
    // Made again, it continues the chain: version 3 (runs of 1 and 2 still resolve).
    let (status, again) = s.post("/v2/agents", asker("again")).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["version"], 3);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_every_change_and_a_changed_file_becomes_a_new_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();

    let s = Server::on(FILE, db).await;
    let (_, seeded) = s.get("/v2/agents/greeter").await;
    assert_eq!(seeded["version"], 1);
    assert_eq!(seeded["instructions"], "From the file.");
    let (status, _) = s
        .patch(
            "/v2/agents/greeter",
            json!({"instructions": "From the API.", "builtin_tools": {"ask_user": false}}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = s.post("/v2/agents", asker("kept")).await;
    assert_eq!(status, 201);
    s.stop().await;

    // Same file: the API's changes stay.
    let s = Server::on(FILE, db).await;
    let (_, kept) = s.get("/v2/agents/greeter").await;
    assert_eq!(kept["version"], 2, "{kept}");
    assert_eq!(kept["instructions"], "From the API.");
    assert_eq!(kept["builtin_tools"][0]["enabled"], false);
    let (status, made) = s.get("/v2/agents/helper").await;
    assert_eq!(status, 200, "{made}");
    s.stop().await;

    // A changed file: its table becomes the next version.
    let changed = FILE.replace("From the file.", "The file, edited.");
    let s = Server::on(&changed, db).await;
    let (_, next) = s.get("/v2/agents/greeter").await;
    assert_eq!(next["version"], 3, "{next}");
    assert_eq!(next["instructions"], "The file, edited.");
    assert_eq!(next["builtin_tools"][0]["enabled"], true);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_on_one_server_is_seen_by_another_at_once() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let a = Server::on(FILE, &pg.url()).await;
    let b = Server::on(FILE, &pg.url()).await;
    let (status, made) = a.post("/v2/agents", asker("from A: {result}")).await;
    assert_eq!(status, 201, "{made}");
    let (status, seen) = b.get("/v2/agents/helper").await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(seen["version"], 1);
    let (status, _) = b
        .patch("/v2/agents/helper", json!({"instructions": "Set on B."}))
        .await;
    assert_eq!(status, 200);
    let (_, on_a) = a.get("/v2/agents/helper").await;
    assert_eq!(on_a["version"], 2);
    assert_eq!(on_a["instructions"], "Set on B.");
    // A run started on A uses B's change.
    let run = a.start_run("helper", "go").await;
    assert_eq!(run["agent_version"], 2, "{run}");
    // Both started with the same file: it was seeded once.
    let (_, greeter) = b.get("/v2/agents/greeter").await;
    assert_eq!(greeter["version"], 1, "{greeter}");
    a.stop().await;
    b.stop().await;
}
