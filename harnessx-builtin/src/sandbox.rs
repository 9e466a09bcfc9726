//! Sandboxes for the bash tool: [`LocalSandbox`] (the host) and [`BubblewrapSandbox`] (an
//! isolating sandbox that owns its filesystem).
//!
//! Bind one to a registry with [`ToolRegistry::set_sandbox`](harnessx::ToolRegistry::set_sandbox)
//! (an agent does it through its builder's `.sandbox(..)`); `run_bash` then runs its commands
//! through it, and when the sandbox owns its filesystem the file tools operate inside that
//! filesystem too.

mod bubblewrap;
mod local;

pub use bubblewrap::BubblewrapSandbox;
pub use local::{LocalSandbox, SUPERVISOR_ENV, find_supervisor};
