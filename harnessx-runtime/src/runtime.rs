//! [`Runtime`]: agents by name, workers that claim queued runs, and the calls a host makes
//! (start, read, answer, decide, cancel, subscribe).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use harnessx::{Agent, AgentBuilder};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use crate::catalog::AgentCatalog;
use crate::error::{InputError, RuntimeError};
use crate::observe::Observer;
use crate::store::{
    Cancelled, ConversationFilter, NewRun, Reply, RunFilter, RunRecord, RunStore, StoreStats,
};
use crate::types::{
    Answer, ConversationSummary, ConversationView, Decide, Multitask, RunEvent, RunId, RunState,
    RunView, StartRun, StoredEvent,
};

/// The environment variable that sets the question window in seconds.
pub const ASK_USER_TIMEOUT_ENV: &str = "ASK_USER_TIMEOUT_SECONDS";

/// How long an idempotency key returns the run it started, by default: 24 hours.
pub const DEFAULT_IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// The default question window: 10 minutes.
pub const DEFAULT_QUESTION_WINDOW: Duration = Duration::from_secs(600);

/// How a code-registered agent is made: called once, by [`RuntimeBuilder::build`].
type AgentFactory = Box<dyn FnOnce(AgentBuilder) -> AgentBuilder + Send>;

pub(crate) struct Shared {
    pub(crate) store: Arc<dyn RunStore>,
    /// The agents registered in code, each built once when the runtime is built and shared by
    /// all its runs.
    pub(crate) agents: HashMap<String, Agent>,
    /// Agents that are data: stored, versioned.
    pub(crate) catalog: Option<Arc<dyn AgentCatalog>>,
    /// Wakes an idle worker when a run is queued (see [`Shared::queued`]).
    pub(crate) wake: Notify,
    /// Wakes the question timer when a deadline may have moved.
    pub(crate) timer: Notify,
    pub(crate) events: broadcast::Sender<StoredEvent>,
    /// Another process stored events (a store shared by several processes): subscribers read
    /// the store.
    pub(crate) stored: broadcast::Sender<StoredNotice>,
    pub(crate) running: Mutex<HashMap<RunId, CancellationToken>>,
    pub(crate) owner: String,
    pub(crate) window: Duration,
    pub(crate) lease: Duration,
    /// How long an idempotency key returns the run it started.
    pub(crate) idempotency_window: Duration,
    pub(crate) shutdown: CancellationToken,
    pub(crate) workers: usize,
    /// How many store calls of the background tasks failed, and the last failure.
    pub(crate) store_errors: Mutex<(u64, Option<String>)>,
    /// Told about model calls, tool calls, journal writes and store failures.
    pub(crate) observer: Option<Arc<dyn Observer>>,
}

impl Shared {
    /// Runs were queued: wake one idle worker. A worker that claims a run wakes the next one
    /// while more are queued (see `worker::work`), so a burst of queued runs fans out one claim
    /// at a time instead of every idle worker racing for each run and all but one finding
    /// nothing.
    pub(crate) fn queued(&self) {
        self.wake.notify_one();
    }

    pub(crate) fn publish(&self, events: Vec<StoredEvent>) {
        for event in events {
            let _ = self.events.send(event);
        }
    }

    /// Records a failed store call of a background task (it is also logged).
    pub(crate) fn store_failed(&self, error: &crate::error::StoreError) {
        {
            let mut errors = self.store_errors.lock().unwrap_or_else(|p| p.into_inner());
            errors.0 += 1;
            errors.1 = Some(error.to_string());
        }
        if let Some(observer) = &self.observer {
            observer.store_error(error);
        }
    }

    pub(crate) fn running(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, CancellationToken>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Events stored by another process sharing the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoredNotice {
    /// This run's events up to this sequence are stored.
    Run(RunId, u64),
    /// Notices may have been missed: every subscriber looks again.
    All,
}

impl StoredNotice {
    /// Whether a subscriber of `run` that has seen events up to `last` should read the store.
    fn concerns(self, run: RunId, last: u64) -> bool {
        match self {
            Self::Run(r, seq) => r == run && seq > last,
            Self::All => true,
        }
    }
}

/// Stops the workers when the last [`Runtime`] handle goes; holds the background tasks so
/// [`Runtime::shutdown`] can wait for them.
struct ShutdownGuard {
    token: CancellationToken,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Drop for ShutdownGuard {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// Durable agent runs: a store, agents registered by name, and workers.
///
/// Cheap to clone; the workers stop when the last clone is dropped. See the
/// [crate documentation](crate) for a tour.
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<Shared>,
    guard: Arc<ShutdownGuard>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("agents", &self.shared.agents.keys().collect::<Vec<_>>())
            .field("owner", &self.shared.owner)
            .finish_non_exhaustive()
    }
}

/// What [`Runtime::status`] reports.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RuntimeStatus {
    /// This process's worker name: the `owner` of its leases.
    pub owner: String,
    /// How many runs this process drives at once.
    pub workers: usize,
    /// The runs this process drives now.
    pub driving: Vec<RunId>,
    /// Queue depth and every worker's leases, as stored.
    pub store: StoreStats,
    /// How many store calls of this runtime's background tasks (claiming, heartbeat, timers)
    /// failed after the store's own retries.
    pub store_errors: u64,
    /// The last such failure.
    pub last_store_error: Option<String>,
}

/// Builds a [`Runtime`]: see [`Runtime::builder`].
#[must_use]
pub struct RuntimeBuilder {
    store: Option<Arc<dyn RunStore>>,
    agents: HashMap<String, AgentFactory>,
    catalog: Option<Arc<dyn AgentCatalog>>,
    workers: usize,
    window: Option<Duration>,
    lease: Duration,
    idempotency_window: Duration,
    observer: Option<Arc<dyn Observer>>,
}

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl RuntimeBuilder {
    /// The store (required).
    pub fn store(mut self, store: impl RunStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// A store already shared.
    pub fn store_arc(mut self, store: Arc<dyn RunStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Registers an agent under `name`: [`build`](Self::build) calls `configure` once with a
    /// fresh builder, and every run of the agent in this process shares the agent it builds
    /// (its model, tools and the setup of its capabilities, such as MCP connections), each run
    /// with its own conversation. Handlers are code, so every worker process registers the
    /// same agents.
    ///
    /// A model that plays a script by request count (`TestModel`) is shared too: the runs of
    /// one runtime take its turns in the order they ask, and a run resumed in another process
    /// gets a script that starts over while the run asks for the turn after its journaled
    /// ones. Script by the run's position (`FunctionModel`) instead when that matters.
    pub fn agent<F>(mut self, name: impl Into<String>, configure: F) -> Self
    where
        F: FnOnce(AgentBuilder) -> AgentBuilder + Send + 'static,
    {
        self.agents.insert(name.into(), Box::new(configure));
        self
    }

    /// Finds agents not registered with [`agent`](Self::agent) in `catalog`: stored,
    /// versioned agents, each run on the version it started with (see [`AgentCatalog`]).
    pub fn catalog(mut self, catalog: impl AgentCatalog) -> Self {
        self.catalog = Some(Arc::new(catalog));
        self
    }

    /// A catalog already shared.
    pub fn catalog_arc(mut self, catalog: Arc<dyn AgentCatalog>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// How many runs this process drives at once (default 4).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// How long a question waits before it expires (default: `ASK_USER_TIMEOUT_SECONDS`, else
    /// 600 s). A tool may choose its own window.
    pub fn question_window(mut self, window: Duration) -> Self {
        self.window = Some(window);
        self
    }

    /// How long an idempotency key returns the run it started (default
    /// [`DEFAULT_IDEMPOTENCY_WINDOW`], 24 hours); after that the key may start a new run.
    pub fn idempotency_window(mut self, window: Duration) -> Self {
        self.idempotency_window = window;
        self
    }

    /// How long a worker's claim on a run lasts without a heartbeat (default 30 s).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Tells `observer` about model calls, tool calls, journal writes and store failures as
    /// the workers meet them (see [`Observer`]).
    pub fn observer(self, observer: impl Observer) -> Self {
        self.observer_arc(Arc::new(observer))
    }

    /// An observer already shared.
    pub fn observer_arc(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Builds the registered agents and starts the workers, the question timer and the
    /// heartbeat on the current tokio runtime. An agent that cannot be built (no model, an
    /// invalid tool) is a [`RuntimeError::Config`] naming it.
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        let store = self.store.ok_or_else(|| {
            RuntimeError::Config(
                "no store: call `.store(SqliteStore::open(path)?)` before `build()`".into(),
            )
        })?;
        if self.workers == 0 {
            return Err(RuntimeError::Config(
                "`workers` is 0, so no run would ever make progress; give at least 1".into(),
            ));
        }
        if self.lease < Duration::from_millis(100) {
            return Err(RuntimeError::Config(format!(
                "`lease` is {:?}; give at least 100 ms",
                self.lease
            )));
        }
        let window = match self.window {
            Some(w) if w.is_zero() => {
                return Err(RuntimeError::Config(
                    "`question_window` is 0; give a positive duration".into(),
                ));
            }
            Some(w) => w,
            None => window_from_env()?,
        };
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            RuntimeError::Config(
                "`build()` must be called inside a tokio runtime (the workers run on it)".into(),
            )
        })?;
        let mut agents = HashMap::with_capacity(self.agents.len());
        for (name, configure) in self.agents {
            let agent = configure(Agent::builder()).build().map_err(|e| {
                RuntimeError::Config(format!("agent `{name}` could not be built: {e}"))
            })?;
            agents.insert(name, agent);
        }
        let shutdown = CancellationToken::new();
        let shared = Arc::new(Shared {
            store,
            agents,
            catalog: self.catalog,
            wake: Notify::new(),
            timer: Notify::new(),
            events: broadcast::channel(4096).0,
            stored: broadcast::channel(4096).0,
            running: Mutex::default(),
            owner: worker_name(),
            window,
            lease: self.lease,
            idempotency_window: self.idempotency_window,
            shutdown: shutdown.clone(),
            workers: self.workers,
            store_errors: Mutex::default(),
            observer: self.observer,
        });
        let mut tasks: Vec<_> = (0..self.workers)
            .map(|_| handle.spawn(crate::worker::work(Arc::clone(&shared))))
            .collect();
        if let Some(wakeups) = shared.store.wakeups() {
            tasks.push(handle.spawn(crate::worker::forward_wakeups(Arc::clone(&shared), wakeups)));
        }
        tasks.push(handle.spawn(crate::worker::question_timer(Arc::clone(&shared))));
        tasks.push(handle.spawn(crate::worker::heartbeat(Arc::clone(&shared))));
        Ok(Runtime {
            shared,
            guard: Arc::new(ShutdownGuard {
                token: shutdown,
                tasks: Mutex::new(tasks),
            }),
        })
    }
}

/// A name for this runtime's leases that no other runtime shares, in this process or another:
/// two runtimes built in the same millisecond of one process must not take each other's leases
/// for their own (a shutdown hands back the runs its owner holds).
fn worker_name() -> String {
    static BUILT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("pid-{}-{}-{n}", std::process::id(), crate::store::now_ms())
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn window_from_env() -> Result<Duration, RuntimeError> {
    match std::env::var(ASK_USER_TIMEOUT_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_QUESTION_WINDOW),
        Err(std::env::VarError::NotUnicode(_)) => Err(RuntimeError::Config(format!(
            "{ASK_USER_TIMEOUT_ENV} is not valid UTF-8; set it to a number of seconds such as 600"
        ))),
        Ok(raw) => raw
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| {
                RuntimeError::Config(format!(
                    "{ASK_USER_TIMEOUT_ENV} is `{raw}`, not a positive number of seconds; set it \
                     to a number such as 600, or unset it for the 10-minute default"
                ))
            }),
    }
}

fn view(run: RunRecord) -> RunView {
    RunView {
        id: run.id,
        agent: run.agent,
        conversation: run.conversation,
        input: run.input,
        state: run.state,
        needs_input: run.pending,
        result: run.result,
        error: run.error,
        agent_version: run.agent_version,
        created_ms: run.created_ms,
        updated_ms: run.updated_ms,
    }
}

impl Runtime {
    /// Starts building a runtime.
    ///
    /// ```
    /// use harnessx::model::TestModel;
    /// use harnessx_runtime::{Runtime, SqliteStore, StartRun, RunState};
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = Runtime::builder()
    ///     .store(SqliteStore::in_memory()?)
    ///     .agent("greeter", |b| b.model(TestModel::new().then_reply("Hello!")))
    ///     .workers(2)
    ///     .build()?;
    /// let run = runtime.start_run(StartRun::new("greeter", "Hi")).await?;
    /// let done = runtime.settled(run.id).await?;
    /// assert_eq!(done.state, RunState::Completed);
    /// assert_eq!(done.result.unwrap().output, "Hello!");
    /// # Ok(()) }
    /// ```
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            store: None,
            agents: HashMap::new(),
            catalog: None,
            workers: 4,
            window: None,
            lease: Duration::from_secs(30),
            idempotency_window: DEFAULT_IDEMPOTENCY_WINDOW,
            observer: None,
        }
    }

    /// What this runtime and its store are doing: this process's workers and the runs they
    /// drive, every worker's leases in the store, queue depth, and store failures so far.
    ///
    /// ```
    /// use harnessx_runtime::{Runtime, SqliteStore};
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = Runtime::builder().store(SqliteStore::in_memory()?).workers(3).build()?;
    /// let status = runtime.status().await?;
    /// assert_eq!((status.workers, status.store.queued), (3, 0));
    /// # Ok(()) }
    /// ```
    pub async fn status(&self) -> Result<RuntimeStatus, RuntimeError> {
        let store = self.shared.store.stats().await?;
        let mut driving: Vec<RunId> = self.shared.running().keys().copied().collect();
        driving.sort();
        let (store_errors, last_store_error) = self
            .shared
            .store_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Ok(RuntimeStatus {
            owner: self.shared.owner.clone(),
            workers: self.shared.workers,
            driving,
            store,
            store_errors,
            last_store_error,
        })
    }

    /// Stops this process's workers and waits until they have stopped. Runs they were driving
    /// go back to the queue exactly as last journaled — a call in flight records nothing — and
    /// another worker, or the next runtime on the store, resumes them. Call it before the tokio
    /// runtime goes (a server's graceful stop does), so no worker is cut off halfway by the
    /// runtime's own shutdown. A second call returns at once. The handle stays usable for
    /// reads, answers and new runs, which the next runtime on the store drives.
    ///
    /// ```
    /// use harnessx::model::TestModel;
    /// use harnessx_runtime::{Runtime, SqliteStore, StartRun, RunState};
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = Runtime::builder()
    ///     .store(SqliteStore::in_memory()?)
    ///     .agent("greeter", |b| b.model(TestModel::new().then_reply("Hello!")))
    ///     .build()?;
    /// runtime.shutdown().await;
    /// let run = runtime.start_run(StartRun::new("greeter", "Hi")).await?;
    /// assert_eq!(run.state, RunState::Queued, "no worker of this runtime picks it up");
    /// assert!(runtime.status().await?.driving.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(&self) {
        self.guard.token.cancel();
        let tasks =
            std::mem::take(&mut *self.guard.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for task in tasks {
            // A task that panicked has nothing left to stop.
            let _ = task.await;
        }
        // Hand the runs it was driving back to the queue at once rather than at lease's end.
        if let Err(e) = self.shared.store.release_leases(&self.shared.owner).await {
            tracing::error!(
                error = %e,
                "re-queueing this worker's runs failed; they resume when their lease lapses"
            );
            self.shared.store_failed(&e);
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.shared.store
    }

    /// Starts a run (queued; a worker picks it up). With an idempotency key used before, returns
    /// that run instead. In a conversation whose run waits on a question, `input` is that
    /// question's free-text answer and the waiting run is returned.
    pub async fn start_run(&self, start: StartRun) -> Result<RunView, RuntimeError> {
        let agent_version = if self.shared.agents.contains_key(&start.agent) {
            None
        } else if let Some(catalog) = &self.shared.catalog {
            match start.agent_version {
                Some(v) => Some(v),
                None => Some(
                    catalog
                        .current_version(&start.agent)
                        .await
                        .map_err(RuntimeError::Catalog)?
                        .ok_or_else(|| RuntimeError::UnknownAgent(start.agent.clone()))?,
                ),
            }
        } else {
            return Err(RuntimeError::UnknownAgent(start.agent));
        };
        // A retry is looked up before anything acts: the run its key made is returned as it is,
        // even when that run now waits on a question its conversation's message would answer.
        if let Some(key) = &start.idempotency_key
            && let Some(run) = self.shared.store.run_by_idempotency_key(key).await?
        {
            if crate::store::now_ms().saturating_sub(run.created_ms)
                < millis(self.shared.idempotency_window)
            {
                let field = if run.agent != start.agent {
                    Some("agent")
                } else if run.input != start.input {
                    Some("input")
                } else if start
                    .conversation
                    .as_ref()
                    .is_some_and(|c| *c != run.conversation)
                {
                    Some("conversation")
                } else {
                    None
                };
                return match field {
                    Some(field) => {
                        Err(InputError::IdempotencyMismatch { run: run.id, field }.into())
                    }
                    None => Ok(view(run)),
                };
            }
            // Expired: the key may start a new run.
            self.shared.store.forget_idempotency_key(key).await?;
        }
        if let Some(conversation) = &start.conversation
            && let Some(record) = self.shared.store.conversation(conversation).await?
        {
            if let Some((run, _)) = record.pending_question {
                return self.answer(run, Answer::Text { text: start.input }).await;
            }
            if start.multitask != Multitask::Enqueue {
                let going = self.going(&record.runs).await?;
                match (start.multitask, going.first()) {
                    (Multitask::Reject, Some(run)) => {
                        return Err(InputError::ConversationBusy {
                            conversation: conversation.clone(),
                            run: run.id,
                            state: run.state,
                        }
                        .into());
                    }
                    (Multitask::Interrupt, _) => {
                        for run in going {
                            // One that ended meanwhile needs no cancel.
                            match self.cancel(run.id).await {
                                Ok(_) | Err(RuntimeError::Input(InputError::Finished { .. })) => {}
                                Err(e) => return Err(e),
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        let (run, created) = self
            .shared
            .store
            .create_run(NewRun {
                agent: start.agent,
                input: start.input,
                conversation: start.conversation,
                idempotency_key: start.idempotency_key,
                agent_version,
            })
            .await?;
        if created {
            self.shared.queued();
        }
        Ok(view(run))
    }

    /// The runs among `runs` (a conversation's, oldest first) that have not ended, newest
    /// first. Runs of a conversation end in order, so the look stops at the first ended one
    /// from the newest.
    async fn going(&self, runs: &[RunId]) -> Result<Vec<RunView>, RuntimeError> {
        let mut going = Vec::new();
        for id in runs.iter().rev() {
            let run = self.run(*id).await?;
            if run.state.is_terminal() {
                break;
            }
            going.push(run);
        }
        Ok(going)
    }

    /// Reads a run.
    pub async fn run(&self, id: RunId) -> Result<RunView, RuntimeError> {
        self.shared
            .store
            .run(id)
            .await?
            .map(view)
            .ok_or(RuntimeError::Input(InputError::UnknownRun(id)))
    }

    /// Lists the runs `filter` selects, newest first, at most `limit`; a caller pages with
    /// [`RunFilter::before`] set to the last id it saw.
    pub async fn runs(
        &self,
        filter: &RunFilter,
        limit: usize,
    ) -> Result<Vec<RunView>, RuntimeError> {
        let runs = self.shared.store.list_runs(filter, limit).await?;
        Ok(runs.into_iter().map(view).collect())
    }

    /// Lists conversations by their latest run, newest first, at most `limit`; a caller pages
    /// with [`ConversationFilter::before`] set to the `last_run` of the last one it saw.
    pub async fn conversations(
        &self,
        filter: &ConversationFilter,
        limit: usize,
    ) -> Result<Vec<ConversationSummary>, RuntimeError> {
        Ok(self.shared.store.list_conversations(filter, limit).await?)
    }

    /// Answers the run's pending question (selections or free text) or recovery question. A
    /// wrong shape, a run not waiting, or a second answer is an error and changes nothing.
    pub async fn answer(&self, id: RunId, answer: Answer) -> Result<RunView, RuntimeError> {
        self.reply(id, Reply::Answer(answer), None).await
    }

    /// [`answer`](Self::answer), naming who answered on the run's `answered` event.
    pub async fn answer_as(
        &self,
        id: RunId,
        answer: Answer,
        by: Option<String>,
    ) -> Result<RunView, RuntimeError> {
        self.reply(id, Reply::Answer(answer), by).await
    }

    /// Decides the run's pending approval: a [`Decision`](crate::Decision), or a [`Decide`] with the arguments
    /// a person edited and who decided. `AllowForConversation` is stored for the conversation
    /// and reused by its later runs. Edited arguments that do not fit the tool's input schema,
    /// or that come with a deny, are [`InputError::InvalidArguments`] and change nothing.
    ///
    /// ```
    /// use harnessx::model::TestModel;
    /// use harnessx::{PermissionLevel, ToolDefinition, ToolOutput, handler_fn};
    /// use harnessx::Message;
    /// use harnessx_runtime::{Decide, Decision, RunState, Runtime, SqliteStore, StartRun};
    /// use serde_json::json;
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let model = TestModel::new().then_call("greet", json!({"name": "world"})).then_reply("Done.");
    /// let runtime = Runtime::builder()
    ///     .store(SqliteStore::in_memory()?)
    ///     .agent("greeter", move |b| {
    ///         let greet = ToolDefinition::new(
    ///             "greet", "Greets someone.",
    ///             json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    ///             handler_fn(|args, _| async move { Ok(ToolOutput::text(format!("Hello, {}!", args["name"].as_str().unwrap_or("?")))) }),
    ///         ).with_permission(PermissionLevel::Ask);
    ///         b.model(model).tool(greet)
    ///     })
    ///     .build()?;
    /// let run = runtime.start_run(StartRun::new("greeter", "Greet")).await?;
    /// assert_eq!(runtime.settled(run.id).await?.state, RunState::WaitingInput);
    /// // Arguments that do not fit the tool's schema are refused; nothing changes.
    /// let refused = runtime.decide(run.id, Decide::new(Decision::AllowOnce).arguments(json!({"name": 7}))).await;
    /// assert!(refused.unwrap_err().to_string().contains("`arguments.name`"));
    /// runtime.decide(run.id, Decide::new(Decision::AllowOnce).arguments(json!({"name": "Ada"})).by("alice")).await?;
    /// let done = runtime.settled(run.id).await?.result.unwrap();
    /// assert!(done.messages.iter().any(|m| matches!(m, Message::Tool { content, .. } if content == "Hello, Ada!")));
    /// # Ok(()) }
    /// ```
    pub async fn decide(
        &self,
        id: RunId,
        decision: impl Into<Decide>,
    ) -> Result<RunView, RuntimeError> {
        let decide = decision.into();
        self.reply(id, Reply::decision(&decide), decide.by).await
    }

    async fn reply(
        &self,
        id: RunId,
        reply: Reply,
        by: Option<String>,
    ) -> Result<RunView, RuntimeError> {
        let answered = self.shared.store.answer(id, reply, by).await??;
        self.shared.publish(answered.events);
        self.shared.timer.notify_one();
        if answered.requeued {
            self.shared.queued();
        }
        self.run(id).await
    }

    /// Cancels a run: a queued or waiting run at once; a running one fires its calls'
    /// cancellation tokens and ends `cancelled` as soon as its worker lets go.
    pub async fn cancel(&self, id: RunId) -> Result<RunView, RuntimeError> {
        match self.shared.store.cancel(id).await?? {
            Cancelled::Now(events) => {
                self.shared.publish(events);
                self.shared.timer.notify_one();
                // A later run of its conversation may start now.
                self.shared.queued();
            }
            Cancelled::Requested => {
                if let Some(token) = self.shared.running().get(&id) {
                    token.cancel();
                }
            }
        }
        self.run(id).await
    }

    /// Reads a conversation: its transcript and `pending_question`.
    pub async fn conversation(&self, id: &str) -> Result<ConversationView, RuntimeError> {
        let record = self
            .shared
            .store
            .conversation(id)
            .await?
            .ok_or_else(|| RuntimeError::UnknownConversation(id.to_owned()))?;
        Ok(ConversationView {
            id: id.to_owned(),
            messages: record.messages,
            runs: record.runs,
            pending_question: record.pending_question,
        })
    }

    /// The run's events after sequence `after` (0: from the start), then live ones as they are
    /// stored; the stream ends after the run completes, fails or is cancelled.
    pub fn subscribe(
        &self,
        id: RunId,
        after: u64,
    ) -> impl Stream<Item = Result<StoredEvent, RuntimeError>> + Send + Unpin + use<> {
        let state = Subscription {
            shared: Arc::clone(&self.shared),
            live: self.shared.events.subscribe(),
            stored: self.shared.stored.subscribe(),
            run: id,
            last: after,
            backlog: VecDeque::new(),
            done: false,
            finished: false,
            known: false,
        };
        Box::pin(futures::stream::unfold(state, |mut s| async move {
            let item = s.next().await?;
            Some((item, s))
        }))
    }

    /// Waits until the run completes, fails, is cancelled or waits for input, and returns it.
    pub async fn settled(&self, id: RunId) -> Result<RunView, RuntimeError> {
        let mut live = self.shared.events.subscribe();
        let mut stored = self.shared.stored.subscribe();
        loop {
            let run = self.run(id).await?;
            if run.state.is_terminal() || run.state == RunState::WaitingInput {
                return Ok(run);
            }
            // Any stored state change of this run, events of it stored by another process, or
            // a lagged channel means: look again.
            loop {
                tokio::select! {
                    e = live.recv() => match e {
                        Ok(e) if e.run == id && matches!(e.event, RunEvent::State { .. }) => break,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => {
                            return Err(RuntimeError::Config("the runtime stopped".into()));
                        }
                    },
                    n = stored.recv() => match n {
                        Ok(n) if n.concerns(id, 0) => break,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => {
                            return Err(RuntimeError::Config("the runtime stopped".into()));
                        }
                    },
                }
            }
        }
    }
}

struct Subscription {
    shared: Arc<Shared>,
    live: broadcast::Receiver<StoredEvent>,
    stored: broadcast::Receiver<StoredNotice>,
    run: RunId,
    last: u64,
    backlog: VecDeque<StoredEvent>,
    done: bool,
    /// The run was seen finished: what is stored after `last` is all there will be.
    finished: bool,
    /// The run was seen to exist.
    known: bool,
}

impl Subscription {
    async fn next(&mut self) -> Option<Result<StoredEvent, RuntimeError>> {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if event.seq <= self.last {
                    continue;
                }
                self.last = event.seq;
                if let RunEvent::State { state } = &event.event
                    && state.is_terminal()
                {
                    self.done = true;
                }
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            match self
                .shared
                .store
                .events_after(self.run, self.last, 256)
                .await
            {
                Err(e) => return Some(Err(e.into())),
                Ok(events) if !events.is_empty() => {
                    self.backlog.extend(events);
                    continue;
                }
                // Nothing after `last` in a run seen finished: the stream ends.
                Ok(_) if self.finished => return None,
                // Nothing after `last`: the run may be unknown, or finished with `last` its final
                // event (a client that saw a whole run and reconnects), and then the stream ends.
                // A run's state changes in the transaction that stores its event, so a finished
                // run read here has its final events stored: they are read once more first.
                Ok(_) => match self.shared.store.run(self.run).await {
                    Err(e) => return Some(Err(e.into())),
                    Ok(None) if !self.known => {
                        self.done = true;
                        return Some(Err(InputError::UnknownRun(self.run).into()));
                    }
                    Ok(None) => return None,
                    Ok(Some(run)) => {
                        self.known = true;
                        if run.state.is_terminal() {
                            self.finished = true;
                            continue;
                        }
                    }
                },
            }
            // Nothing stored after `last`: wait for the next event of this run, stored by this
            // process (`live`) or by another one sharing the store (`stored`).
            loop {
                tokio::select! {
                    e = self.live.recv() => match e {
                        Ok(e) if e.run == self.run && e.seq > self.last => {
                            if e.seq == self.last + 1 {
                                self.backlog.push_back(e);
                            }
                            break;
                        }
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                    n = self.stored.recv() => match n {
                        Ok(n) if n.concerns(self.run, self.last) => break,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                }
            }
        }
    }
}
