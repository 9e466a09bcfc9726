//! A durable run that outlives its process: the agent asks the user a question, the process
//! exits, and a second invocation answers it; the run then completes where it stopped.
//!
//! ```sh
//! cargo run --example durable            # starts the run; it pauses on a question; exits
//! cargo run --example durable -- JSON    # answers it (CSV or JSON); the run completes
//! ```
//!
//! It runs offline on a scripted model, over a SQLite file in the system's temporary directory
//! (`HARNESSX_DURABLE_DB` picks another path). Nothing is redone on the second invocation: the
//! model turns and the tool call made before the question are read back from the journal.

use std::path::PathBuf;
use std::time::Duration;

use harnessx::model::{FunctionModel, ModelRequest, ModelResponse};
use harnessx::{
    Message, ReplayPolicy, StopReason, ToolCall, ToolDefinition, ToolOutput, handler_fn,
};
use harnessx_builtin::ask_user::ask_user_questions_tool;
use harnessx_runtime::{
    Answer, PendingKind, QuestionAnswer, QuestionForm, RunState, Runtime, SqliteStore, StartRun,
};
use serde_json::json;

/// The model: look the order up, ask for the export format, then answer with what it saw.
/// It decides by how far the run has got, so a resumed run gets the same answers.
fn model() -> FunctionModel {
    FunctionModel::new(|request: &ModelRequest, _| {
        let since_user: Vec<&Message> = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .collect();
        let turns = since_user
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let call = |name: &str, args| {
            ModelResponse::default()
                .with_tool_calls(vec![ToolCall::json(format!("call_{turns}"), name, args)])
                .with_stop_reason(StopReason::ToolUse)
        };
        match turns {
            0 => call("lookup_order", json!({"id": "A-17"})),
            1 => call(
                "ask_user",
                json!({"questions": [{"header": "Format", "question": "Export order A-17 as?",
                    "options": [{"label": "CSV"}, {"label": "JSON"}]}]}),
            ),
            _ => {
                let answer = since_user
                    .iter()
                    .find_map(|m| match m {
                        Message::Tool { content, .. } => Some(content.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                ModelResponse::text(format!("Exporting order A-17. {answer}"))
            }
        }
    })
}

fn lookup_order() -> ToolDefinition {
    ToolDefinition::new(
        "lookup_order",
        "Look an order up by id.",
        json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
        handler_fn(|args, _| async move {
            println!("  (lookup_order ran for {})", args["id"]);
            Ok(ToolOutput::json(json!({"id": args["id"], "items": 3})))
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe)
}

fn db_path() -> PathBuf {
    std::env::var_os("HARNESSX_DURABLE_DB")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("harnessx-durable-example.db"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = db_path();
    let answer = std::env::args().nth(1);
    if answer.is_none() {
        // A fresh start: forget an earlier demonstration.
        for suffix in ["", "-wal", "-shm", "-lock"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    let runtime = Runtime::builder()
        .store(SqliteStore::open(&path)?)
        .agent("orders", |b| {
            b.model(model())
                .tool(lookup_order())
                .tool(ask_user_questions_tool(
                    |_| async { None },
                    Duration::from_secs(600),
                ))
        })
        .workers(1)
        .build()?;
    // The same idempotency key finds the same run in both invocations.
    let run = runtime
        .start_run(StartRun::new("orders", "Export order A-17").idempotency_key("durable-example"))
        .await?;
    let Some(label) = answer else {
        let run = runtime.settled(run.id).await?;
        println!("{} is {}.", run.id, run.state);
        for pending in &run.needs_input {
            if let PendingKind::Question {
                form: QuestionForm::Structured { questions },
                ..
            } = &pending.pending.kind
            {
                for q in questions {
                    let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
                    println!("The agent asks: {} ({})", q.question, labels.join(" / "));
                }
            }
        }
        println!(
            "This process now exits; the run waits in {}.\nAnswer it with: cargo run --example durable -- JSON",
            path.display()
        );
        // Stop the workers before the process goes (a run they were driving would go back to
        // the queue as last journaled; this one already waits and holds nothing).
        runtime.shutdown().await;
        return Ok(());
    };
    if runtime.run(run.id).await?.state == RunState::WaitingInput {
        println!("Answering {} with {label}.", run.id);
        runtime
            .answer(
                run.id,
                Answer::Selections {
                    answers: vec![QuestionAnswer::selected([label])],
                },
            )
            .await?;
    }
    let run = runtime.settled(run.id).await?;
    runtime.shutdown().await;
    match (run.state, run.result) {
        (RunState::Completed, Some(result)) => println!("{} completed: {}", run.id, result.output),
        (state, _) => {
            return Err(format!(
                "{} ended {state}: {}",
                run.id,
                run.error.unwrap_or_default()
            )
            .into());
        }
    }
    Ok(())
}
