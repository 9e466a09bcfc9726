//! Integration tests of harnessx-builtin, compiled into one binary.

mod suite;
