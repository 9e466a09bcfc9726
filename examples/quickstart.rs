//! Quickstart: two tools, an agent that calls them, and the conversation printed as it happens.
//!
//! ```sh
//! cargo run --example quickstart
//! ```
//!
//! It runs offline on a scripted model. The tools are real: the answer is computed from what
//! they return.

mod common;

use futures::StreamExt;
use harnessx::agent::AgentEvent;
use harnessx::model::{FunctionModel, ModelRequest, ModelResponse, TurnInfo};
use harnessx::{Agent, Message, ToolCall, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Count the words in a text.
///
/// Args:
///     text: The text to count.
#[tool(replay_policy = "safe")]
fn word_count(text: String) -> usize {
    text.split_whitespace().count()
}

/// A temperature unit.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// Convert a temperature between Celsius and Fahrenheit.
///
/// Args:
///     value: The temperature.
///     to: The unit to convert to.
#[tool(replay_policy = "safe")]
async fn convert_temperature(value: f64, to: Unit) -> f64 {
    let converted = match to {
        Unit::Fahrenheit => value * 9.0 / 5.0 + 32.0,
        Unit::Celsius => (value - 32.0) * 5.0 / 9.0,
    };
    (converted * 10.0).round() / 10.0
}

/// The scripted model: first it calls both tools at once, then it answers from their results.
fn scripted_turn(request: &ModelRequest, info: TurnInfo) -> ModelResponse {
    if info.turn == 0 {
        return ModelResponse::text("Let me check both.").with_tool_calls(vec![
            ToolCall::json(
                "call_1",
                "word_count",
                json!({"text": "The quick brown fox jumps over the lazy dog"}),
            ),
            ToolCall::json(
                "call_2",
                "convert_temperature",
                json!({"value": 21, "to": "fahrenheit"}),
            ),
        ]);
    }
    let result = |id: &str| {
        request.messages.iter().find_map(|m| match m {
            Message::Tool {
                call_id, content, ..
            } if call_id == id => Some(content.clone()),
            _ => None,
        })
    };
    ModelResponse::text(format!(
        "The sentence has {} words, and 21 °C is {} °F.",
        result("call_1").unwrap_or_else(|| "an unknown number of".into()),
        result("call_2").unwrap_or_else(|| "an unknown number of".into()),
    ))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    let agent = Agent::builder()
        .model(common::model_or(
            FunctionModel::new(scripted_turn).with_name("scripted"),
        )?)
        .instructions("You answer questions using the tools you have.")
        .tool(word_count)
        .tool(convert_temperature)
        .build()?;

    let prompt = "How many words are in 'The quick brown fox jumps over the lazy dog', \
                  and what is 21 °C in Fahrenheit?";
    println!("user: {prompt}");
    let mut events = agent.run_stream(prompt);
    let mut at_line_start = true;
    while let Some(event) = events.next().await {
        match event? {
            AgentEvent::TextDelta { text } => {
                if at_line_start {
                    print!("assistant: ");
                    at_line_start = false;
                }
                print!("{text}");
            }
            AgentEvent::TurnCompleted { .. } if !at_line_start => {
                println!();
                at_line_start = true;
            }
            AgentEvent::ToolCallStart {
                name, arguments, ..
            } => println!("  → {name}({arguments})"),
            AgentEvent::ToolResult { result } => {
                println!("  ← {}: {}", result.name, result.content)
            }
            AgentEvent::Completed { result } => {
                println!(
                    "\n{} turns, {} messages in the transcript.",
                    result.turns,
                    result.messages.len()
                );
            }
            _ => {}
        }
    }
    agent.close().await;
    Ok(())
}
