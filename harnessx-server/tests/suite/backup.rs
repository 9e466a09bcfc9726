//! `harnessx backup FILE`: a copy of the SQLite database taken while a real `harnessx serve`
//! holds a run waiting for a person; the server is killed, a new one starts on the copy, and the
//! run is answered and completes. What `backup` refuses (PostgreSQL, `:memory:`, a file that
//! exists, no FILE) is named.

use std::path::Path;
use std::process::Stdio;

use serde_json::json;

use crate::common::{ServeProcess, Server, config_text};

/// A `harnessx serve` process with `config` on `db`, and a client for it.
pub(crate) async fn serve_process(config: &Path, db: &str) -> (tokio::process::Child, Server) {
    let p = ServeProcess::spawn(
        config,
        db,
        &[("ASK_USER_TIMEOUT_SECONDS", "600")],
        Stdio::null(),
    )
    .await;
    (p.child, p.server)
}

/// `harnessx ARGS` run to its end: (exit code, stdout, stderr).
pub(crate) async fn harnessx(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(args)
        .env_remove("HARNESSX_API_KEY")
        .env_remove("HARNESSX_DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_serve_runs_restores_a_waiting_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("harnessx.toml");
    std::fs::write(&config, config_text(dir.path())).unwrap();
    let db = dir.path().join("harnessx.db");
    let db = db.to_str().unwrap();
    let (mut server, s) = serve_process(&config, db).await;
    let done = s.start_run("replier", "hi").await["id"].as_i64().unwrap();
    s.wait_for(done, &["completed"]).await;
    let waiting = s.start_run("asker", "export").await["id"].as_i64().unwrap();
    let run = s.wait_for(waiting, &["waiting_input"]).await;
    assert_eq!(run["needs_input"][0]["kind"], "question");

    // The copy, taken while the server runs (and holds the database's lock).
    let copy = dir.path().join("backup.db");
    let copy = copy.to_str().unwrap();
    let (code, out, err) = harnessx(&[
        "backup",
        copy,
        "--config",
        config.to_str().unwrap(),
        "--db",
        db,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    let size = std::fs::metadata(copy).unwrap().len();
    assert_eq!(
        out.trim(),
        format!(
            "backed up {db} to {copy}: 2 runs, {size} bytes, schema version {}",
            harnessx_runtime::store::SCHEMA_VERSION
        )
    );

    // The server dies; a new one starts on the copy and the waiting run goes on there.
    server.kill().await.unwrap();
    let (_restored, s) = serve_process(&config, copy).await;
    let (status, run) = s.get(&format!("/v2/runs/{waiting}")).await;
    assert_eq!(
        (status, run["state"].as_str()),
        (200, Some("waiting_input"))
    );
    let (status, body) = s
        .post(
            &format!("/v2/runs/{waiting}/answer"),
            json!({"answers": [{"selected": ["JSON"]}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let run = s.wait_for(waiting, &["completed"]).await;
    assert!(
        run["output"].as_str().unwrap().contains("JSON"),
        "{}",
        run["output"]
    );
    let (status, run) = s.get(&format!("/v2/runs/{done}")).await;
    assert_eq!((status, run["output"].as_str()), (200, Some("hello")));
}

#[tokio::test]
async fn what_backup_refuses_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    let copy = copy.to_str().unwrap();

    let (code, _, err) = harnessx(&[
        "backup",
        copy,
        "--db",
        "postgresql://hx@db.internal:5432/hx",
    ])
    .await;
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "harnessx: the database is PostgreSQL, which `harnessx backup` does not copy; back it up \
         with `pg_dump -Fc` and restore it with `pg_restore` (see \"Backup and restore\" in \
         harnessx/docs/production.md)"
    );

    let (code, _, err) = harnessx(&["backup", copy, "--db", ":memory:"]).await;
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "harnessx: the database is `:memory:`: it keeps nothing, so there is nothing to back up"
    );

    let missing = dir.path().join("missing.db");
    let missing = missing.to_str().unwrap();
    let (code, _, err) = harnessx(&["backup", copy, "--db", missing]).await;
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        format!(
            "harnessx: there is no database at `{missing}`; name the file `harnessx serve` uses \
             (--db, HARNESSX_DATABASE_URL or `[store] sqlite`)"
        )
    );

    let db = dir.path().join("harnessx.db");
    drop(harnessx_runtime::SqliteStore::open(&db).unwrap());
    std::fs::write(copy, "an older backup").unwrap();
    let (code, _, err) = harnessx(&["backup", copy, "--db", db.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        format!("harnessx: `{copy}` already exists; remove it or name a new file for the backup")
    );
    assert_eq!(std::fs::read_to_string(copy).unwrap(), "an older backup");

    let (code, _, err) = harnessx(&["backup"]).await;
    assert_eq!(code, 2);
    assert!(
        err.starts_with(
            "harnessx: backup needs a FILE to write the copy to, such as harnessx-backup.db"
        ),
        "{err}"
    );
}
