mod adversarial;
mod agents;
mod api;
mod cli;
mod config;
mod platform;
mod stop;
