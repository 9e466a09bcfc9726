//! The harnessx integration tests, compiled into one binary.

mod suite;
