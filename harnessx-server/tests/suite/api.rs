//! Every /v2 route over real HTTP: runs, events, answers, approvals, cancel, conversations,
//! agents and built-in tools.

use serde_json::json;

use crate::common::{KEY, Server};

#[tokio::test]
async fn a_run_completes_and_is_read_back_and_listed() {
    let s = Server::start().await;
    let run = s.start_run("replier", "hi").await;
    let id = run["id"].as_i64().unwrap();
    assert_eq!(run["agent"], "replier");
    let done = s.wait_for(id, &["completed"]).await;
    assert_eq!(done["output"], "hello");
    assert_eq!(done["input"], "hi");
    let second = s.start_run("replier", "again").await["id"]
        .as_i64()
        .unwrap();
    let (status, list) = s.get("/v2/runs").await;
    assert_eq!(status, 200);
    let ids: Vec<i64> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [second, id], "newest first");
    let (_, page) = s.get(&format!("/v2/runs?limit=1&before={second}")).await;
    assert_eq!(page["runs"][0]["id"], id);
    assert_eq!(page["runs"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_question_frame_pending_question_then_a_structured_answer_completes_the_run() {
    let s = Server::start().await;
    let run = s.start_run("asker", "export it").await;
    let id = run["id"].as_i64().unwrap();
    let mut frames = s.events(id, None).await;
    let seen = frames.until("question").await;
    let question = seen.last().unwrap();
    assert_eq!(question.data["pending"]["kind"], "question");
    assert_eq!(
        question.data["pending"]["form"]["questions"][0]["options"][0]["label"],
        "CSV"
    );
    let waiting = s.wait_for(id, &["waiting_input"]).await;
    assert_eq!(waiting["needs_input"][0]["kind"], "question");

    let conversation = waiting["conversation"].as_str().unwrap().to_owned();
    let (status, c) = s.get(&format!("/v2/conversations/{conversation}")).await;
    assert_eq!(status, 200);
    // One shape for what the run waits on: the frame's `pending`, the run's `needs_input`
    // and the conversation's `pending_question` are the same object, deadline included.
    assert_eq!(
        question.data["type"], "question",
        "a frame's type is its name"
    );
    let pending = &question.data["pending"];
    assert_eq!(waiting["needs_input"][0], *pending);
    assert_eq!(c["pending_question"], *pending);
    assert_eq!(pending["run_id"], id);
    assert_eq!(pending["form"]["questions"][0]["header"], "Format");
    assert!(pending["call_id"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(
        pending["deadline"].as_str().unwrap().ends_with('Z'),
        "{pending}"
    );

    let (status, err) = s
        .post(
            &format!("/v2/runs/{id}/answer"),
            json!({"answers": [{"selected": ["XML"]}]}),
        )
        .await;
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["error"]["code"], "invalid_answer");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`XML` is not one of the options"),
        "{err}"
    );

    let (status, answered) = s
        .post(
            &format!("/v2/runs/{id}/answer"),
            json!({"answers": [{"selected": ["CSV"]}]}),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    let rest = frames.until("completed").await;
    assert!(rest.iter().any(|f| f.event == "answered"), "{rest:?}");
    let done = s.wait_for(id, &["completed"]).await;
    assert!(done["output"].as_str().unwrap().contains("CSV"), "{done}");

    let (status, again) = s
        .post(&format!("/v2/runs/{id}/answer"), json!({"text": "late"}))
        .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"]["code"], "not_waiting");
    let (_, c) = s.get(&format!("/v2/conversations/{conversation}")).await;
    assert!(c["pending_question"].is_null());
    assert!(!c["messages"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn a_message_while_a_question_is_pending_answers_it_and_otherwise_starts_the_next_run() {
    let s = Server::start().await;
    let (_, run) = s
        .post(
            "/v2/runs",
            json!({"agent": "asker2", "input": "go", "conversation": "conv-1"}),
        )
        .await;
    let id = run["id"].as_i64().unwrap();
    s.wait_for(id, &["waiting_input"]).await;
    let (status, out) = s
        .post(
            "/v2/conversations/conv-1/messages",
            json!({"text": "yes, go ahead"}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["answered"], true);
    assert_eq!(out["run"]["id"], id);
    let done = s.wait_for(id, &["completed"]).await;
    assert!(
        done["output"].as_str().unwrap().contains("yes, go ahead"),
        "{done}"
    );

    let (status, next) = s
        .post(
            "/v2/conversations/conv-1/messages",
            json!({"text": "once more"}),
        )
        .await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["answered"], false);
    assert_ne!(next["run"]["id"], id);
    assert_eq!(next["run"]["agent"], "asker2");
    assert_eq!(next["run"]["conversation"], "conv-1");
    let (_, c) = s.get("/v2/conversations/conv-1").await;
    assert_eq!(c["runs"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn an_approval_frame_then_a_decision_runs_the_call() {
    let s = Server::start().await;
    let id = s.start_run("approver", "list").await["id"]
        .as_i64()
        .unwrap();
    let mut frames = s.events(id, None).await;
    let seen = frames.until("approval").await;
    let approval = seen.last().unwrap();
    assert_eq!(approval.data["pending"]["tool_name"], "list_directory");
    assert_eq!(approval.data["type"], "approval");
    assert_eq!(approval.data["pending"]["arguments"], json!({"path": "."}));
    assert!(
        approval.data["pending"]["deadline"].is_null(),
        "an approval waits"
    );
    let waiting = s.wait_for(id, &["waiting_input"]).await;
    assert_eq!(waiting["needs_input"][0], approval.data["pending"]);

    let (status, wrong) = s
        .post(&format!("/v2/runs/{id}/answer"), json!({"text": "sure"}))
        .await;
    assert_eq!(status, 409, "{wrong}");
    assert_eq!(wrong["error"]["code"], "wrong_kind");
    assert_eq!(
        wrong["error"]["message"],
        format!(
            "run {id} waits for an approval decision, not an answer; decide it: allow once, \
             allow for the conversation, or deny; nothing was changed"
        )
    );
    let (status, bad) = s
        .post(
            &format!("/v2/runs/{id}/answer"),
            json!({"recovery": {"choice": "skip"}}),
        )
        .await;
    assert_eq!(status, 409, "{bad}");
    assert_eq!(
        bad["error"]["message"],
        format!(
            "run {id} waits for an approval decision, not a recovery choice; decide it: allow \
             once, allow for the conversation, or deny; nothing was changed"
        )
    );

    let (status, bad) = s
        .post(
            &format!("/v2/runs/{id}/approval"),
            json!({"decision": "maybe"}),
        )
        .await;
    assert_eq!(status, 422, "{bad}");
    assert_eq!(bad["error"]["code"], "invalid_body");

    let (status, _) = s
        .post(
            &format!("/v2/runs/{id}/approval"),
            json!({"decision": "allow_once"}),
        )
        .await;
    assert_eq!(status, 200);
    let done = s.wait_for(id, &["completed"]).await;
    assert!(
        done["output"].as_str().unwrap().contains("notes.txt"),
        "{done}"
    );
}

#[tokio::test]
async fn a_denied_approval_tells_the_model_and_cancel_ends_a_waiting_run() {
    let s = Server::start().await;
    let id = s.start_run("approver", "list").await["id"]
        .as_i64()
        .unwrap();
    s.wait_for(id, &["waiting_input"]).await;
    s.post(
        &format!("/v2/runs/{id}/approval"),
        json!({"decision": "deny"}),
    )
    .await;
    let done = s.wait_for(id, &["completed"]).await;
    assert!(
        done["output"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{done}"
    );

    let id = s.start_run("asker", "x").await["id"].as_i64().unwrap();
    s.wait_for(id, &["waiting_input"]).await;
    let (status, cancelled) = s.post(&format!("/v2/runs/{id}/cancel"), json!(null)).await;
    assert_eq!(status, 200);
    assert_eq!(cancelled["state"], "cancelled");
    let (status, again) = s.post(&format!("/v2/runs/{id}/cancel"), json!(null)).await;
    assert_eq!(status, 409);
    assert_eq!(again["error"]["code"], "already_finished");
}

#[tokio::test]
async fn an_idempotency_key_returns_the_first_run() {
    let s = Server::start().await;
    let send = || {
        s.http
            .post(s.url("/v2/runs"))
            .bearer_auth(KEY)
            .header("Idempotency-Key", "req-1")
            .json(&json!({"agent": "replier", "input": "hi"}))
            .send()
    };
    let a = crate::common::split(send().await.unwrap()).await.1;
    let b = crate::common::split(send().await.unwrap()).await.1;
    assert_eq!(a["id"], b["id"]);
    let (_, list) = s.get("/v2/runs").await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 1);
    assert!(a["created_at"].as_str().unwrap().ends_with('Z'), "{a}");

    // The same key with another body: refused, naming what differs.
    let (status, other) = crate::common::split(
        s.http
            .post(s.url("/v2/runs"))
            .bearer_auth(KEY)
            .header("Idempotency-Key", "req-1")
            .json(&json!({"agent": "replier", "input": "something else"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 422, "{other}");
    assert_eq!(other["error"]["code"], "idempotency_key_reused");
    assert_eq!(
        other["error"]["message"],
        format!(
            "the Idempotency-Key was used for run {} with a different input; send the same \
             request to get that run back, or a new key for a new run",
            a["id"]
        )
    );
}

/// Many retries of one request at once: each gets the run or, while the first is still being
/// handled, 409; one run is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_at_once_make_one_run() {
    let s = Server::start().await;
    let answers = futures::future::join_all((0..32).map(|_| {
        s.http
            .post(s.url("/v2/runs"))
            .bearer_auth(KEY)
            .header("Idempotency-Key", "burst")
            .json(&json!({"agent": "replier", "input": "hi"}))
            .send()
    }))
    .await;
    let mut ids = std::collections::BTreeSet::new();
    for answer in answers {
        let (status, body) = crate::common::split(answer.unwrap()).await;
        match status {
            200 => {
                ids.insert(body["id"].as_i64().unwrap());
            }
            409 => assert_eq!(body["error"]["code"], "idempotency_key_in_use", "{body}"),
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    let (_, list) = s.get("/v2/runs").await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn last_event_id_resumes_after_the_last_event_seen() {
    let s = Server::start().await;
    let id = s.start_run("replier", "hi").await["id"].as_i64().unwrap();
    s.wait_for(id, &["completed"]).await;
    let mut all = Vec::new();
    let mut frames = s.events(id, None).await;
    while let Some(f) = frames.next().await {
        all.push(f);
    }
    assert!(all.len() >= 3, "{all:?}");
    let ids: Vec<u64> = all.iter().map(|f| f.id.unwrap()).collect();
    assert_eq!(ids, (1..=all.len() as u64).collect::<Vec<_>>());
    let mut resumed = s.events(id, Some(2)).await;
    let first = resumed.next().await.unwrap();
    assert_eq!(first.id, Some(3));
    assert_eq!(first.event, all[2].event);
    let mut by_query = crate::common::split(
        s.http
            .get(s.url(&format!("/v2/runs/{id}/events?after={}", all.len())))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap(),
    )
    .await;
    by_query.1 = serde_json::Value::Null;
    assert_eq!(by_query.0, 200);
}

#[tokio::test]
async fn patching_an_agent_changes_its_next_run_and_no_other_agent() {
    let s = Server::start().await;
    let (status, agent) = s.get("/v2/agents/asker").await;
    assert_eq!(status, 200);
    assert_eq!(agent["builtin_tools"][0]["key"], "ask_user");
    assert_eq!(
        agent["builtin_tools"][0]["enabled"], true,
        "ask_user is on for a new agent"
    );

    let (status, patched) = s
        .patch(
            "/v2/agents/asker",
            json!({"builtin_tools": {"ask_user": false}, "instructions": "Be brief."}),
        )
        .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["builtin_tools"][0]["enabled"], false);
    assert_eq!(patched["instructions"], "Be brief.");
    assert_eq!(patched["version"], 2);

    // Without ask_user the script's question is an unknown tool: the run never waits.
    let id = s.start_run("asker", "x").await["id"].as_i64().unwrap();
    let done = s.wait_for(id, &["completed", "waiting_input"]).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert!(
        done["output"].as_str().unwrap().contains("ask_user"),
        "{done}"
    );

    // The other agent with the same script still asks.
    let (_, other) = s.get("/v2/agents/asker2").await;
    assert_eq!(other["builtin_tools"][0]["enabled"], true);
    let id = s.start_run("asker2", "x").await["id"].as_i64().unwrap();
    let waiting = s.wait_for(id, &["completed", "waiting_input"]).await;
    assert_eq!(waiting["state"], "waiting_input");

    // Switched back on, the agent's next run asks again.
    s.patch(
        "/v2/agents/asker",
        json!({"builtin_tools": {"ask_user": true}}),
    )
    .await;
    let id = s.start_run("asker", "x").await["id"].as_i64().unwrap();
    let waiting = s.wait_for(id, &["completed", "waiting_input"]).await;
    assert_eq!(waiting["state"], "waiting_input");
}

#[tokio::test]
async fn patching_bundles_and_connectors_is_checked_whole() {
    let s = Server::start().await;
    let (status, err) = s
        .patch(
            "/v2/agents/replier",
            json!({"bundles": [{"name": "fetch"}]}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(err["error"]["code"], "invalid_setting");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no built-in tool or bundle is named `fetch`"),
        "{err}"
    );
    let (status, err) = s
        .patch(
            "/v2/agents/replier",
            json!({"connectors": [{"name": "crm", "tools": ["find"]}]}),
        )
        .await;
    assert_eq!(status, 422);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no connector is named `crm`"),
        "{err}"
    );
    let (status, err) = s
        .patch(
            "/v2/agents/replier",
            json!({"builtin_tools": {"web_search": true}, "instructions": "x"}),
        )
        .await;
    assert_eq!(status, 422);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`web_search` is not a platform built-in tool")
    );
    let (_, unchanged) = s.get("/v2/agents/replier").await;
    assert_eq!(unchanged["version"], 1, "a refused patch changes nothing");
    assert!(unchanged["instructions"].is_null());

    let (status, ok) = s
        .patch("/v2/agents/replier", json!({"bundles": [{"name": "fetch_url", "options": {"max_length": 1000}}], "model": "script"}))
        .await;
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok["bundles"][0]["name"], "fetch_url");
    let (status, err) = s
        .patch("/v2/agents/replier", json!({"model": "gpt-4o"}))
        .await;
    assert_eq!(status, 422);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("names no provider"),
        "{err}"
    );
    let (status, err) = s.patch("/v2/agents/nobody", json!({})).await;
    assert_eq!(status, 404);
    assert_eq!(err["error"]["code"], "unknown_agent");
}

#[tokio::test]
async fn agents_builtin_tools_and_the_openapi_document_are_listed() {
    let s = Server::start().await;
    let (status, agents) = s.get("/v2/agents").await;
    assert_eq!(status, 200);
    let names: Vec<&str> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["approver", "asker", "asker2", "replier"]);
    let (status, tools) = s.get("/v2/tools/builtin").await;
    assert_eq!(status, 200);
    assert_eq!(tools["tools"][0]["key"], "ask_user");
    assert_eq!(tools["tools"][0]["name"], "Ask user");
    assert!(
        tools["tools"][0]["description"]
            .as_str()
            .unwrap()
            .contains("question")
    );
    let (status, doc) = s.get("/v2/openapi.json").await;
    assert_eq!(status, 200);
    for path in [
        "/v2/runs",
        "/v2/runs/{run_id}",
        "/v2/runs/{run_id}/events",
        "/v2/runs/{run_id}/answer",
        "/v2/runs/{run_id}/approval",
        "/v2/runs/{run_id}/cancel",
        "/v2/conversations/{id}",
        "/v2/conversations/{id}/messages",
        "/v2/agents",
        "/v2/agents/{id}",
        "/v2/tools/builtin",
        "/healthz",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} missing");
    }
}

/// The reference MCP memory server's script, installed by `.ci/install-mcp-servers.sh`; `None`
/// (with the reason printed) when it or `node` is missing outside CI. In CI a missing server
/// fails.
pub fn memory_server() -> Option<std::path::PathBuf> {
    harnessx_testkit::npm::reference_server("server-memory")
}

#[tokio::test]
async fn connectors_lists_each_servers_tools_with_read_only_and_a_broken_one_with_its_error() {
    let Some(memory) = memory_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts.txt");
    let s = Server::start_with(
        |c| {
            format!(
                r#"{c}
[connectors.memory]
command = "sh"
args = ["-c", "echo started >> '{starts}'; exec node '{memory}'"]
env = {{ MEMORY_FILE_PATH = "{file}" }}

[connectors.broken]
command = "/nonexistent/harnessx-no-such-mcp-server"
connect_timeout_seconds = 5
"#,
                starts = starts.display(),
                memory = memory.display(),
                file = dir.path().join("memory.jsonl").display(),
            )
        },
        |o| o,
    )
    .await;

    let (status, body) = s.get("/v2/connectors").await;
    assert_eq!(status, 200, "{body}");
    let connectors = body["connectors"].as_array().unwrap();
    let names: Vec<&str> = connectors
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["broken", "memory"], "every connector, by name");

    let broken = &connectors[0];
    assert_eq!(broken["tools"], json!([]));
    let error = broken["error"].as_str().unwrap();
    assert!(
        error.contains("could not start MCP server `broken`")
            && error.contains("/nonexistent/harnessx-no-such-mcp-server"),
        "{error}"
    );

    let memory_entry = &connectors[1];
    assert!(memory_entry.get("error").is_none(), "{memory_entry}");
    let tools = memory_entry["tools"].as_array().unwrap();
    let read_only: std::collections::BTreeMap<&str, bool> = tools
        .iter()
        .map(|t| {
            assert!(
                !t["description"].as_str().unwrap().is_empty(),
                "each tool has the server's description: {t}"
            );
            (
                t["name"].as_str().unwrap(),
                t["read_only"].as_bool().unwrap(),
            )
        })
        .collect();
    let asks: Vec<&str> = read_only
        .iter()
        .filter(|(_, ro)| !**ro)
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(
        asks,
        [
            "add_observations",
            "create_entities",
            "create_relations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
        ],
        "the tools not marked readOnlyHint: true ask before they run"
    );
    for name in ["open_nodes", "read_graph", "search_nodes"] {
        assert_eq!(read_only.get(name), Some(&true), "{name} is read-only");
    }
    assert_eq!(read_only.len(), 9, "{read_only:?}");

    // The same names go into an agent's connector choice (`allow_tools` matches them).
    let (status, agent) = s
        .patch(
            "/v2/agents/replier",
            json!({"connectors": [{"name": "memory", "tools": ["read_graph", "create_entities"]}]}),
        )
        .await;
    assert_eq!(status, 200, "{agent}");

    // A second page load reuses the listing: the memory server was started once.
    let (status, again) = s.get("/v2/connectors").await;
    assert_eq!(status, 200);
    assert_eq!(again["connectors"][1], body["connectors"][1]);
    let started = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(started.lines().count(), 1, "{started}");

    // No key, no listing; the route is in the OpenAPI document.
    let r = s.http.get(s.url("/v2/connectors")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let (_, doc) = s.get("/v2/openapi.json").await;
    assert!(doc["paths"]["/v2/connectors"]["get"].is_object());
}

/// Query parameters are documented as query parameters, optional, so generated clients send
/// them in the query string; every parameter `in: path` appears in its path.
#[tokio::test]
async fn the_openapi_document_puts_each_parameter_where_it_is_read() {
    let s = Server::start().await;
    let (_, doc) = s.get("/v2/openapi.json").await;
    let param = |path: &str, name: &str| {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{path} has no parameter {name}"))
    };
    for (path, name) in [
        ("/v2/runs", "limit"),
        ("/v2/runs", "before"),
        ("/v2/runs/{run_id}/events", "after"),
    ] {
        let p = param(path, name);
        assert_eq!(p["in"], "query", "{path} {name}: {p}");
        assert_ne!(p["required"], true, "{path} {name}: {p}");
    }
    for (path, item) in doc["paths"].as_object().unwrap() {
        for op in item.as_object().unwrap().values() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["in"] == "path" {
                    let name = p["name"].as_str().unwrap();
                    assert!(path.contains(&format!("{{{name}}}")), "{path}: {p}");
                }
            }
        }
    }
}

/// `GET /v2/runs` filters by agent, state and conversation, and pages with `next_before`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_listed_by_agent_state_and_conversation_in_pages() {
    let s = Server::start().await;
    for i in 0..3 {
        s.post(
            "/v2/runs",
            json!({"agent": "replier", "input": format!("r{i}"), "conversation": "talk"}),
        )
        .await;
    }
    let asked = s.start_run("asker", "a question").await["id"]
        .as_i64()
        .unwrap();
    s.wait_for(asked, &["waiting_input"]).await;
    let (_, page) = s.get("/v2/runs?agent=replier&limit=2").await;
    assert_eq!(page["runs"].as_array().unwrap().len(), 2, "{page}");
    let next = page["next_before"].as_i64().unwrap();
    let (_, rest) = s
        .get(&format!("/v2/runs?agent=replier&limit=2&before={next}"))
        .await;
    assert_eq!(rest["runs"].as_array().unwrap().len(), 1, "{rest}");
    assert!(rest["next_before"].is_null(), "{rest}");
    let (_, waiting) = s.get("/v2/runs?state=waiting_input").await;
    assert_eq!(waiting["runs"][0]["id"], asked, "{waiting}");
    assert_eq!(waiting["runs"].as_array().unwrap().len(), 1);
    let (_, talk) = s.get("/v2/runs?conversation=talk").await;
    assert_eq!(talk["runs"].as_array().unwrap().len(), 3, "{talk}");
    let (status, bad) = s.get("/v2/runs?state=sleeping").await;
    assert_eq!(status, 400);
    assert_eq!(
        bad["error"]["message"],
        "state is `sleeping`; give queued, running, waiting_input, completed, failed or cancelled"
    );
}
