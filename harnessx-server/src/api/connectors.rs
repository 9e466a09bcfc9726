//! `/v2/connectors`: the stored connectors ([`crate::connectors`]) — created, read, changed and
//! deleted — each listed with its status and tools, as the console's Tools tab shows them (a
//! tool that is not `readOnlyHint: true` asks before it runs).
//!
//! A connector's status and tools come from connecting through harnessx's MCP client (within its
//! connect deadline), listing and closing again; the listing of a connector version is kept for
//! [`LISTING_TTL`] (a failure for [`FAILURE_TTL`]) so that loading the page again does not start
//! the servers again. A change is a new version, listed afresh.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use harnessx::ToolRegistry;
use harnessx::mcp::{McpError, McpServer, McpTransport, connect_mcp_server};
use serde::Serialize;

use super::AppState;
use super::extract::{ApiJson, IdPath};
use crate::connectors::{ConnectorChangeError, ConnectorPatch, ConnectorSettings, NewConnector};
use crate::error::{ApiError, ErrorBody};

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
    async fn listing(&self, version: u64, server: &McpServer) -> Listing {
        let entry = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            // Older versions of this connector are listed no more.
            entries.retain(|(name, v), _| name != server.name() || *v >= version);
            Arc::clone(
                entries
                    .entry((server.name().to_owned(), version))
                    .or_default(),
            )
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
        let listing = list(server).await;
        *slot = Some(Cached {
            at: Instant::now(),
            listing: listing.clone(),
        });
        listing
    }
}

async fn list(server: &McpServer) -> Listing {
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
                    })
                })
                .collect(),
            error: None,
        },
        Err(e) => {
            let message = crate::redact::urls(&harnessx::error::error_chain(&e)).into_owned();
            tracing::warn!(connector = %name, "listing the connector's tools failed: {message}");
            Listing {
                status: if matches!(e, McpError::SignInRequired { .. }) {
                    ConnectorStatus::NeedsSignIn
                } else {
                    ConnectorStatus::Unreachable
                },
                tools: Vec::new(),
                error: Some(message),
            }
        }
    };
    registry.close().await;
    listing
}

impl AppState {
    async fn connector_view(
        &self,
        settings: ConnectorSettings,
        server: &McpServer,
    ) -> ConnectorView {
        let listing = self.connectors.listing(settings.version, server).await;
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
    let connectors = futures::future::join_all(all.into_iter().map(|(settings, server)| {
        let state = Arc::clone(&state);
        async move { state.connector_view(settings, &server).await }
    }))
    .await;
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

async fn view(state: &Arc<AppState>, name: &str) -> Result<ConnectorView, ApiError> {
    let (settings, server) = state
        .agents
        .connectors()
        .get(name)
        .await?
        .ok_or_else(|| ConnectorChangeError::Unknown(super::extract::shorten(name)))?;
    Ok(state.connector_view(settings, &server).await)
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
        Ok(Json(serde_json::json!({"name": name, "deleted": true})))
    } else {
        Err(ConnectorChangeError::Unknown(super::extract::shorten(&name)).into())
    }
}
