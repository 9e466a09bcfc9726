//! Knowledge bases are stored resources: created, filled with text and Markdown documents,
//! listed and deleted over HTTP; an agent attaches them by name and its runs' `knowledge_search`
//! (there with the first attached base, gone with the last) searches the stored documents — on
//! every server of the database.

use harnessx_server::{Config, ServeOptions, serve};
use serde_json::{Value, json};

use crate::common::{KEY, Server};

async fn server_on(db: &str) -> Server {
    let running = serve(
        &Config::parse("").unwrap(),
        ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .api_key(KEY)
            .database(db),
    )
    .await
    .unwrap();
    Server::attach(running)
}

async fn stop(mut s: Server) {
    s.running
        .take()
        .unwrap()
        .stop(std::time::Duration::from_secs(5))
        .await;
}

fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap_or_default()
}

/// Runs `agent` to its end and returns its output.
async fn output(s: &Server, agent: &str) -> String {
    let id = s.start_run(agent, "go").await["id"].as_i64().unwrap();
    let run = s.wait_for(id, &["completed", "failed"]).await;
    assert_eq!(run["state"], "completed", "{run}");
    run["output"].as_str().unwrap().to_owned()
}

/// The tools the model of `lister` is offered, from the engine's answer to an unknown tool.
async fn tools_seen(s: &Server) -> String {
    let out = output(s, "lister").await;
    assert!(out.contains("available tools"), "{out}");
    out
}

const VPN: &str = "# VPN access\n\nConnect to the VPN with the WireGuard profile from the \
                   portal. Ask the service desk when the profile expires.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_knowledge_base_is_created_filled_attached_searched_detached_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    let s = server_on(db).await;

    // Create, and what is refused.
    let (status, made) = s
        .post(
            "/v2/knowledge",
            json!({"name": "handbook", "description": "How we work."}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["version"], 1);
    assert_eq!(made["document_count"], 0);
    assert_eq!(made["description"], "How we work.");
    let (status, twice) = s.post("/v2/knowledge", json!({"name": "handbook"})).await;
    assert_eq!(status, 409, "{twice}");
    assert_eq!(twice["error"]["code"], "knowledge_base_exists");
    assert_eq!(
        message(&twice),
        "a knowledge base named `handbook` exists already; add documents to it with POST /v2/knowledge/handbook/documents"
    );
    let (status, bad) = s.post("/v2/knowledge", json!({"name": "no spaces"})).await;
    assert_eq!(status, 422, "{bad}");
    assert_eq!(
        message(&bad),
        "name: `no spaces` is not a valid name; use 1 to 64 letters, digits, `_` or `-`"
    );
    let (status, long) = s
        .post(
            "/v2/knowledge",
            json!({"name": "long", "description": "d".repeat(2001)}),
        )
        .await;
    assert_eq!(status, 422, "{long}");
    assert_eq!(
        message(&long),
        "description: the description is 2001 characters; shorten it to at most 2000"
    );
    let (status, unknown) = s
        .post("/v2/knowledge", json!({"name": "x", "colour": "red"}))
        .await;
    assert_eq!(status, 422, "{unknown}");
    assert!(message(&unknown).contains("colour"), "{unknown}");

    // Documents.
    let (status, vpn) = s
        .post(
            "/v2/knowledge/handbook/documents",
            json!({"title": "vpn.md", "text": VPN, "format": "markdown"}),
        )
        .await;
    assert_eq!(status, 201, "{vpn}");
    assert_eq!(vpn["format"], "markdown");
    assert_eq!(vpn["bytes"], VPN.len());
    let vpn_id = vpn["id"].as_u64().unwrap();
    let (status, leave) = s
        .post(
            "/v2/knowledge/handbook/documents",
            json!({"title": "leave.txt", "text": "Request leave in the HR tool two weeks ahead."}),
        )
        .await;
    assert_eq!(status, 201, "{leave}");
    assert_eq!(leave["format"], "text", "text is the default format");
    // A whole MiB is taken (the route reads more than the API's usual 64 KiB)...
    let (status, big) = s
        .post(
            "/v2/knowledge/handbook/documents",
            json!({"title": "big.txt", "text": "word ".repeat(1024 * 1024 / 5)}),
        )
        .await;
    assert_eq!(status, 201, "{big}");
    // ...one byte more is refused naming the limit, and so is a body far over it.
    let (status, over) = s
        .post(
            "/v2/knowledge/handbook/documents",
            json!({"title": "over.txt", "text": "a".repeat(1024 * 1024 + 1)}),
        )
        .await;
    assert_eq!(status, 413, "{over}");
    assert_eq!(over["error"]["code"], "document_too_large");
    assert_eq!(
        message(&over),
        "text: the document is 1048577 bytes, more than the limit of 1048576 bytes (1 MiB) a document; split it into smaller documents"
    );
    let (status, huge) = s
        .post(
            "/v2/knowledge/handbook/documents",
            json!({"title": "huge.txt", "text": "a".repeat(5 * 1024 * 1024)}),
        )
        .await;
    assert_eq!(status, 413, "{huge}");
    assert_eq!(huge["error"]["code"], "document_too_large");
    assert_eq!(
        message(&huge),
        format!(
            "the request body is over {} bytes; a document's text may be at most 1048576 bytes (1 MiB): split it into smaller documents",
            harnessx_server::api::DOCUMENT_BODY_LIMIT
        )
    );
    for (body, status, want) in [
        (
            json!({"title": " ", "text": "t"}),
            422,
            "title: the title is empty; give the document a title, such as its file name",
        ),
        (
            json!({"title": "t".repeat(201), "text": "t"}),
            422,
            "title: the title is 201 characters; shorten it to at most 200",
        ),
        (
            json!({"title": "a\nb", "text": "t"}),
            422,
            "title: the title holds control characters (such as a line break); give it on one line",
        ),
        (
            json!({"title": "t", "text": "  \n"}),
            422,
            "text: the document has no text; send the file's contents in `text`",
        ),
    ] {
        let (got, body) = s.post("/v2/knowledge/handbook/documents", body).await;
        assert_eq!((got, message(&body)), (status, want), "{body}");
    }
    let (status, html) = s
        .post(
            "/v2/knowledge/handbook/documents",
            json!({"title": "t", "text": "t", "format": "html"}),
        )
        .await;
    assert_eq!(status, 422, "{html}");
    assert_eq!(html["error"]["code"], "invalid_body");
    assert!(
        message(&html).contains("format: unknown variant `html`, expected `text` or `markdown`"),
        "{html}"
    );
    let (status, nowhere) = s
        .post(
            "/v2/knowledge/nowhere/documents",
            json!({"title": "t", "text": "t"}),
        )
        .await;
    assert_eq!(status, 404, "{nowhere}");
    assert_eq!(nowhere["error"]["code"], "unknown_knowledge_base");
    assert_eq!(
        message(&nowhere),
        "no knowledge base is named `nowhere`; GET /v2/knowledge lists them"
    );

    // Listed with counts; read with documents.
    s.post("/v2/knowledge", json!({"name": "wiki"})).await;
    let (status, list) = s.get("/v2/knowledge").await;
    assert_eq!(status, 200, "{list}");
    let counts: Vec<(String, u64)> = list["knowledge_bases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap().to_owned(),
                b["document_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, [("handbook".into(), 3), ("wiki".into(), 0)]);
    let (status, handbook) = s.get("/v2/knowledge/handbook").await;
    assert_eq!(status, 200, "{handbook}");
    let titles: Vec<&str> = handbook["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["vpn.md", "leave.txt", "big.txt"]);
    let (status, missing) = s.get("/v2/knowledge/missing").await;
    assert_eq!(status, 404, "{missing}");

    // Attaching checks the base exists, once.
    let (status, wrong) = s
        .post(
            "/v2/agents",
            json!({"id": "lister", "model": "script", "knowledge_bases": ["nope"]}),
        )
        .await;
    assert_eq!(status, 422, "{wrong}");
    assert_eq!(
        message(&wrong),
        "knowledge_bases[0]: no knowledge base is named `nope`; the knowledge bases are: handbook, wiki (POST /v2/knowledge creates one)"
    );
    let (status, twice) = s
        .post(
            "/v2/agents",
            json!({"id": "lister", "model": "script", "knowledge_bases": ["wiki", "wiki"]}),
        )
        .await;
    assert_eq!(status, 422, "{twice}");
    assert_eq!(
        message(&twice),
        "knowledge_bases[1]: `wiki` is listed twice; list each knowledge base once"
    );

    // knowledge_search is offered with the first attached base and taken away with the last.
    let (status, lister) = s
        .post(
            "/v2/agents",
            json!({
                "id": "lister",
                "model": "script",
                "script": [{"call": "list_my_tools", "arguments": {}}, {"reply": "{result}"}],
            }),
        )
        .await;
    assert_eq!(status, 201, "{lister}");
    assert_eq!(lister["knowledge_bases"], json!([]));
    assert!(!tools_seen(&s).await.contains("knowledge_search"));
    let (status, attached) = s
        .patch(
            "/v2/agents/lister",
            json!({"knowledge_bases": ["handbook"]}),
        )
        .await;
    assert_eq!(status, 200, "{attached}");
    assert_eq!(attached["knowledge_bases"], json!(["handbook"]));
    assert!(tools_seen(&s).await.contains("knowledge_search"));
    s.patch(
        "/v2/agents/lister",
        json!({"knowledge_bases": ["handbook", "wiki"]}),
    )
    .await;
    s.patch("/v2/agents/lister", json!({"knowledge_bases": ["wiki"]}))
        .await;
    assert!(
        tools_seen(&s).await.contains("knowledge_search"),
        "one base is still attached"
    );
    let (status, detached) = s
        .patch("/v2/agents/lister", json!({"knowledge_bases": []}))
        .await;
    assert_eq!(status, 200, "{detached}");
    assert!(!tools_seen(&s).await.contains("knowledge_search"));

    // A run's knowledge_search finds the stored document.
    let (status, librarian) = s
        .post(
            "/v2/agents",
            json!({
                "id": "librarian",
                "model": "script",
                "knowledge_bases": ["handbook"],
                "script": [
                    {"call": "knowledge_search", "arguments": {"query": "How do I reach the VPN?"}},
                    {"reply": "{result}"},
                ],
            }),
        )
        .await;
    assert_eq!(status, 201, "{librarian}");
    let found = output(&s, "librarian").await;
    assert!(found.contains("WireGuard profile"), "{found}");
    assert!(
        found.contains(&format!(
            "vpn.md — /v2/knowledge/handbook/documents/{vpn_id}"
        )),
        "{found}"
    );
    assert!(!found.contains("Request leave"), "{found}");
    let (_, handbook) = s.get("/v2/knowledge/handbook").await;
    assert_eq!(handbook["agents"], json!(["librarian"]));

    // An attached base cannot be deleted.
    let (status, in_use) = s.delete("/v2/knowledge/handbook").await;
    assert_eq!(status, 409, "{in_use}");
    assert_eq!(in_use["error"]["code"], "knowledge_base_in_use");
    assert_eq!(
        message(&in_use),
        "knowledge base `handbook` is attached to the agents `librarian`; detach it from them first (their `knowledge_bases` without it)"
    );

    // Deleting a document: the next run no longer finds it.
    let (status, gone) = s
        .delete(&format!("/v2/knowledge/handbook/documents/{vpn_id}"))
        .await;
    assert_eq!(status, 200, "{gone}");
    let found = output(&s, "librarian").await;
    assert!(found.contains("No passages matched"), "{found}");
    let (status, again) = s
        .delete(&format!("/v2/knowledge/handbook/documents/{vpn_id}"))
        .await;
    assert_eq!(status, 404, "{again}");
    assert_eq!(again["error"]["code"], "unknown_document");
    assert_eq!(
        message(&again),
        format!(
            "knowledge base `handbook` has no document {vpn_id}; GET /v2/knowledge/handbook lists them"
        )
    );
    for raw in ["abc", "0", "-1"] {
        let (status, bad) = s
            .delete(&format!("/v2/knowledge/handbook/documents/{raw}"))
            .await;
        assert_eq!(status, 400, "{bad}");
        assert_eq!(bad["error"]["code"], "invalid_document_id");
        assert_eq!(
            message(&bad),
            format!(
                "`{raw}` is not a document id; document ids are positive integers (GET /v2/knowledge/{{name}} lists them)"
            )
        );
    }

    // A restart keeps the bases, the documents and the attachment.
    stop(s).await;
    let s = server_on(db).await;
    let (_, handbook) = s.get("/v2/knowledge/handbook").await;
    assert_eq!(handbook["document_count"], 2, "{handbook}");
    let (_, librarian) = s.get("/v2/agents/librarian").await;
    assert_eq!(librarian["knowledge_bases"], json!(["handbook"]));

    // Detached, the base can be deleted with its documents; a new one of that name is empty.
    s.patch("/v2/agents/librarian", json!({"knowledge_bases": []}))
        .await;
    let (status, deleted) = s.delete("/v2/knowledge/handbook").await;
    assert_eq!(status, 200, "{deleted}");
    let (status, _) = s.get("/v2/knowledge/handbook").await;
    assert_eq!(status, 404);
    let (status, _) = s.delete("/v2/knowledge/handbook").await;
    assert_eq!(status, 404);
    let (_, fresh) = s.post("/v2/knowledge", json!({"name": "handbook"})).await;
    assert_eq!(fresh["document_count"], 0, "{fresh}");
    assert_eq!(fresh["version"], 2, "{fresh}");

    // Every route is in the OpenAPI document.
    let (_, doc) = s.get("/v2/openapi.json").await;
    for (path, method) in [
        ("/v2/knowledge", "get"),
        ("/v2/knowledge", "post"),
        ("/v2/knowledge/{name}", "get"),
        ("/v2/knowledge/{name}", "delete"),
        ("/v2/knowledge/{name}/documents", "post"),
        ("/v2/knowledge/{name}/documents/{id}", "delete"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
    stop(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_filled_through_one_server_is_searched_by_a_run_on_another() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let a = server_on(&pg.url()).await;
    let b = server_on(&pg.url()).await;

    let (status, _) = a.post("/v2/knowledge", json!({"name": "runbook"})).await;
    assert_eq!(status, 201);
    let (status, doc) = a
        .post(
            "/v2/knowledge/runbook/documents",
            json!({"title": "Deploys", "text": "Deploys freeze on Fridays after noon.", "format": "text"}),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let (status, agent) = a
        .post(
            "/v2/agents",
            json!({
                "id": "oncall",
                "model": "script",
                "knowledge_bases": ["runbook"],
                "script": [
                    {"call": "knowledge_search", "arguments": {"query": "when do deploys freeze"}},
                    {"reply": "{result}"},
                ],
            }),
        )
        .await;
    assert_eq!(status, 201, "{agent}");

    // Server B sees the base and runs the agent over A's document.
    let (_, list) = b.get("/v2/knowledge").await;
    assert_eq!(list["knowledge_bases"][0]["document_count"], 1, "{list}");
    assert_eq!(list["knowledge_bases"][0]["agents"], json!(["oncall"]));
    let found = output(&b, "oncall").await;
    assert!(found.contains("Fridays after noon"), "{found}");

    // A document added through B is found by a run on A, and B refuses A's delete.
    let (status, _) = b
        .post(
            "/v2/knowledge/runbook/documents",
            json!({"title": "Freeze exceptions", "text": "A freeze exception needs two approvals.", "format": "markdown"}),
        )
        .await;
    assert_eq!(status, 201);
    let found = output(&a, "oncall").await;
    assert!(found.contains("two approvals"), "{found}");
    let (status, _) = b.delete("/v2/knowledge/runbook").await;
    assert_eq!(status, 409);
    stop(a).await;
    stop(b).await;
}
