//! Integration tests for the harnessx core, compiled into one binary.
mod suite;
