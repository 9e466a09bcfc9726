//! `/v2/conversations/{id}`: the transcript with `pending_question`, and messages that answer it
//! or start the next run.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use harnessx_runtime::{Answer, StartRun};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::extract::{ApiJson, IdPath};
use super::pending::Pending;
use super::runs::RunBody;
use crate::error::{ApiError, ErrorBody};

pub(crate) fn check_conversation_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > 200 || id.chars().any(char::is_control) {
        return Err(ApiError::unprocessable(
            "invalid_body",
            "conversation: an id is 1 to 200 bytes of text without control characters",
        ));
    }
    Ok(())
}

/// A conversation.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationBody {
    /// The id.
    pub id: String,
    /// The transcript of its completed runs.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<serde_json::Value>,
    /// Its runs, oldest first.
    pub runs: Vec<i64>,
    /// The question a run of the conversation waits on: a new message answers it.
    pub pending_question: Option<Pending>,
}

/// Reads a conversation.
#[utoipa::path(get, path = "/v2/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    responses(
        (status = 200, description = "The conversation", body = ConversationBody),
        (status = 400, description = "Not an id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown conversation", body = ErrorBody),
    ))]
pub(crate) async fn get_conversation(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
) -> Result<Json<ConversationBody>, ApiError> {
    let c = state.runtime.conversation(&id).await?;
    Ok(Json(ConversationBody {
        id: c.id,
        messages: c
            .messages
            .iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect(),
        runs: c.runs.iter().map(|r| r.0).collect(),
        pending_question: c
            .pending_question
            .map(|(run, asked)| Pending::of(run, &asked)),
    }))
}

/// A new message in a conversation.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageBody {
    /// The text.
    pub text: String,
    /// The agent for a new run (default: the agent of the conversation's last run).
    #[serde(default)]
    pub agent: Option<String>,
    /// While the conversation's run is still going (not waiting on a question): `enqueue`
    /// (default: start after it), `reject` (409 `conversation_busy`) or `interrupt` (cancel
    /// it, then start).
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "enqueue")]
    pub multitask_strategy: Option<harnessx_runtime::Multitask>,
}

/// What a message did.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MessageOutcome {
    /// `true`: it answered the pending question of `run`; `false`: it started `run`.
    pub answered: bool,
    /// The run it answered or started.
    pub run: RunBody,
}

/// Posts a message: the free-text answer to a pending question, otherwise the next run.
#[utoipa::path(post, path = "/v2/conversations/{id}/messages", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = MessageBody,
    responses(
        (status = 200, description = "The run answered or started", body = MessageOutcome),
        (status = 400, description = "Malformed body or id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown conversation or agent", body = ErrorBody),
        (status = 409, description = "The question was answered meanwhile, or the conversation is busy (strategy `reject`)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Invalid body", body = ErrorBody),
    ))]
pub(crate) async fn post_message(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
    ApiJson(body): ApiJson<MessageBody>,
) -> Result<Json<MessageOutcome>, ApiError> {
    let c = state.runtime.conversation(&id).await?;
    if let Some((run, _)) = c.pending_question {
        let run = state
            .runtime
            .answer(run, Answer::Text { text: body.text })
            .await?;
        return Ok(Json(MessageOutcome {
            answered: true,
            run: run.into(),
        }));
    }
    let agent = match body.agent {
        Some(agent) => agent,
        None => match c.runs.last() {
            Some(last) => state.runtime.run(*last).await?.agent,
            None => {
                return Err(ApiError::unprocessable(
                    "invalid_body",
                    "agent: the conversation has no run to take the agent from; name one",
                ));
            }
        },
    };
    let run = state
        .runtime
        .start_run(
            StartRun::new(agent, body.text)
                .conversation(id)
                .multitask(body.multitask_strategy.unwrap_or_default()),
        )
        .await?;
    Ok(Json(MessageOutcome {
        answered: false,
        run: run.into(),
    }))
}
