//! Retention: runs that completed, failed or were cancelled are deleted once they are older than
//! `[store] retain_days`, with their events, journal and pending rows (and a conversation whose
//! runs are all gone, with its transcript and grants). A run that is queued, running or waiting
//! for a person is never deleted.
//!
//! Deleting goes in batches of [`PRUNE_BATCH`] runs, one short transaction each, with
//! [`PRUNE_PAUSE`] between two batches, so the workers' writes are never held up for long (on
//! SQLite every write takes turns on one connection; on PostgreSQL a batch skips rows another
//! transaction holds). A server with `retain_days` set deletes at start and then every
//! [`PRUNE_INTERVAL`]; `POST /v2/runs/prune` (and `harnessx runs prune`) does the same at once.

use std::sync::Arc;
use std::time::Duration;

use harnessx_runtime::{RunStore, StoreError};

/// How many runs one transaction deletes.
pub const PRUNE_BATCH: usize = 500;

/// The pause between two batches: the workers' writes go first.
pub const PRUNE_PAUSE: Duration = Duration::from_millis(20);

/// How often a server with `retain_days` set looks for runs to delete.
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(3600);

/// The longest age accepted, in days (a hundred years).
pub const MAX_RETAIN_DAYS: i64 = 36_500;

/// Deletes every run that finished before `before_ms` (ms since the Unix epoch) and what is kept
/// for it, `batch` runs a transaction with `pause` between two transactions; returns how many
/// runs were deleted.
///
/// ```
/// use std::time::Duration;
/// use harnessx_runtime::{RunStore, SqliteStore};
/// use harnessx_server::retention::prune;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx_runtime::StoreError> {
/// let store = SqliteStore::in_memory()?;
/// // Nothing has finished yet: nothing to delete.
/// assert_eq!(prune(&store, i64::MAX, 500, Duration::ZERO).await?, 0);
/// # Ok(()) }
/// ```
pub async fn prune(
    store: &dyn RunStore,
    before_ms: i64,
    batch: usize,
    pause: Duration,
) -> Result<u64, StoreError> {
    let batch = batch.max(1);
    let mut total = 0;
    loop {
        let deleted = store.prune_finished(before_ms, batch).await?;
        total += deleted;
        // A short batch: nothing older is left (or, on PostgreSQL, the rest is locked by
        // another server pruning at the same time, and the next pass takes it).
        if deleted < batch as u64 {
            return Ok(total);
        }
        tokio::time::sleep(pause).await;
    }
}

/// The cut-off for runs older than `age`: now minus `age`, in ms since the Unix epoch.
pub fn cutoff_ms(age: Duration) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    now.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX))
}

/// Starts the background task of a server keeping finished runs `days` days: a pass at once,
/// then one every [`PRUNE_INTERVAL`]. A failed pass is logged and the next one tries again.
pub(crate) fn spawn(store: Arc<dyn RunStore>, days: u32) -> tokio::task::JoinHandle<()> {
    let age = Duration::from_secs(u64::from(days) * 86_400);
    tokio::spawn(async move {
        loop {
            match prune(&*store, cutoff_ms(age), PRUNE_BATCH, PRUNE_PAUSE).await {
                Ok(0) => tracing::debug!("retention: no run finished more than {days} days ago"),
                Ok(deleted) => tracing::info!(
                    deleted,
                    "retention: deleted the runs that finished more than {days} days ago"
                ),
                Err(e) => tracing::warn!(
                    error = %e,
                    "retention: deleting finished runs failed; the next pass tries again"
                ),
            }
            tokio::time::sleep(PRUNE_INTERVAL).await;
        }
    })
}
