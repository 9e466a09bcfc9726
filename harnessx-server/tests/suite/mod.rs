mod adversarial;
mod agents;
pub mod api;
mod cli;
mod config;
mod connectors;
mod knowledge;
mod platform;
mod stop;
