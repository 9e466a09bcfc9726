//! Knowledge: an embedded full-text knowledge base handed to the agent as a capability adds the
//! read-only `knowledge_search` tool, and the model answers from the passages it finds.
//!
//! ```sh
//! cargo run --example knowledge
//! ```
//!
//! The knowledge base is built in memory from three short documents (`from_dir` indexes a folder
//! of Markdown, `open` a file). It runs offline on a scripted model; with `HARNESSX_MODEL` (and
//! the provider's key) set, a real model searches.

mod common;

use harnessx::knowledge::{Document, KnowledgeBase, SqliteKnowledgeBase};
use harnessx::{Agent, Message, TestModel};
use serde_json::json;

/// The scripted model of an offline run.
fn script() -> TestModel {
    TestModel::new()
        .then_call("knowledge_search", json!({"query": "parental leave weeks"}))
        .then_reply("Parents get 16 weeks of paid leave (handbook/leave.md).")
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    let handbook = SqliteKnowledgeBase::in_memory()?.named("handbook");
    handbook
        .add_documents(vec![
            Document::new(
                "handbook/leave.md",
                "Parental leave is 16 weeks, fully paid, for every parent.",
            )
            .with_title("Leave"),
            Document::new(
                "handbook/expenses.md",
                "Expenses are filed within 30 days with a receipt.",
            )
            .with_title("Expenses"),
            Document::new(
                "handbook/remote.md",
                "Remote work is open to everyone, two office days a month.",
            )
            .with_title("Remote work"),
        ])
        .await?;
    let agent = Agent::builder()
        .model(common::model_or(script())?)
        .instructions("Answer from the handbook and name the document you used.")
        .capability(handbook)
        .build()?;
    let result = agent.run("How long is parental leave?").await?;
    for message in &result.messages {
        if let Message::Tool { name, content, .. } = message {
            println!("{name}:\n{content}");
        }
    }
    println!("assistant: {}", result.output);
    Ok(())
}
