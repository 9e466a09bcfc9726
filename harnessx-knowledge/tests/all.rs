#![allow(clippy::unwrap_used, missing_docs)]
//! The integration tests of harnessx-knowledge, in one binary.

mod common;
mod suite;
