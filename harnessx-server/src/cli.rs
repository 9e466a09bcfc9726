//! The `harnessx` command line: `serve`, and the client commands `run`, `runs`, `show`,
//! `answer`, `approve`, `recover` and `cancel`.
//!
//! The client commands talk to `--server ADDRESS` (with `--api-key` or `HARNESSX_API_KEY`; for a
//! server on this machine that generated its key, the key kept beside its database) through the
//! typed [`crate::client::Client`]; without `--server` they start a server in the process, on
//! the database (`--db`, default `harnessx.db`) with the agents of `--config` (or the offline
//! agent). Each command has its page: `harnessx COMMAND --help`.

/// `println!` that does not panic when stdout is closed (`harnessx runs | head -1`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that does not panic when stdout is closed.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

mod args;
mod backup;
mod client;
mod help;
mod run;
mod runs;
mod serve;
mod terminal;

use std::process::ExitCode;

use crate::config::Config;

pub use args::{Args, Command, Reply};
pub use terminal::{quoted, shown};

pub use crate::logs::LogFormat;

/// Runs the command line and returns the exit code.
pub fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("harnessx: {}\n\n{}", shown(&message), args::USAGE);
            return ExitCode::from(2);
        }
    };
    match &args.command {
        Command::Help { topic } => {
            match topic.as_deref().and_then(help::page) {
                Some(page) => outln!("{page}"),
                None => outln!("{}", args::USAGE),
            }
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            outln!("harnessx {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        _ => {}
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

/// The command as typed, without the options saying where it runs.
fn command_line(command: &Command) -> String {
    let q = |s: &str| quoted(s);
    match command {
        Command::Run {
            agent,
            prompt,
            detach,
            conversation,
        } => {
            let mut line = format!("harnessx run {} {}", q(agent), q(prompt));
            if let Some(c) = conversation {
                line.push_str(&format!(" --conversation {}", q(c)));
            }
            if *detach {
                line.push_str(" --detach");
            }
            line
        }
        Command::Runs {
            agent,
            state,
            limit,
        } => {
            let mut line = "harnessx runs".to_owned();
            if let Some(a) = agent {
                line.push_str(&format!(" --agent {}", q(a)));
            }
            if let Some(s) = state {
                line.push_str(&format!(" --state {s}"));
            }
            if let Some(n) = limit {
                line.push_str(&format!(" --limit {n}"));
            }
            line
        }
        Command::Show { run } => format!("harnessx show {run}"),
        Command::Cancel { run } => format!("harnessx cancel {run}"),
        Command::Approve { run, decision } => format!("harnessx approve {run} {}", q(decision)),
        Command::Recover { run, choice, text } => {
            let mut line = format!("harnessx recover {run} {}", q(choice));
            if let Some(t) = text {
                line.push_str(&format!(" {}", q(t)));
            }
            line
        }
        Command::Answer { run, reply } => match reply {
            Reply::Text(t) => format!("harnessx answer {run} {}", q(t)),
            Reply::Select(labels) => {
                let mut line = format!("harnessx answer {run}");
                for l in labels {
                    line.push_str(&format!(" --select {}", q(l)));
                }
                line
            }
            Reply::Decision(d) => format!("harnessx answer {run} --decision {}", q(d)),
        },
        Command::Prune { older_than } => {
            format!("harnessx runs prune --older-than {}s", older_than.as_secs())
        }
        Command::Serve | Command::Version | Command::Help { .. } | Command::Backup { .. } => {
            "harnessx".to_owned()
        }
    }
}

async fn dispatch(args: Args) -> Result<ExitCode, String> {
    if matches!(args.command, Command::Serve) {
        return serve::serve_command(&args).await;
    }
    if let Command::Backup { file } = &args.command {
        let config = load_config(&args)?;
        return backup::backup(&config, args.db.clone(), file.clone()).await;
    }
    let line = command_line(&args.command);
    let (client, embedded, place) = client::connect(&args, || load_config(&args), &line).await?;
    let outcome = match args.command {
        Command::Run {
            agent,
            prompt,
            detach,
            conversation,
        } => run::run(&client, &place, &agent, &prompt, conversation, detach).await,
        Command::Runs {
            agent,
            state,
            limit,
        } => runs::list(&client, agent, state, limit).await,
        Command::Show { run } => runs::show(&client, &place, run).await,
        Command::Answer { run, reply } => runs::answer(&client, &place, run, reply).await,
        Command::Approve { run, decision } => runs::approve(&client, &place, run, &decision).await,
        Command::Recover { run, choice, text } => {
            runs::recover(&client, &place, run, &choice, text).await
        }
        Command::Cancel { run } => runs::cancel(&client, run).await,
        Command::Prune { older_than } => runs::prune(&client, older_than).await,
        Command::Serve | Command::Help { .. } | Command::Version | Command::Backup { .. } => {
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
