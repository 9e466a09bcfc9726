//! The `harnessx` binary's log on stderr: text lines (the default) or JSON lines
//! (`--log-format json`), filtered by `RUST_LOG` (default: warnings and errors).

use tracing_subscriber::EnvFilter;

/// The target of the lines `harnessx serve` writes as it starts and stops (where it listens,
/// its database, its agents): in JSON they are written whatever `RUST_LOG` says.
pub(crate) const SERVE_TARGET: &str = "harnessx::serve";

/// How the log is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogFormat {
    /// One line of text per event (`--log-format text`, the default).
    #[default]
    Text,
    /// One JSON object per line (`--log-format json`): `timestamp`, `level`, `target`,
    /// `message` and the event's fields at the top level, `span` (the innermost span: a
    /// request's holds `request_id`, a run's `run_id`) and `spans` (every enclosing one).
    Json,
}

impl LogFormat {
    /// `text` or `json`.
    ///
    /// ```
    /// use harnessx_server::cli::LogFormat;
    /// assert_eq!(LogFormat::parse("json"), Ok(LogFormat::Json));
    /// assert!(LogFormat::parse("yaml").unwrap_err().contains("text or json"));
    /// ```
    pub fn parse(given: &str) -> Result<Self, String> {
        match given {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!(
                "--log-format `{other}` is not a log format; give text or json"
            )),
        }
    }
}

/// Starts the log on stderr. A subscriber set already (a test harness) keeps its own.
pub(crate) fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let _ = match format {
        LogFormat::Text => builder.with_env_filter(filter).try_init(),
        LogFormat::Json => {
            let filter = match format!("{SERVE_TARGET}=info").parse() {
                Ok(serve) => filter.add_directive(serve),
                Err(_) => filter,
            };
            builder
                .json()
                .flatten_event(true)
                .with_current_span(true)
                .with_span_list(true)
                .with_env_filter(filter)
                .try_init()
        }
    };
}
