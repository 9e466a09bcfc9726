//! The memory bundle: a [`MemoryStore`] trait, an in-memory and a durable SQLite store, and the
//! tools `save_memory`, `search_memories`, `list_memories` and `delete_memory`.
//!
//! A memory is a short text with optional tags, an id and a creation time. The model saves what
//! it should remember across conversations, searches it by keywords, lists it newest first, and
//! deletes what is stale.
//!
//! ```
//! use std::sync::Arc;
//! use harnessx::ToolRegistry;
//! use harnessx_builtin::memory::{register_memory_tools, InMemoryStore, MemoryOptions};
//!
//! let registry = ToolRegistry::new();
//! let names = register_memory_tools(&registry, MemoryOptions {
//!     store: Some(Arc::new(InMemoryStore::new())),
//!     ..MemoryOptions::default()
//! })?;
//! assert_eq!(names, ["save_memory", "search_memories", "list_memories", "delete_memory"]);
//! # Ok::<(), harnessx::RegistryError>(())
//! ```
//!
//! Stores clean what they keep (control characters stripped, line endings normalised, tags
//! trimmed and de-duplicated) and bound it by [`MemoryLimits`]; every refusal is one line naming
//! the limit. [`SqliteMemoryStore`] keeps memories in a file (WAL mode, a versioned schema, FTS5
//! full-text search ranked by BM25) and runs every query on tokio's blocking pool. Search text is
//! reduced to its words and quoted, so no input can break the full-text query syntax.

mod delete;
mod format;
mod in_memory;
mod list;
mod sanitize;
mod save;
mod search;
mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use harnessx::{
    BoxFuture, PermissionLevel, RegistryError, ToolError, ToolHandler, ToolOutput, ToolRegistry,
    handler_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use in_memory::InMemoryStore;
pub use sqlite::{SCHEMA_VERSION, SqliteMemoryStore};

use crate::bundle::{register_selected, select_tools};

/// The tools of the memory bundle, in registration order.
pub const MEMORY_TOOLS: [&str; 4] = [
    "save_memory",
    "search_memories",
    "list_memories",
    "delete_memory",
];

/// One saved memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// The store's id for it (positive, never reused by the SQLite store).
    pub id: i64,
    /// The text, cleaned.
    pub content: String,
    /// Tags, cleaned and de-duplicated, in the order given.
    pub tags: Vec<String>,
    /// When it was saved.
    pub created_at: SystemTime,
}

/// A search result: the memory and its relevance (higher is more relevant; comparable only
/// within one search).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    /// The memory.
    pub memory: Memory,
    /// Relevance score.
    pub score: f64,
}

/// A full-text search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchQuery {
    /// Keywords; a memory matches when it contains any of them, and ranks higher with more.
    pub text: String,
    /// Only memories with this tag.
    pub tag: Option<String>,
    /// At most this many hits (clamped to [`MemoryLimits::max_results`]).
    pub limit: usize,
}

/// A page of memories, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only memories with this tag.
    pub tag: Option<String>,
    /// At most this many memories (clamped to [`MemoryLimits::max_results`]).
    pub limit: usize,
    /// Skip this many of the newest first.
    pub offset: usize,
}

/// A page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryPage {
    /// The memories on this page, newest first.
    pub memories: Vec<Memory>,
    /// How many memories match the listing in all.
    pub total: usize,
}

/// Size bounds a store enforces.
///
/// ```
/// use harnessx_builtin::memory::MemoryLimits;
/// let limits: MemoryLimits = serde_json::from_value(serde_json::json!({"max_memories": 500})).unwrap();
/// assert_eq!(limits.max_memories, 500);
/// assert_eq!(limits.max_content_bytes, MemoryLimits::default().max_content_bytes);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryLimits {
    /// Largest content of one memory, in bytes after cleaning (default 4000).
    pub max_content_bytes: usize,
    /// Most memories kept; saving more fails until some are deleted (default 10 000).
    pub max_memories: usize,
    /// Most memories one search or listing returns (default 50).
    pub max_results: usize,
    /// Most tags on one memory (default 16).
    pub max_tags: usize,
    /// Longest tag, in bytes (default 64).
    pub max_tag_bytes: usize,
    /// Longest search text, in bytes (default 1000).
    pub max_query_bytes: usize,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        Self {
            max_content_bytes: 4000,
            max_memories: 10_000,
            max_results: 50,
            max_tags: 16,
            max_tag_bytes: 64,
            max_query_bytes: 1000,
        }
    }
}

/// Why a store refused or failed. Input errors are worded for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A text field is empty after cleaning.
    #[error("`{field}` is empty once cleaned; {advice}")]
    Empty {
        /// The field.
        field: &'static str,
        /// What to pass instead.
        advice: &'static str,
    },
    /// A field is larger than its limit.
    #[error(
        "`{field}` is {size} bytes, more than the limit `{limit_name}` ({limit} bytes); {advice}"
    )]
    TooLarge {
        /// The field.
        field: &'static str,
        /// Its size in bytes.
        size: usize,
        /// The limit's name in [`MemoryLimits`].
        limit_name: &'static str,
        /// The limit.
        limit: usize,
        /// What to do.
        advice: &'static str,
    },
    /// Too many tags.
    #[error(
        "`tags` has {count} tags, more than the limit `max_tags` ({limit}); keep the most useful ones"
    )]
    TooManyTags {
        /// Tags given (after de-duplication).
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// The store holds its maximum number of memories.
    #[error(
        "the memory store is full: it holds {limit} memories, the limit `max_memories`; delete memories that are no longer useful with delete_memory, then save again"
    )]
    Full {
        /// The limit.
        limit: usize,
    },
    /// The database file could not be opened or read.
    #[error("the memory database {path} cannot be used: {reason}")]
    Storage {
        /// The database file.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The database was written by a newer schema than this build knows.
    #[error(
        "the memory database {path} has schema version {found}, but this build of harnessx supports up to version {supported}; upgrade harnessx or use another file"
    )]
    SchemaVersion {
        /// The database file.
        path: PathBuf,
        /// The version found in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
}

impl MemoryError {
    /// Whether the model's input caused the error (as opposed to the store failing).
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            Self::Empty { .. }
                | Self::TooLarge { .. }
                | Self::TooManyTags { .. }
                | Self::Full { .. }
        )
    }
}

impl From<MemoryError> for ToolError {
    fn from(e: MemoryError) -> Self {
        if e.is_input_error() {
            ToolError::invalid_arguments(e.to_string())
        } else {
            ToolError::failed(e.to_string())
        }
    }
}

/// Where memories live. Implementations must clean and bound what they store (see
/// [`MemoryLimits`]) and keep blocking work off the async workers.
///
/// Implement it to keep memories in your own database; the tools only use these methods.
pub trait MemoryStore: Send + Sync + 'static {
    /// Saves a memory and returns it as stored (cleaned, with its id and time).
    fn save(
        &self,
        content: String,
        tags: Vec<String>,
    ) -> BoxFuture<'_, Result<Memory, MemoryError>>;

    /// The memories matching `query`'s keywords, most relevant first. No keyword (after
    /// cleaning) is an [`MemoryError::Empty`] error.
    fn search(&self, query: SearchQuery) -> BoxFuture<'_, Result<Vec<MemoryHit>, MemoryError>>;

    /// A page of memories, newest first.
    fn list(&self, query: ListQuery) -> BoxFuture<'_, Result<MemoryPage, MemoryError>>;

    /// Deletes a memory; `false` when no memory has that id.
    fn delete(&self, id: i64) -> BoxFuture<'_, Result<bool, MemoryError>>;

    /// The bounds this store enforces.
    fn limits(&self) -> &MemoryLimits;
}

/// Options of [`register_memory_tools`] (and of `load_builtin("memory", ..)`, which parses them
/// from JSON; `store` cannot come from JSON, `path` can).
///
/// Choose the store with at most one of:
/// - `store`: a store you built (shared with other code, or your own [`MemoryStore`]);
/// - `path`: a [`SqliteMemoryStore`] file opened (or created) by the helper, with `limits`;
/// - neither: the registry's shared [`InMemoryStore`], gone when the process ends. The first
///   load without `store` or `path` on a registry creates it with `limits` and keeps it in the
///   registry's shared state; every later such load on that registry (another
///   `register_memory_tools` call, or `load_builtin("save_memory", ..)` then
///   `load_builtin("search_memories", ..)`) uses the same store, so searches see what was saved.
///   A later load whose `limits` differ from that store's is refused.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryOptions {
    /// Register only these tools (`None`: the whole bundle).
    pub include: Option<Vec<String>>,
    /// Leave these tools out.
    pub exclude: Vec<String>,
    /// The permission of the registered tools (`None`: inherit the manager's default).
    pub permission: Option<PermissionLevel>,
    /// Replace tools already registered under the same names.
    pub replace: bool,
    /// The store to use.
    #[serde(skip)]
    pub store: Option<Arc<dyn MemoryStore>>,
    /// A SQLite file to open or create as the store.
    pub path: Option<PathBuf>,
    /// Bounds for the store the helper builds (from `path`, or in memory).
    pub limits: MemoryLimits,
}

impl std::fmt::Debug for MemoryOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryOptions")
            .field("include", &self.include)
            .field("exclude", &self.exclude)
            .field("permission", &self.permission)
            .field("replace", &self.replace)
            .field("store", &self.store.as_ref().map(|_| "dyn MemoryStore"))
            .field("path", &self.path)
            .field("limits", &self.limits)
            .finish()
    }
}

/// The registry-wide [`InMemoryStore`] that loads without `store` or `path` share, kept in the
/// registry's shared state under this private type so no other code can replace it.
struct SharedInMemoryStore(Arc<InMemoryStore>);

impl MemoryOptions {
    fn build_store(&self, registry: &ToolRegistry) -> Result<Arc<dyn MemoryStore>, RegistryError> {
        match (&self.store, &self.path) {
            (Some(_), Some(_)) => Err(RegistryError::Config(
                "memory options `store` and `path` both choose the store; pass only one".to_owned(),
            )),
            (Some(_), None) if self.limits != MemoryLimits::default() => {
                Err(RegistryError::Config(
                    "memory option `limits` configures the store the helper builds, but `store` is set; configure limits on that store instead".to_owned(),
                ))
            }
            (Some(store), None) => Ok(Arc::clone(store)),
            (None, Some(path)) => SqliteMemoryStore::open_with_limits(path, self.limits.clone())
                .map(|s| Arc::new(s) as Arc<dyn MemoryStore>)
                .map_err(|e| RegistryError::Config(e.to_string())),
            (None, None) => self.shared_store(registry),
        }
    }

    /// The registry's shared in-memory store, created with `limits` on first use.
    fn shared_store(&self, registry: &ToolRegistry) -> Result<Arc<dyn MemoryStore>, RegistryError> {
        let shared = match registry.state::<SharedInMemoryStore>() {
            Some(shared) => Arc::clone(&shared.0.0),
            None => {
                let fresh = Arc::new(InMemoryStore::with_limits(self.limits.clone()));
                registry.insert_state(SharedInMemoryStore(Arc::clone(&fresh)));
                // Read back what the registry holds, so that two first loads racing each other
                // most likely end up on the same store (the one inserted last).
                registry
                    .state::<SharedInMemoryStore>()
                    .map_or(fresh, |shared| Arc::clone(&shared.0.0))
            }
        };
        if shared.limits() != &self.limits {
            return Err(RegistryError::Config(
                "memory option `limits` differs from the limits of the in-memory store this registry's memory tools already share; pass the same limits, or choose another store with `store` or `path`".to_owned(),
            ));
        }
        Ok(shared as Arc<dyn MemoryStore>)
    }
}

/// A handler that gets the store and the arguments: what every memory tool is.
fn store_handler<F, Fut>(store: Arc<dyn MemoryStore>, f: F) -> Arc<dyn ToolHandler>
where
    F: Fn(Arc<dyn MemoryStore>, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    handler_fn(move |args, _ctx| f(Arc::clone(&store), args))
}

/// Registers the memory bundle's tools over one store and returns their names in bundle order.
///
/// Fails when `include` or `exclude` names a tool the bundle does not have, when the options
/// choose the store twice, when `limits` differ from those of the registry's shared in-memory
/// store (see [`MemoryOptions`]), when the SQLite file cannot be opened, or when a tool of the same
/// name exists and `replace` is not set; nothing is registered then. Opening a `path` is quick
/// blocking file I/O: call this during setup.
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx_builtin::memory::{register_memory_tools, MemoryOptions};
/// let registry = ToolRegistry::new();
/// let dir = tempfile::tempdir().unwrap();
/// let names = register_memory_tools(&registry, MemoryOptions {
///     include: Some(vec!["save_memory".into(), "search_memories".into()]),
///     path: Some(dir.path().join("memories.db")),
///     ..MemoryOptions::default()
/// })?;
/// assert_eq!(names, ["save_memory", "search_memories"]);
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
pub fn register_memory_tools(
    registry: &ToolRegistry,
    options: MemoryOptions,
) -> Result<Vec<String>, RegistryError> {
    let selected = select_tools(
        "memory",
        &MEMORY_TOOLS,
        options.include.as_deref(),
        &options.exclude,
    )?;
    let store = options.build_store(registry)?;
    let definitions = selected
        .iter()
        .map(|name| match *name {
            "save_memory" => save::definition(Arc::clone(&store)),
            "search_memories" => search::definition(Arc::clone(&store)),
            "list_memories" => list::definition(Arc::clone(&store)),
            _ => delete::definition(Arc::clone(&store)),
        })
        .collect();
    register_selected(registry, definitions, options.permission, options.replace)
}
