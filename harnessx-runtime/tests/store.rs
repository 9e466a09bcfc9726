//! The store on its own: schema versions, configuration errors, and a store that fails a write
//! failing the run clearly.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{Turn, new_run, scripted};
use harnessx::BoxFuture;
use harnessx_runtime::store::{
    Answered, Asked, Cancelled, Claim, ConversationFilter, ConversationRecord, Lease, NewRun,
    Reply, RunCounts, RunEnd, RunFilter, RunRecord, SchemaVersion, Step, StoreStats,
};
use harnessx_runtime::{
    ConversationSummary, InputError, RunEvent, RunId, RunState, RunStore, Runtime, RuntimeError,
    SqliteStore, StartRun, StoreError, StoredEvent,
};

#[tokio::test]
async fn a_database_from_a_newer_release_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (99);",
        )
        .unwrap();
    }
    let e = SqliteStore::open(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the run store's schema is version 99, newer than this release knows ({}); upgrade \
             harnessx-runtime",
            harnessx_runtime::store::SCHEMA_VERSION
        )
    );
}

#[tokio::test]
async fn a_damaged_file_is_refused_on_open_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        for i in 0..200 {
            store
                .create_run(NewRun {
                    agent: "a".into(),
                    input: format!("run number {i} {}", "x".repeat(200)),
                    conversation: None,
                    idempotency_key: None,
                    agent_version: None,
                })
                .await
                .unwrap();
        }
    }
    // Everything into the main file, then damage pages past the first (the header stays, so
    // SQLite opens the file).
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    assert!(bytes.len() > 6 * page, "{} bytes", bytes.len());
    for b in &mut bytes[3 * page..5 * page] {
        *b = 0xA5;
    }
    std::fs::write(&path, bytes).unwrap();
    let err = loop {
        match SqliteStore::open(&path) {
            Err(StoreError::Locked { .. }) => std::thread::yield_now(),
            Ok(_) => panic!("a damaged store opened"),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "the run store holds an unreadable database `{}`: ",
            path.display()
        )) && text.ends_with("; restore it from a backup"),
        "{text}"
    );
}

#[cfg(unix)]
#[test]
fn a_second_name_for_the_same_file_finds_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let link = dir.path().join("link.db");
    let _first = SqliteStore::open(&path).unwrap();
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let err = SqliteStore::open(&link).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    let dotted = dir.path().join(".").join("runs.db");
    assert!(matches!(
        SqliteStore::open(&dotted),
        Err(StoreError::Locked { .. })
    ));
}

#[tokio::test]
async fn reopening_keeps_the_schema_and_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let id = {
        let store = SqliteStore::open(&path).unwrap();
        let (run, created) = store
            .create_run(NewRun {
                agent: "a".into(),
                input: "hi".into(),
                conversation: Some("c".into()),
                idempotency_key: Some("k".into()),
                agent_version: None,
            })
            .await
            .unwrap();
        assert!(created);
        run.id
    };
    let store = loop {
        match SqliteStore::open(&path) {
            Ok(s) => break s,
            Err(StoreError::Locked { .. }) => tokio::task::yield_now().await,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(
        store.schema_version().await.unwrap(),
        harnessx_runtime::store::SCHEMA_VERSION
    );
    let run = store.run(id).await.unwrap().unwrap();
    assert_eq!(
        (run.state, run.conversation.as_str()),
        (RunState::Queued, "c")
    );
    let (again, created) = store
        .create_run(NewRun {
            agent: "a".into(),
            input: "other".into(),
            conversation: None,
            idempotency_key: Some("k".into()),
            agent_version: None,
        })
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(again.id, id);
}

#[tokio::test]
async fn builder_mistakes_are_named() {
    let e = Runtime::builder().build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid runtime configuration: no store: call `.store(SqliteStore::open(path)?)` before \
         `build()`"
    );
    let e = Runtime::builder()
        .store(SqliteStore::in_memory().unwrap())
        .workers(0)
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid runtime configuration: `workers` is 0, so no run would ever make progress; give \
         at least 1"
    );
    let e = Runtime::builder()
        .store(SqliteStore::in_memory().unwrap())
        .question_window(std::time::Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid runtime configuration: `question_window` is 0; give a positive duration"
    );
    let e = Runtime::builder()
        .store(SqliteStore::in_memory().unwrap())
        .lease(std::time::Duration::from_millis(5))
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid runtime configuration: `lease` is 5ms; give at least 100 ms"
    );
}

#[test]
fn building_outside_tokio_is_named() {
    let e = Runtime::builder()
        .store(SqliteStore::in_memory().unwrap())
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid runtime configuration: `build()` must be called inside a tokio runtime (the \
         workers run on it)"
    );
}

/// A store whose `append_step` fails once `broken` is set and which counts claim attempts;
/// everything else is the SQLite store.
struct Failing {
    inner: SqliteStore,
    broken: Arc<AtomicBool>,
    claims: Arc<AtomicUsize>,
}

impl Failing {
    fn new(broken: bool) -> Self {
        Self {
            inner: SqliteStore::in_memory().unwrap(),
            broken: Arc::new(AtomicBool::new(broken)),
            claims: Arc::default(),
        }
    }
}

impl RunStore for Failing {
    fn stats(&self) -> BoxFuture<'_, Result<StoreStats, StoreError>> {
        self.inner.stats()
    }
    fn count_runs(&self) -> BoxFuture<'_, Result<RunCounts, StoreError>> {
        self.inner.count_runs()
    }
    fn schema(&self) -> BoxFuture<'_, Result<SchemaVersion, StoreError>> {
        self.inner.schema()
    }
    fn create_run(&self, new: NewRun) -> BoxFuture<'_, Result<(RunRecord, bool), StoreError>> {
        self.inner.create_run(new)
    }
    fn claim_next<'a>(
        &'a self,
        owner: &'a str,
        lease_ms: i64,
    ) -> BoxFuture<'a, Result<Option<Claim>, StoreError>> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        self.inner.claim_next(owner, lease_ms)
    }
    fn append_step<'a>(
        &'a self,
        lease: &'a Lease,
        step: Step,
        events: Vec<RunEvent>,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        if self.broken.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(StoreError::Backend {
                context: "writing a step".into(),
                message: "disk I/O error".into(),
            })));
        }
        self.inner.append_step(lease, step, events)
    }
    fn pause_for_input<'a>(
        &'a self,
        lease: &'a Lease,
        asked: Vec<Asked>,
        events: Vec<RunEvent>,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        self.inner.pause_for_input(lease, asked, events)
    }
    fn finish<'a>(
        &'a self,
        lease: &'a Lease,
        end: RunEnd,
        events: Vec<RunEvent>,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        self.inner.finish(lease, end, events)
    }
    fn answer(
        &self,
        run: RunId,
        reply: Reply,
        by: Option<String>,
    ) -> BoxFuture<'_, Result<Result<Answered, InputError>, StoreError>> {
        self.inner.answer(run, reply, by)
    }
    fn expire_questions(
        &self,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<(Vec<RunId>, Vec<StoredEvent>), StoreError>> {
        self.inner.expire_questions(now_ms)
    }
    fn next_deadline(&self) -> BoxFuture<'_, Result<Option<i64>, StoreError>> {
        self.inner.next_deadline()
    }
    fn cancel(
        &self,
        run: RunId,
    ) -> BoxFuture<'_, Result<Result<Cancelled, InputError>, StoreError>> {
        self.inner.cancel(run)
    }
    fn heartbeat<'a>(
        &'a self,
        owner: &'a str,
        lease_ms: i64,
    ) -> BoxFuture<'a, Result<Vec<RunId>, StoreError>> {
        self.inner.heartbeat(owner, lease_ms)
    }
    fn release_expired_leases(&self, now_ms: i64) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.inner.release_expired_leases(now_ms)
    }
    fn release_leases<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.inner.release_leases(owner)
    }
    fn next_lease_expiry<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<i64>, StoreError>> {
        self.inner.next_lease_expiry(owner)
    }
    fn run(&self, run: RunId) -> BoxFuture<'_, Result<Option<RunRecord>, StoreError>> {
        self.inner.run(run)
    }
    fn run_by_idempotency_key<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RunRecord>, StoreError>> {
        self.inner.run_by_idempotency_key(key)
    }
    fn forget_idempotency_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.forget_idempotency_key(key)
    }
    fn list_runs<'a>(
        &'a self,
        filter: &'a RunFilter,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<RunRecord>, StoreError>> {
        self.inner.list_runs(filter, limit)
    }
    fn conversation<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ConversationRecord>, StoreError>> {
        self.inner.conversation(id)
    }
    fn list_conversations<'a>(
        &'a self,
        filter: &'a ConversationFilter,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ConversationSummary>, StoreError>> {
        self.inner.list_conversations(filter, limit)
    }
    fn events_after(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
        self.inner.events_after(run, after, limit)
    }
    fn prune_finished(
        &self,
        before_ms: i64,
        batch: usize,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.inner.prune_finished(before_ms, batch)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_write_a_step_fails_the_run_clearly() {
    /// Counts the store errors an observer is told of.
    #[derive(Default)]
    struct Errors(AtomicUsize);
    impl harnessx_runtime::Observer for Errors {
        fn store_error(&self, _error: &StoreError) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let errors = Arc::new(Errors::default());
    let (model, _) = scripted(vec![Turn::Quote]);
    let runtime = Runtime::builder()
        .store(Failing::new(true))
        .agent("a", move |b| b.model(model.clone()))
        .observer_arc(errors.clone())
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "hi")).await.unwrap();
    let failed = runtime.settled(run.id).await.unwrap();
    assert_eq!(failed.state, RunState::Failed);
    assert_eq!(
        failed.error.as_deref(),
        Some(
            "the run's journal could not be written (model turn 1): the run store failed while \
             writing a step: disk I/O error"
        )
    );
    // Nothing acknowledged was lost: the run and its input are as they were.
    assert_eq!(failed.input, "hi");
    // The failed write was reported to the observer.
    assert_eq!(errors.0.load(Ordering::SeqCst), 1);
    let e = RuntimeError::from(StoreError::Closed);
    assert_eq!(e.to_string(), "the run store is closed");
    let e = StoreError::Corrupt {
        what: "journal step".into(),
        message: "expected value".into(),
    };
    assert_eq!(
        e.to_string(),
        "the run store holds an unreadable journal step: expected value"
    );
}

/// One queued run wakes one idle worker, not every idle worker racing for it; the worker passes
/// the wake-up on only while more runs are queued: with 8 idle workers, exactly 2 claims follow
/// (the woken worker's, and its next look once the run is done).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_wakes_one_idle_worker_not_all_of_them() {
    let store = Failing::new(false);
    let claims = Arc::clone(&store.claims);
    let (model, _) = scripted(vec![Turn::Quote]);
    let runtime = Runtime::builder()
        .store(store)
        .workers(8)
        .agent("a", move |b| b.model(model.clone()))
        .build()
        .unwrap();
    let idle = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while claims.load(Ordering::SeqCst) < 8 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    idle.await
        .expect("the 8 workers look for work once at start");
    // Let any worker still between its first look and its wait settle.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let before = claims.load(Ordering::SeqCst);
    assert_eq!(before, 8);
    let run = runtime.start_run(StartRun::new("a", "hi")).await.unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(done.state, RunState::Completed);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let after = claims.load(Ordering::SeqCst) - before;
    assert_eq!(
        after, 2,
        "{after} claims followed one queued run with 8 idle workers"
    );
}

/// A journal written under schema 1 (steps in their own table) is read first, then the steps
/// written since the upgrade (stored with their events), in order.
#[tokio::test]
async fn a_schema_1_journal_is_migrated_and_resumes_in_order() {
    use harnessx::ModelResponse;
    use harnessx::journal::StepKey;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let turn = Step::Turn {
        turn: 1,
        response: ModelResponse::text("first"),
    };
    let started = Step::Started {
        key: StepKey { turn: 1, index: 0 },
        call: harnessx::ToolCall::json("c1", "lookup", serde_json::json!({"id": 1})),
        policy: harnessx::ReplayPolicy::Safe,
    };
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(include_str!("../migrations/sqlite/0001_init.sql"))
            .unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version VALUES (1);
             INSERT INTO conversations VALUES ('c', 0);
             INSERT INTO runs (id, agent, conversation, input, state, step_seq, event_seq,
                               created_ms, updated_ms)
               VALUES (1, 'a', 'c', 'go', 'queued', 2, 1, 0, 0);
             INSERT INTO events (run_id, seq, body) VALUES (1, 1, '{\"type\":\"state\",\"state\":\"queued\"}');",
        )
        .unwrap();
        for (seq, step) in [(1, &turn), (2, &started)] {
            conn.execute(
                "INSERT INTO steps (run_id, seq, kind, turn, idx, body) VALUES (1, ?1, ?2, 1, 0, ?3)",
                rusqlite::params![seq, step.kind(), serde_json::to_string(step).unwrap()],
            )
            .unwrap();
        }
    }
    let finished = Step::Finished {
        key: StepKey { turn: 1, index: 0 },
        result: harnessx::ToolResult::success("c1", "lookup", harnessx::ToolOutput::text("found")),
    };
    {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(
            store.schema_version().await.unwrap(),
            harnessx_runtime::store::SCHEMA_VERSION
        );
        let claim = store.claim_next("w", 60_000).await.unwrap().unwrap();
        assert_eq!(
            serde_json::to_value(&claim.steps).unwrap(),
            serde_json::to_value([&turn, &started]).unwrap()
        );
        let stored = store
            .append_step(
                &claim.lease,
                finished.clone(),
                vec![RunEvent::ToolResult {
                    result: harnessx::ToolResult::success(
                        "c1",
                        "lookup",
                        harnessx::ToolOutput::text("found"),
                    ),
                }],
            )
            .await
            .unwrap();
        // Event numbers go on from the run's last event (1: queued, 2: running).
        assert_eq!(stored[0].seq, 3);
    }
    // Reopening re-queues the run the closed store left running; its journal is whole.
    let store = SqliteStore::open(&path).unwrap();
    let claim = store.claim_next("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(&claim.steps).unwrap(),
        serde_json::to_value([&turn, &started, &finished]).unwrap()
    );
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
}

/// A step written with no event is still journaled (on a row of its own that event readers skip).
#[tokio::test]
async fn a_step_written_without_events_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let turn = Step::Turn {
        turn: 1,
        response: harnessx::ModelResponse::text("first"),
    };
    let run = {
        let store = SqliteStore::open(&path).unwrap();
        let (run, _) = store.create_run(new_run("go")).await.unwrap();
        let claim = store.claim_next("w", 60_000).await.unwrap().unwrap();
        let stored = store
            .append_step(&claim.lease, turn.clone(), Vec::new())
            .await
            .unwrap();
        assert!(stored.is_empty());
        run.id
    };
    let store = SqliteStore::open(&path).unwrap();
    let claim = store.claim_next("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(&claim.steps).unwrap(),
        serde_json::to_value([&turn]).unwrap()
    );
    let events: Vec<u64> = store
        .events_after(run, 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    // queued, running, (the step's own row, skipped), running again
    assert_eq!(events, vec![1, 2, 4]);
}

/// Events stored before the store kept their time read back without one, and a run whose last
/// event has none reports its creation as its last change.
#[tokio::test]
async fn events_stored_before_times_were_kept_read_back_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let run = {
        let store = SqliteStore::open(&path).unwrap();
        let (run, _) = store.create_run(new_run("go")).await.unwrap();
        let stored = store.events_after(run.id, 0, 10).await.unwrap();
        assert!(stored[0].at_ms.is_some_and(|at| at >= run.created_ms));
        run
    };
    {
        // An event as an earlier release stored it: the event's JSON alone.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO events (run_id, seq, body) VALUES (?1, 2, ?2)",
            rusqlite::params![run.id.0, r#"{"type":"state","state":"queued"}"#],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let stored = store.events_after(run.id, 0, 10).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored[0].at_ms.is_some());
    assert_eq!(stored[1].at_ms, None);
    assert_eq!(
        stored[1].event,
        RunEvent::State {
            state: RunState::Queued
        }
    );
    let read = store.run(run.id).await.unwrap().unwrap();
    assert_eq!(read.updated_ms, read.created_ms);
}
