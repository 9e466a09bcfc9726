//! `/v2/webhooks`: the stored webhooks ([`crate::webhooks`]) — created, read, changed and
//! deleted — and each one's delivery log. The secret is never returned, except once in the
//! answer to the `POST` that made the server generate it.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::extract::{ApiJson, ApiQuery, IdPath, shorten};
use crate::error::{ApiError, ErrorBody};
use crate::webhooks::{
    CreatedWebhook, DeliveryView, NewWebhook, WebhookChangeError, WebhookPatch, WebhookView,
    Webhooks,
};

/// The webhooks.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookList {
    /// Every webhook, by id.
    pub webhooks: Vec<WebhookView>,
}

/// A page of a webhook's deliveries, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryList {
    /// The deliveries, each with its attempts.
    pub deliveries: Vec<DeliveryView>,
    /// The cursor of the next page (its `before`), when this page is full.
    pub next_before: Option<i64>,
}

/// `GET /v2/webhooks/{id}/deliveries` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeliveryQuery {
    /// At most this many (1–200, default 50).
    pub limit: Option<i64>,
    /// The cursor: only deliveries with an id below this (the `next_before` of the page
    /// before).
    pub before: Option<i64>,
}

impl From<WebhookChangeError> for ApiError {
    fn from(e: WebhookChangeError) -> Self {
        let message = e.to_string();
        match e {
            WebhookChangeError::Unknown(_) => ApiError::not_found("unknown_webhook", message),
            WebhookChangeError::Exists(_) => {
                ApiError::new(StatusCode::CONFLICT, "webhook_exists", message)
            }
            WebhookChangeError::Invalid(_) => ApiError::unprocessable("invalid_setting", message),
            WebhookChangeError::Busy(_) => ApiError::new(StatusCode::CONFLICT, "busy", message),
            _ => {
                tracing::error!(error = %message, "webhook store error");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    "the store failed; nothing was changed, try again",
                )
            }
        }
    }
}

impl AppState {
    fn hooks(&self) -> Result<&Webhooks, ApiError> {
        self.webhooks.as_deref().ok_or_else(|| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "webhooks_unavailable",
                "this server was built without webhooks (AppState::webhooks was not given)",
            )
        })
    }
}

fn unknown(id: &str) -> ApiError {
    WebhookChangeError::Unknown(shorten(id)).into()
}

/// Lists every webhook (never their secrets).
#[utoipa::path(get, path = "/v2/webhooks", tag = "webhooks",
    responses(
        (status = 200, description = "The webhooks", body = WebhookList),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
    ))]
pub(crate) async fn list_webhooks(
    State(state): State<Arc<AppState>>,
) -> Result<Json<WebhookList>, ApiError> {
    Ok(Json(WebhookList {
        webhooks: state.hooks()?.list().await?,
    }))
}

/// Creates a webhook. Without a `secret` the server makes one and answers with it, this once.
#[utoipa::path(post, path = "/v2/webhooks", tag = "webhooks",
    request_body = NewWebhook,
    responses(
        (status = 201, description = "The webhook, with the secret the server made", body = CreatedWebhook),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 409, description = "A webhook has this id", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used (the message names the field)", body = ErrorBody),
    ))]
pub(crate) async fn create_webhook(
    State(state): State<Arc<AppState>>,
    ApiJson(new): ApiJson<NewWebhook>,
) -> Result<(StatusCode, Json<CreatedWebhook>), ApiError> {
    Ok((StatusCode::CREATED, Json(state.hooks()?.create(new).await?)))
}

/// Reads a webhook (never its secret).
#[utoipa::path(get, path = "/v2/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id")),
    responses(
        (status = 200, description = "The webhook", body = WebhookView),
        (status = 400, description = "Not an id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown webhook", body = ErrorBody),
    ))]
pub(crate) async fn get_webhook(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
) -> Result<Json<WebhookView>, ApiError> {
    state
        .hooks()?
        .get(&id)
        .await?
        .map(Json)
        .ok_or_else(|| unknown(&id))
}

/// Changes a webhook: a new version, used from the next attempt of every delivery.
#[utoipa::path(patch, path = "/v2/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id")),
    request_body = WebhookPatch,
    responses(
        (status = 200, description = "The webhook as changed", body = WebhookView),
        (status = 400, description = "Malformed body or id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown webhook", body = ErrorBody),
        (status = 409, description = "Changed by others meanwhile", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used (the message names the field)", body = ErrorBody),
    ))]
pub(crate) async fn patch_webhook(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
    ApiJson(patch): ApiJson<WebhookPatch>,
) -> Result<Json<WebhookView>, ApiError> {
    Ok(Json(state.hooks()?.patch(&id, patch).await?))
}

/// Deletes a webhook; its pending deliveries are given up.
#[utoipa::path(delete, path = "/v2/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id")),
    responses(
        (status = 200, description = "Deleted", body = Object),
        (status = 400, description = "Not an id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown webhook", body = ErrorBody),
    ))]
pub(crate) async fn delete_webhook(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
) -> Result<Json<serde_json::Value>, ApiError> {
    if state.hooks()?.delete(&id).await? {
        Ok(Json(serde_json::json!({"id": id, "deleted": true})))
    } else {
        Err(unknown(&id))
    }
}

/// The delivery log of a webhook: its deliveries, newest first, each with every attempt's
/// time, status or error, duration and the next attempt's time.
#[utoipa::path(get, path = "/v2/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id"), DeliveryQuery),
    responses(
        (status = 200, description = "Deliveries, newest first", body = DeliveryList),
        (status = 400, description = "Bad query or id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown webhook", body = ErrorBody),
    ))]
pub(crate) async fn list_deliveries(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
    ApiQuery(query): ApiQuery<DeliveryQuery>,
) -> Result<Json<DeliveryList>, ApiError> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("limit is {limit}; give 1 to 200"),
        ));
    }
    if let Some(n) = query.before
        && n < 1
    {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("before is {n}; give a delivery id (a positive integer)"),
        ));
    }
    let limit = usize::try_from(limit).unwrap_or(50);
    let deliveries = state
        .hooks()?
        .deliveries(&id, query.before, limit)
        .await?
        .ok_or_else(|| unknown(&id))?;
    let next_before = (deliveries.len() == limit)
        .then(|| deliveries.last().map(|d| d.id))
        .flatten();
    Ok(Json(DeliveryList {
        deliveries,
        next_before,
    }))
}
