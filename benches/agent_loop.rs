//! The agent loop's cost per model call over a short and a long run: a run of N turns, each a
//! model call (an in-process [`FunctionModel`]) that calls one trivial async tool, then a final
//! answer. The figure is the run's time divided by its model calls, for N = 20 and N = 500: a
//! loop whose per-turn work grew with the conversation would show it in the 500-turn figure.
//!
//! Run: `cargo bench --bench agent_loop`. Figures are recorded in BENCHMARKS.md.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use harnessx::model::{FunctionModel, TurnInfo};
use harnessx::{
    Agent, AgentConfig, ModelRequest, ModelResponse, ToolCall, ToolDefinition, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde_json::json;

/// A model that calls `add` until the conversation holds `calls` tool results, then answers.
/// It decides from the number of messages only, so its own cost does not grow with the run.
fn model(calls: usize) -> FunctionModel {
    FunctionModel::new(move |request: &ModelRequest, _: TurnInfo| {
        // One user message, then an assistant message and a tool result per call.
        let done = request.messages.len().saturating_sub(1) / 2;
        if done >= calls {
            return ModelResponse::text(format!("{done} calls made"));
        }
        ModelResponse::default().with_tool_calls(vec![ToolCall::new(
            format!("c{done}"),
            "add",
            r#"{"a": 2, "b": 3}"#,
        )])
    })
}

fn agent(calls: usize) -> Agent {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "add",
            "Add two numbers.",
            json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": false
            }),
            handler_fn(|args, _ctx| async move {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                Ok(ToolOutput::text(sum.to_string()))
            }),
        ))
        .expect("register");
    Agent::builder()
        .model(model(calls))
        .registry(registry)
        .config(AgentConfig::default().with_max_turns(calls + 1))
        .build()
        .expect("agent")
}

fn per_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut group = c.benchmark_group("agent_loop");
    group.sample_size(20);
    for turns in [20_usize, 500] {
        // `turns` model calls: `turns - 1` that call the tool, and the final answer.
        let agent = agent(turns - 1);
        group.bench_with_input(
            BenchmarkId::new("per_model_call_async_tool", turns),
            &turns,
            |b, &turns| {
                b.iter_custom(|runs| {
                    let mut total = Duration::ZERO;
                    for _ in 0..runs {
                        let start = Instant::now();
                        let result = rt.block_on(agent.run("add")).expect("run");
                        total += start.elapsed();
                        assert_eq!(result.turns, turns);
                    }
                    total / turns as u32
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, per_call);
criterion_main!(benches);
