//! harnessx builtin.

pub mod ask_user;

pub use ask_user::{register_ask_user_questions, register_ask_user_tool};
