//! Extractors whose rejections are [`ApiError`]s: a JSON body, a query, a run id in the path,
//! and the `Idempotency-Key` / `Last-Event-ID` headers.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use harnessx_runtime::RunId;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body; a bad one is a 400/413/415/422 with a code.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    let status = rejection.status();
    let text = rejection.body_text();
    let code = match rejection {
        JsonRejection::JsonDataError(_) => "invalid_body",
        JsonRejection::JsonSyntaxError(_) => "malformed_json",
        JsonRejection::MissingJsonContentType(_) => {
            return ApiError::new(
                status,
                "unsupported_media_type",
                "the body must be JSON: send `Content-Type: application/json`",
            );
        }
        _ if status == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::new(
                status,
                "body_too_large",
                "the request body is larger than the server accepts; send less",
            );
        }
        _ => "bad_body",
    };
    ApiError::new(status, code, text)
}

/// A query string.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(Self(value)),
            Err(e @ QueryRejection::FailedToDeserializeQueryString(_)) => {
                Err(ApiError::bad_request("invalid_query", e.body_text()))
            }
            Err(e) => Err(ApiError::bad_request("invalid_query", e.body_text())),
        }
    }
}

/// The `{run_id}` of the path: a positive integer.
#[derive(Debug, Clone, Copy)]
pub struct RunPath(pub RunId);

impl<S: Send + Sync> FromRequestParts<S> for RunPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request("invalid_path", e.body_text()))?;
        parse_run_id(&raw).map(Self)
    }
}

/// Parses a run id.
pub(crate) fn parse_run_id(raw: &str) -> Result<RunId, ApiError> {
    match raw.parse::<i64>() {
        Ok(n) if n > 0 => Ok(RunId(n)),
        _ => Err(ApiError::bad_request(
            "invalid_run_id",
            format!(
                "`{}` is not a run id; run ids are positive integers",
                shorten(raw)
            ),
        )),
    }
}

/// A path segment that is any text (a conversation or agent id), at most 200 bytes.
#[derive(Debug, Clone)]
pub struct IdPath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for IdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request("invalid_path", e.body_text()))?;
        if raw.is_empty() || raw.len() > 200 || raw.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "invalid_id",
                "an id is 1 to 200 bytes of text without control characters",
            ));
        }
        Ok(Self(raw))
    }
}

/// Cuts user text quoted back in a message to 64 characters.
pub(crate) fn shorten(s: &str) -> String {
    let cut: String = s.chars().take(64).collect();
    if cut.len() < s.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// The `Idempotency-Key` header: 1 to 255 visible ASCII characters.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let bad = || {
        ApiError::bad_request(
            "invalid_idempotency_key",
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        )
    };
    let text = value.to_str().map_err(|_| bad())?;
    if text.is_empty() || text.len() > 255 || !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad());
    }
    Ok(Some(text.to_owned()))
}

/// The `Last-Event-ID` header: the last sequence number seen.
pub(crate) fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&seq| seq <= MAX_SEQUENCE)
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_last_event_id",
                "Last-Event-ID must be the sequence number of the last event received (a \
                 non-negative integer of at most 9223372036854775807)",
            )
        })
}

/// The largest sequence number a store holds (a signed 64-bit integer).
pub(crate) const MAX_SEQUENCE: u64 = i64::MAX as u64;
