//! # harnessx-server — the runs server
//!
//! TOUR
#![doc(html_no_source)]

pub mod agents;
pub mod api;
pub mod config;
pub mod console;
mod error;
mod script;
pub mod server;
pub mod cli;

pub use api::{AppState, router};
pub use config::Config;
pub use error::{ApiError, ConfigError, ServeError};
pub use server::{Running, ServeOptions, serve};

/// The configuration `harnessx serve` uses without `--config`: one offline agent on the
/// scripted model.
pub const OFFLINE_CONFIG: &str = r#"
[agents.assistant]
model = "script"
instructions = "Greet the user the way they choose."
script = [
  { ask = { questions = [{ header = "Greeting", question = "How should I greet you?", options = [{ label = "Formally" }, { label = "Casually" }] }] } },
  { reply = "Hello! You chose: {result}" },
]
"#;
