//! The engine's half of the journal seam: what it asks and records about each call of a
//! durable run. The agent's [`Journal`](crate::journal::Journal) adds the model turns on top,
//! and the public paths of these items are in [`crate::journal`].

mod input;

use serde::{Deserialize, Serialize};

pub use input::{
    DurableInput, InputReply, PendingInput, PendingKind, RecoveryChoice, RecoveryReason,
};

use crate::output::{ToolCall, ToolResult};
use crate::tool::{BoxFuture, ReplayPolicy};

/// Where a step sits in a run: its model turn (1-based) and, for a tool call, the call's index
/// in that turn's batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StepKey {
    /// The model turn (1-based).
    pub turn: u32,
    /// The call's position in the turn's batch.
    pub index: u32,
}

impl StepKey {
    /// The key of call `index` of `turn`.
    pub fn call(turn: usize, index: usize) -> Self {
        Self {
            turn: u32::try_from(turn).unwrap_or(u32::MAX),
            index: u32::try_from(index).unwrap_or(u32::MAX),
        }
    }
}

/// What the journal knows about one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallRecord {
    /// Never started.
    New,
    /// Started (its handler may have run) and never finished.
    Interrupted {
        /// How many times it was recorded started.
        starts: u32,
    },
    /// Finished with this result.
    Finished(ToolResult),
}

/// A journal write that failed: the run cannot go on without losing the step, so it fails.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The store refused or failed the write.
    #[error("the run's journal could not be written ({step}): {message}")]
    Write {
        /// The step being written (`model turn 2`, `call 1.0 started`, ...).
        step: String,
        /// The store's reason.
        message: String,
    },
}

/// The calls of a run's journal, as the engine consults them at every call of a journaled
/// batch. Reads are answered from memory (the runtime loads the run's journal before resuming
/// it); writes are durable when their future resolves.
///
/// A durable runtime implements it together with [`Journal`](crate::journal::Journal), which
/// adds the model turns the agent loop reads and records.
pub trait CallJournal: Send + Sync + 'static {
    /// Whether this journal records steps. When false (a direct run) nothing is consulted, ASK
    /// uses the approval callback and a timeout answers the model.
    fn is_durable(&self) -> bool;

    /// What is known about the call at `key`.
    fn call(&self, key: StepKey) -> CallRecord;

    /// The answer, decision or recovery choice recorded for the call at `key`.
    fn reply(&self, key: StepKey) -> Option<InputReply>;

    /// Records the call at `key` started, before its handler runs.
    fn record_started<'a>(
        &'a self,
        key: StepKey,
        call: &'a ToolCall,
        policy: ReplayPolicy,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// Records the call at `key` finished with `result`.
    fn record_finished<'a>(
        &'a self,
        key: StepKey,
        result: &'a ToolResult,
    ) -> BoxFuture<'a, Result<(), JournalError>>;
}

/// The journal of a direct run: records nothing, knows nothing.
///
/// ```
/// use harnessx::journal::{CallJournal, CallRecord, NoJournal, StepKey};
/// assert!(!NoJournal.is_durable());
/// assert_eq!(NoJournal.call(StepKey::call(1, 0)), CallRecord::New);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJournal;

impl CallJournal for NoJournal {
    fn is_durable(&self) -> bool {
        false
    }

    fn call(&self, _key: StepKey) -> CallRecord {
        CallRecord::New
    }

    fn reply(&self, _key: StepKey) -> Option<InputReply> {
        None
    }

    fn record_started<'a>(
        &'a self,
        _key: StepKey,
        _call: &'a ToolCall,
        _policy: ReplayPolicy,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn record_finished<'a>(
        &'a self,
        _key: StepKey,
        _result: &'a ToolResult,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}
