//! `/v2/agents` and `/v2/tools/builtin`: the agents' settings, changed per agent, every tool an
//! agent's model sees (`/v2/agents/{id}/tools`), and the platform built-in tools the console's
//! Tools tab lists.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

use super::AppState;
use super::connectors::ConnectorStatus;
use super::extract::{ApiJson, IdPath};
use crate::agent_tools::{self, AgentTools, UnlistedConnector};
use crate::agents::{
    AgentChangeError, AgentPatch, AgentView, NewAgent, PlatformTool, platform_tools,
};
use crate::error::{ApiError, ErrorBody};

/// The agents.
#[derive(Debug, Clone, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct AgentList {
    /// Every agent, by name.
    pub agents: Vec<AgentView>,
}

/// Lists the agents.
#[utoipa::path(get, path = "/v2/agents", tag = "agents",
    responses(
        (status = 200, description = "The agents", body = AgentList),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
    ))]
pub(crate) async fn list_agents(
    State(state): State<Arc<AppState>>,
) -> Result<Json<AgentList>, ApiError> {
    Ok(Json(AgentList {
        agents: state.agents.list().await?,
    }))
}

impl From<AgentChangeError> for ApiError {
    fn from(e: AgentChangeError) -> Self {
        let message = e.to_string();
        match e {
            AgentChangeError::Unknown(_) => ApiError::not_found("unknown_agent", message),
            AgentChangeError::Exists(_) => {
                ApiError::new(StatusCode::CONFLICT, "agent_exists", message)
            }
            AgentChangeError::Invalid(_) => ApiError::unprocessable("invalid_setting", message),
            AgentChangeError::Busy(_) => ApiError::new(StatusCode::CONFLICT, "busy", message),
            _ => {
                tracing::error!(error = %message, "agent store error");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    "the store failed; nothing was changed, try again",
                )
            }
        }
    }
}

/// Creates an agent (version 1; `ask_user` on unless `builtin_tools` turns it off). Every
/// server on the database sees it at once.
#[utoipa::path(post, path = "/v2/agents", tag = "agents",
    request_body = NewAgent,
    responses(
        (status = 201, description = "The agent", body = AgentView),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 409, description = "An agent has this name", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used", body = ErrorBody),
    ))]
pub(crate) async fn create_agent(
    State(state): State<Arc<AppState>>,
    ApiJson(new): ApiJson<NewAgent>,
) -> Result<(StatusCode, Json<AgentView>), ApiError> {
    Ok((StatusCode::CREATED, Json(state.agents.create(new).await?)))
}

/// Reads an agent's current version.
#[utoipa::path(get, path = "/v2/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "The agent's name")),
    responses(
        (status = 200, description = "The agent", body = AgentView),
        (status = 400, description = "Not an id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown agent", body = ErrorBody),
    ))]
pub(crate) async fn get_agent(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
) -> Result<Json<AgentView>, ApiError> {
    state
        .agents
        .view(&id)
        .await?
        .map(Json)
        .ok_or_else(|| AgentChangeError::Unknown(super::extract::shorten(&id)).into())
}

/// Changes an agent: a new version, which later runs use; runs already started keep theirs.
#[utoipa::path(patch, path = "/v2/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "The agent's name")),
    request_body = AgentPatch,
    responses(
        (status = 200, description = "The agent as changed", body = AgentView),
        (status = 400, description = "Malformed body or id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown agent", body = ErrorBody),
        (status = 409, description = "Changed by others meanwhile", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used", body = ErrorBody),
    ))]
pub(crate) async fn patch_agent(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
    ApiJson(patch): ApiJson<AgentPatch>,
) -> Result<Json<AgentView>, ApiError> {
    Ok(Json(state.agents.patch(&id, patch).await?))
}

/// Deletes an agent: new runs of it are refused; runs already started finish on their version.
#[utoipa::path(delete, path = "/v2/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "The agent's name")),
    responses(
        (status = 200, description = "Deleted", body = Object),
        (status = 400, description = "Not an id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown agent", body = ErrorBody),
    ))]
pub(crate) async fn delete_agent(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
) -> Result<Json<serde_json::Value>, ApiError> {
    if state.agents.delete(&id).await? {
        Ok(Json(serde_json::json!({"id": id, "deleted": true})))
    } else {
        Err(AgentChangeError::Unknown(super::extract::shorten(&id)).into())
    }
}

/// Lists every tool an agent's current version gives its model, grouped by where it comes from
/// (platform, bundle, planning, connector, knowledge), each with what happens when the model
/// calls it and whether it only reads. A connector whose tools cannot be listed now is named in
/// `unlisted_connectors`.
#[utoipa::path(get, path = "/v2/agents/{id}/tools", tag = "agents",
    params(("id" = String, Path, description = "The agent's name")),
    responses(
        (status = 200, description = "The agent's tools", body = AgentTools),
        (status = 400, description = "Not an id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown agent", body = ErrorBody),
        (status = 422, description = "The agent's stored settings cannot be built", body = ErrorBody),
    ))]
pub(crate) async fn agent_tools(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
) -> Result<Json<AgentTools>, ApiError> {
    let (version, mut tools, connectors) = state
        .agents
        .tools(&id)
        .await?
        .ok_or_else(|| AgentChangeError::Unknown(super::extract::shorten(&id)))?;
    let views = futures::future::join_all(
        connectors
            .iter()
            .map(|c| super::connectors::view(&state, &c.name)),
    )
    .await;
    let mut unlisted = Vec::new();
    for (choice, view) in connectors.iter().zip(views) {
        match view {
            Ok(view) if view.status == ConnectorStatus::Ready => {
                agent_tools::merge(
                    &mut tools,
                    agent_tools::connector_tools(choice, &view.tools),
                );
            }
            Ok(view) => unlisted.push(UnlistedConnector {
                name: choice.name.clone(),
                status: match view.status {
                    ConnectorStatus::NeedsSignIn => "needs_sign_in",
                    _ => "unreachable",
                }
                .to_owned(),
                error: view.error.unwrap_or_default(),
            }),
            // Deleted since the agent chose it: its runs do without it.
            Err(e) if e.code() == "unknown_connector" => unlisted.push(UnlistedConnector {
                name: choice.name.clone(),
                status: "unreachable".to_owned(),
                error: format!("no connector is named `{}` any more", choice.name),
            }),
            Err(e) => return Err(e),
        }
    }
    Ok(Json(AgentTools {
        agent: id,
        version,
        tools,
        unlisted_connectors: unlisted,
    }))
}

/// The platform built-in tools.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BuiltinTools {
    /// Each tool's name, key and description.
    pub tools: Vec<PlatformTool>,
}

/// Lists the platform built-in tools (name, tool key, description).
#[utoipa::path(get, path = "/v2/tools/builtin", tag = "agents",
    responses(
        (status = 200, description = "The platform built-in tools", body = BuiltinTools),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
    ))]
pub(crate) async fn builtin_tools() -> Json<BuiltinTools> {
    Json(BuiltinTools {
        tools: platform_tools(),
    })
}
