//! Checking a reply against what a run waits for (every store calls it inside its transaction).

use harnessx::journal::{InputReply, PendingInput, PendingKind, UserReply};
use harnessx::{ApprovalDecision, ApprovalRequest};
use serde_json::Value;

use crate::error::InputError;
use crate::store::Reply;
use crate::types::{Answer, Decision, RunId};

fn kind_name(kind: &PendingKind) -> &'static str {
    match kind {
        PendingKind::Question { .. } => "an answer to a question",
        PendingKind::Approval { .. } => "an approval decision",
        PendingKind::Recovery { .. } => "an answer to a recovery question",
    }
}

fn given_name(reply: &Reply) -> &'static str {
    match reply {
        Reply::Answer(Answer::Recovery { .. }) => "a recovery choice",
        Reply::Answer(_) => "an answer",
        Reply::Decision(_) | Reply::Edited { .. } => "a decision",
    }
}

/// What to send instead, in words any caller understands (a Rust program, the HTTP API, the
/// command line): the message reaches all of them.
fn hint(kind: &PendingKind) -> &'static str {
    match kind {
        PendingKind::Question { .. } => {
            "answer it with the options chosen or in words; nothing was changed"
        }
        PendingKind::Approval { .. } => {
            "decide it: allow once, allow for the conversation, or deny; nothing was changed"
        }
        PendingKind::Recovery { .. } => {
            "answer it: the call took effect, run it again, or skip it; nothing was changed"
        }
    }
}

/// Whether `reply` is meant for this kind of item.
fn fits(kind: &PendingKind, reply: &Reply) -> bool {
    matches!(
        (kind, reply),
        (
            PendingKind::Question { .. },
            Reply::Answer(Answer::Selections { .. } | Answer::Text { .. })
        ) | (
            PendingKind::Approval { .. },
            Reply::Decision(_) | Reply::Edited { .. }
        ) | (
            PendingKind::Recovery { .. },
            Reply::Answer(Answer::Recovery { .. })
        )
    )
}

/// Picks the first unanswered item `reply` is meant for and checks it; returns its index and
/// the reply to journal.
pub(crate) fn check(
    run: RunId,
    unanswered: &[PendingInput],
    reply: &Reply,
) -> Result<(usize, InputReply), InputError> {
    let Some(first) = unanswered.first() else {
        return Err(InputError::NotWaiting {
            run,
            state: crate::types::RunState::WaitingInput,
        });
    };
    let Some(i) = unanswered.iter().position(|p| fits(&p.kind, reply)) else {
        return Err(InputError::WrongKind {
            run,
            waits_for: kind_name(&first.kind),
            given: given_name(reply),
            hint: hint(&first.kind),
        });
    };
    let journaled = match (&unanswered[i].kind, reply) {
        (PendingKind::Question { form, .. }, Reply::Answer(answer)) => {
            let user = match answer {
                Answer::Selections { answers } => UserReply::Answers {
                    answers: answers.clone(),
                },
                Answer::Text { text } => UserReply::FreeText { text: text.clone() },
                Answer::Recovery { .. } => unreachable_fit(run)?,
            };
            form.check(&user)
                .map_err(|message| InputError::Invalid { run, message })?;
            InputReply::Answer { reply: user }
        }
        (PendingKind::Recovery { .. }, Reply::Answer(Answer::Recovery { choice })) => {
            InputReply::Recovery {
                choice: choice.clone(),
            }
        }
        (PendingKind::Approval { .. }, Reply::Decision(d)) => InputReply::Decision {
            decision: approval_decision(*d),
            arguments: None,
        },
        (
            PendingKind::Approval { request },
            Reply::Edited {
                decision,
                arguments,
            },
        ) => {
            check_edited(run, request, *decision, arguments)?;
            InputReply::Decision {
                decision: approval_decision(*decision),
                arguments: Some(arguments.clone()),
            }
        }
        _ => unreachable_fit(run)?,
    };
    Ok((i, journaled))
}

fn approval_decision(d: Decision) -> ApprovalDecision {
    match d {
        Decision::AllowOnce => ApprovalDecision::AllowOnce,
        Decision::AllowForConversation => ApprovalDecision::AllowSession,
        Decision::Deny => ApprovalDecision::Deny,
    }
}

/// Checks arguments a person edited: they go with an allow, and fit the tool's input schema.
fn check_edited(
    run: RunId,
    request: &ApprovalRequest,
    decision: Decision,
    arguments: &Value,
) -> Result<(), InputError> {
    let invalid = |field: Option<String>, problem: String| InputError::InvalidArguments {
        run,
        tool: request.tool_name.clone(),
        field,
        problem,
    };
    if decision == Decision::Deny {
        return Err(invalid(
            None,
            "a denied call does not run, so it takes no arguments; allow it with them, or deny \
             without `arguments`"
                .to_owned(),
        ));
    }
    if !arguments.is_object() {
        return Err(invalid(
            None,
            format!(
                "{} given; give the call's arguments as a JSON object",
                harnessx::schema::json_kind(arguments)
            ),
        ));
    }
    let Some(schema) = &request.input_schema else {
        return Err(invalid(
            None,
            "this approval was asked before its tool's schema was kept with it, so edited \
             arguments cannot be checked; decide without `arguments`"
                .to_owned(),
        ));
    };
    harnessx::schema::check_arguments(schema, arguments).map_err(|e| {
        let more = match e.more {
            0 => String::new(),
            1 => " (1 more problem after this one)".to_owned(),
            n => format!(" ({n} more problems after this one)"),
        };
        invalid(e.field, format!("{}{more}", e.problem))
    })
}

/// `fits` already matched kind and reply; reaching this means the two disagree.
fn unreachable_fit<T>(run: RunId) -> Result<T, InputError> {
    Err(InputError::Invalid {
        run,
        message: "the reply does not match the pending item".to_owned(),
    })
}
