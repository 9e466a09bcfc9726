//! Durable runs on PostgreSQL: a journaled step next to a bare one-row commit (and the commits a
//! step costs), a whole run's cost per step, answer → next step across processes (woken by
//! NOTIFY), how soon a dead worker's run resumes after its lease lapses, and runs per second
//! with 1, 2 and 3 workers. A throwaway cluster (fsync on) is started for the run.
//!
//! Run: `cargo bench -p harnessx-runtime --bench durable_pg`. Figures go to BENCHMARKS.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use harnessx::journal::StepKey;
use harnessx::model::FunctionModel;
use harnessx::{
    AgentConfig, Message, ModelRequest, ModelResponse, ReplayPolicy, StopReason, ToolCall,
    ToolDefinition, ToolOutput, handler_fn,
};
use harnessx_builtin::ask_user::ask_user_tool;
use harnessx_runtime::store::{NewRun, Reply, Step};
use harnessx_runtime::{
    Answer, PostgresStore, QuestionAnswer, RunEvent, RunState, RunStore, Runtime, StartRun,
};
use serde_json::json;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// Calls `lookup` `tool_turns` times (after one question if `ask`), then answers.
fn model(tool_turns: usize, ask: bool) -> FunctionModel {
    FunctionModel::new(move |request: &ModelRequest, _| {
        let k = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let call = |name: &str, args| ModelResponse {
            tool_calls: vec![ToolCall::json(format!("c{k}"), name, args)],
            stop_reason: StopReason::ToolUse,
            ..ModelResponse::default()
        };
        if ask && k == 0 {
            return call(
                "ask_user",
                json!({"question": "Go on?", "choices": ["Yes", "No"]}),
            );
        }
        if k < tool_turns + usize::from(ask) {
            return call("lookup", json!({"id": k}));
        }
        ModelResponse {
            content: "done".into(),
            ..ModelResponse::default()
        }
    })
}

fn lookup(stall: Option<Arc<std::sync::atomic::AtomicBool>>) -> ToolDefinition {
    ToolDefinition::new(
        "lookup",
        "Look up.",
        json!({"type": "object"}),
        handler_fn(move |args, _| {
            let stall = stall.clone();
            async move {
                if stall.is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst)) {
                    std::future::pending::<()>().await;
                }
                Ok(ToolOutput::json(args))
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe)
}

fn runtime(
    store: Arc<dyn RunStore>,
    tool_turns: usize,
    ask: bool,
    workers: usize,
    lease: Duration,
) -> Runtime {
    runtime_with(store, tool_turns, ask, workers, lease, None)
}

fn runtime_with(
    store: Arc<dyn RunStore>,
    tool_turns: usize,
    ask: bool,
    workers: usize,
    lease: Duration,
    stall: Option<Arc<std::sync::atomic::AtomicBool>>,
) -> Runtime {
    Runtime::builder()
        .store_arc(store)
        .agent("a", move |b| {
            b.model(model(tool_turns, ask))
                .tool(lookup(stall.clone()))
                .tool(ask_user_tool(|_q: String, _c: Vec<String>| async { None }))
                .config(AgentConfig {
                    planning: false,
                    ..AgentConfig::default()
                })
        })
        .workers(workers)
        .lease(lease)
        .build()
        .expect("runtime")
}

async fn commits(url: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    // Other backends flush their counters at least once a second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    client
        .query_one(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await
        .expect("stats")
        .get(0)
}

async fn new_db(cluster: &harnessx_testkit::PgCluster, name: &str) -> String {
    let (client, connection) = tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    format!("postgresql://postgres@127.0.0.1:{}/{name}", cluster.port())
}

fn new_run(input: &str) -> NewRun {
    NewRun {
        agent: "a".into(),
        input: input.into(),
        conversation: None,
        idempotency_key: None,
    }
}

async fn step_cost(cluster: &harnessx_testkit::PgCluster) {
    let url = new_db(cluster, "steps").await;
    let store = PostgresStore::connect(&url).await.expect("store");
    store.create_run(new_run("x")).await.expect("run");
    let lease = store
        .claim_next("bench", 3_600_000)
        .await
        .expect("claim")
        .expect("run")
        .lease;
    let call = ToolCall::json("c1", "lookup", json!({"id": 1}));
    let n = 2000u32;
    let (mut steps, mut bare) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        store.bare_commit().await.expect("warm");
    }
    let before = commits(&url).await;
    for turn in 1..=n {
        let step = Step::Started {
            key: StepKey { turn, index: 0 },
            call: call.clone(),
            policy: ReplayPolicy::Safe,
        };
        let event = RunEvent::ToolCallStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        };
        let t = Instant::now();
        store
            .append_step(&lease, step, vec![event])
            .await
            .expect("step");
        steps.push(t.elapsed());
    }
    let after = commits(&url).await;
    for _ in 0..n {
        let t = Instant::now();
        store.bare_commit().await.expect("commit");
        bare.push(t.elapsed());
    }
    println!(
        "| journal step (append_step, 1 statement) | {} |",
        ms(median(steps))
    );
    println!(
        "| bare one-row commit (INSERT, autocommit) | {} |",
        ms(median(bare))
    );
    // `commits` itself commits once per call (its reading query).
    println!(
        "| commits per step | {:.2} |",
        (after - before - 1) as f64 / f64::from(n)
    );
}

async fn run_cost(cluster: &harnessx_testkit::PgCluster) {
    let url = new_db(cluster, "runs").await;
    let store: Arc<dyn RunStore> = Arc::new(PostgresStore::connect(&url).await.expect("store"));
    let rt = runtime(store, 10, false, 1, Duration::from_secs(30));
    let mut per_step = Vec::new();
    for i in 0..20 {
        let t = Instant::now();
        let run = rt
            .start_run(StartRun::new("a", format!("r{i}")))
            .await
            .expect("start");
        let done = rt.settled(run.id).await.expect("settled");
        assert_eq!(done.state, RunState::Completed);
        // 11 model turns and 10 calls started and finished: 31 journaled steps.
        per_step.push(t.elapsed() / 31);
    }
    println!(
        "| whole run, per journaled step (10 tool turns, scripted model) | {} |",
        ms(median(per_step))
    );
}

async fn answer_to_resumed(cluster: &harnessx_testkit::PgCluster) {
    let url = new_db(cluster, "answers").await;
    let store: Arc<dyn RunStore> = Arc::new(PostgresStore::connect(&url).await.expect("store"));
    let rt = runtime(store, 1, true, 2, Duration::from_secs(30));
    // The answer comes from another store (another process, as an API server would be): the
    // worker learns of it through NOTIFY.
    let other = PostgresStore::connect(&url).await.expect("store");
    let mut samples = Vec::new();
    for i in 0..30 {
        let run = rt
            .start_run(StartRun::new("a", format!("r{i}")))
            .await
            .expect("start");
        assert_eq!(
            rt.settled(run.id).await.expect("settled").state,
            RunState::WaitingInput
        );
        let mut events = rt.subscribe(run.id, 0);
        let t = Instant::now();
        other
            .answer(
                run.id,
                Reply::Answer(Answer::Selections {
                    answers: vec![QuestionAnswer::selected(["Yes"])],
                }),
            )
            .await
            .expect("store")
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
        // Skip the first `running` (before the pause): wait for the second.
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
        samples.push(t.elapsed());
        rt.settled(run.id).await.expect("done");
    }
    println!(
        "| answer (another process) → run claimed again, via NOTIFY | {} |",
        ms(median(samples))
    );
}

async fn dead_worker(cluster: &harnessx_testkit::PgCluster) {
    let url = new_db(cluster, "dead").await;
    let lease = Duration::from_millis(1000);
    let mut samples = Vec::new();
    for i in 0..5 {
        let a: Arc<dyn RunStore> = Arc::new(PostgresStore::connect(&url).await.expect("store"));
        let stall = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let dying = runtime_with(Arc::clone(&a), 1, false, 1, lease, Some(stall));
        let run = dying
            .start_run(StartRun::new("a", format!("r{i}")))
            .await
            .expect("start");
        while a.stats().await.expect("stats").running == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(dying);
        let until = a.stats().await.expect("stats").leases[0].until_ms;
        let b: Arc<dyn RunStore> = Arc::new(PostgresStore::connect(&url).await.expect("store"));
        let rescuer = runtime(Arc::clone(&b), 1, false, 1, lease);
        let done = rescuer.settled(run.id).await.expect("settled");
        assert_eq!(done.state, RunState::Completed);
        let resumed_at = b
            .events_after(run.id, 0, 1000)
            .await
            .expect("events")
            .iter()
            .filter(|e| {
                matches!(
                    e.event,
                    RunEvent::State {
                        state: RunState::Running
                    }
                )
            })
            .count();
        assert_eq!(resumed_at, 2);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis() as i64;
        samples.push(Duration::from_millis(
            u64::try_from(now - until).unwrap_or(0),
        ));
        drop(rescuer);
    }
    println!(
        "| dead worker's run completed by another, after its lease (1 s) lapsed | +{} |",
        ms(median(samples))
    );
}

async fn throughput(cluster: &harnessx_testkit::PgCluster) {
    for workers in 1..=3 {
        let url = new_db(cluster, &format!("tput{workers}")).await;
        let runs = 600;
        let creator = PostgresStore::connect(&url).await.expect("store");
        let mut runtimes = Vec::new();
        for _ in 0..workers {
            let s: Arc<dyn RunStore> = Arc::new(PostgresStore::connect(&url).await.expect("store"));
            runtimes.push(runtime(s, 2, false, 8, Duration::from_secs(30)));
        }
        let t = Instant::now();
        for i in 0..runs {
            creator
                .create_run(new_run(&format!("r{i}")))
                .await
                .expect("run");
        }
        loop {
            let s = creator.stats().await.expect("stats");
            if s.queued + s.running == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "| runs/second, {workers} worker(s) × 8 tasks (3 tool turns, 8 steps a run) | {:.0} |",
            runs as f64 / secs
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let cluster = harnessx_testkit::PgCluster::start().expect("a PostgreSQL cluster");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    println!("| Durable runs: PostgreSQL | median |\n|---|---|");
    rt.block_on(async {
        step_cost(&cluster).await;
        run_cost(&cluster).await;
        answer_to_resumed(&cluster).await;
        dead_worker(&cluster).await;
        throughput(&cluster).await;
    });
}
