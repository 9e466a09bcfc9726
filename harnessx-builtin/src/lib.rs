//! harnessx builtin.

pub mod catalog;
#[cfg(feature = "memory")]
pub mod memory;
#[cfg(feature = "web")]
pub mod web;
