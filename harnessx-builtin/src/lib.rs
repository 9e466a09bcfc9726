//! # harnessx-builtin — the tools an agent gets out of the box
//!
//! Each bundle gives you both halves the spec names: the **operation** (a direct standalone
//! function or tool value, with ordinary registration metadata) and a **registration helper**
//! that configures and registers it. Every helper takes `include`, `exclude`, `permission` and
//! `replace` plus options of its own, returns the names it registered in bundle order, and fails
//! on unknown tool names, filters or options. Helpers never mark fetching or any other
//! operation replay-safe, and limits they are configured with are hidden from the model.
//!
//! ## The bundles
//!
//! | Bundle | Tools | Helper and options | Feature |
//! |---|---|---|---|
//! | `filesystem` | `read_file`, `write_file`, `edit_file`, `delete`, `glob`, `grep`, `list_directory`, `generate_file` | `fs::register_filesystem_tools`, `fs::FilesystemOptions` | `fs` |
//! | `bash` | `run_bash` (commands up to 300 s) | `bash::register_bash_tools`, `bash::BashOptions`; sandboxes in `sandbox` | `bash` |
//! | `web` | `fetch_url` (60 s limit) | [`web::register_web_tools`], [`web::WebOptions`] | `web` |
//! | `memory` | `save_memory`, `search_memories`, `list_memories`, `delete_memory` | [`memory::register_memory_tools`], [`memory::MemoryOptions`] | `memory` |
//! | `planning` | `write_todos`, `read_todos` | [`planning::register_planning_tools`] (re-exported from `harnessx`) | — |
//!
//! `all` loads every bundle. `ask_user` is not part of any bundle: register it with
//! `ask_user::register_ask_user_tool` (the spec's simple callback) or
//! `ask_user::register_ask_user_questions` (a structured one); either way it is one tool that
//! takes structured questions or one open question.
//!
//! ## A helper, configured
//!
//! ```
//! use harnessx::ToolRegistry;
//! use harnessx_builtin::web::{register_web_tools, WebOptions};
//!
//! let registry = ToolRegistry::new();
//! let registered = register_web_tools(&registry, WebOptions {
//!     include: Some(vec!["fetch_url".into()]),
//!     max_length: Some(20_000), // hidden from the model: it can set only `url`
//!     ..WebOptions::default()
//! })?;
//! assert_eq!(registered, ["fetch_url"]);
//! # Ok::<(), harnessx::RegistryError>(())
//! ```
//!
//! ## A direct function
//!
//! [`web::fetch_url`] is an ordinary async function *and* a tool value, like a `#[tool]`
//! function: `fetch_url(url, None).await` bypasses the registry, while
//! `registry.register_tool(fetch_url)` exposes `url`, `max_length` and `start_index` to the model
//! with ordinary registration metadata.
//!
//! ## Loading by name
//!
//! The [`catalog`] loads any tool or bundle by name, with the helper's options as JSON, so
//! agents can be configured from files. `registry.load_builtin(..)` comes from
//! [`catalog::BuiltinExt`]; the agent builder's `.builtin(name)?` / `.builtin_with(name, options)?`
//! from `catalog::BuiltinBuilderExt`. Both come with `use harnessx_builtin::prelude::*;`, which
//! also brings everything in `harnessx::prelude`.
//!
//! ```
//! use harnessx::ToolRegistry;
//! use harnessx_builtin::catalog::BuiltinExt;
//! use serde_json::json;
//!
//! let registry = ToolRegistry::new();
//! registry.load_builtin("fetch_url", json!({"max_length": 8000}))?;
//! let names = registry.load_builtin("memory", json!({"limits": {"max_memories": 1000}}))?;
//! assert_eq!(names, ["save_memory", "search_memories", "list_memories", "delete_memory"]);
//! # Ok::<(), harnessx::RegistryError>(())
//! ```
//!
//! ## Safety defaults
//!
//! - `fetch_url` refuses loopback, private, link-local, CGNAT and cloud-metadata addresses after
//!   DNS resolution and at every redirect, and connects only to the address it checked (see
//!   [`web`]).
//! - The memory stores strip control characters, escape full-text syntax and bound every size
//!   (see [`memory::MemoryLimits`]); [`memory::SqliteMemoryStore`] survives restarts.
//! - File tools contain every path under `base_path` with descriptor-relative, no-follow access.
//! - `run_bash` runs each command in its own cgroup where the host allows it (else its process
//!   group), killed whole on timeout and when it ends, with a bounded number of processes (see
//!   [`bash::Containment`] and [`bash::ProcessLimit`]); [`BubblewrapSandbox`] runs commands as an
//!   unprivileged user without capabilities, with only its root writable.

pub mod annotations;
#[cfg(any(feature = "web", feature = "memory"))]
mod args;
pub mod ask_user;
#[cfg(feature = "bash")]
pub mod bash;
mod bundle;
pub mod catalog;
/// The planning bundle (`write_todos`, `read_todos`), re-exported from [`harnessx::planning`]:
/// the agent loop installs it by default and attaches the todo list to requests.
pub mod planning {
    pub use harnessx::planning::*;
}
#[cfg(feature = "fs")]
pub mod fs;
#[cfg(feature = "memory")]
pub mod memory;
pub mod prelude;
#[cfg(feature = "bash")]
pub mod sandbox;
#[cfg(feature = "web")]
pub mod web;

pub use ask_user::{register_ask_user_questions, register_ask_user_tool};
#[cfg(feature = "bash")]
pub use bash::{BashOptions, register_bash_tools};
pub use catalog::{BuiltinBuilderExt, BuiltinExt};
#[cfg(feature = "fs")]
pub use fs::{
    FILESYSTEM_TOOLS, FilesystemOptions, apply_sandbox_limits, register_filesystem_tools,
};
#[cfg(feature = "memory")]
pub use memory::{
    InMemoryStore, MemoryOptions, MemoryStore, SqliteMemoryStore, register_memory_tools,
};
#[cfg(feature = "bash")]
pub use sandbox::{BubblewrapSandbox, LocalSandbox, SUPERVISOR_ENV, find_supervisor};
#[cfg(feature = "web")]
pub use web::{WebOptions, fetch_url, register_web_tools};
