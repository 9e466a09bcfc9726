//! Retention on both stores: `prune_finished` deletes runs that completed, failed or were
//! cancelled before a cut-off, with every row kept for them, in batches, oldest first; queued,
//! running and waiting runs and recent ones stay; a conversation goes with its last run and
//! otherwise keeps its transcript; ids are never given again. Rows are counted in the database
//! itself, table by table.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

mod common;

durable_tests!(
    finished_runs_go_with_everything_kept_for_them,
    pruning_goes_in_batches_oldest_first,
    a_pruned_run_id_is_never_given_again
);

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "postgres")]
use common::stores::fresh_database;
use common::stores::{Engine, Stores};
use harnessx::journal::{PendingInput, PendingKind, QuestionForm, StepKey};
use harnessx::{Message, ModelResponse, RunResult};
#[cfg(feature = "postgres")]
use harnessx_runtime::PostgresStore;
use harnessx_runtime::store::{Asked, NewRun, RunEnd, Step};
use harnessx_runtime::{RunEvent, RunId, RunState, RunStore, SqliteStore};

/// A store on a database the test can also read with SQL of its own.
struct Db {
    store: Arc<dyn RunStore>,
    raw: Raw,
    _dir: tempfile::TempDir,
}

enum Raw {
    Sqlite(std::path::PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(tokio_postgres::Client),
}

impl Db {
    async fn open(stores: &Stores) -> Self {
        let dir = tempfile::tempdir().unwrap();
        match stores.engine {
            Engine::Sqlite => {
                let path = dir.path().join("runs.db");
                Self {
                    store: Arc::new(SqliteStore::open(&path).unwrap()),
                    raw: Raw::Sqlite(path),
                    _dir: dir,
                }
            }
            #[cfg(feature = "postgres")]
            Engine::Postgres => {
                let url = fresh_database(stores.cluster().unwrap()).await;
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(connection);
                Self {
                    store: Arc::new(PostgresStore::connect(&url).await.unwrap()),
                    raw: Raw::Postgres(client),
                    _dir: dir,
                }
            }
        }
    }

    /// The single number `sql` selects (the same SQL on both engines).
    async fn count(&self, sql: &str) -> i64 {
        match &self.raw {
            Raw::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.query_row(sql, [], |r| r.get(0)).unwrap()
            }
            #[cfg(feature = "postgres")]
            Raw::Postgres(client) => client.query_one(sql, &[]).await.unwrap().get(0),
        }
    }

    async fn execute(&self, sql: &str) {
        match &self.raw {
            Raw::Sqlite(path) => {
                rusqlite::Connection::open(path)
                    .unwrap()
                    .execute_batch(sql)
                    .unwrap();
            }
            #[cfg(feature = "postgres")]
            Raw::Postgres(client) => client.batch_execute(sql).await.unwrap(),
        }
    }

    /// The rows every run-keyed table holds for `run`, and the conversation-keyed ones for
    /// `conversation`: events, journal steps, pending, then messages, grants, conversations.
    async fn rows(&self, run: RunId, conversation: &str) -> [i64; 6] {
        let id = run.0;
        [
            self.count(&format!("SELECT COUNT(*) FROM events WHERE run_id = {id}"))
                .await,
            self.count(&format!("SELECT COUNT(*) FROM steps WHERE run_id = {id}"))
                .await,
            self.count(&format!("SELECT COUNT(*) FROM pending WHERE run_id = {id}"))
                .await,
            self.count(&format!(
                "SELECT COUNT(*) FROM messages WHERE conversation = '{conversation}'"
            ))
            .await,
            self.count(&format!(
                "SELECT COUNT(*) FROM grants WHERE conversation = '{conversation}'"
            ))
            .await,
            self.count(&format!(
                "SELECT COUNT(*) FROM conversations WHERE id = '{conversation}'"
            ))
            .await,
        ]
    }
}

fn new_run(input: &str, conversation: Option<&str>) -> NewRun {
    NewRun {
        agent: "a".into(),
        input: input.into(),
        conversation: conversation.map(str::to_owned),
        idempotency_key: None,
        agent_version: None,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Creates a run, claims it, journals a model turn, and ends it as `end` says.
async fn ended(store: &dyn RunStore, input: &str, conversation: Option<&str>, end: &str) -> RunId {
    let (run, _) = store
        .create_run(new_run(input, conversation))
        .await
        .unwrap();
    let claim = store.claim_next("w", 60_000).await.unwrap().unwrap();
    assert_eq!(claim.run.id, run.id);
    store
        .append_step(
            &claim.lease,
            Step::Turn {
                turn: 1,
                response: ModelResponse::text("done"),
            },
            vec![RunEvent::TextDelta {
                text: "done".into(),
            }],
        )
        .await
        .unwrap();
    let end = match end {
        "completed" => RunEnd::Completed(RunResult {
            output: "done".into(),
            messages: vec![Message::user(input), Message::assistant("done")],
            turns: 1,
            ..RunResult::default()
        }),
        "failed" => RunEnd::Failed("the model failed".into()),
        _ => RunEnd::Cancelled,
    };
    store.finish(&claim.lease, end, Vec::new()).await.unwrap();
    run.id
}

fn question() -> PendingInput {
    PendingInput {
        call_id: "call_1".into(),
        key: StepKey { turn: 1, index: 0 },
        kind: PendingKind::Question {
            form: QuestionForm::Simple {
                question: "Which format?".into(),
                choices: Vec::new(),
            },
            window_ms: None,
        },
    }
}

async fn finished_runs_go_with_everything_kept_for_them(stores: Stores) {
    let db = Db::open(&stores).await;
    let store = &*db.store;
    // Finished runs, one per way of ending.
    let completed = ended(store, "old one", Some("c-old"), "completed").await;
    db.execute("INSERT INTO grants (conversation, tool) VALUES ('c-old', 'run_bash')")
        .await;
    let failed = ended(store, "failing", None, "failed").await;
    let cancelled_running = ended(store, "stopped", None, "cancelled").await;
    let (queued_then_cancelled, _) = store.create_run(new_run("never", None)).await.unwrap();
    store
        .cancel(queued_then_cancelled.id)
        .await
        .unwrap()
        .unwrap();
    // A conversation that goes on: its first run finished, the next waits for a person.
    let earlier = ended(store, "first question", Some("c-live"), "completed").await;
    db.execute("INSERT INTO grants (conversation, tool) VALUES ('c-live', 'run_bash')")
        .await;
    let (waiting, _) = store
        .create_run(new_run("second question", Some("c-live")))
        .await
        .unwrap();
    let claim = store.claim_next("w", 60_000).await.unwrap().unwrap();
    assert_eq!(claim.run.id, waiting.id);
    store
        .pause_for_input(
            &claim.lease,
            vec![Asked {
                pending: question(),
                deadline_ms: None,
            }],
            Vec::new(),
        )
        .await
        .unwrap();
    // A running run.
    let (running, _) = store.create_run(new_run("busy", None)).await.unwrap();
    let claim = store.claim_next("w", 60_000).await.unwrap().unwrap();
    assert_eq!(claim.run.id, running.id);

    tokio::time::sleep(Duration::from_millis(5)).await;
    let cutoff = now_ms();
    tokio::time::sleep(Duration::from_millis(5)).await;
    // Finished after the cut-off: too recent.
    let recent = ended(store, "recent", Some("c-recent"), "completed").await;
    // A queued run.
    let (queued, _) = store.create_run(new_run("later", None)).await.unwrap();

    let old = [
        completed,
        failed,
        cancelled_running,
        queued_then_cancelled.id,
        earlier,
    ];
    for id in old {
        assert!(db.rows(id, "").await[0] > 0, "{id} has events");
    }
    // A webhook message of the completed run and of the waiting one, each with a delivery
    // and its attempt (the delivery log).
    for (message, run) in [("msg_old", completed), ("msg_live", waiting.id)] {
        db.execute(&format!(
            "INSERT INTO webhook_messages (id, event, run_id, data, created_ms)
               VALUES ('{message}', 'run.completed', {}, '{{}}', 0);
             INSERT INTO webhook_deliveries (message_id, webhook, created_ms, updated_ms)
               VALUES ('{message}', 'hook', 0, 0);
             INSERT INTO webhook_attempts (delivery_id, attempt, at_ms, duration_ms)
               SELECT id, 1, 0, 0 FROM webhook_deliveries WHERE message_id = '{message}';",
            run.0
        ))
        .await;
    }
    let webhook_rows = |message: &str| {
        [
            format!("SELECT COUNT(*) FROM webhook_messages WHERE id = '{message}'"),
            format!("SELECT COUNT(*) FROM webhook_deliveries WHERE message_id = '{message}'"),
            format!(
                "SELECT COUNT(*) FROM webhook_attempts a JOIN webhook_deliveries d
                   ON d.id = a.delivery_id WHERE d.message_id = '{message}'"
            ),
        ]
    };
    let mut counts = Vec::new();
    for sql in webhook_rows("msg_old") {
        counts.push(db.count(&sql).await);
    }
    assert_eq!(counts, [1, 1, 1]);
    assert_eq!(store.prune_finished(cutoff, 500).await.unwrap(), 5);
    // The pruned run's webhook message, delivery and attempt went with it; the waiting run's
    // stay.
    for (message, kept) in [("msg_old", 0), ("msg_live", 1)] {
        for sql in webhook_rows(message) {
            assert_eq!(db.count(&sql).await, kept, "{sql}");
        }
    }

    for id in old {
        assert!(store.run(id).await.unwrap().is_none(), "{id} is gone");
        assert!(store.events_after(id, 0, 100).await.unwrap().is_empty());
        let [events, steps, pending, ..] = db.rows(id, "").await;
        assert_eq!((events, steps, pending), (0, 0, 0), "{id}");
    }
    // The conversation whose only run went: gone with its transcript and grants.
    assert_eq!(db.rows(completed, "c-old").await[3..], [0, 0, 0]);
    assert!(store.conversation("c-old").await.unwrap().is_none());
    // The one that goes on keeps its transcript (the deleted run's messages) and grants, and
    // lists only its remaining run, still waiting on its question.
    assert_eq!(db.rows(waiting.id, "c-live").await, [4, 1, 1, 2, 1, 1]);
    let live = store.conversation("c-live").await.unwrap().unwrap();
    assert_eq!(live.runs, vec![waiting.id]);
    assert_eq!(live.messages.len(), 2);
    assert_eq!(live.pending_question.unwrap().0, waiting.id);
    // Waiting, running, queued and recent runs stay, whatever the cut-off.
    for (id, state) in [
        (waiting.id, RunState::WaitingInput),
        (running.id, RunState::Running),
        (queued.id, RunState::Queued),
        (recent, RunState::Completed),
    ] {
        assert_eq!(store.run(id).await.unwrap().unwrap().state, state, "{id}");
    }
    assert_eq!(store.prune_finished(cutoff, 500).await.unwrap(), 0);
    assert_eq!(store.prune_finished(i64::MAX, 500).await.unwrap(), 1);
    assert!(store.run(recent).await.unwrap().is_none());
    for id in [waiting.id, running.id, queued.id] {
        assert!(store.run(id).await.unwrap().is_some(), "{id}");
    }
    // The waiting run is still answerable.
    let answered = store
        .answer(
            waiting.id,
            harnessx_runtime::store::Reply::Answer(harnessx_runtime::Answer::Text {
                text: "CSV".into(),
            }),
            None,
        )
        .await
        .unwrap()
        .unwrap();
    assert!(answered.requeued);
}

async fn pruning_goes_in_batches_oldest_first(stores: Stores) {
    let db = Db::open(&stores).await;
    let store = &*db.store;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(ended(store, &format!("run {i}"), None, "completed").await);
        // Distinct end times, so "oldest first" is one order.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let left = || async {
        let mut left = Vec::new();
        for id in &ids {
            if store.run(*id).await.unwrap().is_some() {
                left.push(*id);
            }
        }
        left
    };
    let cutoff = now_ms() + 1;
    assert_eq!(store.prune_finished(cutoff, 3).await.unwrap(), 3);
    assert_eq!(left().await, ids[3..]);
    assert_eq!(store.prune_finished(cutoff, 3).await.unwrap(), 3);
    assert_eq!(left().await, ids[6..]);
    assert_eq!(store.prune_finished(cutoff, 3).await.unwrap(), 1);
    assert_eq!(store.prune_finished(cutoff, 3).await.unwrap(), 0);
    assert!(left().await.is_empty());
    assert_eq!(db.count("SELECT COUNT(*) FROM events").await, 0);
    assert_eq!(db.count("SELECT COUNT(*) FROM conversations").await, 0);
    assert_eq!(db.count("SELECT COUNT(*) FROM messages").await, 0);
}

async fn a_pruned_run_id_is_never_given_again(stores: Stores) {
    let db = Db::open(&stores).await;
    let store = &*db.store;
    ended(store, "one", None, "completed").await;
    let newest = ended(store, "two", None, "completed").await;
    assert_eq!(store.prune_finished(i64::MAX, 500).await.unwrap(), 2);
    let (next, _) = store.create_run(new_run("three", None)).await.unwrap();
    assert_eq!(next.id.0, newest.0 + 1);
    assert_eq!(next.conversation, format!("run-{}", next.id.0));
}

/// `PRAGMA name` of the SQLite file at `path`, read beside the open store.
fn pragma(path: &std::path::Path, name: &str) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
        .unwrap()
}

/// Fills `store` with `n` finished runs of a few kilobytes each.
async fn fill(store: &dyn RunStore, n: usize) {
    for i in 0..n {
        ended(
            store,
            &format!("run {i} {}", "x".repeat(4000)),
            None,
            "completed",
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_sqlite_file_gives_the_pages_of_pruned_runs_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).unwrap();
    // 2: incremental.
    assert_eq!(pragma(&path, "auto_vacuum"), 2);
    fill(&store, 200).await;
    let full = pragma(&path, "page_count");
    assert_eq!(store.prune_finished(i64::MAX, 500).await.unwrap(), 200);
    let after = pragma(&path, "page_count");
    assert!(after * 4 < full, "{full} pages before, {after} after");
    assert_eq!(pragma(&path, "freelist_count"), 0);
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_from_before_reuses_its_space_until_vacuumed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let previous = harnessx_runtime::store::previous_schema_version();
    SqliteStore::migrate_file_to(&path, previous).unwrap();
    let full = {
        let store = SqliteStore::open(&path).unwrap();
        // Opening migrates the file but cannot turn auto_vacuum on in it.
        assert_eq!(
            store.schema_version().await.unwrap(),
            harnessx_runtime::store::SCHEMA_VERSION
        );
        assert_eq!(pragma(&path, "auto_vacuum"), 0);
        fill(&store, 200).await;
        let full = pragma(&path, "page_count");
        assert_eq!(store.prune_finished(i64::MAX, 500).await.unwrap(), 200);
        // The pages stay in the file, free for the next runs.
        assert_eq!(pragma(&path, "page_count"), full);
        assert!(pragma(&path, "freelist_count") * 2 > full);
        fill(&store, 100).await;
        assert_eq!(pragma(&path, "page_count"), full);
        full
    };
    // What docs/production.md says to run once, with the server stopped.
    let conn = loop {
        let conn = rusqlite::Connection::open(&path).unwrap();
        match conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;") {
            Ok(()) => break conn,
            // The closed store's thread may still be letting go of the file.
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    drop(conn);
    assert_eq!(pragma(&path, "auto_vacuum"), 2);
    assert!(pragma(&path, "page_count") < full);
    let store = loop {
        match SqliteStore::open(&path) {
            Ok(store) => break store,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    assert_eq!(store.count_runs().await.unwrap().completed, 100);
    assert_eq!(store.prune_finished(i64::MAX, 500).await.unwrap(), 100);
    assert_eq!(pragma(&path, "freelist_count"), 0);
}

/// In a rolling upgrade, servers of the release before keep ending runs with their own SQL,
/// which knows nothing of `finished_ms`: PostgreSQL's trigger dates those runs too, so they age
/// like the others.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_ended_by_a_server_of_the_release_before_ages_too() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let db = Db::open(&stores).await;
    let store = &*db.store;
    let (run, _) = store.create_run(new_run("old server", None)).await.unwrap();
    store.claim_next("w", 60_000).await.unwrap().unwrap();
    let before = now_ms();
    // The statement schema 4's `finish` ends a run with.
    db.execute(&format!(
        "UPDATE runs SET result = NULL, error = 'the model failed', state = 'failed',
           owner = NULL, lease_until_ms = NULL WHERE id = {}",
        run.id.0
    ))
    .await;
    let finished = db
        .count(&format!(
            "SELECT finished_ms FROM runs WHERE id = {}",
            run.id.0
        ))
        .await;
    assert!(finished >= before, "{finished} < {before}");
    // Dated when it ended: not before.
    assert_eq!(store.prune_finished(before - 1, 500).await.unwrap(), 0);
    assert_eq!(store.prune_finished(i64::MAX, 500).await.unwrap(), 1);
}
