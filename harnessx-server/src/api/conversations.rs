//! `/v2/conversations`: the conversations by their latest run, newest first (a page at a time),
//! each one's transcript with `pending_question`, and messages that answer it or start the
//! next run.

use std::sync::Arc;

use axum::extract::State;
use axum::{Extension, Json};
use harnessx_runtime::store::ConversationFilter;
use harnessx_runtime::{Answer, ConversationSummary, RunId, StartRun};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::Caller;
use super::extract::{ApiJson, ApiQuery, IdPath};
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

/// `GET /v2/conversations` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ConversationsQuery {
    /// At most this many (1–200, default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// The cursor: only conversations whose latest run has an id below this (the
    /// `next_before` of the page before).
    #[param(minimum = 1)]
    pub before: Option<i64>,
}

/// A conversation in the list.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationItem {
    /// The id.
    pub id: String,
    /// The agent of its latest run.
    pub agent: String,
    /// Its first message, cut to 120 characters (and `…`).
    pub title: String,
    /// How many runs it has.
    pub runs: u64,
    /// Its latest run's id.
    pub last_run: i64,
    /// Its latest run's state: `queued`, `running`, `waiting_input`, `completed`, `failed`
    /// or `cancelled`.
    pub state: String,
    /// When it started (RFC 3339, UTC, milliseconds).
    pub created_at: String,
    /// Its last activity: when its latest run last changed (RFC 3339, UTC, milliseconds).
    pub updated_at: String,
}

impl From<ConversationSummary> for ConversationItem {
    fn from(c: ConversationSummary) -> Self {
        Self {
            id: c.id,
            agent: c.agent,
            title: c.title,
            runs: c.runs,
            last_run: c.last_run.0,
            state: c.state.as_str().to_owned(),
            created_at: super::rfc3339(c.created_ms),
            updated_at: super::rfc3339(c.updated_ms),
        }
    }
}

/// A page of conversations, by their latest run, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationList {
    /// The conversations.
    pub conversations: Vec<ConversationItem>,
    /// The cursor of the next page (its `before`), when this page is full.
    pub next_before: Option<i64>,
}

/// Lists conversations by their latest run, newest first.
#[utoipa::path(get, path = "/v2/conversations", tag = "conversations", params(ConversationsQuery),
    responses(
        (status = 200, description = "Conversations, the one with the newest run first", body = ConversationList),
        (status = 400, description = "Bad query", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
    ))]
pub(crate) async fn list_conversations(
    State(state): State<Arc<AppState>>,
    ApiQuery(query): ApiQuery<ConversationsQuery>,
) -> Result<Json<ConversationList>, ApiError> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("limit is {limit}; give 1 to 200"),
        ));
    }
    let mut filter = ConversationFilter::new();
    match query.before {
        None => {}
        Some(n) if n > 0 => filter = filter.before(RunId(n)),
        Some(n) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                format!("before is {n}; give a run id (a positive integer)"),
            ));
        }
    }
    let limit = usize::try_from(limit).unwrap_or(50);
    let page = state.runtime.conversations(&filter, limit).await?;
    let next_before = (page.len() == limit)
        .then(|| page.last().map(|c| c.last_run.0))
        .flatten();
    Ok(Json(ConversationList {
        conversations: page.into_iter().map(ConversationItem::from).collect(),
        next_before,
    }))
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
    Extension(caller): Extension<Caller>,
    IdPath(id): IdPath,
    ApiJson(body): ApiJson<MessageBody>,
) -> Result<Json<MessageOutcome>, ApiError> {
    let c = state.runtime.conversation(&id).await?;
    if let Some((run, _)) = c.pending_question {
        let run = state
            .runtime
            .answer_as(run, Answer::Text { text: body.text }, Some(caller.0))
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
