//! Where sign-in tokens are kept: the [`TokenStore`] trait, a store in memory and a file only
//! its owner can read.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use harnessx_core::tool::BoxFuture;

/// The tokens of one sign-in: the client id, the access and refresh tokens, when they were
/// received and for how long, and the scopes granted. Stores keep it as JSON (it implements
/// `Serialize` and `Deserialize`); its `Debug` never shows a token.
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StoredTokens(pub(crate) StoredCredentials);

impl StoredTokens {
    /// The client id the tokens were issued to (registered dynamically or configured).
    pub fn client_id(&self) -> &str {
        &self.0.client_id
    }

    /// Whether a refresh token is kept, so an expired access token can be renewed without a
    /// new sign-in.
    pub fn has_refresh_token(&self) -> bool {
        self.0
            .token_response
            .as_ref()
            .and_then(oauth_refresh_token)
            .is_some()
    }

    /// The scopes granted.
    pub fn scopes(&self) -> &[String] {
        &self.0.granted_scopes
    }

    /// When the access token was received, in seconds since the Unix epoch.
    pub fn received_at(&self) -> Option<u64> {
        self.0.token_received_at
    }
}

/// The refresh token of a token response, read through its JSON form (the `oauth2` crate's
/// trait is not a dependency of harnessx).
fn oauth_refresh_token(t: &rmcp::transport::auth::OAuthTokenResponse) -> Option<String> {
    let value = serde_json::to_value(t).ok()?;
    value.get("refresh_token")?.as_str().map(str::to_owned)
}

impl std::fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredTokens")
            .field("client_id", &self.0.client_id)
            .field("tokens", &"[REDACTED]")
            .field("has_refresh_token", &self.has_refresh_token())
            .field("scopes", &self.0.granted_scopes)
            .field("received_at", &self.0.token_received_at)
            .finish()
    }
}

/// A failure of a [`TokenStore`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// The token file could not be read.
    #[error("could not read the token file {path}; check that harnessx may read it")]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The token file could not be written.
    #[error(
        "could not write the token file {path}; check that its folder can be created and written"
    )]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The token file is not what harnessx writes.
    #[error(
        "the token file {path} is not a harnessx token file ({reason}); delete it to sign in again"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The token file can be read or written by other users.
    #[error(
        "the token file {path} can be read or written by other users (mode {mode:o}); run `chmod 600 {path}` or delete it to sign in again"
    )]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Another implementation's failure.
    #[error("{0}")]
    Other(String),
}

/// Where sign-in tokens are kept, keyed by the MCP server's URL. Implement it for a keychain, a
/// database or a secret manager; [`MemoryTokenStore`] and [`FileTokenStore`] are provided.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use harnessx::BoxFuture;
/// use harnessx::mcp::{StoredTokens, TokenStore, TokenStoreError};
///
/// /// Keeps tokens as JSON text, as a keychain would.
/// #[derive(Default)]
/// struct Keychain(Mutex<HashMap<String, String>>);
///
/// impl TokenStore for Keychain {
///     fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<StoredTokens>, TokenStoreError>> {
///         let text = self.0.lock().unwrap().get(key).cloned();
///         Box::pin(async move {
///             text.map(|t| serde_json::from_str(&t).map_err(|e| TokenStoreError::Other(e.to_string())))
///                 .transpose()
///         })
///     }
///     fn save<'a>(&'a self, key: &'a str, tokens: StoredTokens) -> BoxFuture<'a, Result<(), TokenStoreError>> {
///         Box::pin(async move {
///             let text = serde_json::to_string(&tokens).map_err(|e| TokenStoreError::Other(e.to_string()))?;
///             self.0.lock().unwrap().insert(key.to_owned(), text);
///             Ok(())
///         })
///     }
///     fn clear<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), TokenStoreError>> {
///         self.0.lock().unwrap().remove(key);
///         Box::pin(async { Ok(()) })
///     }
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let keychain = Keychain::default();
/// assert!(keychain.load("https://mcp.example.com/mcp").await.unwrap().is_none());
/// # }
/// ```
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens kept for `key`, if any.
    fn load<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredTokens>, TokenStoreError>>;

    /// Keeps `tokens` for `key`, replacing what was there.
    fn save<'a>(
        &'a self,
        key: &'a str,
        tokens: StoredTokens,
    ) -> BoxFuture<'a, Result<(), TokenStoreError>>;

    /// Forgets the tokens of `key` (the next connect signs in again).
    fn clear<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), TokenStoreError>>;
}

/// Tokens kept in this process's memory: lost when it exits. Clones share the tokens.
///
/// ```
/// use harnessx::mcp::{MemoryTokenStore, TokenStore};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store = MemoryTokenStore::new();
/// assert!(store.load("https://mcp.example.com/mcp").await.unwrap().is_none());
/// assert!(store.is_empty());
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryTokenStore {
    tokens: Arc<Mutex<HashMap<String, StoredTokens>>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no tokens are kept.
    pub fn is_empty(&self) -> bool {
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredTokens>, TokenStoreError>> {
        let found = self
            .tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned();
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        key: &'a str,
        tokens: StoredTokens,
    ) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_owned(), tokens);
        Box::pin(async { Ok(()) })
    }

    fn clear<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        Box::pin(async { Ok(()) })
    }
}

/// Tokens kept in one JSON file that only its owner may read or write (mode `0600`; missing
/// folders are created with mode `0700`). Every change is written to a new file that replaces
/// the old one, so a crash never leaves half a file. A file that others may read or write is
/// refused, as `ssh` refuses such keys.
///
/// ```
/// use harnessx::mcp::{FileTokenStore, TokenStore};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let dir = tempfile::tempdir().unwrap();
/// let store = FileTokenStore::new(dir.path().join("tokens/mcp.json"));
/// assert!(store.load("https://mcp.example.com/mcp").await.unwrap().is_none()); // no file yet
/// store.clear("https://mcp.example.com/mcp").await.unwrap();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    path: PathBuf,
    /// Serialises read-modify-write cycles within this process.
    lock: Arc<tokio::sync::Mutex<()>>,
}

type FileContents = BTreeMap<String, StoredTokens>;

impl FileTokenStore {
    /// A store in the file at `path` (created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn read(&self) -> Result<FileContents, TokenStoreError> {
        let read_error = |source| TokenStoreError::Read {
            path: self.path.clone(),
            source,
        };
        let metadata = match tokio::fs::metadata(&self.path).await {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FileContents::new()),
            Err(e) => return Err(read_error(e)),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(TokenStoreError::Permissions {
                    path: self.path.clone(),
                    mode,
                });
            }
        }
        #[cfg(not(unix))]
        let _ = metadata;
        let bytes = tokio::fs::read(&self.path).await.map_err(read_error)?;
        serde_json::from_slice(&bytes).map_err(|e| TokenStoreError::Corrupt {
            path: self.path.clone(),
            reason: e.to_string(),
        })
    }

    async fn write(&self, contents: &FileContents) -> Result<(), TokenStoreError> {
        let write_error = |source| TokenStoreError::Write {
            path: self.path.clone(),
            source,
        };
        let bytes = serde_json::to_vec_pretty(contents)
            .map_err(|e| write_error(std::io::Error::other(e)))?;
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            let mut builder = tokio::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            builder.mode(0o700);
            builder.create(parent).await.map_err(write_error)?;
        }
        let mut name = self.path.file_name().unwrap_or_default().to_owned();
        name.push(format!(".{}.tmp", rand::random::<u64>()));
        let temporary = self.path.with_file_name(name);
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o600);
        let written = async {
            use tokio::io::AsyncWriteExt;
            let mut file = options.open(&temporary).await?;
            file.write_all(&bytes).await?;
            file.sync_all().await?;
            drop(file);
            tokio::fs::rename(&temporary, &self.path).await
        }
        .await;
        if let Err(e) = written {
            let _ = tokio::fs::remove_file(&temporary).await;
            return Err(write_error(e));
        }
        Ok(())
    }
}

impl TokenStore for FileTokenStore {
    fn load<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredTokens>, TokenStoreError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            Ok(self.read().await?.remove(key))
        })
    }

    fn save<'a>(
        &'a self,
        key: &'a str,
        tokens: StoredTokens,
    ) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            let mut contents = self.read().await?;
            contents.insert(key.to_owned(), tokens);
            self.write(&contents).await
        })
    }

    fn clear<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            let mut contents = self.read().await?;
            if contents.remove(key).is_some() {
                self.write(&contents).await?;
            }
            Ok(())
        })
    }
}

/// One server's entry of a [`TokenStore`], as rmcp's credential store.
pub(super) struct KeyedStore {
    pub(super) store: Arc<dyn TokenStore>,
    pub(super) key: String,
}

fn store_error(e: TokenStoreError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for KeyedStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let tokens = self.store.load(&self.key).await.map_err(store_error)?;
        Ok(tokens.map(|t| t.0))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.store
            .save(&self.key, StoredTokens(credentials))
            .await
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.clear(&self.key).await.map_err(store_error)
    }
}
