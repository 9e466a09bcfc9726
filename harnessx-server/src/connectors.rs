//! The platform's connectors: MCP servers as stored, versioned resources ([`CONNECTOR_KIND`]) —
//! a stdio command with its arguments and environment, or a streamable HTTP URL with headers.
//! `POST`/`PATCH`/`DELETE /v2/connectors` change them, every server on the database sees a
//! change at once, and the configuration file's `[connectors.NAME]` tables seed them as they
//! seed agents. An agent names the connectors it uses and the tools it takes from each; its
//! runs use each connector's current version.
//!
//! The API never returns what may be a secret: environment values and header values are shown
//! by name only, and credentials in a URL are redacted.
//!
//! A `url` connector with `oauth` signs in with OAuth 2.1 from the console ([`oauth`]): its
//! tokens are sealed in the database and never leave the server.

pub mod oauth;
mod sessions;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use harnessx::mcp::{McpOAuth, McpServer, McpSession, SignIn};
use harnessx_runtime::store::{Conflict, Expect, Resource, ResourceStore, Seeded};
use serde::{Deserialize, Serialize};

use crate::agents::check_name;
use crate::config::{Config, ConnectorConfig};

/// The resource kind of stored connectors.
pub const CONNECTOR_KIND: &str = "connector";

/// A connector as stored (the body of its resource), and as `POST /v2/connectors` takes it
/// (with its `name`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectorSpec {
    /// The program to start (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Its environment (nothing else is passed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The server's URL (streamable HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The connect deadline in seconds (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_seconds: Option<f64>,
    /// Sign in with OAuth 2.1 (a `url` connector only): `{}` to register dynamically, or a
    /// registered `client_id`, and the `scopes` to ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthSettings>,
}

/// How a connector signs in with OAuth 2.1 (`"oauth": {"client_id": .., "scopes": [..]}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthSettings {
    /// A client id registered with the authorization server; without it the server registers
    /// itself (dynamic client registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The scopes to ask for (the server's challenge decides when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

impl ConnectorSpec {
    /// The spec a `[connectors.NAME]` table describes.
    pub fn from_config(c: &ConnectorConfig) -> Self {
        Self {
            command: c.command.clone(),
            args: c.args.clone(),
            env: c.env.clone(),
            url: c.url.clone(),
            headers: c.headers.clone(),
            connect_timeout_seconds: c.connect_timeout_seconds.as_ref().map(|t| *t.get_ref()),
            oauth: c.oauth.clone(),
        }
    }

    /// The MCP server it describes, named `name`; an error names what is wrong.
    pub fn server(&self, name: &str) -> Result<McpServer, String> {
        check_name(name)?;
        let mut server = match (&self.command, &self.url) {
            (Some(command), None) if !command.trim().is_empty() => {
                if !self.headers.is_empty() {
                    return Err("`headers` belong to a `url` connector, not a `command` one".into());
                }
                let mut s = McpServer::stdio(name, command, self.args.clone());
                for (k, v) in &self.env {
                    s = s.env(k, v);
                }
                s
            }
            (None, Some(url)) => {
                if !self.env.is_empty() || !self.args.is_empty() {
                    return Err(
                        "`args` and `env` belong to a `command` connector, not a `url` one".into(),
                    );
                }
                let parsed = url::Url::parse(url).map_err(|e| {
                    format!(
                        "url: `{}` is not a URL ({e}); write it like http://127.0.0.1:3001/mcp",
                        crate::redact::urls(url)
                    )
                })?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(format!(
                        "url: the scheme `{}` is not http or https",
                        parsed.scheme()
                    ));
                }
                let mut s = McpServer::http(name, url);
                for (k, v) in &self.headers {
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
        if let Some(t) = self.connect_timeout_seconds {
            if !(t.is_finite() && t > 0.0 && t <= 3600.0) {
                return Err(format!(
                    "connect_timeout_seconds: {t} is out of range; give a number of seconds above 0 and at most 3600"
                ));
            }
            server = server.connect_timeout(Duration::from_secs_f64(t));
        }
        if let Some(oauth) = &self.oauth {
            if self.url.is_none() {
                return Err(
                    "`oauth` belongs to a `url` connector; a `command` connector takes its \
                     credentials from `env`"
                        .into(),
                );
            }
            if oauth
                .client_id
                .as_deref()
                .is_some_and(|c| c.trim().is_empty())
            {
                return Err(
                    "oauth.client_id is empty; give the registered client id or leave \
                     it out to register dynamically"
                        .into(),
                );
            }
            if oauth
                .scopes
                .iter()
                .any(|s| s.trim().is_empty() || s.contains(' '))
            {
                return Err(
                    "oauth.scopes: a scope is empty or holds a space; give each scope \
                     as its own string"
                        .into(),
                );
            }
        }
        Ok(server)
    }
}

/// A new connector (`POST /v2/connectors`): a name and what [`ConnectorSpec`] holds.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewConnector {
    /// The name: 1 to 64 letters, digits, `_` or `-`.
    pub name: String,
    /// The program to start (stdio).
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment (nothing else is passed).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The server's URL (streamable HTTP).
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The connect deadline in seconds (default 10).
    #[serde(default)]
    pub connect_timeout_seconds: Option<f64>,
    /// Sign in with OAuth 2.1 (a `url` connector only).
    #[serde(default)]
    pub oauth: Option<OAuthSettings>,
}

impl NewConnector {
    fn spec(&self) -> ConnectorSpec {
        ConnectorSpec {
            command: self.command.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            connect_timeout_seconds: self.connect_timeout_seconds,
            oauth: self.oauth.clone(),
        }
    }
}

/// A change to a connector (`PATCH /v2/connectors/{name}`): the fields given replace the stored
/// ones; `env` and `headers`, when given, replace the whole map.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectorPatch {
    /// The program to start (stdio).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Option<Vec<String>>,
    /// Its environment.
    pub env: Option<BTreeMap<String, String>>,
    /// The server's URL (streamable HTTP).
    pub url: Option<String>,
    /// HTTP headers.
    pub headers: Option<BTreeMap<String, String>>,
    /// The connect deadline in seconds.
    pub connect_timeout_seconds: Option<f64>,
    /// Sign in with OAuth 2.1 (`null` turns it off).
    #[serde(default, deserialize_with = "some_or_null")]
    #[schema(value_type = Option<OAuthSettings>)]
    pub oauth: Option<Option<OAuthSettings>>,
}

/// A given `null` as `Some(None)`, so that it can turn a setting off.
fn some_or_null<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A connector as the API shows it: its settings without secrets.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConnectorSettings {
    /// The name.
    pub name: String,
    /// Bumped by every change.
    pub version: u64,
    /// `stdio` or `http`.
    pub transport: String,
    /// The program (stdio).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments (stdio).
    pub args: Vec<String>,
    /// The names of its environment variables (their values are not shown).
    pub env: Vec<String>,
    /// The URL with any credentials redacted (http).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The names of its headers (their values are not shown).
    pub headers: Vec<String>,
    /// How it signs in with OAuth 2.1, when it does (its tokens are never shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthSettings>,
}

impl ConnectorSettings {
    fn of(r: &Resource, spec: &ConnectorSpec) -> Self {
        Self {
            name: r.name.clone(),
            version: r.version,
            transport: if spec.url.is_some() { "http" } else { "stdio" }.into(),
            command: spec.command.clone(),
            args: spec.args.clone(),
            env: spec.env.keys().cloned().collect(),
            url: spec
                .url
                .as_deref()
                .map(|u| crate::redact::urls(u).into_owned()),
            headers: spec.headers.keys().cloned().collect(),
            oauth: spec.oauth.clone(),
        }
    }
}

/// Why a change to the connectors was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectorChangeError {
    /// No connector has this name.
    #[error("no connector is named `{0}`; GET /v2/connectors lists them")]
    Unknown(String),
    /// A connector has this name already.
    #[error("a connector named `{0}` exists already; change it with PATCH /v2/connectors/{0}")]
    Exists(String),
    /// A setting cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// Agents use it.
    #[error(
        "connector `{name}` is used by the agents {agents}; take it out of their connectors first"
    )]
    InUse {
        /// The connector.
        name: String,
        /// The agents, listed.
        agents: String,
    },
    /// It does not sign in with OAuth.
    #[error(
        "connector `{0}` does not sign in with OAuth; give it `\"oauth\": {{}}` (PATCH /v2/connectors/{0}) when its server asks for a sign-in"
    )]
    NoOAuth(String),
    /// Others kept changing it at the same moment.
    #[error(
        "connector `{0}` was changed by others while this change was made; read it and try again"
    )]
    Busy(String),
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(String),
}

fn store_error(e: impl std::fmt::Display) -> ConnectorChangeError {
    ConnectorChangeError::Store(e.to_string())
}

/// The stored connectors.
#[derive(Clone)]
pub struct Connectors {
    store: Arc<dyn ResourceStore>,
    oauth: Arc<oauth::OAuthHost>,
    sessions: Arc<sessions::Sessions>,
}

/// How a connector's server is to be reached for its listing.
pub(crate) enum Probe {
    /// Connect to it; `asked` turns true when it needed a sign-in nobody can give.
    Connect {
        server: McpServer,
        asked: Option<Arc<AtomicBool>>,
    },
    /// It needs a sign-in: no tokens are kept for it.
    NeedsSignIn(McpServer),
    /// It cannot be used as configured (the message says which setting to give).
    Unusable(String),
}

impl std::fmt::Debug for Connectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connectors").finish_non_exhaustive()
    }
}

impl Connectors {
    /// The connectors kept in `store`; OAuth connectors seal their tokens with `key` (an `Err`
    /// is the message a sign-in gives when there is no usable key).
    pub fn new(store: Arc<dyn ResourceStore>, key: Result<oauth::SecretKey, String>) -> Self {
        let host = oauth::OAuthHost::new(Arc::clone(&store), key);
        Self {
            store,
            oauth: Arc::new(host),
            sessions: Arc::default(),
        }
    }

    /// What signing connectors in needs: the key, the public address, the store.
    pub fn oauth(&self) -> &Arc<oauth::OAuthHost> {
        &self.oauth
    }

    /// `spec`'s server named `name`, signing in (when it uses OAuth) through `sign_in`.
    fn build(
        &self,
        name: &str,
        spec: &ConnectorSpec,
        sign_in: impl SignIn,
    ) -> Result<McpServer, String> {
        let server = spec.server(name)?;
        let Some(settings) = &spec.oauth else {
            return Ok(server);
        };
        // Before the server is bound the redirect is not known; a sign-in then fails saying so.
        let redirect = self.oauth.redirect_uri().unwrap_or_default();
        let mut oauth = McpOAuth::new(redirect, sign_in)
            .token_store(self.oauth.tokens(name))
            .client_name("harnessx")
            .sign_in_timeout(oauth::SIGN_IN_WINDOW + Duration::from_secs(30));
        if let Some(id) = &settings.client_id {
            oauth = oauth.client_id(id.clone());
        }
        if !settings.scopes.is_empty() {
            oauth = oauth.scopes(settings.scopes.clone());
        }
        Ok(server.oauth(oauth))
    }

    /// The server a run uses: an OAuth connector with the stored tokens, and no one to sign in
    /// (a run that needs a sign-in fails, saying where to sign in).
    fn run_server(&self, name: &str, spec: &ConnectorSpec) -> Result<McpServer, String> {
        self.build(
            name,
            spec,
            oauth::NoBrowser {
                connector: name.to_owned(),
                asked: Arc::default(),
            },
        )
    }

    /// How to list connector `name` now.
    pub(crate) async fn probe(&self, name: &str) -> Result<Option<Probe>, ConnectorChangeError> {
        let Some(r) = self
            .store
            .resource(CONNECTOR_KIND, name, None)
            .await
            .map_err(store_error)?
        else {
            return Ok(None);
        };
        let spec = Self::parse(&r)?;
        let plain = spec
            .server(name)
            .map_err(|m| ConnectorChangeError::Store(format!("connector `{name}`: {m}")))?;
        let (Some(_), Some(url)) = (&spec.oauth, &spec.url) else {
            return Ok(Some(Probe::Connect {
                server: plain,
                asked: None,
            }));
        };
        if let Err(m) = self.oauth.key() {
            return Ok(Some(Probe::Unusable(m)));
        }
        match self.oauth.tokens(name).has_tokens(url).await {
            Ok(true) => {}
            Ok(false) => return Ok(Some(Probe::NeedsSignIn(plain))),
            Err(m) => return Err(ConnectorChangeError::Store(m)),
        }
        let asked = Arc::new(AtomicBool::new(false));
        let server = self
            .build(
                name,
                &spec,
                oauth::NoBrowser {
                    connector: name.to_owned(),
                    asked: Arc::clone(&asked),
                },
            )
            .map_err(|m| ConnectorChangeError::Store(format!("connector `{name}`: {m}")))?;
        Ok(Some(Probe::Connect {
            server,
            asked: Some(asked),
        }))
    }

    /// Connector `name`'s server signing in through `sign_in`; an error when there is no such
    /// connector or it does not use OAuth.
    pub(crate) async fn sign_in_server(
        &self,
        name: &str,
        sign_in: impl SignIn,
    ) -> Result<McpServer, ConnectorChangeError> {
        let r = self
            .store
            .resource(CONNECTOR_KIND, name, None)
            .await
            .map_err(store_error)?
            .ok_or_else(|| ConnectorChangeError::Unknown(name.to_owned()))?;
        let spec = Self::parse(&r)?;
        if spec.oauth.is_none() {
            return Err(ConnectorChangeError::NoOAuth(name.to_owned()));
        }
        self.build(name, &spec, sign_in)
            .map_err(|m| ConnectorChangeError::Store(format!("connector `{name}`: {m}")))
    }

    /// Forgets connector `name`'s tokens.
    pub(crate) async fn forget_tokens(&self, name: &str) -> Result<(), ConnectorChangeError> {
        self.store
            .delete_resource(oauth::TOKENS_KIND, name)
            .await
            .map(|_| ())
            .map_err(store_error)
    }

    fn parse(r: &Resource) -> Result<ConnectorSpec, ConnectorChangeError> {
        serde_json::from_value(r.body.clone()).map_err(|e| {
            ConnectorChangeError::Store(format!(
                "connector `{}` version {} is stored in a shape this server cannot read: {e}",
                r.name, r.version
            ))
        })
    }

    /// Stores the `[connectors.NAME]` tables of `config`, as [`Agents::seed`] does for agents
    /// (a changed table becomes a new version; an unchanged one leaves the stored connector
    /// alone).
    ///
    /// [`Agents::seed`]: crate::agents::Agents::seed
    pub async fn seed(&self, config: &Config) -> Result<Vec<(String, Seeded)>, (String, String)> {
        let mut out = Vec::new();
        for (name, c) in &config.connectors {
            let spec = ConnectorSpec::from_config(c);
            spec.server(name).map_err(|m| (name.clone(), m))?;
            let body = serde_json::to_value(&spec).map_err(|e| (name.clone(), e.to_string()))?;
            let seeded = self
                .store
                .seed_resource(CONNECTOR_KIND, name, body)
                .await
                .map_err(|e| (name.clone(), e.to_string()))?;
            out.push((name.clone(), seeded));
        }
        Ok(out)
    }

    /// Every connector's current version: its settings and server, by name.
    pub async fn all(&self) -> Result<Vec<(ConnectorSettings, McpServer)>, ConnectorChangeError> {
        let stored = self
            .store
            .resources(CONNECTOR_KIND)
            .await
            .map_err(store_error)?;
        // Connectors deleted by another server: this one's sessions with them end too.
        self.sessions
            .close_unless(|name| stored.iter().any(|r| r.name == name))
            .await;
        stored
            .iter()
            .map(|r| {
                let spec = Self::parse(r)?;
                let server = self.run_server(&r.name, &spec).map_err(|m| {
                    ConnectorChangeError::Store(format!("connector `{}`: {m}", r.name))
                })?;
                Ok((ConnectorSettings::of(r, &spec), server))
            })
            .collect()
    }

    /// One connector's current version: its settings and server.
    pub async fn get(
        &self,
        name: &str,
    ) -> Result<Option<(ConnectorSettings, McpServer)>, ConnectorChangeError> {
        let Some(r) = self
            .store
            .resource(CONNECTOR_KIND, name, None)
            .await
            .map_err(store_error)?
        else {
            return Ok(None);
        };
        let spec = Self::parse(&r)?;
        let server = self
            .run_server(name, &spec)
            .map_err(|m| ConnectorChangeError::Store(format!("connector `{name}`: {m}")))?;
        Ok(Some((ConnectorSettings::of(&r, &spec), server)))
    }

    /// Creates a connector.
    pub async fn create(
        &self,
        new: NewConnector,
    ) -> Result<ConnectorSettings, ConnectorChangeError> {
        let spec = new.spec();
        spec.server(&new.name)
            .map_err(ConnectorChangeError::Invalid)?;
        let body = serde_json::to_value(&spec).map_err(store_error)?;
        match self
            .store
            .put_resource(CONNECTOR_KIND, &new.name, body, Expect::Absent)
            .await
            .map_err(store_error)?
        {
            Ok(r) => Ok(ConnectorSettings::of(&r, &spec)),
            Err(_) => Err(ConnectorChangeError::Exists(new.name)),
        }
    }

    /// Changes a connector as its next version (checked whole first).
    pub async fn patch(
        &self,
        name: &str,
        patch: ConnectorPatch,
    ) -> Result<ConnectorSettings, ConnectorChangeError> {
        for _ in 0..5 {
            let current = self
                .store
                .resource(CONNECTOR_KIND, name, None)
                .await
                .map_err(store_error)?
                .ok_or_else(|| ConnectorChangeError::Unknown(name.to_owned()))?;
            let mut spec = Self::parse(&current)?;
            let p = patch.clone();
            // A transport given replaces the other: a `url` patch turns a stdio connector into
            // an HTTP one.
            if let Some(command) = p.command {
                spec.command = Some(command);
                spec.url = None;
                spec.headers.clear();
                spec.oauth = None;
            }
            if let Some(url) = p.url {
                spec.url = Some(url);
                spec.command = None;
                spec.args.clear();
                spec.env.clear();
            }
            if let Some(args) = p.args {
                spec.args = args;
            }
            if let Some(env) = p.env {
                spec.env = env;
            }
            if let Some(headers) = p.headers {
                spec.headers = headers;
            }
            if let Some(t) = p.connect_timeout_seconds {
                spec.connect_timeout_seconds = Some(t);
            }
            if let Some(oauth) = p.oauth {
                spec.oauth = oauth;
            }
            spec.server(name).map_err(ConnectorChangeError::Invalid)?;
            let body = serde_json::to_value(&spec).map_err(store_error)?;
            match self
                .store
                .put_resource(CONNECTOR_KIND, name, body, Expect::Version(current.version))
                .await
                .map_err(store_error)?
            {
                Ok(r) => return Ok(ConnectorSettings::of(&r, &spec)),
                Err(Conflict { current: None }) => {
                    return Err(ConnectorChangeError::Unknown(name.to_owned()));
                }
                Err(Conflict { current: Some(_) }) => {}
            }
        }
        Err(ConnectorChangeError::Busy(name.to_owned()))
    }

    /// Deletes a connector; `false` when there was none. This process's session with it ends.
    pub async fn delete(&self, name: &str) -> Result<bool, ConnectorChangeError> {
        let deleted = self
            .store
            .delete_resource(CONNECTOR_KIND, name)
            .await
            .map_err(store_error)?;
        self.sessions.close_unless(|n| n != name).await;
        Ok(deleted)
    }

    /// This process's live session with connector `name` at `version` (`server` is that
    /// version's server), shared by every agent built over it; an `Err` says why there is none
    /// now (see the `sessions` module).
    pub(crate) async fn session(
        &self,
        name: &str,
        version: u64,
        server: McpServer,
    ) -> Result<McpSession, String> {
        self.sessions.session(name, version, server).await
    }

    /// The current versions of every connector, by name (what an agent built now uses).
    pub(crate) async fn versions(&self) -> Result<BTreeMap<String, u64>, ConnectorChangeError> {
        Ok(self
            .store
            .resources(CONNECTOR_KIND)
            .await
            .map_err(store_error)?
            .into_iter()
            .map(|r| (r.name, r.version))
            .collect())
    }
}
