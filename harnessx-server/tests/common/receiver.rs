//! A webhook receiver on 127.0.0.1 for the tests: it records every request and answers each as
//! a policy says; under `/model/` it plays a model provider that refuses every request (HTTP
//! 400), so an agent pointed there fails its run. `verify` checks a request's signature the way
//! a receiver following the Standard Webhooks spec does, independently of the server's signer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its path.
    pub path: String,
    /// Its headers, names lower-case.
    pub headers: HashMap<String, String>,
    /// Its body.
    pub body: String,
    /// What the receiver answered.
    pub status: u16,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

type Policy = Box<dyn Fn(&Received, usize) -> u16 + Send + Sync>;

struct Inner {
    got: Mutex<Vec<Received>>,
    arrived: tokio::sync::Notify,
    policy: Policy,
}

/// The receiver; stops when dropped.
pub struct Receiver {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    /// Answers each request with `policy(request, n)`, where `n` counts the earlier requests
    /// with the same `webhook-id` (0 for the first).
    pub async fn start(policy: impl Fn(&Received, usize) -> u16 + Send + Sync + 'static) -> Self {
        let inner = Arc::new(Inner {
            got: Mutex::default(),
            arrived: tokio::sync::Notify::new(),
            policy: Box::new(policy),
        });
        let state = Arc::clone(&inner);
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let state = Arc::clone(&state);
            async move { answer(&state, &uri, &headers, &body) }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { base, inner, task }
    }

    /// Accepts everything.
    pub async fn accepting() -> Self {
        Self::start(|_, _| 200).await
    }

    /// `{base}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Every request so far.
    pub fn got(&self) -> Vec<Received> {
        self.inner.got.lock().unwrap().clone()
    }

    /// Waits (at most `seconds`) until `done` holds for the requests received; returns them.
    pub async fn wait_until(
        &self,
        seconds: u64,
        what: &str,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
        loop {
            let arrived = self.inner.arrived.notified();
            let got = self.got();
            if done(&got) {
                return got;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!("the receiver did not get {what} within {seconds} s; it got {got:#?}");
            }
        }
    }
}

fn answer(state: &Inner, uri: &Uri, headers: &HeaderMap, body: &Bytes) -> axum::response::Response {
    if uri.path().starts_with("/model/") {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(serde_json::json!({"error": {"message": "this test model refuses every request", "type": "invalid_request_error"}})),
        )
            .into_response();
    }
    let mut received = Received {
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body: String::from_utf8_lossy(body).into_owned(),
        status: 0,
    };
    let status = {
        let mut got = state.got.lock().unwrap();
        let id = received.header("webhook-id").to_owned();
        let earlier = got.iter().filter(|r| r.header("webhook-id") == id).count();
        received.status = (state.policy)(&received, earlier);
        got.push(received.clone());
        received.status
    };
    state.arrived.notify_waiters();
    StatusCode::from_u16(status).unwrap().into_response()
}

/// Whether `r` carries a valid `webhook-signature` for `secret` (`whsec_...`), checked as the
/// Standard Webhooks spec tells a receiver to: HMAC-SHA256 keyed with the base64-decoded bytes
/// after `whsec_`, over `{webhook-id}.{webhook-timestamp}.{body}`, compared with each `v1,`
/// signature of the header.
pub fn verify(secret: &str, r: &Received) -> bool {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).unwrap();
    mac.update(
        format!(
            "{}.{}.{}",
            r.header("webhook-id"),
            r.header("webhook-timestamp"),
            r.body
        )
        .as_bytes(),
    );
    let expected = STANDARD.encode(mac.finalize().into_bytes());
    r.header("webhook-signature")
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .any(|s| s == expected)
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
