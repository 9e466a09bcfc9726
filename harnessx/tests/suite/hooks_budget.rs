//! Usage budgets: each limit stops the run cleanly at the first step past it, naming the limit
//! and the value reached; every run of an agent gets the whole budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx::agent::AgentError;
use harnessx::hooks::{UsageLimit, UsageLimits};
use harnessx::model::{ModelResponse, TestModel};
use harnessx::{Agent, AgentConfig, ToolCall, Usage};
use serde_json::json;

use super::agent_support::counting_tool;

/// A turn calling `count` `calls` times, reporting `input`/`output` tokens.
fn turn(calls: usize, input: u64, output: u64) -> ModelResponse {
    ModelResponse::tool_calls(
        (0..calls).map(|i| ToolCall::json(format!("c{i}"), "count", json!({}))),
    )
    .with_usage(Usage::new(input, output))
}

fn answer(input: u64, output: u64) -> ModelResponse {
    turn(0, input, output).with_content("done")
}

fn agent(model: &TestModel, limits: UsageLimits, count: &Arc<AtomicUsize>) -> Agent {
    Agent::builder()
        .model(model.clone())
        .tool(counting_tool("count", Arc::clone(count)))
        .config(AgentConfig::default().with_planning(false))
        .usage_limits(limits)
        .build()
        .unwrap()
}

fn exceeded(error: &AgentError) -> (UsageLimit, u64, u64) {
    match error {
        AgentError::UsageLimitExceeded {
            limit,
            max,
            reached,
        } => (*limit, *max, *reached),
        other => panic!("expected a usage limit, got {other:?}"),
    }
}

#[tokio::test]
async fn tool_calls_stop_at_the_first_call_past_the_limit() {
    let count = Arc::new(AtomicUsize::new(0));
    let model = TestModel::from_responses([turn(2, 0, 0), turn(3, 0, 0), answer(0, 0)]);
    let limits = UsageLimits {
        tool_calls: Some(3),
        ..UsageLimits::default()
    };
    let error = agent(&model, limits, &count).run("Go").await.unwrap_err();
    assert_eq!(exceeded(&error), (UsageLimit::ToolCalls, 3, 4));
    // Two calls of the first batch and the first of the second ran; the rest did not.
    assert_eq!(count.load(Ordering::SeqCst), 3);
    assert_eq!(model.requests().len(), 2, "the model is not asked again");
    assert_eq!(
        error.to_string(),
        "the run passed its usage limit on `tool_calls`: it reached 4, over the limit of 3; \
         raise `UsageLimits::tool_calls` or split the task into smaller runs"
    );
}

#[tokio::test]
async fn model_requests_stop_before_the_request_past_the_limit() {
    let count = Arc::new(AtomicUsize::new(0));
    let model = TestModel::from_responses([turn(1, 0, 0), turn(1, 0, 0), answer(0, 0)]);
    let limits = UsageLimits {
        model_requests: Some(2),
        ..UsageLimits::default()
    };
    let error = agent(&model, limits, &count).run("Go").await.unwrap_err();
    assert_eq!(exceeded(&error), (UsageLimit::ModelRequests, 2, 3));
    assert_eq!(model.requests().len(), 2);
    assert_eq!(model.remaining(), 1, "the third request was never made");
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn input_tokens_stop_as_soon_as_a_response_passes_the_limit() {
    let count = Arc::new(AtomicUsize::new(0));
    let model = TestModel::from_responses([turn(1, 10, 1), turn(1, 20, 1), answer(5, 1)]);
    let limits = UsageLimits {
        input_tokens: Some(25),
        ..UsageLimits::default()
    };
    let error = agent(&model, limits, &count).run("Go").await.unwrap_err();
    assert_eq!(exceeded(&error), (UsageLimit::InputTokens, 25, 30));
    // The second turn's calls never ran: the run stopped on its response.
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn output_tokens_stop_as_soon_as_a_response_passes_the_limit() {
    let count = Arc::new(AtomicUsize::new(0));
    let model = TestModel::from_responses([turn(1, 1, 40), turn(1, 1, 40), answer(1, 1)]);
    let limits = UsageLimits {
        output_tokens: Some(79),
        ..UsageLimits::default()
    };
    let error = agent(&model, limits, &count).run("Go").await.unwrap_err();
    assert_eq!(exceeded(&error), (UsageLimit::OutputTokens, 79, 80));
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn total_tokens_stop_as_soon_as_a_response_passes_the_limit() {
    let count = Arc::new(AtomicUsize::new(0));
    let model = TestModel::from_responses([turn(1, 30, 10), turn(1, 30, 10), answer(30, 10)]);
    let limits = UsageLimits {
        total_tokens: Some(100),
        ..UsageLimits::default()
    };
    let error = agent(&model, limits, &count).run("Go").await.unwrap_err();
    assert_eq!(exceeded(&error), (UsageLimit::TotalTokens, 100, 120));
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn a_run_exactly_at_its_limits_completes_and_each_run_gets_the_whole_budget() {
    let count = Arc::new(AtomicUsize::new(0));
    let model =
        TestModel::from_responses([turn(2, 10, 5), answer(10, 5), turn(2, 10, 5), answer(10, 5)]);
    let limits = UsageLimits {
        tool_calls: Some(2),
        model_requests: Some(2),
        input_tokens: Some(20),
        output_tokens: Some(10),
        total_tokens: Some(30),
    };
    let agent = agent(&model, limits, &count);
    assert_eq!(agent.run("First").await.unwrap().output, "done");
    assert_eq!(agent.run("Second").await.unwrap().output, "done");
    assert_eq!(count.load(Ordering::SeqCst), 4);
}

#[test]
fn limits_read_from_configuration_refuse_unknown_fields() {
    let limits: UsageLimits = serde_json::from_value(json!({"tool_calls": 5})).unwrap();
    assert_eq!(limits.tool_calls, Some(5));
    assert_eq!(limits.max(UsageLimit::TotalTokens), None);
    let error = serde_json::from_value::<UsageLimits>(json!({"tool_call": 5})).unwrap_err();
    assert!(
        error.to_string().starts_with("unknown field `tool_call`"),
        "{error}"
    );
}
