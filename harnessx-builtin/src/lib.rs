//! harnessx builtin.

#[cfg(feature = "fs")]
pub mod fs;
#[cfg(feature = "fs")]
pub use fs::{
    FILESYSTEM_TOOLS, FilesystemOptions, apply_sandbox_limits, register_filesystem_tools,
};
