//! Integration tests of harnessx-mcp, compiled into one binary.
// Tests may unwrap: a panic is how a test reports failure.
#![allow(clippy::unwrap_used)]

mod common;
mod suite;
