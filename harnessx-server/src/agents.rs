//! The platform's agents: stored, versioned resources in the run store ([`AGENT_KIND`]), so
//! every server process on the database sees the same agents, a change made through one is seen
//! by all at once, and a restart keeps it.
//!
//! Each change (`POST`/`PATCH /v2/agents`) is a new version. A run records the version it
//! started with and resumes with it ([`Catalog`] hands the runtime that version's agent), so a
//! change reaches later runs only. A server builds each version's agent once — its model, its
//! tools, its connectors' tools (from the process's one session per connector) — and its runs
//! share it, each with its own conversation and its conversation's grants. The configuration file's `[agents.NAME]` tables seed the store at
//! start ([`Agents::seed`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harnessx::knowledge::{self, KnowledgeBase, SqliteKnowledgeBase};
use harnessx::mcp::{McpServer, McpSession};
use harnessx::model::Model;
use harnessx::{Agent, AgentBuilder, BoxFuture};
use harnessx_builtin::ask_user::{ASK_USER, ask_user_questions_tool};
use harnessx_builtin::catalog::{Builtin, BuiltinCapability};
use harnessx_runtime::AgentCatalog;
use harnessx_runtime::store::{Conflict, Expect, Resource, ResourceStore, Seeded};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{AgentConfig, BuiltinConfig, Config, ConnectorChoice, ScriptTurn};
use crate::connectors::Connectors;
use crate::knowledge::{KnowledgeBases, StoredKnowledgeBase};

/// A platform built-in tool, as the console's Tools tab lists it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
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
    /// Attached stored knowledge bases (`/v2/knowledge`), by name.
    pub knowledge_bases: Vec<String>,
}

/// A change to an agent (`PATCH /v2/agents/{id}`): absent fields stay as they are.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentPatch {
    /// The new system prompt (`null` removes it).
    #[serde(
        default,
        deserialize_with = "some",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>)]
    pub instructions: Option<Option<String>>,
    /// `script` or `provider:model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Built-in tool switches by key: `{"ask_user": false}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub builtin_tools: Option<BTreeMap<String, bool>>,
    /// The whole list of library built-ins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundles: Option<Vec<BundleSetting>>,
    /// The whole list of connectors with their tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connectors: Option<Vec<ConnectorSetting>>,
    /// The scripted model's whole list of turns (with `"model": "script"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub script: Option<Vec<ScriptTurn>>,
    /// The whole list of attached stored knowledge bases, by name (`[]` detaches them all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knowledge_bases: Option<Vec<String>>,
}

fn some<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// A new agent (`POST /v2/agents`): a name and a model; everything else as for a change.
/// `ask_user` is on unless `builtin_tools` turns it off.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// The name: 1 to 64 letters, digits, `_` or `-`.
    pub id: String,
    /// `script` or `provider:model`.
    pub model: String,
    /// The system prompt.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Built-in tool switches by key: `{"ask_user": false}`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub builtin_tools: Option<BTreeMap<String, bool>>,
    /// Library built-ins loaded by name.
    #[serde(default)]
    pub bundles: Option<Vec<BundleSetting>>,
    /// Connectors with their tools.
    #[serde(default)]
    pub connectors: Option<Vec<ConnectorSetting>>,
    /// The scripted model's turns (with `"model": "script"`), as in the configuration file.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub script: Option<Vec<ScriptTurn>>,
    /// Stored knowledge bases (`/v2/knowledge`) to attach, by name.
    #[serde(default)]
    pub knowledge_bases: Option<Vec<String>>,
}

/// A knowledge base file an agent searches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeSetting {
    /// Its name.
    pub name: String,
    /// The SQLite file holding it, on the server's disk.
    #[schema(value_type = String)]
    pub path: std::path::PathBuf,
}

/// Everything an agent version is, as stored (the body of its `agent` resource).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// `script` or `provider:model`.
    pub model: String,
    /// The system prompt.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Whether the platform built-in `ask_user` is on.
    pub ask_user: bool,
    /// The scripted model's turns.
    #[serde(default)]
    pub script: Vec<ScriptTurn>,
    /// Library built-ins with their options.
    #[serde(default)]
    pub bundles: Vec<BundleSetting>,
    /// Connectors and the tools chosen from each.
    #[serde(default)]
    pub connectors: Vec<ConnectorSetting>,
    /// Knowledge base files.
    #[serde(default)]
    pub knowledge: Vec<KnowledgeSetting>,
    /// The time limit of tools without their own, in seconds.
    #[serde(default)]
    pub tool_timeout_seconds: Option<f64>,
    /// Time limits by tool name, in seconds.
    #[serde(default)]
    pub tool_timeouts: BTreeMap<String, f64>,
    /// Attached stored knowledge bases, by name (left out when none, so an agent stored
    /// before they existed reads back the same).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knowledge_bases: Vec<String>,
}

impl AgentSpec {
    /// The spec an `[agents.NAME]` table describes.
    pub fn from_config(a: &AgentConfig) -> Self {
        Self {
            model: a.model.get_ref().clone(),
            instructions: a.instructions.clone(),
            ask_user: a.ask_user.unwrap_or(true),
            script: a.script.iter().map(|t| t.get_ref().clone()).collect(),
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
            knowledge: a
                .knowledge
                .iter()
                .map(|k| KnowledgeSetting {
                    name: k.get_ref().name.clone(),
                    path: k.get_ref().path.clone(),
                })
                .collect(),
            tool_timeout_seconds: a.tool_timeout_seconds.as_ref().map(|t| *t.get_ref()),
            tool_timeouts: a
                .tool_timeouts
                .iter()
                .map(|(k, v)| (k.clone(), *v.get_ref()))
                .collect(),
            knowledge_bases: Vec::new(),
        }
    }

    /// Applies a change (absent fields stay as they are).
    fn apply(&mut self, patch: AgentPatch) -> Result<(), String> {
        if let Some(instructions) = patch.instructions {
            self.instructions = instructions;
        }
        if let Some(spec) = patch.model {
            self.model = spec.trim().to_owned();
        }
        if let Some(switches) = patch.builtin_tools {
            for (key, on) in switches {
                if key != ASK_USER {
                    return Err(format!(
                        "builtin_tools: `{key}` is not a platform built-in tool; the keys are: {ASK_USER}"
                    ));
                }
                self.ask_user = on;
            }
        }
        if let Some(bundles) = patch.bundles {
            self.bundles = bundles;
        }
        if let Some(connectors) = patch.connectors {
            self.connectors = connectors;
        }
        if let Some(script) = patch.script {
            self.script = script;
        }
        if let Some(bases) = patch.knowledge_bases {
            self.knowledge_bases = bases;
        }
        Ok(())
    }
}

/// An agent version made runnable: its model built, its knowledge bases open.
#[derive(Clone)]
struct Settings {
    spec: AgentSpec,
    model: Arc<dyn Model>,
    knowledge: Vec<Arc<dyn KnowledgeBase>>,
    tools: harnessx::ToolPolicy,
}

/// The resource kind of stored agents.
pub const AGENT_KIND: &str = "agent";

/// How many versions of one agent a server keeps built at once (a run of an older version
/// builds it again).
const BUILT_VERSIONS: usize = 2;

/// The platform's agents: stored, versioned resources in the run store (every server process
/// on the database sees the same ones), and the connectors of the configuration file.
pub struct Agents {
    store: Arc<dyn ResourceStore>,
    connectors: Connectors,
    window: Duration,
    /// Built agents by name, newest version first, with the connector versions each was built
    /// with (a connector's change rebuilds the agents that use it).
    built: Mutex<BTreeMap<String, Vec<Built>>>,
    /// The stored knowledge bases, when the store keeps documents.
    knowledge: Option<KnowledgeBases>,
}

/// An agent version built, and the connectors' versions it was built with.
struct Built {
    version: u64,
    connectors: BTreeMap<String, u64>,
    agent: Agent,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents").finish_non_exhaustive()
    }
}

/// Why a change to the agents was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentChangeError {
    /// No agent has this name.
    #[error("no agent is named `{0}`; GET /v2/agents lists them")]
    Unknown(String),
    /// An agent has this name already.
    #[error("an agent named `{0}` exists already; change it with PATCH /v2/agents/{0}")]
    Exists(String),
    /// A setting cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// Others kept changing the agent at the same moment.
    #[error("agent `{0}` was changed by others while this change was made; read it and try again")]
    Busy(String),
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(String),
}

/// The agent's `tool_timeout_seconds` and `tool_timeouts` as the registry's policy.
fn tool_policy(a: &AgentSpec) -> harnessx::ToolPolicy {
    let mut policy = harnessx::ToolPolicy::new();
    if let Some(t) = a.tool_timeout_seconds {
        policy = policy.with_default_timeout_seconds(t);
    }
    for (tool, t) in &a.tool_timeouts {
        policy = policy.with_tool_timeout_seconds(tool.clone(), *t);
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

fn store_error(e: impl std::fmt::Display) -> AgentChangeError {
    AgentChangeError::Store(e.to_string())
}

impl Settings {
    /// Builds the model and opens the knowledge bases of `spec`.
    fn new(spec: AgentSpec) -> Result<Self, String> {
        let model = model_for(&spec.model, &spec.script).map_err(|e| format!("model: {e}"))?;
        let mut knowledge = Vec::new();
        for kb in &spec.knowledge {
            let base = SqliteKnowledgeBase::open(&kb.path)
                .map_err(|e| format!("knowledge base `{}` ({}): {e}", kb.name, kb.path.display()))?
                .named(kb.name.clone());
            knowledge.push(Arc::new(base) as Arc<dyn KnowledgeBase>);
        }
        Ok(Self {
            tools: tool_policy(&spec),
            spec,
            model,
            knowledge,
        })
    }
}

impl Agents {
    /// The agents and connectors stored in `store`; `window` is the question window `ask_user`
    /// uses. [`seed`](Self::seed) stores the configuration's.
    /// OAuth connectors seal their tokens with the key `HARNESSX_SECRET_KEY` gives (see
    /// [`secret_key`](Self::secret_key)).
    pub fn new(store: Arc<dyn ResourceStore>, window: Duration) -> Self {
        Self {
            connectors: Connectors::new(
                Arc::clone(&store),
                crate::connectors::oauth::SecretKey::choose(None),
            ),
            store,
            window,
            built: Mutex::default(),
            knowledge: None,
        }
    }

    /// OAuth connectors seal their tokens with `key`; an `Err` is the message a sign-in gives
    /// (naming the setting to give).
    pub fn secret_key(mut self, key: Result<crate::connectors::oauth::SecretKey, String>) -> Self {
        self.connectors = Connectors::new(Arc::clone(&self.store), key);
        self
    }

    /// Keeps the documents of stored knowledge bases in `documents` (the same database as the
    /// agents): agents can then attach them.
    pub fn with_knowledge(
        mut self,
        documents: Arc<dyn harnessx_runtime::store::KnowledgeStore>,
    ) -> Self {
        self.knowledge = Some(KnowledgeBases::new(Arc::clone(&self.store), documents));
        self
    }

    /// The stored knowledge bases (`None` without [`with_knowledge`](Self::with_knowledge)).
    pub fn knowledge(&self) -> Option<&KnowledgeBases> {
        self.knowledge.as_ref()
    }

    /// The stored connectors.
    pub fn connectors(&self) -> &Connectors {
        &self.connectors
    }

    /// Stores the `[agents.NAME]` tables of `config`. An agent the store does not have is
    /// created; one whose table changed since the last start gets the table as a new version
    /// (replacing what the API changed); one whose table is unchanged keeps its API changes
    /// (and stays deleted if it was deleted). An agent taken out of the file stays stored.
    /// Returns each seeded agent's name and what happened to it.
    pub async fn seed(&self, config: &Config) -> Result<Vec<(String, Seeded)>, (String, String)> {
        let mut out = self.connectors.seed(config).await?;
        for (name, a) in &config.agents {
            let spec = AgentSpec::from_config(a);
            Settings::new(spec.clone()).map_err(|m| (name.clone(), m))?;
            let body = serde_json::to_value(&spec).map_err(|e| (name.clone(), e.to_string()))?;
            let seeded = self
                .store
                .seed_resource(AGENT_KIND, name, body)
                .await
                .map_err(|e| (name.clone(), e.to_string()))?;
            out.push((name.clone(), seeded));
        }
        Ok(out)
    }

    fn parse(r: &Resource) -> Result<AgentSpec, AgentChangeError> {
        serde_json::from_value(r.body.clone()).map_err(|e| {
            AgentChangeError::Store(format!(
                "agent `{}` version {} is stored in a shape this server cannot read: {e}",
                r.name, r.version
            ))
        })
    }

    fn view_of(&self, r: &Resource) -> Result<AgentView, AgentChangeError> {
        let spec = Self::parse(r)?;
        Ok(AgentView {
            id: r.name.clone(),
            model: spec.model.clone(),
            instructions: spec.instructions.clone(),
            version: r.version,
            builtin_tools: platform_tools()
                .into_iter()
                .map(|tool| BuiltinToolState {
                    enabled: tool.key != ASK_USER || spec.ask_user,
                    tool,
                })
                .collect(),
            bundles: spec.bundles.clone(),
            connectors: spec.connectors.clone(),
            knowledge: spec.knowledge.iter().map(|k| k.name.clone()).collect(),
            knowledge_bases: spec.knowledge_bases.clone(),
        })
    }

    /// Every agent, by name.
    pub async fn list(&self) -> Result<Vec<AgentView>, AgentChangeError> {
        let stored = self
            .store
            .resources(AGENT_KIND)
            .await
            .map_err(store_error)?;
        stored.iter().map(|r| self.view_of(r)).collect()
    }

    /// The agents' names.
    pub async fn names(&self) -> Result<Vec<String>, AgentChangeError> {
        Ok(self.list().await?.into_iter().map(|a| a.id).collect())
    }

    /// An agent's current version, or `None` when no agent has this name.
    pub async fn view(&self, name: &str) -> Result<Option<AgentView>, AgentChangeError> {
        match self
            .store
            .resource(AGENT_KIND, name, None)
            .await
            .map_err(store_error)?
        {
            Some(r) => self.view_of(&r).map(Some),
            None => Ok(None),
        }
    }

    /// Checks a spec whole: its name, model, script, bundles and connectors.
    async fn check(&self, name: &str, spec: &AgentSpec) -> Result<(), AgentChangeError> {
        check_name(name).map_err(AgentChangeError::Invalid)?;
        Settings::new(spec.clone()).map_err(AgentChangeError::Invalid)?;
        if spec.model != "script" && !spec.script.is_empty() {
            return Err(AgentChangeError::Invalid(format!(
                "script: a script is given but the model is `{}`; use \"model\": \"script\" or drop the script",
                spec.model
            )));
        }
        for (i, turn) in spec.script.iter().enumerate() {
            crate::script::check_turn(turn)
                .map_err(|m| AgentChangeError::Invalid(format!("script[{i}]: {m}")))?;
        }
        check_bundles(&spec.bundles).map_err(AgentChangeError::Invalid)?;
        if !spec.knowledge_bases.is_empty() {
            let Some(bases) = &self.knowledge else {
                return Err(AgentChangeError::Invalid(format!(
                    "knowledge_bases: {}",
                    crate::knowledge::KnowledgeChangeError::Unavailable
                )));
            };
            bases
                .check_attached(&spec.knowledge_bases)
                .await
                .map_err(|e| match e {
                    crate::knowledge::KnowledgeChangeError::Invalid(m) => {
                        AgentChangeError::Invalid(m)
                    }
                    other => store_error(other),
                })?;
        }
        let connectors = if spec.connectors.is_empty() {
            BTreeMap::new()
        } else {
            self.connectors.versions().await.map_err(store_error)?
        };
        for (i, c) in spec.connectors.iter().enumerate() {
            if !connectors.contains_key(&c.name) {
                let known: Vec<&str> = connectors.keys().map(String::as_str).collect();
                return Err(AgentChangeError::Invalid(format!(
                    "connectors[{i}].name: no connector is named `{}`; the connectors are: {}",
                    c.name,
                    if known.is_empty() {
                        "(none)".into()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }

    /// Creates an agent at version 1 (or the version after its deleted predecessor's).
    pub async fn create(&self, new: NewAgent) -> Result<AgentView, AgentChangeError> {
        let mut spec = AgentSpec {
            model: new.model.trim().to_owned(),
            instructions: None,
            ask_user: true,
            script: Vec::new(),
            bundles: Vec::new(),
            connectors: Vec::new(),
            knowledge: Vec::new(),
            tool_timeout_seconds: None,
            tool_timeouts: BTreeMap::new(),
            knowledge_bases: Vec::new(),
        };
        spec.apply(AgentPatch {
            instructions: new.instructions.map(Some),
            model: None,
            builtin_tools: new.builtin_tools,
            bundles: new.bundles,
            connectors: new.connectors,
            script: new.script,
            knowledge_bases: new.knowledge_bases,
        })
        .map_err(AgentChangeError::Invalid)?;
        self.check(&new.id, &spec).await?;
        let body = serde_json::to_value(&spec).map_err(store_error)?;
        match self
            .store
            .put_resource(AGENT_KIND, &new.id, body, Expect::Absent)
            .await
            .map_err(store_error)?
        {
            Ok(r) => self.view_of(&r),
            Err(_) => Err(AgentChangeError::Exists(new.id)),
        }
    }

    /// Applies a change to one agent as its next version (checked whole first: on error
    /// nothing changes). A change made by another process at the same moment is read and this
    /// one applied over it.
    pub async fn patch(
        &self,
        name: &str,
        patch: AgentPatch,
    ) -> Result<AgentView, AgentChangeError> {
        for _ in 0..5 {
            let current = self
                .store
                .resource(AGENT_KIND, name, None)
                .await
                .map_err(store_error)?
                .ok_or_else(|| AgentChangeError::Unknown(name.to_owned()))?;
            let mut spec = Self::parse(&current)?;
            spec.apply(patch.clone())
                .map_err(AgentChangeError::Invalid)?;
            self.check(name, &spec).await?;
            let body = serde_json::to_value(&spec).map_err(store_error)?;
            match self
                .store
                .put_resource(AGENT_KIND, name, body, Expect::Version(current.version))
                .await
                .map_err(store_error)?
            {
                Ok(r) => return self.view_of(&r),
                Err(Conflict { current: None }) => {
                    return Err(AgentChangeError::Unknown(name.to_owned()));
                }
                Err(Conflict { current: Some(_) }) => {}
            }
        }
        Err(AgentChangeError::Busy(name.to_owned()))
    }

    /// Deletes an agent: new runs of it are refused; runs already started finish on their
    /// version. `false` when no agent has this name.
    pub async fn delete(&self, name: &str) -> Result<bool, AgentChangeError> {
        self.store
            .delete_resource(AGENT_KIND, name)
            .await
            .map_err(store_error)
    }

    /// The agent `name` at `version`, built once per version (and again when a connector it
    /// uses changes) and shared by its runs; the agent is named `name` (its runs' telemetry
    /// spans say `invoke_agent {name}`).
    pub async fn agent(&self, name: &str, version: u64) -> Result<Agent, String> {
        let stored = self
            .store
            .resource(AGENT_KIND, name, Some(version))
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("agent `{name}` has no version {version} in the store"))?;
        let spec = Self::parse(&stored).map_err(|e| e.to_string())?;
        let servers: BTreeMap<String, (u64, McpServer)> = if spec.connectors.is_empty() {
            BTreeMap::new()
        } else {
            self.connectors
                .all()
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|(c, _)| spec.connectors.iter().any(|used| used.name == c.name))
                .map(|(c, server)| (c.name, (c.version, server)))
                .collect()
        };
        let used: BTreeMap<String, u64> = servers
            .iter()
            .map(|(name, (v, _))| (name.clone(), *v))
            .collect();
        if let Some(agent) = self.built_agent(name, version, &used) {
            return Ok(agent);
        }
        let mut sources = BTreeMap::new();
        let mut all_live = true;
        for (connector, (v, server)) in servers {
            let source = match self.connectors.session(&connector, v, server.clone()).await {
                Ok(session) => Source::Session(session),
                Err(_) => {
                    all_live = false;
                    Source::Connect(Box::new(server))
                }
            };
            sources.insert(connector, source);
        }
        let settings = Settings::new(spec).map_err(|e| format!("agent `{name}`: {e}"))?;
        let agent = self
            .configure(name, &settings, &sources, Agent::builder())
            .build()
            .map_err(|e| format!("building agent `{name}` failed: {e}"))?;
        if !all_live {
            // Not kept: the next run tries the connector's session again.
            return Ok(agent);
        }
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        let versions = built.entry(name.to_owned()).or_default();
        if let Some(existing) = versions
            .iter()
            .find(|b| b.version == version && b.connectors == used)
        {
            // Another worker built it meanwhile: share that one (its connections are open).
            return Ok(existing.agent.clone());
        }
        versions.retain(|b| b.version != version);
        versions.push(Built {
            version,
            connectors: used,
            agent: agent.clone(),
        });
        versions.sort_by_key(|b| std::cmp::Reverse(b.version));
        versions.truncate(BUILT_VERSIONS);
        Ok(agent)
    }

    fn built_agent(&self, name: &str, version: u64, used: &BTreeMap<String, u64>) -> Option<Agent> {
        let built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        built
            .get(name)?
            .iter()
            .find(|b| b.version == version && &b.connectors == used)
            .map(|b| b.agent.clone())
    }

    fn configure(
        &self,
        name: &str,
        s: &Settings,
        sources: &BTreeMap<String, Source>,
        builder: AgentBuilder,
    ) -> AgentBuilder {
        let mut b = builder
            .config(
                harnessx::AgentConfig::default()
                    .with_name(name.to_owned())
                    .with_tools(s.tools.clone()),
            )
            .model(Arc::clone(&s.model));
        if let Some(instructions) = &s.spec.instructions {
            b = b.instructions(instructions.clone());
        }
        if s.spec.ask_user {
            b = b.tool(ask_user_questions_tool(|_| async { None }, self.window));
        }
        for bundle in &s.spec.bundles {
            let (name, options) = (bundle.name.clone(), bundle.options.clone());
            b = b.capability(BuiltinCapability::new(name, options.unwrap_or(Value::Null)));
        }
        for choice in &s.spec.connectors {
            match sources.get(&choice.name) {
                Some(Source::Session(session)) => {
                    let mut tools = session.capability();
                    if let Some(allowed) = &choice.tools {
                        tools = tools.allow_tools(allowed.clone());
                    }
                    b = b.capability(tools);
                }
                Some(Source::Connect(server)) => {
                    let mut server = McpServer::clone(server);
                    if let Some(allowed) = &choice.tools {
                        server = server.allow_tools(allowed.clone());
                    }
                    b = b.capability(server);
                }
                None => {}
            }
        }
        for kb in &s.knowledge {
            b = b.capability(knowledge::Knowledge::from_arc(Arc::clone(kb)));
        }
        if let Some(bases) = &self.knowledge {
            for name in &s.spec.knowledge_bases {
                let base = StoredKnowledgeBase::new(Arc::clone(bases.documents()), name.clone());
                b = b.capability(knowledge::Knowledge::new(base));
            }
        }
        b
    }
}

/// Where an agent being built takes a connector's tools from.
enum Source {
    /// This process's live session with the connector, shared by every agent using it.
    Session(McpSession),
    /// A connection of the agent's own, made at its first run (the session could not be made:
    /// if the server is still down, a placeholder tool tells the model so).
    Connect(Box<McpServer>),
}

/// The runtime finds every run's agent here, at the version the run started with.
#[derive(Debug, Clone)]
pub struct Catalog(pub Arc<Agents>);

impl AgentCatalog for Catalog {
    fn current_version<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async move {
            Ok(self
                .0
                .store
                .resource(AGENT_KIND, name, None)
                .await
                .map_err(|e| e.to_string())?
                .map(|r| r.version))
        })
    }

    fn agent<'a>(&'a self, name: &'a str, version: u64) -> BoxFuture<'a, Result<Agent, String>> {
        Box::pin(self.0.agent(name, version))
    }
}
