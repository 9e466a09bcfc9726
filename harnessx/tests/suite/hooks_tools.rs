//! Hooks around tool calls: order, argument rewrites (checked again by the schema and the
//! permission manager), denials, answers without running, the after stages, the cap, stops.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use harnessx::agent::AgentError;
use harnessx::hooks::HookStop;
use harnessx::model::TestModel;
use harnessx::{
    Agent, ApprovalDecision, PermissionLevel, PermissionManager, ToolCall, ToolDefinition,
    ToolError, ToolErrorKind, ToolOutput, ToolRegistry, handler_fn,
};
use serde_json::{Value, json};

use super::agent_support::{add_tool, counting_tool, tool_contents};
use super::hooks_support::{Log, Scripted};

/// A registry with `add` and a counting `count` tool.
fn registry(count: &Arc<AtomicUsize>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register_tool(add_tool()).unwrap();
    registry
        .register_tool(counting_tool("count", Arc::clone(count)))
        .unwrap();
    registry
}

#[tokio::test]
async fn hooks_run_in_order_and_each_sees_what_the_one_before_changed() {
    let log = Log::default();
    let first = Scripted {
        set_args: vec![("a", json!(40))],
        append: Some(" (checked)".into()),
        ..Scripted::named("first", &log)
    };
    let second = Scripted {
        set_args: vec![("b", json!(2))],
        ..Scripted::named("second", &log)
    };
    let count = Arc::new(AtomicUsize::new(0));
    let run = registry(&count)
        .run(None)
        .with_hook(first)
        .with_hook(second);
    let result = run
        .execute(&ToolCall::json("c1", "add", json!({"a": 1, "b": 1})))
        .await;
    assert_eq!(result.content, "42 (checked)");
    assert!(!result.is_error);
    assert_eq!(
        log.entries(),
        [
            r#"first before_tool add {"a":1,"b":1} #1"#,
            r#"second before_tool add {"a":40,"b":1} #1"#,
            r#"first after_tool add "42""#,
            r#"second after_tool add "42 (checked)""#,
        ]
    );
}

#[tokio::test]
async fn a_denial_answers_the_model_and_ends_the_before_chain() {
    let log = Log::default();
    let count = Arc::new(AtomicUsize::new(0));
    let model = TestModel::new()
        .then_calls([ToolCall::json("c1", "count", json!({"x": 1}))])
        .then_reply("ok");
    let agent = Agent::builder()
        .model(model.clone())
        .registry(registry(&count))
        .hook(Scripted {
            deny: Some("Counting is closed today; answer without it.".into()),
            ..Scripted::named("gate", &log)
        })
        .hook(Scripted::named("later", &log))
        .build()
        .unwrap();
    let result = agent.run("Count").await.unwrap();
    assert_eq!(result.output, "ok");
    assert_eq!(count.load(Ordering::SeqCst), 0, "a denied call never runs");
    assert_eq!(
        tool_contents(&model.requests()[1].messages),
        [(
            "Counting is closed today; answer without it.".to_owned(),
            true
        )]
    );
    // The denial ends the before chain; both hooks see the error result.
    let tool_entries: Vec<String> = log
        .entries()
        .into_iter()
        .filter(|e| e.contains("_tool"))
        .collect();
    assert_eq!(
        tool_entries,
        [
            r#"gate before_tool count {"x":1} #1"#,
            r#"gate on_tool_error count "Counting is closed today; answer without it.""#,
            r#"later on_tool_error count "Counting is closed today; answer without it.""#,
        ]
    );
}

#[tokio::test]
async fn a_hook_can_answer_without_running_the_tool() {
    let log = Log::default();
    let count = Arc::new(AtomicUsize::new(0));
    let run = registry(&count)
        .run(None)
        .with_hook(Scripted {
            respond: Some("from the cache".into()),
            ..Scripted::named("cache", &log)
        })
        .with_hook(Scripted::named("audit", &log));
    let result = run.execute(&ToolCall::json("c1", "count", json!({}))).await;
    assert_eq!(result.content, "from the cache");
    assert!(!result.is_error);
    assert_eq!(result.attempts, 0, "the handler never ran");
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert_eq!(
        log.entries(),
        [
            "cache before_tool count {} #1",
            r#"cache after_tool count "from the cache""#,
            r#"audit after_tool count "from the cache""#,
        ]
    );
}

#[tokio::test]
async fn on_tool_error_sees_failures_and_may_replace_them() {
    let log = Log::default();
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "flaky",
            "Fails.",
            json!({"type": "object"}),
            handler_fn(|_, _| async { Err(ToolError::failed("the upstream said no")) }),
        ))
        .unwrap();
    let run = registry.run(None).with_hook(Scripted {
        recover_tool: Some("used the backup".into()),
        ..Scripted::named("fallback", &log)
    });
    let result = run.execute(&ToolCall::json("c1", "flaky", json!({}))).await;
    assert_eq!(result.content, "used the backup");
    assert!(!result.is_error);
    assert_eq!(
        log.entries(),
        [
            "fallback before_tool flaky {} #1",
            r#"fallback on_tool_error flaky "the upstream said no""#,
        ]
    );
}

#[tokio::test]
async fn rewritten_arguments_are_validated_against_the_schema_again() {
    let log = Log::default();
    let count = Arc::new(AtomicUsize::new(0));
    let run = registry(&count).run(None).with_hook(Scripted {
        set_args: vec![("a", json!("forty"))],
        ..Scripted::named("broken", &log)
    });
    let result = run
        .execute(&ToolCall::json("c1", "add", json!({"a": 1, "b": 1})))
        .await;
    assert!(result.is_error);
    assert_eq!(result.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(result.attempts, 0);
    assert_eq!(
        result.content,
        "A hook changed the arguments of this call and they no longer fit the schema, so the \
         tool did not run. Invalid arguments for `add`: field `a`: \"forty\" is not of type \
         \"integer\". Fix it and call `add` again."
    );
}

/// A tool that writes to a path, asking first, and an approval callback that allows only
/// paths under `/tmp` and records the arguments it was shown.
fn guarded_agent(
    model: TestModel,
    written: &Arc<Mutex<Vec<Value>>>,
    shown: &Arc<Mutex<Vec<Value>>>,
    hook: Scripted,
) -> Agent {
    let written = Arc::clone(written);
    let write = ToolDefinition::new(
        "write",
        "Write a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        handler_fn(move |args, _| {
            written.lock().unwrap().push(args);
            async { Ok(ToolOutput::text("written")) }
        }),
    )
    .with_permission(PermissionLevel::Ask);
    let shown = Arc::clone(shown);
    Agent::builder()
        .model(model)
        .tool(write)
        .approval(move |request: harnessx::ApprovalRequest| {
            shown.lock().unwrap().push(request.arguments.clone());
            let safe = request.arguments["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/tmp/"));
            async move {
                if safe {
                    ApprovalDecision::AllowOnce
                } else {
                    ApprovalDecision::Deny
                }
            }
        })
        .hook(hook)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_permission_check_sees_the_arguments_a_hook_rewrote() {
    let log = Log::default();
    let written = Arc::new(Mutex::new(Vec::new()));
    let shown = Arc::new(Mutex::new(Vec::new()));
    let model = TestModel::new()
        .then_calls([ToolCall::json("c1", "write", json!({"path": "/tmp/notes"}))])
        .then_reply("done");
    // The model asked for a safe path; the hook rewrites it to an unsafe one.
    let hook = Scripted {
        set_args: vec![("path", json!("/etc/passwd"))],
        ..Scripted::named("rewrite", &log)
    };
    let agent = guarded_agent(model.clone(), &written, &shown, hook);
    agent.run("Write notes").await.unwrap();
    assert_eq!(*shown.lock().unwrap(), [json!({"path": "/etc/passwd"})]);
    assert!(
        written.lock().unwrap().is_empty(),
        "the denied call never ran"
    );
    assert_eq!(
        tool_contents(&model.requests()[1].messages),
        [("Permission denied".to_owned(), true)]
    );
    // And the other way round: a rewrite to a safe path is approved and runs as rewritten.
    let model = TestModel::new()
        .then_calls([ToolCall::json(
            "c1",
            "write",
            json!({"path": "/etc/passwd"}),
        )])
        .then_reply("done");
    let hook = Scripted {
        set_args: vec![("path", json!("/tmp/passwd"))],
        ..Scripted::named("sandbox", &log)
    };
    let agent = guarded_agent(model, &written, &shown, hook);
    agent.run("Write").await.unwrap();
    assert_eq!(*written.lock().unwrap(), [json!({"path": "/tmp/passwd"})]);
}

#[tokio::test]
async fn a_hook_cannot_lift_a_deny() {
    let log = Log::default();
    let count = Arc::new(AtomicUsize::new(0));
    let permissions = PermissionManager::new(PermissionLevel::Allow)
        .with_override("count", PermissionLevel::Deny);
    let run = registry(&count).run(Some(permissions)).with_hook(Scripted {
        set_args: vec![("x", json!(7))],
        ..Scripted::named("rewrite", &log)
    });
    let result = run.execute(&ToolCall::json("c1", "count", json!({}))).await;
    assert_eq!(result.content, "Permission denied");
    assert_eq!(result.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(count.load(Ordering::SeqCst), 0);
    // The permission refusal is an error result the hooks see.
    assert_eq!(
        log.entries().last().unwrap(),
        r#"rewrite on_tool_error count "Permission denied""#
    );
}

#[tokio::test]
async fn results_a_hook_gave_or_grew_still_go_through_the_cap() {
    let log = Log::default();
    let count = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::builder().max_result_bytes(1_000).build();
    registry
        .register_tool(counting_tool("count", Arc::clone(&count)))
        .unwrap();
    // A hook's own answer, far over the cap.
    let run = registry.run(None).with_hook(Scripted {
        respond: Some("x".repeat(50_000)),
        ..Scripted::named("big answer", &log)
    });
    let result = run.execute(&ToolCall::json("c1", "count", json!({}))).await;
    assert!(result.truncated);
    assert!(result.content.len() <= 1_000, "{}", result.content.len());
    assert!(
        result
            .content
            .contains("[truncated: the result was 50000 bytes")
    );
    // A handler's result a hook grew past the cap.
    let run = registry.run(None).with_hook(Scripted {
        append: Some("y".repeat(50_000)),
        ..Scripted::named("grower", &log)
    });
    let result = run.execute(&ToolCall::json("c2", "count", json!({}))).await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert!(result.truncated);
    assert!(result.content.len() <= 1_000, "{}", result.content.len());
    assert!(result.content.starts_with("count ranyyy"));
    // A denial reason over the cap is cut too.
    let run = registry.run(None).with_hook(Scripted {
        deny: Some("z".repeat(50_000)),
        ..Scripted::named("wordy", &log)
    });
    let result = run.execute(&ToolCall::json("c3", "count", json!({}))).await;
    assert!(result.truncated && result.is_error);
    assert!(result.content.len() <= 1_000);
}

#[tokio::test]
async fn a_stop_ends_the_agent_run_with_the_hook_and_its_reason() {
    let log = Log::default();
    let count = Arc::new(AtomicUsize::new(0));
    let model = TestModel::new()
        .then_calls([
            ToolCall::json("c1", "count", json!({})),
            ToolCall::json("c2", "add", json!({"a": 1, "b": 2})),
        ])
        .then_reply("never");
    let agent = Agent::builder()
        .model(model.clone())
        .registry(registry(&count))
        .hook(Scripted {
            stop_tool: Some("the account is suspended".into()),
            ..Scripted::named("billing", &log)
        })
        .build()
        .unwrap();
    let error = agent.run("Count").await.unwrap_err();
    assert!(
        matches!(&error, AgentError::HookStopped { hook, reason }
            if hook == "billing" && reason == "the account is suspended"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the run was stopped by hook `billing`: the account is suspended"
    );
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert_eq!(model.requests().len(), 1, "the model is not asked again");
}

#[tokio::test]
async fn a_stopped_tool_run_runs_no_more_calls() {
    let log = Log::default();
    let count = Arc::new(AtomicUsize::new(0));
    let run = registry(&count).run(None).with_hook(Scripted {
        stop_tool: Some("budget spent".into()),
        ..Scripted::named("meter", &log)
    });
    assert_eq!(run.stopped(), None);
    let first = run.execute(&ToolCall::json("c1", "count", json!({}))).await;
    assert_eq!(
        first.content,
        "The call was not run: the run was stopped (budget spent)."
    );
    let stop = run.stopped().unwrap();
    assert_eq!(stop.hook(), Some("meter"));
    assert_eq!(stop.to_string(), HookStop::new("budget spent").to_string());
    assert_eq!(stop.usage_limit_exceeded(), None);
    let second = run.execute(&ToolCall::json("c2", "count", json!({}))).await;
    assert!(second.is_error);
    assert_eq!(count.load(Ordering::SeqCst), 0);
    // The hook saw only the first call: a stopped run does not consult it again.
    assert_eq!(log.entries().len(), 1);
}

#[tokio::test]
async fn calls_the_engine_refuses_first_do_not_reach_the_hooks() {
    let log = Log::default();
    let count = Arc::new(AtomicUsize::new(0));
    let run = registry(&count)
        .run(None)
        .with_hook(Scripted::named("audit", &log));
    let unknown = run.execute(&ToolCall::json("c1", "cuont", json!({}))).await;
    assert_eq!(unknown.error_kind, Some(ToolErrorKind::UnknownTool));
    let garbled = run.execute(&ToolCall::new("c2", "add", "{\"a\": 1,")).await;
    assert_eq!(garbled.error_kind, Some(ToolErrorKind::MalformedArguments));
    assert!(log.entries().is_empty());
    // They still count as calls the run was given.
    assert_eq!(run.usage().tool_calls, 2);
}
