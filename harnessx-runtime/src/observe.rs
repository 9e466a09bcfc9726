//! [`Observer`]: what the workers report while they drive runs — model calls, tool calls,
//! journal writes, store failures — for a host's metrics.

use std::time::Duration;

use harnessx::ToolResult;

use crate::error::StoreError;

/// Told what the workers do as they do it, so a host can keep metrics (the runs server's
/// `/metrics` is one). Give it with [`RuntimeBuilder::observer`](crate::RuntimeBuilder::observer).
///
/// Every method has an empty default. Each is called on a worker's task right after what it
/// reports, so it should return at once: increment a counter, observe a histogram. Without an
/// observer the workers take no timings at all.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use harnessx::model::TestModel;
/// use harnessx_runtime::{Observer, Runtime, SqliteStore, StartRun};
///
/// #[derive(Default)]
/// struct ModelCalls(AtomicU64);
///
/// impl Observer for ModelCalls {
///     fn model_call(&self, _elapsed: std::time::Duration) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let calls = Arc::new(ModelCalls::default());
/// let runtime = Runtime::builder()
///     .store(SqliteStore::in_memory()?)
///     .agent("greeter", |b| b.model(TestModel::new().then_reply("Hello!")))
///     .observer_arc(calls.clone())
///     .build()?;
/// let run = runtime.start_run(StartRun::new("greeter", "Hi")).await?;
/// runtime.settled(run.id).await?;
/// assert_eq!(calls.0.load(Ordering::Relaxed), 1);
/// # Ok(()) }
/// ```
pub trait Observer: Send + Sync + 'static {
    /// A run's model request was answered after `elapsed`. A turn read back from the journal
    /// is not asked again, and not reported.
    fn model_call(&self, elapsed: Duration) {
        let _ = elapsed;
    }

    /// A run's tool call finished with `result`: `result.name` is the tool's registered name,
    /// or the name the model wrote when no tool matched (its `error_kind` is then
    /// `UnknownTool`). `elapsed` runs from the call's `started` record to its result, when this
    /// worker wrote both: a call resumed after a pause or a crash is timed from its
    /// resumption. A call answered from the journal is not reported again.
    fn tool_call(&self, result: &ToolResult, elapsed: Option<Duration>) {
        let _ = (result, elapsed);
    }

    /// One journal step of a run — a model turn, a call started or finished, with the events
    /// since the last one — was written to the store in `elapsed` (one transaction).
    fn step_written(&self, elapsed: Duration) {
        let _ = elapsed;
    }

    /// A store call of the workers failed after the store's own retries: a background task's
    /// (claiming, renewing leases, question deadlines) or a run's write.
    fn store_error(&self, error: &StoreError) {
        let _ = error;
    }
}
