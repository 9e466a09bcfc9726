mod adversarial;
mod api;
mod cli;
mod config;
mod stop;
