mod adversarial;
mod agents;
pub mod api;
mod cli;
mod config;
mod connectors;
mod platform;
mod signin;
mod stop;
