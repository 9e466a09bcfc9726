//! The names most programs use, in one import: `use harnessx::prelude::*;`.
//!
//! It brings the `#[tool]` attribute, the registry and its call types, the agent and its
//! scripted models, and every trait whose methods you call on harnessx values (so no method
//! is missing for want of an import). `harnessx_builtin::prelude` adds the built-in tools'
//! extension traits (`registry.load_builtin(..)`, `builder.builtin(..)`).
//!
//! ```
//! use harnessx::prelude::*;
//!
//! /// Add two numbers.
//! #[tool]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), AgentError> {
//! let model = TestModel::new()
//!     .then_call("add", serde_json::json!({"a": 2, "b": 3}))
//!     .then_reply("5");
//! let agent = Agent::builder().model(model).tool(add).build()?;
//! assert_eq!(agent.run("2 + 3?").await?.output, "5");
//! # Ok(()) }
//! ```

pub use crate::agent::Capability;
pub use crate::model::{FunctionModel, TestModel};
pub use crate::{
    Agent, AgentConfig, AgentError, AgentEvent, Conversation, Deps, FromToolContext, IntoTimeout,
    IntoTool, IntoToolHandler, IntoToolOutput, Message, Model, ModelError, ModelRequest,
    ModelResponse, PermissionLevel, PermissionManager, RegistryError, ReplayPolicy, RunResult,
    Sandbox, State, ToolCall, ToolContext, ToolDefinition, ToolError, ToolHandler, ToolOptions,
    ToolOutput, ToolPolicy, ToolRegistry, ToolResult, ToolRetry, handler_fn, sync_handler_fn, tool,
};
