//! Bearer API keys, compared in constant time: no key, no access (except the probes
//! `GET /healthz` and `GET /readyz`, and `GET /metrics` when `[server] metrics = "open"`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::AppState;
use crate::error::ApiError;

/// The accepted keys.
#[derive(Clone, Default)]
pub struct ApiKeys(Vec<Vec<u8>>);

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.0.len())
    }
}

impl ApiKeys {
    /// These keys (empty strings are dropped).
    pub fn new<S: AsRef<str>>(keys: impl IntoIterator<Item = S>) -> Self {
        Self(
            keys.into_iter()
                .map(|k| k.as_ref().trim().as_bytes().to_vec())
                .filter(|k| !k.is_empty())
                .collect(),
        )
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// None at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `given` is one of the keys; every key is compared, each in constant time.
    pub fn accepts(&self, given: &[u8]) -> bool {
        let mut ok = subtle::Choice::from(0);
        for key in &self.0 {
            ok |= key.as_slice().ct_eq(given);
        }
        ok.into()
    }
}

pub(crate) async fn require_key(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
    match given {
        Some(key) if state.keys.accepts(key) => next.run(request).await,
        Some(_) => ApiError::new(
            axum::http::StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the API key is not valid; send `Authorization: Bearer <key>` with a key the server \
             was given",
        )
        .into_response(),
        None => ApiError::new(
            axum::http::StatusCode::UNAUTHORIZED,
            "unauthorized",
            "no API key: send `Authorization: Bearer <key>`",
        )
        .into_response(),
    }
}
