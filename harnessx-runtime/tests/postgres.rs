//! What only a store shared by many processes has to get right: claims under contention,
//! leases that lapse and fence the old worker, expiries that fire once across workers,
//! wake-ups through LISTEN/NOTIFY, migrations, and a server that restarts.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::stores::{Stores, fresh_database};
use common::{Turn, count, counting, new_run, scripted};
use harnessx::journal::{PendingInput, PendingKind, QuestionForm, StepKey};
use harnessx::{PermissionLevel, ReplayPolicy};
use harnessx_runtime::store::{Asked, Step, Wakeup};
use harnessx_runtime::{
    PostgresConfig, PostgresStore, RunState, RunStore, Runtime, StartRun, StoreError,
};
use serde_json::json;

fn question(turn: u32) -> PendingInput {
    PendingInput {
        call_id: format!("call_{turn}"),
        key: StepKey { turn, index: 0 },
        kind: PendingKind::Question {
            form: QuestionForm::Simple {
                question: "Which format?".into(),
                choices: Vec::new(),
            },
            window_ms: None,
        },
    }
}

async fn store(stores: &Stores) -> (PostgresStore, String) {
    let url = fresh_database(stores.cluster().unwrap()).await;
    (PostgresStore::connect(&url).await.unwrap(), url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claims_take_each_run_exactly_once() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let (first, url) = store(&stores).await;
    for i in 0..40 {
        first.create_run(new_run(&format!("r{i}"))).await.unwrap();
    }
    // Four workers in four stores (four pools), claiming at once.
    let mut tasks = Vec::new();
    for w in 0..4 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let store = PostgresStore::connect(&url).await.unwrap();
            let mut mine = Vec::new();
            while let Some(claim) = store.claim_next(&format!("w{w}"), 60_000).await.unwrap() {
                mine.push(claim.run.id);
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let distinct: HashSet<_> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (40, 40));
    let stats = first.stats().await.unwrap();
    assert_eq!(
        (stats.queued, stats.running, stats.leases.len()),
        (0, 40, 40)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_is_taken_over_and_the_old_worker_is_fenced() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let (store, _) = store(&stores).await;
    let (run, _) = store.create_run(new_run("go")).await.unwrap();
    let old = store.claim_next("old", 100).await.unwrap().unwrap();
    // While the lease holds, nobody else can take the run; a heartbeat keeps it.
    assert!(store.claim_next("new", 60_000).await.unwrap().is_none());
    assert!(store.heartbeat("old", 150).await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let new = store.claim_next("new", 60_000).await.unwrap().unwrap();
    assert_eq!(new.run.id, run.id);
    assert_eq!(new.lease.generation, old.lease.generation + 1);
    let e = store
        .append_step(&old.lease, Step::Cancelled, Vec::new())
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Fenced { .. }));
    assert_eq!(
        e.to_string(),
        format!(
            "{}: this worker no longer holds the run's lease; the write was refused",
            run.id
        )
    );
    // The old worker's heartbeat no longer renews the run; the new owner's writes go through.
    store.heartbeat("old", 60_000).await.unwrap();
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.leases[0].owner, "new");
    store
        .append_step(&new.lease, Step::Cancelled, Vec::new())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_expires_once_across_all_workers() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let (store, url) = store(&stores).await;
    for i in 0..20 {
        store.create_run(new_run(&format!("r{i}"))).await.unwrap();
        let claim = store.claim_next("w", 60_000).await.unwrap().unwrap();
        store
            .pause_for_input(
                &claim.lease,
                vec![Asked {
                    pending: question(1),
                    deadline_ms: Some(1),
                }],
                Vec::new(),
            )
            .await
            .unwrap();
    }
    // Four workers' timers fire at the same instant.
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let store = PostgresStore::connect(&url).await.unwrap();
            store.expire_questions(i64::MAX).await.unwrap().0
        }));
    }
    let mut requeued = Vec::new();
    for t in tasks {
        requeued.extend(t.await.unwrap());
    }
    let distinct: HashSet<_> = requeued.iter().collect();
    assert_eq!((requeued.len(), distinct.len()), (20, 20));
    assert_eq!(store.stats().await.unwrap().queued, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_processes_changes_arrive_as_wakeups() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let (listener, url) = store(&stores).await;
    let mut wakeups = listener.wakeups().unwrap();
    while !listener.is_listening() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The listening connection says "look at everything" when it comes up.
    while let Ok(w) = wakeups.try_recv() {
        assert_eq!(w, Wakeup::Resync);
    }
    let other = PostgresStore::connect(&url).await.unwrap();
    let (run, _) = other.create_run(new_run("go")).await.unwrap();
    // The run's first event (its `queued` state) and the queue's wake-up, in either order.
    let mut got = vec![wakeups.recv().await.unwrap(), wakeups.recv().await.unwrap()];
    got.sort_by_key(|w| matches!(w, Wakeup::Queued));
    assert_eq!(
        got,
        [
            Wakeup::Events {
                run: run.id,
                seq: 1
            },
            Wakeup::Queued
        ]
    );
    other.claim_next("w", 60_000).await.unwrap().unwrap();
    other.cancel(run.id).await.unwrap().unwrap();
    // (After the events of the claim.)
    let next = loop {
        match wakeups.recv().await.unwrap() {
            Wakeup::Events { .. } => {}
            other => break other,
        }
    };
    assert_eq!(next, Wakeup::Cancel(run.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_run_once_and_a_newer_schema_is_refused() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let (store, url) = store(&stores).await;
    assert_eq!(
        store.schema_version().await.unwrap(),
        harnessx_runtime::store::SCHEMA_VERSION
    );
    // Workers starting together agree on one schema.
    let (a, b) = tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url));
    assert_eq!(
        a.unwrap().schema_version().await.unwrap(),
        harnessx_runtime::store::SCHEMA_VERSION
    );
    assert_eq!(
        b.unwrap().schema_version().await.unwrap(),
        harnessx_runtime::store::SCHEMA_VERSION
    );
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("INSERT INTO schema_version VALUES (99)")
        .await
        .unwrap();
    let e = PostgresStore::connect(&url).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the run store's schema is version 99, newer than this release knows ({}); upgrade \
             harnessx-runtime",
            harnessx_runtime::store::SCHEMA_VERSION
        )
    );
    let e = PostgresStore::connect("no such url").await.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("the run store failed while reading the PostgreSQL URL: "),
        "{e}"
    );
    assert!(
        e.to_string()
            .ends_with("give a URL such as postgresql://user@host:5432/database")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_go_on_after_the_server_restarts_and_the_loss_is_reported() {
    // A cluster of its own: restarting it must not disturb other tests.
    let Some(mut cluster) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let store = Arc::new(
        PostgresStore::connect_with(
            PostgresConfig::new(cluster.url()).retry_for(Duration::from_secs(30)),
        )
        .await
        .unwrap(),
    );
    let (model, _) = scripted(vec![Turn::Call("lookup", json!({})), Turn::Quote]);
    let (tool, runs) = counting("lookup", ReplayPolicy::Safe, PermissionLevel::Allow);
    let runtime = Runtime::builder()
        .store_arc(store.clone())
        .agent("a", move |b| b.model(model.clone()).tool(tool.clone()))
        .build()
        .unwrap();
    let first = runtime.start_run(StartRun::new("a", "one")).await.unwrap();
    assert_eq!(
        runtime.settled(first.id).await.unwrap().state,
        RunState::Completed
    );
    assert_eq!(store.connection_losses(), 0);
    let restarted = tokio::task::spawn_blocking(move || {
        let r = cluster.restart();
        (r, cluster)
    });
    // Started while the server goes down and comes back: retried, never failed.
    let second = runtime.start_run(StartRun::new("a", "two")).await.unwrap();
    let (restart, cluster) = restarted.await.unwrap();
    restart.unwrap_or_else(|e| panic!("{e}\n{}", cluster.log()));
    let done = runtime.settled(second.id).await.unwrap();
    assert_eq!(done.state, RunState::Completed, "{:?}", done.error);
    assert_eq!(count(&runs), 2);
    assert!(store.connection_losses() > 0);
    let status = runtime.status().await.unwrap();
    assert_eq!((status.store.queued, status.store.running), (0, 0));
}
