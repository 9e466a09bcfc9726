//! `GET /v2/conversations`: the conversations by their latest run, newest first, a page at a
//! time (`before` the `next_before` of the page before), each with its agent, first message,
//! latest state and times — on both stores.

use serde_json::{Value, json};

use crate::common::Server;

async fn started(s: &Server, agent: &str, input: &str, conversation: &str) -> i64 {
    let (status, run) = s
        .post(
            "/v2/runs",
            json!({"agent": agent, "input": input, "conversation": conversation}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    let id = run["id"].as_i64().unwrap();
    s.wait_for(id, &["completed", "waiting_input"]).await;
    id
}

fn ids(page: &Value) -> Vec<&str> {
    page["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect()
}

async fn conversations_are_listed_a_page_at_a_time(s: &Server) {
    let (status, empty) = s.get("/v2/conversations").await;
    assert_eq!(status, 200, "{empty}");
    assert_eq!(empty, json!({"conversations": [], "next_before": null}));

    started(s, "replier", "Hello there", "greetings").await;
    let long = "A question that goes on. ".repeat(10);
    started(s, "replier", &long, "long").await;
    started(s, "asker", "Export my data", "export").await;
    // A later run moves `greetings` to the top, with that run's agent and state.
    let last = started(s, "asker", "And again", "greetings").await;

    let (status, page) = s.get("/v2/conversations?limit=2").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(ids(&page), ["greetings", "export"]);
    let top = &page["conversations"][0];
    assert_eq!(top["agent"], "asker");
    assert_eq!(top["title"], "Hello there", "the first message names it");
    assert_eq!(top["runs"], 2);
    assert_eq!(top["last_run"], last);
    assert_eq!(top["state"], "waiting_input");
    assert!(
        top["updated_at"].as_str() >= top["created_at"].as_str(),
        "{top}"
    );
    assert_eq!(page["next_before"], page["conversations"][1]["last_run"]);

    let (_, next) = s
        .get(&format!(
            "/v2/conversations?limit=2&before={}",
            page["next_before"]
        ))
        .await;
    assert_eq!(ids(&next), ["long"]);
    assert_eq!(
        next["next_before"],
        Value::Null,
        "the last page is not full"
    );
    let title = next["conversations"][0]["title"].as_str().unwrap();
    assert_eq!(title.chars().count(), 121, "{title}");
    assert!(title.ends_with('…'), "{title}");
    assert_eq!(next["conversations"][0]["state"], "completed");

    for (query, message) in [
        ("limit=0", "limit is 0; give 1 to 200"),
        ("limit=201", "limit is 201; give 1 to 200"),
        (
            "before=0",
            "before is 0; give a run id (a positive integer)",
        ),
    ] {
        let (status, err) = s.get(&format!("/v2/conversations?{query}")).await;
        assert_eq!(status, 400, "{query}: {err}");
        assert_eq!(err["error"]["code"], "invalid_query");
        assert_eq!(err["error"]["message"], message);
    }
    let (status, err) = s.get("/v2/conversations?agent=asker").await;
    assert_eq!(status, 400, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_are_listed_on_sqlite() {
    let s = Server::start().await;
    conversations_are_listed_a_page_at_a_time(&s).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_are_listed_on_postgresql() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s = Server::on(&crate::common::config_text(dir.path()), &pg.url()).await;
    conversations_are_listed_a_page_at_a_time(&s).await;
    s.stop().await;
}
