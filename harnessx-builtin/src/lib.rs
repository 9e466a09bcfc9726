//! harnessx builtin.

pub mod catalog;
#[cfg(feature = "web")]
pub mod web;
