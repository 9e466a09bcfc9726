//! The webhook outbox on both stores: a run's state change writes its event with one delivery
//! per subscribed webhook in the same transaction, claims are leased and fenced, attempts are
//! logged, and on PostgreSQL two stores claiming at once never take the same delivery.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap fails the test")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use harnessx::journal::{PendingInput, PendingKind, RecoveryReason, StepKey};
#[cfg(feature = "postgres")]
use harnessx_runtime::PostgresStore;
use harnessx_runtime::store::{
    Asked, AttemptNext, AttemptRecord, DeliveryState, Expect, NewRun, PlatformStore, RunEnd,
    WEBHOOK_KIND, WebhookEvent,
};
use harnessx_runtime::{RunId, SqliteStore};
use serde_json::json;

#[cfg(feature = "postgres")]
use common::stores::{Stores, fresh_database};

const OWNER: &str = "test-owner";

async fn hook(store: &Arc<dyn PlatformStore>, name: &str, events: &[&str], enabled: bool) {
    store
        .put_resource(
            WEBHOOK_KIND,
            name,
            json!({"url": "http://127.0.0.1:9/x", "events": events, "enabled": enabled}),
            Expect::Absent,
        )
        .await
        .unwrap()
        .unwrap();
}

async fn run(store: &Arc<dyn PlatformStore>, agent: &str) -> harnessx_runtime::store::Lease {
    let (record, _) = store
        .create_run(NewRun {
            agent: agent.into(),
            input: "hi".into(),
            conversation: None,
            idempotency_key: None,
            agent_version: Some(3),
        })
        .await
        .unwrap();
    let claim = store.claim_next(OWNER, 30_000).await.unwrap().unwrap();
    assert_eq!(claim.run.id, record.id);
    claim.lease
}

fn recovery() -> PendingInput {
    PendingInput {
        key: StepKey { turn: 1, index: 0 },
        call_id: "call_0".into(),
        kind: PendingKind::Recovery {
            reason: RecoveryReason::Interrupted,
            tool_name: "deploy".into(),
            arguments: json!({"env": "prod"}),
        },
    }
}

fn record(next: AttemptNext, status: Option<u16>) -> AttemptRecord {
    AttemptRecord {
        at_ms: 1_000,
        duration_ms: 12,
        status,
        error: status.is_none().then(|| "connection refused".to_owned()),
        next,
    }
}

async fn exercise(store: Arc<dyn PlatformStore>) {
    // No webhook: a state change writes nothing.
    let lease = run(&store, "quiet").await;
    store
        .finish(&lease, RunEnd::Failed("nobody listens".into()), vec![])
        .await
        .unwrap();
    assert_eq!(store.webhook_backlog().await.unwrap(), 0);
    assert_eq!(store.next_delivery_ms().await.unwrap(), None);

    hook(
        &store,
        "all",
        &[
            "run.waiting_input",
            "run.completed",
            "run.failed",
            "run.cancelled",
        ],
        true,
    )
    .await;
    hook(&store, "failures", &["run.failed"], true).await;
    hook(&store, "off", &["run.failed", "run.waiting_input"], false).await;
    let wake = store.messages_stored();

    // Waiting for input: the event carries what the run waits on.
    let lease = run(&store, "asker").await;
    store
        .pause_for_input(
            &lease,
            vec![Asked {
                pending: recovery(),
                deadline_ms: None,
            }],
            vec![],
        )
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), wake.notified())
        .await
        .expect("the store announced the message it stored");
    let waiting = lease.run;
    // Failed: both subscribed webhooks get a delivery, the disabled one none.
    let lease = run(&store, "failer").await;
    store
        .finish(&lease, RunEnd::Failed("boom".into()), vec![])
        .await
        .unwrap();
    let failed = lease.run;
    // Cancelled while waiting.
    store.cancel(waiting).await.unwrap().unwrap();
    assert_eq!(store.webhook_backlog().await.unwrap(), 4);
    assert!(store.next_delivery_ms().await.unwrap().is_some());

    let claims = store.claim_deliveries(OWNER, 60_000, 10).await.unwrap();
    let seen: Vec<(String, WebhookEvent, RunId)> = claims
        .iter()
        .map(|c| (c.webhook.clone(), c.message.event, c.message.run))
        .collect();
    assert_eq!(
        seen,
        [
            ("all".to_owned(), WebhookEvent::WaitingInput, waiting),
            ("all".to_owned(), WebhookEvent::Failed, failed),
            ("failures".to_owned(), WebhookEvent::Failed, failed),
            ("all".to_owned(), WebhookEvent::Cancelled, waiting),
        ]
    );
    let asked = &claims[0].message;
    assert!(
        asked.id.starts_with("msg_") && asked.id.len() == 36,
        "{}",
        asked.id
    );
    assert_eq!(asked.data["run_id"], waiting.0);
    assert_eq!(asked.data["agent"], "asker");
    assert_eq!(asked.data["agent_version"], 3);
    assert_eq!(asked.data["state"], "waiting_input");
    assert_eq!(
        asked.data["needs_input"],
        json!([{"pending": recovery(), "deadline_ms": null}])
    );
    // One message for the failure, delivered to two webhooks under one id.
    assert_eq!(claims[1].message.id, claims[2].message.id);
    assert_eq!(claims[1].message.data["error"], "boom");
    assert_eq!(claims[3].message.data["state"], "cancelled");
    assert!(claims.iter().all(|c| c.attempts == 0));

    // Claimed deliveries are not claimed again while the lease lasts.
    assert!(
        store
            .claim_deliveries("other", 60_000, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // A failed attempt schedules the next; the log shows it.
    let first = &claims[0];
    assert!(
        store
            .record_attempt(
                first,
                record(AttemptNext::RetryIn(Duration::ZERO), Some(503))
            )
            .await
            .unwrap()
    );
    // The same claim cannot record twice.
    assert!(
        !store
            .record_attempt(first, record(AttemptNext::Delivered, Some(200)))
            .await
            .unwrap()
    );
    let again = store.claim_deliveries("other", 60_000, 10).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].delivery, first.delivery);
    assert_eq!(again[0].attempts, 1);
    assert_eq!(again[0].message, first.message);
    assert!(again[0].generation > first.generation);
    assert!(
        store
            .record_attempt(&again[0], record(AttemptNext::Delivered, Some(204)))
            .await
            .unwrap()
    );
    assert!(
        store
            .record_attempt(&claims[1], record(AttemptNext::GiveUp, None))
            .await
            .unwrap()
    );
    assert_eq!(store.webhook_backlog().await.unwrap(), 2);

    let log = store.deliveries("all", None, 10).await.unwrap();
    assert_eq!(log.len(), 3);
    assert_eq!(log[2].id, first.delivery, "newest first");
    assert_eq!(log[2].state, DeliveryState::Delivered);
    assert_eq!(log[2].next_attempt_ms, None);
    let attempts: Vec<(u32, Option<u16>)> = log[2]
        .attempts
        .iter()
        .map(|a| (a.attempt, a.status))
        .collect();
    assert_eq!(attempts, [(1, Some(503)), (2, Some(204))]);
    assert!(log[2].attempts[0].next_attempt_ms.is_some());
    assert_eq!(log[2].attempts[0].duration_ms, 12);
    assert_eq!(log[2].attempts[1].next_attempt_ms, None);
    assert_eq!(log[1].state, DeliveryState::Failed);
    assert_eq!(
        log[1].attempts[0].error.as_deref(),
        Some("connection refused")
    );
    assert_eq!(log[0].state, DeliveryState::Pending);
    // Pages: below an id.
    let older = store.deliveries("all", Some(log[1].id), 10).await.unwrap();
    assert_eq!(older.len(), 1);
    assert_eq!(older[0].id, log[2].id);
    assert!(
        store
            .deliveries("nobody", None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_outbox_on_sqlite() {
    exercise(Arc::new(SqliteStore::in_memory().unwrap())).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_on_postgres() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let url = fresh_database(stores.cluster().unwrap()).await;
    exercise(Arc::new(PostgresStore::connect(&url).await.unwrap())).await;
}

#[tokio::test]
async fn a_reopened_sqlite_store_sends_what_its_predecessor_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    {
        let store: Arc<dyn PlatformStore> = Arc::new(SqliteStore::open(&path).unwrap());
        hook(&store, "all", &["run.completed", "run.failed"], true).await;
        let lease = run(&store, "a").await;
        store
            .finish(&lease, RunEnd::Failed("x".into()), vec![])
            .await
            .unwrap();
        assert_eq!(
            store
                .claim_deliveries(OWNER, 600_000, 10)
                .await
                .unwrap()
                .len(),
            1
        );
    }
    let store: Arc<dyn PlatformStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let claims = store.claim_deliveries("next", 600_000, 10).await.unwrap();
    assert_eq!(
        claims.len(),
        1,
        "the dead process's lease was dropped on open"
    );
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_postgres_stores_never_claim_one_delivery_twice() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let url = fresh_database(stores.cluster().unwrap()).await;
    let a: Arc<dyn PlatformStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
    let b: Arc<dyn PlatformStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
    hook(&a, "all", &["run.failed"], true).await;
    for i in 0..40 {
        let lease = run(&a, &format!("agent{i}")).await;
        a.finish(&lease, RunEnd::Failed("x".into()), vec![])
            .await
            .unwrap();
    }
    let mut taken = std::collections::HashSet::new();
    let mut total = 0;
    loop {
        let (x, y) = tokio::join!(
            a.claim_deliveries("a", 60_000, 3),
            b.claim_deliveries("b", 60_000, 3)
        );
        let (x, y) = (x.unwrap(), y.unwrap());
        if x.is_empty() && y.is_empty() {
            break;
        }
        for c in x.iter().chain(&y) {
            total += 1;
            assert!(
                taken.insert(c.delivery),
                "delivery {} claimed twice",
                c.delivery
            );
        }
    }
    assert_eq!(total, 40);
    assert_eq!(a.webhook_backlog().await.unwrap(), 40);
}
