mod adversarial;
mod agents;
pub mod api;
mod cli;
mod config;
mod connectors;
mod multitask;
mod platform;
mod stop;
