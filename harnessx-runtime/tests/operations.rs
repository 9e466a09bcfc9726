//! What a runtime reports for operations, on both stores: its workers, the runs they drive,
//! every lease in the store and the queue depth.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

mod common;

durable_tests!(
    status_reports_workers_leases_and_queue_depth,
    runs_are_listed_newest_first_in_pages,
    runs_are_counted_by_state_and_the_schema_is_current,
    an_observer_hears_model_calls_tool_calls_and_journal_writes
);

use std::sync::Arc;

use common::stores::Stores;
use common::{Turn, counting, scripted, stuck};
use harnessx::{PermissionLevel, ReplayPolicy, ToolResult};
use harnessx_runtime::store::{NewRun, RunCounts, RunFilter, SCHEMA_VERSION, SchemaVersion};
use harnessx_runtime::{Observer, RunId, RunState, Runtime, StartRun, StoreError};
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

async fn runs_are_counted_by_state_and_the_schema_is_current(stores: Stores) {
    let store = stores.fresh().await;
    assert_eq!(store.count_runs().await.unwrap(), RunCounts::default());
    assert_eq!(
        store.schema().await.unwrap(),
        SchemaVersion {
            found: SCHEMA_VERSION,
            known: SCHEMA_VERSION
        }
    );
    assert!(store.schema().await.unwrap().is_current());
    let (model, _) = scripted(vec![Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(Arc::clone(&store))
        .agent("a", move |b| b.model(model.clone()))
        .workers(1)
        .build()
        .unwrap();
    let done = runtime.start_run(StartRun::new("a", "one")).await.unwrap();
    runtime.settled(done.id).await.unwrap();
    runtime.shutdown().await;
    let queued = runtime.start_run(StartRun::new("a", "two")).await.unwrap();
    let cancelled = runtime
        .start_run(StartRun::new("a", "three"))
        .await
        .unwrap();
    runtime.cancel(cancelled.id).await.unwrap();
    let counts = store.count_runs().await.unwrap();
    assert_eq!(
        counts,
        RunCounts {
            queued: 1,
            completed: 1,
            cancelled: 1,
            ..RunCounts::default()
        }
    );
    assert_eq!(counts.get(RunState::Queued), 1);
    assert_eq!(counts.get(RunState::Failed), 0);
    let _ = queued;
}

/// What an [`Observer`] heard.
#[derive(Default)]
struct Heard {
    model_calls: std::sync::Mutex<Vec<std::time::Duration>>,
    tool_calls: std::sync::Mutex<Vec<(String, bool, bool)>>,
    writes: std::sync::atomic::AtomicUsize,
    store_errors: std::sync::atomic::AtomicUsize,
}

impl Observer for Heard {
    fn model_call(&self, elapsed: std::time::Duration) {
        self.model_calls.lock().unwrap().push(elapsed);
    }
    fn tool_call(&self, result: &ToolResult, elapsed: Option<std::time::Duration>) {
        self.tool_calls.lock().unwrap().push((
            result.name.clone(),
            result.is_error,
            elapsed.is_some(),
        ));
    }
    fn step_written(&self, _elapsed: std::time::Duration) {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn store_error(&self, _error: &StoreError) {
        self.store_errors
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

async fn an_observer_hears_model_calls_tool_calls_and_journal_writes(stores: Stores) {
    let heard = Arc::new(Heard::default());
    let (tool, _) = counting("count", ReplayPolicy::Safe, PermissionLevel::Allow);
    let (model, _) = scripted(vec![
        Turn::Call("count", json!({})),
        Turn::Call("nowhere", json!({})),
        Turn::Quote,
    ]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(tool.clone()))
        .observer_arc(heard.clone())
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "go")).await.unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(done.state, RunState::Completed);
    // Three model turns; two calls (one to a tool that does not exist), each timed from its
    // started record; every turn and every call's started and finished records written.
    assert_eq!(heard.model_calls.lock().unwrap().len(), 3);
    assert_eq!(
        *heard.tool_calls.lock().unwrap(),
        [
            ("count".to_owned(), false, true),
            ("nowhere".to_owned(), true, true)
        ]
    );
    assert_eq!(
        heard.writes.load(std::sync::atomic::Ordering::SeqCst),
        3 + 2 * 2
    );
    assert_eq!(
        heard.store_errors.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}
