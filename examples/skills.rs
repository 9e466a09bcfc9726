//! Skills: a folder of Agent Skills (`examples/skills/`, one `SKILL.md` per skill) handed to the
//! agent as a capability adds the read-only `Skill` tool; the system prompt lists each skill's
//! name and description, and the model loads a skill's instructions when a task needs them.
//!
//! ```sh
//! cargo run --example skills
//! ```
//!
//! It runs offline on a scripted model; with `HARNESSX_MODEL` (and the provider's key) set, a
//! real model decides when to load the skill.

mod common;

use harnessx::skills::Skills;
use harnessx::{Agent, Message, TestModel};
use serde_json::json;

/// The scripted model of an offline run.
fn script() -> TestModel {
    TestModel::new()
        .then_call("Skill", json!({"name": "release-notes"}))
        .then_reply(
            "## 1.4.0 — 2026-03-02\n\n**Fixed**\n- Exports no longer time out on large projects.",
        )
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    let skills = Skills::load(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills"))?;
    for skill in skills.iter() {
        println!("skill: {} — {}", skill.name(), skill.description());
    }
    let agent = Agent::builder()
        .model(common::model_or(script())?)
        .capability(skills)
        .build()?;
    let prompt = "Write the release notes of 1.4.0: we fixed export timeouts on large projects.";
    let result = agent.run(prompt).await?;
    for message in &result.messages {
        if let Message::Tool { name, content, .. } = message {
            let first = content.lines().next().unwrap_or_default();
            println!(
                "{name} returned {} lines, starting: {first}",
                content.lines().count()
            );
        }
    }
    println!("assistant:\n{}", result.output);
    Ok(())
}
