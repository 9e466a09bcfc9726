//! The shorter ways in: time limits in any unit, plain functions as handlers, one call for a
//! turn's batch, the prelude and the model-response constructors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harnessx::prelude::*;
use harnessx::{StopReason, SubAgent, ToolErrorKind, ToolRegistryBuilder};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn object_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"value": {"type": "string"}},
        "required": ["value"],
        "additionalProperties": false
    })
}

fn def(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Echo.",
        json!({"type": "object"}),
        handler_fn(|args, _| async move { Ok(ToolOutput::json(args)) }),
    )
}

// ----- time limits -----------------------------------------------------------------------------

#[test]
fn integers_floats_and_durations_are_the_same_time_limit() {
    let ints = [
        ToolOptions::new().timeout_seconds(120).timeout,
        ToolOptions::new().timeout_seconds(120u64).timeout,
        ToolOptions::new().timeout_seconds(120.0).timeout,
        ToolOptions::new()
            .timeout_seconds(Duration::from_secs(120))
            .timeout,
        def("a").with_timeout_seconds(120).timeout,
        def("a").with_timeout_seconds(120.0_f32).timeout,
    ];
    assert!(
        ints.iter().all(|t| *t == Some(Duration::from_secs(120))),
        "{ints:?}"
    );
    assert_eq!(
        ToolOptions::new().timeout_seconds(2.5).timeout,
        Some(Duration::from_millis(2500))
    );

    let builder: ToolRegistryBuilder = ToolRegistry::builder().default_timeout_seconds(60);
    assert_eq!(builder.build().policy().default_timeout_seconds, 60.0);
    let registry = ToolRegistry::builder()
        .default_timeout_seconds(Duration::from_millis(1500))
        .build();
    assert_eq!(
        registry.effective_timeout(&def("a")),
        Duration::from_millis(1500)
    );

    let policy = ToolPolicy::new().with_default_timeout_seconds(60);
    assert_eq!(policy.default_timeout_seconds, 60.0);
    let mut expected = ToolPolicy::default();
    expected.default_timeout_seconds = 60.0;
    assert_eq!(policy, expected);
    let plain = ToolRegistry::new();
    plain.inherit_policy(policy.with_dedupe_calls(true));
    assert_eq!(plain.effective_timeout(&def("a")), Duration::from_secs(60));
    assert!(plain.policy().dedupe_calls);
    // Not a positive time: the default, as with `default_timeout_seconds: 0.0`.
    assert_eq!(
        ToolPolicy::new()
            .with_default_timeout_seconds(-5)
            .default_timeout(),
        Duration::from_secs(25)
    );
    // A subagent takes the same forms (its definition carries the limit).
    let helper = SubAgent::new("helper", "Helps.", TestModel::new(), "Help.").timeout_seconds(90);
    let sub = helper.into_tool();
    assert_eq!(sub.timeout, Some(Duration::from_secs(90)));
}

#[test]
fn a_time_limit_that_is_not_positive_is_refused_by_name() {
    let registry = ToolRegistry::new();
    for bad in [
        ToolOptions::new().timeout_seconds(0),
        ToolOptions::new().timeout_seconds(-1),
        ToolOptions::new().timeout_seconds(f64::NAN),
        ToolOptions::new().timeout_seconds(Duration::ZERO),
    ] {
        let err = registry.register_tool_with(def("slow"), bad).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the timeout of tool `slow` must be a positive number of seconds; leave it unset to \
             use the registry's default"
        );
    }
}

// ----- plain functions as handlers ----------------------------------------------------------------

#[derive(Deserialize)]
struct Label {
    value: String,
}

async fn label(args: Label) -> Result<String, std::convert::Infallible> {
    Ok(args.value.to_uppercase())
}

#[derive(Serialize)]
struct Counted {
    value: String,
    length: usize,
}

fn count(args: Label) -> Result<Counted, String> {
    if args.value.is_empty() {
        return Err("`value` is empty; send the text to count".to_owned());
    }
    Ok(Counted {
        length: args.value.chars().count(),
        value: args.value,
    })
}

async fn who(args: Value, ctx: ToolContext) -> Result<String, ToolError> {
    Ok(format!("{} for {}", ctx.call_id(), args["value"]))
}

fn flaky(_args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    if ctx.attempt() < 2 {
        return Err(ToolError::transient("try again"));
    }
    Ok(ToolOutput::text(format!("attempt {}", ctx.attempt())))
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::json("c1", name, args)
}

#[tokio::test]
async fn plain_async_and_sync_functions_register_with_a_schema() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "label",
            "Uppercase.",
            object_schema(),
            label,
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema(
            "count",
            "Count.",
            object_schema(),
            count,
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema("who", "Who.", object_schema(), who, ToolOptions::new())
        .unwrap();
    registry
        .register_with_schema(
            "flaky",
            "Flaky.",
            json!({"type": "object"}),
            flaky,
            ToolOptions::new()
                .replay_policy(ReplayPolicy::Safe)
                .retry(ToolRetry {
                    initial_backoff: Duration::from_millis(1),
                    ..ToolRetry::default()
                }),
        )
        .unwrap();
    // A closure works too, with its argument type written out.
    registry
        .register_with_schema(
            "twice",
            "Twice.",
            object_schema(),
            |args: Label| async move { Ok::<_, ToolError>(args.value.repeat(2)) },
            ToolOptions::new(),
        )
        .unwrap();

    let r = registry
        .execute(&call("label", json!({"value": "draft"})), None)
        .await;
    assert_eq!((r.content.as_str(), r.is_error), ("DRAFT", false));

    let r = registry
        .execute(&call("count", json!({"value": "héllo"})), None)
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.structured, Some(json!({"value": "héllo", "length": 5})));

    let r = registry
        .execute(&call("count", json!({"value": ""})), None)
        .await;
    assert!(r.is_error);
    assert_eq!(r.error_kind, Some(ToolErrorKind::Failed));
    assert_eq!(r.content, "`value` is empty; send the text to count");

    let r = registry
        .execute(&call("who", json!({"value": "x"})), None)
        .await;
    assert_eq!(r.content, "c1 for \"x\"");

    let r = registry.execute(&call("flaky", json!({})), None).await;
    assert_eq!((r.content.as_str(), r.attempts), ("attempt 2", 2));

    let r = registry
        .execute(&call("twice", json!({"value": "ab"})), None)
        .await;
    assert_eq!(r.content, "abab");
}

#[tokio::test]
async fn arguments_the_function_cannot_take_are_an_error_the_model_can_fix() {
    let registry = ToolRegistry::new();
    // A loose schema lets through what the function's type refuses.
    registry
        .register_with_schema(
            "label",
            "Uppercase.",
            json!({"type": "object"}),
            label,
            ToolOptions::new(),
        )
        .unwrap();
    let r = registry
        .execute(&call("label", json!({"value": 5})), None)
        .await;
    assert!(r.is_error);
    assert_eq!(r.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(
        r.content,
        "Invalid arguments: invalid type: integer `5`, expected a string. Fix them and call again."
    );
    let r = registry.execute(&call("label", json!({})), None).await;
    assert_eq!(
        r.content,
        "Invalid arguments: missing field `value`. Fix them and call again."
    );
}

struct Fixed(&'static str);

impl ToolHandler for Fixed {
    fn call(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> harnessx::BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let text = self.0;
        Box::pin(async move { Ok(ToolOutput::text(text)) })
    }
}

#[tokio::test]
async fn handlers_by_value_in_an_arc_and_erased_still_work() {
    let registry = ToolRegistry::new();
    let erased: Arc<dyn ToolHandler> = Arc::new(Fixed("erased"));
    for (name, def) in [
        (
            "owned",
            ToolDefinition::new("owned", "O.", json!({"type": "object"}), Fixed("owned")),
        ),
        (
            "shared",
            ToolDefinition::new(
                "shared",
                "S.",
                json!({"type": "object"}),
                Arc::new(Fixed("shared")),
            ),
        ),
        (
            "erased",
            ToolDefinition::new("erased", "E.", json!({"type": "object"}), erased),
        ),
    ] {
        registry.register_tool(def).unwrap();
        let r = registry.execute(&call(name, json!({})), None).await;
        assert_eq!(r.content, name);
    }
}

// ----- one call for a turn's batch ----------------------------------------------------------------

#[tokio::test]
async fn execute_batch_answers_a_whole_turn_in_call_order() {
    let ran = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    let counter = Arc::clone(&ran);
    registry
        .register_with_schema(
            "add",
            "Add.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
            move |args: Value| {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))
            },
            ToolOptions::new().concurrent(false),
        )
        .unwrap();
    let calls = [
        ToolCall::json("c1", "add", json!({"a": 1, "b": 2})),
        ToolCall::json("c2", "add", json!({"a": 1})),
        ToolCall::json("c3", "nope", json!({})),
        ToolCall::json("c4", "add", json!({"a": 3, "b": 4})),
    ];
    let results = registry.execute_batch(&calls, None).await;
    let ids: Vec<_> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    assert_eq!(results[0].content, "3");
    assert_eq!(results[1].error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(results[2].error_kind, Some(ToolErrorKind::UnknownTool));
    assert_eq!(results[3].content, "7");
    assert_eq!(ran.load(Ordering::SeqCst), 2, "only the valid calls ran");

    let deny = PermissionManager::new(PermissionLevel::Deny);
    let results = registry.execute_batch(&calls[..1], Some(&deny)).await;
    assert_eq!(results[0].error_kind, Some(ToolErrorKind::PermissionDenied));
}

// ----- models -------------------------------------------------------------------------------------

#[tokio::test]
async fn a_function_model_from_the_crate_root_scripts_turns_with_the_constructors() {
    let model = harnessx::FunctionModel::new(|_request: &ModelRequest, info| {
        if info.turn == 0 {
            ModelResponse::tool_calls([ToolCall::json("c1", "add", json!({"a": 2, "b": 3}))])
        } else {
            ModelResponse::text("It is 5.")
        }
    });
    let turn = ModelResponse::tool_calls([ToolCall::json("c1", "add", json!({}))]);
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(turn.content, "");
    assert_eq!(ModelResponse::text("x").stop_reason, StopReason::EndTurn);

    /// Add two numbers.
    #[tool]
    fn add(a: i64, b: i64) -> i64 {
        a + b
    }
    let agent = Agent::builder().model(model).tool(add).build().unwrap();
    let result = agent.run("2 + 3?").await.unwrap();
    assert_eq!(result.output, "It is 5.");
}

#[test]
fn model_errors_give_their_http_status() {
    let limited = ModelError::RateLimited {
        provider: "openai".into(),
        retry_after: None,
        message: "slow down".into(),
    };
    assert_eq!(limited.status(), Some(429));
    assert_eq!(ModelError::Other("offline".into()).status(), None);
}
