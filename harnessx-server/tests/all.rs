//! The server's integration tests: every route over real HTTP on 127.0.0.1.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns; a failure is the test failing"
)]

mod common;
mod suite;
