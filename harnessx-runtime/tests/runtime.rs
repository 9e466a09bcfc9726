//! The durable runtime end to end, each test on both stores: SQLite (in memory) and PostgreSQL.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies shared by both stores are plain functions; a failed unwrap fails the test"
)]

mod common;

durable_tests!(
    a_run_completes_and_its_steps_are_journaled_once,
    a_refused_call_is_journaled_and_in_the_run_events_like_any_other,
    ask_user_pauses_holds_nothing_and_an_answer_resumes_without_redoing_steps,
    bad_answers_are_refused_with_clear_errors_and_change_nothing,
    the_simple_form_pauses_too_and_checks_its_choices,
    an_expired_question_tells_the_model_and_the_run_goes_on,
    approvals_pause_and_conversation_grants_are_stored_and_reused,
    conversations_keep_the_transcript_and_a_new_message_answers_the_pending_question,
    an_idempotency_key_returns_the_existing_run,
    cancel_ends_a_waiting_run_at_once_and_fires_a_running_calls_token,
    a_subscriber_coming_back_gets_everything_after_its_last_sequence_then_live_events,
    a_subscriber_coming_back_after_a_finished_runs_last_event_gets_an_ended_stream,
    a_safe_tool_that_times_out_is_retried_under_its_tool_retry,
    a_retried_start_never_answers_the_question_its_run_asked,
    an_idempotency_key_is_checked_against_its_request_and_expires,
    an_approval_allowed_with_edited_arguments_runs_with_them_and_names_who_decided,
    every_event_has_its_time_and_a_run_its_last_change,
    conversations_are_listed_by_their_latest_run_a_page_at_a_time,
    an_approval_asked_without_its_schema_refuses_edited_arguments,
    an_agent_registered_in_code_is_built_once_and_its_runs_proceed_together,
);

use std::sync::Arc;
use std::time::Duration;

use common::stores::Stores;
use common::{Turn, count, counting, format_question, scripted};
use futures::StreamExt;
use harnessx::{PermissionLevel, ReplayPolicy};
use harnessx_builtin::ask_user::{ask_user_questions_tool, ask_user_tool};
use harnessx_runtime::store::ConversationFilter;
use harnessx_runtime::{
    Answer, Decide, Decision, InputError, InputReply, PendingKind, QuestionAnswer, RecoveryChoice,
    RunEvent, RunId, RunState, RunView, Runtime, RuntimeError, StartRun, StoredEvent,
};
use serde_json::json;

fn structured_ask() -> harnessx::ToolDefinition {
    ask_user_questions_tool(|_| async { None }, Duration::from_secs(600))
}

fn input_error(e: RuntimeError) -> InputError {
    match e {
        RuntimeError::Input(e) => e,
        other => panic!("expected an input error, got {other:?}"),
    }
}

/// A run of an agent with one tool, `lookup`, played by `script` until it settles: the run, its
/// events from the first, and how many times the model and the tool were called.
async fn settle_lookup_run(
    stores: &Stores,
    script: Vec<Turn>,
) -> (RunView, Vec<StoredEvent>, usize, usize) {
    let (model, model_calls) = scripted(script);
    let (tool, runs) = counting("lookup", ReplayPolicy::Safe, PermissionLevel::Allow);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(tool.clone()))
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "go")).await.unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    let events = runtime
        .subscribe(run.id, 0)
        .map(|e| e.unwrap())
        .collect()
        .await;
    (done, events, count(&model_calls), count(&runs))
}

async fn a_run_completes_and_its_steps_are_journaled_once(stores: Stores) {
    let script = vec![Turn::Call("lookup", json!({})), Turn::Quote];
    let (done, events, model_calls, runs) = settle_lookup_run(&stores, script).await;
    assert_eq!(done.state, RunState::Completed);
    assert_eq!(done.result.unwrap().output, "saw: lookup done");
    assert_eq!((model_calls, runs), (2, 1));
    // The journal: turn 1, the call started and finished, turn 2.
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match &e.event {
            RunEvent::State { .. } => "state",
            RunEvent::TextDelta { .. } => "text",
            RunEvent::TurnCompleted { .. } => "turn",
            RunEvent::ToolCallStarted { .. } => "started",
            RunEvent::ToolResult { .. } => "result",
            RunEvent::Completed { .. } => "completed",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "state",
            "state",
            "turn",
            "started",
            "result",
            "text",
            "turn",
            "completed",
            "state"
        ]
    );
}

async fn a_refused_call_is_journaled_and_in_the_run_events_like_any_other(stores: Stores) {
    // The model calls a tool that does not exist: the refusal is a finished step of the
    // journal, with its events, like a handler's result (a resume reads it back).
    let script = vec![Turn::Call("lookpu", json!({})), Turn::Quote];
    let (done, events, _, runs) = settle_lookup_run(&stores, script).await;
    assert_eq!(done.state, RunState::Completed);
    assert_eq!(runs, 0, "the call never reached a tool");
    let calls: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::ToolCallStarted { name, .. } => Some(("started", name.as_str())),
            RunEvent::ToolResult { result } if result.is_error => {
                Some(("refused", result.content.as_str()))
            }
            RunEvent::ToolResult { .. } => Some(("result", "")),
            _ => None,
        })
        .collect();
    assert!(
        matches!(&calls[..], [("started", "lookpu"), ("refused", message)]
            if message.starts_with("Unknown tool `lookpu`")),
        "{calls:?}"
    );
}

async fn ask_user_pauses_holds_nothing_and_an_answer_resumes_without_redoing_steps(stores: Stores) {
    let (model, model_calls) = scripted(vec![
        Turn::Call("lookup", json!({})),
        Turn::Call("ask_user", format_question()),
        Turn::Quote,
    ]);
    let (tool, runs) = counting("lookup", ReplayPolicy::Manual, PermissionLevel::Allow);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| {
            b.model(model.clone())
                .tool(tool.clone())
                .tool(structured_ask())
        })
        .workers(1)
        .build()
        .unwrap();
    let run = runtime
        .start_run(StartRun::new("a", "export"))
        .await
        .unwrap();
    let waiting = runtime.settled(run.id).await.unwrap();
    assert_eq!(waiting.state, RunState::WaitingInput);
    assert!(matches!(
        &waiting.needs_input[..],
        [p] if matches!(&p.pending.kind, PendingKind::Question { .. }) && p.pending.call_id == "call_1"
    ));
    assert_eq!((count(&model_calls), count(&runs)), (2, 1));
    // A single worker serves another run while this one waits: the wait holds no worker.
    let other = runtime
        .start_run(StartRun::new("a", "other"))
        .await
        .unwrap();
    assert_eq!(
        runtime.settled(other.id).await.unwrap().state,
        RunState::WaitingInput
    );
    let answered = runtime
        .answer(
            run.id,
            Answer::Selections {
                answers: vec![QuestionAnswer::selected(["JSON"])],
            },
        )
        .await
        .unwrap();
    assert!(answered.needs_input.is_empty());
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(done.state, RunState::Completed);
    assert_eq!(
        done.result.unwrap().output,
        "saw: The user answered:\n1. [Format] Which format? → JSON"
    );
    // Turns 1 and 2 were read back, `lookup` was not run again: one more model call in all.
    assert_eq!((count(&model_calls), count(&runs)), (2 + 2 + 1, 2));
}

async fn bad_answers_are_refused_with_clear_errors_and_change_nothing(stores: Stores) {
    let (model, _) = scripted(vec![Turn::Call("ask_user", format_question()), Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(structured_ask()))
        .build()
        .unwrap();
    let e = input_error(runtime.run(RunId(99)).await.unwrap_err());
    assert_eq!(e.to_string(), "run 99 does not exist; check the run id");
    let e = input_error(
        runtime
            .answer(RunId(99), Answer::Text { text: "x".into() })
            .await
            .unwrap_err(),
    );
    assert_eq!(e, InputError::UnknownRun(RunId(99)));
    let run = runtime.start_run(StartRun::new("a", "q")).await.unwrap();
    runtime.settled(run.id).await.unwrap();

    let wrong_label = Answer::Selections {
        answers: vec![QuestionAnswer::selected(["XML"])],
    };
    let e = input_error(runtime.answer(run.id, wrong_label).await.unwrap_err());
    assert_eq!(
        e.to_string(),
        "the answer to run 1's question does not fit it: answers[0].selected: `XML` is not one \
         of the options (CSV, JSON); nothing was changed"
    );
    let too_many = Answer::Selections {
        answers: vec![QuestionAnswer::selected(["CSV", "JSON"])],
    };
    let e = input_error(runtime.answer(run.id, too_many).await.unwrap_err());
    assert_eq!(
        e.to_string(),
        "the answer to run 1's question does not fit it: answers[0].selected: 2 options chosen, \
         but the question allows one; nothing was changed"
    );
    let two_answers = Answer::Selections {
        answers: vec![
            QuestionAnswer::selected(["CSV"]),
            QuestionAnswer::selected(["CSV"]),
        ],
    };
    let e = input_error(runtime.answer(run.id, two_answers).await.unwrap_err());
    assert!(
        e.to_string()
            .contains("answers: 2 answers for 1 question(s)")
    );
    let e = input_error(
        runtime
            .answer(run.id, Answer::Text { text: "  ".into() })
            .await
            .unwrap_err(),
    );
    assert!(e.to_string().contains("text: the answer is empty"));
    let e = input_error(
        runtime
            .decide(run.id, Decision::AllowOnce)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e.to_string(),
        "run 1 waits for an answer to a question, not a decision; answer it with the options \
         chosen or in words; nothing was changed"
    );
    let recovery = Answer::Recovery {
        choice: RecoveryChoice::RunAgain,
    };
    let e = input_error(runtime.answer(run.id, recovery).await.unwrap_err());
    assert!(matches!(
        e,
        InputError::WrongKind {
            given: "a recovery choice",
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "run 1 waits for an answer to a question, not a recovery choice; answer it with the \
         options chosen or in words; nothing was changed"
    );
    // Nothing changed: still waiting on the same question.
    let still = runtime.run(run.id).await.unwrap();
    assert_eq!(still.state, RunState::WaitingInput);
    assert_eq!(still.needs_input.len(), 1);

    runtime
        .answer(
            run.id,
            Answer::Text {
                text: "CSV please".into(),
            },
        )
        .await
        .unwrap();
    let e = input_error(
        runtime
            .answer(
                run.id,
                Answer::Text {
                    text: "again".into(),
                },
            )
            .await
            .unwrap_err(),
    );
    assert!(matches!(e, InputError::NotWaiting { .. }), "{e}");
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(
        done.result.unwrap().output,
        "saw: The user replied in their own words instead of choosing options: CSV please"
    );
    let e = input_error(
        runtime
            .answer(
                run.id,
                Answer::Text {
                    text: "late".into(),
                },
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e.to_string(),
        "run 1 is completed, not waiting for input; nothing was changed"
    );
    let e = input_error(runtime.cancel(run.id).await.unwrap_err());
    assert_eq!(
        e.to_string(),
        "run 1 is already completed; it cannot be cancelled"
    );
    let e = runtime
        .start_run(StartRun::new("nobody", "hi"))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "no agent named `nobody` is registered; register it with `.agent(\"nobody\", ..)` on \
         the runtime builder of every worker"
    );
    let mut events = runtime.subscribe(RunId(99), 0);
    let e = input_error(events.next().await.unwrap().unwrap_err());
    assert_eq!(e, InputError::UnknownRun(RunId(99)));
    assert!(events.next().await.is_none());
    let e = runtime.conversation("nope").await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "conversation `nope` does not exist; check the id"
    );
}

async fn the_simple_form_pauses_too_and_checks_its_choices(stores: Stores) {
    let (model, _) = scripted(vec![
        Turn::Call(
            "ask_user",
            json!({"question": "Which day?", "choices": ["Mon", "Tue"]}),
        ),
        Turn::Quote,
    ]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| {
            b.model(model.clone())
                .tool(ask_user_tool(|_q: String, _c: Vec<String>| async { None }))
        })
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "book")).await.unwrap();
    let waiting = runtime.settled(run.id).await.unwrap();
    assert_eq!(waiting.state, RunState::WaitingInput);
    let e = input_error(
        runtime
            .answer(
                run.id,
                Answer::Selections {
                    answers: vec![QuestionAnswer::selected(["Wed"])],
                },
            )
            .await
            .unwrap_err(),
    );
    assert!(
        e.to_string()
            .contains("`Wed` is not one of the options (Mon, Tue)")
    );
    runtime
        .answer(
            run.id,
            Answer::Selections {
                answers: vec![QuestionAnswer::selected(["Tue"])],
            },
        )
        .await
        .unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(done.result.unwrap().output, "saw: The user answered: Tue");
}

async fn an_expired_question_tells_the_model_and_the_run_goes_on(stores: Stores) {
    // The simple form takes the runtime's window.
    let (model2, _) = scripted(vec![
        Turn::Call("ask_user", json!({"question": "Which day?"})),
        Turn::Quote,
    ]);
    let runtime2 = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| {
            b.model(model2.clone())
                .tool(ask_user_tool(|_q: String, _c: Vec<String>| async { None }))
        })
        .question_window(Duration::from_millis(300))
        .build()
        .unwrap();
    let run = runtime2
        .start_run(StartRun::new("a", "book"))
        .await
        .unwrap();
    assert_eq!(
        runtime2.settled(run.id).await.unwrap().state,
        RunState::WaitingInput
    );
    // The timer expires it (no answer is given) and a worker resumes it.
    let mut events = runtime2.subscribe(run.id, 0);
    let mut saw_expiry = false;
    while let Some(e) = events.next().await {
        if let RunEvent::Answered {
            reply: harnessx_runtime::InputReply::Expired { .. },
            ..
        } = e.unwrap().event
        {
            saw_expiry = true;
        }
    }
    assert!(saw_expiry);
    let done = runtime2.run(run.id).await.unwrap();
    assert_eq!(done.state, RunState::Completed);
    let output = done.result.unwrap().output;
    assert!(
        output.starts_with("saw: The question expired: nobody answered within the waiting window."),
        "{output}"
    );
}

async fn approvals_pause_and_conversation_grants_are_stored_and_reused(stores: Stores) {
    let (model, model_calls) = scripted(vec![Turn::Call("deploy", json!({})), Turn::Quote]);
    let (tool, runs) = counting("deploy", ReplayPolicy::Manual, PermissionLevel::Ask);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(tool.clone()))
        .build()
        .unwrap();
    let first = runtime
        .start_run(StartRun::new("a", "ship it").conversation("c1"))
        .await
        .unwrap();
    let waiting = runtime.settled(first.id).await.unwrap();
    assert!(matches!(
        &waiting.needs_input[..],
        [p] if matches!(&p.pending.kind, PendingKind::Approval { request } if request.tool_name == "deploy")
    ));
    assert_eq!(count(&runs), 0);
    // An approval is not a question: the conversation reports none, and a message starts a run.
    assert!(
        runtime
            .conversation("c1")
            .await
            .unwrap()
            .pending_question
            .is_none()
    );
    let e = input_error(
        runtime
            .answer(first.id, Answer::Text { text: "yes".into() })
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e.to_string(),
        format!(
            "{} waits for an approval decision, not an answer; decide it: allow once, allow for \
             the conversation, or deny; nothing was changed",
            first.id
        )
    );
    runtime
        .decide(first.id, Decision::AllowForConversation)
        .await
        .unwrap();
    let done = runtime.settled(first.id).await.unwrap();
    assert_eq!(done.result.unwrap().output, "saw: deploy done");
    assert_eq!(count(&runs), 1);
    // The next run of the conversation is not asked again.
    let second = runtime
        .start_run(StartRun::new("a", "again").conversation("c1"))
        .await
        .unwrap();
    let done = runtime.settled(second.id).await.unwrap();
    assert_eq!(done.state, RunState::Completed);
    assert_eq!(count(&runs), 2);
    // Another conversation is asked; a denial reaches the model.
    let third = runtime
        .start_run(StartRun::new("a", "elsewhere").conversation("c2"))
        .await
        .unwrap();
    assert_eq!(
        runtime.settled(third.id).await.unwrap().state,
        RunState::WaitingInput
    );
    runtime.decide(third.id, Decision::Deny).await.unwrap();
    let done = runtime.settled(third.id).await.unwrap();
    assert_eq!(done.result.unwrap().output, "saw: Permission denied");
    assert_eq!(count(&runs), 2);
    assert_eq!(count(&model_calls), 2 + 2 + 2);
}

async fn conversations_keep_the_transcript_and_a_new_message_answers_the_pending_question(
    stores: Stores,
) {
    let (model, _) = scripted(vec![Turn::Call("ask_user", format_question()), Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(structured_ask()))
        .build()
        .unwrap();
    let run = runtime
        .start_run(StartRun::new("a", "export").conversation("chat"))
        .await
        .unwrap();
    runtime.settled(run.id).await.unwrap();
    let conversation = runtime.conversation("chat").await.unwrap();
    let (waiting_run, pending) = conversation.pending_question.unwrap();
    assert_eq!(waiting_run, run.id);
    assert!(matches!(pending.pending.kind, PendingKind::Question { .. }));
    // The new message is the answer: no new run.
    let same = runtime
        .start_run(StartRun::new("a", "JSON, thanks").conversation("chat"))
        .await
        .unwrap();
    assert_eq!(same.id, run.id);
    let done = runtime.settled(run.id).await.unwrap();
    assert!(done.result.unwrap().output.ends_with("JSON, thanks"));
    let conversation = runtime.conversation("chat").await.unwrap();
    assert!(conversation.pending_question.is_none());
    assert_eq!(conversation.runs, [run.id]);
    let n = conversation.messages.len();
    assert_eq!(n, 4, "user, assistant call, tool result, assistant answer");
    // A second run sees the first run's transcript.
    let second = runtime
        .start_run(StartRun::new("a", "and now?").conversation("chat"))
        .await
        .unwrap();
    assert_eq!(
        runtime.settled(second.id).await.unwrap().state,
        RunState::WaitingInput
    );
    runtime
        .answer(second.id, Answer::Text { text: "CSV".into() })
        .await
        .unwrap();
    runtime.settled(second.id).await.unwrap();
    let after = runtime.conversation("chat").await.unwrap();
    assert_eq!(after.runs, [run.id, second.id]);
    assert_eq!(after.messages.len(), 2 * n);
    assert_eq!(after.messages[..n], conversation.messages[..]);
    assert_eq!(after.messages[n], harnessx::Message::user("and now?"));
}

async fn an_idempotency_key_returns_the_existing_run(stores: Stores) {
    let (model, model_calls) = scripted(vec![Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()))
        .build()
        .unwrap();
    let start = StartRun::new("a", "hi").idempotency_key("req-1");
    let first = runtime.start_run(start.clone()).await.unwrap();
    runtime.settled(first.id).await.unwrap();
    let again = runtime.start_run(start).await.unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(again.state, RunState::Completed);
    assert_eq!(count(&model_calls), 1);
}

async fn cancel_ends_a_waiting_run_at_once_and_fires_a_running_calls_token(stores: Stores) {
    let (model, _) = scripted(vec![Turn::Call("ask_user", format_question()), Turn::Quote]);
    let (slow_model, _) = scripted(vec![Turn::Call("slow", json!({})), Turn::Quote]);
    let fired = Arc::new(tokio::sync::Notify::new());
    let started = Arc::new(tokio::sync::Notify::new());
    let (fired2, started2) = (Arc::clone(&fired), Arc::clone(&started));
    let slow = harnessx::ToolDefinition::new(
        "slow",
        "Waits until cancelled.",
        json!({"type": "object"}),
        harnessx::handler_fn(move |_, ctx| {
            let (fired, started) = (Arc::clone(&fired2), Arc::clone(&started2));
            async move {
                started.notify_one();
                ctx.cancellation().cancelled().await;
                fired.notify_one();
                Ok(harnessx::ToolOutput::text("stopped"))
            }
        }),
    )
    .with_timeout_seconds(600.0);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("ask", move |b| {
            b.model(model.clone()).tool(structured_ask())
        })
        .agent("slow", move |b| {
            b.model(slow_model.clone()).tool(slow.clone())
        })
        .build()
        .unwrap();
    let waiting = runtime.start_run(StartRun::new("ask", "q")).await.unwrap();
    runtime.settled(waiting.id).await.unwrap();
    let cancelled = runtime.cancel(waiting.id).await.unwrap();
    assert_eq!(cancelled.state, RunState::Cancelled);
    assert!(cancelled.needs_input.is_empty());

    let running = runtime
        .start_run(StartRun::new("slow", "go"))
        .await
        .unwrap();
    started.notified().await;
    runtime.cancel(running.id).await.unwrap();
    fired.notified().await;
    let done = runtime.settled(running.id).await.unwrap();
    assert_eq!(done.state, RunState::Cancelled);
}

async fn a_subscriber_coming_back_gets_everything_after_its_last_sequence_then_live_events(
    stores: Stores,
) {
    let (model, _) = scripted(vec![Turn::Call("ask_user", format_question()), Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(structured_ask()))
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "q")).await.unwrap();
    runtime.settled(run.id).await.unwrap();
    let mut first = runtime.subscribe(run.id, 0);
    let mut seen = Vec::new();
    loop {
        let e = first.next().await.unwrap().unwrap();
        let done = matches!(
            e.event,
            RunEvent::State {
                state: RunState::WaitingInput
            }
        );
        seen.push(e);
        if done {
            break;
        }
    }
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, RunEvent::NeedsInput { .. }))
    );
    drop(first);
    let last = seen.last().unwrap().seq;
    let resumed = runtime.subscribe(run.id, last);
    runtime
        .answer(run.id, Answer::Text { text: "CSV".into() })
        .await
        .unwrap();
    let rest: Vec<_> = resumed.map(|e| e.unwrap()).collect().await;
    assert_eq!(rest.first().unwrap().seq, last + 1);
    let seqs: Vec<u64> = rest.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (last + 1..=last + rest.len() as u64).collect::<Vec<_>>()
    );
    assert!(matches!(rest[0].event, RunEvent::Answered { .. }));
    assert!(matches!(
        rest.last().unwrap().event,
        RunEvent::State {
            state: RunState::Completed
        }
    ));
}

async fn a_subscriber_coming_back_after_a_finished_runs_last_event_gets_an_ended_stream(
    stores: Stores,
) {
    let (model, _) = scripted(vec![Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()))
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "q")).await.unwrap();
    assert_eq!(
        runtime.settled(run.id).await.unwrap().state,
        RunState::Completed
    );
    let all: Vec<_> = runtime
        .subscribe(run.id, 0)
        .map(|e| e.unwrap())
        .collect()
        .await;
    let last = all.last().unwrap().seq;
    // From its last event, from beyond it, and from the middle: each stream ends by itself.
    for after in [last, last + 10, last - 1] {
        let rest: Vec<_> = tokio::time::timeout(
            Duration::from_secs(10),
            runtime.subscribe(run.id, after).collect::<Vec<_>>(),
        )
        .await
        .expect("a finished run's stream must end")
        .into_iter()
        .map(|e| e.unwrap().seq)
        .collect();
        assert_eq!(rest, (after + 1..=last).collect::<Vec<_>>());
    }
}

/// A safe tool with a 300 ms limit and three attempts whose first attempt hangs.
fn hangs_once(attempts: Arc<std::sync::atomic::AtomicUsize>) -> harnessx::ToolDefinition {
    harnessx::ToolDefinition::new(
        "lookup",
        "Look something up.",
        json!({"type": "object"}),
        harnessx::handler_fn(move |_, _| {
            let attempts = Arc::clone(&attempts);
            async move {
                if attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                Ok(harnessx::ToolOutput::text("found"))
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe)
    .with_timeout_seconds(0.3)
    .with_retry(harnessx::ToolRetry {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(10),
        ..harnessx::ToolRetry::default()
    })
}

async fn a_safe_tool_that_times_out_is_retried_under_its_tool_retry(stores: Stores) {
    let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (model, _) = scripted(vec![Turn::Call("lookup", json!({})), Turn::Quote]);
    let tool = hangs_once(Arc::clone(&attempts));
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(tool.clone()))
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "q")).await.unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(done.state, RunState::Completed);
    assert_eq!(done.result.unwrap().output, "saw: found");
    assert_eq!(
        count(&attempts),
        2,
        "the timed-out attempt was retried once"
    );
}

async fn a_retried_start_never_answers_the_question_its_run_asked(stores: Stores) {
    let (model, _) = scripted(vec![Turn::Call("ask_user", format_question()), Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(structured_ask()))
        .build()
        .unwrap();
    let mut start = StartRun::new("a", "hi").idempotency_key("req-7");
    start.conversation = Some("chat-7".into());
    let first = runtime.start_run(start.clone()).await.unwrap();
    let waiting = runtime.settled(first.id).await.unwrap();
    assert_eq!(waiting.state, RunState::WaitingInput);
    // The client did not see the answer and sends the same request again.
    let again = runtime.start_run(start).await.unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(
        again.state,
        RunState::WaitingInput,
        "the retry answered the question"
    );
    assert_eq!(runtime.run(first.id).await.unwrap().needs_input.len(), 1);
    let conversation = runtime.conversation("chat-7").await.unwrap();
    assert!(conversation.pending_question.is_some());
}

async fn an_idempotency_key_is_checked_against_its_request_and_expires(stores: Stores) {
    let (model, _) = scripted(vec![Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()))
        .idempotency_window(Duration::from_millis(300))
        .build()
        .unwrap();
    let first = runtime
        .start_run(StartRun::new("a", "hello").idempotency_key("k"))
        .await
        .unwrap();
    let e = input_error(
        runtime
            .start_run(StartRun::new("a", "goodbye").idempotency_key("k"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e,
        InputError::IdempotencyMismatch {
            run: first.id,
            field: "input"
        }
    );
    let e = input_error(
        runtime
            .start_run(
                StartRun::new("a", "hello")
                    .idempotency_key("k")
                    .conversation("elsewhere"),
            )
            .await
            .unwrap_err(),
    );
    assert!(
        matches!(
            e,
            InputError::IdempotencyMismatch {
                field: "conversation",
                ..
            }
        ),
        "{e:?}"
    );
    runtime.settled(first.id).await.unwrap();
    // Past the window the key starts a new run.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = runtime
        .start_run(StartRun::new("a", "goodbye").idempotency_key("k"))
        .await
        .unwrap();
    assert_ne!(second.id, first.id);
    let again = runtime
        .start_run(StartRun::new("a", "goodbye").idempotency_key("k"))
        .await
        .unwrap();
    assert_eq!(again.id, second.id);
}

/// An ASK tool `copy` taking a `path` (a string, required), answering `copied <path>`.
fn copy_tool() -> harnessx::ToolDefinition {
    harnessx::ToolDefinition::new(
        "copy",
        "Copies a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        harnessx::handler_fn(|args, _| async move {
            Ok(harnessx::ToolOutput::text(format!(
                "copied {}",
                args["path"].as_str().unwrap_or("?")
            )))
        }),
    )
    .with_permission(PermissionLevel::Ask)
}

async fn an_approval_allowed_with_edited_arguments_runs_with_them_and_names_who_decided(
    stores: Stores,
) {
    let (model, _) = scripted(vec![
        Turn::Call("copy", json!({"path": "a.txt"})),
        Turn::Quote,
    ]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()).tool(copy_tool()))
        .build()
        .unwrap();
    let run = runtime.start_run(StartRun::new("a", "copy")).await.unwrap();
    let waiting = runtime.settled(run.id).await.unwrap();
    let [pending] = &waiting.needs_input[..] else {
        panic!("expected one approval: {:?}", waiting.needs_input);
    };
    let PendingKind::Approval { request } = &pending.pending.kind else {
        panic!("expected an approval: {pending:?}");
    };
    assert_eq!(request.arguments, json!({"path": "a.txt"}));
    assert_eq!(
        request.input_schema.as_ref().unwrap()["required"],
        json!(["path"])
    );

    // Arguments that do not fit, or that come with a deny, are refused; nothing changes.
    let refused = |decide: Decide| {
        let runtime = runtime.clone();
        async move { input_error(runtime.decide(run.id, decide).await.unwrap_err()) }
    };
    let e = refused(Decide::new(Decision::AllowOnce).arguments(json!({"path": 5}))).await;
    assert!(matches!(&e, InputError::InvalidArguments { field: Some(f), .. } if f == "path"));
    assert_eq!(
        e.to_string(),
        format!(
            "the edited arguments for {}'s `copy` call cannot be used: `arguments.path`: 5 is \
             not of type \"string\"; nothing was changed",
            run.id
        )
    );
    let e = refused(Decide::new(Decision::AllowOnce).arguments(json!({}))).await;
    assert_eq!(
        e.to_string(),
        format!(
            "the edited arguments for {}'s `copy` call cannot be used: `arguments`: \"path\" is \
             a required property; nothing was changed",
            run.id
        )
    );
    let e = refused(Decide::new(Decision::AllowOnce).arguments(json!(["b.txt"]))).await;
    assert!(
        e.to_string()
            .contains("`arguments`: an array given; give the call's arguments as a JSON object"),
        "{e}"
    );
    let e = refused(Decide::new(Decision::Deny).arguments(json!({"path": "b.txt"}))).await;
    assert!(
        e.to_string()
            .contains("`arguments`: a denied call does not run, so it takes no arguments"),
        "{e}"
    );
    let still = runtime.run(run.id).await.unwrap();
    assert_eq!(still.state, RunState::WaitingInput);
    assert_eq!(still.needs_input.len(), 1);

    runtime
        .decide(
            run.id,
            Decide::new(Decision::AllowOnce)
                .arguments(json!({"path": "b.txt"}))
                .by("API key …cdef"),
        )
        .await
        .unwrap();
    let done = runtime.settled(run.id).await.unwrap();
    assert_eq!(done.result.unwrap().output, "saw: copied b.txt");
    let events: Vec<StoredEvent> = runtime
        .subscribe(run.id, 0)
        .map(|e| e.unwrap())
        .collect()
        .await;
    // The decision, its arguments and who made it are on the run's `answered` event.
    let answered = events
        .iter()
        .find_map(|e| match &e.event {
            RunEvent::Answered { reply, by, .. } => Some((reply.clone(), by.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        answered,
        (
            InputReply::Decision {
                decision: harnessx::ApprovalDecision::AllowOnce,
                arguments: Some(json!({"path": "b.txt"})),
            },
            Some("API key …cdef".to_owned())
        )
    );
    // The call is shown as it ran.
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::ToolCallStarted { arguments, .. } => Some(arguments.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, [r#"{"path":"b.txt"}"#]);
}

async fn every_event_has_its_time_and_a_run_its_last_change(stores: Stores) {
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let script = vec![Turn::Call("lookup", json!({})), Turn::Quote];
    let (done, events, _, _) = settle_lookup_run(&stores, script).await;
    assert!(events.len() >= 5, "{events:?}");
    let times: Vec<i64> = events.iter().map(|e| e.at_ms.unwrap()).collect();
    // Each within the test's own clock (PostgreSQL's events are stamped by this process too).
    assert!(
        times.iter().all(|t| *t >= before - 5),
        "{times:?} before {before}"
    );
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(
        done.created_ms >= before - 1000,
        "{} {before}",
        done.created_ms
    );
    assert!(done.updated_ms >= done.created_ms);
    // Read back from the store, the run's last change is its last event's time.
    let last = *times.last().unwrap();
    assert!(
        (done.updated_ms - last).abs() < 1000,
        "updated {} last event {last}",
        done.updated_ms
    );
}

async fn conversations_are_listed_by_their_latest_run_a_page_at_a_time(stores: Stores) {
    let (model, _) = scripted(vec![Turn::Quote]);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .agent("a", move |b| b.model(model.clone()))
        .agent("b", |b| b.model(harnessx::model::TestModel::new()))
        .build()
        .unwrap();
    assert!(
        runtime
            .conversations(&ConversationFilter::new(), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let long = "x".repeat(300);
    let mut ids = Vec::new();
    for (conversation, input) in [("c1", "first"), ("c2", long.as_str()), ("c3", "third")] {
        let run = runtime
            .start_run(StartRun::new("a", input).conversation(conversation))
            .await
            .unwrap();
        runtime.settled(run.id).await.unwrap();
        ids.push(run.id);
    }
    // c1 gets a later run, of another agent: it comes first and shows that run's agent.
    let later = runtime
        .start_run(StartRun::new("b", "again").conversation("c1"))
        .await
        .unwrap();
    let later = runtime.settled(later.id).await.unwrap();
    let page = runtime
        .conversations(&ConversationFilter::new(), 2)
        .await
        .unwrap();
    let seen: Vec<(&str, &str, u64, RunState)> = page
        .iter()
        .map(|c| (c.id.as_str(), c.agent.as_str(), c.runs, c.state))
        .collect();
    assert_eq!(
        seen,
        [
            ("c1", "b", 2, later.state),
            ("c3", "a", 1, RunState::Completed)
        ]
    );
    assert_eq!(page[0].title, "first", "the title is the first message");
    assert_eq!(page[0].last_run, later.id);
    assert!(page[0].updated_ms >= page[0].created_ms);
    assert_eq!(page[0].updated_ms, later.updated_ms);
    // The next page starts below the last one's latest run.
    let next = runtime
        .conversations(&ConversationFilter::new().before(page[1].last_run), 2)
        .await
        .unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].id, "c2");
    assert_eq!(next[0].last_run, ids[1]);
    let title = &next[0].title;
    assert_eq!(title.chars().count(), harnessx_runtime::TITLE_CHARS + 1);
    assert!(title.ends_with("x…"), "{title}");
    assert!(
        runtime
            .conversations(&ConversationFilter::new().before(ids[1]), 2)
            .await
            .unwrap()
            .is_empty()
    );
}

/// An approval paused before approval requests carried their tool's schema: edited arguments
/// cannot be checked, so they are refused; a plain decision still answers it.
async fn an_approval_asked_without_its_schema_refuses_edited_arguments(stores: Stores) {
    use harnessx_runtime::store::{Asked, Reply};
    let store = stores.fresh().await;
    let (run, _) = store.create_run(common::new_run("go")).await.unwrap();
    let claim = store.claim_next("w", 60_000).await.unwrap().unwrap();
    let pending = harnessx_runtime::PendingInput {
        key: harnessx::journal::StepKey { turn: 1, index: 0 },
        call_id: "c1".into(),
        kind: PendingKind::Approval {
            request: harnessx::ApprovalRequest {
                call_id: "c1".into(),
                tool_name: "copy".into(),
                arguments: json!({"path": "a.txt"}),
                description: "Copies a file.".into(),
                input_schema: None,
            },
        },
    };
    store
        .pause_for_input(
            &claim.lease,
            vec![Asked {
                pending,
                deadline_ms: None,
            }],
            Vec::new(),
        )
        .await
        .unwrap();
    let refused = store
        .answer(
            run.id,
            Reply::Edited {
                decision: Decision::AllowOnce,
                arguments: json!({"path": "b.txt"}),
            },
            None,
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "the edited arguments for {}'s `copy` call cannot be used: `arguments`: this approval \
             was asked before its tool's schema was kept with it, so edited arguments cannot be \
             checked; decide without `arguments`; nothing was changed",
            run.id
        )
    );
    let answered = store
        .answer(
            run.id,
            Reply::Decision(Decision::AllowOnce),
            Some("ops".into()),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(answered.requeued);
    assert!(matches!(
        &answered.events[0].event,
        RunEvent::Answered { by: Some(by), reply: InputReply::Decision { arguments: None, .. }, .. } if by == "ops"
    ));
}

async fn an_agent_registered_in_code_is_built_once_and_its_runs_proceed_together(stores: Stores) {
    let (model, _) = scripted(vec![Turn::Call("meet", json!({})), Turn::Quote]);
    // Each call waits for the other run's: both runs must be in their tool call at once.
    let meeting = Arc::new(tokio::sync::Barrier::new(2));
    let meet = harnessx::ToolDefinition::new(
        "meet",
        "Waits for the other run.",
        json!({"type": "object"}),
        harnessx::handler_fn(move |_, _| {
            let meeting = Arc::clone(&meeting);
            async move {
                match tokio::time::timeout(Duration::from_secs(30), meeting.wait()).await {
                    Ok(_) => Ok(harnessx::ToolOutput::text("met")),
                    Err(_) => Err(harnessx::ToolError::failed("the other run never came")),
                }
            }
        }),
    );
    let built = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&built);
    let runtime = Runtime::builder()
        .store_arc(stores.fresh().await)
        .workers(2)
        .agent("a", move |b| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            b.model(model).tool(meet)
        })
        .build()
        .unwrap();
    let first = runtime.start_run(StartRun::new("a", "one")).await.unwrap();
    let second = runtime.start_run(StartRun::new("a", "two")).await.unwrap();
    for id in [first.id, second.id] {
        let done = runtime.settled(id).await.unwrap();
        assert_eq!(done.state, RunState::Completed, "{done:?}");
        assert_eq!(done.result.unwrap().output, "saw: met");
    }
    assert_eq!(count(&built), 1);
}

#[tokio::test]
async fn an_agent_that_cannot_be_built_stops_the_runtime_build_naming_it() {
    let err = Runtime::builder()
        .store(harnessx_runtime::SqliteStore::in_memory().unwrap())
        .agent("support", |b| b)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid runtime configuration: agent `support` could not be built: the agent has no \
         model: call `.model(..)` on the builder before `build()`"
    );
}
