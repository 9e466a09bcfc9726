//! `/v2/agents` and `/v2/tools/builtin`: the agents' settings, changed per agent, and the
//! platform built-in tools the console's Tools tab lists.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use super::AppState;
use super::extract::{ApiJson, IdPath};
use crate::agents::{AgentPatch, AgentView, PlatformTool, platform_tools};
use crate::error::{ApiError, ErrorBody};

/// The agents.
#[derive(Debug, Serialize, utoipa::ToSchema)]
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
pub(crate) async fn list_agents(State(state): State<Arc<AppState>>) -> Json<AgentList> {
    let agents = state
        .agents
        .names()
        .iter()
        .filter_map(|n| state.agents.view(n))
        .collect();
    Json(AgentList { agents })
}

fn unknown_agent(id: &str) -> ApiError {
    ApiError::not_found(
        "unknown_agent",
        format!(
            "no agent is named `{}`; GET /v2/agents lists them",
            super::extract::shorten(id)
        ),
    )
}

/// Reads an agent.
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
        .map(Json)
        .ok_or_else(|| unknown_agent(&id))
}

/// Changes an agent: its next run is built from the new settings; other agents are untouched.
#[utoipa::path(patch, path = "/v2/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "The agent's name")),
    request_body = AgentPatch,
    responses(
        (status = 200, description = "The agent as changed", body = AgentView),
        (status = 400, description = "Malformed body or id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown agent", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used", body = ErrorBody),
    ))]
pub(crate) async fn patch_agent(
    State(state): State<Arc<AppState>>,
    IdPath(id): IdPath,
    ApiJson(patch): ApiJson<AgentPatch>,
) -> Result<Json<AgentView>, ApiError> {
    match state.agents.patch(&id, patch) {
        Ok(Some(view)) => Ok(Json(view)),
        Ok(None) => Err(unknown_agent(&id)),
        Err(message) => Err(ApiError::unprocessable("invalid_setting", message)),
    }
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
