//! harnessx builtin.

#[cfg(feature = "bash")]
pub mod bash;
#[cfg(feature = "bash")]
pub mod sandbox;

#[cfg(feature = "bash")]
pub use bash::{BashOptions, register_bash_tools};
#[cfg(feature = "bash")]
pub use sandbox::{BubblewrapSandbox, LocalSandbox};
pub mod ask_user;

pub use ask_user::{register_ask_user_questions, register_ask_user_tool};
#[cfg(feature = "fs")]
pub mod fs;
#[cfg(feature = "fs")]
pub use fs::{
    FILESYSTEM_TOOLS, FilesystemOptions, apply_sandbox_limits, register_filesystem_tools,
};
