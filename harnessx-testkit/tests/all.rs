//! The testkit's integration tests, one binary: real PostgreSQL clusters.

mod suite;
