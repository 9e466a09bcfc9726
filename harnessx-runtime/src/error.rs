//! What can go wrong: [`StoreError`] (the store failed), [`InputError`] (an answer, decision or
//! cancel that does not fit the run; nothing was changed) and [`RuntimeError`] (everything a
//! caller of the runtime can get).

use crate::types::{RunId, RunState};

/// The store failed. A run whose step cannot be written fails with this message; nothing the
/// store acknowledged before is lost.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database reported an error.
    #[error("the run store failed while {context}: {message}")]
    Backend {
        /// What the store was doing.
        context: String,
        /// The database's message.
        message: String,
    },
    /// Another process holds the store (the SQLite store is single-process).
    #[error(
        "the run store `{path}` is open in another process (its lock file `{path}-lock` is held); \
         stop that process, or use one store per process"
    )]
    Locked {
        /// The database path.
        path: String,
    },
    /// This worker's lease on the run was taken over (it was presumed dead); its write was
    /// refused so the run's new owner is not overwritten.
    #[error("{run}: this worker no longer holds the run's lease; the write was refused")]
    Fenced {
        /// The run.
        run: RunId,
    },
    /// A stored row could not be read back.
    #[error("the run store holds an unreadable {what}: {message}")]
    Corrupt {
        /// Which row.
        what: String,
        /// Why.
        message: String,
    },
    /// The database was written by a newer release.
    #[error(
        "the run store's schema is version {found}, newer than this release knows ({known}); \
         upgrade harnessx-runtime"
    )]
    TooNew {
        /// The version found.
        found: i64,
        /// The newest version this release knows.
        known: i64,
    },
    /// The store's thread stopped.
    #[error("the run store is closed")]
    Closed,
    /// A connection setting of the PostgreSQL store is invalid (a `sslmode` that is not one, a
    /// `sslrootcert` file that cannot be read); nothing was connected.
    #[error("the PostgreSQL setting `{setting}` {problem}")]
    Setting {
        /// The setting, by its libpq name (`sslmode`, `sslrootcert`).
        setting: String,
        /// What is wrong with its value, and what to give instead.
        problem: String,
    },
    /// The PostgreSQL server failed a TLS check that `sslmode` asks for, or offers no TLS where
    /// it is required. Such a failure is final: it is reported at once, not retried.
    #[error("cannot connect to PostgreSQL at `{host}` over TLS: {problem}")]
    Tls {
        /// The host connected to, as given (several are joined with `,`).
        host: String,
        /// Which check failed, and what to do.
        problem: String,
    },
}

impl StoreError {
    pub(crate) fn backend(context: impl Into<String>, e: impl std::fmt::Display) -> Self {
        Self::Backend {
            context: context.into(),
            message: e.to_string(),
        }
    }
}

/// An answer, decision or cancel that does not fit the run. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// No run has this id.
    #[error("{0} does not exist; check the run id")]
    UnknownRun(RunId),
    /// The run is not waiting for input (already answered, finished, or never asked).
    #[error("{run} is {state}, not waiting for input; nothing was changed")]
    NotWaiting {
        /// The run.
        run: RunId,
        /// Its state.
        state: RunState,
    },
    /// The run waits for something else.
    #[error("{run} waits for {waits_for}, not {given}; {hint}")]
    WrongKind {
        /// The run.
        run: RunId,
        /// What it waits for.
        waits_for: &'static str,
        /// What was given.
        given: &'static str,
        /// What to call instead.
        hint: &'static str,
    },
    /// The answer does not fit the question.
    #[error("the answer to {run}'s question does not fit it: {message}; nothing was changed")]
    Invalid {
        /// The run.
        run: RunId,
        /// The field and the problem.
        message: String,
    },
    /// Arguments a person edited for an approval do not fit (the tool's input schema, or the
    /// decision: a denied call takes none).
    #[error("the edited arguments for {run}'s `{tool}` call cannot be used: {}; nothing was changed", arguments_problem(.field.as_deref(), .problem))]
    InvalidArguments {
        /// The run.
        run: RunId,
        /// The tool the call is for.
        tool: String,
        /// The field, by path (`path`, `items[0].name`); `None` for the arguments as a whole.
        field: Option<String>,
        /// What is wrong, and what to do.
        problem: String,
    },
    /// A message was refused because the conversation's run is still going (the `reject`
    /// strategy).
    #[error(
        "conversation `{conversation}` is busy: {run} is {state}; wait for it to end, cancel \
         it, or send with the `enqueue` or `interrupt` strategy"
    )]
    ConversationBusy {
        /// The conversation.
        conversation: String,
        /// Its run that is still going.
        run: RunId,
        /// That run's state.
        state: RunState,
    },
    /// An idempotency key was reused with another request: it belongs to a run started with
    /// different values.
    #[error(
        "the Idempotency-Key was used for {run} with a different {field}; send the same request \
         to get that run back, or a new key for a new run"
    )]
    IdempotencyMismatch {
        /// The run the key started.
        run: RunId,
        /// The first field that differs (`agent`, `input` or `conversation`).
        field: &'static str,
    },
    /// The run already ended.
    #[error("{run} is already {state}; it cannot be cancelled")]
    Finished {
        /// The run.
        run: RunId,
        /// Its state.
        state: RunState,
    },
}

/// Everything a caller of the runtime can get.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The input does not fit the run.
    #[error(transparent)]
    Input(#[from] InputError),
    /// No agent has this name.
    #[error(
        "no agent named `{0}` is registered; register it with `.agent(\"{0}\", ..)` on the \
         runtime builder of every worker"
    )]
    UnknownAgent(String),
    /// The agent catalog could not say which version to run.
    #[error("reading the agent catalog failed: {0}")]
    Catalog(String),
    /// No conversation has this id.
    #[error("conversation `{0}` does not exist; check the id")]
    UnknownConversation(String),
    /// The builder was misconfigured.
    #[error("invalid runtime configuration: {0}")]
    Config(String),
}

/// `arguments.{field}: {problem}`, or `arguments: {problem}` for the arguments as a whole.
fn arguments_problem(field: Option<&str>, problem: &str) -> String {
    match field {
        Some(field) => format!("`arguments.{field}`: {problem}"),
        None => format!("`arguments`: {problem}"),
    }
}
