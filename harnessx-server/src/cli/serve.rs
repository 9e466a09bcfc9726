//! `harnessx serve`: starts the server, and once it serves says where (its address, the
//! console's, the database, the agents), with which API key, and what in the configuration
//! looks wrong.

use std::process::ExitCode;

use harnessx::error::error_chain;

use crate::console::CONSOLE_PATH;
use crate::server::{KeptIn, ServeOptions, keys_from_env, serve};

use super::{Args, LogFormat, config_secrets, load_config};

/// What `serve` tells the person starting it (where it listens, its database, its agents): a
/// line of text on stderr, or in JSON a log line of target `harnessx::serve` — the whole
/// stderr is then JSON lines.
fn announce(format: LogFormat, message: &str) {
    match format {
        LogFormat::Json => tracing::info!(target: "harnessx::serve", "{message}"),
        _ => eprintln!("{message}"),
    }
}

/// A warning about the configuration: `warning: ...` on stderr, or a JSON log line.
fn warn(format: LogFormat, message: &str) {
    match format {
        LogFormat::Json => tracing::warn!(target: "harnessx::serve", "{message}"),
        _ => eprintln!("warning: {message}"),
    }
}

/// `harnessx serve`.
pub(crate) async fn serve_command(args: &Args) -> Result<ExitCode, String> {
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
        options.generate_key = true;
    }
    let running = serve(&config, options).await.map_err(|e| error_chain(&e))?;
    if let Some(generated) = &running.generated_key {
        crate::logs::hide([generated.key.clone()]);
    }
    let format = args.log_format;
    let base = format!("http://{}", running.addr);
    announce(format, &format!("harnessx serving on {base}"));
    announce(format, &format!("console: {base}{CONSOLE_PATH}"));
    announce(format, &format!("database: {}", running.database.display()));
    let agents = running
        .state
        .agents
        .names()
        .await
        .map_err(|e| e.to_string())?;
    announce(
        format,
        &format!(
            "agents: {}",
            if agents.is_empty() {
                "(none)".to_owned()
            } else {
                agents.join(", ")
            }
        ),
    );
    if let Some(generated) = &running.generated_key {
        let when = if generated.created {
            "generated now"
        } else {
            "generated on an earlier start"
        };
        let kept = match &generated.kept_in {
            KeptIn::File(path) => format!("kept in `{}`, readable only by you", path.display()),
            KeptIn::Database => "kept in the database, so every server on it accepts it".into(),
            _ => "kept nowhere: the database is in memory, so the next start has another".into(),
        };
        // Straight to the terminal, never into the log.
        eprintln!(
            "API key: {}\n  {when}, {kept}; give your own with HARNESSX_API_KEY or \
             `[server] api_keys`",
            generated.key
        );
    }
    for warning in &running.warnings {
        warn(format, warning);
    }
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
