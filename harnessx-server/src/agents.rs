//! Agents by name, each rebuilt for every run from its current settings: the runtime calls
//! [`Agents::configure`] with a fresh builder whenever a run of the agent starts or resumes, so a
//! change (`PATCH /v2/agents/{id}`) reaches the agent's next run and no other agent.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use harnessx::AgentBuilder;
use harnessx::knowledge::{self, KnowledgeBase, SqliteKnowledgeBase};
use harnessx::mcp::McpServer;
use harnessx::model::Model;
use harnessx_builtin::ask_user::{ASK_USER, ask_user_questions_tool};
use harnessx_builtin::catalog::{Builtin, BuiltinCapability};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{
    AgentConfig, BuiltinConfig, Config, ConnectorChoice, ConnectorConfig, ScriptTurn,
};

/// A platform built-in tool, as the console's Tools tab lists it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PlatformTool {
    /// The display name (`Ask user`); the console's toggle is labelled `Enable: {name}`.
    pub name: String,
    /// The tool key the model calls (`ask_user`).
    pub key: String,
    /// What it does.
    pub description: String,
}

/// The platform built-in tools, in display order (today: `ask_user`).
///
/// ```
/// let tools = harnessx_server::agents::platform_tools();
/// assert_eq!(tools[0].key, "ask_user");
/// ```
pub fn platform_tools() -> Vec<PlatformTool> {
    let ask = ask_user_questions_tool(|_| async { None }, Duration::from_secs(600));
    vec![PlatformTool {
        name: "Ask user".into(),
        key: ASK_USER.into(),
        description: ask.description.clone(),
    }]
}

/// A built-in tool's switch in an agent's settings.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BuiltinToolState {
    /// The tool.
    #[serde(flatten)]
    pub tool: PlatformTool,
    /// Whether the agent has it.
    pub enabled: bool,
}

/// A library built-in tool or bundle an agent loads, with its options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleSetting {
    /// `fetch_url`, `filesystem`, `web`, `all`, ...
    pub name: String,
    /// The bundle helper's options (`include`, `permission`, `base_path`, ...).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub options: Option<Value>,
}

/// A connector and the tools chosen from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectorSetting {
    /// The connector's name.
    pub name: String,
    /// The server's tools this agent may use (all when absent).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
}

/// An agent as `GET /v2/agents/{id}` shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AgentView {
    /// The name.
    pub id: String,
    /// `script` or `provider:model`.
    pub model: String,
    /// The system prompt.
    pub instructions: Option<String>,
    /// Bumped by every change.
    pub version: u64,
    /// The platform built-in tools with their switches.
    pub builtin_tools: Vec<BuiltinToolState>,
    /// Library built-ins loaded by name.
    pub bundles: Vec<BundleSetting>,
    /// Connectors and their chosen tools.
    pub connectors: Vec<ConnectorSetting>,
    /// Attached knowledge bases' names.
    pub knowledge: Vec<String>,
}

/// A change to an agent (`PATCH /v2/agents/{id}`): absent fields stay as they are.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentPatch {
    /// The new system prompt (`null` removes it).
    #[serde(default, deserialize_with = "some")]
    #[schema(value_type = Option<String>)]
    pub instructions: Option<Option<String>>,
    /// `script` or `provider:model`.
    pub model: Option<String>,
    /// Built-in tool switches by key: `{"ask_user": false}`.
    #[schema(value_type = Option<Object>)]
    pub builtin_tools: Option<BTreeMap<String, bool>>,
    /// The whole list of library built-ins.
    pub bundles: Option<Vec<BundleSetting>>,
    /// The whole list of connectors with their tools.
    pub connectors: Option<Vec<ConnectorSetting>>,
}

fn some<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Clone)]
struct Knowledge {
    name: String,
    base: Arc<dyn KnowledgeBase>,
}

#[derive(Clone)]
struct Settings {
    model_spec: String,
    model: Arc<dyn Model>,
    script: Arc<Vec<ScriptTurn>>,
    instructions: Option<String>,
    ask_user: bool,
    bundles: Vec<BundleSetting>,
    connectors: Vec<ConnectorSetting>,
    knowledge: Vec<Knowledge>,
    /// The tools' time limits: a default for tools without their own, and by name.
    tools: harnessx::ToolPolicy,
    version: u64,
}

/// The server's agents and connectors.
pub struct Agents {
    agents: BTreeMap<String, RwLock<Arc<Settings>>>,
    connectors: BTreeMap<String, McpServer>,
    window: Duration,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The agent's `tool_timeout_seconds` and `tool_timeouts` as the registry's policy.
fn tool_policy(a: &AgentConfig) -> harnessx::ToolPolicy {
    let mut policy = harnessx::ToolPolicy::new();
    if let Some(t) = &a.tool_timeout_seconds {
        policy = policy.with_default_timeout_seconds(*t.get_ref());
    }
    for (tool, t) in &a.tool_timeouts {
        policy = policy.with_tool_timeout_seconds(tool.clone(), *t.get_ref());
    }
    policy
}

/// Checks an agent or connector name: 1–64 letters, digits, `_` or `-`.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "`{name}` is not a valid name; use 1 to 64 letters, digits, `_` or `-`"
        ));
    }
    Ok(())
}

/// The MCP server a `[connectors.NAME]` table describes.
pub(crate) fn connector_server(name: &str, c: &ConnectorConfig) -> Result<McpServer, String> {
    check_name(name)?;
    let mut server = match (&c.command, &c.url) {
        (Some(command), None) => {
            let mut s = McpServer::stdio(name, command, c.args.clone());
            for (k, v) in &c.env {
                s = s.env(k, v);
            }
            s
        }
        (None, Some(url)) => {
            let mut s = McpServer::http(name, url);
            for (k, v) in &c.headers {
                s = s.header(k, v);
            }
            s
        }
        _ => {
            return Err(
                "give either `command` (a stdio server) or `url` (streamable HTTP), not both"
                    .into(),
            );
        }
    };
    if let Some(t) = &c.connect_timeout_seconds {
        server = server.connect_timeout(Duration::from_secs_f64(*t.get_ref()));
    }
    Ok(server)
}

/// Builds the model a spec names: `script` (playing `script`) or `provider:model` (with the
/// provider's key and base URL from the environment).
fn model_for(spec: &str, script: &[ScriptTurn]) -> Result<Arc<dyn Model>, String> {
    if spec == "script" {
        return Ok(Arc::new(crate::script::script_model(script)));
    }
    harnessx::model::parse_model_spec(spec).map_err(|e| e.to_string())?;
    harnessx::model::from_env_with(|name| {
        if name == "HARNESSX_MODEL" {
            Some(spec.to_owned())
        } else {
            std::env::var(name).ok()
        }
    })
    .map_err(|e| e.to_string())?
    .ok_or_else(|| format!("the model spec `{spec}` is empty"))
}

fn check_bundles(bundles: &[BundleSetting]) -> Result<(), String> {
    for (i, b) in bundles.iter().enumerate() {
        Builtin::parse(&b.name, b.options.clone().unwrap_or(Value::Null))
            .map_err(|e| format!("bundles[{i}]: {e}"))?;
    }
    Ok(())
}

impl Agents {
    /// The agents of `config`; `window` is the question window `ask_user` uses.
    pub fn from_config(config: &Config, window: Duration) -> Result<Self, (String, String)> {
        let mut connectors = BTreeMap::new();
        for (name, c) in &config.connectors {
            let server = connector_server(name, c).map_err(|m| (name.clone(), m))?;
            connectors.insert(name.clone(), server);
        }
        let mut agents = BTreeMap::new();
        for (name, a) in &config.agents {
            let settings = Self::settings(a).map_err(|m| (name.clone(), m))?;
            agents.insert(name.clone(), RwLock::new(Arc::new(settings)));
        }
        Ok(Self {
            agents,
            connectors,
            window,
        })
    }

    fn settings(a: &AgentConfig) -> Result<Settings, String> {
        let script: Vec<ScriptTurn> = a.script.iter().map(|t| t.get_ref().clone()).collect();
        let model = model_for(a.model.get_ref(), &script)?;
        let mut knowledge = Vec::new();
        for kb in &a.knowledge {
            let kb = kb.get_ref();
            let base = SqliteKnowledgeBase::open(&kb.path)
                .map_err(|e| format!("knowledge base `{}` ({}): {e}", kb.name, kb.path.display()))?
                .named(kb.name.clone());
            knowledge.push(Knowledge {
                name: kb.name.clone(),
                base: Arc::new(base),
            });
        }
        Ok(Settings {
            model_spec: a.model.get_ref().clone(),
            model,
            script: Arc::new(script),
            instructions: a.instructions.clone(),
            ask_user: a.ask_user.unwrap_or(true),
            bundles: a
                .builtins
                .iter()
                .map(|b| {
                    let BuiltinConfig { name, options, .. } = b.get_ref().clone();
                    BundleSetting { name, options }
                })
                .collect(),
            connectors: a
                .connectors
                .iter()
                .map(|c| {
                    let ConnectorChoice { name, tools, .. } = c.get_ref().clone();
                    ConnectorSetting { name, tools }
                })
                .collect(),
            knowledge,
            tools: tool_policy(a),
            version: 1,
        })
    }

    /// The MCP servers of the `[connectors.NAME]` tables, by name, with none of an agent's
    /// tool choices applied.
    pub fn connector_servers(&self) -> Vec<McpServer> {
        self.connectors.values().cloned().collect()
    }

    /// The agents' names.
    pub fn names(&self) -> Vec<String> {
        self.agents.keys().cloned().collect()
    }

    fn current(&self, name: &str) -> Option<Arc<Settings>> {
        self.agents
            .get(name)
            .map(|s| Arc::clone(&s.read().unwrap_or_else(|p| p.into_inner())))
    }

    /// An agent's view, or `None` when no agent has this name.
    pub fn view(&self, name: &str) -> Option<AgentView> {
        let s = self.current(name)?;
        Some(AgentView {
            id: name.to_owned(),
            model: s.model_spec.clone(),
            instructions: s.instructions.clone(),
            version: s.version,
            builtin_tools: platform_tools()
                .into_iter()
                .map(|tool| BuiltinToolState {
                    enabled: tool.key != ASK_USER || s.ask_user,
                    tool,
                })
                .collect(),
            bundles: s.bundles.clone(),
            connectors: s.connectors.clone(),
            knowledge: s.knowledge.iter().map(|k| k.name.clone()).collect(),
        })
    }

    /// Applies a change to one agent (checked whole first: on error nothing changes).
    pub fn patch(&self, name: &str, patch: AgentPatch) -> Result<Option<AgentView>, String> {
        let Some(lock) = self.agents.get(name) else {
            return Ok(None);
        };
        let mut guard = lock.write().unwrap_or_else(|p| p.into_inner());
        let mut next = Settings::clone(&guard);
        if let Some(instructions) = patch.instructions {
            next.instructions = instructions;
        }
        if let Some(spec) = patch.model {
            next.model = model_for(spec.trim(), &next.script).map_err(|e| format!("model: {e}"))?;
            next.model_spec = spec.trim().to_owned();
        }
        if let Some(switches) = patch.builtin_tools {
            for (key, on) in switches {
                if key != ASK_USER {
                    return Err(format!(
                        "builtin_tools: `{key}` is not a platform built-in tool; the keys are: {ASK_USER}"
                    ));
                }
                next.ask_user = on;
            }
        }
        if let Some(bundles) = patch.bundles {
            check_bundles(&bundles)?;
            next.bundles = bundles;
        }
        if let Some(connectors) = patch.connectors {
            for (i, c) in connectors.iter().enumerate() {
                if !self.connectors.contains_key(&c.name) {
                    let known: Vec<&str> = self.connectors.keys().map(String::as_str).collect();
                    return Err(format!(
                        "connectors[{i}].name: no connector is named `{}`; the connectors are: {}",
                        c.name,
                        if known.is_empty() {
                            "(none)".into()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
            }
            next.connectors = connectors;
        }
        next.version += 1;
        *guard = Arc::new(next);
        drop(guard);
        Ok(self.view(name))
    }

    /// Configures a fresh builder for a run of `name` from its settings at this moment; the
    /// agent is named `name` (its runs' telemetry spans say `invoke_agent {name}`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use harnessx_server::{Config, agents::Agents};
    /// let agents = Agents::from_config(&Config::offline(), Duration::from_secs(600)).unwrap();
    /// let agent = agents.configure("assistant", harnessx::Agent::builder()).build().unwrap();
    /// assert_eq!(agent.config().name.as_deref(), Some("assistant"));
    /// ```
    pub fn configure(&self, name: &str, builder: AgentBuilder) -> AgentBuilder {
        let Some(s) = self.current(name) else {
            return builder;
        };
        let mut b = builder
            .config(
                harnessx::AgentConfig::default()
                    .with_name(name.to_owned())
                    .with_tools(s.tools.clone()),
            )
            .model(Arc::clone(&s.model));
        if let Some(instructions) = &s.instructions {
            b = b.instructions(instructions.clone());
        }
        if s.ask_user {
            b = b.tool(ask_user_questions_tool(|_| async { None }, self.window));
        }
        for bundle in &s.bundles {
            let (name, options) = (bundle.name.clone(), bundle.options.clone());
            b = b.capability(BuiltinCapability::new(name, options.unwrap_or(Value::Null)));
        }
        for choice in &s.connectors {
            if let Some(server) = self.connectors.get(&choice.name) {
                let mut server = server.clone();
                if let Some(tools) = &choice.tools {
                    server = server.allow_tools(tools.clone());
                }
                b = b.capability(server);
            }
        }
        for kb in &s.knowledge {
            let base = Arc::clone(&kb.base);
            b = b.capability(knowledge::Knowledge::from_arc(base));
        }
        b
    }
}
