//! harnessx builtin.
