//! How a client command reaches a server — `--server` with its key, or a server started in this
//! process on the database — through the typed [`crate::client::Client`], with the server's
//! errors worded for the person at the terminal.

use std::path::Path;

use crate::client::{Client, ClientError};
use crate::config::Config;
use crate::error::ServeError;
use crate::server::{
    API_KEY_ENV, DATABASE_URL_ENV, DEFAULT_SQLITE, Database, Running, ServeOptions, key_file,
    keys_from_env, serve,
};
use harnessx::error::error_chain;
use harnessx_runtime::{RuntimeError, StoreError};

use super::Args;
use super::terminal::quoted;

/// Where the command runs: what to add to a later command to reach the same runs, and the
/// console's address when a server keeps serving after this command.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    /// ` --server X`, ` --db Y --config Z`, or nothing.
    pub(crate) flags: String,
    /// `http://host:port/console/` of a `--server`.
    pub(crate) console: Option<String>,
}

impl Place {
    /// The console's page of a conversation, when a server keeps serving.
    pub(crate) fn conversation_page(&self, conversation: &str) -> Option<String> {
        let encoded: String = url::form_urlencoded::byte_serialize(conversation.as_bytes())
            .collect::<String>()
            .replace('+', "%20");
        self.console
            .as_ref()
            .map(|c| format!("{c}#/conversations/{encoded}"))
    }
}

/// A server's refusal as the person should read it: its message, or for a refused key what to
/// give instead.
pub(crate) fn explain(e: ClientError) -> String {
    match e.code.as_str() {
        "unauthorized" => format!(
            "the server refused the API key; give the key it was started with (--api-key KEY or \
             {API_KEY_ENV}): a server that generated its key printed it when it started and \
             keeps it in <db>.key beside its database"
        ),
        _ => e.message,
    }
}

/// Whether `server` (`host:port` or a URL) is this machine.
fn is_loopback(server: &str) -> bool {
    let with_scheme = if server.contains("://") {
        server.to_owned()
    } else {
        format!("http://{server}")
    };
    let Ok(url) = url::Url::parse(&with_scheme) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The SQLite file a command names: `--db`, `HARNESSX_DATABASE_URL`, or `harnessx.db` (`None`
/// for PostgreSQL or `:memory:`, which keep no key file).
fn sqlite_of(args: &Args) -> Option<String> {
    let named = args
        .db
        .clone()
        .or_else(|| {
            std::env::var(DATABASE_URL_ENV)
                .ok()
                .filter(|v| !v.trim().is_empty())
        })
        .unwrap_or_else(|| DEFAULT_SQLITE.to_owned());
    match Database::parse(&named) {
        Database::Sqlite(path) if path != ":memory:" => Some(path),
        _ => None,
    }
}

/// The key for `--server`: `--api-key`, the environment's, or — for a server on this machine —
/// the key kept beside the database's file.
fn key_for(args: &Args, server: &str) -> Result<String, String> {
    if let Some(key) = args
        .api_key
        .clone()
        .or_else(|| keys_from_env().into_iter().next())
    {
        return Ok(key);
    }
    let kept = sqlite_of(args).map(key_file);
    if is_loopback(server)
        && let Some(path) = &kept
        && let Ok(text) = std::fs::read_to_string(path)
        && !text.trim().is_empty()
    {
        return Ok(text.trim().to_owned());
    }
    Err(match kept {
        Some(path) => format!(
            "no API key: give --api-key KEY or set {API_KEY_ENV} (a server on this machine \
             that generated its key keeps it in `{}`; give --db when its database is \
             elsewhere)",
            path.display()
        ),
        None => format!("no API key: give --api-key KEY or set {API_KEY_ENV}"),
    })
}

/// The client of `--server`, or of a server started here on the database (returned too, to be
/// stopped when the command is done).
pub(crate) async fn connect(
    args: &Args,
    config: impl FnOnce() -> Result<Config, String>,
    command_line: &str,
) -> Result<(Client, Option<Running>, Place), String> {
    if let Some(server) = &args.server {
        let key = key_for(args, server)?;
        crate::logs::hide([key.clone()]);
        let client = Client::new(server, &key).map_err(explain)?;
        let mut flags = format!(" --server {}", quoted(server));
        if let Some(db) = &args.db {
            flags.push_str(&format!(" --db {}", quoted(db)));
        }
        let console = Some(format!("{}{}", client.base(), crate::console::CONSOLE_PATH));
        return Ok((client, None, Place { flags, console }));
    }
    let key = crate::server::random_key();
    let config = config()?;
    crate::logs::hide(super::config_secrets(&config, args));
    crate::logs::hide([key.clone()]);
    let mut options = ServeOptions::default()
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .api_key(key.clone());
    options.database = args.db.clone();
    let running = serve(&config, options)
        .await
        .map_err(|e| embedded_failure(&e, args, command_line))?;
    for warning in &running.warnings {
        eprintln!("warning: {}", super::terminal::shown(warning));
    }
    let client = Client::new(&format!("http://{}", running.addr), &key).map_err(explain)?;
    let mut flags = String::new();
    if let Some(db) = &args.db {
        flags.push_str(&format!(" --db {}", quoted(db)));
    }
    if let Some(config) = &args.config {
        flags.push_str(&format!(
            " --config {}",
            quoted(&config.display().to_string())
        ));
    }
    Ok((
        client,
        Some(running),
        Place {
            flags,
            console: None,
        },
    ))
}

/// Why the server this command starts did not start; for a database another process holds (a
/// `harnessx serve` on it, most likely), the same command sent to that server instead.
fn embedded_failure(e: &ServeError, args: &Args, command_line: &str) -> String {
    let ServeError::Runtime(RuntimeError::Store(StoreError::Locked { path })) = e else {
        return error_chain(e);
    };
    let mut suggestion = format!("{command_line} --server 127.0.0.1:8080");
    if let Some(db) = &args.db {
        suggestion.push_str(&format!(" --db {}", quoted(db)));
    }
    let key = key_file(Path::new(path));
    format!(
        "`{path}` is in use by another process, most likely a `harnessx serve` on it; send the \
         command to that server instead (at the address it printed, 127.0.0.1:8080 unless \
         --bind or --port said otherwise):\n  {suggestion}\nIts API key is read from `{}` when \
         it generated one; otherwise set {API_KEY_ENV}.",
        key.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_servers_are_told_apart() {
        assert!(is_loopback("127.0.0.1:8080"));
        assert!(is_loopback("http://localhost:9000"));
        assert!(is_loopback("[::1]:8080"));
        assert!(!is_loopback("10.0.0.1:8080"));
        assert!(!is_loopback("https://harnessx.example.com"));
    }

    #[test]
    fn a_conversation_page_is_on_the_console() {
        let place = Place {
            flags: String::new(),
            console: Some("http://127.0.0.1:8080/console/".into()),
        };
        assert_eq!(
            place.conversation_page("a b").unwrap(),
            "http://127.0.0.1:8080/console/#/conversations/a%20b"
        );
    }
}
