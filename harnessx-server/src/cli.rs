//! The `harnessx` command line: `serve`, `run`, `runs`, `runs prune`, `answer`, `approve`,
//! `backup`.
//!
//! `run`, `runs`, `runs prune` and `answer` talk to `--server URL` (with `--api-key` or
//! `HARNESSX_API_KEY`); without `--server` they start the server embedded in the process, on the
//! store of `--db` (default `harnessx.db`) and the agents of `--config` (or the offline agent).
//! `runs prune` goes through the API (`POST /v2/runs/prune`) either way, so it deletes the same
//! way the server's own retention does, on SQLite or PostgreSQL, against a remote server too.
//! `backup FILE` copies the SQLite database `serve` would open while a server uses it.

mod args;
mod backup;
mod client;
mod run;
mod terminal;

use std::process::ExitCode;

use crate::config::Config;
use crate::server::{ServeOptions, keys_from_env, serve};
use harnessx::error::error_chain;

pub use args::{Args, Command, Reply};
pub use terminal::shown;

pub use crate::logs::LogFormat;

/// What `serve` tells the person starting it (where it listens, its database, its agents): a
/// line of text on stderr, or in JSON a log line of target `harnessx::serve` — the whole
/// stderr is then JSON lines.
fn announce(format: LogFormat, message: &str) {
    match format {
        LogFormat::Json => tracing::info!(target: "harnessx::serve", "{message}"),
        _ => eprintln!("{message}"),
    }
}

/// Runs the command line and returns the exit code.
pub fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("harnessx: {message}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    if matches!(args.command, Command::Help) {
        println!("{}", args::USAGE);
        return ExitCode::SUCCESS;
    }
    if matches!(args.command, Command::Version) {
        println!("harnessx {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    // Logs go to stderr, so a store that fails or a full disk is reported where an operator
    // looks.
    crate::logs::init(args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("harnessx: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(args)) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("harnessx: {}", shown(&message));
            ExitCode::FAILURE
        }
    }
}

fn load_config(args: &Args) -> Result<Config, String> {
    match &args.config {
        Some(path) => Config::load(path).map_err(|e| e.to_string()),
        None => Ok(Config::offline()),
    }
}

async fn dispatch(args: Args) -> Result<ExitCode, String> {
    if matches!(args.command, Command::Serve) {
        return serve_command(&args).await;
    }
    if let Command::Backup { file } = &args.command {
        let config = load_config(&args)?;
        return backup::backup(&config, args.db.clone(), file.clone()).await;
    }
    // A client command: a remote server, or one started here.
    let (client, embedded) = match &args.server {
        Some(url) => {
            let key = args
                .api_key
                .clone()
                .or_else(|| keys_from_env().into_iter().next())
                .ok_or("no API key: give --api-key or set HARNESSX_API_KEY")?;
            crate::logs::hide([key.clone()]);
            (client::Client::new(url, &key)?, None)
        }
        None => {
            let key = random_key();
            let config = load_config(&args)?;
            crate::logs::hide(config_secrets(&config, &args));
            crate::logs::hide([key.clone()]);
            let mut options = ServeOptions::default()
                .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
                .api_key(key.clone());
            options.database = args.db.clone();
            let running = serve(&config, options).await.map_err(|e| error_chain(&e))?;
            let url = format!("http://{}", running.addr);
            (client::Client::new(&url, &key)?, Some(running))
        }
    };
    let outcome = match args.command {
        Command::Run {
            agent,
            prompt,
            detach,
            conversation,
        } => run::run(&client, &agent, &prompt, conversation, detach).await,
        Command::Runs => run::list(&client).await,
        Command::Prune { older_than } => run::prune(&client, older_than).await,
        Command::Answer { run, reply } => run::answer(&client, run, reply).await,
        Command::Approve { run, decision } => {
            run::answer(&client, run, args::Reply::Decision(decision)).await
        }
        Command::Serve | Command::Help | Command::Version | Command::Backup { .. } => {
            Ok(ExitCode::SUCCESS)
        }
    };
    // The embedded server's workers stop before the process does: a run they were driving (a
    // detached run, or one an answer resumed) goes back to the queue as last journaled for the
    // next start to resume, never cut off halfway by the async runtime's own shutdown.
    if let Some(embedded) = embedded {
        embedded.stop(std::time::Duration::from_secs(5)).await;
    }
    outcome
}

/// The secrets the configuration and the command line hold: API keys, connectors' environment
/// and header values, the database's password.
fn config_secrets(config: &Config, args: &Args) -> Vec<String> {
    let mut secrets: Vec<String> = config
        .server
        .api_keys
        .iter()
        .map(|k| k.get_ref().clone())
        .collect();
    for connector in config.connectors.values() {
        secrets.extend(connector.env.values().cloned());
        for value in connector.headers.values() {
            // `Bearer <token>`: the token may be logged alone.
            secrets.extend(value.split_whitespace().map(str::to_owned));
            secrets.push(value.clone());
        }
    }
    let databases = [
        args.db.clone(),
        config.store.postgres.as_ref().map(|p| p.get_ref().clone()),
    ];
    secrets.extend(
        databases
            .iter()
            .flatten()
            .flat_map(|db| crate::logs::database_password(db)),
    );
    secrets.extend(args.api_key.clone());
    secrets
}

fn random_key() -> String {
    let bytes: [u8; 24] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn serve_command(args: &Args) -> Result<ExitCode, String> {
    let config = load_config(args)?;
    crate::logs::hide(config_secrets(&config, args));
    let mut options = ServeOptions {
        bind: args.bind,
        database: args.db.clone(),
        api_keys: keys_from_env(),
        ..ServeOptions::default()
    };
    // The same policy as `[server] api_keys`: a short key is too easy to guess.
    if let Some(short) = options.api_keys.iter().find(|k| k.chars().count() < 16) {
        return Err(format!(
            "HARNESSX_API_KEY or HARNESSX_API_KEYS holds a key of {} characters; an API key \
             shorter than 16 characters is too easy to guess, so use a long random string",
            short.chars().count()
        ));
    }
    if config.server.api_keys.is_empty() && options.api_keys.is_empty() {
        if args.log_format == LogFormat::Json {
            return Err(
                "no API key is configured; with --log-format json the server does not write a \
                 generated key into its log, so set HARNESSX_API_KEY (or HARNESSX_API_KEYS, or \
                 `[server] api_keys` in the configuration)"
                    .into(),
            );
        }
        let key = random_key();
        eprintln!(
            "No API key is configured (`[server] api_keys`, HARNESSX_API_KEY or HARNESSX_API_KEYS); \
             this run accepts the generated key:\n  {key}"
        );
        options.api_keys.push(key);
    }
    let running = serve(&config, options).await.map_err(|e| error_chain(&e))?;
    let format = args.log_format;
    announce(
        format,
        &format!("harnessx serving on http://{}", running.addr),
    );
    announce(format, &format!("database: {}", running.database.display()));
    let agents = running
        .state
        .agents
        .names()
        .await
        .map_err(|e| e.to_string())?
        .join(", ");
    announce(format, &format!("agents: {agents}"));
    let stop = async {
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .map_err(|e| e.to_string())?;
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        Ok::<(), String>(())
    };
    stop.await?;
    announce(format, "stopping");
    running.stop(std::time::Duration::from_secs(5)).await;
    Ok(ExitCode::SUCCESS)
}
