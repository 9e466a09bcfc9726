//! Cross-crate integration tests, compiled into one binary.

mod suite;
