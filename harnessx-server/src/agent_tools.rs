//! What an agent's model sees: every tool of the agent's current version, with where it comes
//! from (a platform built-in, a library bundle, the planning tools, a connector, a knowledge
//! base), what happens when the model calls it (it runs, asks a person first, or is denied)
//! and whether it only reads.
//!
//! The tools other than connectors' come from building the agent's current version the way a
//! run builds it (its model, bundles, knowledge bases and the planning tools the agent loop
//! adds), without connecting anything; connectors' tools come from their listings (see
//! `GET /v2/connectors`), filtered to the tools the agent chose.

use std::collections::BTreeMap;

use harnessx::{PermissionLevel, ToolRegistry};
use harnessx_builtin::ask_user::ASK_USER;
use harnessx_builtin::catalog::BuiltinExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::{AgentChangeError, AgentSpec, ConnectorSetting};

/// Where a tool an agent's model sees comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolSource {
    /// A platform built-in tool (`ask_user`), switched per agent.
    Platform,
    /// A library bundle or single built-in (`filesystem`, `web`, `bash`, `memory`, ...).
    Bundle,
    /// The planning tools every agent gets (`write_todos`, `read_todos`).
    Planning,
    /// A connector (an MCP server): `mcp_{connector}_{tool}`.
    Connector,
    /// The attached knowledge bases (`knowledge_search`).
    Knowledge,
}

/// What happens when the model calls a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolPermission {
    /// It runs.
    Allow,
    /// A person is asked first (the run waits for an approval).
    Ask,
    /// It never runs; the model is told permission was denied.
    Deny,
}

impl From<PermissionLevel> for ToolPermission {
    fn from(level: PermissionLevel) -> Self {
        match level {
            PermissionLevel::Allow => Self::Allow,
            PermissionLevel::Ask => Self::Ask,
            PermissionLevel::Deny => Self::Deny,
        }
    }
}

/// One tool an agent's model sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AgentTool {
    /// The name the model calls it by.
    pub name: String,
    /// What the model is told it does.
    pub description: String,
    /// Where it comes from.
    pub source: ToolSource,
    /// The bundle, connector or knowledge bases it comes from (`filesystem`, `notes`,
    /// `handbook, runbook`); absent for platform and planning tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// What happens when the model calls it.
    pub permission: ToolPermission,
    /// Whether it only reads (its `readOnlyHint`); absent when the tool does not say.
    pub read_only: Option<bool>,
}

/// A connector of the agent whose tools could not be listed: its tools are not counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UnlistedConnector {
    /// The connector.
    pub name: String,
    /// `needs_sign_in` or `unreachable`.
    pub status: String,
    /// Why.
    pub error: String,
}

/// Every tool an agent's current version gives its model (`GET /v2/agents/{id}/tools`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AgentTools {
    /// The agent.
    pub agent: String,
    /// Its current version, which the listing describes.
    pub version: u64,
    /// The tools, platform tools first, then bundles, planning, connectors and knowledge
    /// bases, each group in the order the model is given them.
    pub tools: Vec<AgentTool>,
    /// The agent's connectors whose tools could not be listed now.
    pub unlisted_connectors: Vec<UnlistedConnector>,
}

/// The tools of an agent version other than its connectors', from `registry` (the agent built
/// without connecting) and `spec`, each classified by source; `level` gives a tool's effective
/// permission.
pub(crate) fn classify(
    spec: &AgentSpec,
    registry: &ToolRegistry,
    level: impl Fn(&str, Option<PermissionLevel>) -> PermissionLevel,
) -> Result<Vec<AgentTool>, AgentChangeError> {
    // Which bundle registered which tool: each bundle loaded alone, as the agent loads it.
    let mut bundle_of: BTreeMap<String, String> = BTreeMap::new();
    for bundle in &spec.bundles {
        let scratch = ToolRegistry::new();
        let names = scratch
            .load_builtin(&bundle.name, bundle.options.clone().unwrap_or(Value::Null))
            .map_err(|e| AgentChangeError::Invalid(format!("bundles: {e}")))?;
        for name in names {
            bundle_of.entry(name).or_insert_with(|| bundle.name.clone());
        }
    }
    let bases: Vec<&str> = spec
        .knowledge
        .iter()
        .map(|k| k.name.as_str())
        .chain(spec.knowledge_bases.iter().map(String::as_str))
        .collect();
    let mut tools = Vec::new();
    for name in registry.list_tools() {
        let Some(def) = registry.get_tool(&name) else {
            continue;
        };
        let (source, origin) = if name == ASK_USER && spec.ask_user {
            (ToolSource::Platform, None)
        } else if let Some(bundle) = bundle_of.get(&name) {
            (ToolSource::Bundle, Some(bundle.clone()))
        } else if harnessx::planning::PLANNING_TOOLS.contains(&name.as_str()) {
            (ToolSource::Planning, None)
        } else {
            // Nothing else is registered without connecting: the knowledge bases' search.
            (ToolSource::Knowledge, Some(bases.join(", ")))
        };
        tools.push(AgentTool {
            permission: level(&name, def.permission).into(),
            read_only: def.annotations.read_only_hint,
            description: def.description.clone(),
            name,
            source,
            origin,
        });
    }
    tools.sort_by_key(|t| group(t.source));
    Ok(tools)
}

/// The order groups are listed in.
fn group(source: ToolSource) -> u8 {
    match source {
        ToolSource::Platform => 0,
        ToolSource::Bundle => 1,
        ToolSource::Planning => 2,
        ToolSource::Connector => 3,
        ToolSource::Knowledge => 4,
    }
}

/// The tools a connector listing gives an agent that chose `choice`: every tool when it chose
/// none by name. A tool the server does not mark `readOnlyHint: true` asks first (the MCP
/// client's rule).
pub(crate) fn connector_tools(
    choice: &ConnectorSetting,
    listed: &[crate::api::ConnectorTool],
) -> Vec<AgentTool> {
    listed
        .iter()
        .filter(|t| {
            choice
                .tools
                .as_ref()
                .is_none_or(|chosen| chosen.contains(&t.name))
        })
        .map(|t| AgentTool {
            name: t.key.clone(),
            description: t.description.clone(),
            source: ToolSource::Connector,
            origin: Some(choice.name.clone()),
            permission: if t.read_only {
                ToolPermission::Allow
            } else {
                ToolPermission::Ask
            },
            read_only: Some(t.read_only),
        })
        .collect()
}

/// Puts `connector` tools in their place: after planning, before knowledge.
pub(crate) fn merge(tools: &mut Vec<AgentTool>, connector: Vec<AgentTool>) {
    tools.extend(connector);
    // A stable sort: each group keeps its order.
    tools.sort_by_key(|t| group(t.source));
}
