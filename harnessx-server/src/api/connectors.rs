//! `/v2/connectors`: every MCP connector of the server with its tools, as the console's Tools
//! tab lists them (a tool that is not `readOnlyHint: true` asks before it runs).
//!
//! Each connector is connected through harnessx's MCP client (within its connect deadline),
//! listed and closed again; the listing is kept for [`LISTING_TTL`] (a failure for
//! [`FAILURE_TTL`]) so that loading the page again does not start the servers again. The
//! connectors come from the config file and do not change while the server runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use harnessx::ToolRegistry;
use harnessx::mcp::{McpServer, connect_mcp_server};
use serde::Serialize;

use super::AppState;

/// How long a connector's tool listing is reused.
pub const LISTING_TTL: Duration = Duration::from_secs(60);

/// How long a failure to connect is reused before the next page load tries again.
pub const FAILURE_TTL: Duration = Duration::from_secs(5);

/// A connector's tool as the console lists it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConnectorTool {
    /// The server's own name for the tool: the name `connectors[].tools` of
    /// `PATCH /v2/agents/{id}` takes (the model sees it as `mcp_<connector>_<name>`).
    pub name: String,
    /// What it does, as the server describes it.
    pub description: String,
    /// The server marks it `readOnlyHint: true`; any other tool asks before it runs.
    pub read_only: bool,
}

/// A connector and its tools, or why they could not be listed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConnectorView {
    /// The connector's name (a `[connectors.NAME]` table).
    pub name: String,
    /// Its tools in the server's order (empty when it could not be reached).
    pub tools: Vec<ConnectorTool>,
    /// Why the server could not be connected or listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The server's connectors.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ConnectorList {
    /// Every connector, by name.
    pub connectors: Vec<ConnectorView>,
}

struct Cached {
    at: Instant,
    view: ConnectorView,
}

/// The connectors' listings, each kept for a short time.
pub(crate) struct ConnectorCache {
    entries: BTreeMap<String, Arc<tokio::sync::Mutex<Option<Cached>>>>,
}

impl ConnectorCache {
    /// A cache for these connectors.
    pub(crate) fn new(servers: &[McpServer]) -> Self {
        Self {
            entries: servers
                .iter()
                .map(|s| (s.name().to_owned(), Arc::default()))
                .collect(),
        }
    }

    /// `server`'s listing: the kept one while fresh, else a new one. Concurrent callers for one
    /// connector wait for a single listing.
    async fn view(&self, server: &McpServer) -> ConnectorView {
        let Some(entry) = self.entries.get(server.name()) else {
            return list(server).await;
        };
        let mut slot = entry.lock().await;
        if let Some(c) = slot.as_ref() {
            let ttl = if c.view.error.is_some() {
                FAILURE_TTL
            } else {
                LISTING_TTL
            };
            if c.at.elapsed() < ttl {
                return c.view.clone();
            }
        }
        let view = list(server).await;
        *slot = Some(Cached {
            at: Instant::now(),
            view: view.clone(),
        });
        view
    }
}

/// Connects to `server` on a registry of its own, reads its tools and closes it again.
async fn list(server: &McpServer) -> ConnectorView {
    let registry = ToolRegistry::new();
    let name = server.name().to_owned();
    let view = match connect_mcp_server(&registry, server.clone()).await {
        Ok(connection) => ConnectorView {
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
            name,
            error: None,
        },
        Err(e) => {
            let message = crate::redact::urls(&harnessx::error::error_chain(&e)).into_owned();
            tracing::warn!(connector = %name, "listing the connector's tools failed: {message}");
            ConnectorView {
                name,
                tools: Vec::new(),
                error: Some(message),
            }
        }
    };
    registry.close().await;
    view
}

/// Lists every connector with its tools; a connector that cannot be reached has an `error`.
#[utoipa::path(get, path = "/v2/connectors", tag = "agents",
    responses(
        (status = 200, description = "The connectors with their tools", body = ConnectorList),
        (status = 401, description = "No or wrong API key", body = crate::error::ErrorBody),
    ))]
pub(crate) async fn list_connectors(State(state): State<Arc<AppState>>) -> Json<ConnectorList> {
    let servers = state.agents.connector_servers();
    let connectors =
        futures::future::join_all(servers.iter().map(|s| state.connectors.view(s))).await;
    Json(ConnectorList { connectors })
}
