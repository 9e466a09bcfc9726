//! Connectors are stored, versioned resources: created, changed and deleted over HTTP, each
//! with its status and tools, used by agents' runs, kept across restarts, and never showing a
//! secret.

use serde_json::json;

use crate::common::Server;
use crate::suite::api::memory_server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_is_created_used_by_an_agent_changed_kept_and_deleted() {
    let Some(memory) = memory_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    let graph = dir.path().join("memory.jsonl");
    let s = Server::on("", db).await;

    let (status, made) = s
        .post(
            "/v2/connectors",
            json!({
                "name": "memory",
                "command": "node",
                "args": [memory],
                "env": {"MEMORY_FILE_PATH": graph, "API_TOKEN": "sk-very-secret-value"},
            }),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["version"], 1);
    assert_eq!(made["transport"], "stdio");
    assert_eq!(made["status"], "ready", "{made}");
    assert_eq!(made["env"], json!(["API_TOKEN", "MEMORY_FILE_PATH"]));
    assert!(!made.to_string().contains("sk-very-secret-value"), "{made}");
    assert!(
        made["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read_graph" && t["read_only"] == true),
        "{made}"
    );

    let (status, twice) = s
        .post(
            "/v2/connectors",
            json!({"name": "memory", "command": "node"}),
        )
        .await;
    assert_eq!(status, 409, "{twice}");
    assert_eq!(twice["error"]["code"], "connector_exists");
    let (status, both) = s
        .post(
            "/v2/connectors",
            json!({"name": "both", "command": "node", "url": "http://127.0.0.1:9/mcp"}),
        )
        .await;
    assert_eq!(status, 422, "{both}");
    assert!(
        both["error"]["message"]
            .as_str()
            .unwrap()
            .contains("give either `command`"),
        "{both}"
    );
    let (status, http) = s
        .post(
            "/v2/connectors",
            json!({"name": "remote", "url": "http://user:pw@127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer sk-header-secret"}, "connect_timeout_seconds": 1}),
        )
        .await;
    assert_eq!(status, 201, "{http}");
    assert_eq!(http["status"], "unreachable", "{http}");
    assert_eq!(http["headers"], json!(["Authorization"]));
    assert!(!http.to_string().contains("sk-header-secret"), "{http}");
    assert!(!http.to_string().contains("pw@"), "{http}");

    // An agent that uses the connector calls its tool in a run.
    let (status, agent) = s
        .post(
            "/v2/agents",
            json!({
                "id": "rememberer",
                "model": "script",
                "connectors": [{"name": "memory", "tools": ["read_graph"]}],
                "script": [
                    {"call": "mcp_memory_read_graph", "arguments": {}},
                    {"reply": "graph: {result}"},
                ],
            }),
        )
        .await;
    assert_eq!(status, 201, "{agent}");
    let id = s.start_run("rememberer", "what do you know?").await["id"]
        .as_i64()
        .unwrap();
    let run = s.wait_for(id, &["completed", "failed"]).await;
    assert_eq!(run["state"], "completed", "{run}");
    assert!(
        run["output"].as_str().unwrap().contains("entities"),
        "{run}"
    );

    // A change is a new version; the next run uses it.
    let (status, changed) = s
        .patch(
            "/v2/connectors/memory",
            json!({"env": {"MEMORY_FILE_PATH": graph}}),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["version"], 2);
    assert_eq!(changed["env"], json!(["MEMORY_FILE_PATH"]));
    let id = s.start_run("rememberer", "again").await["id"]
        .as_i64()
        .unwrap();
    let run = s.wait_for(id, &["completed", "failed"]).await;
    assert_eq!(run["state"], "completed", "{run}");

    // In use: refused, with the agents named.
    let (status, refused) = s.delete("/v2/connectors/memory").await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`rememberer`"),
        "{refused}"
    );
    s.stop().await;

    // A restart keeps both connectors and the agent.
    let s = Server::on("", db).await;
    let (_, list) = s.get("/v2/connectors").await;
    let names: Vec<&str> = list["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["memory", "remote"], "{list}");
    let (status, _) = s
        .patch("/v2/agents/rememberer", json!({"connectors": []}))
        .await;
    assert_eq!(status, 200);
    let (status, _) = s.delete("/v2/connectors/memory").await;
    assert_eq!(status, 200);
    let (status, gone) = s.get("/v2/connectors/memory").await;
    assert_eq!(status, 404, "{gone}");
    assert_eq!(gone["error"]["code"], "unknown_connector");
    let (status, _) = s
        .patch(
            "/v2/agents/rememberer",
            json!({"connectors": [{"name": "memory"}]}),
        )
        .await;
    assert_eq!(status, 422, "an agent cannot name a deleted connector");
    s.stop().await;
}

/// The lines of `path` (none when it does not exist yet).
fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_keeps_one_session_per_connector_for_every_agent_and_run() {
    let Some(memory) = memory_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let starts = dir.path().join("starts.txt");
    let s = Server::on("", db.to_str().unwrap()).await;
    // Each start of the server process writes its pid (`exec` keeps it) to `starts`.
    let connector = |file: &str| {
        json!({
            "command": "sh",
            "args": ["-c", format!("echo $$ >> '{}'; exec node '{}'", starts.display(), memory.display())],
            "env": {"MEMORY_FILE_PATH": dir.path().join(file)},
        })
    };
    let mut body = connector("a.jsonl");
    body["name"] = json!("memory");
    let (status, made) = s.post("/v2/connectors", body).await;
    assert_eq!(status, 201, "{made}");
    for id in ["first", "second"] {
        let (status, agent) = s
            .post(
                "/v2/agents",
                json!({
                    "id": id,
                    "model": "script",
                    "connectors": [{"name": "memory", "tools": ["read_graph"]}],
                    "script": [
                        {"call": "mcp_memory_read_graph", "arguments": {}},
                        {"reply": "graph: {result}"},
                    ],
                }),
            )
            .await;
        assert_eq!(status, 201, "{agent}");
    }
    // A run of `agent`: its answer, the graph or the tool's error.
    let answer = async |agent: &str| {
        let id = s.start_run(agent, "what do you know?").await["id"]
            .as_i64()
            .unwrap();
        let run = s.wait_for(id, &["completed", "failed"]).await;
        assert_eq!(run["state"], "completed", "{run}");
        run["output"].as_str().unwrap().to_owned()
    };
    let run = async |agent: &str| {
        let output = answer(agent).await;
        assert!(output.contains("entities"), "{output}");
    };

    // Creating it listed its tools through a connection of its own.
    let listed = lines(&starts).len();
    for agent in ["first", "second", "first", "second"] {
        run(agent).await;
    }
    let after_runs = lines(&starts);
    assert_eq!(
        after_runs.len(),
        listed + 1,
        "two agents, four runs, one server process: {after_runs:?}"
    );

    // The session's server dies: the next call starts it again, once, for every agent.
    let pid = after_runs.last().unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-9", pid])
        .status()
        .unwrap();
    assert!(killed.success());
    // A call sent before the session saw the process die fails, saying the connection broke
    // (it may have partly run, so it is not sent again); the next call starts the server.
    let first = answer("first").await;
    assert!(
        first.contains("entities")
            || first.contains("The connection to the MCP server `memory` broke"),
        "{first}"
    );
    run("first").await;
    run("second").await;
    assert_eq!(lines(&starts).len(), listed + 2, "{:?}", lines(&starts));

    // A new version of the connector: a new session, shared again.
    let (status, changed) = s.patch("/v2/connectors/memory", connector("b.jsonl")).await;
    assert_eq!(status, 200, "{changed}");
    let before = lines(&starts).len();
    run("first").await;
    run("second").await;
    assert_eq!(lines(&starts).len(), before + 1, "{:?}", lines(&starts));
    s.stop().await;
}
