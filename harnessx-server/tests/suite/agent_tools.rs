//! `GET /v2/agents/{id}/tools`: every tool an agent's model sees — the platform's `ask_user`,
//! its bundles' tools, the planning tools, its connectors' chosen tools and its knowledge
//! bases' search — each with where it comes from, what happens when it is called and whether
//! it only reads; a connector that cannot be listed is named instead.

use serde_json::{Value, json};

use crate::common::Server;
use crate::suite::api::memory_server;

/// `(name, source, origin, permission, read_only)` of each tool, in order.
fn rows(tools: &Value) -> Vec<(String, String, Value, String, Value)> {
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["source"].as_str().unwrap().to_owned(),
                t.get("origin").cloned().unwrap_or(Value::Null),
                t["permission"].as_str().unwrap().to_owned(),
                t["read_only"].clone(),
            )
        })
        .collect()
}

fn row(
    name: &str,
    source: &str,
    origin: Option<&str>,
    permission: &str,
    read_only: Value,
) -> (String, String, Value, String, Value) {
    (
        name.to_owned(),
        source.to_owned(),
        origin.map_or(Value::Null, |o| json!(o)),
        permission.to_owned(),
        read_only,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_tools_are_listed_by_source_with_their_permission() {
    let Some(memory) = memory_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let s = Server::on("", db.to_str().unwrap()).await;
    let (status, made) = s
        .post(
            "/v2/connectors",
            json!({"name": "notes", "command": "node", "args": [memory],
                   "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    // Each listed tool carries the name the model calls it by.
    let keys: Vec<(&str, &str)> = made["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["key"].as_str().unwrap()))
        .collect();
    assert!(
        keys.contains(&("read_graph", "mcp_notes_read_graph")),
        "{keys:?}"
    );
    assert!(
        keys.iter()
            .all(|(name, key)| *key == format!("mcp_notes_{name}"))
    );
    let (status, made) = s
        .post(
            "/v2/connectors",
            json!({"name": "offline", "command": "/nonexistent/harnessx-no-such-mcp-server",
                   "connect_timeout_seconds": 2}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let (status, made) = s.post("/v2/knowledge", json!({"name": "handbook"})).await;
    assert_eq!(status, 201, "{made}");
    let (status, agent) = s
        .post(
            "/v2/agents",
            json!({
                "id": "helper",
                "model": "script",
                "bundles": [
                    {"name": "filesystem", "options": {"include": ["read_file", "write_file"],
                        "permission": "ask", "base_path": dir.path()}},
                    {"name": "fetch_url"},
                ],
                "connectors": [
                    {"name": "notes", "tools": ["read_graph", "create_entities"]},
                    {"name": "offline"},
                ],
                "knowledge_bases": ["handbook"],
            }),
        )
        .await;
    assert_eq!(status, 201, "{agent}");

    let (status, tools) = s.get("/v2/agents/helper/tools").await;
    assert_eq!(status, 200, "{tools}");
    assert_eq!(tools["agent"], "helper");
    assert_eq!(tools["version"], 1);
    assert_eq!(
        rows(&tools),
        [
            row("ask_user", "platform", None, "allow", Value::Null),
            row(
                "read_file",
                "bundle",
                Some("filesystem"),
                "ask",
                json!(true)
            ),
            row(
                "write_file",
                "bundle",
                Some("filesystem"),
                "ask",
                json!(false)
            ),
            row(
                "fetch_url",
                "bundle",
                Some("fetch_url"),
                "allow",
                json!(true)
            ),
            row("write_todos", "planning", None, "allow", json!(false)),
            row("read_todos", "planning", None, "allow", json!(true)),
            row(
                "mcp_notes_create_entities",
                "connector",
                Some("notes"),
                "ask",
                json!(false)
            ),
            row(
                "mcp_notes_read_graph",
                "connector",
                Some("notes"),
                "allow",
                json!(true)
            ),
            row(
                "knowledge_search",
                "knowledge",
                Some("handbook"),
                "allow",
                json!(true)
            ),
        ],
        "{tools}"
    );
    let ask_user = &tools["tools"][0];
    assert!(
        ask_user["description"]
            .as_str()
            .unwrap()
            .contains("question"),
        "{ask_user}"
    );
    let unlisted = &tools["unlisted_connectors"];
    assert_eq!(unlisted.as_array().unwrap().len(), 1, "{unlisted}");
    assert_eq!(unlisted[0]["name"], "offline");
    assert_eq!(unlisted[0]["status"], "unreachable");
    assert!(
        unlisted[0]["error"]
            .as_str()
            .unwrap()
            .contains("could not start MCP server `offline`"),
        "{unlisted}"
    );

    // Switching ask_user off and detaching the base takes their tools away.
    let (status, _) = s
        .patch(
            "/v2/agents/helper",
            json!({"builtin_tools": {"ask_user": false}, "knowledge_bases": [], "connectors": []}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, tools) = s.get("/v2/agents/helper/tools").await;
    assert_eq!(tools["version"], 2);
    let names: Vec<String> = rows(&tools).into_iter().map(|r| r.0).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "write_file",
            "fetch_url",
            "write_todos",
            "read_todos"
        ]
    );
    assert_eq!(tools["unlisted_connectors"], json!([]));

    let (status, err) = s.get("/v2/agents/nobody/tools").await;
    assert_eq!(status, 404, "{err}");
    assert_eq!(
        err["error"]["message"],
        "no agent is named `nobody`; GET /v2/agents lists them"
    );
    s.stop().await;
}
