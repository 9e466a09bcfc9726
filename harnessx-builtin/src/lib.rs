//! harnessx builtin.

#[cfg(feature = "bash")]
pub mod bash;
#[cfg(feature = "bash")]
pub mod sandbox;

#[cfg(feature = "bash")]
pub use bash::{BashOptions, register_bash_tools};
#[cfg(feature = "bash")]
pub use sandbox::{BubblewrapSandbox, LocalSandbox};
