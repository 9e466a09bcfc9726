//! The by-name catalog: loading built-in tools and bundles by name, with their helper's options
//! given as JSON, on a registry ([`BuiltinExt::load_builtin`]) or an agent builder
//! (`Agent::builder().builtin(name)?`, from the `BuiltinBuilderExt` trait).
//!
//! # Names
//! - Bundles: `filesystem`, `bash`, `web`, `memory`, `planning`, and `all` (every bundle).
//! - Single tools: `read_file`, `write_file`, `edit_file`, `delete`, `glob`, `grep`,
//!   `list_directory`, `generate_file` (filesystem); `run_bash` (bash); `fetch_url` (web);
//!   `save_memory`, `search_memories`, `list_memories`, `delete_memory` (memory);
//!   `write_todos`, `read_todos` (planning). Loading one means loading its bundle with
//!   `include: [name]`, so it takes the same options except `include` and `exclude`.
//!
//! A bundle can hold more tools than one standalone function, and loading returns the names it
//! registered, in bundle order.
//!
//! # Options
//! The options are a JSON object with the keys of the bundle's options struct
//! ([`WebOptions`](crate::web::WebOptions), [`MemoryOptions`](crate::memory::MemoryOptions), ...);
//! `null` means the defaults. An unknown key is an error naming it and listing the valid keys.
//!
//! `all` takes one optional entry per bundle: an options object, `null` for the defaults, or
//! `false` to leave that bundle out:
//!
//! ```
//! use harnessx::ToolRegistry;
//! use harnessx_builtin::catalog::BuiltinExt;
//! use serde_json::json;
//!
//! let registry = ToolRegistry::new();
//! let names = registry.load_builtin("fetch_url", json!({"max_length": 8000}))?;
//! assert_eq!(names, ["fetch_url"]);
//! let names = registry.load_builtin("memory", json!({"include": ["save_memory", "search_memories"]}))?;
//! assert_eq!(names, ["save_memory", "search_memories"]);
//!
//! let err = registry.load_builtin("fetch", json!(null)).unwrap_err();
//! assert!(err.to_string().starts_with("no built-in tool or bundle is named `fetch`"));
//!
//! let everything = ToolRegistry::new();
//! let names = everything.load_builtin("all", json!({
//!     "web": {"max_length": 8000},
//!     "memory": {"limits": {"max_memories": 500}},
//!     "bash": false
//! }))?;
//! assert!(names.contains(&"fetch_url".to_string()) && !names.contains(&"run_bash".to_string()));
//! # Ok::<(), harnessx::RegistryError>(())
//! ```

mod builder;
mod bundles;

use harnessx::{RegistryError, ToolRegistry};
use serde_json::Value;

use bundles::Plan;

/// The bundle names, `all` last.
pub const BUNDLES: [&str; 6] = ["filesystem", "bash", "web", "memory", "planning", "all"];

/// Every bundle (except `all`) with its tools, in registration order.
pub const BUNDLE_TOOLS: [(&str, &[&str]); 5] = [
    (
        "filesystem",
        &[
            "read_file",
            "write_file",
            "edit_file",
            "delete",
            "glob",
            "grep",
            "list_directory",
            "generate_file",
        ],
    ),
    ("bash", &["run_bash"]),
    ("web", &["fetch_url"]),
    (
        "memory",
        &[
            "save_memory",
            "search_memories",
            "list_memories",
            "delete_memory",
        ],
    ),
    ("planning", &["write_todos", "read_todos"]),
];

/// Every name [`BuiltinExt::load_builtin`] accepts: each tool, then each bundle.
///
/// ```
/// let names = harnessx_builtin::catalog::builtin_names();
/// assert!(names.contains(&"fetch_url") && names.contains(&"all"));
/// ```
pub fn builtin_names() -> Vec<&'static str> {
    BUNDLE_TOOLS
        .iter()
        .flat_map(|(_, tools)| tools.iter().copied())
        .chain(BUNDLES)
        .collect()
}

/// A built-in load that has been resolved and checked — name known, options parsed — and can be
/// registered later. [`BuiltinExt::load_builtin`] and the agent builder's `.builtin(name)` both
/// go through it, so a registry and an agent builder accept and refuse exactly the same input.
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx_builtin::catalog::Builtin;
///
/// let load = Builtin::parse("web", serde_json::json!({"allow_private_networks": true}))?;
/// assert_eq!(load.name(), "web");
/// let registry = ToolRegistry::new();
/// assert_eq!(load.register(&registry)?, ["fetch_url"]);
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
#[derive(Debug)]
pub struct Builtin {
    name: String,
    plan: Plan,
}

impl Builtin {
    /// Resolves `name` and parses `options` (a JSON object, or `null` for the defaults).
    ///
    /// Fails on an unknown name (listing every valid one), options that are not an object, an
    /// unknown option key (listing the valid keys), a value of the wrong type, or `include` /
    /// `exclude` given with a single tool's name.
    pub fn parse(name: &str, options: Value) -> Result<Self, RegistryError> {
        let plan = Plan::parse(name, options)?;
        Ok(Self {
            name: name.to_owned(),
            plan,
        })
    }

    /// The name it was loaded by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers the tools and returns their names in bundle order.
    pub fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
        self.plan.register(registry)
    }
}

/// Loading built-ins by name on a [`ToolRegistry`] (the spec's `registry.load_builtin`).
pub trait BuiltinExt {
    /// Registers the built-in tool or bundle `name` with `options` (a JSON object of the
    /// bundle helper's options, or `null`) and returns the registered names.
    ///
    /// ```
    /// use harnessx::ToolRegistry;
    /// use harnessx_builtin::catalog::BuiltinExt;
    /// let registry = ToolRegistry::new();
    /// let err = registry.load_builtin("web", serde_json::json!({"max_lenght": 10})).unwrap_err();
    /// assert!(err.to_string().starts_with("invalid options for built-in `web`: unknown field `max_lenght`, expected one of `include`"));
    /// ```
    fn load_builtin(&self, name: &str, options: Value) -> Result<Vec<String>, RegistryError>;
}

impl BuiltinExt for ToolRegistry {
    fn load_builtin(&self, name: &str, options: Value) -> Result<Vec<String>, RegistryError> {
        Builtin::parse(name, options)?.register(self)
    }
}

pub use builder::*;
