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
use common::{Turn, scripted};
use harnessx::{ToolDefinition, ToolOutput, handler_fn};
use harnessx_runtime::store::NewRun;
use harnessx_runtime::{RunId, Runtime, StartRun};
use serde_json::json;

async fn status_reports_workers_leases_and_queue_depth(stores: Stores) {
    let started = Arc::new(tokio::sync::Notify::new());
    let signal = Arc::clone(&started);
    let stuck = ToolDefinition::new(
        "wait",
        "Never finishes.",
        json!({"type": "object"}),
        handler_fn(move |_, _| {
            let signal = Arc::clone(&signal);
            async move {
                signal.notify_one();
                std::future::pending::<()>().await;
                Ok(ToolOutput::text("unreachable"))
            }
        }),
    );
    let (model, _) = scripted(vec![Turn::Call("wait", json!({})), Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(stuck.clone()))
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
            })
            .await
            .unwrap();
        ids.push(run.id);
    }
    let first: Vec<RunId> = store
        .list_runs(None, 2)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(first, [ids[4], ids[3]]);
    let next: Vec<RunId> = store
        .list_runs(Some(ids[3]), 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(next, [ids[2], ids[1], ids[0]]);
    assert!(store.list_runs(Some(ids[0]), 10).await.unwrap().is_empty());
    assert_eq!(store.list_runs(None, 10).await.unwrap()[0].input, "run 4");
}
