//! Integration tests of the harnessx-builtin crate, compiled into one binary.
mod suite;
