//! The [`RunStore`] trait: small, intention-named methods the runtime calls, each one
//! transaction. [`SqliteStore`] is the embedded default.
//!
//! Every write that changes a running run carries its [`Lease`] (owner and generation); a store
//! refuses it ([`StoreError::Fenced`]) once another worker took the run over, so a worker that
//! was presumed dead can never overwrite its successor. A store for many machines (PostgreSQL:
//! `FOR UPDATE SKIP LOCKED` in [`claim_next`](RunStore::claim_next), a lease renewed by
//! [`heartbeat`](RunStore::heartbeat), `LISTEN/NOTIFY` for wake-ups) fits the same trait.

pub mod knowledge;
#[cfg(feature = "postgres")]
mod postgres;
pub mod resources;
mod sqlite;
pub mod webhooks;

use harnessx::BoxFuture;
use harnessx::journal::{InputReply, PendingInput, StepKey};
use harnessx::{Message, ModelResponse, ReplayPolicy, RunResult, ToolCall, ToolResult};
use serde::{Deserialize, Serialize};

pub use knowledge::{
    DocumentError, DocumentFormat, DocumentInfo, KnowledgeHit, KnowledgeStore, MAX_DOCUMENT_BYTES,
    NewDocument, query_words,
};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresConfig, PostgresStore, SslMode};
pub use resources::{Conflict, Expect, Resource, ResourceStore, Seeded};
pub use sqlite::{BackupError, BackupReport, SqliteStore, Synchronous};
pub use webhooks::{
    AttemptNext, AttemptRecord, Delivery, DeliveryAttempt, DeliveryClaim, DeliveryState,
    WEBHOOK_KIND, WebhookEvent, WebhookMessage, WebhookStore, event_data,
};

use crate::error::{InputError, StoreError};
use crate::types::{
    Answer, ConversationSummary, Decide, Decision, RunEvent, RunId, RunState, StoredEvent,
};

/// A worker's claim on a running run: every write for the run carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The run.
    pub run: RunId,
    /// The worker process that holds it.
    pub owner: String,
    /// Bumped at every claim; a write with an older generation is refused.
    pub generation: i64,
}

/// One journal entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    /// A model turn's response.
    Turn {
        /// The turn (1-based).
        turn: u32,
        /// The response.
        response: ModelResponse,
    },
    /// A call started (written before its handler runs).
    Started {
        /// Which call.
        key: StepKey,
        /// The call.
        call: ToolCall,
        /// Its tool's replay policy.
        policy: ReplayPolicy,
    },
    /// A call finished.
    Finished {
        /// Which call.
        key: StepKey,
        /// Its result.
        result: ToolResult,
    },
    /// The run asked a person.
    Asked {
        /// What it asked.
        pending: PendingInput,
    },
    /// An answer, decision, recovery choice or expiry.
    Replied {
        /// Which call it answers.
        key: StepKey,
        /// The reply.
        reply: InputReply,
    },
    /// The run was cancelled.
    Cancelled,
}

impl Step {
    /// The stored kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Turn { .. } => "turn",
            Self::Started { .. } => "started",
            Self::Finished { .. } => "finished",
            Self::Asked { .. } => "asked",
            Self::Replied { .. } => "replied",
            Self::Cancelled => "cancelled",
        }
    }

    /// The turn and call index it belongs to (index 0 for a model turn).
    pub fn position(&self) -> (u32, u32) {
        match self {
            Self::Turn { turn, .. } => (*turn, 0),
            Self::Started { key, .. } | Self::Finished { key, .. } | Self::Replied { key, .. } => {
                (key.turn, key.index)
            }
            Self::Asked { pending } => (pending.key.turn, pending.key.index),
            Self::Cancelled => (0, 0),
        }
    }
}

/// A new run.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The agent's name.
    pub agent: String,
    /// The user's message.
    pub input: String,
    /// The conversation (created when new; `None`: a new one named after the run).
    pub conversation: Option<String>,
    /// The idempotency key.
    pub idempotency_key: Option<String>,
    /// The version of a stored agent the run starts with (see [`ResourceStore`]); `None` for
    /// an agent registered in code.
    pub agent_version: Option<u64>,
}

/// Which runs [`RunStore::list_runs`] lists: every condition given must hold.
///
/// ```
/// use harnessx_runtime::{RunId, RunState};
/// use harnessx_runtime::store::RunFilter;
/// let page = RunFilter::new().agent("support").state(RunState::WaitingInput).before(RunId(120));
/// assert_eq!(page.agent.as_deref(), Some("support"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunFilter {
    /// Runs of this agent.
    pub agent: Option<String>,
    /// Runs in this state.
    pub state: Option<RunState>,
    /// Runs of this conversation.
    pub conversation: Option<String>,
    /// Runs with an id below this one: the cursor of the next page.
    pub before: Option<RunId>,
}

impl RunFilter {
    /// Every run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only runs of `agent`.
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Only runs in `state`.
    pub fn state(mut self, state: RunState) -> Self {
        self.state = Some(state);
        self
    }

    /// Only runs of `conversation`.
    pub fn conversation(mut self, conversation: impl Into<String>) -> Self {
        self.conversation = Some(conversation.into());
        self
    }

    /// Only runs with an id below `run` (the last id of the page before).
    pub fn before(mut self, run: RunId) -> Self {
        self.before = Some(run);
        self
    }
}

/// A run as stored.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// The id.
    pub id: RunId,
    /// The agent's name.
    pub agent: String,
    /// The conversation.
    pub conversation: String,
    /// The user's message.
    pub input: String,
    /// The state.
    pub state: RunState,
    /// Unanswered pending items, in call order, with their deadlines.
    pub pending: Vec<Asked>,
    /// The result, once completed.
    pub result: Option<RunResult>,
    /// Why it failed.
    pub error: Option<String>,
    /// The stored agent's version the run started with (and resumes with).
    pub agent_version: Option<u64>,
    /// When it was created (ms since the Unix epoch).
    pub created_ms: i64,
    /// When it last changed: the time of its last event, or of its creation for a run whose
    /// events carry no time (ms since the Unix epoch).
    pub updated_ms: i64,
}

/// What a worker needs to drive a claimed run.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The run.
    pub run: RunRecord,
    /// The lease every write carries.
    pub lease: Lease,
    /// The run's journal, in order.
    pub steps: Vec<Step>,
    /// The conversation's transcript before this run.
    pub transcript: Vec<Message>,
    /// Tools allowed for the rest of the conversation.
    pub grants: Vec<String>,
    /// Whether other runs were queued when this one was claimed: the worker then wakes another
    /// idle worker for them, and otherwise wakes nobody. A hint; `true` when unsure costs one
    /// look at an empty queue, `false` when runs wait leaves them to the next wake-up.
    pub more_queued: bool,
}

/// How a run ends.
#[derive(Debug, Clone)]
pub enum RunEnd {
    /// The model answered; its messages join the conversation's transcript.
    Completed(RunResult),
    /// It failed.
    Failed(String),
    /// It was cancelled while running.
    Cancelled,
}

/// A pending item with the instant (ms since the Unix epoch) after which it expires.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asked {
    /// What is asked.
    pub pending: PendingInput,
    /// Questions expire; approvals and recovery questions wait.
    pub deadline_ms: Option<i64>,
}

/// What an answer or decision changed.
#[derive(Debug, Clone)]
pub struct Answered {
    /// The run went back to the queue (nothing else is pending).
    pub requeued: bool,
    /// The events written.
    pub events: Vec<StoredEvent>,
}

/// What a cancel did.
#[derive(Debug, Clone)]
pub enum Cancelled {
    /// The run was queued or waiting: it is cancelled now.
    Now(Vec<StoredEvent>),
    /// The run is running: its worker was asked to stop.
    Requested,
}

/// A conversation as stored.
#[derive(Debug, Clone)]
pub struct ConversationRecord {
    /// Its transcript.
    pub messages: Vec<Message>,
    /// Its runs, oldest first.
    pub runs: Vec<RunId>,
    /// The first unanswered question of a waiting run.
    pub pending_question: Option<(RunId, Asked)>,
}

/// An answer or decision to apply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An answer to a question or recovery question.
    Answer(Answer),
    /// A decision on an approval.
    Decision(Decision),
    /// An allow with arguments a person edited: the call runs with them (checked against the
    /// tool's input schema, kept on the approval request, in the transaction that records it).
    Edited {
        /// The decision (an allow; a deny is refused with arguments).
        decision: Decision,
        /// The arguments.
        arguments: serde_json::Value,
    },
}

impl Reply {
    /// The reply a [`Decide`] makes.
    pub fn decision(decide: &Decide) -> Self {
        match &decide.arguments {
            Some(arguments) => Self::Edited {
                decision: decide.decision,
                arguments: arguments.clone(),
            },
            None => Self::Decision(decide.decision),
        }
    }
}

/// Which conversations [`RunStore::list_conversations`] lists: by their latest run, newest
/// first, those whose latest run is below `before`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConversationFilter {
    /// Only conversations whose latest run has an id below this one: the cursor of the next
    /// page.
    pub before: Option<RunId>,
}

impl ConversationFilter {
    /// Every conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only conversations whose latest run is below `run` (the last one of the page before).
    pub fn before(mut self, run: RunId) -> Self {
        self.before = Some(run);
        self
    }
}

/// What another process changed, for a store shared by several processes (see
/// [`RunStore::wakeups`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wakeup {
    /// A run was queued (created, answered, expired, or taken from a dead worker).
    Queued,
    /// A running run's cancel was requested.
    Cancel(RunId),
    /// A run paused on a question: the earliest deadline may have moved.
    Deadlines,
    /// Events of a run were stored, up to sequence `seq` (by any process): its subscribers
    /// read them from the store.
    Events {
        /// The run.
        run: RunId,
        /// The highest sequence stored.
        seq: u64,
    },
    /// Notifications may have been missed (the listening connection was lost, or the store
    /// polls while it is down): look at everything again.
    Resync,
}

/// A lease as stored: which worker drives which run, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    /// The run.
    pub run: RunId,
    /// The worker process holding it.
    pub owner: String,
    /// Its generation.
    pub generation: i64,
    /// When it lapses unless renewed (ms since the Unix epoch).
    pub until_ms: i64,
}

/// What a store holds right now, for operations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Runs waiting for a worker.
    pub queued: u64,
    /// Runs a worker drives.
    pub running: u64,
    /// Runs waiting for a person.
    pub waiting_input: u64,
    /// Every live lease, oldest run first.
    pub leases: Vec<LeaseInfo>,
}

/// How many runs the store holds in each state, for operations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunCounts {
    /// Waiting for a worker.
    pub queued: u64,
    /// A worker drives them.
    pub running: u64,
    /// Waiting for a person.
    pub waiting_input: u64,
    /// The model answered.
    pub completed: u64,
    /// Failed.
    pub failed: u64,
    /// Cancelled.
    pub cancelled: u64,
}

impl RunCounts {
    /// The number of runs in `state`.
    ///
    /// ```
    /// use harnessx_runtime::RunState;
    /// use harnessx_runtime::store::RunCounts;
    /// let counts = RunCounts { failed: 2, ..RunCounts::default() };
    /// assert_eq!(counts.get(RunState::Failed), 2);
    /// ```
    pub fn get(&self, state: RunState) -> u64 {
        match state {
            RunState::Queued => self.queued,
            RunState::Running => self.running,
            RunState::WaitingInput => self.waiting_input,
            RunState::Completed => self.completed,
            RunState::Failed => self.failed,
            RunState::Cancelled => self.cancelled,
        }
    }

    /// Sets the number of runs in the state stored as `state` (an unknown state is ignored).
    pub(crate) fn set(&mut self, state: &str, n: u64) {
        let Some(state) = RunState::parse(state) else {
            return;
        };
        let slot = match state {
            RunState::Queued => &mut self.queued,
            RunState::Running => &mut self.running,
            RunState::WaitingInput => &mut self.waiting_input,
            RunState::Completed => &mut self.completed,
            RunState::Failed => &mut self.failed,
            RunState::Cancelled => &mut self.cancelled,
        };
        *slot = n;
    }
}

/// The schema version this release's stores migrate a database to. SQLite and PostgreSQL number
/// their migrations alike, so one number names the same tables on both.
pub const SCHEMA_VERSION: i64 = 6;

/// The schema version a store's database holds beside the newest one this release knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaVersion {
    /// The version the database holds (0: none applied).
    pub found: i64,
    /// The newest version this release knows (its last migration).
    pub known: i64,
}

/// The schema versions of this release's migrations, oldest first: SQLite and PostgreSQL number
/// theirs alike. For tests that build a database as an earlier release left it.
#[doc(hidden)]
pub fn schema_versions() -> Vec<i64> {
    sqlite::MIGRATIONS.iter().map(|m| m.0).collect()
}

/// The schema version of the release before this one: the migration before
/// [`SCHEMA_VERSION`]'s. For upgrade tests.
#[doc(hidden)]
pub fn previous_schema_version() -> i64 {
    let versions = schema_versions();
    versions.len().checked_sub(2).map_or(0, |i| versions[i])
}

impl SchemaVersion {
    /// Whether every migration this release knows is applied, and none newer.
    pub fn is_current(&self) -> bool {
        self.found == self.known
    }
}

/// Where durable runs live. Each method is one transaction.
pub trait RunStore: Send + Sync + 'static {
    /// Wake-ups from other processes sharing the store (PostgreSQL's `LISTEN/NOTIFY`); `None`
    /// (the default) for a store only this process writes, whose runtime wakes itself.
    fn wakeups(&self) -> Option<tokio::sync::broadcast::Receiver<Wakeup>> {
        None
    }

    /// Queue depth and live leases.
    fn stats(&self) -> BoxFuture<'_, Result<StoreStats, StoreError>>;

    /// How many runs are in each state. It counts every run the store holds (a scan of the
    /// runs table): meant for a metrics scrape every few seconds, not for every request.
    fn count_runs(&self) -> BoxFuture<'_, Result<RunCounts, StoreError>>;

    /// The schema version the database holds and the newest this release knows, asked once:
    /// a lost connection is reported at once instead of retried, so a readiness probe learns
    /// that the database is down within its own deadline.
    fn schema(&self) -> BoxFuture<'_, Result<SchemaVersion, StoreError>>;

    /// Creates a queued run, or returns the run created before with the same idempotency key
    /// (`false`).
    fn create_run(&self, new: NewRun) -> BoxFuture<'_, Result<(RunRecord, bool), StoreError>>;

    /// Claims the oldest queued run for `owner` under a lease of `lease_ms`, marking it running;
    /// returns its journal, transcript and grants.
    fn claim_next<'a>(
        &'a self,
        owner: &'a str,
        lease_ms: i64,
    ) -> BoxFuture<'a, Result<Option<Claim>, StoreError>>;

    /// Appends a journal step and events.
    fn append_step<'a>(
        &'a self,
        lease: &'a Lease,
        step: Step,
        events: Vec<RunEvent>,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>>;

    /// Pauses the run in `waiting_input` on `asked`, releasing its lease.
    fn pause_for_input<'a>(
        &'a self,
        lease: &'a Lease,
        asked: Vec<Asked>,
        events: Vec<RunEvent>,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>>;

    /// Ends the run.
    fn finish<'a>(
        &'a self,
        lease: &'a Lease,
        end: RunEnd,
        events: Vec<RunEvent>,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>>;

    /// Answers the run's first unanswered item the reply fits (checked here, in the same
    /// transaction); re-queues the run when nothing else is pending. `by` names who answered on
    /// the `answered` event.
    fn answer(
        &self,
        run: RunId,
        reply: Reply,
        by: Option<String>,
    ) -> BoxFuture<'_, Result<Result<Answered, InputError>, StoreError>>;

    /// Answers every question whose deadline is at or before `now_ms` as expired; returns the
    /// runs re-queued and their events.
    #[expect(
        clippy::type_complexity,
        reason = "the boxed form of what an `async fn` would return; an alias would only hide it"
    )]
    fn expire_questions(
        &self,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<(Vec<RunId>, Vec<StoredEvent>), StoreError>>;

    /// The earliest deadline of an unanswered question.
    fn next_deadline(&self) -> BoxFuture<'_, Result<Option<i64>, StoreError>>;

    /// Cancels a queued or waiting run now; asks a running one to stop.
    fn cancel(
        &self,
        run: RunId,
    ) -> BoxFuture<'_, Result<Result<Cancelled, InputError>, StoreError>>;

    /// Renews `owner`'s leases; returns its runs whose cancel was requested.
    fn heartbeat<'a>(
        &'a self,
        owner: &'a str,
        lease_ms: i64,
    ) -> BoxFuture<'a, Result<Vec<RunId>, StoreError>>;

    /// Re-queues running runs whose lease ended before `now_ms` (their worker died); returns
    /// how many.
    fn release_expired_leases(&self, now_ms: i64) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// Re-queues the running runs `owner` holds, for a worker stopping on purpose (see
    /// `Runtime::shutdown`): another worker, or the next start, resumes them at once instead of
    /// after their lease. Returns how many. The default re-queues nothing and lets the leases
    /// lapse, which is slower but just as safe.
    fn release_leases<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        let _ = owner;
        Box::pin(std::future::ready(Ok(0)))
    }

    /// When the earliest lease of a run held by another owner than `owner` ends, so a worker
    /// can sleep until exactly then instead of polling for dead workers.
    fn next_lease_expiry<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<i64>, StoreError>>;

    /// Reads a run.
    fn run(&self, run: RunId) -> BoxFuture<'_, Result<Option<RunRecord>, StoreError>>;

    /// Reads the run created with this idempotency key, if any.
    fn run_by_idempotency_key<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RunRecord>, StoreError>>;

    /// Takes an expired idempotency key off the run created with it, so the key may start a
    /// new run.
    fn forget_idempotency_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Lists the runs `filter` selects, newest first, at most `limit`.
    fn list_runs<'a>(
        &'a self,
        filter: &'a RunFilter,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<RunRecord>, StoreError>>;

    /// Reads a conversation.
    fn conversation<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ConversationRecord>, StoreError>>;

    /// Lists the conversations `filter` selects by their latest run, newest first, at most
    /// `limit`.
    fn list_conversations<'a>(
        &'a self,
        filter: &'a ConversationFilter,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ConversationSummary>, StoreError>>;

    /// A run's events after `after`, at most `limit`.
    fn events_after(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>>;

    /// Deletes at most `batch` runs that completed, failed or were cancelled before `before_ms`
    /// (ms since the Unix epoch), oldest first, in one transaction, with everything kept for
    /// them: events, journal, pending rows. A conversation left without runs goes too, with
    /// its transcript and grants; one that still has runs keeps its whole transcript. Queued,
    /// running and waiting runs are never deleted. Returns how many runs were deleted: fewer
    /// than `batch` when no older finished run is left (on a store shared by several
    /// processes, also when the others were locked by another transaction: they are skipped,
    /// not waited for). Run ids are never given out again.
    ///
    /// ```
    /// use harnessx_runtime::{RunStore, SqliteStore};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx_runtime::StoreError> {
    /// let store = SqliteStore::in_memory()?;
    /// // Every run that finished before now, 500 a transaction.
    /// let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    /// while store.prune_finished(now.as_millis() as i64, 500).await? == 500 {}
    /// # Ok(()) }
    /// ```
    fn prune_finished(
        &self,
        before_ms: i64,
        batch: usize,
    ) -> BoxFuture<'_, Result<u64, StoreError>>;
}

/// Implements [`RunStore`] for a store whose inherent `async fn`s of the same names do the work
/// (the SQLite and PostgreSQL stores): each trait method boxes the inherent method's future. An
/// inherent method comes first in method resolution, so `self.name(..)` here calls it, not the
/// trait method. Items given in braces after the type join the impl.
macro_rules! boxed_run_store {
    ($store:ty $({ $($item:item)* })?) => {
        impl RunStore for $store {
            $($($item)*)?

            fn stats(&self) -> BoxFuture<'_, Result<StoreStats, StoreError>> {
                Box::pin(self.stats())
            }

            fn count_runs(&self) -> BoxFuture<'_, Result<RunCounts, StoreError>> {
                Box::pin(self.count_runs())
            }

            fn schema(&self) -> BoxFuture<'_, Result<SchemaVersion, StoreError>> {
                Box::pin(self.schema())
            }

            fn create_run(&self, new: NewRun) -> BoxFuture<'_, Result<(RunRecord, bool), StoreError>> {
                Box::pin(self.create_run(new))
            }

            fn claim_next<'a>(
                &'a self,
                owner: &'a str,
                lease_ms: i64,
            ) -> BoxFuture<'a, Result<Option<Claim>, StoreError>> {
                Box::pin(self.claim_next(owner, lease_ms))
            }

            fn append_step<'a>(
                &'a self,
                lease: &'a Lease,
                step: Step,
                events: Vec<RunEvent>,
            ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
                Box::pin(self.append_step(lease, step, events))
            }

            fn pause_for_input<'a>(
                &'a self,
                lease: &'a Lease,
                asked: Vec<Asked>,
                events: Vec<RunEvent>,
            ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
                Box::pin(self.pause_for_input(lease, asked, events))
            }

            fn finish<'a>(
                &'a self,
                lease: &'a Lease,
                end: RunEnd,
                events: Vec<RunEvent>,
            ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
                Box::pin(self.finish(lease, end, events))
            }

            fn answer(
                &self,
                run: RunId,
                reply: Reply,
                by: Option<String>,
            ) -> BoxFuture<'_, Result<Result<Answered, InputError>, StoreError>> {
                Box::pin(self.answer(run, reply, by))
            }

            fn expire_questions(
                &self,
                now_ms: i64,
            ) -> BoxFuture<'_, Result<(Vec<RunId>, Vec<StoredEvent>), StoreError>> {
                Box::pin(self.expire_questions(now_ms))
            }

            fn next_deadline(&self) -> BoxFuture<'_, Result<Option<i64>, StoreError>> {
                Box::pin(self.next_deadline())
            }

            fn cancel(
                &self,
                run: RunId,
            ) -> BoxFuture<'_, Result<Result<Cancelled, InputError>, StoreError>> {
                Box::pin(self.cancel(run))
            }

            fn heartbeat<'a>(
                &'a self,
                owner: &'a str,
                lease_ms: i64,
            ) -> BoxFuture<'a, Result<Vec<RunId>, StoreError>> {
                Box::pin(self.heartbeat(owner, lease_ms))
            }

            fn release_expired_leases(&self, now_ms: i64) -> BoxFuture<'_, Result<u64, StoreError>> {
                Box::pin(self.release_expired_leases(now_ms))
            }

            fn release_leases<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
                Box::pin(self.release_leases(owner))
            }

            fn next_lease_expiry<'a>(
                &'a self,
                owner: &'a str,
            ) -> BoxFuture<'a, Result<Option<i64>, StoreError>> {
                Box::pin(self.next_lease_expiry(owner))
            }

            fn run(&self, run: RunId) -> BoxFuture<'_, Result<Option<RunRecord>, StoreError>> {
                Box::pin(self.run(run))
            }

            fn run_by_idempotency_key<'a>(
                &'a self,
                key: &'a str,
            ) -> BoxFuture<'a, Result<Option<RunRecord>, StoreError>> {
                Box::pin(self.run_by_idempotency_key(key))
            }

            fn forget_idempotency_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(self.forget_idempotency_key(key))
            }

            fn list_runs<'a>(
                &'a self,
                filter: &'a RunFilter,
                limit: usize,
            ) -> BoxFuture<'a, Result<Vec<RunRecord>, StoreError>> {
                Box::pin(self.list_runs(filter, limit))
            }

            fn conversation<'a>(
                &'a self,
                id: &'a str,
            ) -> BoxFuture<'a, Result<Option<ConversationRecord>, StoreError>> {
                Box::pin(self.conversation(id))
            }

            fn list_conversations<'a>(
                &'a self,
                filter: &'a ConversationFilter,
                limit: usize,
            ) -> BoxFuture<'a, Result<Vec<ConversationSummary>, StoreError>> {
                Box::pin(self.list_conversations(filter, limit))
            }

            fn events_after(
                &self,
                run: RunId,
                after: u64,
                limit: usize,
            ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
                Box::pin(self.events_after(run, after, limit))
            }

            fn prune_finished(
                &self,
                before_ms: i64,
                batch: usize,
            ) -> BoxFuture<'_, Result<u64, StoreError>> {
                Box::pin(self.prune_finished(before_ms, batch))
            }
        }
    };
}
pub(crate) use boxed_run_store;

/// A store that keeps runs, the platform's resources, its knowledge bases' documents and the
/// webhook outbox in one database: both [`SqliteStore`] and `PostgresStore` are one.
pub trait PlatformStore: RunStore + ResourceStore + KnowledgeStore + WebhookStore {}

impl<T: RunStore + ResourceStore + KnowledgeStore + WebhookStore> PlatformStore for T {}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// An event as stored: its JSON with the time it was stored first (`{"at_ms":…,"type":…}`), so
/// the time needs no column of its own and an event stored before times were kept reads back
/// with none.
pub(crate) fn event_body(event: &RunEvent, at_ms: i64) -> Result<String, serde_json::Error> {
    let json = serde_json::to_string(event)?;
    // A run event is an internally tagged enum: always an object with at least its `type`.
    Ok(match json.strip_prefix('{') {
        Some(rest) => format!("{{\"at_ms\":{at_ms},{rest}"),
        None => json,
    })
}

/// Reads an event as stored back: the event, and its time when it was kept.
pub(crate) fn parse_event_body(body: &str) -> Result<(RunEvent, Option<i64>), serde_json::Error> {
    let event = serde_json::from_str(body)?;
    let at_ms = body
        .strip_prefix("{\"at_ms\":")
        .and_then(|rest| rest.split_once(','))
        .and_then(|(n, _)| n.parse().ok());
    Ok((event, at_ms))
}

#[cfg(test)]
mod tests {
    use super::{event_body, parse_event_body};
    use crate::types::{RunEvent, RunState};

    #[test]
    fn an_event_is_stored_with_its_time_and_read_back_with_or_without_one() {
        let event = RunEvent::State {
            state: RunState::Queued,
        };
        let body = event_body(&event, 1_700_000_000_123).unwrap();
        assert_eq!(
            body,
            r#"{"at_ms":1700000000123,"type":"state","state":"queued"}"#
        );
        assert_eq!(
            parse_event_body(&body).unwrap(),
            (event.clone(), Some(1_700_000_000_123))
        );
        // Stored before times were kept.
        assert_eq!(
            parse_event_body(r#"{"type":"state","state":"queued"}"#).unwrap(),
            (event, None)
        );
        assert!(parse_event_body("{").is_err());
    }

    #[test]
    fn the_previous_schema_is_the_migration_before_the_last() {
        let versions = super::schema_versions();
        assert_eq!(versions.last(), Some(&super::SCHEMA_VERSION));
        assert_eq!(
            super::previous_schema_version(),
            versions[versions.len() - 2]
        );
        assert!(super::previous_schema_version() < super::SCHEMA_VERSION);
    }

    /// One number names the same tables on both stores.
    #[cfg(feature = "postgres")]
    #[test]
    fn both_stores_number_their_migrations_alike() {
        let postgres: Vec<i64> = super::postgres::MIGRATIONS.iter().map(|m| m.0).collect();
        assert_eq!(postgres, super::schema_versions());
    }
}
