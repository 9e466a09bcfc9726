//! `/v2/runs`: start, read, list, answer, decide, cancel.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use harnessx_runtime::store::RunFilter;
use harnessx_runtime::{
    Answer, Decision, Multitask, QuestionAnswer, RecoveryChoice, RunId, RunState, RunView, StartRun,
};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::extract::{ApiJson, ApiQuery, RunPath, idempotency_key};
use super::pending::Pending;
use crate::error::{ApiError, ErrorBody};

/// A run as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunBody {
    /// The run id.
    pub id: i64,
    /// The agent's name.
    pub agent: String,
    /// The agent's version the run started with (and resumes with).
    pub agent_version: Option<u64>,
    /// When it was created (RFC 3339, UTC, milliseconds).
    pub created_at: String,
    /// The conversation.
    pub conversation: String,
    /// The user's message.
    pub input: String,
    /// `queued`, `running`, `waiting_input`, `completed`, `failed` or `cancelled`.
    #[schema(value_type = String)]
    pub state: String,
    /// What the run waits for (questions, approvals, recovery questions), in call order.
    pub needs_input: Vec<Pending>,
    /// The final answer, once completed.
    pub output: Option<String>,
    /// The whole result (messages, usage), once completed.
    #[schema(value_type = Option<Object>)]
    pub result: Option<serde_json::Value>,
    /// Why it failed.
    pub error: Option<String>,
}

impl From<RunView> for RunBody {
    fn from(run: RunView) -> Self {
        Self {
            id: run.id.0,
            agent: run.agent,
            agent_version: run.agent_version,
            created_at: super::rfc3339(run.created_ms),
            conversation: run.conversation,
            input: run.input,
            state: run.state.as_str().to_owned(),
            needs_input: run
                .needs_input
                .iter()
                .map(|asked| Pending::of(run.id, asked))
                .collect(),
            output: run.result.as_ref().map(|r| r.output.clone()),
            result: run
                .result
                .as_ref()
                .and_then(|r| serde_json::to_value(r).ok()),
            error: run.error,
        }
    }
}

/// `POST /v2/runs`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRun {
    /// The agent's name.
    pub agent: String,
    /// The user's message.
    pub input: String,
    /// The conversation to continue (a new one when absent).
    #[serde(default)]
    pub conversation: Option<String>,
    /// While the conversation's run is still going: `enqueue` (default: start after it),
    /// `reject` (409 `conversation_busy`) or `interrupt` (cancel it, then start).
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "enqueue")]
    pub multitask_strategy: Option<Multitask>,
}

impl CreateRun {
    /// A run of `agent` on `input`, in a new conversation.
    pub fn new(agent: impl Into<String>, input: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            input: input.into(),
            conversation: None,
            multitask_strategy: None,
        }
    }

    /// In `conversation`.
    pub fn conversation(mut self, conversation: impl Into<String>) -> Self {
        self.conversation = Some(conversation.into());
        self
    }
}

/// Starts a run (or returns the run of a reused `Idempotency-Key`).
#[utoipa::path(post, path = "/v2/runs", tag = "runs",
    request_body = CreateRun,
    params(("Idempotency-Key" = Option<String>, Header, description = "Reusing a key with the same body returns the run it started (for 24 hours); with another body it is 422, and while the first request is still being handled 409")),
    responses(
        (status = 200, description = "The run", body = RunBody),
        (status = 400, description = "Malformed body or header", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown agent", body = ErrorBody),
        (status = 409, description = "The conversation is busy (strategy `reject`), or the key's first request is still being handled", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Invalid body", body = ErrorBody),
    ))]
pub(crate) async fn create_run(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateRun>,
) -> Result<Json<RunBody>, ApiError> {
    let key = idempotency_key(&headers)?;
    // A key whose first request this server is still handling: the retry came too soon.
    let _in_flight = match &key {
        Some(k) => Some(state.idempotency.begin(k).ok_or_else(|| {
            ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "idempotency_key_in_use",
                "a request with this Idempotency-Key is still being handled; retry when it has \
                 answered",
            )
        })?),
        None => None,
    };
    if let Some(c) = &body.conversation {
        super::conversations::check_conversation_id(c)?;
    }
    let mut start = StartRun::new(body.agent, body.input);
    start.conversation = body.conversation;
    start.idempotency_key = key;
    start.multitask = body.multitask_strategy.unwrap_or_default();
    Ok(Json(state.runtime.start_run(start).await?.into()))
}

/// Reads a run.
#[utoipa::path(get, path = "/v2/runs/{run_id}", tag = "runs",
    params(("run_id" = i64, Path, description = "The run id")),
    responses(
        (status = 200, description = "The run", body = RunBody),
        (status = 400, description = "Not a run id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown run", body = ErrorBody),
    ))]
pub(crate) async fn get_run(
    State(state): State<Arc<AppState>>,
    RunPath(id): RunPath,
) -> Result<Json<RunBody>, ApiError> {
    Ok(Json(state.runtime.run(id).await?.into()))
}

/// `GET /v2/runs` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// At most this many (1–200, default 50).
    pub limit: Option<i64>,
    /// The cursor: only runs with an id below this (the `next_before` of the page before).
    pub before: Option<i64>,
    /// Only runs of this agent.
    pub agent: Option<String>,
    /// Only runs in this state (`queued`, `running`, `waiting_input`, `completed`, `failed`,
    /// `cancelled`).
    pub state: Option<String>,
    /// Only runs of this conversation.
    pub conversation: Option<String>,
}

/// A page of runs, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunList {
    /// The runs.
    pub runs: Vec<RunBody>,
    /// The cursor of the next page (its `before`), when this page is full.
    pub next_before: Option<i64>,
}

/// Lists runs, newest first.
#[utoipa::path(get, path = "/v2/runs", tag = "runs", params(ListQuery),
    responses(
        (status = 200, description = "Runs, newest first", body = RunList),
        (status = 400, description = "Bad query", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
    ))]
pub(crate) async fn list_runs(
    State(state): State<Arc<AppState>>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<RunList>, ApiError> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("limit is {limit}; give 1 to 200"),
        ));
    }
    let before = match query.before {
        None => None,
        Some(n) if n > 0 => Some(RunId(n)),
        Some(n) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                format!("before is {n}; give a run id (a positive integer)"),
            ));
        }
    };
    let mut filter = RunFilter::new();
    filter.before = before;
    filter.agent = query.agent;
    filter.conversation = query.conversation;
    if let Some(s) = query.state {
        filter.state = Some(RunState::parse(&s).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_query",
                format!(
                    "state is `{}`; give queued, running, waiting_input, completed, failed or \
                     cancelled",
                    super::extract::shorten(&s)
                ),
            )
        })?);
    }
    let limit = usize::try_from(limit).unwrap_or(50);
    let runs = state.runtime.runs(&filter, limit).await?;
    let next_before = (runs.len() == limit)
        .then(|| runs.last().map(|r| r.id.0))
        .flatten();
    Ok(Json(RunList {
        runs: runs.into_iter().map(RunBody::from).collect(),
        next_before,
    }))
}

/// One question's answer: options chosen by label, and/or the person's own words.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectionBody {
    /// The labels chosen.
    #[serde(default)]
    pub selected: Vec<String>,
    /// Free text.
    #[serde(default)]
    pub text: Option<String>,
}

/// An answer: `answers` (one per question), `text` (free text), or `recovery` (for a
/// recovery question: `{"choice": "took_effect" | "run_again" | "skip"}`). Exactly one.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    /// One answer per question, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Vec<SelectionBody>>,
    /// The person's own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A recovery choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub recovery: Option<RecoveryChoice>,
}

impl AnswerBody {
    /// The person's own words.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// The options chosen, by label, for a one-question form.
    pub fn selected(labels: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            answers: Some(vec![SelectionBody {
                selected: labels.into_iter().map(Into::into).collect(),
                text: None,
            }]),
            ..Self::default()
        }
    }

    fn into_answer(self) -> Result<Answer, ApiError> {
        match (self.answers, self.text, self.recovery) {
            (Some(answers), None, None) => Ok(Answer::Selections {
                answers: answers
                    .into_iter()
                    .map(|a| QuestionAnswer {
                        selected: a.selected,
                        text: a.text,
                    })
                    .collect(),
            }),
            (None, Some(text), None) => Ok(Answer::Text { text }),
            (None, None, Some(choice)) => Ok(Answer::Recovery { choice }),
            _ => Err(ApiError::unprocessable(
                "invalid_body",
                "give exactly one of `answers` (one per question), `text` or `recovery`",
            )),
        }
    }
}

/// Answers the run's pending question (or recovery question).
#[utoipa::path(post, path = "/v2/runs/{run_id}/answer", tag = "runs",
    params(("run_id" = i64, Path, description = "The run id")),
    request_body = AnswerBody,
    responses(
        (status = 200, description = "The run, re-queued when nothing else is pending", body = RunBody),
        (status = 400, description = "Malformed body or id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown run", body = ErrorBody),
        (status = 409, description = "Nothing of this kind is pending", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "The answer does not fit the question", body = ErrorBody),
    ))]
pub(crate) async fn answer(
    State(state): State<Arc<AppState>>,
    RunPath(id): RunPath,
    ApiJson(body): ApiJson<AnswerBody>,
) -> Result<Json<RunBody>, ApiError> {
    let answer = body.into_answer()?;
    Ok(Json(state.runtime.answer(id, answer).await?.into()))
}

/// A decision on a pending approval.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalBody {
    /// `allow_once`, `allow_for_conversation` or `deny`.
    #[schema(value_type = String, example = "allow_once")]
    pub decision: Decision,
}

/// Decides the run's pending approval.
#[utoipa::path(post, path = "/v2/runs/{run_id}/approval", tag = "runs",
    params(("run_id" = i64, Path, description = "The run id")),
    request_body = ApprovalBody,
    responses(
        (status = 200, description = "The run", body = RunBody),
        (status = 400, description = "Malformed body or id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown run", body = ErrorBody),
        (status = 409, description = "No approval is pending", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Invalid body", body = ErrorBody),
    ))]
pub(crate) async fn approval(
    State(state): State<Arc<AppState>>,
    RunPath(id): RunPath,
    ApiJson(body): ApiJson<ApprovalBody>,
) -> Result<Json<RunBody>, ApiError> {
    Ok(Json(state.runtime.decide(id, body.decision).await?.into()))
}

/// Cancels a run.
#[utoipa::path(post, path = "/v2/runs/{run_id}/cancel", tag = "runs",
    params(("run_id" = i64, Path, description = "The run id")),
    responses(
        (status = 200, description = "The run (cancelled, or cancelling while its worker lets go)", body = RunBody),
        (status = 400, description = "Not a run id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown run", body = ErrorBody),
        (status = 409, description = "Already finished", body = ErrorBody),
    ))]
pub(crate) async fn cancel(
    State(state): State<Arc<AppState>>,
    RunPath(id): RunPath,
) -> Result<Json<RunBody>, ApiError> {
    Ok(Json(state.runtime.cancel(id).await?.into()))
}
