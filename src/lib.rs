//! Examples, integration tests and benchmarks for harnessx. Nothing here is published: the
//! examples use only the public crates, as a user's program would.
