//! Each request's span: its request id (a well-formed `X-Request-Id` from the client, else one
//! made here; echoed in the response), one log line when it ends, and the store failures it
//! met counted for `/metrics`.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use super::AppState;
use crate::metrics::StoreErrorSource;

/// The header carrying the request id, both ways.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The longest request id taken from a client.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// Marks a response whose request met a failing store (set by [`crate::ApiError`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreFailed;

/// A client's request id, when it is 1 to [`MAX_REQUEST_ID_LEN`] characters of ASCII letters,
/// digits, `-`, `_`, `.` and `:` (a UUID, a ULID, a trace id); anything else is replaced, so
/// a log line never carries what a client chose to inject.
pub(crate) fn well_formed(given: &HeaderValue) -> Option<&str> {
    let id = given.to_str().ok()?;
    let ok = !id.is_empty()
        && id.len() <= MAX_REQUEST_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    ok.then_some(id)
}

/// 128 random bits in hex.
fn generated() -> String {
    let bytes: [u8; 16] = rand::random();
    let mut id = String::with_capacity(32);
    for b in bytes {
        id.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        id.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
    }
    id
}

/// Probes are asked every few seconds: their lines are `debug`, every other request's `info`.
fn is_probe(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics")
}

/// Runs the request in a span holding its id, method and path (never its query or headers,
/// which may hold a key), logs its status and duration, and echoes the id.
pub(crate) async fn request_span(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let id = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(well_formed)
        .map_or_else(generated, str::to_owned);
    let path = request.uri().path().to_owned();
    // At `error` level so that it is on whenever anything is logged: a warning of the default
    // filter (`warn`) carries the request id too. (Its own `request finished` line has a level
    // of its own, below.)
    let span = tracing::error_span!(
        "request",
        request_id = %id,
        method = %request.method(),
        path = %path,
    );
    let started = Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    span.in_scope(|| {
        if is_probe(&path) {
            tracing::debug!(status, elapsed_ms, "request finished");
        } else {
            tracing::info!(status, elapsed_ms, "request finished");
        }
    });
    if response.extensions().get::<StoreFailed>().is_some() {
        state.metrics.store_error(if is_probe(&path) {
            StoreErrorSource::Probe
        } else {
            StoreErrorSource::Api
        });
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}
