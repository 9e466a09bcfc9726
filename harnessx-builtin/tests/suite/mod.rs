mod catalog;
mod memory_sqlite;
mod memory_store;
mod memory_tools;
mod web_fetch;
mod web_guard;
mod web_server;
