mod adversarial;
mod api;
mod cli;
mod config;
mod platform;
mod stop;
