//! `POST /v2/runs/prune`: deletes finished runs older than an age, at once (see
//! [`crate::retention`]).

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::extract::ApiJson;
use crate::error::{ApiError, ErrorBody};
use crate::retention::{MAX_RETAIN_DAYS, PRUNE_BATCH, PRUNE_PAUSE, cutoff_ms, prune};

/// Which finished runs to delete.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneBody {
    /// Delete the runs that completed, failed or were cancelled more than this many seconds ago
    /// (0: every finished run). 2592000 is 30 days.
    pub older_than_seconds: i64,
}

/// What a prune deleted.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Pruned {
    /// How many runs were deleted (with their events and journal).
    pub deleted: u64,
    /// The cut-off: runs that finished before this instant (RFC 3339, UTC) were deleted.
    pub finished_before: String,
}

/// Deletes finished runs older than an age, with their events, journal and pending rows, and
/// conversations left without runs. Queued, running and waiting runs are never deleted.
#[utoipa::path(post, path = "/v2/runs/prune", tag = "runs",
    request_body = PruneBody,
    responses(
        (status = 200, description = "How many runs were deleted", body = Pruned),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Invalid body", body = ErrorBody),
    ))]
pub(crate) async fn prune_runs(
    State(state): State<Arc<AppState>>,
    ApiJson(body): ApiJson<PruneBody>,
) -> Result<Json<Pruned>, ApiError> {
    let most = MAX_RETAIN_DAYS * 86_400;
    let seconds = u64::try_from(body.older_than_seconds)
        .ok()
        .filter(|s| *s <= most.unsigned_abs())
        .ok_or_else(|| {
            ApiError::unprocessable(
                "invalid_body",
                format!(
                    "older_than_seconds is {}; give 0 to {most} seconds (2592000 is 30 days)",
                    body.older_than_seconds
                ),
            )
        })?;
    let before = cutoff_ms(Duration::from_secs(seconds));
    let deleted = prune(
        state.runtime.store().as_ref(),
        before,
        PRUNE_BATCH,
        PRUNE_PAUSE,
    )
    .await
    .map_err(|e| {
        tracing::error!(error = %e, "deleting finished runs failed");
        ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "runtime_error",
            "the run store failed while deleting finished runs; the batches deleted before stay \
             deleted, send the request again for the rest",
        )
    })?;
    Ok(Json(Pruned {
        deleted,
        finished_before: super::rfc3339(before),
    }))
}
