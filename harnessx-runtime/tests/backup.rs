//! `SqliteStore::backup`: a copy taken while the store is open and written to holds one
//! consistent snapshot and opens as a store of its own; what it refuses is named, and nothing is
//! left behind when it fails.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies; a failed unwrap fails the test"
)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::new_run;
use harnessx_runtime::{RunStore, SqliteStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_the_store_is_written_opens_as_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harnessx.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    for i in 0..50 {
        store
            .create_run(new_run(&format!("before {i} {}", "x".repeat(500))))
            .await
            .unwrap();
    }
    // Runs keep being created while the copy is taken: it does not start over at each commit.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                store.create_run(new_run("during")).await.unwrap();
                n += 1;
            }
            n
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let copy = dir.path().join("copy.db");
    let report = {
        let (path, copy) = (path.clone(), copy.clone());
        tokio::task::spawn_blocking(move || SqliteStore::backup(&path, &copy))
            .await
            .unwrap()
            .unwrap()
    };
    stop.store(true, Ordering::SeqCst);
    let during = writer.await.unwrap();
    assert!(during > 0);
    let total = store.count_runs().await.unwrap().queued;
    assert_eq!(total, 50 + during);
    assert!(
        (50..=total).contains(&report.runs),
        "{} runs copied of {total}",
        report.runs
    );
    assert_eq!(
        report.schema_version,
        harnessx_runtime::store::SCHEMA_VERSION
    );
    assert_eq!(report.bytes, std::fs::metadata(&copy).unwrap().len());
    // One file: no write-ahead log or partial copy beside it.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("copy"))
        .collect();
    names.sort();
    assert_eq!(names, ["copy.db"]);
    // The copy is a store: every run it holds, in order, the first ones whole.
    let restored = SqliteStore::open(&copy).unwrap();
    assert_eq!(restored.integrity_check().await.unwrap(), "ok");
    assert_eq!(restored.count_runs().await.unwrap().queued, report.runs);
    let first = restored
        .run(harnessx_runtime::RunId(1))
        .await
        .unwrap()
        .unwrap();
    assert!(first.input.starts_with("before 0 "));
}

#[test]
fn what_a_backup_refuses_is_named_and_nothing_is_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let copy = dir.path().join("copy.db");
    let e = SqliteStore::backup(&missing, &copy).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "there is no database at `{}`; name the file `harnessx serve` uses (--db, \
             HARNESSX_DATABASE_URL or `[store] sqlite`)",
            missing.display()
        )
    );
    assert!(!missing.exists(), "the source was not created");

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT)")
        .unwrap();
    let e = SqliteStore::backup(&other, &copy).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "`{}` is not a harnessx database (it has no schema_version table)",
            other.display()
        )
    );

    let db = dir.path().join("harnessx.db");
    drop(SqliteStore::open(&db).unwrap());
    std::fs::write(&copy, "keep me").unwrap();
    let e = SqliteStore::backup(&db, &copy).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "`{}` already exists; remove it or name a new file for the backup",
            copy.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "keep me");

    let nowhere = dir.path().join("no-such-folder").join("copy.db");
    let e = SqliteStore::backup(&db, &nowhere).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "backing up `{}` to `{}` failed while creating the copy: ",
            db.display(),
            nowhere.display()
        )),
        "{text}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
