//! Upgrading, on SQLite and PostgreSQL: a database at the release before's schema (its
//! migrations only), holding the rows a schema-4 server wrote (`tests/fixtures/`: two runs
//! waiting on questions, two completed, one conversation going on), is opened by this release's
//! server. The migrations are applied, the finished runs age like any other (retention deletes
//! them), the waiting runs are answered and complete, and new runs take new ids.

use harnessx_runtime::store::{SCHEMA_VERSION, previous_schema_version};
use harnessx_runtime::{PostgresStore, SqliteStore};
use serde_json::json;

use crate::common::{Server, config_text};

const SQLITE_ROWS: &str = include_str!("../fixtures/schema4-sqlite.sql");
const POSTGRES_ROWS: &str = include_str!("../fixtures/schema4-postgres.sql");

/// The agents the fixtures' server ran, as its configuration named them.
fn config() -> String {
    config_text(&std::env::temp_dir())
}

async fn upgraded(s: &Server) {
    let (status, ready) = s.get("/readyz").await;
    assert_eq!(
        (status, ready),
        (
            200,
            json!({"status": "ready", "schema_version": SCHEMA_VERSION})
        )
    );
    // The runs as the old server left them.
    let (_, list) = s.get("/v2/runs").await;
    let states: Vec<(i64, &str)> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        vec![
            (4, "completed"),
            (3, "waiting_input"),
            (2, "waiting_input"),
            (1, "completed")
        ]
    );
    let (_, conversation) = s.get("/v2/conversations/support-7").await;
    assert_eq!(conversation["runs"], json!([1, 2]));
    assert_eq!(conversation["pending_question"]["run_id"], 2);
    assert_eq!(conversation["messages"].as_array().unwrap().len(), 2);

    // Runs that finished under the old release have an age: retention takes them.
    let (status, pruned) = s
        .post("/v2/runs/prune", json!({"older_than_seconds": 0}))
        .await;
    assert_eq!((status, &pruned["deleted"]), (200, &json!(2)), "{pruned}");
    assert_eq!(s.get("/v2/runs/1").await.0, 404);
    assert_eq!(s.get("/v2/conversations/run-4").await.0, 404);
    // The conversation that goes on keeps its transcript.
    let (_, conversation) = s.get("/v2/conversations/support-7").await;
    assert_eq!(conversation["runs"], json!([2]));
    assert_eq!(conversation["messages"][0]["content"], json!("hello there"));

    // The waiting runs are answered (one by the conversation's next message) and complete.
    let (status, outcome) = s
        .post(
            "/v2/conversations/support-7/messages",
            json!({"text": "JSON please"}),
        )
        .await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["answered"], true);
    let (status, body) = s
        .post(
            "/v2/runs/3/answer",
            json!({"answers": [{"selected": ["Yes"]}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let two = s.wait_for(2, &["completed", "failed"]).await;
    assert_eq!(two["state"], "completed", "{two}");
    assert!(
        two["output"].as_str().unwrap().contains("JSON please"),
        "{two}"
    );
    let three = s.wait_for(3, &["completed", "failed"]).await;
    assert_eq!(three["state"], "completed", "{three}");
    assert!(three["output"].as_str().unwrap().contains("Yes"), "{three}");
    let (_, conversation) = s.get("/v2/conversations/support-7").await;
    assert_eq!(conversation["messages"].as_array().unwrap().len(), 4 + 2);

    // A new run takes the next id.
    let next = s.start_run("replier", "after the upgrade").await;
    assert_eq!(next["id"], 5);
    s.wait_for(5, &["completed"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_database_of_the_release_before_is_migrated_and_its_waiting_runs_complete() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("harnessx.db");
    SqliteStore::migrate_file_to(&db, previous_schema_version()).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(SQLITE_ROWS)
        .unwrap();
    let s = Server::on(&config(), db.to_str().unwrap()).await;
    upgraded(&s).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_database_of_the_release_before_is_migrated_and_its_waiting_runs_complete() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let url = pg.url();
    PostgresStore::migrate_to(&url, previous_schema_version())
        .await
        .unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let found: i64 = client
        .query_one("SELECT MAX(version) FROM schema_version", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(found, previous_schema_version());
    client.batch_execute(POSTGRES_ROWS).await.unwrap();
    drop(client);
    let _ = driver.await;
    let s = Server::on(&config(), &url).await;
    upgraded(&s).await;
    s.stop().await;
}
