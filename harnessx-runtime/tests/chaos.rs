//! Chaos on PostgreSQL: 3 worker processes (this test binary, re-run in worker mode) drive
//! 1,000 runs mixing safe tools, manual tools, questions and approvals that this process
//! answers like a person would, while it `kill -9`s a random worker every few hundred ms (a
//! bounded number of times) and restarts it, and restarts PostgreSQL itself once. At the end:
//! every run completed, no manual handler ran twice, no journaled step was redone, and every
//! acknowledged answer was used exactly once.
//!
//! `harness = false`: `main` is either the test or, with `HARNESSX_CHAOS_WORKER` set, a worker.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harnessx::model::FunctionModel;
use harnessx::{
    AgentConfig, Message, ModelRequest, ModelResponse, PermissionLevel, ReplayPolicy, StopReason,
    ToolCall, ToolDefinition, ToolOutput, handler_fn,
};
use harnessx_builtin::ask_user::ask_user_tool;
use harnessx_runtime::store::{NewRun, Reply};
use harnessx_runtime::{
    Answer, Decision, PendingKind, PostgresConfig, PostgresStore, QuestionAnswer, RecoveryChoice,
    RunId, RunStore, Runtime,
};
use serde_json::json;

const RUNS: usize = 1000;
const WORKERS: usize = 3;
const KILLS: usize = 12;
const KILL_EVERY: Duration = Duration::from_millis(300);
const DEADLINE: Duration = Duration::from_secs(100);
const KINDS: [&str; 4] = ["safe", "manual", "ask", "approve"];

fn log(path: &str, line: &str) {
    // One write per line in append mode: a kill never leaves half a line behind.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

fn model(log_path: String) -> FunctionModel {
    FunctionModel::new_async(move |request: ModelRequest, _| {
        let log_path = log_path.clone();
        async move {
            let run = request
                .messages
                .iter()
                .find_map(|m| match m {
                    Message::User { content, .. } => Some(content.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            let turn = 1 + request
                .messages
                .iter()
                .filter(|m| matches!(m, Message::Assistant { .. }))
                .count();
            log(&log_path, &format!("model {run} {turn}"));
            let last = request.messages.iter().rev().find_map(|m| match m {
                Message::Tool { content, .. } => Some(content.clone()),
                _ => None,
            });
            let call = |name: &str, args| {
                ModelResponse::default()
                    .with_tool_calls(vec![ToolCall::json(format!("{run}-{turn}"), name, args)])
                    .with_stop_reason(StopReason::ToolUse)
            };
            let kind = run.split('-').next().unwrap_or_default();
            Ok(match (turn, kind) {
                (1, "safe") => call("safe_step", json!({})),
                (1, "manual") => call("manual_step", json!({})),
                (1, "ask") => call(
                    "ask_user",
                    json!({"question": "Go on?", "choices": [format!("yes-{run}"), "no"]}),
                ),
                (1, _) => call("guarded_step", json!({})),
                _ => ModelResponse::text(format!("saw: {}", last.unwrap_or_default())),
            })
        }
    })
}

fn step(name: &'static str, policy: ReplayPolicy, log_path: String) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "A step of the chaos test.",
        json!({"type": "object"}),
        handler_fn(move |_, ctx| {
            let log_path = log_path.clone();
            async move {
                log(&log_path, &format!("tool {name} {}", ctx.call_id()));
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(ToolOutput::text(format!("{name} ok")))
            }
        }),
    )
    .with_replay_policy(policy)
    .with_timeout_seconds(600.0)
}

/// Worker mode: drive runs until killed.
async fn worker(url: String, log_path: String) {
    let store = PostgresStore::connect_with(PostgresConfig::new(url).pool_size(6))
        .await
        .expect("the worker connects");
    let _runtime = Runtime::builder()
        .store(store)
        .agent("chaos", move |b| {
            b.model(model(log_path.clone()))
                .tool(step("safe_step", ReplayPolicy::Safe, log_path.clone()))
                .tool(step("manual_step", ReplayPolicy::Manual, log_path.clone()))
                .tool(
                    step("guarded_step", ReplayPolicy::Safe, log_path.clone())
                        .with_permission(PermissionLevel::Ask),
                )
                .tool(ask_user_tool(|_q: String, _c: Vec<String>| async { None }))
                .config(AgentConfig::default().with_planning(false))
        })
        .workers(8)
        .lease(Duration::from_millis(600))
        .build()
        .expect("the runtime builds");
    println!("ready");
    std::future::pending::<()>().await;
}

fn spawn_worker(url: &str, log_path: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env("HARNESSX_CHAOS_WORKER", url)
        .env("HARNESSX_CHAOS_LOG", log_path)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// What the "person" (this process) answered and had acknowledged: (run, turn, index) → text.
type Acked = HashMap<(i64, u32, u32), String>;

/// Answers every waiting run as a person would; returns how many answers were acknowledged.
async fn answer_waiting(store: &PostgresStore, waiting: Vec<i64>, acked: &mut Acked) -> usize {
    let mut n = 0;
    for id in waiting {
        let Ok(Some(run)) = store.run(RunId(id)).await else {
            continue;
        };
        let Some(p) = run.pending.first() else {
            continue;
        };
        let (reply, said) = match &p.pending.kind {
            PendingKind::Question { .. } => {
                let label = format!("yes-{}", run.input);
                (
                    Reply::Answer(Answer::Selections {
                        answers: vec![QuestionAnswer::selected([label.clone()])],
                    }),
                    label,
                )
            }
            PendingKind::Approval { .. } => {
                (Reply::Decision(Decision::AllowOnce), "allow".to_owned())
            }
            PendingKind::Recovery { .. } => (
                Reply::Answer(Answer::Recovery {
                    choice: RecoveryChoice::TookEffect { result: None },
                }),
                "took effect".to_owned(),
            ),
        };
        // Only an `Ok` is acknowledged; an error (the run moved on, the server restarting)
        // promises nothing, and the run is looked at again on the next round.
        if let Ok(Ok(_)) = store.answer(RunId(id), reply).await {
            assert!(
                acked
                    .insert((id, p.pending.key.turn, p.pending.key.index), said)
                    .is_none(),
                "run {id}: the same pending item was acknowledged twice"
            );
            n += 1;
        }
    }
    n
}

async fn query(url: &str, sql: &str) -> Option<Vec<tokio_postgres::Row>> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .ok()?;
    tokio::spawn(connection);
    client.query(sql, &[]).await.ok()
}

async fn chaos() {
    let Some(mut cluster) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let url = cluster.url();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("worker.log").display().to_string();
    let store = PostgresStore::connect(&url).await.unwrap();
    for i in 0..RUNS {
        let input = format!("{}-{i}", KINDS[i % KINDS.len()]);
        store
            .create_run(NewRun {
                agent: "chaos".into(),
                input,
                conversation: None,
                idempotency_key: None,
                agent_version: None,
            })
            .await
            .unwrap();
    }
    let mut workers: Vec<Child> = (0..WORKERS)
        .map(|_| spawn_worker(&url, &log_path))
        .collect();
    let start = Instant::now();
    let mut kills = 0;
    let mut restarted = false;
    let mut last_kill = Instant::now();
    let mut acked = Acked::new();
    let mut seed = u64::from(std::process::id());
    loop {
        assert!(
            start.elapsed() < DEADLINE,
            "not settled after {DEADLINE:?}: {kills} kills; server log:\n{}",
            cluster.log()
        );
        if kills < KILLS && last_kill.elapsed() >= KILL_EVERY {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let victim = (seed >> 33) as usize % WORKERS;
            workers[victim].kill().unwrap();
            workers[victim].wait().unwrap();
            workers[victim] = spawn_worker(&url, &log_path);
            kills += 1;
            last_kill = Instant::now();
            if kills == KILLS / 2 && !restarted {
                cluster = tokio::task::spawn_blocking(move || {
                    cluster
                        .restart()
                        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.log()));
                    cluster
                })
                .await
                .unwrap();
                restarted = true;
            }
        }
        let Some(rows) = query(
            &url,
            "SELECT id, state FROM runs WHERE state <> 'completed'",
        )
        .await
        else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let failed: Vec<i64> = rows
            .iter()
            .filter(|r| ["failed", "cancelled"].contains(&r.get::<_, &str>(1)))
            .map(|r| r.get(0))
            .collect();
        assert!(failed.is_empty(), "runs failed: {failed:?}");
        if rows.is_empty() && kills == KILLS {
            break;
        }
        let waiting = rows
            .iter()
            .filter(|r| r.get::<_, &str>(1) == "waiting_input")
            .map(|r| r.get(0))
            .collect();
        answer_waiting(&store, waiting, &mut acked).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for mut w in workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    assert!(restarted);
    check(&url, &log_path, &acked).await;
    println!(
        "chaos: {RUNS} runs completed in {:.1} s with {kills} kills and a server restart; {} answers",
        start.elapsed().as_secs_f64(),
        acked.len()
    );
}

async fn check(url: &str, log_path: &str, acked: &Acked) {
    // No journaled model turn, finish or reply is ever written twice...
    let dup = query(
        url,
        "SELECT run_id, kind, turn, idx FROM steps WHERE kind IN ('turn', 'finished', 'replied')
         GROUP BY run_id, kind, turn, idx HAVING COUNT(*) > 1",
    )
    .await
    .unwrap();
    assert!(dup.is_empty(), "{} steps were journaled twice", dup.len());
    // ...and no call is started again once it finished.
    let redone = query(
        url,
        "SELECT s.run_id FROM steps s JOIN steps f ON f.run_id = s.run_id AND f.turn = s.turn
           AND f.idx = s.idx AND f.kind = 'finished' AND s.kind = 'started' AND s.seq > f.seq",
    )
    .await
    .unwrap();
    assert!(
        redone.is_empty(),
        "{} finished calls were started again",
        redone.len()
    );
    // No manual handler ran twice.
    let log = std::fs::read_to_string(log_path).unwrap();
    let mut manual: HashMap<&str, usize> = HashMap::new();
    for line in log.lines() {
        if let Some(call) = line.strip_prefix("tool manual_step ") {
            *manual.entry(call).or_default() += 1;
        }
    }
    let twice: Vec<_> = manual.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "manual handlers ran twice: {twice:?}");
    // Every acknowledged answer is journaled exactly once, and questions' answers reached the
    // model (the final output quotes the tool result).
    let replies: HashSet<(i64, u32, u32)> = query(
        url,
        "SELECT run_id, turn, idx FROM steps WHERE kind = 'replied'",
    )
    .await
    .unwrap()
    .iter()
    .map(|r| {
        (
            r.get(0),
            r.get::<_, i32>(1) as u32,
            r.get::<_, i32>(2) as u32,
        )
    })
    .collect();
    let outputs: HashMap<i64, String> = query(url, "SELECT id, result FROM runs")
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get::<_, Option<String>>(1).unwrap_or_default()))
        .collect();
    for ((run, turn, idx), said) in acked {
        assert!(
            replies.contains(&(*run, *turn, *idx)),
            "run {run}: acknowledged answer lost"
        );
        if said.starts_with("yes-") {
            assert!(
                outputs[run].contains(said.as_str()),
                "run {run}: answer `{said}` not used"
            );
        }
    }
    let questions = RUNS / KINDS.len();
    let answered_questions = acked.values().filter(|s| s.starts_with("yes-")).count();
    assert_eq!(
        answered_questions, questions,
        "every question is answered once"
    );
}

fn main() {
    if let Ok(url) = std::env::var("HARNESSX_CHAOS_WORKER") {
        let log_path = std::env::var("HARNESSX_CHAOS_LOG").unwrap();
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(worker(url, log_path));
        return;
    }
    // `cargo test -- <filter>`: run only when the filter (if any) matches this test's name.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.is_some_and(|f| !"chaos_on_postgres".contains(f.as_str())) {
        return;
    }
    println!("running 1 test");
    tokio::runtime::Runtime::new().unwrap().block_on(chaos());
    println!("test chaos_on_postgres ... ok");
}
