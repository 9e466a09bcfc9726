//! The server's integration tests: every route over real HTTP on 127.0.0.1.

mod common;
mod suite;
