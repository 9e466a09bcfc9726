//! What a load balancer, an orchestrator and a scraper ask: `/healthz` (the process is up),
//! `/readyz` (its store answers, with the schema this release knows) and `/metrics`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::AppState;
use crate::error::{ApiError, ErrorBody};

/// How long `/readyz` and `/metrics` wait for the store before they report it unavailable.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(3);

/// Always `{"status": "ok"}`; needs no key.
#[utoipa::path(get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, description = "The process is up (liveness)", body = Object)))]
pub(crate) async fn healthz() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({"status": "ok"}))
}

/// `/readyz` when the server can take requests.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Ready {
    /// Always `ready`.
    pub status: &'static str,
    /// The store's schema version: the one this release knows.
    pub schema_version: i64,
}

/// Whether the server can take requests: its store answers and holds the schema this release
/// knows. Needs no key. (A store that does not answer is counted by the request's span.)
#[utoipa::path(get, path = "/readyz", tag = "health", security(()),
    responses(
        (status = 200, description = "The store answers and its schema is this release's", body = Ready),
        (status = 503, description = "Not ready: `store_unavailable` (the store did not answer), `schema_behind` (migrations not applied) or `schema_ahead` (a newer release migrated the database)", body = ErrorBody),
    ))]
pub(crate) async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let asked = tokio::time::timeout(PROBE_DEADLINE, state.runtime.store().schema()).await;
    let unavailable = |code, message: String| {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, message).into_response()
    };
    match asked {
        Ok(Ok(schema)) if schema.is_current() => axum::Json(Ready {
            status: "ready",
            schema_version: schema.found,
        })
        .into_response(),
        Ok(Ok(schema)) if schema.found < schema.known => unavailable(
            "schema_behind",
            format!(
                "the database's schema is version {}, older than this release's {}: its \
                 migrations are not applied; restart the server, which applies them as it starts",
                schema.found, schema.known
            ),
        ),
        Ok(Ok(schema)) => unavailable(
            "schema_ahead",
            format!(
                "the database's schema is version {}, newer than this release's {}: a newer \
                 release migrated it; upgrade this server",
                schema.found, schema.known
            ),
        ),
        Ok(Err(e)) => {
            // The store's message can name hosts and users: it goes to the log, not to a
            // caller without a key.
            tracing::warn!(error = %e, "/readyz: the run store did not answer");
            unavailable(
                "store_unavailable",
                "the run store did not answer; check the database (the server's log says why)"
                    .into(),
            )
        }
        Err(_) => {
            tracing::warn!("/readyz: the run store did not answer within {PROBE_DEADLINE:?}");
            unavailable(
                "store_unavailable",
                format!(
                    "the run store did not answer within {} s; check the database",
                    PROBE_DEADLINE.as_secs()
                ),
            )
        }
    }
}

/// Every metric in the Prometheus text format (see `harnessx/docs/production.md`).
pub(crate) async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let body = state.metrics.render(&state.runtime, PROBE_DEADLINE).await;
    let mut response = body.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    response
}
