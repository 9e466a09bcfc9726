//! Typed output: `run_typed::<T>()` sends `T`'s JSON Schema as the shape of the final answer
//! (the provider's structured output, where it has one) and parses the answer into `T`. An
//! answer that does not fit goes back to the model with the reason.
//!
//! ```sh
//! cargo run --example typed_output
//! ```
//!
//! It runs offline on a scripted model whose first answer is prose, so the retry shows; with
//! `HARNESSX_MODEL` (and the provider's key) set, a real model answers.

mod common;

use harnessx::{Agent, TestModel, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// What the agent must answer with.
#[derive(Debug, Deserialize, JsonSchema)]
struct InvoiceSummary {
    /// Who owes the money.
    customer: String,
    /// The amount due, in cents.
    total_cents: u64,
    /// Whether the due date has passed.
    overdue: bool,
}

/// Look an invoice up by its id.
///
/// Args:
///     id: The invoice id, such as `A-17`.
#[tool(permission = "allow", replay_policy = "safe")]
fn lookup_invoice(id: String) -> Value {
    json!({"id": id, "customer": "Acme", "total_cents": 12_900, "due": "2026-01-31", "paid": false, "today": "2026-02-10"})
}

/// The scripted model of an offline run.
fn script() -> TestModel {
    TestModel::new()
        .then_call("lookup_invoice", json!({"id": "A-17"}))
        .then_reply("Acme owes 129.00 and is late.")
        .then_reply(r#"{"customer": "Acme", "total_cents": 12900, "overdue": true}"#)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    let agent = Agent::builder()
        .model(common::model_or(script())?)
        .tool(lookup_invoice)
        .build()?;
    let typed = agent
        .run_typed::<InvoiceSummary>("Summarise invoice A-17.")
        .await?;
    let InvoiceSummary {
        customer,
        total_cents,
        overdue,
    } = typed.output;
    println!("customer: {customer}, total: {total_cents} cents, overdue: {overdue}");
    println!("{} model requests", typed.result.turns);
    Ok(())
}
