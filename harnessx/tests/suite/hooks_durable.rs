//! Hooks in a durable (journaled) run: recorded model turns and finished calls are read back
//! without hooks, hooks' changes are what the journal keeps, and budgets count what was
//! recorded so a resumed run does not get a fresh budget.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use harnessx::agent::AgentError;
use harnessx::agent::RunOutcome;
use harnessx::hooks::{UsageLimit, UsageLimits};
use harnessx::journal::{CallJournal, CallRecord, InputReply, Journal, PendingKind, StepKey};
use harnessx::model::{ModelResponse, TestModel};
use harnessx::{
    Agent, AgentConfig, ApprovalDecision, BoxFuture, Message, PermissionLevel, ToolCall, Usage,
};
use serde_json::json;

use super::agent_support::{counting_tool, tool_contents};
use super::hooks_support::Log;
use super::journal_support::MemoryJournal;

fn usage(input: u64, output: u64) -> Usage {
    Usage::new(input, output)
}

/// Turn 1 calls `cached` (which a hook answers) and `ask` (an ASK tool, so the durable run
/// pauses for approval); turn 2 answers.
fn model() -> TestModel {
    TestModel::from_responses([
        ModelResponse::text("draft")
            .with_tool_calls(vec![
                ToolCall::json("c0", "cached", json!({})),
                ToolCall::json("c1", "ask", json!({})),
            ])
            .with_usage(usage(50, 10)),
        ModelResponse::text("done").with_usage(usage(40, 10)),
    ])
}

fn agent(model: &TestModel, log: &Log, ran: &Arc<AtomicUsize>, limits: UsageLimits) -> Agent {
    let ask = counting_tool("ask", Arc::clone(ran)).with_permission(PermissionLevel::Ask);
    let cached = counting_tool("cached", Arc::clone(ran));
    Agent::builder()
        .model(model.clone())
        .tool(ask)
        .tool(cached)
        .config(AgentConfig::default().with_planning(false))
        .hook(Answers { log: log.clone() })
        .usage_limits(limits)
        .build()
        .unwrap()
}

/// Answers `cached` calls itself, rewrites the model's text, and logs both.
struct Answers {
    log: Log,
}

impl harnessx::hooks::Hook for Answers {
    fn name(&self) -> &str {
        "answers"
    }

    fn before_model<'a>(
        &'a self,
        ctx: &'a harnessx::hooks::HookContext,
        request: &'a mut harnessx::ModelRequest,
    ) -> BoxFuture<'a, Result<harnessx::hooks::BeforeModel, harnessx::hooks::HookStop>> {
        let _ = request;
        self.log.push(format!(
            "answers before_model turn={:?} requests={}",
            ctx.turn.unwrap_or(0),
            ctx.usage.model_requests
        ));
        Box::pin(async { Ok(harnessx::hooks::BeforeModel::Continue) })
    }

    fn after_model<'a>(
        &'a self,
        ctx: &'a harnessx::hooks::HookContext,
        response: &'a mut ModelResponse,
    ) -> BoxFuture<'a, Result<(), harnessx::hooks::HookStop>> {
        self.log.push(format!("after_model turn={:?}", ctx.turn));
        response.content = format!("{} (reviewed)", response.content);
        Box::pin(async { Ok(()) })
    }

    fn before_tool<'a>(
        &'a self,
        ctx: &'a harnessx::hooks::HookContext,
        call: &'a mut harnessx::hooks::ToolInvocation,
    ) -> BoxFuture<'a, Result<harnessx::hooks::BeforeTool, harnessx::hooks::HookStop>> {
        assert!(ctx.durable);
        self.log.push(format!("before_tool {}", call.tool()));
        let decided = if call.tool() == "cached" {
            harnessx::hooks::BeforeTool::Respond(harnessx::ToolOutput::text("from the cache"))
        } else {
            harnessx::hooks::BeforeTool::Continue
        };
        Box::pin(async move { Ok(decided) })
    }
}

#[tokio::test]
async fn a_resumed_run_reads_recorded_steps_back_without_hooks() {
    let log = Log::default();
    let ran = Arc::new(AtomicUsize::new(0));
    let model = model();
    let agent = agent(&model, &log, &ran, UsageLimits::default());
    let journal = Arc::new(MemoryJournal::default());

    let outcome = agent
        .run_journaled(Vec::new(), "Go", journal.clone(), None)
        .await
        .unwrap();
    let RunOutcome::NeedsInput(pending) = outcome else {
        panic!("expected a pause for approval, got {outcome:?}");
    };
    assert!(matches!(pending[0].kind, PendingKind::Approval { .. }));
    // The hook's changed turn and its answer to `cached` are what the journal keeps.
    assert_eq!(
        journal.recorded_turn(1).unwrap().content,
        "draft (reviewed)"
    );
    assert!(matches!(journal.call(StepKey::call(1, 0)),
        CallRecord::Finished(r) if r.content == "from the cache" && r.attempts == 0));
    assert_eq!(
        log.entries(),
        [
            "answers before_model turn=1 requests=1",
            "after_model turn=Some(1)",
            "before_tool cached",
            "before_tool ask",
        ]
    );

    journal.answer(
        pending[0].key,
        InputReply::Decision {
            decision: ApprovalDecision::AllowOnce,
            arguments: None,
        },
    );
    let outcome = agent
        .run_journaled(Vec::new(), "Go", journal.clone(), None)
        .await
        .unwrap();
    let RunOutcome::Completed(result) = outcome else {
        panic!("expected the run to complete, got {outcome:?}");
    };
    assert_eq!(result.output, "done (reviewed)");
    // Turn 1 and the `cached` call were read back: no model hook for turn 1, no `before_tool`
    // for `cached`. The approved call went through the hooks again, then ran; turn 2 is new.
    assert_eq!(
        log.entries()[4..],
        [
            "before_tool ask",
            "answers before_model turn=2 requests=2",
            "after_model turn=Some(2)",
        ]
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1, "only `ask` ran, once");
    // The model was asked twice in all, and saw the reviewed turn 1 and the cached answer.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(matches!(&requests[1].messages[1],
        Message::Assistant { content, .. } if content == "draft (reviewed)"));
    assert_eq!(
        tool_contents(&requests[1].messages),
        [
            ("from the cache".to_owned(), false),
            ("ask ran".to_owned(), false)
        ]
    );
}

/// Pauses a run after turn 1 (50 + 10 tokens, two calls), approves, and resumes it under
/// `limits`.
async fn resume_under(limits: UsageLimits) -> (Result<RunOutcome, AgentError>, TestModel) {
    let log = Log::default();
    let ran = Arc::new(AtomicUsize::new(0));
    let model = model();
    let journal = Arc::new(MemoryJournal::default());
    let first = agent(&model, &log, &ran, UsageLimits::default())
        .run_journaled(Vec::new(), "Go", journal.clone(), None)
        .await
        .unwrap();
    let RunOutcome::NeedsInput(pending) = first else {
        panic!("expected a pause, got {first:?}");
    };
    journal.answer(
        pending[0].key,
        InputReply::Decision {
            decision: ApprovalDecision::AllowOnce,
            arguments: None,
        },
    );
    let resumed = agent(&model, &log, &ran, limits)
        .run_journaled(Vec::new(), "Go", journal, None)
        .await;
    (resumed, model)
}

#[tokio::test]
async fn a_resumed_run_counts_its_recorded_usage_toward_the_budget() {
    // 60 tokens were recorded before the pause; turn 2 adds 50: 110 is over 100.
    let (resumed, model) = resume_under(UsageLimits {
        total_tokens: Some(100),
        ..UsageLimits::default()
    })
    .await;
    match resumed {
        Err(AgentError::UsageLimitExceeded {
            limit,
            max,
            reached,
        }) => assert_eq!((limit, max, reached), (UsageLimit::TotalTokens, 100, 110)),
        other => panic!("expected the budget to stop the run, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 2);

    // The recorded request counts too: a second request passes a limit of one.
    let (resumed, model) = resume_under(UsageLimits {
        model_requests: Some(1),
        ..UsageLimits::default()
    })
    .await;
    assert!(
        matches!(
            resumed,
            Err(AgentError::UsageLimitExceeded {
                limit: UsageLimit::ModelRequests,
                max: 1,
                reached: 2
            })
        ),
        "{resumed:?}"
    );
    assert_eq!(
        model.requests().len(),
        1,
        "the second request was never made"
    );

    // And replayed calls count: the `cached` call read back from turn 1 was the first, so the
    // resumed `ask` call is the second, past a limit of one, and does not run.
    let (resumed, _) = resume_under(UsageLimits {
        tool_calls: Some(1),
        ..UsageLimits::default()
    })
    .await;
    assert!(
        matches!(
            resumed,
            Err(AgentError::UsageLimitExceeded {
                limit: UsageLimit::ToolCalls,
                max: 1,
                reached: 2
            })
        ),
        "{resumed:?}"
    );
}

/// Denies `gated`, and gives `fixed` arguments its schema refuses: decisions about calls that
/// never reach their tool.
struct Strict;

impl harnessx::hooks::Hook for Strict {
    fn name(&self) -> &str {
        "strict"
    }

    fn before_tool<'a>(
        &'a self,
        _ctx: &'a harnessx::hooks::HookContext,
        call: &'a mut harnessx::hooks::ToolInvocation,
    ) -> BoxFuture<'a, Result<harnessx::hooks::BeforeTool, harnessx::hooks::HookStop>> {
        let decided = match call.tool() {
            "gated" => harnessx::hooks::BeforeTool::Deny("not during the freeze".into()),
            "fixed" => {
                *call.arguments_mut() = json!({"x": "not a number"});
                harnessx::hooks::BeforeTool::Continue
            }
            _ => harnessx::hooks::BeforeTool::Continue,
        };
        Box::pin(async move { Ok(decided) })
    }
}

#[tokio::test]
async fn decisions_made_without_running_a_tool_are_read_back_not_made_again() {
    // Turn 1: a call a hook denies, one whose level is DENY, one whose arguments a hook breaks,
    // one of a tool not registered, and an ASK call that pauses the run. Turn 2 answers.
    let model = TestModel::from_responses([
        ModelResponse::default().with_tool_calls(vec![
            ToolCall::json("c0", "gated", json!({})),
            ToolCall::json("c1", "blocked", json!({})),
            ToolCall::json("c2", "fixed", json!({"x": 1})),
            ToolCall::json("c3", "later", json!({})),
            ToolCall::json("c4", "ask", json!({})),
        ]),
        ModelResponse::text("done"),
    ]);
    let ran = Arc::new(AtomicUsize::new(0));
    // The first process runs under the strict hook and a DENY level, without a `later` tool;
    // the process that resumes has neither hook nor level (the freeze ended, the operator
    // allowed `blocked`) and a new release brought `later`.
    let agent = |strict: bool| {
        let blocked = if strict {
            PermissionLevel::Deny
        } else {
            PermissionLevel::Allow
        };
        let mut builder = Agent::builder()
            .model(model.clone())
            .tool(counting_tool("gated", Arc::clone(&ran)))
            .tool(counting_tool("blocked", Arc::clone(&ran)).with_permission(blocked))
            .tool(counting_tool("fixed", Arc::clone(&ran)))
            .tool(counting_tool("ask", Arc::clone(&ran)).with_permission(PermissionLevel::Ask))
            .config(AgentConfig::default().with_planning(false));
        if strict {
            builder = builder.hook(Strict);
        } else {
            builder = builder.tool(counting_tool("later", Arc::clone(&ran)));
        }
        builder.build().unwrap()
    };
    let journal = Arc::new(MemoryJournal::default());

    let first = agent(true)
        .run_journaled(Vec::new(), "Go", journal.clone(), None)
        .await
        .unwrap();
    let RunOutcome::NeedsInput(pending) = first else {
        panic!("expected a pause for approval, got {first:?}");
    };
    // The three decisions are finished steps of the journal, like a handler's results.
    let finished = |index: usize| match journal.call(StepKey::call(1, index)) {
        CallRecord::Finished(result) => {
            assert!(result.is_error, "{result:?}");
            result.content
        }
        other => panic!("call 1.{index} was not recorded finished: {other:?}"),
    };
    assert!(finished(0).contains("not during the freeze"));
    assert!(finished(1).contains("denied"), "{}", finished(1));
    assert!(finished(2).contains("A hook changed the arguments"));
    assert!(finished(3).contains("later"), "{}", finished(3));
    assert_eq!(ran.load(Ordering::SeqCst), 0);

    journal.answer(
        pending[0].key,
        InputReply::Decision {
            decision: ApprovalDecision::AllowOnce,
            arguments: None,
        },
    );
    let resumed = agent(false)
        .run_journaled(Vec::new(), "Go", journal.clone(), None)
        .await
        .unwrap();
    assert!(matches!(resumed, RunOutcome::Completed(_)), "{resumed:?}");
    // Only the approved call ran: the others keep the answers the model was given.
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let seen = tool_contents(&model.requests()[1].messages);
    assert_eq!(seen.len(), 5);
    assert!(seen[0].0.contains("not during the freeze") && seen[0].1);
    assert!(seen[1].1 && seen[2].1 && seen[3].1);
    assert_eq!(seen[4], ("ask ran".to_owned(), false));
}

/// An ASK tool that answers with the `path` it was given.
fn copy_agent(model: &TestModel, ran: &Arc<Mutex<Vec<String>>>) -> Agent {
    let ran = Arc::clone(ran);
    let copy = harnessx::ToolDefinition::new(
        "copy",
        "Copy a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        harnessx::handler_fn(move |args, _| {
            let path = args["path"].as_str().unwrap_or_default().to_owned();
            ran.lock().unwrap().push(path.clone());
            async move { Ok(harnessx::ToolOutput::text(format!("copied {path}"))) }
        }),
    )
    .with_permission(PermissionLevel::Ask);
    Agent::builder()
        .model(model.clone())
        .tool(copy)
        .config(AgentConfig::default().with_planning(false))
        .build()
        .unwrap()
}

fn copy_model() -> TestModel {
    TestModel::from_responses([
        ModelResponse::text("").with_tool_calls(vec![ToolCall::json(
            "c1",
            "copy",
            json!({"path": "a.txt"}),
        )]),
        ModelResponse::text("done"),
    ])
}

/// One pass of the copy agent (`copy_model`'s script) over `journal`.
async fn copy_pass(
    model: &TestModel,
    ran: &Arc<Mutex<Vec<String>>>,
    journal: &Arc<MemoryJournal>,
) -> RunOutcome {
    copy_agent(model, ran)
        .run_journaled(Vec::new(), "Go", journal.clone(), None)
        .await
        .unwrap()
}

/// Records that a person allowed the call at `key` once, with `arguments` edited.
fn allow_edited(journal: &MemoryJournal, key: StepKey, arguments: serde_json::Value) {
    journal.answer(
        key,
        InputReply::Decision {
            decision: ApprovalDecision::AllowOnce,
            arguments: Some(arguments),
        },
    );
}

#[tokio::test]
async fn an_approved_call_runs_with_the_arguments_a_person_edited() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let model = copy_model();
    let journal = Arc::new(MemoryJournal::default());
    let outcome = copy_pass(&model, &ran, &journal).await;
    let RunOutcome::NeedsInput(pending) = outcome else {
        panic!("expected a pause for approval, got {outcome:?}");
    };
    // The request carries the tool's schema, which edited arguments must fit.
    let PendingKind::Approval { request } = &pending[0].kind else {
        panic!("expected an approval, got {:?}", pending[0].kind);
    };
    assert_eq!(request.arguments, json!({"path": "a.txt"}));
    assert_eq!(
        request.input_schema.as_ref().unwrap()["required"],
        json!(["path"])
    );

    allow_edited(&journal, pending[0].key, json!({"path": "b.txt"}));
    let outcome = copy_pass(&model, &ran, &journal).await;
    assert!(matches!(outcome, RunOutcome::Completed(_)), "{outcome:?}");
    assert_eq!(*ran.lock().unwrap(), ["b.txt"]);
    // The journal keeps the call as it ran; the model's turn keeps what the model sent.
    let started = journal.started.lock().unwrap().clone();
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].id, "c1");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&started[0].arguments).unwrap(),
        json!({"path": "b.txt"})
    );
    assert_eq!(
        tool_contents(&model.requests()[1].messages),
        [("copied b.txt".to_owned(), false)]
    );
}

#[tokio::test]
async fn edited_arguments_that_do_not_fit_the_schema_are_refused_without_running() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let model = copy_model();
    let journal = Arc::new(MemoryJournal::default());
    let outcome = copy_pass(&model, &ran, &journal).await;
    let RunOutcome::NeedsInput(pending) = outcome else {
        panic!("expected a pause for approval, got {outcome:?}");
    };
    allow_edited(&journal, pending[0].key, json!({"path": 5}));
    let outcome = copy_pass(&model, &ran, &journal).await;
    assert!(matches!(outcome, RunOutcome::Completed(_)), "{outcome:?}");
    assert!(ran.lock().unwrap().is_empty(), "the tool did not run");
    let seen = tool_contents(&model.requests()[1].messages);
    assert_eq!(seen.len(), 1);
    assert!(seen[0].1, "an error result");
    assert_eq!(
        seen[0].0,
        "The arguments a person edited for `copy` do not fit its schema: `path`: 5 is not of \
         type \"string\". The call was not run."
    );
    assert!(matches!(journal.call(pending[0].key),
        CallRecord::Finished(r) if r.error_kind == Some(harnessx::ToolErrorKind::InvalidArguments)));
}
