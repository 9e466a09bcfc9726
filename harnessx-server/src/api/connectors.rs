//! `/v2/connectors`: the stored connectors ([`crate::connectors`]) — created, read, changed and
//! deleted — each listed with its status and tools, as the console's Tools tab shows them (a
//! tool that is not `readOnlyHint: true` asks before it runs).
//!
//! A connector's status and tools come from connecting through harnessx's MCP client (within its
//! connect deadline), listing and closing again; the listing of a connector version is kept for
//! [`LISTING_TTL`] (a failure for [`FAILURE_TTL`]) so that loading the page again does not start
//! the servers again. A change is a new version, listed afresh, and a sign-in lists its
//! connector afresh.
//!
//! `POST /v2/connectors/{name}/sign-in` starts an OAuth connector's sign-in and answers with the
//! address to send the browser to; the authorization server sends the browser back to
//! `GET /v2/connectors/oauth/callback` (on this server or any other on the database), which needs
//! no API key but only accepts a `state` a server issued and nobody used, and then sends the
//! browser on to the console's Connectors page (see [`crate::connectors::oauth`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, Ordering};

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use harnessx::ToolRegistry;
use harnessx::mcp::{McpError, McpServer, McpTransport, connect_mcp_server};
use serde::Serialize;

use super::AppState;
use super::extract::{ApiJson, IdPath};
use crate::connectors::oauth::{self, CallbackError, StoreHandover};
use crate::connectors::{
    ConnectorChangeError, ConnectorPatch, ConnectorSettings, NewConnector, Probe,
};
use crate::error::{ApiError, ErrorBody};

/// How long the callback waits for the server holding the sign-in to exchange the code before it
/// sends the browser on anyway.
pub const CALLBACK_WAIT: Duration = Duration::from_secs(30);

/// How long a connector's listing is reused.
pub const LISTING_TTL: Duration = Duration::from_secs(60);

/// How long a failed listing is reused before the server is tried again.
pub const FAILURE_TTL: Duration = Duration::from_secs(5);

/// The longest a request waits on a connector's status: a connector slower than this (its
/// connect deadline may be longer) is shown unreachable, and tried again after
/// [`FAILURE_TTL`].
pub const STATUS_DEADLINE: Duration = Duration::from_secs(5);

/// One tool of a connector.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConnectorTool {
    /// The tool's name on the server.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Whether it only reads (`readOnlyHint: true`): the others ask before they run.
    pub read_only: bool,
    /// The name an agent's model calls it by: `mcp_{connector}_{tool}`, made safe for models.
    pub key: String,
}

/// Whether a connector can be used now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectorStatus {
    /// It answered and listed its tools.
    Ready,
    /// It answered HTTP 401: someone must sign in.
    NeedsSignIn,
    /// It could not be reached or did not speak MCP (`error` says why).
    Unreachable,
}

/// A connector: its settings (without secrets), its status and its tools.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConnectorView {
    /// Its settings.
    #[serde(flatten)]
    pub settings: ConnectorSettings,
    /// Whether it can be used now.
    pub status: ConnectorStatus,
    /// Its tools (empty unless ready).
    pub tools: Vec<ConnectorTool>,
    /// Why it is not ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The connectors.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ConnectorList {
    /// Every connector, by name.
    pub connectors: Vec<ConnectorView>,
}

/// What connecting found.
#[derive(Clone)]
struct Listing {
    status: ConnectorStatus,
    tools: Vec<ConnectorTool>,
    error: Option<String>,
}

struct Cached {
    at: Instant,
    listing: Listing,
}

/// One connector version's listing, filled by the first request that needs it.
type Slot = Arc<tokio::sync::Mutex<Option<Cached>>>;

/// The listings of connector versions, each behind a lock of its own so a page loaded twice
/// at once connects once.
#[derive(Default)]
pub(crate) struct ConnectorCache {
    entries: Mutex<BTreeMap<(String, u64), Slot>>,
}

impl ConnectorCache {
    /// Forgets the listings of connector `name` (it was signed in, or its tokens changed).
    pub(crate) fn invalidate(&self, name: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|(n, _), _| n != name);
    }

    async fn listing(&self, name: &str, version: u64, probe: Probe) -> Listing {
        let entry = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            // Older versions of this connector are listed no more.
            entries.retain(|(n, v), _| n != name || *v >= version);
            Arc::clone(entries.entry((name.to_owned(), version)).or_default())
        };
        let mut slot = entry.lock().await;
        if let Some(c) = slot.as_ref() {
            let ttl = if c.listing.error.is_some() {
                FAILURE_TTL
            } else {
                LISTING_TTL
            };
            if c.at.elapsed() < ttl {
                return c.listing.clone();
            }
        }
        let listing = match probe {
            Probe::Connect { server, asked } => {
                let oauth = asked.is_some();
                list(&server, asked.as_deref(), oauth).await
            }
            Probe::NeedsSignIn(server) => list(&server, None, true).await,
            Probe::Unusable(message) => Listing {
                status: ConnectorStatus::Unreachable,
                tools: Vec::new(),
                error: Some(message),
            },
        };
        *slot = Some(Cached {
            at: Instant::now(),
            listing: listing.clone(),
        });
        listing
    }
}

/// Connects `server` and lists its tools. `asked` turns true when an OAuth connector's tokens
/// no longer work; `oauth` says whether the connector signs in with OAuth (for the message).
async fn list(server: &McpServer, asked: Option<&AtomicBool>, oauth: bool) -> Listing {
    let registry = ToolRegistry::new();
    let name = server.name().to_owned();
    let connected = tokio::time::timeout(
        STATUS_DEADLINE,
        connect_mcp_server(&registry, server.clone()),
    )
    .await
    .unwrap_or_else(|_| {
        Err(McpError::ConnectTimeout {
            server: name.clone(),
            location: match server.transport() {
                McpTransport::Http { url, .. } => crate::redact::urls(url).into_owned(),
                McpTransport::Stdio { command, .. } => command.clone(),
                _ => String::new(),
            },
            seconds: STATUS_DEADLINE.as_secs_f64(),
        })
    });
    let listing = match connected {
        Ok(connection) => Listing {
            status: ConnectorStatus::Ready,
            tools: connection
                .tool_names()
                .iter()
                .filter_map(|registered| {
                    let def = registry.get_tool(registered)?;
                    Some(ConnectorTool {
                        name: connection
                            .original_name(registered)
                            .unwrap_or_else(|| registered.clone()),
                        description: def.description.clone(),
                        read_only: def.annotations.read_only_hint == Some(true),
                        key: registered.clone(),
                    })
                })
                .collect(),
            error: None,
        },
        Err(e) => {
            let message = crate::redact::urls(&harnessx::error::error_chain(&e)).into_owned();
            tracing::warn!(connector = %name, "listing the connector's tools failed: {message}");
            let needs_sign_in = matches!(e, McpError::SignInRequired { .. })
                || asked.is_some_and(|a| a.load(Ordering::SeqCst));
            if needs_sign_in {
                Listing {
                    status: ConnectorStatus::NeedsSignIn,
                    tools: Vec::new(),
                    error: Some(if oauth {
                        oauth::needs_sign_in_message(&name)
                    } else {
                        format!(
                            "connector `{name}` needs a sign-in (its server answered HTTP 401); \
                             give it `\"oauth\": {{}}` to sign in from the console, or an \
                             `Authorization` header"
                        )
                    }),
                }
            } else {
                Listing {
                    status: ConnectorStatus::Unreachable,
                    tools: Vec::new(),
                    error: Some(message),
                }
            }
        }
    };
    registry.close().await;
    listing
}

impl AppState {
    async fn connector_view(&self, settings: ConnectorSettings, probe: Probe) -> ConnectorView {
        let listing = self
            .connectors
            .listing(&settings.name, settings.version, probe)
            .await;
        ConnectorView {
            settings,
            status: listing.status,
            tools: listing.tools,
            error: listing.error,
        }
    }
}

impl From<ConnectorChangeError> for ApiError {
    fn from(e: ConnectorChangeError) -> Self {
        let message = e.to_string();
        match e {
            ConnectorChangeError::Unknown(_) => ApiError::not_found("unknown_connector", message),
            ConnectorChangeError::Exists(_) => {
                ApiError::new(StatusCode::CONFLICT, "connector_exists", message)
            }
            ConnectorChangeError::InUse { .. } => {
                ApiError::new(StatusCode::CONFLICT, "connector_in_use", message)
            }
            ConnectorChangeError::Invalid(_) => ApiError::unprocessable("invalid_setting", message),
            ConnectorChangeError::Busy(_) => ApiError::new(StatusCode::CONFLICT, "busy", message),
            ConnectorChangeError::NoOAuth(_) => ApiError::unprocessable("not_oauth", message),
            _ => {
                tracing::error!(error = %message, "connector store error");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    "the store failed; nothing was changed, try again",
                )
            }
        }
    }
}

/// Lists every connector with its status and tools; one that cannot be used has an `error`.
#[utoipa::path(get, path = "/v2/connectors", tag = "connectors",
    responses(
        (status = 200, description = "The connectors with their tools", body = ConnectorList),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
    ))]
pub(crate) async fn list_connectors(
    State(state): State<Arc<AppState>>,
) -> Result<Json<ConnectorList>, ApiError> {
    let all = state.agents.connectors().all().await?;
    let connectors = futures::future::join_all(all.into_iter().map(|(settings, _)| {
        let state = Arc::clone(&state);
        async move {
            match state.agents.connectors().probe(&settings.name).await {
                Ok(Some(probe)) => Ok(Some(state.connector_view(settings, probe).await)),
                Ok(None) => Ok(None), // deleted meanwhile
                Err(e) => Err(e),
            }
        }
    }))
    .await
    .into_iter()
    .filter_map(Result::transpose)
    .collect::<Result<Vec<_>, _>>()?;
    Ok(Json(ConnectorList { connectors }))
}

/// Creates a connector: `command` (with `args`, `env`) for a stdio server, or `url` (with
/// `headers`) for streamable HTTP. Every server on the database sees it at once.
#[utoipa::path(post, path = "/v2/connectors", tag = "connectors",
    request_body = NewConnector,
    responses(
        (status = 201, description = "The connector with its status", body = ConnectorView),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 409, description = "A connector has this name", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used", body = ErrorBody),
    ))]
pub(crate) async fn create_connector(
    State(state): State<Arc<AppState>>,
    ApiJson(new): ApiJson<NewConnector>,
) -> Result<(StatusCode, Json<ConnectorView>), ApiError> {
    let name = new.name.clone();
    state.agents.connectors().create(new).await?;
    Ok((StatusCode::CREATED, Json(view(&state, &name).await?)))
}

/// Connector `name` with its status and tools (a 404 when no connector has the name).
pub(crate) async fn view(state: &Arc<AppState>, name: &str) -> Result<ConnectorView, ApiError> {
    let unknown = || ConnectorChangeError::Unknown(super::extract::shorten(name));
    let (settings, _) = state
        .agents
        .connectors()
        .get(name)
        .await?
        .ok_or_else(unknown)?;
    let probe = state
        .agents
        .connectors()
        .probe(name)
        .await?
        .ok_or_else(unknown)?;
    Ok(state.connector_view(settings, probe).await)
}

/// Reads a connector with its status and tools.
#[utoipa::path(get, path = "/v2/connectors/{name}", tag = "connectors",
    params(("name" = String, Path, description = "The connector's name")),
    responses(
        (status = 200, description = "The connector", body = ConnectorView),
        (status = 400, description = "Not a name", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown connector", body = ErrorBody),
    ))]
pub(crate) async fn get_connector(
    State(state): State<Arc<AppState>>,
    IdPath(name): IdPath,
) -> Result<Json<ConnectorView>, ApiError> {
    Ok(Json(view(&state, &name).await?))
}

/// Changes a connector: a new version, which the agents using it pick up at their next run.
#[utoipa::path(patch, path = "/v2/connectors/{name}", tag = "connectors",
    params(("name" = String, Path, description = "The connector's name")),
    request_body = ConnectorPatch,
    responses(
        (status = 200, description = "The connector as changed", body = ConnectorView),
        (status = 400, description = "Malformed body or name", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown connector", body = ErrorBody),
        (status = 409, description = "Changed by others meanwhile", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used", body = ErrorBody),
    ))]
pub(crate) async fn patch_connector(
    State(state): State<Arc<AppState>>,
    IdPath(name): IdPath,
    ApiJson(patch): ApiJson<ConnectorPatch>,
) -> Result<Json<ConnectorView>, ApiError> {
    state.agents.connectors().patch(&name, patch).await?;
    Ok(Json(view(&state, &name).await?))
}

/// Deletes a connector no agent uses.
#[utoipa::path(delete, path = "/v2/connectors/{name}", tag = "connectors",
    params(("name" = String, Path, description = "The connector's name")),
    responses(
        (status = 200, description = "Deleted", body = Object),
        (status = 400, description = "Not a name", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown connector", body = ErrorBody),
        (status = 409, description = "Agents use it", body = ErrorBody),
    ))]
pub(crate) async fn delete_connector(
    State(state): State<Arc<AppState>>,
    IdPath(name): IdPath,
) -> Result<Json<serde_json::Value>, ApiError> {
    let users: Vec<String> = state
        .agents
        .list()
        .await?
        .into_iter()
        .filter(|a| a.connectors.iter().any(|c| c.name == name))
        .map(|a| format!("`{}`", a.id))
        .collect();
    if !users.is_empty() {
        return Err(ConnectorChangeError::InUse {
            name,
            agents: users.join(", "),
        }
        .into());
    }
    if state.agents.connectors().delete(&name).await? {
        state.agents.connectors().forget_tokens(&name).await?;
        state.connectors.invalidate(&name);
        Ok(Json(serde_json::json!({"name": name, "deleted": true})))
    } else {
        Err(ConnectorChangeError::Unknown(super::extract::shorten(&name)).into())
    }
}

/// What `POST /v2/connectors/{name}/sign-in` answers: where to send the browser, or that the
/// stored tokens work already.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SignInStarted {
    /// The authorization server's sign-in address; the browser comes back to
    /// `/v2/connectors/oauth/callback`, then goes on to the console's Connectors page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    /// `ready` when the stored tokens work and no sign-in is needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ConnectorStatus>,
}

/// Starts signing an OAuth connector in: answers `{"authorization_url": ..}` to send the
/// browser to (valid for five minutes, usable once), or `{"status": "ready"}` when the stored
/// tokens work.
#[utoipa::path(post, path = "/v2/connectors/{name}/sign-in", tag = "connectors",
    params(("name" = String, Path, description = "The connector's name")),
    responses(
        (status = 200, description = "Where to send the browser, or ready", body = SignInStarted),
        (status = 400, description = "Not a name", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown connector", body = ErrorBody),
        (status = 422, description = "The connector does not sign in with OAuth", body = ErrorBody),
        (status = 502, description = "The sign-in could not start (its server or authorization server failed)", body = ErrorBody),
        (status = 503, description = "The server has no secret key or public address", body = ErrorBody),
    ))]
pub(crate) async fn sign_in(
    State(state): State<Arc<AppState>>,
    IdPath(name): IdPath,
) -> Result<Json<SignInStarted>, ApiError> {
    let connectors = state.agents.connectors();
    let (settings, _) = connectors
        .get(&name)
        .await?
        .ok_or_else(|| ConnectorChangeError::Unknown(super::extract::shorten(&name)))?;
    if settings.oauth.is_none() {
        return Err(ConnectorChangeError::NoOAuth(name).into());
    }
    let host = Arc::clone(connectors.oauth());
    let key = host
        .key()
        .map_err(|m| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "no_secret_key", m))?
        .clone();
    host.redirect_uri()
        .map_err(|m| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "no_public_url", m))?;
    let (address, mut handed_out) = tokio::sync::oneshot::channel();
    let started = Arc::new(Mutex::new(None));
    let server = connectors
        .sign_in_server(
            &name,
            StoreHandover {
                store: Arc::clone(host.store()),
                key,
                connector: name.clone(),
                address: Mutex::new(Some(address)),
                state: Arc::clone(&started),
            },
        )
        .await?;
    let task_state = Arc::clone(&state);
    let mut task = tokio::spawn(async move {
        let registry = ToolRegistry::new();
        let result = connect_mcp_server(&registry, server)
            .await
            .map(|_| ())
            .map_err(|e| crate::redact::urls(&harnessx::error::error_chain(&e)).into_owned());
        registry.close().await;
        task_state.connectors.invalidate(&name);
        let state = started.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(state) = state {
            oauth::finish(host.store(), &state, &name, result.clone()).await;
        }
        match &result {
            Ok(()) => tracing::info!(connector = %name, "connector signed in"),
            Err(m) => tracing::warn!(connector = %name, "connector sign-in failed: {m}"),
        }
        result
    });
    state.background.keep(task.abort_handle());
    tokio::select! {
        biased;
        Ok(url) = &mut handed_out => Ok(Json(SignInStarted {
            authorization_url: Some(url),
            status: None,
        })),
        done = &mut task => match done {
            Ok(Ok(())) => Ok(Json(SignInStarted {
                authorization_url: None,
                status: Some(ConnectorStatus::Ready),
            })),
            Ok(Err(message)) => Err(ApiError::new(StatusCode::BAD_GATEWAY, "sign_in_failed", message)),
            Err(_) => Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "sign_in_failed",
                "the sign-in stopped unexpectedly; try again",
            )),
        },
    }
}

/// Where the authorization server sends the browser back to: needs no API key, accepts only a
/// `state` a server on the database issued and nobody used, hands the redirect to the server
/// that started the sign-in, waits (at most 30 s) for it to exchange the code, and sends the
/// browser to the console's Connectors page (`?signed_in=NAME` or `?sign_in_error=..`).
#[utoipa::path(get, path = "/v2/connectors/oauth/callback", tag = "connectors", security(()),
    params(
        ("state" = String, Query, description = "The state of the sign-in"),
        ("code" = Option<String>, Query, description = "The authorization code"),
        ("error" = Option<String>, Query, description = "Why the authorization server refused"),
    ),
    responses(
        (status = 303, description = "On to the console's Connectors page"),
        (status = 400, description = "Unknown, used or expired state", body = ErrorBody),
        (status = 503, description = "The server has no secret key, or the store failed", body = ErrorBody),
    ))]
pub(crate) async fn oauth_callback(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.unwrap_or_default();
    let sign_in_state = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let host = state.agents.connectors().oauth();
    let base = host
        .redirect_uri()
        .unwrap_or_else(|_| format!("http://localhost{}", oauth::CALLBACK_PATH));
    let redirect = format!("{base}?{query}");
    let connector = match oauth::hand_over(host, &sign_in_state, &redirect).await {
        Ok(connector) => connector,
        Err(e) => {
            let message = e.to_string();
            return match e {
                CallbackError::UnknownState => ApiError::bad_request("unknown_state", message),
                CallbackError::Key(_) => {
                    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "no_secret_key", message)
                }
                _ => {
                    tracing::error!(error = %message, "sign-in callback store error");
                    ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "store_unavailable",
                        "the store failed; start the sign-in again",
                    )
                }
            }
            .into_response();
        }
    };
    let outcome = oauth::outcome(host, &sign_in_state, CALLBACK_WAIT).await;
    state.connectors.invalidate(&connector);
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let target = match outcome {
        Some(Ok(())) => format!("/console/#/connectors?signed_in={}", encode(&connector)),
        Some(Err(message)) => format!(
            "/console/#/connectors?sign_in_error={}",
            encode(&format!("connector `{connector}`: {message}"))
        ),
        None => format!(
            "/console/#/connectors?sign_in_error={}",
            encode(&format!(
                "connector `{connector}`: the sign-in is still being completed; reload this \
                 page in a moment"
            ))
        ),
    };
    Redirect::to(&target).into_response()
}
