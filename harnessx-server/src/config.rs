//! `harnessx.toml`: the server, the store, MCP connectors and the agents, read with every
//! unknown key and bad value reported with its key and line.
//!
//! ```
//! use harnessx_server::config::Config;
//! let config = Config::parse(r#"
//! [agents.support]
//! model = "script"
//! instructions = "Help with orders."
//! script = [{ reply = "Hello!" }]
//! "#)?;
//! assert_eq!(config.agents["support"].instructions.as_deref(), Some("Help with orders."));
//!
//! let err = Config::parse("[agents.support]\nmodle = \"script\"\n").unwrap_err();
//! assert!(err.to_string().contains("line 2"), "{err}");
//! assert!(err.to_string().contains("modle"), "{err}");
//! # Ok::<(), harnessx_server::ConfigError>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::error::ConfigError;

mod start;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// The HTTP side.
    #[serde(default)]
    pub server: ServerConfig,
    /// Where runs live.
    #[serde(default)]
    pub store: StoreConfig,
    /// MCP servers agents may take tools from, by name.
    #[serde(default)]
    pub connectors: BTreeMap<String, ConnectorConfig>,
    /// The agents, by name.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    /// Where each line of the text starts (byte offsets), for messages naming a line after
    /// parsing.
    #[serde(skip)]
    line_starts: Vec<usize>,
    /// The file it was read from, for messages naming it.
    #[serde(skip)]
    path: Option<PathBuf>,
    /// Webhooks: URLs told when runs wait for a person, complete, fail or are cancelled.
    #[serde(default)]
    pub webhooks: Vec<Spanned<WebhookConfig>>,
}

/// `[server]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The address to listen on (default `127.0.0.1:8080`; `--bind` wins).
    pub bind: Option<Spanned<String>>,
    /// Bearer API keys accepted (with those of `HARNESSX_API_KEYS`).
    #[serde(default)]
    pub api_keys: Vec<Spanned<String>>,
    /// The largest request body in bytes (default 64 KiB).
    pub max_body_bytes: Option<Spanned<i64>>,
    /// How many event streams may be open at once (default 2048).
    pub max_subscribers: Option<Spanned<i64>>,
    /// The address browsers reach this server at (`https://harnessx.example.com`): connector
    /// sign-ins send the browser back to `{public_url}/v2/connectors/oauth/callback`. Default:
    /// `http://{the bound address}`.
    pub public_url: Option<Spanned<String>>,
    /// The key sealing connector sign-in tokens in the database: 32 bytes as 64 hex digits or
    /// base64, the same on every server sharing the database (`HARNESSX_SECRET_KEY` wins).
    pub secret_key: Option<Spanned<String>>,
    /// Who may read `GET /metrics`: `"key"` (the default: a request with an API key, like
    /// every route but `/healthz` and `/readyz`) or `"open"` (anyone who reaches the port).
    pub metrics: Option<Spanned<String>>,
    /// The most attempts a webhook delivery gets (default 8; a webhook's own `max_attempts`
    /// wins).
    pub webhook_max_attempts: Option<Spanned<i64>>,
    /// The wait, in seconds, after a webhook delivery's first failed attempt (default 5); each
    /// next wait is five times longer, at most a day.
    pub webhook_first_retry_seconds: Option<Spanned<f64>>,
}

impl ServerConfig {
    /// Whether `GET /metrics` answers without an API key (`metrics = "open"`).
    pub fn metrics_open(&self) -> bool {
        self.metrics.as_ref().is_some_and(|m| m.get_ref() == "open")
    }
}

/// `[store]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StoreConfig {
    /// The SQLite file (default `harnessx.db`; `:memory:` keeps runs in memory): one server
    /// process at a time.
    pub sqlite: Option<Spanned<String>>,
    /// A PostgreSQL URL (`postgresql://user@host:5432/db?sslmode=verify-full`): any number of
    /// server processes on any machines share it as one platform.
    pub postgres: Option<Spanned<String>>,
    /// How many runs the server drives at once (default 4).
    pub workers: Option<Spanned<i64>>,
    /// How long, in seconds, a server's claim on a run lasts without a heartbeat (default 30):
    /// when a server dies, another resumes its runs this long after.
    pub lease_seconds: Option<Spanned<f64>>,
    /// How many days a finished run (completed, failed or cancelled) is kept: the server then
    /// deletes it with its events and journal, in small batches (see
    /// [`retention`](crate::retention)). Unset: runs are kept until `harnessx runs prune`.
    pub retain_days: Option<Spanned<i64>>,
}

impl StoreConfig {
    /// `retain_days`, once checked (1 to [`MAX_RETAIN_DAYS`](crate::retention::MAX_RETAIN_DAYS)).
    pub fn retain_days(&self) -> Option<u32> {
        self.retain_days
            .as_ref()
            .and_then(|d| u32::try_from(*d.get_ref()).ok())
    }
}

/// `[[webhooks]]`: a URL told about run events, signed per the Standard Webhooks spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct WebhookConfig {
    /// Its id (default: `wh_` and 16 hex digits of the SHA-256 of its URL); give one to change
    /// the URL later without making a second webhook.
    pub id: Option<Spanned<String>>,
    /// Where events are posted.
    pub url: Spanned<String>,
    /// The events: some of `run.waiting_input`, `run.completed`, `run.failed`,
    /// `run.cancelled`.
    pub events: Spanned<Vec<Spanned<String>>>,
    /// The signing secret: `whsec_` and the base64 of 24 to 64 random bytes.
    pub secret: Option<Spanned<String>>,
    /// What it is for.
    pub description: Option<String>,
    /// The most attempts a delivery gets (default `[server] webhook_max_attempts`).
    pub max_attempts: Option<Spanned<i64>>,
    /// Whether events are delivered (default `true`).
    pub enabled: Option<bool>,
}

/// `[connectors.NAME]`: an MCP server, over stdio (`command`) or streamable HTTP (`url`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ConnectorConfig {
    /// The program to start (stdio).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment (nothing else is passed).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The server's URL (streamable HTTP).
    pub url: Option<String>,
    /// HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The connect deadline in seconds.
    pub connect_timeout_seconds: Option<Spanned<f64>>,
    /// Sign in with OAuth 2.1 from the console: `oauth = {}` (dynamic client registration) or
    /// `oauth = { client_id = "..", scopes = [".."] }`.
    pub oauth: Option<crate::connectors::OAuthSettings>,
    #[serde(skip)]
    pub(crate) line: usize,
}

/// `[agents.NAME]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AgentConfig {
    /// `provider:model` (`openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`) or `script`.
    pub model: Spanned<String>,
    /// The system prompt.
    pub instructions: Option<String>,
    /// The platform built-in `ask_user` (on unless `false`).
    pub ask_user: Option<bool>,
    /// The scripted model's turns (with `model = "script"`).
    #[serde(default)]
    pub script: Vec<Spanned<ScriptTurn>>,
    /// Library built-in tools and bundles by name, with their helper's options.
    #[serde(default)]
    pub builtins: Vec<Spanned<BuiltinConfig>>,
    /// Connectors and the tools chosen from each.
    #[serde(default)]
    pub connectors: Vec<Spanned<ConnectorChoice>>,
    /// Knowledge bases (embedded SQLite full-text) to attach.
    #[serde(default)]
    pub knowledge: Vec<Spanned<KnowledgeConfig>>,
    /// The time limit, in seconds, of every tool of this agent that has no limit of its own
    /// (default 25).
    pub tool_timeout_seconds: Option<Spanned<f64>>,
    /// Time limits by tool name, in seconds, for any tool of the agent: built-ins (`run_bash`),
    /// connectors' tools (`mcp_files_write_file`); they beat the tool's own limit. A `manual`
    /// tool that times out in a run pauses it in `waiting_input` for a person to say whether it
    /// took effect.
    #[serde(default)]
    pub tool_timeouts: BTreeMap<String, Spanned<f64>>,
}

/// One scripted model turn: exactly one of `reply`, `call` (with `arguments`) or `ask`.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ScriptTurn {
    /// Answer with this text; `{result}` is replaced by the last tool result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Call this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The call's arguments (a table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Call `ask_user`: a question string, or `{questions = [...]}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<Value>,
}

/// A built-in tool or bundle by name (`fetch_url`, `filesystem`, `all`, ...).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BuiltinConfig {
    /// The name.
    pub name: String,
    /// The bundle helper's options (`include`, `permission`, `base_path`, ...).
    #[serde(default)]
    pub options: Option<Value>,
}

/// The tools an agent takes from a connector.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ConnectorChoice {
    /// The connector's name (a `[connectors.NAME]` table).
    pub name: String,
    /// The server's tool names to expose (all of them when absent).
    pub tools: Option<Vec<String>>,
}

/// A knowledge base file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct KnowledgeConfig {
    /// Its name.
    pub name: String,
    /// The SQLite file holding it.
    pub path: PathBuf,
}

impl Config {
    /// Reads and checks a file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let mut config = Self::parse(&text).map_err(|e| e.in_file(path))?;
        config.path = Some(path.to_owned());
        Ok(config)
    }

    /// The file this configuration was read from ([`load`](Self::load)); `None` for text
    /// parsed directly.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The 1-based line holding byte `offset` of the text parsed.
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|start| *start <= offset)
            .max(1)
    }

    /// Parses and checks the text of a file.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let mut config: Config =
            toml::from_str(text).map_err(|e| ConfigError::Syntax(syntax_message(text, &e)))?;
        config.check(text)?;
        config.line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Ok(config)
    }

    /// The configuration without a file: one offline agent, `assistant`, on the scripted model,
    /// that asks how to greet you and then does.
    pub fn offline() -> Self {
        let mut config = Self::parse(crate::OFFLINE_CONFIG).unwrap_or_default();
        config.store.sqlite = None;
        config
    }

    fn check(&mut self, text: &str) -> Result<(), ConfigError> {
        let line = |span: std::ops::Range<usize>| line_of(text, span.start);
        let bad = |span, key: String, message: String| ConfigError::Invalid {
            line: line(span),
            key,
            message,
        };
        if let Some(n) = &self.server.max_body_bytes
            && (*n.get_ref() < 1024 || *n.get_ref() > 64 * 1024 * 1024)
        {
            return Err(bad(
                n.span(),
                "server.max_body_bytes".into(),
                format!("{} is out of range; give 1024 to 67108864", n.get_ref()),
            ));
        }
        if let Some(n) = &self.server.max_subscribers
            && (*n.get_ref() < 1 || *n.get_ref() > 1_000_000)
        {
            return Err(bad(
                n.span(),
                "server.max_subscribers".into(),
                format!("{} is out of range; give 1 to 1000000", n.get_ref()),
            ));
        }
        if let Some(m) = &self.server.metrics
            && !matches!(m.get_ref().as_str(), "key" | "open")
        {
            return Err(bad(
                m.span(),
                "server.metrics".into(),
                format!(
                    "`{}` is not a choice; give \"key\" (the default: /metrics needs an API key) \
                     or \"open\" (anyone who reaches the port may read it)",
                    m.get_ref()
                ),
            ));
        }
        if let Some(n) = &self.store.workers
            && (*n.get_ref() < 1 || *n.get_ref() > 1024)
        {
            return Err(bad(
                n.span(),
                "store.workers".into(),
                format!("{} is out of range; give 1 to 1024", n.get_ref()),
            ));
        }
        if let (Some(_), Some(pg)) = (&self.store.sqlite, &self.store.postgres) {
            return Err(bad(
                pg.span(),
                "store.postgres".into(),
                "both `sqlite` and `postgres` are given; keep the one the server should use".into(),
            ));
        }
        if let Some(pg) = &self.store.postgres
            && !matches!(
                crate::server::Database::parse(pg.get_ref()),
                crate::server::Database::Postgres(_)
            )
        {
            return Err(bad(
                pg.span(),
                "store.postgres".into(),
                "not a PostgreSQL URL; write it like postgresql://user@host:5432/database".into(),
            ));
        }
        if let Some(t) = &self.store.lease_seconds
            && !(t.get_ref().is_finite() && *t.get_ref() >= 1.0 && *t.get_ref() <= 3600.0)
        {
            return Err(bad(
                t.span(),
                "store.lease_seconds".into(),
                format!("{} is out of range; give 1 to 3600 seconds", t.get_ref()),
            ));
        }
        if let Some(d) = &self.store.retain_days
            && !(1..=crate::retention::MAX_RETAIN_DAYS).contains(d.get_ref())
        {
            return Err(bad(
                d.span(),
                "store.retain_days".into(),
                format!(
                    "{} is out of range; give 1 to {} days (leave it out to keep finished runs \
                     until `harnessx runs prune`)",
                    d.get_ref(),
                    crate::retention::MAX_RETAIN_DAYS
                ),
            ));
        }
        for key in &self.server.api_keys {
            if key.get_ref().trim().len() < 16 {
                return Err(bad(
                    key.span(),
                    "server.api_keys".into(),
                    "an API key shorter than 16 characters is too easy to guess; use a long \
                     random string"
                        .into(),
                ));
            }
        }
        if let Some(url) = &self.server.public_url {
            check_public_url(url.get_ref())
                .map_err(|m| bad(url.span(), "server.public_url".into(), m))?;
        }
        if let Some(key) = &self.server.secret_key {
            crate::connectors::oauth::SecretKey::parse(key.get_ref()).map_err(|m| {
                bad(
                    key.span(),
                    "server.secret_key".into(),
                    format!("the key {m}"),
                )
            })?;
        }
        if let Some(bind) = &self.server.bind
            && bind.get_ref().parse::<std::net::SocketAddr>().is_err()
        {
            return Err(bad(
                bind.span(),
                "server.bind".into(),
                format!(
                    "`{}` is not an address and port; write it like `127.0.0.1:8080`",
                    bind.get_ref()
                ),
            ));
        }
        crate::webhooks::check_config(self, text)?;
        for (name, connector) in &mut self.connectors {
            let key = format!("connectors.{name}");
            let at = text.find(&format!("[connectors.{name}]")).unwrap_or(0);
            connector.line = line_of(text, at);
            crate::connectors::ConnectorSpec::from_config(connector)
                .server(name)
                .map_err(|message| ConfigError::Invalid {
                    line: connector.line,
                    key: key.clone(),
                    message,
                })?;
            if let Some(t) = &connector.connect_timeout_seconds
                && !(t.get_ref().is_finite() && *t.get_ref() > 0.0 && *t.get_ref() <= 3600.0)
            {
                return Err(bad(
                    t.span(),
                    format!("{key}.connect_timeout_seconds"),
                    "give a number of seconds above 0 and at most 3600".into(),
                ));
            }
        }
        for (name, agent) in &self.agents {
            crate::agents::check_name(name).map_err(|message| ConfigError::Invalid {
                line: line_of(text, text.find(&format!("[agents.{name}")).unwrap_or(0)),
                key: format!("agents.{name}"),
                message,
            })?;
            let key = |k: &str| format!("agents.{name}.{k}");
            let model = agent.model.get_ref();
            if model != "script" {
                crate::agents::model::check_spec(model)
                    .map_err(|e| bad(agent.model.span(), key("model"), e))?;
                if !agent.script.is_empty() {
                    return Err(bad(
                        agent.model.span(),
                        key("script"),
                        format!(
                            "a script is given but the model is `{model}`; set model = \"script\" or drop the script"
                        ),
                    ));
                }
            }
            let seconds = |value: &Spanned<f64>, k: String| {
                let v = *value.get_ref();
                if v.is_finite() && v > 0.0 && v <= 86_400.0 {
                    Ok(())
                } else {
                    Err(bad(
                        value.span(),
                        k,
                        format!(
                            "{v} is not a time limit; give a number of seconds above 0 and at most 86400"
                        ),
                    ))
                }
            };
            if let Some(t) = &agent.tool_timeout_seconds {
                seconds(t, key("tool_timeout_seconds"))?;
            }
            for (tool, t) in &agent.tool_timeouts {
                seconds(t, format!("{}.{tool}", key("tool_timeouts")))?;
            }
            for (i, turn) in agent.script.iter().enumerate() {
                crate::script::check_turn(turn.get_ref())
                    .map_err(|m| bad(turn.span(), format!("{}[{i}]", key("script")), m))?;
            }
            for (i, builtin) in agent.builtins.iter().enumerate() {
                let b = builtin.get_ref();
                harnessx_builtin::catalog::Builtin::parse(
                    &b.name,
                    b.options.clone().unwrap_or(Value::Null),
                )
                .map_err(|e| {
                    bad(
                        builtin.span(),
                        format!("{}[{i}]", key("builtins")),
                        e.to_string(),
                    )
                })?;
            }
            for (i, choice) in agent.connectors.iter().enumerate() {
                let c = choice.get_ref();
                if !self.connectors.contains_key(&c.name) {
                    return Err(bad(
                        choice.span(),
                        format!("{}[{i}].name", key("connectors")),
                        format!(
                            "no connector is named `{}`; define it in a [connectors.{}] table",
                            c.name, c.name
                        ),
                    ));
                }
            }
            for (i, kb) in agent.knowledge.iter().enumerate() {
                if kb.get_ref().name.trim().is_empty() {
                    return Err(bad(
                        kb.span(),
                        format!("{}[{i}].name", key("knowledge")),
                        "the knowledge base has no name; give it one".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Checks `[server] public_url`: an `http` or `https` URL with no query or fragment.
pub(crate) fn check_public_url(text: &str) -> Result<(), String> {
    let shape = "write it like https://harnessx.example.com (the address browsers reach the \
                 server at)";
    let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL ({e}); {shape}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("`{text}` is not an http or https address; {shape}"));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(format!(
            "`{text}` has a query, fragment or user name; {shape}"
        ));
    }
    Ok(())
}

/// A TOML error as the line it is on and what is wrong there — without quoting the line, which
/// may hold an API key or a header's value.
fn syntax_message(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => format!("line {}: {}", line_of(text, span.start), e.message()),
        None => e.message().to_owned(),
    }
}

/// The 1-based line holding byte `offset`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}
