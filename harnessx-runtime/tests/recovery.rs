//! Recovery by replay policy: a call started and never finished (its worker died, or it timed
//! out) is run again when `safe`/`idempotent` and asked about when `manual`.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

mod common;

durable_tests!(
    an_interrupted_safe_call_runs_again_without_asking,
    an_interrupted_manual_call_asks_a_person_and_each_choice_is_honoured,
    a_manual_call_that_times_out_in_a_durable_run_asks_for_recovery,
    a_dead_workers_run_is_taken_over_when_its_lease_lapses_not_at_a_later_renewal,
    a_runtime_shut_down_mid_call_hands_the_run_back_with_nothing_recorded,
);

use std::sync::Arc;
use std::time::Duration;

use common::stores::Stores;
use common::{Turn, count, counting, new_run, scripted, stuck};
use harnessx::{PermissionLevel, ReplayPolicy, ToolDefinition};
use harnessx_runtime::{
    Answer, PendingKind, RecoveryChoice, RecoveryReason, RunId, RunState, RunStore, Runtime,
    SqliteStore, StartRun,
};
use serde_json::json;

/// A runtime over `store` whose agent `a` calls its tool `name` once and then quotes the
/// result, with `lease` (else the default).
fn calling(
    store: &Arc<dyn RunStore>,
    name: &'static str,
    tool: ToolDefinition,
    lease: Option<Duration>,
) -> Runtime {
    let (model, _) = scripted(vec![Turn::Call(name, json!({})), Turn::Quote]);
    let mut builder = Runtime::builder()
        .store_arc(Arc::clone(store))
        .agent("a", move |b| b.model(model.clone()).tool(tool.clone()));
    if let Some(lease) = lease {
        builder = builder.lease(lease);
    }
    builder.build().unwrap()
}

/// Starts a run whose tool `name` is interrupted: a first runtime's worker starts it, then goes
/// away without finishing it, and its lease lapses. Returns the store and the run.
async fn interrupted(
    stores: &Stores,
    name: &'static str,
    policy: ReplayPolicy,
) -> (Arc<dyn RunStore>, RunId) {
    let store = stores.fresh().await;
    let started = Arc::new(tokio::sync::Notify::new());
    let first = calling(
        &store,
        name,
        stuck(name, policy, Arc::clone(&started)),
        None,
    );
    let run = first.start_run(StartRun::new("a", "go")).await.unwrap();
    started.notified().await;
    drop(first);
    // Its lease lapses: the run goes back to the queue.
    while store.release_expired_leases(i64::MAX).await.unwrap() == 0 {
        tokio::task::yield_now().await;
    }
    (store, run.id)
}

/// A second runtime over the same store, with a counting `name` tool.
fn second(
    store: Arc<dyn RunStore>,
    name: &'static str,
    policy: ReplayPolicy,
) -> (
    Runtime,
    Arc<std::sync::atomic::AtomicUsize>,
    Arc<std::sync::atomic::AtomicUsize>,
) {
    let (model, model_calls) = scripted(vec![Turn::Call(name, json!({})), Turn::Quote]);
    let (tool, runs) = counting(name, policy, PermissionLevel::Allow);
    let runtime = Runtime::builder()
        .store_arc(store)
        .agent("a", move |b| b.model(model.clone()).tool(tool.clone()))
        .build()
        .unwrap();
    (runtime, runs, model_calls)
}

async fn an_interrupted_safe_call_runs_again_without_asking(stores: Stores) {
    for policy in [ReplayPolicy::Safe, ReplayPolicy::Idempotent] {
        let (store, id) = interrupted(&stores, "read", policy).await;
        let (runtime, runs, model_calls) = second(store, "read", policy);
        let done = runtime.settled(id).await.unwrap();
        assert_eq!(done.state, RunState::Completed);
        assert_eq!(done.result.unwrap().output, "saw: read done");
        // The journaled turn was not asked again: only the final turn.
        assert_eq!((count(&runs), count(&model_calls)), (1, 1));
    }
}

/// A worker dies holding a short lease; a live runtime whose own renewals are far apart (its
/// lease is long) takes the run over when that lease lapses, without anyone calling
/// `release_expired_leases`: it sleeps until the earliest foreign lease ends.
async fn a_dead_workers_run_is_taken_over_when_its_lease_lapses_not_at_a_later_renewal(
    stores: Stores,
) {
    let store = stores.fresh().await;
    let started = Arc::new(tokio::sync::Notify::new());
    let tool = stuck("read", ReplayPolicy::Safe, Arc::clone(&started));
    let dying = calling(&store, "read", tool, Some(Duration::from_millis(300)));
    let run = dying.start_run(StartRun::new("a", "go")).await.unwrap();
    started.notified().await;
    // The rescuer starts while the dying worker's lease still holds: it finds nothing to
    // claim, and its first renewal is 40 s away.
    let (tool, runs) = counting("read", ReplayPolicy::Safe, PermissionLevel::Allow);
    let rescuer = calling(&store, "read", tool, Some(Duration::from_secs(120)));
    drop(dying);
    let done = tokio::time::timeout(Duration::from_secs(20), rescuer.settled(run.id))
        .await
        .expect("the run was taken over when the dead worker's lease lapsed")
        .unwrap();
    assert_eq!(done.state, RunState::Completed);
    assert_eq!(count(&runs), 1);
}

/// `Runtime::shutdown` with a call in flight: the call records nothing (it is not reported
/// as crashed or cancelled), and the run goes back to the queue at once — a runtime with a
/// long lease of its own takes it over well before the stopped worker's lease (two minutes)
/// would lapse, and runs the call again.
async fn a_runtime_shut_down_mid_call_hands_the_run_back_with_nothing_recorded(stores: Stores) {
    let store = stores.fresh().await;
    let started = Arc::new(tokio::sync::Notify::new());
    let tool = stuck("read", ReplayPolicy::Safe, Arc::clone(&started));
    let stopping = calling(&store, "read", tool, Some(Duration::from_secs(120)));
    let run = stopping.start_run(StartRun::new("a", "go")).await.unwrap();
    started.notified().await;
    stopping.shutdown().await;
    stopping.shutdown().await; // a second call has nothing left to do
    let view = stopping.run(run.id).await.unwrap();
    assert_eq!(
        view.state,
        RunState::Queued,
        "handed back, not left running"
    );
    assert!(stopping.status().await.unwrap().driving.is_empty());

    let (tool, runs) = counting("read", ReplayPolicy::Safe, PermissionLevel::Allow);
    let next = calling(&store, "read", tool, Some(Duration::from_secs(120)));
    let done = tokio::time::timeout(Duration::from_secs(20), next.settled(run.id))
        .await
        .expect("the handed-back run was taken over at once")
        .unwrap();
    assert_eq!(done.state, RunState::Completed);
    assert_eq!(done.result.unwrap().output, "saw: read done");
    assert_eq!(
        count(&runs),
        1,
        "the call was run again, not reported as failed"
    );
}

async fn an_interrupted_manual_call_asks_a_person_and_each_choice_is_honoured(stores: Stores) {
    let choices = [
        (
            RecoveryChoice::TookEffect {
                result: Some("charged 5 EUR".into()),
            },
            0,
            "saw: charged 5 EUR".to_owned(),
        ),
        (
            RecoveryChoice::TookEffect { result: None },
            0,
            "saw: The call was interrupted; a person confirmed that it took effect, but its \
             result was not recorded."
                .to_owned(),
        ),
        (RecoveryChoice::RunAgain, 1, "saw: charge done".to_owned()),
        (
            RecoveryChoice::Skip {
                note: "refund instead".into(),
            },
            0,
            "saw: The call to `charge` was interrupted and a person chose to skip it; it was not \
             run again. Their note: refund instead"
                .to_owned(),
        ),
    ];
    for (choice, expected_runs, expected_output) in choices {
        let (store, id) = interrupted(&stores, "charge", ReplayPolicy::Manual).await;
        let (runtime, runs, model_calls) = second(store, "charge", ReplayPolicy::Manual);
        let waiting = runtime.settled(id).await.unwrap();
        assert_eq!(waiting.state, RunState::WaitingInput);
        assert!(matches!(
            &waiting.needs_input[..],
            [p] if matches!(&p.pending.kind, PendingKind::Recovery { reason: RecoveryReason::Interrupted, tool_name, .. } if tool_name == "charge")
        ));
        assert_eq!(count(&runs), 0);
        // Not a question: a message does not answer it, text is refused.
        let e = runtime
            .answer(
                id,
                Answer::Text {
                    text: "it worked".into(),
                },
            )
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{id} waits for an answer to a recovery question, not an answer; answer it: the \
                 call took effect, run it again, or skip it; nothing was changed"
            )
        );
        runtime
            .answer(id, Answer::Recovery { choice })
            .await
            .unwrap();
        let done = runtime.settled(id).await.unwrap();
        assert_eq!(done.result.unwrap().output, expected_output);
        assert_eq!((count(&runs), count(&model_calls)), (expected_runs, 1));
    }
}

async fn a_manual_call_that_times_out_in_a_durable_run_asks_for_recovery(stores: Stores) {
    let started = Arc::new(tokio::sync::Notify::new());
    let slow = stuck("transfer", ReplayPolicy::Manual, started).with_timeout_seconds(0.2);
    let runtime = calling(&stores.fresh().await, "transfer", slow, None);
    let run = runtime.start_run(StartRun::new("a", "pay")).await.unwrap();
    let waiting = runtime.settled(run.id).await.unwrap();
    assert!(matches!(
        &waiting.needs_input[..],
        [p] if matches!(&p.pending.kind, PendingKind::Recovery { reason: RecoveryReason::TimedOut, .. })
    ));
    runtime
        .answer(
            run.id,
            Answer::Recovery {
                choice: RecoveryChoice::TookEffect {
                    result: Some("sent".into()),
                },
            },
        )
        .await
        .unwrap();
    assert_eq!(
        runtime
            .settled(run.id)
            .await
            .unwrap()
            .result
            .unwrap()
            .output,
        "saw: sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_store_recovers_runs_left_running_by_a_dead_process_when_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).unwrap();
    // A second open in the same process is refused while the first holds the file.
    let e = SqliteStore::open(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the run store `{0}` is open in another process (its lock file `{0}-lock` is held); \
             stop that process, or use one store per process",
            path.display()
        )
    );
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
    assert_eq!(
        store.schema_version().await.unwrap(),
        harnessx_runtime::store::SCHEMA_VERSION
    );
    let (run, _) = store.create_run(new_run("go")).await.unwrap();
    let claim = store.claim_next("dead", 60_000).await.unwrap().unwrap();
    assert_eq!(claim.run.id, run.id);
    drop(store);
    let mut reopened = SqliteStore::open(&path);
    while matches!(reopened, Err(harnessx_runtime::StoreError::Locked { .. })) {
        tokio::time::sleep(Duration::from_millis(5)).await;
        reopened = SqliteStore::open(&path);
    }
    let reopened = reopened.unwrap();
    assert_eq!(
        reopened.run(run.id).await.unwrap().unwrap().state,
        RunState::Queued
    );
    // The dead worker's lease is fenced: its writes are refused.
    let e = reopened
        .append_step(
            &claim.lease,
            harnessx_runtime::store::Step::Cancelled,
            Vec::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "run 1: this worker no longer holds the run's lease; the write was refused"
    );
}

/// PostgreSQL, two processes' worth of stores: the runs a stopping worker hands back all at once
/// (one notification) fan out over another runtime's idle workers — each claim that leaves more
/// runs queued wakes the next idle worker — instead of one being taken and the rest waiting for
/// the stopped worker's leases (two minutes) to lapse.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_runs_handed_back_at_once_fan_out_over_idle_workers() {
    let Some(stores) = Stores::postgres() else {
        return;
    };
    let url = common::stores::fresh_database(stores.cluster().unwrap()).await;
    let connect = || async {
        Arc::new(
            harnessx_runtime::PostgresStore::connect(&url)
                .await
                .unwrap(),
        ) as Arc<dyn RunStore>
    };
    let never = Arc::new(tokio::sync::Notify::new());
    let stopping = calling(
        &connect().await,
        "read",
        stuck("read", ReplayPolicy::Safe, never),
        Some(Duration::from_secs(120)),
    );
    let mut ids = Vec::new();
    for i in 0..4 {
        let run = stopping
            .start_run(StartRun::new("a", format!("run {i}")))
            .await
            .unwrap();
        ids.push(run.id);
    }
    tokio::time::timeout(Duration::from_secs(20), async {
        while stopping.status().await.unwrap().driving.len() < 4 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the first runtime drives all four runs");
    // The other runtime starts now: its workers look once, find nothing, and wait. Its `read`
    // returns only once four calls run at the same time, so the runs complete only if all four
    // idle workers were woken — one worker taking them in turn would wait forever.
    let together = Arc::new(tokio::sync::Barrier::new(4));
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (barrier, counter) = (Arc::clone(&together), Arc::clone(&runs));
    let tool = ToolDefinition::new(
        "read",
        "Returns once four calls run at once.",
        json!({"type": "object"}),
        harnessx::handler_fn(move |_, _| {
            let (barrier, counter) = (Arc::clone(&barrier), Arc::clone(&counter));
            async move {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                barrier.wait().await;
                Ok(harnessx::ToolOutput::text("read done"))
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe);
    let taking_over = calling(
        &connect().await,
        "read",
        tool,
        Some(Duration::from_secs(120)),
    );
    // Let its workers' first look (over new connections) finish, so that they are idle when the
    // runs come back; otherwise they would find the runs on that first look.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stopping.shutdown().await;
    for id in ids {
        let done = tokio::time::timeout(Duration::from_secs(20), taking_over.settled(id))
            .await
            .expect("every handed-back run was taken over at once, by four workers together")
            .unwrap();
        assert_eq!(done.state, RunState::Completed);
    }
    assert_eq!(count(&runs), 4);
}
