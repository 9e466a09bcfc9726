//! Retention over HTTP, on SQLite and PostgreSQL: `POST /v2/runs/prune` deletes finished runs
//! older than an age and keeps the rest; a server with `[store] retain_days` deletes older
//! finished runs by itself; the key's bad values and `harnessx runs prune`'s bad ages are named;
//! `runs prune` works embedded and against `--server`.

use std::time::Duration;

use harnessx_server::Config;
use serde_json::{Value, json};

use super::backup::{harnessx, serve_process};
use crate::common::{KEY, Server, config_text};

/// Where a test's runs live, and a way to change rows as time would.
enum Db {
    Sqlite(tempfile::TempDir),
    Postgres(harnessx_testkit::PgCluster),
}

impl Db {
    fn sqlite() -> Self {
        Self::Sqlite(tempfile::tempdir().unwrap())
    }

    fn url(&self) -> String {
        match self {
            Self::Sqlite(dir) => dir.path().join("harnessx.db").display().to_string(),
            Self::Postgres(pg) => pg.url(),
        }
    }

    /// Runs `sql` on the database, with no server on it (SQLite) or beside them (PostgreSQL).
    async fn execute(&self, sql: &str) {
        match self {
            Self::Sqlite(_) => rusqlite::Connection::open(self.url())
                .unwrap()
                .execute_batch(sql)
                .unwrap(),
            Self::Postgres(pg) => {
                let (client, connection) =
                    tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
                        .await
                        .unwrap();
                let driver = tokio::spawn(connection);
                client.batch_execute(sql).await.unwrap();
                drop(client);
                let _ = driver.await;
            }
        }
    }
}

fn id(run: &Value) -> i64 {
    run["id"].as_i64().unwrap()
}

/// A server on `db`, once the one before it let go of the file.
async fn start(config: &str, db: &Db) -> Server {
    for _ in 0..200 {
        match harnessx_server::serve(
            &Config::parse(config).unwrap(),
            harnessx_server::ServeOptions::default()
                .bind("127.0.0.1:0".parse().unwrap())
                .api_key(KEY)
                .database(db.url()),
        )
        .await
        {
            Ok(running) => return Server::attach(running),
            // The server stopped a moment ago still holds the SQLite file's lock.
            Err(e) if format!("{e:?}").contains("Locked") => {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    panic!("the database stayed locked");
}

async fn prune_route(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&config_text(dir.path()), &db).await;
    let done = id(&s.start_run("replier", "hi").await);
    s.wait_for(done, &["completed"]).await;
    let waiting = id(&s.start_run("asker", "export").await);
    s.wait_for(waiting, &["waiting_input"]).await;
    let queued_later = id(&s.start_run("asker", "later").await);

    let (status, body) = s
        .post("/v2/runs/prune", json!({"older_than_seconds": 3600}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["deleted"], 0);
    assert!(
        body["finished_before"].as_str().unwrap().ends_with('Z'),
        "{body}"
    );
    let (status, body) = s
        .post("/v2/runs/prune", json!({"older_than_seconds": 0}))
        .await;
    assert_eq!((status, &body["deleted"]), (200, &json!(1)), "{body}");

    let (status, body) = s.get(&format!("/v2/runs/{done}")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("unknown_run"))
    );
    let (status, _) = s.get(&format!("/v2/conversations/run-{done}")).await;
    assert_eq!(status, 404);
    let (_, list) = s.get("/v2/runs").await;
    let ids: Vec<i64> = list["runs"].as_array().unwrap().iter().map(id).collect();
    assert_eq!(ids, vec![queued_later, waiting]);
    // The waiting run is answered and completes as if nothing happened.
    let (status, body) = s
        .post(
            &format!("/v2/runs/{waiting}/answer"),
            json!({"answers": [{"selected": ["CSV"]}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    s.wait_for(waiting, &["completed"]).await;

    for (body, message) in [
        (
            json!({"older_than_seconds": -1}),
            "older_than_seconds is -1; give 0 to 3153600000 seconds (2592000 is 30 days)",
        ),
        (
            json!({"older_than_seconds": 3_153_600_001_i64}),
            "older_than_seconds is 3153600001; give 0 to 3153600000 seconds (2592000 is 30 days)",
        ),
    ] {
        let (status, got) = s.post("/v2/runs/prune", body).await;
        assert_eq!(status, 422, "{got}");
        assert_eq!(got["error"]["code"], "invalid_body");
        assert_eq!(got["error"]["message"], message);
    }
    for body in [
        json!({}),
        json!({"older_than_seconds": "30d"}),
        json!({"older_than_seconds": 1, "dry_run": true}),
    ] {
        let (status, got) = s.post("/v2/runs/prune", body.clone()).await;
        assert_eq!(
            (status, got["error"]["code"].as_str()),
            (422, Some("invalid_body")),
            "{body}: {got}"
        );
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_old_finished_runs_and_keeps_the_rest_on_sqlite() {
    prune_route(Db::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_old_finished_runs_and_keeps_the_rest_on_postgres() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    prune_route(Db::Postgres(pg)).await;
}

async fn retain_days(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let config = config_text(dir.path());
    let s = start(&config, &db).await;
    let old = id(&s.start_run("replier", "long ago").await);
    s.wait_for(old, &["completed"]).await;
    let recent = id(&s.start_run("replier", "lately").await);
    s.wait_for(recent, &["completed"]).await;
    let waiting = id(&s.start_run("asker", "export").await);
    s.wait_for(waiting, &["waiting_input"]).await;
    s.stop().await;
    // Time passes: `old` finished 31 days ago; the waiting run was asked a year ago.
    let day = 86_400_000_i64;
    db.execute(&format!(
        "UPDATE runs SET finished_ms = finished_ms - {} WHERE id = {old};
         UPDATE runs SET created_ms = created_ms - {} WHERE id = {waiting};",
        31 * day,
        365 * day
    ))
    .await;

    let s = start(&format!("[store]\nretain_days = 30\n{config}"), &db).await;
    let mut gone = false;
    for _ in 0..200 {
        if s.get(&format!("/v2/runs/{old}")).await.0 == 404 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(gone, "the run finished 31 days ago is still there");
    let (status, run) = s.get(&format!("/v2/runs/{recent}")).await;
    assert_eq!((status, run["state"].as_str()), (200, Some("completed")));
    let (status, run) = s.get(&format!("/v2/runs/{waiting}")).await;
    assert_eq!(
        (status, run["state"].as_str()),
        (200, Some("waiting_input"))
    );
    let (status, _) = s
        .post(
            &format!("/v2/runs/{waiting}/answer"),
            json!({"answers": [{"selected": ["JSON"]}]}),
        )
        .await;
    assert_eq!(status, 200);
    s.wait_for(waiting, &["completed"]).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_keeping_30_days_deletes_older_finished_runs_on_sqlite() {
    retain_days(Db::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_keeping_30_days_deletes_older_finished_runs_on_postgres() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    retain_days(Db::Postgres(pg)).await;
}

#[test]
fn retain_days_is_a_number_of_days_named_with_its_line_when_bad() {
    let config = Config::parse("[store]\nretain_days = 30\n").unwrap();
    assert_eq!(config.store.retain_days(), Some(30));
    assert_eq!(Config::parse("").unwrap().store.retain_days(), None);
    for (text, message) in [
        (
            "[store]\nretain_days = 0\n",
            "line 2: `store.retain_days`: 0 is out of range; give 1 to 36500 days (leave it out \
             to keep finished runs until `harnessx runs prune`)",
        ),
        (
            "[store]\nworkers = 2\nretain_days = 36501\n",
            "line 3: `store.retain_days`: 36501 is out of range; give 1 to 36500 days (leave it \
             out to keep finished runs until `harnessx runs prune`)",
        ),
    ] {
        assert_eq!(Config::parse(text).unwrap_err().to_string(), message);
    }
    for text in [
        "[store]\nretain_days = \"30d\"\n",
        "[store]\nretain_days = 30.5\n",
    ] {
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(
            e.starts_with("line 2: invalid type") && e.contains("expected i64"),
            "{e}"
        );
    }
}

#[test]
fn runs_prune_parses_ages() {
    use harnessx_server::cli::{Args, Command};
    let parse = |a: &[&str]| Args::parse(a.iter().map(|s| s.to_string()));
    for (age, seconds) in [
        ("30d", 2_592_000),
        ("12h", 43_200),
        ("45m", 2_700),
        ("90s", 90),
    ] {
        assert_eq!(
            parse(&["runs", "prune", "--older-than", age])
                .unwrap()
                .command,
            Command::Prune {
                older_than: Duration::from_secs(seconds)
            }
        );
    }
    assert!(matches!(
        parse(&["runs"]).unwrap().command,
        Command::Runs { .. }
    ));
}

#[tokio::test]
async fn runs_prune_names_what_is_wrong_with_its_command_line() {
    let age = |given: &str| {
        format!(
            "harnessx: --older-than `{given}` is not an age; write a whole number and a unit, \
             such as 30d (days), 12h (hours), 45m (minutes) or 90s (seconds)"
        )
    };
    for (args, message) in [
        (vec!["runs", "prune", "--older-than", "30"], age("30")),
        (vec!["runs", "prune", "--older-than", "30x"], age("30x")),
        (vec!["runs", "prune", "--older-than", "d"], age("d")),
        (vec!["runs", "prune", "--older-than", "-3d"], age("-3d")),
        (vec!["runs", "prune", "--older-than", "1.5d"], age("1.5d")),
        (
            vec!["runs", "prune", "--older-than", "36501d"],
            "harnessx: --older-than `36501d` is more than 36500 days; give a shorter age".into(),
        ),
        (
            vec!["runs", "prune"],
            "harnessx: runs prune needs --older-than AGE, such as --older-than 30d: the runs that \
             finished more than that long ago are deleted"
                .into(),
        ),
        (
            vec!["runs", "--older-than", "3d"],
            "harnessx: --older-than goes with `runs prune`".into(),
        ),
        (
            vec!["runs", "purge"],
            "harnessx: unknown command `runs purge`; `runs` lists runs, `runs prune` deletes \
             finished ones"
                .into(),
        ),
    ] {
        let (code, _, err) = harnessx(&args).await;
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().next().unwrap(), message, "{args:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_prune_deletes_through_a_server_or_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("harnessx.toml");
    std::fs::write(&config, config_text(dir.path())).unwrap();
    let db = dir.path().join("harnessx.db");
    let db = db.to_str().unwrap();
    let (server, s) = serve_process(&config, db).await;
    let done = id(&s.start_run("replier", "hi").await);
    s.wait_for(done, &["completed"]).await;
    let waiting = id(&s.start_run("asker", "export").await);
    s.wait_for(waiting, &["waiting_input"]).await;

    let (code, out, err) = harnessx(&[
        "runs",
        "prune",
        "--older-than",
        "0s",
        "--server",
        &s.base,
        "--api-key",
        KEY,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("deleted 1 finished run (those that finished before 20"),
        "{out}"
    );
    assert_eq!(s.get(&format!("/v2/runs/{done}")).await.0, 404);
    assert_eq!(s.get(&format!("/v2/runs/{waiting}")).await.0, 200);
    drop(server);

    // Embedded on the file, once the server is gone.
    let mut out = String::new();
    for _ in 0..100 {
        let (code, stdout, err) =
            harnessx(&["runs", "prune", "--older-than", "12h", "--db", db]).await;
        if code == 0 {
            out = stdout;
            break;
        }
        assert!(err.contains("is open in another process"), "{err}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        out.starts_with("deleted 0 finished runs (those that finished before 20"),
        "{out}"
    );
}
