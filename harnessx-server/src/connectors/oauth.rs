//! Signing connectors in: OAuth 2.1 through harnessx's MCP client ([`harnessx::mcp::McpOAuth`]),
//! with the tokens sealed (XChaCha20-Poly1305 under `[server] secret_key`) in the database, and
//! the browser's redirect handed from whichever server receives it to the one that started the
//! sign-in, through the store.
//!
//! Two resource kinds hold it all:
//!
//! - [`TOKENS_KIND`] (`connector_tokens`), named like the connector: the MCP server's URL and
//!   the sealed tokens. Every server reads and refreshes them there, so a refresh by one serves
//!   all. A changed URL makes the tokens unusable (they were issued for the other one).
//! - [`SIGN_IN_KIND`] (`connector_sign_in`), named by the OAuth `state` of one sign-in: written
//!   `pending` when the sign-in address is handed out, `redirected` (with the sealed redirect) by
//!   the callback on any server, then `done` or `failed` by the server that holds the PKCE
//!   verifier and exchanges the code; the callback deletes it once it has read the outcome. A
//!   `state` that is not `pending` is refused, so each is used once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use harnessx::BoxFuture;
use harnessx::mcp::{SignIn, SignInRequest, StoredTokens, TokenStore, TokenStoreError};
use harnessx_runtime::store::{Conflict, Expect, ResourceStore};
use serde::{Deserialize, Serialize};
#[cfg(test)]
use serde_json::json;

/// The resource kind holding each connector's sealed tokens.
pub const TOKENS_KIND: &str = "connector_tokens";

/// The resource kind handing one sign-in's redirect between servers, named by its `state`.
pub const SIGN_IN_KIND: &str = "connector_sign_in";

/// The environment variable holding the key that seals sign-in tokens (beats
/// `[server] secret_key`).
pub const SECRET_KEY_ENV: &str = "HARNESSX_SECRET_KEY";

/// The route the authorization server sends the browser back to.
pub const CALLBACK_PATH: &str = "/v2/connectors/oauth/callback";

/// How long a person has to sign in, from the sign-in address to the redirect.
pub const SIGN_IN_WINDOW: Duration = Duration::from_secs(300);

/// How often a waiting server looks for the other side of a hand-over.
const POLL: Duration = Duration::from_millis(150);

/// The 32-byte key sealing tokens at rest. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct SecretKey([u8; 32]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey([REDACTED])")
    }
}

impl SecretKey {
    /// Reads a key written as 64 hex digits or as base64 (standard or URL-safe, padded or not)
    /// of 32 bytes; an error says what is wrong without repeating the text.
    ///
    /// ```
    /// use harnessx_server::connectors::oauth::SecretKey;
    /// assert!(SecretKey::parse(&"ab".repeat(32)).is_ok());
    /// assert!(SecretKey::parse("c2VjcmV0LWtleS1vZi10aGlydHktdHdvLWJ5dGVzLSE=").is_ok());
    /// assert!(SecretKey::parse("short").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let bytes = if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).unwrap_or_default())
                .collect::<Vec<u8>>()
        } else {
            use base64::engine::general_purpose::{
                STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
            };
            [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
                .iter()
                .find_map(|engine| engine.decode(t).ok())
                .unwrap_or_default()
        };
        let key: [u8; 32] = bytes.try_into().map_err(|_| {
            "is not 32 bytes written as 64 hex digits or in base64; make one with \
             `openssl rand -hex 32`"
                .to_owned()
        })?;
        Ok(Self(key))
    }

    /// The key `HARNESSX_SECRET_KEY` gives, else the configuration's; an error names the
    /// setting and says what to do.
    pub fn choose(configured: Option<&str>) -> Result<Self, String> {
        Self::choose_from(std::env::var(SECRET_KEY_ENV), configured)
    }

    /// [`choose`](Self::choose) with the environment variable's value given.
    fn choose_from(
        env: Result<String, std::env::VarError>,
        configured: Option<&str>,
    ) -> Result<Self, String> {
        match env {
            Ok(text) if !text.trim().is_empty() => {
                return Self::parse(&text).map_err(|m| format!("{SECRET_KEY_ENV} {m}"));
            }
            Ok(_) | Err(std::env::VarError::NotPresent) => {}
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(format!(
                    "{SECRET_KEY_ENV} is not valid UTF-8; set it to 64 hex digits \
                     (`openssl rand -hex 32`)"
                ));
            }
        }
        match configured {
            Some(text) => Self::parse(text).map_err(|m| format!("[server] secret_key {m}")),
            None => Err(format!(
                "no secret key to seal connector sign-in tokens with: set [server] secret_key \
                 or {SECRET_KEY_ENV} to 32 random bytes in hex (`openssl rand -hex 32`), the \
                 same on every server sharing the database"
            )),
        }
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.0.into())
    }

    /// Seals `plain` bound to `context`: `v1.` and base64url of a random 24-byte nonce and the
    /// ciphertext.
    pub(crate) fn seal(&self, context: &str, plain: &[u8]) -> Result<String, String> {
        let nonce_bytes: [u8; 24] = rand::random();
        let nonce = XNonce::from(nonce_bytes);
        let sealed = self
            .cipher()
            .encrypt(
                &nonce,
                Payload {
                    msg: plain,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| "sealing failed".to_owned())?;
        let mut out = nonce_bytes.to_vec();
        out.extend_from_slice(&sealed);
        Ok(format!(
            "v1.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out)
        ))
    }

    /// Opens what [`seal`](Self::seal) made for the same `context` with the same key.
    pub(crate) fn open(&self, context: &str, sealed: &str) -> Result<Vec<u8>, String> {
        let wrong = || {
            "the sealed value cannot be opened with this secret key (another key sealed it, \
             or it was changed); give every server the key it was sealed with, or sign the \
             connector in again"
                .to_owned()
        };
        let bytes = sealed
            .strip_prefix("v1.")
            .and_then(|b| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(b)
                    .ok()
            })
            .filter(|b| b.len() > 24)
            .ok_or_else(wrong)?;
        let (nonce, body) = bytes.split_at(24);
        let nonce: [u8; 24] = nonce.try_into().map_err(|_| wrong())?;
        self.cipher()
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: body,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| wrong())
    }
}

/// What a server needs to sign connectors in: the store, the secret key (or why there is none)
/// and the public address browsers come back to.
pub struct OAuthHost {
    store: Arc<dyn ResourceStore>,
    key: Result<SecretKey, String>,
    base: OnceLock<String>,
}

impl std::fmt::Debug for OAuthHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthHost")
            .field("key", &self.key.as_ref().map(|_| "[REDACTED]"))
            .field("base", &self.base.get())
            .finish_non_exhaustive()
    }
}

impl OAuthHost {
    /// Sign-in over `store` with `key` (an `Err` is the message given when a sign-in needs it).
    pub fn new(store: Arc<dyn ResourceStore>, key: Result<SecretKey, String>) -> Self {
        Self {
            store,
            key,
            base: OnceLock::new(),
        }
    }

    /// Sets the server's public base URL (`https://harnessx.example.com`, or
    /// `http://{bound address}`); the first value set stays.
    pub fn set_public_url(&self, base: &str) {
        let _ = self.base.set(base.trim_end_matches('/').to_owned());
    }

    /// The public base URL, once known.
    pub fn public_url(&self) -> Option<&str> {
        self.base.get().map(String::as_str)
    }

    /// The redirect URI the authorization server sends browsers back to.
    pub fn redirect_uri(&self) -> Result<String, String> {
        self.public_url()
            .map(|base| format!("{base}{CALLBACK_PATH}"))
            .ok_or_else(|| {
                "the server does not know its public address yet; set [server] public_url".into()
            })
    }

    /// The secret key, or the message saying which setting to give.
    pub fn key(&self) -> Result<&SecretKey, String> {
        self.key.as_ref().map_err(Clone::clone)
    }

    /// The store.
    pub(crate) fn store(&self) -> &Arc<dyn ResourceStore> {
        &self.store
    }

    /// The token store of connector `name`.
    pub(crate) fn tokens(&self, name: &str) -> SealedTokenStore {
        SealedTokenStore {
            store: Arc::clone(&self.store),
            connector: name.to_owned(),
            key: self.key.clone(),
        }
    }
}

/// The body of a [`TOKENS_KIND`] resource.
#[derive(Serialize, Deserialize)]
struct SealedTokens {
    url: String,
    sealed: String,
}

fn tokens_context(connector: &str, url: &str) -> String {
    format!("harnessx connector tokens\n{connector}\n{url}")
}

/// A connector's tokens in the database, sealed with the secret key: a [`TokenStore`] for
/// `harnessx-mcp`. Its key is the MCP server's URL; tokens kept for another URL are not
/// returned.
pub struct SealedTokenStore {
    store: Arc<dyn ResourceStore>,
    connector: String,
    key: Result<SecretKey, String>,
}

impl SealedTokenStore {
    fn key(&self) -> Result<&SecretKey, TokenStoreError> {
        self.key
            .as_ref()
            .map_err(|m| TokenStoreError::Other(m.clone()))
    }

    fn other(e: impl std::fmt::Display) -> TokenStoreError {
        TokenStoreError::Other(format!("the store failed: {e}"))
    }

    /// Whether tokens are kept for `url` (read without opening them).
    pub(crate) async fn has_tokens(&self, url: &str) -> Result<bool, String> {
        let stored = self
            .store
            .resource(TOKENS_KIND, &self.connector, None)
            .await
            .map_err(|e| format!("the store failed: {e}"))?;
        Ok(stored
            .and_then(|r| serde_json::from_value::<SealedTokens>(r.body).ok())
            .is_some_and(|t| t.url == url))
    }
}

impl TokenStore for SealedTokenStore {
    fn load<'a>(
        &'a self,
        url: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredTokens>, TokenStoreError>> {
        Box::pin(async move {
            let key = self.key()?;
            let Some(r) = self
                .store
                .resource(TOKENS_KIND, &self.connector, None)
                .await
                .map_err(Self::other)?
            else {
                return Ok(None);
            };
            let unreadable = |why: String| {
                TokenStoreError::Other(format!(
                    "connector `{}`: the stored sign-in cannot be read ({why})",
                    self.connector
                ))
            };
            let kept: SealedTokens = serde_json::from_value(r.body)
                .map_err(|e| unreadable(format!("not in the shape this server writes: {e}")))?;
            if kept.url != url {
                return Ok(None);
            }
            let plain = key
                .open(&tokens_context(&self.connector, url), &kept.sealed)
                .map_err(unreadable)?;
            serde_json::from_slice(&plain)
                .map(Some)
                .map_err(|e| unreadable(e.to_string()))
        })
    }

    fn save<'a>(
        &'a self,
        url: &'a str,
        tokens: StoredTokens,
    ) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        Box::pin(async move {
            let key = self.key()?;
            let plain = serde_json::to_vec(&tokens).map_err(Self::other)?;
            let sealed = key
                .seal(&tokens_context(&self.connector, url), &plain)
                .map_err(TokenStoreError::Other)?;
            let body = serde_json::to_value(SealedTokens {
                url: url.to_owned(),
                sealed,
            })
            .map_err(Self::other)?;
            // The last save wins; a refresh racing another server's refresh retries on the
            // version it finds.
            for _ in 0..8 {
                let current = self
                    .store
                    .resource(TOKENS_KIND, &self.connector, None)
                    .await
                    .map_err(Self::other)?;
                let expect = current.map_or(Expect::Absent, |r| Expect::Version(r.version));
                match self
                    .store
                    .put_resource(TOKENS_KIND, &self.connector, body.clone(), expect)
                    .await
                    .map_err(Self::other)?
                {
                    Ok(_) => return Ok(()),
                    Err(Conflict { .. }) => continue,
                }
            }
            Err(TokenStoreError::Other(format!(
                "connector `{}`: the tokens kept changing while they were saved; connect again",
                self.connector
            )))
        })
    }

    fn clear<'a>(&'a self, _url: &'a str) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        Box::pin(async move {
            self.store
                .delete_resource(TOKENS_KIND, &self.connector)
                .await
                .map(|_| ())
                .map_err(Self::other)
        })
    }
}

/// The sign-in of runs and listings: nobody is there to open a browser, so it records that a
/// sign-in was asked for and says where to sign in.
pub(crate) struct NoBrowser {
    pub(crate) connector: String,
    pub(crate) asked: Arc<AtomicBool>,
}

impl SignIn for NoBrowser {
    fn sign_in(&self, _request: SignInRequest) -> BoxFuture<'static, Result<String, String>> {
        self.asked.store(true, Ordering::SeqCst);
        let message = needs_sign_in_message(&self.connector);
        Box::pin(async move { Err(message) })
    }
}

/// What to do about a connector that needs a sign-in.
pub fn needs_sign_in_message(connector: &str) -> String {
    format!(
        "connector `{connector}` needs a sign-in: press Sign in on the console's Connectors \
         page (POST /v2/connectors/{connector}/sign-in)"
    )
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The body of a [`SIGN_IN_KIND`] resource.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub(crate) enum Handover {
    /// The sign-in address was handed out; the callback has not come.
    Pending { connector: String, expires_ms: i64 },
    /// The callback came: the sealed redirect, for the server holding the verifier.
    Redirected { connector: String, redirect: String },
    /// The code was exchanged and the connector answered.
    Done { connector: String },
    /// The exchange or the connection after it failed.
    Failed { connector: String, error: String },
}

fn redirect_context(state: &str) -> String {
    format!("harnessx connector sign-in redirect\n{state}")
}

/// Whether `state` can name a hand-over: 1 to 200 URL-safe characters.
pub(crate) fn valid_state(state: &str) -> bool {
    !state.is_empty()
        && state.len() <= 200
        && state
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'))
}

/// The interactive sign-in of `POST /v2/connectors/{name}/sign-in`: records the `state` as
/// `pending`, hands the sign-in address to the request, then waits (at most
/// [`SIGN_IN_WINDOW`]) for a callback on any server to record the redirect.
pub(crate) struct StoreHandover {
    pub(crate) store: Arc<dyn ResourceStore>,
    pub(crate) key: SecretKey,
    pub(crate) connector: String,
    pub(crate) address: Mutex<Option<tokio::sync::oneshot::Sender<String>>>,
    pub(crate) state: Arc<Mutex<Option<String>>>,
}

impl SignIn for StoreHandover {
    fn sign_in(&self, request: SignInRequest) -> BoxFuture<'static, Result<String, String>> {
        self.hand_out(request.url)
    }
}

impl StoreHandover {
    /// Hands the sign-in address `url` out and waits for the redirect.
    fn hand_out(&self, url: String) -> BoxFuture<'static, Result<String, String>> {
        let store = Arc::clone(&self.store);
        let key = self.key.clone();
        let connector = self.connector.clone();
        let address = self
            .address
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let state_slot = Arc::clone(&self.state);
        Box::pin(async move {
            let state = url::Url::parse(&url)
                .ok()
                .and_then(|u| {
                    u.query_pairs()
                        .find(|(k, _)| k == "state")
                        .map(|(_, v)| v.into_owned())
                })
                .filter(|s| valid_state(s))
                .ok_or("the sign-in address has no usable `state`")?;
            let Some(address) = address else {
                return Err("this sign-in was already handed out; start another".to_owned());
            };
            let pending = Handover::Pending {
                connector: connector.clone(),
                expires_ms: now_ms()
                    + i64::try_from(SIGN_IN_WINDOW.as_millis()).unwrap_or(i64::MAX),
            };
            let body = serde_json::to_value(&pending).map_err(|e| e.to_string())?;
            store
                .put_resource(SIGN_IN_KIND, &state, body, Expect::Absent)
                .await
                .map_err(|e| format!("the store failed: {e}"))?
                .map_err(|_| "the sign-in `state` is in use already; start again".to_owned())?;
            *state_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(state.clone());
            if address.send(url).is_err() {
                return Err("the request that started the sign-in was closed".to_owned());
            }
            let deadline = tokio::time::Instant::now() + SIGN_IN_WINDOW;
            while tokio::time::Instant::now() < deadline {
                tokio::time::sleep(POLL).await;
                let Some(r) = store
                    .resource(SIGN_IN_KIND, &state, None)
                    .await
                    .map_err(|e| format!("the store failed: {e}"))?
                else {
                    return Err("the sign-in was abandoned".to_owned());
                };
                if let Ok(Handover::Redirected { redirect, .. }) =
                    serde_json::from_value::<Handover>(r.body)
                {
                    let plain = key.open(&redirect_context(&state), &redirect)?;
                    return String::from_utf8(plain).map_err(|e| e.to_string());
                }
            }
            Err(format!(
                "nobody came back from the authorization server within {} s",
                SIGN_IN_WINDOW.as_secs()
            ))
        })
    }
}

/// Records the outcome of the sign-in `state` for the callback waiting on it; a sign-in that
/// never got its callback is forgotten.
pub(crate) async fn finish(
    store: &Arc<dyn ResourceStore>,
    state: &str,
    connector: &str,
    outcome: Result<(), String>,
) {
    for _ in 0..5 {
        let Ok(Some(r)) = store.resource(SIGN_IN_KIND, state, None).await else {
            return;
        };
        match serde_json::from_value::<Handover>(r.body) {
            Ok(Handover::Redirected { .. }) => {
                let body = match &outcome {
                    Ok(()) => Handover::Done {
                        connector: connector.to_owned(),
                    },
                    Err(error) => Handover::Failed {
                        connector: connector.to_owned(),
                        error: error.clone(),
                    },
                };
                let Ok(body) = serde_json::to_value(body) else {
                    return;
                };
                match store
                    .put_resource(SIGN_IN_KIND, state, body, Expect::Version(r.version))
                    .await
                {
                    Ok(Err(_)) => continue,
                    _ => return,
                }
            }
            Ok(Handover::Pending { .. }) => {
                let _ = store.delete_resource(SIGN_IN_KIND, state).await;
                return;
            }
            _ => return,
        }
    }
}

/// Why a callback was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// No `state`, or one no server issued, or one used already or expired.
    #[error(
        "this sign-in callback's `state` is unknown, used or expired; start the sign-in again \
         from the console's Connectors page"
    )]
    UnknownState,
    /// The key to seal the redirect with is missing.
    #[error("{0}")]
    Key(String),
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(String),
}

/// The callback's side: checks that `state` is pending and records the redirect for the server
/// that started the sign-in (so a `state` is used once); returns the connector's name.
pub(crate) async fn hand_over(
    host: &OAuthHost,
    state: &str,
    redirect: &str,
) -> Result<String, CallbackError> {
    if !valid_state(state) {
        return Err(CallbackError::UnknownState);
    }
    let store = host.store();
    let r = store
        .resource(SIGN_IN_KIND, state, None)
        .await
        .map_err(|e| CallbackError::Store(e.to_string()))?
        .ok_or(CallbackError::UnknownState)?;
    let connector = match serde_json::from_value::<Handover>(r.body) {
        Ok(Handover::Pending {
            connector,
            expires_ms,
        }) if expires_ms > now_ms() => connector,
        _ => return Err(CallbackError::UnknownState),
    };
    let key = host.key().map_err(CallbackError::Key)?;
    let sealed = key
        .seal(&redirect_context(state), redirect.as_bytes())
        .map_err(CallbackError::Key)?;
    let body = serde_json::to_value(Handover::Redirected {
        connector: connector.clone(),
        redirect: sealed,
    })
    .map_err(|e| CallbackError::Store(e.to_string()))?;
    store
        .put_resource(SIGN_IN_KIND, state, body, Expect::Version(r.version))
        .await
        .map_err(|e| CallbackError::Store(e.to_string()))?
        .map_err(|_| CallbackError::UnknownState)?;
    Ok(connector)
}

/// Waits (at most `wait`) for the server that started the sign-in `state` to record its outcome,
/// then forgets the hand-over. `None` when it did not come in time.
pub(crate) async fn outcome(
    host: &OAuthHost,
    state: &str,
    wait: Duration,
) -> Option<Result<(), String>> {
    let store = host.store();
    let deadline = tokio::time::Instant::now() + wait;
    while tokio::time::Instant::now() < deadline {
        let found = match store.resource(SIGN_IN_KIND, state, None).await {
            Ok(Some(r)) => serde_json::from_value::<Handover>(r.body).ok(),
            Ok(None) => {
                return Some(Err("the sign-in was abandoned; start it again".to_owned()));
            }
            Err(_) => None,
        };
        let result = match found {
            Some(Handover::Done { .. }) => Some(Ok(())),
            Some(Handover::Failed { error, .. }) => Some(Err(error)),
            _ => None,
        };
        if let Some(result) = result {
            let _ = store.delete_resource(SIGN_IN_KIND, state).await;
            return Some(result);
        }
        tokio::time::sleep(POLL).await;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_runtime::SqliteStore;

    const HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn store() -> Arc<dyn ResourceStore> {
        Arc::new(SqliteStore::in_memory().unwrap())
    }

    #[test]
    fn a_key_is_chosen_and_each_mistake_names_its_setting() {
        use std::env::VarError;
        let absent = || Err(VarError::NotPresent);
        assert!(SecretKey::choose_from(Ok(HEX.into()), Some("bad")).is_ok());
        assert!(SecretKey::choose_from(absent(), Some(HEX)).is_ok());
        assert!(SecretKey::choose_from(Ok(" ".into()), Some(HEX)).is_ok());
        assert_eq!(
            SecretKey::choose_from(Ok("bad".into()), Some(HEX)).unwrap_err(),
            "HARNESSX_SECRET_KEY is not 32 bytes written as 64 hex digits or in base64; make \
             one with `openssl rand -hex 32`"
        );
        assert_eq!(
            SecretKey::choose_from(absent(), Some("bad")).unwrap_err(),
            "[server] secret_key is not 32 bytes written as 64 hex digits or in base64; make \
             one with `openssl rand -hex 32`"
        );
        assert_eq!(
            SecretKey::choose_from(Err(VarError::NotUnicode("\u{fffd}".into())), None).unwrap_err(),
            "HARNESSX_SECRET_KEY is not valid UTF-8; set it to 64 hex digits (`openssl rand -hex \
             32`)"
        );
        assert!(
            SecretKey::choose_from(absent(), None)
                .unwrap_err()
                .starts_with("no secret key to seal connector sign-in tokens with")
        );
        assert_eq!(
            format!("{:?}", SecretKey::parse(HEX).unwrap()),
            "SecretKey([REDACTED])"
        );
    }

    #[test]
    fn sealed_values_open_only_with_the_key_and_context_that_sealed_them() {
        let key = SecretKey::parse(HEX).unwrap();
        let other = SecretKey::parse(&"ab".repeat(32)).unwrap();
        let sealed = key.seal("ctx", b"access-token-1").unwrap();
        assert!(!sealed.contains("access-token-1"));
        assert_ne!(
            sealed,
            key.seal("ctx", b"access-token-1").unwrap(),
            "fresh nonces"
        );
        assert_eq!(key.open("ctx", &sealed).unwrap(), b"access-token-1");
        let refused = "the sealed value cannot be opened with this secret key (another key \
                       sealed it, or it was changed); give every server the key it was sealed \
                       with, or sign the connector in again";
        assert_eq!(other.open("ctx", &sealed).unwrap_err(), refused);
        assert_eq!(key.open("other", &sealed).unwrap_err(), refused);
        assert_eq!(key.open("ctx", "v1.!!").unwrap_err(), refused);
        assert_eq!(key.open("ctx", "plain").unwrap_err(), refused);
    }

    #[tokio::test]
    async fn the_token_store_reads_only_what_it_sealed_for_the_same_url() {
        let store = store();
        let host = OAuthHost::new(Arc::clone(&store), SecretKey::parse(HEX));
        let tokens = host.tokens("tickets");
        assert!(tokens.load("https://a/mcp").await.unwrap().is_none());
        store
            .put_resource(TOKENS_KIND, "tickets", json!({"nope": 1}), Expect::Absent)
            .await
            .unwrap()
            .unwrap();
        let err = tokens.load("https://a/mcp").await.unwrap_err().to_string();
        assert!(
            err.starts_with(
                "connector `tickets`: the stored sign-in cannot be read (not in the shape this \
                 server writes"
            ),
            "{err}"
        );
        store
            .put_resource(
                TOKENS_KIND,
                "tickets",
                json!({"url": "https://a/mcp", "sealed": "v1.AAAA"}),
                Expect::Version(1),
            )
            .await
            .unwrap()
            .unwrap();
        assert!(
            tokens.load("https://b/mcp").await.unwrap().is_none(),
            "another URL"
        );
        let err = tokens.load("https://a/mcp").await.unwrap_err().to_string();
        assert!(
            err.contains("cannot be opened with this secret key"),
            "{err}"
        );
        assert!(tokens.has_tokens("https://a/mcp").await.unwrap());
        tokens.clear("https://a/mcp").await.unwrap();
        assert!(!tokens.has_tokens("https://a/mcp").await.unwrap());

        let keyless = OAuthHost::new(store, Err("no key: set [server] secret_key".into()));
        assert_eq!(
            keyless
                .tokens("tickets")
                .load("https://a/mcp")
                .await
                .unwrap_err()
                .to_string(),
            "no key: set [server] secret_key"
        );
        assert_eq!(
            keyless.redirect_uri().unwrap_err(),
            "the server does not know its public address yet; set [server] public_url"
        );
        keyless.set_public_url("https://h.example.com/");
        assert_eq!(
            keyless.redirect_uri().unwrap(),
            "https://h.example.com/v2/connectors/oauth/callback"
        );
    }

    fn handover(
        store: &Arc<dyn ResourceStore>,
    ) -> (
        StoreHandover,
        tokio::sync::oneshot::Receiver<String>,
        Arc<Mutex<Option<String>>>,
    ) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let state = Arc::new(Mutex::new(None));
        let h = StoreHandover {
            store: Arc::clone(store),
            key: SecretKey::parse(HEX).unwrap(),
            connector: "tickets".into(),
            address: Mutex::new(Some(tx)),
            state: Arc::clone(&state),
        };
        (h, rx, state)
    }

    #[tokio::test]
    async fn a_hand_over_says_why_it_ends() {
        let store = store();
        let (h, _rx, _) = handover(&store);
        assert_eq!(
            h.hand_out("https://as/authorize?x=1".into())
                .await
                .unwrap_err(),
            "the sign-in address has no usable `state`"
        );
        // The address was taken by that attempt: a second one is refused.
        assert_eq!(
            h.hand_out("https://as/authorize?state=s2".into())
                .await
                .unwrap_err(),
            "this sign-in was already handed out; start another"
        );
        let (h, rx, _) = handover(&store);
        drop(rx);
        assert_eq!(
            h.hand_out("https://as/authorize?state=s3".into())
                .await
                .unwrap_err(),
            "the request that started the sign-in was closed"
        );
        // The callback never comes and the hand-over is deleted: abandoned.
        let (h, rx, state) = handover(&store);
        let waiting = tokio::spawn(h.hand_out("https://as/authorize?state=s4".into()));
        assert_eq!(rx.await.unwrap(), "https://as/authorize?state=s4");
        assert_eq!(state.lock().unwrap().as_deref(), Some("s4"));
        finish(&store, "s4", "tickets", Err("x".into())).await;
        assert_eq!(
            waiting.await.unwrap().unwrap_err(),
            "the sign-in was abandoned"
        );
        // A state is pending once: a second hand-over of it is refused.
        let (h, rx, _) = handover(&store);
        let first = tokio::spawn(h.hand_out("https://as/authorize?state=s5".into()));
        rx.await.unwrap();
        let (h, _rx, _) = handover(&store);
        assert_eq!(
            h.hand_out("https://as/authorize?state=s5".into())
                .await
                .unwrap_err(),
            "the sign-in `state` is in use already; start again"
        );
        first.abort();
    }

    #[tokio::test]
    async fn a_callback_without_a_key_says_which_setting_to_give() {
        let store = store();
        let (h, rx, _) = handover(&store);
        let waiting = tokio::spawn(h.hand_out("https://as/authorize?state=s6".into()));
        rx.await.unwrap();
        let keyless = OAuthHost::new(Arc::clone(&store), Err("no key: set it".into()));
        assert_eq!(
            hand_over(&keyless, "s6", "https://h/cb?state=s6").await,
            Err(CallbackError::Key("no key: set it".into()))
        );
        assert_eq!(
            CallbackError::Key("no key: set it".into()).to_string(),
            "no key: set it"
        );
        assert_eq!(
            CallbackError::Store("down".into()).to_string(),
            "the store failed: down"
        );
        let host = OAuthHost::new(Arc::clone(&store), SecretKey::parse(HEX));
        assert_eq!(
            hand_over(&host, "s6", "https://h/cb?state=s6&code=c").await,
            Ok("tickets".into())
        );
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            "https://h/cb?state=s6&code=c"
        );
        assert_eq!(
            hand_over(&host, "s6", "https://h/cb?state=s6&code=c").await,
            Err(CallbackError::UnknownState),
            "used"
        );
        finish(&store, "s6", "tickets", Ok(())).await;
        assert_eq!(
            outcome(&host, "s6", Duration::from_secs(5)).await,
            Some(Ok(()))
        );
        assert_eq!(
            hand_over(&host, "s6", "https://h/cb?state=s6").await,
            Err(CallbackError::UnknownState),
            "forgotten"
        );
    }
}
