//! The /v2 HTTP API: one [`AppState`], thin handlers calling the runtime, one error type, and
//! the routes assembled in [`router`].

mod agents;
mod auth;
mod connectors;
mod conversations;
mod events;
pub(crate) mod extract;
mod knowledge;
mod openapi;
mod ops;
mod pending;
mod retention;
mod runs;
pub(crate) mod trace;
mod webhooks;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use harnessx_runtime::Runtime;
use tokio::sync::Semaphore;

pub use agents::{AgentList, BuiltinTools};
pub use auth::ApiKeys;
pub use connectors::{
    CALLBACK_WAIT, ConnectorList, ConnectorStatus, ConnectorTool, ConnectorView, SignInStarted,
};
pub use conversations::{
    ConversationBody, ConversationItem, ConversationList, MessageBody, MessageOutcome,
};
pub use events::frame_name;
pub use knowledge::{DOCUMENT_BODY_LIMIT, KnowledgeBaseList};
pub use openapi::openapi;
pub use ops::{PROBE_DEADLINE, Ready};
pub use pending::Pending;
pub use retention::{PruneBody, Pruned};
pub use runs::{AnswerBody, ApprovalBody, CreateRun, RunBody, RunList, SelectionBody};
pub use trace::{MAX_REQUEST_ID_LEN, REQUEST_ID_HEADER};
pub use webhooks::{DeliveryList, WebhookList};

use crate::agents::Agents;
use crate::error::ApiError;
use crate::metrics::Metrics;

/// The default largest request body: 64 KiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;

/// The default most event streams open at once.
pub const DEFAULT_MAX_SUBSCRIBERS: usize = 2048;

/// Everything a handler reaches.
pub struct AppState {
    pub(crate) runtime: Runtime,
    pub(crate) agents: Arc<Agents>,
    pub(crate) keys: ApiKeys,
    pub(crate) subscribers: Arc<Semaphore>,
    pub(crate) max_body_bytes: usize,
    pub(crate) connectors: connectors::ConnectorCache,
    pub(crate) idempotency: InFlight,
    pub(crate) metrics: Arc<Metrics>,
    /// `GET /metrics` answers without a key.
    pub(crate) metrics_open: bool,
    /// The stored webhooks (`/v2/webhooks`).
    pub(crate) webhooks: Option<Arc<crate::webhooks::Webhooks>>,
    /// Work a request started that goes on after its answer (a connector's sign-in waiting
    /// for the browser to come back); ended when the server stops.
    pub(crate) background: Background,
}

/// Tasks that outlive the request that started them. They hold the server's state (and so its
/// database), so [`Running::stop`](crate::server::Running::stop) ends them rather than leaving
/// them to run out their own deadlines.
#[derive(Default)]
pub(crate) struct Background(std::sync::Mutex<Vec<tokio::task::AbortHandle>>);

impl Background {
    /// Keeps `task` to be ended with the server.
    pub(crate) fn keep(&self, task: tokio::task::AbortHandle) {
        let mut tasks = self.0.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    /// Ends every task still running.
    pub(crate) fn end(&self) {
        for task in self.0.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            task.abort();
        }
    }
}

/// The idempotency keys whose first request this server is handling.
#[derive(Default)]
pub(crate) struct InFlight(std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>);

/// Holds a key as in flight until dropped.
pub(crate) struct InFlightGuard(
    std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    String,
);

impl InFlight {
    /// Marks `key` in flight; `None` when it is already.
    pub(crate) fn begin(&self, key: &str) -> Option<InFlightGuard> {
        let mut keys = self.0.lock().unwrap_or_else(|p| p.into_inner());
        keys.insert(key.to_owned())
            .then(|| InFlightGuard(std::sync::Arc::clone(&self.0), key.to_owned()))
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.1);
    }
}

/// Milliseconds since the Unix epoch as RFC 3339 in UTC (`2026-12-05T15:04:05.123Z`).
pub(crate) fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("agents", &self.agents)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The state for `runtime` (built with [`Catalog`](crate::agents::Catalog) over `agents`).
    pub fn new(runtime: Runtime, agents: Arc<Agents>, keys: ApiKeys) -> Self {
        let connectors = connectors::ConnectorCache::default();
        Self {
            connectors,
            runtime,
            agents,
            keys,
            subscribers: Arc::new(Semaphore::new(DEFAULT_MAX_SUBSCRIBERS)),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            idempotency: InFlight::default(),
            metrics: Arc::new(Metrics::new()),
            metrics_open: false,
            webhooks: None,
            background: Background::default(),
        }
    }

    /// The webhooks `/v2/webhooks` manages (without them those routes answer 503).
    pub fn webhooks(mut self, webhooks: Arc<crate::webhooks::Webhooks>) -> Self {
        self.webhooks = Some(webhooks);
        self
    }

    /// The metrics `/metrics` shows: give the ones the runtime was built to report to
    /// (`RuntimeBuilder::observer_arc`); without them only the store's figures move.
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Whether `GET /metrics` answers without an API key (default: it needs one).
    pub fn metrics_open(mut self, open: bool) -> Self {
        self.metrics_open = open;
        self
    }

    /// At most `n` event streams open at once; the next gets a 503.
    pub fn max_subscribers(mut self, n: usize) -> Self {
        self.subscribers = Arc::new(Semaphore::new(n));
        self
    }

    /// Request bodies of at most `n` bytes; a larger one gets a 413.
    pub fn max_body_bytes(mut self, n: usize) -> Self {
        self.max_body_bytes = n;
        self
    }

    /// The runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found(
        "no_route",
        "no such route; GET /v2/openapi.json lists the routes",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take this method; GET /v2/openapi.json lists the routes",
    )
}

/// The whole application: `/healthz` and `/readyz`, `/metrics` and `/v2/...` behind the API
/// keys (`/metrics` without one when the state says so), every request in a span with its
/// request id.
pub fn router(state: Arc<AppState>) -> Router {
    let v2 = Router::new()
        .route("/runs", post(runs::create_run).get(runs::list_runs))
        .route("/runs/prune", post(retention::prune_runs))
        .route("/runs/{run_id}", get(runs::get_run))
        .route("/runs/{run_id}/events", get(events::events))
        .route("/runs/{run_id}/answer", post(runs::answer))
        .route("/runs/{run_id}/approval", post(runs::approval))
        .route("/runs/{run_id}/cancel", post(runs::cancel))
        .route("/conversations", get(conversations::list_conversations))
        .route("/conversations/{id}", get(conversations::get_conversation))
        .route(
            "/conversations/{id}/messages",
            post(conversations::post_message),
        )
        .route(
            "/agents",
            get(agents::list_agents).post(agents::create_agent),
        )
        .route(
            "/agents/{id}",
            get(agents::get_agent)
                .patch(agents::patch_agent)
                .delete(agents::delete_agent),
        )
        .route("/agents/{id}/tools", get(agents::agent_tools))
        .route("/tools/builtin", get(agents::builtin_tools))
        .route(
            "/connectors",
            get(connectors::list_connectors).post(connectors::create_connector),
        )
        .route(
            "/connectors/{name}",
            get(connectors::get_connector)
                .patch(connectors::patch_connector)
                .delete(connectors::delete_connector),
        )
        .route("/connectors/{name}/sign-in", post(connectors::sign_in))
        .route(
            "/knowledge",
            get(knowledge::list_knowledge_bases).post(knowledge::create_knowledge_base),
        )
        .route(
            "/knowledge/{name}",
            get(knowledge::get_knowledge_base).delete(knowledge::delete_knowledge_base),
        )
        .route(
            "/knowledge/{name}/documents",
            post(knowledge::add_document).layer(DefaultBodyLimit::max(DOCUMENT_BODY_LIMIT)),
        )
        .route(
            "/knowledge/{name}/documents/{id}",
            delete(knowledge::delete_document),
        )
        .route(
            "/webhooks",
            get(webhooks::list_webhooks).post(webhooks::create_webhook),
        )
        .route(
            "/webhooks/{id}",
            get(webhooks::get_webhook)
                .patch(webhooks::patch_webhook)
                .delete(webhooks::delete_webhook),
        )
        .route("/webhooks/{id}/deliveries", get(webhooks::list_deliveries))
        .route("/openapi.json", get(openapi::serve_openapi))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::require_key,
        ));
    let metrics = Router::new().route("/metrics", get(ops::metrics));
    let metrics = if state.metrics_open {
        metrics
    } else {
        metrics.layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::require_key,
        ))
    };
    Router::new()
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .merge(metrics)
        // A browser navigation from the authorization server: no API key, a one-use `state`.
        .route(
            crate::connectors::oauth::CALLBACK_PATH,
            get(connectors::oauth_callback),
        )
        .nest("/v2", v2)
        .merge(crate::console::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            trace::request_span,
        ))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_764_947_045_123), "2025-12-05T15:04:05.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }
}
