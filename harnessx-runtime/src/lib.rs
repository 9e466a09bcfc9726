//! # harnessx-runtime — durable agent runs
//!
//! TOUR
#![doc(html_no_source)]

mod answer;
mod error;
mod journal;
mod runtime;
pub mod store;
mod types;
mod worker;

pub use error::{InputError, RuntimeError, StoreError};
/// The question and reply types (from `harnessx::journal`).
pub use harnessx::journal::{
    InputReply, PendingInput, PendingKind, QuestionAnswer, QuestionForm, RecoveryChoice,
    RecoveryReason, UserReply,
};
pub use runtime::{
    ASK_USER_TIMEOUT_ENV, DEFAULT_QUESTION_WINDOW, Runtime, RuntimeBuilder, RuntimeStatus,
};
#[cfg(feature = "postgres")]
pub use store::{PostgresConfig, PostgresStore};
pub use store::{RunStore, SqliteStore, Synchronous};
pub use types::{
    Answer, ConversationView, Decision, RunEvent, RunId, RunState, RunView, StartRun, StoredEvent,
};
