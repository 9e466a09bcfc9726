//! The durable store survives a restart: reopened in this process, and written by a child
//! process and read back here.

#![allow(clippy::unwrap_used)]

use std::process::Command;

use harnessx_builtin::memory::{ListQuery, MemoryStore, SearchQuery, SqliteMemoryStore};

/// Set in the child process to the database it must write.
const CHILD_DB: &str = "HARNESSX_TEST_MEMORY_CHILD_DB";

#[tokio::test]
async fn memories_survive_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memories.db");
    let (first, second) = {
        let store = SqliteMemoryStore::open(&path).unwrap();
        let first = store
            .save("Deploys happen on Tuesdays".into(), vec!["ops".into()])
            .await
            .unwrap();
        let second = store.save("Temporary note".into(), vec![]).await.unwrap();
        assert!(store.delete(second.id).await.unwrap());
        (first, second)
    };
    let store = SqliteMemoryStore::open(&path).unwrap();
    let page = store.list(ListQuery::default()).await.unwrap();
    assert_eq!(page.memories, std::slice::from_ref(&first));
    let hits = store
        .search(SearchQuery {
            text: "tuesdays".into(),
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(hits[0].memory, first);
    // The deleted memory is gone from the full-text index too, and ids are never reused.
    let gone = store
        .search(SearchQuery {
            text: "temporary".into(),
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    assert!(gone.is_empty());
    let third = store.save("Another".into(), vec![]).await.unwrap();
    assert!(third.id > second.id);
}

/// In the parent: runs this same test in a child process that writes a memory, then reads it
/// here. In the child (the variable set): writes the memory and exits.
#[tokio::test]
async fn memories_written_by_another_process_are_read_back() {
    if let Ok(db) = std::env::var(CHILD_DB) {
        let store = SqliteMemoryStore::open(&db).unwrap();
        store
            .save(
                format!("written by process {}", std::process::id()),
                vec!["child".into()],
            )
            .await
            .unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::memory_sqlite::memories_written_by_another_process_are_read_back",
            "--test-threads=1",
        ])
        .env(CHILD_DB, &path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "child failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("1 passed"),
        "the child ran no test"
    );
    let store = SqliteMemoryStore::open(&path).unwrap();
    let page = store
        .list(ListQuery {
            tag: Some("child".into()),
            ..ListQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    let content = &page.memories[0].content;
    assert!(content.starts_with("written by process "), "{content}");
    assert_ne!(
        content,
        &format!("written by process {}", std::process::id())
    );
}
