//! Examples, integration tests and benchmarks for harnessx.
