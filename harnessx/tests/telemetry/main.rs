//! The spans harnessx emits, each test capturing them with a subscriber of its own.
//!
//! A test binary of its own: tracing caches, per call site and for the whole process, whether
//! its spans are wanted, asking the subscriber of the thread that reaches it first. In the suite
//! binary a test without a subscriber could reach a call site first and leave it off for every
//! later test (seen once: a run with no `execute_tool` span). Here every test installs its
//! subscriber before it reaches a call site, and installing one asks every call site again.

// Tests may unwrap: a panic is how a test reports failure.
#![allow(clippy::unwrap_used)]

mod capture;
#[allow(
    dead_code,
    reason = "the suite's journal; these spans need only part of it"
)]
#[path = "../suite/journal_support.rs"]
mod journal_support;
#[cfg(feature = "otel")]
mod otlp;
mod spans;
