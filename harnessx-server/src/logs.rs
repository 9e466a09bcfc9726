//! The `harnessx` binary's log on stderr: text lines (the default) or JSON lines
//! (`--log-format json`), filtered by `RUST_LOG` (default: warnings and errors), each line
//! with URL credentials and the secrets the process knows hidden before it is written.

use std::borrow::Cow;
use std::io::Write;
use std::sync::RwLock;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// The shortest value hidden as a secret: a shorter one would also hide ordinary words.
const SHORTEST_SECRET: usize = 8;

/// What a log line shows instead of a secret.
const HIDDEN: &str = "[redacted]";

/// Environment variables whose values are secrets, by the end of their name.
const SECRET_ENV_SUFFIXES: [&str; 6] = [
    "_API_KEY",
    "_API_KEYS",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_DATABASE_URL",
];

/// The secrets this process knows (API keys, connectors' environment and header values, the
/// database's password, keys in the environment): never written to the log.
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Hides `secrets` (those of at least 8 characters) from every later log line.
pub(crate) fn hide(secrets: impl IntoIterator<Item = String>) {
    let mut known = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    for secret in secrets {
        let secret = secret.trim();
        if secret.chars().count() >= SHORTEST_SECRET && !known.iter().any(|k| k == secret) {
            known.push(secret.to_owned());
        }
    }
    // The longest first, so a secret holding another is hidden whole.
    known.sort_by_key(|k| std::cmp::Reverse(k.len()));
}

/// The values of environment variables named like secrets (`OPENAI_API_KEY`,
/// `HARNESSX_API_KEYS` split at commas, `..._TOKEN`, ...), and a database URL's password.
pub(crate) fn env_secrets() -> Vec<String> {
    let mut found = Vec::new();
    for (name, value) in std::env::vars() {
        let upper = name.to_ascii_uppercase();
        if !SECRET_ENV_SUFFIXES.iter().any(|s| upper.ends_with(s)) {
            continue;
        }
        if upper.ends_with("_DATABASE_URL") {
            found.extend(database_password(&value));
        } else {
            found.extend(value.split(',').map(str::to_owned));
        }
    }
    found
}

/// The password in a `postgresql://` URL (as written and percent-decoded) or a libpq
/// `key=value` string.
pub(crate) fn database_password(url: &str) -> Vec<String> {
    if url.contains("://") {
        let Ok(parsed) = url::Url::parse(url.trim()) else {
            return Vec::new();
        };
        let mut found: Vec<String> = parsed
            .query_pairs()
            .filter(|(k, _)| k == "password")
            .map(|(_, v)| v.into_owned())
            .collect();
        if let Some(p) = parsed.password() {
            found.push(p.to_owned());
            found.push(percent_decoded(p));
        }
        return found;
    }
    url.split_whitespace()
        .filter_map(|pair| pair.strip_prefix("password="))
        .map(|p| p.trim_matches('\'').to_owned())
        .collect()
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A log line as it is written: URL credentials and every known secret hidden.
pub(crate) fn shown(line: &str) -> Cow<'_, str> {
    let mut line = crate::redact::urls(line);
    let known = SECRETS.read().unwrap_or_else(|p| p.into_inner());
    for secret in known.iter() {
        if line.contains(secret.as_str()) {
            line = Cow::Owned(line.replace(secret.as_str(), HIDDEN));
        }
    }
    line
}

/// stderr, each event's line passed through [`shown`].
struct Redacting;

impl<'a> MakeWriter<'a> for Redacting {
    type Writer = RedactingWriter;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter
    }
}

/// Writes one formatted event (the formatter hands over a whole line at once).
struct RedactingWriter;

impl Write for RedactingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr()
            .lock()
            .write_all(shown(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

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
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    hide(env_secrets());
    let builder = tracing_subscriber::fmt()
        .with_writer(Redacting)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_lose_url_credentials_and_known_secrets_and_stay_json() {
        hide(["unit-test-secret-81f2".to_owned(), "short".to_owned()]);
        let line = r#"{"message":"url: \"http://u:pw@h/mcp?token=abc\" sent unit-test-secret-81f2","n":"short"}"#;
        let shown = shown(line);
        assert_eq!(
            shown,
            r#"{"message":"url: \"http://redacted@h/mcp?token=redacted\" sent [redacted]","n":"short"}"#
        );
        assert!(serde_json::from_str::<serde_json::Value>(&shown).is_ok());
    }

    #[test]
    fn database_passwords_are_found_in_urls_and_key_value_strings() {
        assert_eq!(
            database_password("postgresql://hx:p%40ss-word@db/hx"),
            ["p%40ss-word", "p@ss-word"]
        );
        assert_eq!(
            database_password("postgresql://hx@db/hx?password=s3cret-pw"),
            ["s3cret-pw"]
        );
        assert_eq!(
            database_password("host=db user=hx password='s3cret-pw'"),
            ["s3cret-pw"]
        );
        assert!(database_password("runs.db").is_empty());
    }
}
