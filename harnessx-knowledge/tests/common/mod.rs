//! What the tests share.

pub mod catalog;
