//! The options of the filesystem bundle: [`FilesystemOptions`].

use std::path::PathBuf;

use harnessx::PermissionLevel;
use serde::Deserialize;

/// Default for [`FilesystemOptions::max_read_bytes`]: what one `read_file` call returns at most.
pub const DEFAULT_MAX_READ_BYTES: u64 = 50_000;
/// Default for [`FilesystemOptions::max_directory_entries`].
pub const DEFAULT_MAX_DIRECTORY_ENTRIES: usize = 1_000;
/// Default for [`FilesystemOptions::max_search_results`].
pub const DEFAULT_MAX_SEARCH_RESULTS: usize = 500;

/// Options of [`register_filesystem_tools`](super::register_filesystem_tools) and of
/// `registry.load_builtin("filesystem", ..)`.
///
/// Every limit here is configuration: none of them appears in the model's input schema.
/// Unknown keys are refused when the options are read from JSON, naming the key.
///
/// ```
/// use harnessx_builtin::FilesystemOptions;
///
/// let options: FilesystemOptions = serde_json::from_value(serde_json::json!({
///     "include": ["read_file", "list_directory"],
///     "base_path": ".",
///     "max_read_bytes": 1_000_000
/// }))?;
/// assert_eq!(options.max_read_bytes, 1_000_000);
/// assert_eq!(options.max_directory_entries, 1_000); // default kept
///
/// let err = serde_json::from_value::<FilesystemOptions>(serde_json::json!({"max_bytes": 1}))
///     .unwrap_err();
/// assert!(err.to_string().contains("unknown field `max_bytes`"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FilesystemOptions {
    /// Register only these tools (names from [`FILESYSTEM_TOOLS`](super::FILESYSTEM_TOOLS)).
    /// `None` registers the whole bundle.
    pub include: Option<Vec<String>>,
    /// Leave these tools out.
    pub exclude: Vec<String>,
    /// The permission every tool of the bundle gets; `None` inherits the manager's default.
    pub permission: Option<PermissionLevel>,
    /// Replace tools already registered under the same names instead of failing.
    pub replace: bool,
    /// Contain every operation inside this directory, which must exist. `None` gives the tools
    /// host filesystem access under the process's permissions. Ignored when the registry's
    /// sandbox owns its filesystem: the tools then work inside the sandbox's root.
    pub base_path: Option<PathBuf>,
    /// The most bytes one `read_file` call returns; the footer says how to read on.
    pub max_read_bytes: u64,
    /// The most entries `list_directory` shows; a footer says how many more there are.
    pub max_directory_entries: usize,
    /// The most paths `glob` and the most matching lines `grep` show; a footer says how many
    /// more there are.
    pub max_search_results: usize,
    /// Where `generate_file` writes downloadable copies; `None` uses the environment variable
    /// `AGENT_OUTPUT_DIR`, else `./output`.
    pub output_dir: Option<PathBuf>,
}

impl Default for FilesystemOptions {
    fn default() -> Self {
        Self {
            include: None,
            exclude: Vec::new(),
            permission: None,
            replace: false,
            base_path: None,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            max_directory_entries: DEFAULT_MAX_DIRECTORY_ENTRIES,
            max_search_results: DEFAULT_MAX_SEARCH_RESULTS,
            output_dir: None,
        }
    }
}
