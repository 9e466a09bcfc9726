//! `GET /v2/runs/{run_id}/events`: a run's stored events as server-sent events, each with its
//! sequence number as the SSE id, so `Last-Event-ID` resumes after the last one seen. A run
//! asking a person sends a `question`, `approval` or `recovery` frame.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use harnessx_runtime::store::Asked;
use harnessx_runtime::{PendingKind, RunEvent, RunId, StoredEvent};
use serde::Deserialize;

use super::AppState;
use super::extract::{ApiQuery, MAX_SEQUENCE, RunPath, last_event_id};
use super::pending::Pending;
use crate::error::{ApiError, ErrorBody};

/// The frame name of an event: `question`, `approval` and `recovery` for what a run asks,
/// otherwise the event's type (`text_delta`, `tool_call_started`, `tool_result`, `state`,
/// `completed`, ...).
pub fn frame_name(event: &RunEvent) -> String {
    if let RunEvent::NeedsInput { pending, .. } = event {
        return match pending.kind {
            PendingKind::Question { .. } => "question",
            PendingKind::Approval { .. } => "approval",
            PendingKind::Recovery { .. } => "recovery",
        }
        .to_owned();
    }
    serde_json::to_value(event)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "event".to_owned())
}

/// The frame of a stored event of run `run`: its data is the event as JSON with the frame's
/// name as its `type`; what a run asks is `{"type": "question", "pending": {..}}`, the
/// [`Pending`] a run's `needs_input` lists.
fn frame(run: RunId, event: &StoredEvent) -> Event {
    let name = frame_name(&event.event);
    let data = match &event.event {
        RunEvent::NeedsInput {
            pending,
            deadline_ms,
        } => {
            let asked = Asked {
                pending: pending.clone(),
                deadline_ms: *deadline_ms,
            };
            serde_json::json!({"type": name, "pending": Pending::of(run, &asked)}).to_string()
        }
        other => serde_json::to_string(other).unwrap_or_else(|_| "{}".into()),
    };
    Event::default()
        .id(event.seq.to_string())
        .event(name)
        .data(data)
}

/// `?after=` (the same as `Last-Event-ID`, for clients that cannot set headers).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Resume after this sequence number.
    pub after: Option<u64>,
}

/// One server-sent event of a run's stream, as the OpenAPI document describes each frame.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct EventFrame {
    /// The event's sequence number in the run (resume after it with `Last-Event-ID`).
    pub id: String,
    /// The frame name: `state`, `text_delta`, `turn_completed`, `tool_call_started`,
    /// `tool_result`, `question`, `approval`, `completed`, ...
    pub event: String,
    /// The event as JSON; its `type` is the frame name. A `question`, `approval` or `recovery`
    /// frame carries `{"type", "pending"}`, `pending` being the [`Pending`] the run lists.
    pub data: String,
}

/// Streams a run's events (server-sent events).
#[utoipa::path(get, path = "/v2/runs/{run_id}/events", tag = "runs",
    params(("run_id" = i64, Path, description = "The run id"),
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this sequence number"),
        EventsQuery),
    responses(
        (status = 200, description = "Server-sent events: `id` is the sequence number, `event` the frame name", content_type = "text/event-stream", body = EventFrame),
        (status = 400, description = "Not a run id, or a bad Last-Event-ID", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown run", body = ErrorBody),
        (status = 503, description = "Too many event streams are open", body = ErrorBody),
    ))]
pub(crate) async fn events(
    State(state): State<Arc<AppState>>,
    RunPath(id): RunPath,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    if query.after.is_some_and(|after| after > MAX_SEQUENCE) {
        return Err(ApiError::bad_request(
            "invalid_after",
            "`after` must be a sequence number of at most 9223372036854775807",
        ));
    }
    let after = last_event_id(&headers)?.or(query.after).unwrap_or(0);
    let run = state.runtime.run(id).await?;
    let permit = Arc::clone(&state.subscribers)
        .try_acquire_owned()
        .map_err(|_| {
            ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "too_many_subscribers",
                "the server has as many event streams open as it allows; retry later, or \
                 poll GET /v2/runs/{run_id}",
            )
        })?;
    // A finished run's events are all stored: send those after `after` and end, rather than
    // wait for live events that will never come.
    let live = if run.state.is_terminal() {
        let stored = state
            .runtime
            .store()
            .events_after(id, after, usize::MAX)
            .await
            .map_err(|e| ApiError::from(harnessx_runtime::RuntimeError::from(e)))?;
        futures::stream::iter(stored.into_iter().map(Ok)).boxed()
    } else {
        state.runtime.subscribe(id, after).boxed()
    };
    let stream = live.map(move |item| {
        let _held = &permit;
        Ok(match item {
            Ok(event) => frame(id, &event),
            Err(e) => Event::default().event("error").data(
                serde_json::json!({"code": "stream_failed", "message": e.to_string()}).to_string(),
            ),
        })
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
