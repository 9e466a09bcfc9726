//! What a runtime reports for operations, on both stores: its workers, the runs they drive,
//! every lease in the store and the queue depth.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

mod common;

durable_tests!(status_reports_workers_leases_and_queue_depth);

use std::sync::Arc;

use common::stores::Stores;
use common::{Turn, scripted};
use harnessx::{ToolDefinition, ToolOutput, handler_fn};
use harnessx_runtime::{Runtime, StartRun};
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
