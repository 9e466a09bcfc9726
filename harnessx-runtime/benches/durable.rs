//! Durable-run benchmarks: the cost of a journaled step next to a bare commit (synchronous
//! NORMAL and FULL), a whole run's cost per step, answer → next step latency, how soon a new
//! worker starts recovering a dead one's run, bytes per step as the history grows, and 10,000
//! waiting runs.
//!
//! Run: `cargo bench -p harnessx-runtime --bench durable`. Figures are recorded in BENCHMARKS.md.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use futures::StreamExt;
use harnessx::journal::StepKey;
use harnessx::model::FunctionModel;
use harnessx::{
    AgentConfig, Message, ModelRequest, ModelResponse, ReplayPolicy, StopReason, ToolCall,
    ToolDefinition, ToolOutput, handler_fn,
};
use harnessx_builtin::ask_user::ask_user_questions_tool;
use harnessx_runtime::store::{NewRun, Step};
use harnessx_runtime::{
    Answer, RunEvent, RunId, RunState, RunStore, Runtime, SqliteStore, StartRun, Synchronous,
};
use serde_json::json;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A model that calls `lookup` `tool_turns` times, asks once if `ask`, then answers.
fn model(tool_turns: usize, ask: bool) -> FunctionModel {
    FunctionModel::new(move |request: &ModelRequest, _| {
        let k = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let call = |name: &str, args| {
            ModelResponse::default()
                .with_tool_calls(vec![ToolCall::json(format!("c{k}"), name, args)])
                .with_stop_reason(StopReason::ToolUse)
        };
        if ask && k == 0 {
            return call(
                "ask_user",
                json!({"questions": [{"header": "Go", "question": "Go on?",
                    "options": [{"label": "Yes"}, {"label": "No"}]}]}),
            );
        }
        if k < tool_turns + usize::from(ask) {
            return call("lookup", json!({"id": k}));
        }
        ModelResponse::text("done")
    })
}

fn lookup() -> ToolDefinition {
    ToolDefinition::new(
        "lookup",
        "Look up.",
        json!({"type": "object"}),
        handler_fn(|args, _| async move { Ok(ToolOutput::json(args)) }),
    )
    .with_replay_policy(ReplayPolicy::Safe)
}

fn runtime(store: impl RunStore, tool_turns: usize, ask: bool, workers: usize) -> Runtime {
    Runtime::builder()
        .store(store)
        .agent("a", move |b| {
            b.model(model(tool_turns, ask))
                .tool(lookup())
                .tool(ask_user_questions_tool(
                    |_| async { None },
                    Duration::from_secs(600),
                ))
                .config(
                    AgentConfig::default()
                        .with_planning(false)
                        .with_max_turns(1_000),
                )
        })
        .workers(workers)
        .build()
        .expect("runtime")
}

fn step_cost(c: &mut Criterion) {
    let rt = rt();
    let mut group = c.benchmark_group("step");
    for (name, sync) in [("normal", Synchronous::Normal), ("full", Synchronous::Full)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open_with(dir.path().join("b.db"), sync).expect("store");
        let lease = rt.block_on(async {
            store
                .create_run(NewRun {
                    agent: "a".into(),
                    input: "x".into(),
                    conversation: None,
                    idempotency_key: None,
                    agent_version: None,
                })
                .await
                .expect("run");
            store
                .claim_next("bench", 3_600_000)
                .await
                .expect("claim")
                .expect("a run")
                .lease
        });
        let call = ToolCall::json("c1", "lookup", json!({"id": 1}));
        let mut n = 0u32;
        group.bench_function(format!("journal_step/{name}"), |b| {
            b.to_async(&rt).iter(|| {
                n += 1;
                let step = Step::Started {
                    key: StepKey { turn: n, index: 0 },
                    call: call.clone(),
                    policy: ReplayPolicy::Safe,
                };
                let event = RunEvent::ToolCallStarted {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                };
                let store = &store;
                let lease = &lease;
                async move {
                    store
                        .append_step(lease, step, vec![event])
                        .await
                        .expect("step")
                }
            })
        });
        group.bench_function(format!("bare_commit/{name}"), |b| {
            b.to_async(&rt)
                .iter(|| async { store.bare_commit().await.expect("commit") })
        });
    }
    group.finish();
}

fn whole_run(c: &mut Criterion) {
    let rt = rt();
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = rt.block_on(async {
        runtime(
            SqliteStore::open(dir.path().join("r.db")).expect("store"),
            20,
            false,
            1,
        )
    });
    c.bench_function("run/20_tool_turns_normal", |b| {
        b.to_async(&rt).iter(|| async {
            let run = runtime
                .start_run(StartRun::new("a", "go"))
                .await
                .expect("start");
            let done = runtime.settled(run.id).await.expect("settled");
            assert_eq!(done.state, RunState::Completed);
        })
    });
}

fn answer_latency(c: &mut Criterion) {
    let rt = rt();
    let runtime =
        rt.block_on(async { runtime(SqliteStore::in_memory().expect("store"), 0, true, 2) });
    c.bench_function("answer/to_next_step_running", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let runtime = runtime.clone();
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let run = runtime
                        .start_run(StartRun::new("a", "go"))
                        .await
                        .expect("start");
                    let waiting = runtime.settled(run.id).await.expect("waiting");
                    assert_eq!(waiting.state, RunState::WaitingInput);
                    let last = last_seq(&runtime, run.id).await;
                    let mut events = runtime.subscribe(run.id, last);
                    let t0 = Instant::now();
                    runtime
                        .answer(run.id, Answer::Text { text: "Yes".into() })
                        .await
                        .expect("answer");
                    while let Some(e) = events.next().await {
                        if matches!(
                            e.expect("event").event,
                            RunEvent::State {
                                state: RunState::Running
                            }
                        ) {
                            break;
                        }
                    }
                    total += t0.elapsed();
                    runtime.settled(run.id).await.expect("done");
                }
                total
            }
        })
    });
}

async fn last_seq(runtime: &Runtime, id: RunId) -> u64 {
    let mut last = 0;
    let mut all = runtime.subscribe(id, 0);
    // A waiting run's stream does not end; read what is stored.
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(20), all.next()).await {
        last = e.expect("event").seq;
    }
    last
}

fn recovery_start(c: &mut Criterion) {
    let rt = rt();
    c.bench_function("recovery/first_resume_after_worker_start", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir().expect("tempdir");
                let path = dir.path().join("d.db");
                let id = {
                    let store = SqliteStore::open(&path).expect("store");
                    let (run, _) = store
                        .create_run(NewRun {
                            agent: "a".into(),
                            input: "go".into(),
                            conversation: None,
                            idempotency_key: None,
                            agent_version: None,
                        })
                        .await
                        .expect("run");
                    store.claim_next("dead", 60_000).await.expect("claim");
                    run.id
                };
                let t0 = Instant::now();
                let store = loop {
                    match SqliteStore::open(&path) {
                        Ok(s) => break s,
                        Err(_) => tokio::task::yield_now().await,
                    }
                };
                let runtime = runtime(store, 1, false, 1);
                let mut events = runtime.subscribe(id, 2);
                while let Some(e) = events.next().await {
                    if matches!(
                        e.expect("event").event,
                        RunEvent::State {
                            state: RunState::Running
                        }
                    ) {
                        break;
                    }
                }
                total += t0.elapsed();
                runtime.settled(id).await.expect("done");
            }
            total
        })
    });
}

/// Journal bytes written per step, early and late in a long run.
fn bytes_per_step() {
    let rt = rt();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bytes.db");
    rt.block_on(async {
        let runtime = runtime(SqliteStore::open(&path).expect("store"), 400, false, 1);
        let run = runtime
            .start_run(StartRun::new("a", "go"))
            .await
            .expect("start");
        runtime.settled(run.id).await.expect("done");
    });
    let conn = rusqlite::Connection::open(&path).expect("open");
    let per = |from: i64, to: i64| -> f64 {
        let (bytes, n): (i64, i64) = conn
            .query_row(
                "SELECT SUM(length(body)), COUNT(*) FROM steps WHERE run_id = 1 AND turn BETWEEN ?1 AND ?2",
                [from, to],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("sum");
        bytes as f64 / n as f64
    };
    let events = |from: i64, to: i64| -> f64 {
        let (bytes, n): (i64, i64) = conn
            .query_row(
                "SELECT SUM(length(body)), COUNT(*) FROM events WHERE run_id = 1 AND seq BETWEEN ?1 AND ?2",
                [from, to],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("sum");
        bytes as f64 / n as f64
    };
    println!(
        "bytes/step_journal: turns 1-10 {:.0} B, turns 391-400 {:.0} B; bytes/event: first 30 {:.0} B, last 30 {:.0} B",
        per(1, 10),
        per(391, 400),
        events(1, 30),
        events(1171, 1200)
    );
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// 10,000 runs waiting at once: tasks alive and resident memory, before and after.
fn ten_thousand_waiting() {
    let rt = rt();
    rt.block_on(async {
        let runtime = runtime(SqliteStore::in_memory().expect("store"), 0, true, 4);
        let tasks_before = tokio::runtime::Handle::current().metrics().num_alive_tasks();
        let rss_before = rss_kib();
        let mut ids = Vec::with_capacity(10_000);
        for _ in 0..10_000 {
            ids.push(runtime.start_run(StartRun::new("a", "go")).await.expect("start").id);
        }
        for id in &ids {
            assert_eq!(runtime.settled(*id).await.expect("wait").state, RunState::WaitingInput);
        }
        let tasks_after = tokio::runtime::Handle::current().metrics().num_alive_tasks();
        println!(
            "10k_waiting: alive tasks {tasks_before} -> {tasks_after}; RSS {} KiB -> {} KiB (+{} KiB, {:.0} B per waiting run, rows in an in-memory database included)",
            rss_before,
            rss_kib(),
            rss_kib().saturating_sub(rss_before),
            (rss_kib().saturating_sub(rss_before) * 1024) as f64 / 10_000.0
        );
    });
}

fn benches(c: &mut Criterion) {
    step_cost(c);
    whole_run(c);
    answer_latency(c);
    recovery_start(c);
}

criterion_group!(durable, benches);

fn main() {
    durable();
    bytes_per_step();
    ten_thousand_waiting();
    Criterion::default().configure_from_args().final_summary();
}
