//! Hooks in durable runs on the real runtime and stores: a turn read back after a pause runs no
//! model hook again, and a usage budget counts what the run recorded before it paused.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

mod common;

durable_tests!(
    a_resumed_run_does_not_run_model_hooks_for_recorded_turns,
    a_resumed_run_keeps_the_budget_it_had_used,
    a_call_a_hook_answers_is_journaled_started_then_finished,
);

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::stores::Stores;
use common::{Turn, count, counting, scripted};
use harnessx::hooks::{
    BeforeModel, BeforeTool, Hook, HookContext, HookStop, ToolInvocation, UsageLimits,
};
use harnessx::{BoxFuture, ModelRequest, PermissionLevel, ReplayPolicy};
use harnessx_runtime::{Decision, RunEvent, RunState, Runtime, StartRun};
use serde_json::json;

/// Counts `before_model` calls and remembers the turns it saw.
#[derive(Default)]
struct Turns {
    calls: AtomicUsize,
    seen: std::sync::Mutex<Vec<usize>>,
}

impl Hook for Turns {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        _request: &'a mut ModelRequest,
    ) -> BoxFuture<'a, Result<BeforeModel, HookStop>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(ctx.turn.unwrap_or(0));
        Box::pin(async { Ok(BeforeModel::Continue) })
    }
}

async fn a_resumed_run_does_not_run_model_hooks_for_recorded_turns(stores: Stores) {
    let (model, model_calls) = scripted(vec![Turn::Call("deploy", json!({})), Turn::Quote]);
    let (tool, runs) = counting("deploy", ReplayPolicy::Manual, PermissionLevel::Ask);
    let turns = Arc::new(Turns::default());
    let hook = Arc::clone(&turns);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| {
            b.model(model.clone())
                .tool(tool.clone())
                .hook(Arc::clone(&hook))
        })
        .build()
        .unwrap();
    let run = runtime
        .start_run(StartRun::new("a", "ship it"))
        .await
        .unwrap();
    let waiting = runtime.settled(run.id).await.unwrap();
    assert_eq!(waiting.state, RunState::WaitingInput);
    assert_eq!(turns.calls.load(Ordering::SeqCst), 1);
    runtime.decide(run.id, Decision::AllowOnce).await.unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(done.state, RunState::Completed);
    assert_eq!(done.result.unwrap().output, "saw: deploy done");
    // Turn 1 was read back on resume: the hook saw turn 1 once and then turn 2.
    assert_eq!(*turns.seen.lock().unwrap(), [1, 2]);
    assert_eq!((count(&model_calls), count(&runs)), (2, 1));
}

async fn a_resumed_run_keeps_the_budget_it_had_used(stores: Stores) {
    let (model, model_calls) = scripted(vec![Turn::Call("deploy", json!({})), Turn::Quote]);
    let (tool, runs) = counting("deploy", ReplayPolicy::Manual, PermissionLevel::Ask);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| {
            b.model(model.clone())
                .tool(tool.clone())
                .usage_limits(UsageLimits {
                    model_requests: Some(1),
                    ..UsageLimits::default()
                })
        })
        .build()
        .unwrap();
    let run = runtime
        .start_run(StartRun::new("a", "ship it"))
        .await
        .unwrap();
    assert_eq!(
        runtime.settled(run.id).await.unwrap().state,
        RunState::WaitingInput
    );
    runtime.decide(run.id, Decision::AllowOnce).await.unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    // The recorded request counts: the one after the approved call would be the second.
    assert_eq!(done.state, RunState::Failed);
    assert_eq!(
        done.error.as_deref(),
        Some(
            "the run passed its usage limit on `model_requests`: it reached 2, over the limit \
             of 1; raise `UsageLimits::model_requests` or split the task into smaller runs"
        )
    );
    assert_eq!((count(&model_calls), count(&runs)), (1, 1));
}

/// Answers every call itself, without running the tool.
struct Cache;

impl Hook for Cache {
    fn before_tool<'a>(
        &'a self,
        _ctx: &'a HookContext,
        _call: &'a mut ToolInvocation,
    ) -> BoxFuture<'a, Result<BeforeTool, HookStop>> {
        Box::pin(async {
            Ok(BeforeTool::Respond(harnessx::ToolOutput::text(
                "from the cache",
            )))
        })
    }
}

/// A call a hook answers is recorded like one a handler ran: its event stream shows the call
/// starting, then its result (a console folds the pair), and the tool itself never runs.
async fn a_call_a_hook_answers_is_journaled_started_then_finished(stores: Stores) {
    let (model, _) = scripted(vec![Turn::Call("lookup", json!({})), Turn::Quote]);
    let (tool, runs) = counting("lookup", ReplayPolicy::Safe, PermissionLevel::Allow);
    let store = stores.fresh().await;
    let runtime = Runtime::builder()
        .store_arc(Arc::clone(&store))
        .agent("a", move |b| {
            b.model(model.clone()).tool(tool.clone()).hook(Cache)
        })
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "look")).await.unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(done.result.unwrap().output, "saw: from the cache");
    assert_eq!(count(&runs), 0);
    let calls: Vec<&str> = store
        .events_after(run.id, 0, 100)
        .await
        .unwrap()
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::ToolCallStarted { .. } => Some("started"),
            RunEvent::ToolResult { .. } => Some("result"),
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["started", "result"]);
}
