//! Parsing the command line (by hand: a handful of subcommands and flags). Each command takes
//! its own options; one given to the wrong command, or misspelt, is named with what to do.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::logs::LogFormat;

pub(crate) use super::help::USAGE;

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
    /// `runs [--agent NAME] [--state STATE] [--limit N]`.
    Runs {
        /// `--agent`.
        agent: Option<String>,
        /// `--state`.
        state: Option<String>,
        /// `--limit`.
        limit: Option<u32>,
    },
    /// `show RUN`.
    Show {
        /// The run.
        run: i64,
    },
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
    /// `recover RUN CHOICE [TEXT]`.
    Recover {
        /// The run.
        run: i64,
        /// `took-effect`, `run-again` or `skip`.
        choice: String,
        /// The result (`took-effect`) or the note (`skip`).
        text: Option<String>,
    },
    /// `cancel RUN`.
    Cancel {
        /// The run.
        run: i64,
    },
    /// `--version`.
    Version,
    /// `help [COMMAND]`, `COMMAND --help`.
    Help {
        /// The command asked about (`None`: the whole usage).
        topic: Option<String>,
    },
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
    /// An approval decision (`allow`, `conversation`, `deny`).
    Decision(String),
}

/// The commands, in the order the usage lists them.
const COMMANDS: [&str; 10] = [
    "serve", "run", "runs", "show", "answer", "approve", "recover", "cancel", "backup", "help",
];

/// Options taking a value.
const VALUED: [&str; 14] = [
    "--config",
    "--bind",
    "--port",
    "--db",
    "--server",
    "--api-key",
    "--log-format",
    "--conversation",
    "--select",
    "--decision",
    "--agent",
    "--state",
    "--limit",
    "--older-than",
];

/// Options taking none.
const SWITCHES: [&str; 1] = ["--detach"];

/// The options of a client command (one talking to a server).
const CLIENT: [&str; 5] = ["--server", "--api-key", "--db", "--config", "--log-format"];

/// The options `command` takes.
fn options_of(command: &str) -> Vec<&'static str> {
    let own: &[&str] = match command {
        "serve" => &["--config", "--bind", "--port", "--db", "--log-format"],
        "run" => &["--conversation", "--detach"],
        "runs" => &["--agent", "--state", "--limit", "--older-than"],
        "backup" => &["--config", "--db"],
        "answer" => &["--select", "--decision"],
        _ => &[],
    };
    let mut all = own.to_vec();
    if command != "serve" && command != "backup" {
        all.extend(CLIENT);
    }
    all
}

/// The run states a filter may name.
const STATES: [&str; 6] = [
    "queued",
    "running",
    "waiting_input",
    "completed",
    "failed",
    "cancelled",
];

/// The closest known option to a misspelt one.
fn near_option(given: &str) -> Option<&'static str> {
    VALUED
        .iter()
        .chain(SWITCHES.iter())
        .chain(["--help", "--version"].iter())
        .map(|o| (strsim::levenshtein(given, o), *o))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, o)| o)
}

impl Args {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut out = Args {
            command: Command::Help { topic: None },
            config: None,
            bind: None,
            db: None,
            server: None,
            api_key: None,
            log_format: LogFormat::Text,
        };
        let mut positional = Vec::new();
        let mut flags: Vec<(&'static str, Option<String>)> = Vec::new();
        let (mut help, mut version) = (false, false);
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "-h" | "--help" => help = true,
                "-V" | "--version" => version = true,
                "--" => positional.extend(it.by_ref()),
                flag if flag.starts_with("--") => {
                    let (name, inline) = match flag.split_once('=') {
                        Some((n, v)) => (n, Some(v.to_owned())),
                        None => (flag, None),
                    };
                    if let Some(known) = VALUED.iter().find(|v| **v == name) {
                        let value = match inline {
                            Some(v) => v,
                            None => it.next().ok_or_else(|| format!("{known} needs a value"))?,
                        };
                        flags.push((known, Some(value)));
                    } else if let Some(known) = SWITCHES.iter().find(|v| **v == name) {
                        if inline.is_some() {
                            return Err(format!("{known} takes no value"));
                        }
                        flags.push((known, None));
                    } else {
                        return Err(match near_option(name) {
                            Some(guess) => {
                                format!("unknown option `{name}`; did you mean {guess}?")
                            }
                            None => format!("unknown option `{name}`"),
                        });
                    }
                }
                _ => positional.push(arg),
            }
        }
        let mut pos = positional.into_iter().peekable();
        let name = pos.next();
        if let Some(name) = &name
            && !COMMANDS.contains(&name.as_str())
        {
            let guess = COMMANDS
                .iter()
                .map(|c| (strsim::levenshtein(name, c), *c))
                .filter(|(d, _)| *d <= 2)
                .min_by_key(|(d, _)| *d);
            return Err(match guess {
                Some((_, c)) => format!("unknown command `{name}`; did you mean `{c}`?"),
                None => format!("unknown command `{name}`"),
            });
        }
        if version && name.is_none() && !help {
            out.command = Command::Version;
            return Ok(out);
        }
        if help || name.is_none() || name.as_deref() == Some("help") {
            let topic = match name.as_deref() {
                Some("help") => pos.next(),
                other => other.map(str::to_owned),
            };
            if let Some(t) = &topic
                && !COMMANDS.contains(&t.as_str())
            {
                return Err(format!("no command is named `{t}`"));
            }
            out.command = Command::Help { topic };
            return Ok(out);
        }
        let name = name.unwrap_or_default();
        if version {
            return Err(format!(
                "--version is asked alone (`harnessx --version`), not with `{name}`"
            ));
        }
        let allowed = options_of(&name);
        let (mut detach, mut conversation, mut select, mut decision) =
            (false, None, Vec::new(), None);
        let (mut agent, mut state, mut limit) = (None, None, None);
        let mut port: Option<u16> = None;
        let mut older_than: Option<Duration> = None;
        for (flag, value) in flags {
            if !allowed.contains(&flag) {
                return Err(format!(
                    "{flag} is not an option of `{name}`; `harnessx {name} --help` lists its options"
                ));
            }
            let value = value.unwrap_or_default();
            match flag {
                "--config" => out.config = Some(value.into()),
                "--bind" => {
                    out.bind = Some(value.parse().map_err(|_| {
                        format!(
                            "--bind `{value}` is not an address and port, such as 127.0.0.1:8080"
                        )
                    })?);
                }
                "--port" => {
                    port = Some(value.parse().map_err(|_| {
                        format!("--port `{value}` is not a port number (1 to 65535), such as 8080")
                    })?);
                }
                "--db" => out.db = Some(value),
                "--server" => out.server = Some(value),
                "--api-key" => out.api_key = Some(value),
                "--log-format" => out.log_format = LogFormat::parse(&value)?,
                "--conversation" => conversation = Some(value),
                "--select" => select.push(value),
                "--decision" => decision = Some(value),
                "--detach" => detach = true,
                "--older-than" => older_than = Some(parse_age(&value)?),
                "--agent" => agent = Some(value),
                "--state" => {
                    let v = value.trim().to_ascii_lowercase();
                    if !STATES.contains(&v.as_str()) {
                        return Err(format!(
                            "--state `{value}` is not a run state; give one of {}",
                            STATES.join(", ")
                        ));
                    }
                    state = Some(v);
                }
                "--limit" => {
                    limit = Some(
                        value
                            .parse::<u32>()
                            .ok()
                            .filter(|n| (1..=200).contains(n))
                            .ok_or_else(|| {
                                format!("--limit `{value}` is not a number from 1 to 200")
                            })?,
                    );
                }
                _ => {}
            }
        }
        if let Some(port) = port {
            if out.bind.is_some() {
                return Err("give --bind or --port, not both".into());
            }
            out.bind = Some(SocketAddr::from(([127, 0, 0, 1], port)));
        }
        if out.server.is_some() && out.config.is_some() {
            return Err(
                "--config is for a server this command starts; with --server the server's own \
                 configuration applies, so drop --config"
                    .into(),
            );
        }
        out.command = match name.as_str() {
            "serve" => Command::Serve,
            "runs" if pos.next_if(|p| p == "prune").is_some() => {
                if agent.is_some() || state.is_some() || limit.is_some() {
                    return Err(
                        "runs prune takes --older-than only; --agent, --state and --limit filter \
                         `runs`"
                            .into(),
                    );
                }
                Command::Prune {
                    older_than: older_than.ok_or(
                        "runs prune needs --older-than AGE, such as --older-than 30d: the runs \
                         that finished more than that long ago are deleted",
                    )?,
                }
            }
            "runs" => {
                if let Some(other) = pos.next() {
                    return Err(format!(
                        "unknown command `runs {other}`; `runs` lists runs, `runs prune` deletes \
                         finished ones"
                    ));
                }
                if older_than.is_some() {
                    return Err("--older-than goes with `runs prune`".into());
                }
                Command::Runs {
                    agent,
                    state,
                    limit,
                }
            }
            "backup" => Command::Backup {
                file: pos
                    .next()
                    .ok_or("backup needs a FILE to write the copy to, such as harnessx-backup.db")?
                    .into(),
            },
            "run" => {
                let agent = pos.next().ok_or("run needs an AGENT and a \"prompt\"")?;
                let prompt = pos.next().ok_or("run needs a \"prompt\" after the agent")?;
                Command::Run {
                    agent,
                    prompt,
                    detach,
                    conversation,
                }
            }
            "show" => Command::Show {
                run: run_id(pos.next().ok_or("show needs a RUN id")?)?,
            },
            "cancel" => Command::Cancel {
                run: run_id(pos.next().ok_or("cancel needs a RUN id")?)?,
            },
            "approve" => {
                let run = run_id(pos.next().ok_or("approve needs a RUN id")?)?;
                let decision = pos
                    .next()
                    .ok_or("approve needs a decision after the run: allow, conversation or deny")?;
                Command::Approve { run, decision }
            }
            "recover" => {
                let run = run_id(pos.next().ok_or("recover needs a RUN id")?)?;
                let choice = pos.next().ok_or(
                    "recover needs a choice after the run: took-effect, run-again or skip",
                )?;
                let text: Vec<String> = pos.by_ref().collect();
                Command::Recover {
                    run,
                    choice,
                    text: (!text.is_empty()).then(|| text.join(" ")),
                }
            }
            "answer" => {
                let run = run_id(pos.next().ok_or("answer needs a RUN id")?)?;
                let text: Vec<String> = pos.by_ref().collect();
                let reply = match (decision, select.is_empty(), text.is_empty()) {
                    (Some(d), true, true) => Reply::Decision(d),
                    (None, false, true) => Reply::Select(std::mem::take(&mut select)),
                    (None, true, false) => Reply::Text(text.join(" ")),
                    _ => {
                        return Err(
                            "answer takes TEXT, or --select LABEL (one or more), not both".into(),
                        );
                    }
                };
                Command::Answer { run, reply }
            }
            _ => Command::Help { topic: None },
        };
        if let Some(extra) = pos.next() {
            return Err(format!(
                "unexpected argument `{extra}`; put a prompt or text of several words in quotes"
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Args, String> {
        Args::parse(a.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn each_command_takes_its_own_options() {
        let runs = parse(&[
            "runs",
            "--agent",
            "helper",
            "--state",
            "Waiting_Input",
            "--limit=5",
        ])
        .unwrap();
        assert_eq!(
            runs.command,
            Command::Runs {
                agent: Some("helper".into()),
                state: Some("waiting_input".into()),
                limit: Some(5)
            }
        );
        assert_eq!(
            parse(&["run", "a", "hi", "--select", "x"]).unwrap_err(),
            "--select is not an option of `run`; `harnessx run --help` lists its options"
        );
        assert_eq!(
            parse(&["serve", "--server", "x"]).unwrap_err(),
            "--server is not an option of `serve`; `harnessx serve --help` lists its options"
        );
        assert_eq!(
            parse(&["runs", "--sever", "x"]).unwrap_err(),
            "unknown option `--sever`; did you mean --server?"
        );
        assert_eq!(
            parse(&["runs", "--state", "done"]).unwrap_err(),
            "--state `done` is not a run state; give one of queued, running, waiting_input, \
             completed, failed, cancelled"
        );
        assert_eq!(
            parse(&["runs", "--limit", "0"]).unwrap_err(),
            "--limit `0` is not a number from 1 to 200"
        );
        assert_eq!(parse(&["show"]).unwrap_err(), "show needs a RUN id");
        assert_eq!(
            parse(&["cancel", "x"]).unwrap_err(),
            "`x` is not a run id (a positive integer)"
        );
        assert_eq!(
            parse(&["shwo", "1"]).unwrap_err(),
            "unknown command `shwo`; did you mean `show`?"
        );
        assert_eq!(
            parse(&["run", "a", "hi", "there"]).unwrap_err(),
            "unexpected argument `there`; put a prompt or text of several words in quotes"
        );
        assert_eq!(
            parse(&["runs", "--server", "h:1", "--config", "c.toml"]).unwrap_err(),
            "--config is for a server this command starts; with --server the server's own \
             configuration applies, so drop --config"
        );
        assert_eq!(
            parse(&["answer", "1", "x", "--select", "y"]).unwrap_err(),
            "answer takes TEXT, or --select LABEL (one or more), not both"
        );
        assert_eq!(
            parse(&["--detach=1"]).unwrap_err(),
            "--detach takes no value"
        );
        assert_eq!(
            parse(&["runs", "--agent"]).unwrap_err(),
            "--agent needs a value"
        );
        assert_eq!(
            parse(&["runs", "--version"]).unwrap_err(),
            "--version is asked alone (`harnessx --version`), not with `runs`"
        );
        assert_eq!(
            parse(&["recover", "3"]).unwrap_err(),
            "recover needs a choice after the run: took-effect, run-again or skip"
        );
        assert_eq!(
            parse(&["recover", "3", "skip", "not", "needed"])
                .unwrap()
                .command,
            Command::Recover {
                run: 3,
                choice: "skip".into(),
                text: Some("not needed".into())
            }
        );
    }

    #[test]
    fn help_is_asked_per_command() {
        assert_eq!(
            parse(&["run", "--help"]).unwrap().command,
            Command::Help {
                topic: Some("run".into())
            }
        );
        assert_eq!(
            parse(&["help", "show"]).unwrap().command,
            Command::Help {
                topic: Some("show".into())
            }
        );
        assert_eq!(parse(&[]).unwrap().command, Command::Help { topic: None });
        assert_eq!(
            parse(&["help", "nope"]).unwrap_err(),
            "no command is named `nope`"
        );
        for command in COMMANDS {
            assert!(
                super::super::help::page(command).is_some(),
                "{command} has no help page"
            );
        }
    }
}
