//! The MemoryStore contract, run against both stores: cleaning, limits, search ranking and
//! escaping, listing, deleting.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use harnessx_builtin::memory::{
    InMemoryStore, ListQuery, MemoryError, MemoryLimits, MemoryStore, SearchQuery,
    SqliteMemoryStore,
};

/// A store under test, with its name for assertion messages.
type Named = (&'static str, Arc<dyn MemoryStore>);

/// Both stores with the same limits; the temp dir must outlive the SQLite store.
fn stores(limits: MemoryLimits) -> (tempfile::TempDir, Vec<Named>) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite =
        SqliteMemoryStore::open_with_limits(dir.path().join("m.db"), limits.clone()).unwrap();
    let stores: Vec<Named> = vec![
        ("in-memory", Arc::new(InMemoryStore::with_limits(limits))),
        ("sqlite", Arc::new(sqlite)),
    ];
    (dir, stores)
}

fn search(text: &str) -> SearchQuery {
    SearchQuery {
        text: text.to_owned(),
        ..SearchQuery::default()
    }
}

#[tokio::test]
async fn saving_cleans_content_and_tags() {
    let (_dir, stores) = stores(MemoryLimits::default());
    for (name, store) in stores {
        let m = store
            .save(
                "  The build\u{0} uses\r\nsccache\u{1b} ".into(),
                vec![" CI ".into(), "ci".into(), "\u{7}".into()],
            )
            .await
            .unwrap();
        assert_eq!(m.content, "The build uses\nsccache", "{name}");
        assert_eq!(m.tags, ["CI"], "{name}");
        assert!(m.id > 0);
        let page = store.list(ListQuery::default()).await.unwrap();
        assert_eq!(page.memories, [m], "{name}");
    }
}

#[tokio::test]
async fn search_ranks_by_relevance_and_filters_by_tag() {
    let (_dir, stores) = stores(MemoryLimits::default());
    for (name, store) in stores {
        let a = store
            .save(
                "The staging database is Postgres 16".into(),
                vec!["infra".into()],
            )
            .await
            .unwrap();
        let b = store
            .save("User likes short answers".into(), vec!["user".into()])
            .await
            .unwrap();
        let c = store
            .save(
                "Postgres backups run nightly; the Postgres replica lags a minute".into(),
                vec!["infra".into()],
            )
            .await
            .unwrap();
        let hits = store.search(search("postgres replica")).await.unwrap();
        let ids: Vec<i64> = hits.iter().map(|h| h.memory.id).collect();
        assert_eq!(ids, [c.id, a.id], "{name}");
        assert!(hits[0].score > hits[1].score, "{name}");

        let none = store.search(search("kubernetes")).await.unwrap();
        assert!(none.is_empty(), "{name}");

        let user = store
            .search(SearchQuery {
                text: "answers postgres".into(),
                tag: Some("USER".into()),
                limit: 10,
            })
            .await
            .unwrap();
        assert_eq!(
            user.iter().map(|h| h.memory.id).collect::<Vec<_>>(),
            [b.id],
            "{name}"
        );

        // Diacritics and case fold; punctuation around words does not matter.
        store
            .save("Meeting at the Café Münster".into(), vec![])
            .await
            .unwrap();
        let cafe = store.search(search("CAFÉ, münster!")).await.unwrap();
        assert_eq!(cafe.len(), 1, "{name}");
    }
}

#[tokio::test]
async fn search_syntax_in_user_text_cannot_break_the_query() {
    let (_dir, stores) = stores(MemoryLimits::default());
    for (name, store) in stores {
        store.save("alpha beta gamma".into(), vec![]).await.unwrap();
        for hostile in [
            "\"alpha",
            "alpha\" OR \"",
            "alpha AND NOT",
            "NEAR(alpha beta, 2)",
            "content:alpha",
            "alpha*",
            "(alpha",
            "^alpha",
            "alpha -beta",
            "'; DROP TABLE memories; --",
        ] {
            let result = store.search(search(hostile)).await;
            assert!(result.is_ok(), "{name}: {hostile}: {result:?}");
        }
        assert_eq!(
            store.search(search("alpha\" OR \"")).await.unwrap().len(),
            1,
            "{name}"
        );
        // The table is still there.
        assert_eq!(
            store.list(ListQuery::default()).await.unwrap().total,
            1,
            "{name}"
        );
        let err = store.search(search("\"*()")).await.unwrap_err();
        assert!(
            matches!(err, MemoryError::Empty { field: "query", .. }),
            "{name}"
        );
    }
}

#[tokio::test]
async fn limits_refuse_with_one_line_errors_naming_the_limit() {
    let limits = MemoryLimits {
        max_content_bytes: 20,
        max_memories: 2,
        max_results: 3,
        ..MemoryLimits::default()
    };
    let (_dir, stores) = stores(limits);
    for (name, store) in stores {
        let err = store.save("x".repeat(21), vec![]).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "`content` is 21 bytes, more than the limit `max_content_bytes` (20 bytes); save a shorter summary, or split it into several memories",
            "{name}"
        );
        store.save("one".into(), vec![]).await.unwrap();
        let two = store.save("two".into(), vec![]).await.unwrap();
        let full = store.save("three".into(), vec![]).await.unwrap_err();
        assert_eq!(
            full.to_string(),
            "the memory store is full: it holds 2 memories, the limit `max_memories`; delete memories that are no longer useful with delete_memory, then save again",
            "{name}"
        );
        assert!(store.delete(two.id).await.unwrap());
        assert!(!store.delete(two.id).await.unwrap(), "{name}");
        store.save("three".into(), vec![]).await.unwrap();
        // Nothing was stored by the refused saves.
        let page = store
            .list(ListQuery {
                limit: 100,
                ..ListQuery::default()
            })
            .await
            .unwrap();
        let contents: Vec<&str> = page.memories.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["three", "one"], "{name}");
    }
}

#[tokio::test]
async fn listing_pages_newest_first_and_results_are_bounded() {
    let limits = MemoryLimits {
        max_results: 3,
        ..MemoryLimits::default()
    };
    let (_dir, stores) = stores(limits);
    for (name, store) in stores {
        for i in 0..5 {
            let tags = if i % 2 == 0 {
                vec!["even".to_owned()]
            } else {
                vec![]
            };
            store.save(format!("note {i}"), tags).await.unwrap();
        }
        let page = store
            .list(ListQuery {
                limit: 100,
                offset: 0,
                tag: None,
            })
            .await
            .unwrap();
        assert_eq!(page.total, 5, "{name}");
        let contents: Vec<&str> = page.memories.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            contents,
            ["note 4", "note 3", "note 2"],
            "{name}: clamped to max_results"
        );
        let next = store
            .list(ListQuery {
                limit: 3,
                offset: 3,
                tag: None,
            })
            .await
            .unwrap();
        let contents: Vec<&str> = next.memories.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["note 1", "note 0"], "{name}");
        let even = store
            .list(ListQuery {
                limit: 10,
                offset: 0,
                tag: Some("even".into()),
            })
            .await
            .unwrap();
        assert_eq!(even.total, 3, "{name}");
        let hits = store
            .search(SearchQuery {
                text: "note".into(),
                tag: None,
                limit: 50,
            })
            .await
            .unwrap();
        assert_eq!(hits.len(), 3, "{name}: clamped to max_results");
    }
}
