//! Stored resources on both stores: version chains, expectations that protect a change from a
//! concurrent one, deletes that keep old versions readable, and seeding from a file.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use harnessx_runtime::SqliteStore;
use harnessx_runtime::store::{Conflict, Expect, ResourceStore, Seeded};
use serde_json::json;

async fn exercise(store: Arc<dyn ResourceStore>) {
    let first = store
        .put_resource("agent", "a", json!({"v": 1}), Expect::Absent)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.version, 1);
    assert_eq!(
        store
            .put_resource("agent", "a", json!({}), Expect::Absent)
            .await
            .unwrap(),
        Err(Conflict { current: Some(1) })
    );
    let second = store
        .put_resource("agent", "a", json!({"v": 2}), Expect::Version(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.version, 2);
    // A change made from version 1 after version 2 exists is refused.
    assert_eq!(
        store
            .put_resource("agent", "a", json!({"v": 3}), Expect::Version(1))
            .await
            .unwrap(),
        Err(Conflict { current: Some(2) })
    );
    let live = store.resource("agent", "a", None).await.unwrap().unwrap();
    assert_eq!((live.version, live.body), (2, json!({"v": 2})));
    let old = store
        .resource("agent", "a", Some(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(old.body, json!({"v": 1}));
    // Kinds are apart.
    assert!(
        store
            .resource("connector", "a", None)
            .await
            .unwrap()
            .is_none()
    );

    assert!(store.delete_resource("agent", "a").await.unwrap());
    assert!(!store.delete_resource("agent", "a").await.unwrap());
    assert!(store.resource("agent", "a", None).await.unwrap().is_none());
    assert_eq!(
        store
            .resource("agent", "a", Some(2))
            .await
            .unwrap()
            .unwrap()
            .version,
        2,
        "a deleted resource's versions stay for its runs"
    );
    assert_eq!(
        store
            .put_resource("agent", "a", json!({}), Expect::Version(2))
            .await
            .unwrap(),
        Err(Conflict { current: None })
    );
    let again = store
        .put_resource("agent", "a", json!({"v": 3}), Expect::Absent)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.version, 3, "versions are never reused");

    // Seeding: created, unchanged, then changed over an API change.
    assert!(matches!(
        store.seed_resource("agent", "s", json!({"file": 1})).await.unwrap(),
        Seeded::Created(r) if r.version == 1
    ));
    store
        .put_resource("agent", "s", json!({"api": 1}), Expect::Version(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store
            .seed_resource("agent", "s", json!({"file": 1}))
            .await
            .unwrap(),
        Seeded::Unchanged
    );
    assert_eq!(
        store
            .resource("agent", "s", None)
            .await
            .unwrap()
            .unwrap()
            .body,
        json!({"api": 1})
    );
    assert!(matches!(
        store.seed_resource("agent", "s", json!({"file": 2})).await.unwrap(),
        Seeded::Changed(r) if r.version == 3 && r.body == json!({"file": 2})
    ));
    let names: Vec<String> = store
        .resources("agent")
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["a", "s"]);
}

#[tokio::test]
async fn resources_on_sqlite() {
    exercise(Arc::new(SqliteStore::in_memory().unwrap())).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_on_postgres() {
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
async fn processes_seeding_one_file_at_once_make_one_version() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let mut stores = Vec::new();
    for _ in 0..4 {
        stores.push(Arc::new(
            harnessx_runtime::PostgresStore::connect(&pg.url())
                .await
                .unwrap(),
        ));
    }
    let seeds = futures::future::join_all(
        stores
            .iter()
            .map(|s| s.seed_resource("agent", "x", json!({"file": true}))),
    )
    .await;
    let created = seeds
        .iter()
        .filter(|s| matches!(s, Ok(Seeded::Created(_))))
        .count();
    assert_eq!(created, 1, "{seeds:?}");
    assert!(
        seeds
            .iter()
            .all(|s| matches!(s, Ok(Seeded::Created(_) | Seeded::Unchanged)))
    );
    let live = stores[0]
        .resource("agent", "x", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(live.version, 1);
}
