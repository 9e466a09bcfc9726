//! The spans harnessx emits, each test capturing them with a subscriber of its own.
//!
//! A test binary of its own: tracing caches, per call site, whether any subscriber wants its
//! spans. In the suite binary, a call site first reached by a test that installs no subscriber,
//! at the moment one of these tests installs its own, could stay cached as unwanted (a race in
//! tracing-core's interest cache), and that test then saw no span. Here every test installs its
//! subscriber before it reaches any call site.

// Tests may unwrap: a panic is how a test reports failure.
#![allow(clippy::unwrap_used)]

mod capture;
#[cfg(feature = "otel")]
mod otlp;
mod spans;
