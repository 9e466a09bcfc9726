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

/// Who made a request, as the runs it answers name them: `API key …` and the last four
/// characters of the key it came with (never more of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller(pub(crate) String);

impl Caller {
    /// The caller with `key`.
    pub(crate) fn of(key: &[u8]) -> Self {
        let key = String::from_utf8_lossy(key);
        let chars: Vec<char> = key.chars().collect();
        let last: String = chars[chars.len().saturating_sub(4)..].iter().collect();
        Self(format!("API key …{last}"))
    }
}

pub(crate) async fn require_key(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .map(<[u8]>::to_vec);
    match given {
        Some(key) if state.keys.accepts(&key) => {
            request.extensions_mut().insert(Caller::of(&key));
            next.run(request).await
        }
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

#[cfg(test)]
mod tests {
    use super::Caller;

    #[test]
    fn a_caller_is_named_by_the_last_four_characters_of_its_key() {
        assert_eq!(Caller::of(b"test-key-0123456789abcdef").0, "API key …cdef");
        // Characters, not bytes.
        assert_eq!(Caller::of("clé-ünïcødé".as_bytes()).0, "API key …cødé");
        assert_eq!(Caller::of(b"ab").0, "API key …ab");
    }
}
