//! What a runtime reports for operations, on both stores: its workers, the runs they drive,
//! every lease in the store and the queue depth.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

mod common;

durable_tests!(
    status_reports_workers_leases_and_queue_depth,
    runs_are_listed_newest_first_in_pages
);

use std::sync::Arc;

use common::stores::Stores;
use common::{Turn, scripted, stuck};
use harnessx::ReplayPolicy;
use harnessx_runtime::store::{NewRun, RunFilter};
use harnessx_runtime::{RunId, RunState, Runtime, StartRun};
use serde_json::json;

async fn status_reports_workers_leases_and_queue_depth(stores: Stores) {
    let started = Arc::new(tokio::sync::Notify::new());
    let waiting = stuck("wait", ReplayPolicy::Safe, Arc::clone(&started));
    let (model, _) = scripted(vec![Turn::Call("wait", json!({})), Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(waiting.clone()))
        .workers(1)
        .build()
        .unwrap();
    let idle = runtime.status().await.unwrap();
    assert_eq!(
        (idle.workers, idle.driving.len(), idle.store.queued),
        (1, 0, 0)
    );
    let first = runtime.start_run(StartRun::new("a", "one")).await.unwrap();
    started.notified().await;
    let second = runtime.start_run(StartRun::new("a", "two")).await.unwrap();
    let status = runtime.status().await.unwrap();
    assert_eq!(status.driving, vec![first.id]);
    assert_eq!((status.store.queued, status.store.running), (1, 1));
    assert_eq!(status.store.leases.len(), 1);
    let lease = &status.store.leases[0];
    assert_eq!((lease.run, &lease.owner), (first.id, &status.owner));
    assert!(lease.until_ms > 0);
    assert_eq!((status.store_errors, status.last_store_error), (0, None));
    let _ = second;

    // Another runtime built at once in the same process (same millisecond, most likely) has a
    // name of its own: stopping it hands back none of the first one's runs.
    // (It may claim the queued run and start it; stopping hands that one back.)
    let (model, _) = scripted(vec![Turn::Call("wait", json!({})), Turn::Quote]);
    let tool = stuck(
        "wait",
        ReplayPolicy::Safe,
        Arc::new(tokio::sync::Notify::new()),
    );
    let other = Runtime::builder()
        .store_arc(Arc::clone(runtime.store()))
        .agent("a", move |b| b.model(model.clone()).tool(tool.clone()))
        .build()
        .unwrap();
    assert_ne!(other.status().await.unwrap().owner, status.owner);
    other.shutdown().await;
    let still = runtime.status().await.unwrap();
    assert_eq!(still.driving, vec![first.id]);
    assert_eq!((still.store.running, still.store.queued), (1, 1));
}

async fn runs_are_listed_newest_first_in_pages(stores: Stores) {
    let store = stores.fresh().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let (run, _) = store
            .create_run(NewRun {
                agent: "a".into(),
                input: format!("run {i}"),
                conversation: None,
                idempotency_key: None,
                agent_version: None,
            })
            .await
            .unwrap();
        ids.push(run.id);
    }
    let first: Vec<RunId> = store
        .list_runs(&RunFilter::new(), 2)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(first, [ids[4], ids[3]]);
    let next: Vec<RunId> = store
        .list_runs(&RunFilter::new().before(ids[3]), 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(next, [ids[2], ids[1], ids[0]]);
    assert!(
        store
            .list_runs(&RunFilter::new().before(ids[0]), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.list_runs(&RunFilter::new(), 10).await.unwrap()[0].input,
        "run 4"
    );

    // Filters: by agent, conversation and state, with the cursor.
    for i in 0..3 {
        store
            .create_run(NewRun {
                agent: "b".into(),
                input: format!("b {i}"),
                conversation: Some("cb".into()),
                idempotency_key: None,
                agent_version: None,
            })
            .await
            .unwrap();
    }
    let inputs = |runs: Vec<harnessx_runtime::store::RunRecord>| {
        runs.into_iter().map(|r| r.input).collect::<Vec<_>>()
    };
    let b = store
        .list_runs(&RunFilter::new().agent("b"), 2)
        .await
        .unwrap();
    let last = b.last().unwrap().id;
    assert_eq!(inputs(b), ["b 2", "b 1"]);
    assert_eq!(
        inputs(
            store
                .list_runs(&RunFilter::new().agent("b").before(last), 2)
                .await
                .unwrap()
        ),
        ["b 0"]
    );
    assert_eq!(
        store
            .list_runs(&RunFilter::new().conversation("cb"), 10)
            .await
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        store
            .list_runs(&RunFilter::new().state(RunState::Queued).agent("a"), 10)
            .await
            .unwrap()
            .len(),
        5
    );
    assert!(
        store
            .list_runs(&RunFilter::new().state(RunState::Completed), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Runtimes built one right after another in one process (within a millisecond) each get a
/// worker name of their own: a name is what a lease and a shutdown's hand-back go by.
#[tokio::test]
async fn runtimes_built_at_once_have_names_of_their_own() {
    let store: Arc<dyn harnessx_runtime::RunStore> =
        Arc::new(harnessx_runtime::SqliteStore::in_memory().unwrap());
    let runtimes: Vec<Runtime> = (0..20)
        .map(|_| {
            Runtime::builder()
                .store_arc(Arc::clone(&store))
                .build()
                .unwrap()
        })
        .collect();
    let mut owners = std::collections::HashSet::new();
    for runtime in &runtimes {
        let owner = runtime.status().await.unwrap().owner;
        assert!(owners.insert(owner.clone()), "{owner} was given twice");
    }
}
