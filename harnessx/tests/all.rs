//! Integration tests for the harnessx core, compiled into one binary.
// Tests may unwrap: a panic is how a test reports failure.
#![allow(clippy::unwrap_used)]

mod suite;
