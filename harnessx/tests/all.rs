//! Integration tests of the `harnessx` crate, compiled into one binary.

mod suite;
