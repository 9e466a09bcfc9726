//! Parsing the command line (by hand: a few subcommands and flags).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::logs::LogFormat;

pub(crate) const USAGE: &str = "\
usage:
  harnessx serve [--config harnessx.toml] [--bind 127.0.0.1:8080 | --port 8080] [--db harnessx.db]
                 [--log-format text|json]
  harnessx run AGENT \"prompt\" [--conversation ID] [--detach]
  harnessx runs
  harnessx runs prune --older-than AGE       (AGE: 30d, 12h, 45m or 90s; finished runs only)
  harnessx answer RUN (TEXT | --select LABEL [--select LABEL ...])
  harnessx approve RUN (allow | conversation | deny)
  harnessx backup FILE [--config harnessx.toml] [--db harnessx.db]   (a SQLite database, live)
  harnessx --version
--db takes a SQLite file or a postgresql:// URL (or set HARNESSX_DATABASE_URL).
The log goes to stderr as text or JSON lines (--log-format), filtered by RUST_LOG.
client options: --server URL (or host:port) --api-key KEY (or HARNESSX_API_KEY); without
--server the command runs embedded on the database (--db, --config).";

/// A parsed command line.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Args {
    /// What to do.
    pub command: Command,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--bind`, or `--port` on 127.0.0.1.
    pub bind: Option<SocketAddr>,
    /// `--db`.
    pub db: Option<String>,
    /// `--server`.
    pub server: Option<String>,
    /// `--api-key`.
    pub api_key: Option<String>,
    /// `--log-format` (default text).
    pub log_format: LogFormat,
}

/// A subcommand.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Command {
    /// `serve`.
    Serve,
    /// `run AGENT PROMPT`.
    Run {
        /// The agent.
        agent: String,
        /// The prompt.
        prompt: String,
        /// `--detach`.
        detach: bool,
        /// `--conversation`.
        conversation: Option<String>,
    },
    /// `runs`.
    Runs,
    /// `answer RUN ...`.
    Answer {
        /// The run.
        run: i64,
        /// Free text, or the labels chosen.
        reply: Reply,
    },
    /// `approve RUN DECISION`.
    Approve {
        /// The run.
        run: i64,
        /// `allow`, `conversation` or `deny`.
        decision: String,
    },
    /// `--version`.
    Version,
    /// `help`.
    Help,
    /// `runs prune --older-than AGE`.
    Prune {
        /// Delete the runs that finished more than this long ago.
        older_than: Duration,
    },
    /// `backup FILE`.
    Backup {
        /// Where the copy goes (a new file).
        file: PathBuf,
    },
}

/// An answer given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Free text.
    Text(String),
    /// Labels chosen (one question).
    Select(Vec<String>),
    /// An approval decision (`allow`, `always`, `deny`).
    Decision(String),
}

impl Args {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut positional = Vec::new();
        let mut out = Args {
            command: Command::Help,
            config: None,
            bind: None,
            db: None,
            server: None,
            api_key: None,
            log_format: LogFormat::Text,
        };
        let (mut detach, mut conversation, mut select, mut decision) =
            (false, None, Vec::new(), None);
        let mut older_than: Option<Duration> = None;
        let mut port_given: Option<u16> = None;
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag} needs a value"));
            match arg.as_str() {
                "--config" => out.config = Some(value("--config")?.into()),
                "--bind" => {
                    let v = value("--bind")?;
                    out.bind = Some(v.parse().map_err(|_| {
                        format!("--bind `{v}` is not an address and port, such as 127.0.0.1:8080")
                    })?);
                }
                "--port" => {
                    let v = value("--port")?;
                    let port: u16 = v.parse().map_err(|_| {
                        format!("--port `{v}` is not a port number (1 to 65535), such as 8080")
                    })?;
                    port_given = Some(port);
                }
                "--db" => out.db = Some(value("--db")?),
                "--server" => out.server = Some(value("--server")?),
                "--api-key" => out.api_key = Some(value("--api-key")?),
                "--log-format" => out.log_format = LogFormat::parse(&value("--log-format")?)?,
                "--conversation" => conversation = Some(value("--conversation")?),
                "--select" => select.push(value("--select")?),
                "--decision" => decision = Some(value("--decision")?),
                "--older-than" => older_than = Some(parse_age(&value("--older-than")?)?),
                "--detach" => detach = true,
                "-h" | "--help" => return Ok(out),
                "-V" | "--version" => {
                    out.command = Command::Version;
                    return Ok(out);
                }
                flag if flag.starts_with("--") => return Err(format!("unknown option `{flag}`")),
                _ => positional.push(arg),
            }
        }
        if let Some(port) = port_given {
            if out.bind.is_some() {
                return Err("give --bind or --port, not both".into());
            }
            out.bind = Some(SocketAddr::from(([127, 0, 0, 1], port)));
        }
        let mut pos = positional.into_iter();
        out.command = match pos.next().as_deref() {
            None | Some("help") => Command::Help,
            Some("serve") => Command::Serve,
            Some("runs") => match pos.next().as_deref() {
                None => {
                    if older_than.is_some() {
                        return Err("--older-than goes with `runs prune`".into());
                    }
                    Command::Runs
                }
                Some("prune") => Command::Prune {
                    older_than: older_than.ok_or(
                        "runs prune needs --older-than AGE, such as --older-than 30d: the runs \
                         that finished more than that long ago are deleted",
                    )?,
                },
                Some(other) => {
                    return Err(format!(
                        "unknown command `runs {other}`; `runs` lists runs, `runs prune` deletes \
                         finished ones"
                    ));
                }
            },
            Some("backup") => Command::Backup {
                file: pos
                    .next()
                    .ok_or("backup needs a FILE to write the copy to, such as harnessx-backup.db")?
                    .into(),
            },
            Some("run") => {
                let agent = pos.next().ok_or("run needs an AGENT and a \"prompt\"")?;
                let prompt = pos.next().ok_or("run needs a \"prompt\" after the agent")?;
                Command::Run {
                    agent,
                    prompt,
                    detach,
                    conversation,
                }
            }
            Some("approve") => {
                let run = run_id(pos.next().ok_or("approve needs a RUN id")?)?;
                let decision = pos
                    .next()
                    .ok_or("approve needs a decision after the run: allow, conversation or deny")?;
                Command::Approve { run, decision }
            }
            Some("answer") => {
                let run = run_id(pos.next().ok_or("answer needs a RUN id")?)?;
                let text: Vec<String> = pos.by_ref().collect();
                let reply = match (decision, select.is_empty(), text.is_empty()) {
                    (Some(d), true, true) => Reply::Decision(d),
                    (None, false, true) => Reply::Select(std::mem::take(&mut select)),
                    (None, true, false) => Reply::Text(text.join(" ")),
                    _ => return Err(
                        "answer takes TEXT, or --select LABEL..., or --decision allow|conversation|deny"
                            .into(),
                    ),
                };
                Command::Answer { run, reply }
            }
            Some(other) => return Err(format!("unknown command `{other}`")),
        };
        if let Some(extra) = pos.next() {
            return Err(format!("unexpected argument `{extra}`"));
        }
        Ok(out)
    }
}

/// An age on the command line: a whole number and a unit, `d` (days), `h` (hours), `m`
/// (minutes) or `s` (seconds), at most [`MAX_RETAIN_DAYS`](crate::retention::MAX_RETAIN_DAYS).
pub(crate) fn parse_age(given: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "--older-than `{given}` is not an age; write a whole number and a unit, such as 30d \
             (days), 12h (hours), 45m (minutes) or 90s (seconds)"
        )
    };
    let text = given.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .filter(|i| *i > 0)
        .ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let unit: u64 = match unit {
        "d" => 86_400,
        "h" => 3_600,
        "m" => 60,
        "s" => 1,
        _ => return Err(bad()),
    };
    let most = crate::retention::MAX_RETAIN_DAYS.unsigned_abs() * 86_400;
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .filter(|s| *s <= most)
        .map(Duration::from_secs)
        .ok_or_else(|| {
            format!(
                "--older-than `{given}` is more than {} days; give a shorter age",
                crate::retention::MAX_RETAIN_DAYS
            )
        })
}

fn run_id(given: String) -> Result<i64, String> {
    given
        .parse::<i64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{given}` is not a run id (a positive integer)"))
}
