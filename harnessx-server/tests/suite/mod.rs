mod adversarial;
mod api;
mod config;
