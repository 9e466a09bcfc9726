//! `harnessx::prelude` plus the built-in tools' extension traits and helpers, in one import:
//! `use harnessx_builtin::prelude::*;`.
//!
//! ```
//! use harnessx_builtin::prelude::*;
//!
//! let registry = ToolRegistry::new();
//! registry.load_builtin("fetch_url", serde_json::Value::Null)?; // `BuiltinExt`
//! let agent = Agent::builder()
//!     .model(TestModel::new())
//!     .builtin("memory")? // `BuiltinBuilderExt`
//!     .build()
//!     .map_err(|e| RegistryError::Config(e.to_string()))?;
//! assert!(agent.tools().contains("save_memory"));
//! # Ok::<(), harnessx::RegistryError>(())
//! ```

pub use harnessx::prelude::*;

pub use crate::ask_user::{register_ask_user_questions, register_ask_user_tool};
#[cfg(feature = "bash")]
pub use crate::bash::register_bash_tools;
pub use crate::catalog::{BuiltinBuilderExt, BuiltinExt};
#[cfg(feature = "fs")]
pub use crate::fs::register_filesystem_tools;
#[cfg(feature = "memory")]
pub use crate::memory::{MemoryStore, register_memory_tools};
#[cfg(feature = "web")]
pub use crate::web::register_web_tools;
