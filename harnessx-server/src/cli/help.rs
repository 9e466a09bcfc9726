//! The command line's help: the whole usage, and each command's page (`harnessx run --help`,
//! `harnessx help run`).

/// The usage, shown by `harnessx`, `harnessx --help` and after a bad command line.
pub(crate) const USAGE: &str = "\
usage:
  harnessx serve [--config harnessx.toml] [--bind 127.0.0.1:8080 | --port 8080] [--db harnessx.db]
                 [--log-format text|json]
  harnessx run AGENT \"prompt\" [--conversation ID] [--detach]
  harnessx runs [--agent NAME] [--state STATE] [--limit N]
  harnessx runs prune --older-than AGE   (AGE: 30d, 12h, 45m or 90s; finished runs only)
  harnessx show RUN
  harnessx answer RUN (TEXT | --select LABEL [--select LABEL ...])
  harnessx approve RUN (allow | conversation | deny)
  harnessx recover RUN (took-effect [RESULT] | run-again | skip [NOTE])
  harnessx cancel RUN
  harnessx backup FILE [--config harnessx.toml] [--db harnessx.db]   (a SQLite database, live)
  harnessx help [COMMAND]        (or: harnessx COMMAND --help)
  harnessx --version
Every command but serve talks to a server: --server ADDRESS (127.0.0.1:8080 or http://...)
with --api-key KEY or HARNESSX_API_KEY; without --server it runs one in this process on the
database (--db, default harnessx.db) with the agents of --config (default: the offline agent
`assistant`).";

/// The options every client command takes.
const CLIENT_OPTIONS: &str = "\
where it runs:
  --server ADDRESS   a running `harnessx serve`: host:port (http:// is understood) or a URL
  --api-key KEY      the server's API key (or HARNESSX_API_KEY). For a server on this machine
                     that generated its key, the key kept in <db>.key is used (the database of
                     --db, HARNESSX_DATABASE_URL, or harnessx.db)
  --db PATH|URL      without --server: the database to run on in this process (a SQLite file,
                     default harnessx.db, or a postgresql:// URL; or HARNESSX_DATABASE_URL)
  --config FILE      without --server: the agents (default: the offline agent `assistant`)";

/// The help page of `command`, or `None` for a command that does not exist.
pub(crate) fn page(command: &str) -> Option<String> {
    let (usage, text, client) = match command {
        "serve" => (
            "harnessx serve [--config harnessx.toml] [--bind 127.0.0.1:8080 | --port 8080] \
             [--db harnessx.db] [--log-format text|json]",
            "Serves the /v2 HTTP API and the console. Without an API key configured
([server] api_keys, HARNESSX_API_KEY or HARNESSX_API_KEYS) it generates one on its first start
and keeps it with the database (<db>.key beside a SQLite file, in the database for PostgreSQL),
so later starts accept the same key. It prints the key, the database and the console's address
once it is serving. Problems in the configuration are reported here, naming their line.

  --config FILE       agents, connectors and settings (default: the offline agent `assistant`)
  --bind ADDR:PORT    where to listen (default 127.0.0.1:8080)
  --port N            listen on 127.0.0.1:N
  --db PATH|URL       a SQLite file (default harnessx.db) or a postgresql:// URL (or
                      HARNESSX_DATABASE_URL)
  --log-format FMT    text (default) or json lines on stderr, filtered by RUST_LOG",
            false,
        ),
        "run" => (
            "harnessx run AGENT \"prompt\" [--conversation ID] [--detach]",
            "Starts a run of AGENT and follows it: the model's text, its tool calls and their results.
A question is asked at the prompt: type an option's number or its label (in any case), several
separated by commas, or answer in your own words. An approval is asked as y (allow this call),
a (allow the tool for the rest of the conversation) or N (deny). When nobody can answer (stdin
is closed), the run is left waiting and the command says how to answer it later.

  --conversation ID   continue this conversation (a new one when absent)
  --detach            print the run's id and return at once",
            true,
        ),
        "runs" => (
            "harnessx runs [--agent NAME] [--state STATE] [--limit N]
       harnessx runs prune --older-than AGE",
            "Lists runs, newest first; `runs prune` deletes the runs that finished (completed,
failed or cancelled) more than AGE ago, with their events and journal, through the server's
API (POST /v2/runs/prune) as its own retention does. Runs queued, running or waiting are kept.

  --agent NAME       only the runs of this agent
  --state STATE      only runs in this state: queued, running, waiting_input, completed,
                     failed or cancelled
  --limit N          at most N runs (1 to 200; default 50)
  --older-than AGE   with `prune`: a whole number and a unit, such as 30d, 12h, 45m or 90s",
            true,
        ),
        "show" => (
            "harnessx show RUN",
            "Shows a run: its state, what it waits for (with the command that answers it), its
output or error, and its transcript.",
            true,
        ),
        "answer" => (
            "harnessx answer RUN (TEXT | --select LABEL [--select LABEL ...])",
            "Answers the question a run waits on: in words (TEXT), or by choosing options by their
labels (in any case; several --select for a question that takes several).

  --select LABEL   an option's label",
            true,
        ),
        "approve" => (
            "harnessx approve RUN (allow | conversation | deny)",
            "Decides the approval a run waits on: allow this call, allow the tool for the rest of
the conversation, or deny it.",
            true,
        ),
        "recover" => (
            "harnessx recover RUN (took-effect [RESULT] | run-again | skip [NOTE])",
            "Answers a recovery question: a call whose outcome is unknown (it was cut off, or timed
out) either took effect (RESULT: what it returned, when you know it), should run again, or is
skipped (NOTE: why, or what to do instead; the model is told).",
            true,
        ),
        "cancel" => (
            "harnessx cancel RUN",
            "Cancels a run: its running calls are stopped and it ends cancelled.",
            true,
        ),
        "backup" => (
            "harnessx backup FILE [--config harnessx.toml] [--db harnessx.db]",
            "Copies the SQLite database `harnessx serve` would open (its --db, the config's
[store] or HARNESSX_DATABASE_URL) to FILE, a new file, with SQLite's online backup: a running
server keeps serving meanwhile. For PostgreSQL use pg_dump -Fc (see the production guide).

  --config FILE   the configuration whose [store] names the database
  --db PATH       the SQLite file (default harnessx.db)",
            false,
        ),
        "help" => (
            "harnessx help [COMMAND]",
            "Shows the usage, or a command's help.",
            false,
        ),
        _ => return None,
    };
    let mut out = format!("usage: {usage}\n\n{text}");
    if client {
        out.push_str("\n\n");
        out.push_str(CLIENT_OPTIONS);
    }
    Some(out)
}
