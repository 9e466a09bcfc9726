//! The API key a server generates when none is configured, kept with its database so that it
//! survives restarts: open console tabs and `HARNESSX_API_KEY` in a shell keep working.
//!
//! - A SQLite file `runs.db` keeps it in `runs.db.key` beside it, a file only its owner may
//!   read (mode `0600`). The database file itself is often readable by others; the key file
//!   is not.
//! - PostgreSQL has no file beside it: the key is a stored resource of kind
//!   [`SERVER_KEY_KIND`] in the database, so every server sharing the database accepts the same
//!   generated key — the first one to start creates it, the others read it. Anyone who can read
//!   the database can read the key (as they can read every run).
//! - `:memory:` keeps nothing: each start has a new key.

use std::path::{Path, PathBuf};

use harnessx_runtime::store::{Expect, ResourceStore};
use serde_json::json;

use crate::error::ServeError;
use crate::server::Database;

/// The resource kind holding a PostgreSQL database's generated API key (one resource, named
/// [`SERVER_KEY_NAME`]).
pub const SERVER_KEY_KIND: &str = "server_key";

/// The name of the generated key's resource.
pub const SERVER_KEY_NAME: &str = "api_key";

/// The shortest key accepted from a key file or the database (as for configured keys).
const SHORTEST_KEY: usize = 16;

/// Where a generated API key is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeptIn {
    /// In this file beside the SQLite database.
    File(PathBuf),
    /// In the PostgreSQL database (resource kind [`SERVER_KEY_KIND`]).
    Database,
    /// Nowhere: an in-memory database, so the key lasts as long as the process.
    Nowhere,
}

/// The API key a server generated (or found kept from an earlier start).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GeneratedKey {
    /// The key.
    pub key: String,
    /// Where it is kept.
    pub kept_in: KeptIn,
    /// Whether this start created it (`false`: an earlier start did).
    pub created: bool,
}

impl std::fmt::Debug for GeneratedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratedKey")
            .field("key", &"[redacted]")
            .field("kept_in", &self.kept_in)
            .field("created", &self.created)
            .finish()
    }
}

/// A new random key: 48 hex digits (192 bits).
pub(crate) fn random_key() -> String {
    let bytes: [u8; 24] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The key file of the SQLite database at `path`: `path` with `.key` added.
///
/// ```
/// use harnessx_server::server::key_file;
/// assert_eq!(key_file("data/runs.db"), std::path::PathBuf::from("data/runs.db.key"));
/// ```
pub fn key_file(path: impl AsRef<Path>) -> PathBuf {
    let mut name = path.as_ref().as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

/// The key kept with `database`, created when there is none yet.
pub(crate) async fn kept_key(
    database: &Database,
    store: &dyn ResourceStore,
) -> Result<GeneratedKey, ServeError> {
    match database {
        Database::Sqlite(path) if path == ":memory:" => Ok(GeneratedKey {
            key: random_key(),
            kept_in: KeptIn::Nowhere,
            created: true,
        }),
        Database::Sqlite(path) => from_file(&key_file(path)),
        Database::Postgres(_) => from_store(store).await,
    }
}

fn unusable(what: &str, why: &str, fix: &str) -> ServeError {
    ServeError::Database(format!(
        "{what} holds no usable API key ({why}); {fix}, or set HARNESSX_API_KEY to a key of your \
         own"
    ))
}

fn check_kept(key: &str) -> Result<(), &'static str> {
    if key.chars().count() < SHORTEST_KEY {
        return Err("it is shorter than 16 characters");
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it holds spaces or control characters");
    }
    Ok(())
}

fn from_file(path: &Path) -> Result<GeneratedKey, ServeError> {
    let shown = path.display();
    let fix = format!("delete `{shown}` to have a new key generated");
    loop {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let key = text.trim().to_owned();
                check_kept(&key).map_err(|why| unusable(&format!("`{shown}`"), why, &fix))?;
                check_private(path)?;
                return Ok(GeneratedKey {
                    key,
                    kept_in: KeptIn::File(path.to_owned()),
                    created: false,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(ServeError::Database(format!(
                    "cannot read the API key file `{shown}`: {e}; make it readable by this user, \
                     or set HARNESSX_API_KEY"
                )));
            }
        }
        let key = random_key();
        match create_private(path, &key) {
            Ok(()) => {
                return Ok(GeneratedKey {
                    key,
                    kept_in: KeptIn::File(path.to_owned()),
                    created: true,
                });
            }
            // Another process created it meanwhile: read theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(ServeError::Database(format!(
                    "cannot write the API key file `{shown}`: {e}; make its folder writable, or \
                     set HARNESSX_API_KEY"
                )));
            }
        }
    }
}

/// Writes `key` to a new file only its owner may read.
fn create_private(path: &Path, key: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(format!("{key}\n").as_bytes())?;
    file.sync_all()
}

/// Refuses a key file others may read or write: whoever reads it can use the server.
fn check_private(path: &Path) -> Result<(), ServeError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| ServeError::Database(format!("cannot read `{}`: {e}", path.display())))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(ServeError::Database(format!(
                "the API key file `{}` may be read by other users (mode {:o}); make it private \
                 with `chmod 600 {}`, or delete it to have a new key generated",
                path.display(),
                mode & 0o777,
                path.display()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

async fn from_store(store: &dyn ResourceStore) -> Result<GeneratedKey, ServeError> {
    let failed = |e: harnessx_runtime::StoreError| {
        ServeError::Database(format!("cannot read or store the generated API key: {e}"))
    };
    let what = "the database's generated API key (resource `server_key`)";
    let fix = "mark it deleted (UPDATE resources SET deleted = true WHERE kind = 'server_key') to \
               have a new one generated";
    // Two servers starting at once: one creates the key, the other finds it on its retry.
    for _ in 0..3 {
        if let Some(stored) = store
            .resource(SERVER_KEY_KIND, SERVER_KEY_NAME, None)
            .await
            .map_err(failed)?
        {
            let key = stored.body["key"].as_str().unwrap_or_default().to_owned();
            check_kept(&key).map_err(|why| unusable(what, why, fix))?;
            return Ok(GeneratedKey {
                key,
                kept_in: KeptIn::Database,
                created: false,
            });
        }
        let key = random_key();
        if store
            .put_resource(
                SERVER_KEY_KIND,
                SERVER_KEY_NAME,
                json!({ "key": key }),
                Expect::Absent,
            )
            .await
            .map_err(failed)?
            .is_ok()
        {
            return Ok(GeneratedKey {
                key,
                kept_in: KeptIn::Database,
                created: true,
            });
        }
    }
    Err(ServeError::Database(
        "the generated API key kept changing in the database while this server started; start \
         it again"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_created_private_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db.key");
        let first = from_file(&path).unwrap();
        assert!(first.created);
        assert_eq!(first.key.len(), 48);
        let again = from_file(&path).unwrap();
        assert!(!again.created);
        assert_eq!(again.key, first.key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_damaged_or_open_key_file_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db.key");
        create_private(&path, "short").unwrap();
        let e = from_file(&path).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "`{0}` holds no usable API key (it is shorter than 16 characters); delete `{0}` \
                 to have a new key generated, or set HARNESSX_API_KEY to a key of your own",
                path.display()
            )
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::remove_file(&path).unwrap();
            std::fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = from_file(&path).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "the API key file `{0}` may be read by other users (mode 644); make it \
                     private with `chmod 600 {0}`, or delete it to have a new key generated",
                    path.display()
                )
            );
        }
    }

    #[tokio::test]
    async fn the_database_keeps_one_key_for_every_server() {
        let store = harnessx_runtime::SqliteStore::in_memory().unwrap();
        let first = from_store(&store).await.unwrap();
        assert!(first.created);
        assert_eq!(first.kept_in, KeptIn::Database);
        let second = from_store(&store).await.unwrap();
        assert_eq!((second.created, second.key), (false, first.key));

        let damaged = harnessx_runtime::SqliteStore::in_memory().unwrap();
        damaged
            .put_resource(
                SERVER_KEY_KIND,
                SERVER_KEY_NAME,
                json!({"key": "x"}),
                Expect::Absent,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            from_store(&damaged).await.unwrap_err().to_string(),
            "the database's generated API key (resource `server_key`) holds no usable API key \
             (it is shorter than 16 characters); mark it deleted (UPDATE resources SET deleted = \
             true WHERE kind = 'server_key') to have a new one generated, or set \
             HARNESSX_API_KEY to a key of your own"
        );
    }
}
