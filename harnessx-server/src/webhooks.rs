//! Webhooks: a run that waits for a person, completes, fails or is cancelled is announced to
//! the URLs that subscribed, signed as the Standard Webhooks specification says.
//!
//! A webhook is a stored, versioned resource ([`WEBHOOK_KIND`]): `POST`/`PATCH`/`DELETE
//! /v2/webhooks` change it, every server on the database sees the change at once, and the
//! configuration file's `[[webhooks]]` tables seed it as they seed agents. Its secret is never
//! returned after it was made: `POST` answers with it once when the server made it.
//!
//! The run store writes each event to an outbox in the transaction that changes the run's state
//! (see [`harnessx_runtime::store::WebhookStore`]); the [`deliver`] task of every server claims
//! due deliveries, sends them, and retries failures with exponential backoff, so each event
//! reaches each webhook at least once, from one server at a time.

pub mod check;
pub mod deliver;
pub mod sign;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harnessx_runtime::store::{
    Conflict, Delivery, Expect, PlatformStore, Resource, Seeded, WEBHOOK_KIND,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::rfc3339;
use crate::config::{Config, WebhookConfig};
use sign::Secret;

pub(crate) use check::config as check_config;
pub use deliver::{DeliverySettings, Sender};
pub use harnessx_runtime::store::WebhookEvent;

/// A webhook as stored: the body of its resource.
///
/// Unknown fields are kept when the server changes the body (a newer release may have added
/// them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookSpec {
    /// Where events are posted.
    pub url: String,
    /// The events it takes ([`WebhookEvent`] names).
    pub events: Vec<String>,
    /// The signing secret (`whsec_...`).
    pub secret: String,
    /// Whether new events are delivered (a disabled webhook's pending deliveries are given up).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The most attempts a delivery gets (default: `[server] webhook_max_attempts`, 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Why the server disabled it (the receiver answered 410 Gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
}

fn yes() -> bool {
    true
}

impl WebhookSpec {
    /// Checks every field (see [`check`]).
    pub fn check(&self) -> Result<(), String> {
        check::url(&self.url)?;
        check::events(&self.events)?;
        Secret::parse(&self.secret).map_err(|m| format!("secret: {m}"))?;
        if let Some(d) = &self.description {
            check::description(d)?;
        }
        if let Some(n) = self.max_attempts {
            check::max_attempts(i64::from(n))?;
        }
        Ok(())
    }

    /// The spec a `[[webhooks]]` table describes.
    pub fn from_config(c: &WebhookConfig) -> Self {
        Self {
            url: c.url.get_ref().clone(),
            events: check::events(
                &c.events
                    .get_ref()
                    .iter()
                    .map(|e| e.get_ref().as_str())
                    .collect::<Vec<_>>(),
            )
            .unwrap_or_default(),
            secret: c
                .secret
                .as_ref()
                .map(|s| s.get_ref().trim().to_owned())
                .unwrap_or_default(),
            enabled: c.enabled.unwrap_or(true),
            description: c.description.clone(),
            max_attempts: c
                .max_attempts
                .as_ref()
                .and_then(|n| u32::try_from(*n.get_ref()).ok()),
            disabled_reason: None,
        }
    }
}

/// A new webhook (`POST /v2/webhooks`).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhook {
    /// Its id: 1 to 64 letters, digits, `_` or `-` (default: `wh_` and 16 random hex digits).
    #[serde(default)]
    pub id: Option<String>,
    /// Where events are posted: an `http` or `https` URL.
    pub url: String,
    /// The events it takes: some of `run.waiting_input`, `run.completed`, `run.failed`,
    /// `run.cancelled`.
    pub events: Vec<String>,
    /// The signing secret, `whsec_` and the base64 of 24 to 64 bytes; when absent the server
    /// makes one and answers with it this once.
    #[serde(default)]
    pub secret: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// The most attempts a delivery gets, 1 to 50 (default: the server's, 8).
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Whether events are delivered (default `true`).
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// A change to a webhook (`PATCH /v2/webhooks/{id}`): the fields given replace the stored ones.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookPatch {
    /// A new URL.
    #[serde(default)]
    pub url: Option<String>,
    /// New events.
    #[serde(default)]
    pub events: Option<Vec<String>>,
    /// A new secret (`whsec_...`): receivers must verify with it from now on.
    #[serde(default)]
    pub secret: Option<String>,
    /// A new description (`""` removes it).
    #[serde(default)]
    pub description: Option<String>,
    /// New most attempts (1 to 50).
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Turn deliveries on or off (turning on clears why the server turned them off).
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// A webhook as the API shows it: never its secret.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WebhookView {
    /// Its id.
    pub id: String,
    /// Where events are posted (credentials in a query redacted).
    pub url: String,
    /// The events it takes.
    pub events: Vec<String>,
    /// Whether events are delivered.
    pub enabled: bool,
    /// Why the server turned it off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The most attempts a delivery gets, when it has its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Its version: one more for every change.
    pub version: u64,
    /// When this version was written (RFC 3339).
    pub updated_at: String,
}

/// `POST /v2/webhooks`'s answer: the webhook, and its secret when the server made it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CreatedWebhook {
    /// The webhook.
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// The secret the server made (`whsec_...`): shown this once, keep it now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AttemptView {
    /// Its number (1 for the first).
    pub attempt: u32,
    /// When it started (RFC 3339).
    pub at: String,
    /// How long it took, in milliseconds.
    pub duration_ms: i64,
    /// The receiver's HTTP status, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// What went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the next attempt was scheduled (RFC 3339), if one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
}

/// One event's delivery to a webhook, with its attempts.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DeliveryView {
    /// The delivery's id.
    pub id: i64,
    /// The message's id: the `webhook-id` header, the same on every attempt.
    pub message_id: String,
    /// The event (`run.waiting_input`, ...).
    pub event: String,
    /// The run.
    pub run_id: i64,
    /// `pending`, `delivered` or `failed` (given up).
    pub state: String,
    /// When the event happened (RFC 3339).
    pub created_at: String,
    /// When the next attempt is due (RFC 3339), while pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
    /// Its attempts, first first.
    pub attempts: Vec<AttemptView>,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        Self {
            id: d.id,
            message_id: d.message.id,
            event: d.message.event.as_str().to_owned(),
            run_id: d.message.run.0,
            state: d.state.as_str().to_owned(),
            created_at: rfc3339(d.message.created_ms),
            next_attempt_at: d.next_attempt_ms.map(rfc3339),
            attempts: d
                .attempts
                .into_iter()
                .map(|a| AttemptView {
                    attempt: a.attempt,
                    at: rfc3339(a.at_ms),
                    duration_ms: a.duration_ms,
                    status: a.status,
                    error: a.error,
                    next_attempt_at: a.next_attempt_ms.map(rfc3339),
                })
                .collect(),
        }
    }
}

/// Why a change to the webhooks was refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookChangeError {
    /// No webhook has this id.
    #[error("no webhook has the id `{0}`; GET /v2/webhooks lists them")]
    Unknown(String),
    /// A webhook has this id already.
    #[error("a webhook with the id `{0}` exists already; change it with PATCH /v2/webhooks/{0}")]
    Exists(String),
    /// A setting cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// Others kept changing it at the same moment.
    #[error(
        "webhook `{0}` was changed by others while this change was made; read it and try again"
    )]
    Busy(String),
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(String),
}

impl From<harnessx_runtime::StoreError> for WebhookChangeError {
    fn from(e: harnessx_runtime::StoreError) -> Self {
        Self::Store(e.to_string())
    }
}

/// How many times a change is tried again when others changed the webhook meanwhile.
const CHANGE_TRIES: usize = 3;

/// The stored webhooks, and this server's sender of their deliveries.
pub struct Webhooks {
    store: Arc<dyn PlatformStore>,
    sender: Mutex<Option<Sender>>,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks").finish_non_exhaustive()
    }
}

fn parse(r: &Resource) -> Result<WebhookSpec, WebhookChangeError> {
    serde_json::from_value(r.body.clone()).map_err(|e| {
        WebhookChangeError::Store(format!(
            "webhook `{}` version {} is stored in a shape this server cannot read: {e}",
            r.name, r.version
        ))
    })
}

fn view(r: &Resource, spec: &WebhookSpec) -> WebhookView {
    WebhookView {
        id: r.name.clone(),
        url: crate::redact::urls(&spec.url).into_owned(),
        events: spec.events.clone(),
        enabled: spec.enabled,
        disabled_reason: spec.disabled_reason.clone(),
        description: spec.description.clone(),
        max_attempts: spec.max_attempts,
        version: r.version,
        updated_at: rfc3339(r.created_ms),
    }
}

/// `spec` as a resource body, over the fields of `old` this release does not know.
fn body(spec: &WebhookSpec, old: Option<&Value>) -> Result<Value, WebhookChangeError> {
    let mut out = old
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    let new = serde_json::to_value(spec).map_err(|e| WebhookChangeError::Store(e.to_string()))?;
    if let (Value::Object(out), Value::Object(new)) = (&mut out, new) {
        for key in ["description", "max_attempts", "disabled_reason"] {
            out.remove(key);
        }
        out.extend(new);
    }
    Ok(out)
}

impl Webhooks {
    /// The webhooks stored in `store`; nothing is sent until [`start`](Self::start).
    pub fn new(store: Arc<dyn PlatformStore>) -> Self {
        Self {
            store,
            sender: Mutex::default(),
        }
    }

    /// Starts sending deliveries from this process with `settings`.
    pub fn start(&self, settings: DeliverySettings) {
        let sender = Sender::start(Arc::clone(&self.store), settings);
        if let Some(old) = self
            .sender
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(sender)
        {
            old.abort();
        }
    }

    /// Stops sending: no new attempt starts, and attempts under way get `grace` to finish
    /// (one cut short is sent again once its lease lapses).
    pub async fn stop(&self, grace: Duration) {
        let sender = self.sender.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(sender) = sender {
            sender.stop(grace).await;
        }
    }

    /// Every webhook, by id.
    pub async fn list(&self) -> Result<Vec<WebhookView>, WebhookChangeError> {
        self.store
            .resources(WEBHOOK_KIND)
            .await?
            .iter()
            .map(|r| Ok(view(r, &parse(r)?)))
            .collect()
    }

    /// One webhook.
    pub async fn get(&self, id: &str) -> Result<Option<WebhookView>, WebhookChangeError> {
        match self.store.resource(WEBHOOK_KIND, id, None).await? {
            Some(r) => Ok(Some(view(&r, &parse(&r)?))),
            None => Ok(None),
        }
    }

    /// Creates a webhook; the secret is in the answer when the server made it.
    pub async fn create(&self, new: NewWebhook) -> Result<CreatedWebhook, WebhookChangeError> {
        let id = match new.id {
            Some(id) => {
                check::id(&id).map_err(WebhookChangeError::Invalid)?;
                id
            }
            None => {
                let bytes: [u8; 8] = rand::random();
                format!(
                    "wh_{}",
                    bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
                )
            }
        };
        let made = new.secret.is_none().then(Secret::generate);
        let spec = WebhookSpec {
            url: new.url,
            events: check::events(&new.events).map_err(WebhookChangeError::Invalid)?,
            secret: match (&made, new.secret) {
                (Some(secret), _) => secret.to_text(),
                (None, Some(given)) => given.trim().to_owned(),
                (None, None) => String::new(),
            },
            enabled: new.enabled.unwrap_or(true),
            description: new.description.filter(|d| !d.is_empty()),
            max_attempts: new.max_attempts,
            disabled_reason: None,
        };
        spec.check().map_err(WebhookChangeError::Invalid)?;
        let r = self
            .store
            .put_resource(WEBHOOK_KIND, &id, body(&spec, None)?, Expect::Absent)
            .await?
            .map_err(|_| WebhookChangeError::Exists(id.clone()))?;
        Ok(CreatedWebhook {
            webhook: view(&r, &spec),
            secret: made.map(|s| s.to_text()),
        })
    }

    /// Applies `patch` to webhook `id`: a new version.
    pub async fn patch(
        &self,
        id: &str,
        patch: WebhookPatch,
    ) -> Result<WebhookView, WebhookChangeError> {
        self.change(id, |spec| {
            if let Some(url) = &patch.url {
                spec.url = url.clone();
            }
            if let Some(events) = &patch.events {
                spec.events = check::events(events)?;
            }
            if let Some(secret) = &patch.secret {
                spec.secret = secret.trim().to_owned();
            }
            if let Some(d) = &patch.description {
                spec.description = (!d.is_empty()).then(|| d.clone());
            }
            if let Some(n) = patch.max_attempts {
                spec.max_attempts = Some(n);
            }
            if let Some(on) = patch.enabled {
                spec.enabled = on;
                if on {
                    spec.disabled_reason = None;
                }
            }
            spec.check()
        })
        .await
    }

    /// Turns webhook `id` off, saying why (a receiver answered 410 Gone); `Ok(false)` when it
    /// no longer exists.
    pub async fn disable(&self, id: &str, reason: &str) -> Result<bool, WebhookChangeError> {
        disable(&self.store, id, reason).await
    }

    async fn change(
        &self,
        id: &str,
        edit: impl Fn(&mut WebhookSpec) -> Result<(), String>,
    ) -> Result<WebhookView, WebhookChangeError> {
        change(&self.store, id, edit).await
    }

    /// Deletes webhook `id`; its pending deliveries are given up. `false` when there was none.
    pub async fn delete(&self, id: &str) -> Result<bool, WebhookChangeError> {
        Ok(self.store.delete_resource(WEBHOOK_KIND, id).await?)
    }

    /// The deliveries to webhook `id` below delivery `before`, newest first, at most `limit`;
    /// `None` when there is no such webhook.
    pub async fn deliveries(
        &self,
        id: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Option<Vec<DeliveryView>>, WebhookChangeError> {
        if self.store.resource(WEBHOOK_KIND, id, None).await?.is_none() {
            return Ok(None);
        }
        Ok(Some(
            self.store
                .deliveries(id, before, limit)
                .await?
                .into_iter()
                .map(DeliveryView::from)
                .collect(),
        ))
    }

    /// Stores the `[[webhooks]]` tables of `config`, as agents are seeded: a webhook the store
    /// does not have is created; one whose table changed since the last start gets the table as
    /// a new version (replacing what the API changed, secret included); one whose table is
    /// unchanged keeps its API changes (and stays deleted if it was deleted). A webhook taken
    /// out of the file stays stored: delete it through the API. Returns each webhook's id and
    /// what happened to it.
    pub async fn seed(&self, config: &Config) -> Result<Vec<(String, Seeded)>, (String, String)> {
        let mut out = Vec::new();
        for table in &config.webhooks {
            let table = table.get_ref();
            let id = config_id(table);
            let spec = WebhookSpec::from_config(table);
            spec.check().map_err(|m| (id.clone(), m))?;
            let body = serde_json::to_value(&spec).map_err(|e| (id.clone(), e.to_string()))?;
            let seeded = self
                .store
                .seed_resource(WEBHOOK_KIND, &id, body)
                .await
                .map_err(|e| (id.clone(), e.to_string()))?;
            out.push((id, seeded));
        }
        Ok(out)
    }
}

/// The id of a `[[webhooks]]` table: its `id`, or `wh_` and 16 hex digits of the SHA-256 of its
/// URL (the same at every start, so an unchanged table is recognised).
pub fn config_id(table: &WebhookConfig) -> String {
    use sha2::{Digest, Sha256};
    match &table.id {
        Some(id) => id.get_ref().clone(),
        None => {
            let hash = Sha256::digest(table.url.get_ref().as_bytes());
            format!(
                "wh_{}",
                hash.iter()
                    .take(8)
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            )
        }
    }
}

/// Reads webhook `id`, applies `edit` and writes it as the next version, trying again when
/// others changed it meanwhile.
async fn change(
    store: &Arc<dyn PlatformStore>,
    id: &str,
    edit: impl Fn(&mut WebhookSpec) -> Result<(), String>,
) -> Result<WebhookView, WebhookChangeError> {
    for _ in 0..CHANGE_TRIES {
        let r = store
            .resource(WEBHOOK_KIND, id, None)
            .await?
            .ok_or_else(|| WebhookChangeError::Unknown(crate::api::extract::shorten(id)))?;
        let mut spec = parse(&r)?;
        edit(&mut spec).map_err(WebhookChangeError::Invalid)?;
        match store
            .put_resource(
                WEBHOOK_KIND,
                id,
                body(&spec, Some(&r.body))?,
                Expect::Version(r.version),
            )
            .await?
        {
            Ok(written) => return Ok(view(&written, &spec)),
            Err(Conflict { current: None }) => {
                return Err(WebhookChangeError::Unknown(crate::api::extract::shorten(
                    id,
                )));
            }
            Err(Conflict { current: Some(_) }) => continue,
        }
    }
    Err(WebhookChangeError::Busy(id.to_owned()))
}

/// Turns webhook `id` off with `reason`; `Ok(false)` when it no longer exists.
pub(crate) async fn disable(
    store: &Arc<dyn PlatformStore>,
    id: &str,
    reason: &str,
) -> Result<bool, WebhookChangeError> {
    match change(store, id, |spec| {
        spec.enabled = false;
        spec.disabled_reason = Some(reason.to_owned());
        Ok(())
    })
    .await
    {
        Ok(_) => Ok(true),
        Err(WebhookChangeError::Unknown(_)) => Ok(false),
        Err(e) => Err(e),
    }
}
