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
        let call = |name: &str, args| {
            ModelResponse::default()
                .with_tool_calls(vec![ToolCall::json(format!("c{k}"), name, args)])
                .with_stop_reason(StopReason::ToolUse)
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
        ModelResponse::text("done")
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
                .config(AgentConfig::default().with_planning(false))
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
    // The next transaction id to be assigned: every write transaction takes one when it starts
    // writing and commits (or aborts) once, and this read takes none. (`pg_stat_database`'s
    // counters lag: an idle backend flushes them only after seconds.)
    client
        .query_one(
            "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint",
            &[],
        )
        .await
        .expect("next transaction id")
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
        agent_version: None,
    }
}

/// A TCP proxy in front of PostgreSQL that counts round trips: each time a client connection
/// sends after the server last answered (or first) is one wait for the server on the wire.
struct RoundTrips {
    port: u16,
    count: Arc<std::sync::atomic::AtomicU64>,
}

impl RoundTrips {
    async fn start(pg_port: u16) -> RoundTrips {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let count = Arc::new(AtomicU64::new(0));
        let total = Arc::clone(&count);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = tokio::net::TcpStream::connect(("127.0.0.1", pg_port))
                    .await
                    .expect("connect to PostgreSQL");
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                // True while the client has spoken since the server last did.
                let client_turn = Arc::new(AtomicBool::new(false));
                let (turn, total) = (Arc::clone(&client_turn), Arc::clone(&total));
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = cr.read(&mut buf).await {
                        if n == 0 || sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        if !turn.swap(true, Ordering::SeqCst) {
                            total.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = sr.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        client_turn.store(false, Ordering::SeqCst);
                        if cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        RoundTrips { port, count }
    }

    fn url(&self, db: &str) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/{db}", self.port)
    }

    fn count(&self) -> u64 {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }
}

async fn step_cost(cluster: &harnessx_testkit::PgCluster) {
    let url = new_db(cluster, "steps").await;
    // The store talks through the counting proxy; `commits` reads the counters directly.
    let proxy = RoundTrips::start(cluster.port()).await;
    let store = PostgresStore::connect(&proxy.url("steps"))
        .await
        .expect("store");
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
    let trips_before = proxy.count();
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
    let trips = proxy.count() - trips_before;
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
    println!(
        "| round trips per step (client turns on the wire, counted by a proxy) | {:.2} |",
        trips as f64 / f64::from(n)
    );
    println!(
        "| write transactions (commits) per step | {:.2} |",
        (after - before) as f64 / f64::from(n)
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
                None,
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

/// CPU seconds (user + system) used so far by the processes `pids` and their children.
fn cpu_seconds(pids: &[u32]) -> f64 {
    let tick = 100.0; // USER_HZ on Linux
    let mut total = 0u64;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    for entry in entries.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command's closing parenthesis: state ppid ... utime(12) stime(13).
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let pid: u32 = entry.file_name().to_string_lossy().parse().unwrap_or(0);
        let ppid: u32 = fields.get(1).and_then(|f| f.parse().ok()).unwrap_or(0);
        if pids.contains(&pid) || pids.contains(&ppid) {
            let time = |i: usize| {
                fields
                    .get(i)
                    .and_then(|f| f.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            total += time(11) + time(12);
        }
    }
    total as f64 / tick
}

/// The postmaster's process id (its backends are its children).
fn postmaster_pid(cluster: &harnessx_testkit::PgCluster) -> u32 {
    std::fs::read_to_string(cluster.data_dir().join("postmaster.pid"))
        .ok()
        .and_then(|s| s.lines().next().and_then(|l| l.trim().parse().ok()))
        .expect("postmaster.pid")
}

/// Runs/second with 1, 2 and 3 worker processes (this bench binary run with `--worker URL`),
/// each a runtime with [`worker_tasks`] tasks, draining a queue of runs created beforehand, and
/// where the CPU went: PostgreSQL's processes vs the workers'.
async fn throughput(cluster: &harnessx_testkit::PgCluster) {
    let exe = std::env::current_exe().expect("bench binary");
    let postmaster = postmaster_pid(cluster);
    for workers in 1..=3 {
        let url = new_db(cluster, &format!("tput{workers}")).await;
        let runs = 1000;
        // Every run is queued before the workers start, so the figure is how fast the workers
        // drain a queue — not how fast one client can create runs, which is what an earlier
        // version of this bench measured without meaning to (the runs finished ~30 ms after the
        // last one was created).
        let creator = PostgresStore::connect(&url).await.expect("store");
        for i in 0..runs {
            creator
                .create_run(new_run(&format!("r{i}")))
                .await
                .expect("run");
        }
        if statements_wanted() {
            statements(&url, None).await;
        }
        let pg_before = cpu_seconds(&[postmaster]);
        let t = Instant::now();
        let mut children: Vec<_> = (0..workers)
            .map(|_| {
                harnessx_testkit::ChildProcess::spawn(
                    std::process::Command::new(&exe).args(["--worker", &url]),
                )
                .expect("worker process")
            })
            .collect();
        for child in &mut children {
            child
                .wait_for_line("worker ready", Duration::from_secs(30))
                .expect("worker ready");
        }
        let ready = t.elapsed().as_secs_f64();
        let pids: Vec<u32> = children.iter().map(|c| c.pid()).collect();
        loop {
            let s = creator.stats().await.expect("stats");
            if s.queued + s.running == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let secs = t.elapsed().as_secs_f64();
        let pg = cpu_seconds(&[postmaster]) - pg_before;
        let work = cpu_seconds(&pids);
        println!(
            "| runs/second, {workers} worker process(es) × {} tasks draining {runs} queued runs (2 tool turns: 7 journal steps, claim, finish; process start included, all ready after {ready:.2} s) | {:.0} | CPU: PostgreSQL {:.0}%, workers {:.0}% of one core |",
            worker_tasks(),
            runs as f64 / secs,
            pg / secs * 100.0,
            work / secs * 100.0
        );
        if statements_wanted() {
            statements(&url, Some(runs)).await;
        }
        for child in children {
            child.sigkill().expect("stop worker");
        }
    }
}

/// `DURABLE_PG_STATEMENTS=1`: where PostgreSQL's time goes in [`throughput`], statement by
/// statement (`pg_stat_statements`, loaded by the bench's cluster).
fn statements_wanted() -> bool {
    std::env::var_os("DURABLE_PG_STATEMENTS").is_some()
}

/// Resets the statement counters of `url`'s database (`runs` is `None`), or prints the
/// statements that took the most execution time per run since the reset.
async fn statements(url: &str, runs: Option<usize>) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .expect("pg_stat_statements");
    let Some(runs) = runs else {
        client
            .batch_execute("SELECT pg_stat_statements_reset()")
            .await
            .expect("reset");
        return;
    };
    let rows = client
        .query(
            "SELECT calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 90)
             FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             ORDER BY total_exec_time DESC LIMIT 10",
            &[],
        )
        .await
        .expect("statements");
    for row in rows {
        let (calls, total): (i64, f64) = (row.get(0), row.get(1));
        let query: String = row.get(2);
        println!(
            "    {:>6.2} calls/run {:>7.3} ms/run {:>6.3} ms/call  {query}",
            calls as f64 / runs as f64,
            total / runs as f64,
            total / calls.max(1) as f64
        );
    }
}

/// Worker tasks per worker process: `DURABLE_PG_TASKS`, else 4 (a `Runtime`'s default).
fn worker_tasks() -> usize {
    std::env::var("DURABLE_PG_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(4)
}

/// `--worker URL`: one worker process for [`throughput`]; runs until killed.
fn worker(url: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    rt.block_on(async {
        // `DURABLE_PG_POOL`: the store's connection pool size (default: the store's own).
        let mut config = harnessx_runtime::PostgresConfig::new(url);
        if let Some(pool) = std::env::var("DURABLE_PG_POOL")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            config = config.pool_size(pool);
        }
        let store: Arc<dyn RunStore> =
            Arc::new(PostgresStore::connect_with(config).await.expect("store"));
        let _runtime = runtime(store, 2, false, worker_tasks(), Duration::from_secs(30));
        println!("worker ready");
        std::future::pending::<()>().await;
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--worker") {
        worker(args.get(i + 1).expect("--worker URL"));
        return;
    }
    let options = if statements_wanted() {
        harnessx_testkit::PgOptions::default()
            .setting("shared_preload_libraries", "pg_stat_statements")
    } else {
        harnessx_testkit::PgOptions::default()
    };
    let cluster = harnessx_testkit::PgCluster::start_with(options).expect("a PostgreSQL cluster");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    println!("| Durable runs: PostgreSQL | median |\n|---|---|");
    rt.block_on(async {
        if std::env::var_os("DURABLE_PG_ONLY_THROUGHPUT").is_none() {
            step_cost(&cluster).await;
            run_cost(&cluster).await;
            answer_to_resumed(&cluster).await;
            dead_worker(&cluster).await;
        }
        throughput(&cluster).await;
    });
}
