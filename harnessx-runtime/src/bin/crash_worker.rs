//! A worker process for the crash tests (`tests/crash.rs`): it drives runs over a SQLite file
//! and appends a line to a log before and after every model call and tool handler, so a test
//! that `kill -9`s it can count what ran.
//!
//! ```text
//! crash_worker <db> <log> <runs> <workers> [--settle]
//! ```
//!
//! It starts runs `r0`..`r<runs-1>` (idempotency keys make a restart find the same runs). Each
//! run: the model calls `safe_step` (safe), then `manual_step` (manual), then answers. With
//! `--settle` it answers every recovery question "took effect" (a person would) and exits once
//! every run completed; without, it works until killed. `CRASH_MODEL_MS` and `CRASH_TOOL_MS`
//! slow the model and the tools down (`CRASH_MANUAL_MS`, when set, the manual tool alone).

use std::io::Write;
use std::time::Duration;

use harnessx::model::FunctionModel;
use harnessx::{
    AgentConfig, Message, ModelRequest, ModelResponse, ReplayPolicy, StopReason, ToolCall,
    ToolDefinition, ToolOutput, handler_fn,
};
use harnessx_runtime::{
    Answer, PendingKind, RecoveryChoice, RunState, Runtime, SqliteStore, StartRun,
};
use serde_json::json;

fn log(path: &str, line: &str) {
    // One write per line in append mode: a kill never leaves half a line behind.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        let _ = f.write_all(format!("{} {line}\n", std::process::id()).as_bytes());
    }
}

fn delay(var: &str) -> Duration {
    Duration::from_millis(
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    )
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
            log(&log_path, &format!("model begin {run} {turn}"));
            tokio::time::sleep(delay("CRASH_MODEL_MS")).await;
            log(&log_path, &format!("model end {run} {turn}"));
            let call = |name: &str| {
                ModelResponse::default()
                    .with_tool_calls(vec![ToolCall::json(
                        format!("{run}-{turn}"),
                        name,
                        json!({}),
                    )])
                    .with_stop_reason(StopReason::ToolUse)
            };
            Ok(match turn {
                1 => call("safe_step"),
                2 => call("manual_step"),
                _ => ModelResponse::text(format!("{run} done")),
            })
        }
    })
}

fn step(name: &'static str, policy: ReplayPolicy, log_path: String) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "A step of the crash test.",
        json!({"type": "object"}),
        handler_fn(move |_, ctx| {
            let log_path = log_path.clone();
            async move {
                log(&log_path, &format!("tool begin {name} {}", ctx.call_id()));
                let slow = match policy {
                    ReplayPolicy::Manual if std::env::var_os("CRASH_MANUAL_MS").is_some() => {
                        delay("CRASH_MANUAL_MS")
                    }
                    _ => delay("CRASH_TOOL_MS"),
                };
                tokio::time::sleep(slow).await;
                log(&log_path, &format!("tool end {name} {}", ctx.call_id()));
                Ok(ToolOutput::text(format!("{name} ok")))
            }
        }),
    )
    .with_replay_policy(policy)
    .with_timeout_seconds(600.0)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, log_path, runs, workers, rest @ ..] = &args[..] else {
        return Err("usage: crash_worker <db> <log> <runs> <workers> [--settle]".into());
    };
    let settle = rest.iter().any(|a| a == "--settle");
    let runs: usize = runs.parse()?;
    let log_for_agent = log_path.clone();
    let runtime = Runtime::builder()
        .store(SqliteStore::open(db)?)
        .agent("crash", move |b| {
            b.model(model(log_for_agent.clone()))
                .tool(step("safe_step", ReplayPolicy::Safe, log_for_agent.clone()))
                .tool(step(
                    "manual_step",
                    ReplayPolicy::Manual,
                    log_for_agent.clone(),
                ))
                .config(AgentConfig::default().with_planning(false))
        })
        .workers(workers.parse()?)
        .build()?;
    let mut ids = Vec::with_capacity(runs);
    for i in 0..runs {
        let run = runtime
            .start_run(StartRun::new("crash", format!("r{i}")).idempotency_key(format!("r{i}")))
            .await?;
        ids.push(run.id);
    }
    log(log_path, "started");
    if !settle {
        std::future::pending::<()>().await;
    }
    for id in ids {
        loop {
            let run = runtime.settled(id).await?;
            match run.state {
                RunState::Completed => break,
                RunState::WaitingInput => {
                    let recovery = run
                        .needs_input
                        .iter()
                        .any(|p| matches!(p.pending.kind, PendingKind::Recovery { .. }));
                    if !recovery {
                        return Err(format!("{id} waits for something other than recovery").into());
                    }
                    log(log_path, &format!("recovery {id}"));
                    runtime
                        .answer(
                            id,
                            Answer::Recovery {
                                choice: RecoveryChoice::TookEffect { result: None },
                            },
                        )
                        .await?;
                }
                state => return Err(format!("{id} ended {state}: {:?}", run.error).into()),
            }
        }
    }
    log(log_path, "settled");
    Ok(())
}
