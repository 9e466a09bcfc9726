//! # harnessx-runtime — durable agent runs
//!
//! An agent run that survives its process: every step is journaled in a store before the run
//! goes on, a run that needs a person pauses without holding anything, and a crash at any
//! instant loses nothing acknowledged and redoes no finished step.
//!
//! ## One loop
//! There is no second agent loop here. A worker builds the agent and drives
//! [`Agent::run_journaled`](harnessx::Agent::run_journaled) — the loop of
//! [`Agent::run`](harnessx::Agent::run) — through a store-backed
//! [`Journal`](harnessx::journal::Journal): a recorded model turn is read back instead of asked
//! again; a tool call is written *started* before its handler runs and *finished* after, and a
//! finished call answers from the journal. Each of those writes is one transaction that also
//! carries the run's events (text deltas coalesced per turn).
//!
//! ## Runs, agents by name, workers
//! [`Runtime::builder`] takes a [`RunStore`], the agents by name (handlers are code, so every
//! worker process registers the same agents) and a number of workers. [`Runtime::start_run`]
//! queues a run ([`StartRun`]: agent, input, conversation, idempotency key; a key used before
//! returns that run); an idle worker is woken (no polling), claims it under a lease and drives
//! it. [`RunState`]: `queued` → `running` → `completed` / `failed` / `cancelled`, or
//! `waiting_input`.
//!
//! ```
//! use std::time::Duration;
//! use harnessx::model::TestModel;
//! use harnessx_builtin::ask_user::ask_user_questions_tool;
//! use harnessx_runtime::{Answer, QuestionAnswer, RunState, Runtime, SqliteStore, StartRun};
//! use serde_json::json;
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let question = json!({"questions": [{"header": "Format", "question": "CSV or JSON?",
//!     "options": [{"label": "CSV"}, {"label": "JSON"}]}]});
//! // The runtime builds the agent once, so its TestModel gives the resumed run the next answer.
//! let model = TestModel::new().then_call("ask_user", question).then_reply("Exported.");
//! let runtime = Runtime::builder()
//!     .store(SqliteStore::in_memory()?) // or SqliteStore::open("runs.db")?
//!     .agent("support", move |b| {
//!         b.model(model)
//!             .tool(ask_user_questions_tool(|_| async { None }, Duration::from_secs(600)))
//!     })
//!     .workers(2)
//!     .build()?;
//! let run = runtime.start_run(StartRun::new("support", "Export my data").conversation("c1")).await?;
//! // The run pauses on the question: no task, no worker, only rows.
//! let waiting = runtime.settled(run.id).await?;
//! assert_eq!(waiting.state, RunState::WaitingInput);
//! assert!(runtime.conversation("c1").await?.pending_question.is_some());
//! runtime.answer(run.id, Answer::Selections { answers: vec![QuestionAnswer::selected(["JSON"])] }).await?;
//! let done = runtime.settled(run.id).await?;
//! assert_eq!(done.result.unwrap().output, "Exported.");
//! # Ok(()) }
//! ```
//!
//! ## Waiting for people
//! `ask_user` (both forms), an ASK approval and a recovery question end the worker's part with
//! [`RunView::needs_input`] and state `waiting_input`; the run then holds nothing but rows.
//! [`Runtime::answer`] (selections per question, free text, or a recovery choice) and
//! [`Runtime::decide`] (allow once / allow for the conversation / deny) are checked against
//! what is pending in the same transaction that records them — a wrong shape, a second answer
//! or an unknown run is an [`InputError`] and changes nothing — and re-queue the run. "Allow for
//! the conversation" is stored and reused by the conversation's later runs. An allow may carry
//! arguments a person edited ([`Decide::arguments`]): they are checked against the tool's input
//! schema (kept on the approval request) before anything is recorded, and the call runs with
//! them; the `answered` event shows them, and who decided ([`Decide::by`]). A question expires
//! after its window (600 s, `ASK_USER_TIMEOUT_SECONDS`, or
//! [`RuntimeBuilder::question_window`]): a timer sleeping until the earliest deadline answers
//! it "expired", and the model is told so. A new message to a conversation whose run waits on a
//! question ([`Runtime::start_run`] with that conversation) is that question's free-text answer.
//!
//! ## Recovery by replay policy
//! A call started and never finished (its process died) is run again when its tool is `safe`
//! or `idempotent` (under its `ToolRetry`); a `manual` call instead asks a person whether it
//! took effect (optionally with its result), should run again, or should be skipped with a
//! note ([`RecoveryChoice`]). A `manual` call that times out in a durable run asks the same.
//!
//! A call interrupted by a crash may still be taking effect: a `run_bash` command outlives the
//! process that was killed. A program whose agents run commands calls
//! `harnessx_builtin::bash::reap_orphans()` before [`RuntimeBuilder::build`], so the commands a
//! dead process left on this host have ended before any run is resumed and anyone is asked
//! about them (`harnessx serve` does).
//!
//! A process stopping on purpose calls [`Runtime::shutdown`] before its tokio runtime goes: the
//! workers stop, a call in flight records nothing (it is not reported as crashed), and the runs
//! go back to the queue at once for another worker, or the next start, to resume by the same
//! rules. (A call cut off by the tokio runtime's own shutdown records nothing either.)
//!
//! ## Conversations, cancel, events
//! A conversation keeps the transcript of its completed runs ([`Runtime::conversation`]).
//! [`Runtime::cancel`] ends a queued or waiting run at once and fires a running run's call
//! cancellation tokens. Every event is stored with a per-run sequence number and the time it
//! was stored; [`Runtime::subscribe`] with the last sequence seen returns everything after it,
//! then live events. [`Runtime::conversations`] lists conversations by their latest run, newest
//! first.
//!
//! ## Stores
//! [`RunStore`] has small intention-named methods (`claim_next`, `append_step`,
//! `pause_for_input`, `answer`, `heartbeat`, ...), each one transaction; writes to a running
//! run carry its lease (owner and generation) and are refused once another worker took it over.
//! [`SqliteStore`] is the embedded default: rusqlite on its own thread, WAL, a file or memory,
//! `synchronous` NORMAL (survives any process crash; [`Synchronous::Full`] for power loss),
//! numbered migrations under `migrations/sqlite/`. A journal step is stored on the row of the
//! event that reports it and the lease is checked by a read, so a step's commit writes to one
//! table — about the cost of a bare one-row commit. A file store belongs to one process (an
//! exclusive lock file) and re-queues, as it opens, the runs a dead process left running.
//!
//! A queued run wakes one idle worker; a worker that claims a run while others are still queued
//! passes the wake-up on to the next idle one, so a burst of runs fans out without every idle
//! worker racing for each run, and the last one sends nobody to look at an empty queue.

mod answer;
mod catalog;
mod error;
mod journal;
mod observe;
mod runtime;
pub mod store;
mod types;
mod worker;

pub use catalog::AgentCatalog;
pub use error::{InputError, RuntimeError, StoreError};
/// The question and reply types (from `harnessx::journal`).
pub use harnessx::journal::{
    InputReply, PendingInput, PendingKind, QuestionAnswer, QuestionForm, RecoveryChoice,
    RecoveryReason, UserReply,
};
pub use observe::Observer;
pub use runtime::{
    ASK_USER_TIMEOUT_ENV, DEFAULT_IDEMPOTENCY_WINDOW, DEFAULT_QUESTION_WINDOW, Runtime,
    RuntimeBuilder, RuntimeStatus,
};
#[cfg(feature = "postgres")]
pub use store::{PostgresConfig, PostgresStore, SslMode};
pub use store::{RunStore, SqliteStore, Synchronous};
pub use types::{
    Answer, ConversationSummary, ConversationView, Decide, Decision, Multitask, RunEvent, RunId,
    RunState, RunView, StartRun, StoredEvent, TITLE_CHARS,
};
