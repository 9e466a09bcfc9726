//! Knowledge bases' documents on both stores: added, listed, counted, searched with the store's
//! own full-text engine (ranked, with snippets, within the bases asked for), deleted one by one
//! and a whole base at once; a document over the size limit is refused naming the limit, and
//! any text is a valid query.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use harnessx_runtime::SqliteStore;
use harnessx_runtime::store::{
    DocumentError, DocumentFormat, KnowledgeStore, MAX_DOCUMENT_BYTES, NewDocument,
};

fn doc(base: &str, title: &str, body: &str) -> NewDocument {
    NewDocument {
        base: base.into(),
        title: title.into(),
        format: DocumentFormat::Markdown,
        body: body.into(),
    }
}

async fn exercise(store: Arc<dyn KnowledgeStore>) {
    let vpn = store
        .add_document(doc(
            "handbook",
            "VPN access",
            "# VPN\n\nConnect to the VPN with the WireGuard profile from the portal. \
             Ask the service desk when the profile expires.",
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(vpn.base, "handbook");
    assert_eq!(vpn.format, DocumentFormat::Markdown);
    assert!(vpn.created_ms > 0);
    let leave = store
        .add_document(NewDocument {
            format: DocumentFormat::Text,
            ..doc(
                "handbook",
                "Leave",
                "Request leave in the HR tool two weeks ahead.",
            )
        })
        .await
        .unwrap()
        .unwrap();
    assert!(leave.id > vpn.id);
    assert_eq!(leave.bytes, 45);
    let other = store
        .add_document(doc(
            "wiki",
            "Networking",
            "The office network needs the VPN from home; the WireGuard profile is on the portal.",
        ))
        .await
        .unwrap()
        .unwrap();

    let listed = store.documents("handbook").await.unwrap();
    assert_eq!(
        listed.iter().map(|d| d.title.as_str()).collect::<Vec<_>>(),
        ["VPN access", "Leave"]
    );
    assert_eq!(listed[1].format, DocumentFormat::Text);
    assert!(store.documents("nothing").await.unwrap().is_empty());
    let counts = store.document_counts().await.unwrap();
    assert_eq!(
        counts.into_iter().collect::<Vec<_>>(),
        [("handbook".to_owned(), 2), ("wiki".to_owned(), 1)]
    );

    // Ranked: the document about the VPN comes first; stemming finds "profiles"; only the
    // bases asked for are searched; the snippet is from the body.
    let hits = store
        .search_documents(&["handbook".into()], "How do I get on the VPN profiles?", 5)
        .await
        .unwrap();
    assert_eq!(hits[0].document, vpn.id, "{hits:?}");
    assert_eq!(hits[0].title, "VPN access");
    assert!(hits[0].snippet.contains("WireGuard"), "{hits:?}");
    assert!(hits[0].score > 0.0, "{hits:?}");
    assert!(hits.iter().all(|h| h.base == "handbook"), "{hits:?}");
    let both = store
        .search_documents(&["handbook".into(), "wiki".into()], "wireguard", 5)
        .await
        .unwrap();
    let mut found: Vec<u64> = both.iter().map(|h| h.document).collect();
    found.sort_unstable();
    assert_eq!(found, [vpn.id, other.id], "{both:?}");
    assert!(
        both.windows(2).all(|w| w[0].score >= w[1].score),
        "{both:?}"
    );
    let one = store
        .search_documents(&["handbook".into(), "wiki".into()], "wireguard", 1)
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert!(
        store
            .search_documents(&["handbook".into()], "parquet", 5)
            .await
            .unwrap()
            .is_empty()
    );
    // Any text is a query: the engines' own syntax never reaches them.
    for odd in [
        "\"",
        "*",
        "AND OR NOT",
        "vpn\" OR \"x",
        "(",
        "!!!",
        "",
        "NEAR(a b)",
        "a:b",
    ] {
        store
            .search_documents(&["handbook".into()], odd, 5)
            .await
            .unwrap_or_else(|e| panic!("{odd:?}: {e}"));
    }
    assert!(
        store
            .search_documents(&[], "vpn", 5)
            .await
            .unwrap()
            .is_empty()
    );

    // Too large: refused, naming the limit; nothing stored.
    let refused = store
        .add_document(doc("handbook", "Big", &"a".repeat(MAX_DOCUMENT_BYTES + 1)))
        .await
        .unwrap();
    assert_eq!(
        refused,
        Err(DocumentError::TooLarge {
            bytes: MAX_DOCUMENT_BYTES + 1,
            limit: MAX_DOCUMENT_BYTES
        })
    );
    assert_eq!(store.documents("handbook").await.unwrap().len(), 2);
    // At the limit: taken.
    store
        .add_document(doc("big", "Big", &"word ".repeat(MAX_DOCUMENT_BYTES / 5)))
        .await
        .unwrap()
        .unwrap();

    // Deleting one: only from its own base, and it is no longer found.
    assert!(!store.delete_document("wiki", vpn.id).await.unwrap());
    assert!(store.delete_document("handbook", vpn.id).await.unwrap());
    assert!(!store.delete_document("handbook", vpn.id).await.unwrap());
    let hits = store
        .search_documents(&["handbook".into(), "wiki".into()], "wireguard", 5)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.document).collect::<Vec<_>>(),
        [other.id]
    );
    // Deleting a whole base.
    assert_eq!(store.delete_documents("handbook").await.unwrap(), 1);
    assert_eq!(store.delete_documents("handbook").await.unwrap(), 0);
    assert!(
        store
            .search_documents(&["handbook".into()], "leave", 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.documents("wiki").await.unwrap().len(), 1);
    // Ids are never reused.
    let again = store
        .add_document(doc("handbook", "VPN access", "again"))
        .await
        .unwrap()
        .unwrap();
    assert!(again.id > leave.id);
}

#[tokio::test]
async fn knowledge_on_sqlite() {
    exercise(Arc::new(SqliteStore::in_memory().unwrap())).await;
}

#[tokio::test]
async fn a_sqlite_file_keeps_its_documents_and_index_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        store
            .add_document(doc("handbook", "VPN access", "Use the WireGuard profile."))
            .await
            .unwrap()
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let hits = store
        .search_documents(&["handbook".into()], "wireguard", 5)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_on_postgres() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let store = harnessx_runtime::PostgresStore::connect(&pg.url())
        .await
        .unwrap();
    exercise(Arc::new(store)).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_added_through_one_postgres_store_is_found_through_another() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let a = harnessx_runtime::PostgresStore::connect(&pg.url())
        .await
        .unwrap();
    let b = harnessx_runtime::PostgresStore::connect(&pg.url())
        .await
        .unwrap();
    let added = a
        .add_document(doc("shared", "Deploys", "Deploys freeze on Fridays."))
        .await
        .unwrap()
        .unwrap();
    let hits = b
        .search_documents(&["shared".into()], "when do deploys freeze", 5)
        .await
        .unwrap();
    assert_eq!(hits[0].document, added.id);
    assert!(hits[0].snippet.contains("Fridays"), "{hits:?}");
}
