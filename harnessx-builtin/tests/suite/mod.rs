mod web_fetch;
mod web_guard;
mod web_server;
