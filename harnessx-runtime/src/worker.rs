//! The tasks a runtime runs: workers that claim and drive runs, the question timer, and the
//! heartbeat that renews leases and notices cancels.

use std::sync::Arc;
use std::time::Duration;

use harnessx::agent::RunOutcome;
use harnessx::journal::PendingKind;
use harnessx::{Agent, AgentError, AgentEvent, Conversation, PermissionManager};
use tracing::Instrument;

use crate::error::StoreError;
use crate::journal::StoreJournal;
use crate::runtime::{Shared, StoredNotice};
use crate::store::{Asked, Claim, RunEnd, Wakeup, now_ms};

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// How long from `now_ms` until `at_ms` (both store times in milliseconds); zero when past.
fn until_ms(at_ms: i64, now_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(at_ms - now_ms).unwrap_or(0))
}

/// A worker: claims queued runs one at a time; sleeps on the wake-up when there are none.
pub(crate) async fn work(shared: Arc<Shared>) {
    loop {
        let claim = {
            // Listening before the claim: a run queued while it looks is not missed.
            let notified = shared.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if shared.shutdown.is_cancelled() {
                return;
            }
            match shared
                .store
                .claim_next(&shared.owner, millis(shared.lease))
                .await
            {
                // (A wake-up this worker was given but no longer needs passes to another
                // idle worker when `notified` drops here.)
                Ok(Some(claim)) => claim,
                Ok(None) => {
                    tokio::select! {
                        () = &mut notified => continue,
                        () = shared.shutdown.cancelled() => return,
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "claiming a run failed; retrying in a second");
                    shared.store_failed(&e);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        () = shared.shutdown.cancelled() => return,
                    }
                }
            }
        };
        // More runs are queued: pass the wake-up on to another idle worker (only then, so the
        // last queued run does not send a worker to look at an empty queue).
        if claim.more_queued {
            shared.queued();
        }
        // Every log line of the run's drive (and of its agent's spans) carries its id. The span
        // is at `error` level so that it is on whenever anything is logged: a warning under a
        // `warn` filter carries the run id too. Without a subscriber it costs nothing.
        let span = tracing::error_span!("run", run_id = claim.run.id.0, agent = %claim.run.agent);
        drive(&shared, claim).instrument(span).await;
    }
}

/// The run's agent — built from its factory, or the catalog's agent at the run's version —
/// and the permission session it runs with: the conversation's grants.
async fn build_agent(shared: &Shared, claim: &Claim) -> Result<(Agent, PermissionManager), String> {
    let name = &claim.run.agent;
    let agent = match (
        shared.agents.get(name),
        claim.run.agent_version,
        &shared.catalog,
    ) {
        (Some(agent), _, _) => agent.clone(),
        (None, Some(version), Some(catalog)) => catalog.agent(name, version).await?,
        _ => {
            return Err(format!(
                "no agent named `{name}` is registered in this worker; register it with \
                 `.agent(..)`"
            ));
        }
    };
    let session = agent.permissions().session();
    for tool in &claim.grants {
        session.grant_session(tool.clone());
    }
    Ok((agent, session))
}

/// One pass of the agent loop over the run's journal, in the conversation's permission session.
async fn run_journaled(
    agent: &Agent,
    transcript: Vec<harnessx::Message>,
    input: String,
    permissions: PermissionManager,
    journal: Arc<StoreJournal>,
    sink: &(dyn Fn(AgentEvent) + Send + Sync),
) -> Result<RunOutcome, AgentError> {
    let mut conversation = Conversation::from(transcript);
    agent
        .prompt(input)
        .conversation(&mut conversation)
        .permissions(permissions)
        .run_journaled(journal, Some(sink))
        .await
}

/// Drives one claimed run through the agent loop until it completes, fails, pauses or is
/// cancelled, and records how it ended.
async fn drive(shared: &Arc<Shared>, claim: Claim) {
    let lease = claim.lease.clone();
    let id = lease.run;
    tracing::info!(
        generation = lease.generation,
        steps = claim.steps.len(),
        "driving the run"
    );
    let (agent, permissions) = match build_agent(shared, &claim).await {
        Ok(built) => built,
        Err(message) => {
            end(shared, &lease, RunEnd::Failed(message), Vec::new()).await;
            return;
        }
    };
    let journal = Arc::new(StoreJournal::new(
        Arc::clone(&shared.store),
        lease.clone(),
        &claim.steps,
        shared.events.clone(),
        shared.observer.clone(),
    ));
    let cancel = tokio_util::sync::CancellationToken::new();
    shared.running().insert(id, cancel.clone());
    let sink_journal = Arc::clone(&journal);
    let sink = move |event: AgentEvent| sink_journal.on_event(event);
    let outcome = tokio::select! {
        // Stopping is looked at first, so once the process is stopping the loop is not polled
        // again and writes nothing more: whatever the shutdown does to the run's calls (tasks
        // cancelled, servers killed) never reaches its journal.
        biased;
        () = shared.shutdown.cancelled() => {
            // Leave the run as last journaled; `Runtime::shutdown` hands it back to the queue,
            // else the next start recovers it.
            shared.running().remove(&id);
            return;
        }
        outcome = run_journaled(&agent, claim.transcript, claim.run.input, permissions, journal.clone(), &sink) => Some(outcome),
        () = cancel.cancelled() => None,
    };
    shared.running().remove(&id);
    // A factory's agent is this run's own; a catalog's is shared by the version's runs and
    // lives on with the catalog.
    if claim.run.agent_version.is_none() {
        agent.close().await;
    }
    let leftovers = journal.take_buffer();
    match outcome {
        None => end(shared, &lease, RunEnd::Cancelled, leftovers).await,
        Some(Ok(RunOutcome::Completed(result))) => {
            end(shared, &lease, RunEnd::Completed(result), leftovers).await
        }
        Some(Ok(RunOutcome::NeedsInput(pending))) => {
            tracing::info!(pending = pending.len(), "the run waits for input");
            let now = now_ms();
            let asked = pending
                .into_iter()
                .map(|p| {
                    let deadline_ms = match &p.kind {
                        PendingKind::Question { window_ms, .. } => Some(
                            now.saturating_add(
                                window_ms
                                    .map(|w| i64::try_from(w).unwrap_or(i64::MAX))
                                    .unwrap_or(millis(shared.window)),
                            ),
                        ),
                        _ => None,
                    };
                    Asked {
                        pending: p,
                        deadline_ms,
                    }
                })
                .collect();
            match shared.store.pause_for_input(&lease, asked, leftovers).await {
                Ok(events) => shared.publish(events),
                Err(e) => fail_after_store_error(shared, &lease, e).await,
            }
            shared.timer.notify_one();
            // A cancel that arrived while the run was pausing finds it waiting now.
            if cancel.is_cancelled()
                && let Ok(Ok(crate::store::Cancelled::Now(events))) = shared.store.cancel(id).await
            {
                shared.publish(events);
            }
        }
        Some(Ok(_)) => {
            end(
                shared,
                &lease,
                RunEnd::Failed("the agent loop ended in a way this runtime does not know".into()),
                leftovers,
            )
            .await
        }
        Some(Err(AgentError::Journal(e))) => {
            end(shared, &lease, RunEnd::Failed(e.to_string()), leftovers).await
        }
        Some(Err(e)) => end(shared, &lease, RunEnd::Failed(e.to_string()), leftovers).await,
    }
}

async fn end(
    shared: &Shared,
    lease: &crate::store::Lease,
    how: RunEnd,
    events: Vec<crate::types::RunEvent>,
) {
    let state = match &how {
        RunEnd::Completed(_) => "completed",
        RunEnd::Failed(_) => "failed",
        RunEnd::Cancelled => "cancelled",
    };
    tracing::info!(state, "the run ended");
    match shared.store.finish(lease, how, events).await {
        Ok(events) => shared.publish(events),
        Err(e) => fail_after_store_error(shared, lease, e).await,
    }
}

/// A run whose last write failed: mark it failed if the store lets us; if not (or the run moved
/// to another worker), leave it — it is still `running` and the next start recovers it from
/// what was acknowledged.
async fn fail_after_store_error(shared: &Shared, lease: &crate::store::Lease, error: StoreError) {
    tracing::error!(run = %lease.run, error = %error, "a run's store write failed");
    shared.store_failed(&error);
    if matches!(error, StoreError::Fenced { .. }) {
        return;
    }
    if let Ok(events) = shared
        .store
        .finish(lease, RunEnd::Failed(error.to_string()), Vec::new())
        .await
    {
        shared.publish(events);
    }
}

/// Expires questions at their deadlines: sleeps until the earliest one (or until a pause or an
/// answer moves it), never polls.
pub(crate) async fn question_timer(shared: Arc<Shared>) {
    loop {
        let notified = shared.timer.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let next = match shared.store.next_deadline().await {
            Ok(next) => next,
            Err(e) => {
                tracing::error!(error = %e, "reading question deadlines failed");
                shared.store_failed(&e);
                None
            }
        };
        let now = now_ms();
        if let Some(deadline) = next
            && deadline <= now
        {
            match shared.store.expire_questions(now).await {
                Ok((requeued, events)) => {
                    shared.publish(events);
                    if !requeued.is_empty() {
                        shared.queued();
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "expiring questions failed; retrying in a second");
                    shared.store_failed(&e);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        () = shared.shutdown.cancelled() => return,
                    }
                }
            }
            continue;
        }
        let wait = next.map(|d| until_ms(d, now));
        tokio::select! {
            () = async {
                match wait {
                    Some(w) => tokio::time::sleep(w).await,
                    None => std::future::pending().await,
                }
            } => {}
            () = &mut notified => {}
            () = shared.shutdown.cancelled() => return,
        }
    }
}

/// Renews this process's leases every third of a lease, fires the tokens of runs whose cancel
/// was requested through the store, and re-queues runs whose lease lapsed (a dead worker's)
/// the moment it lapses: between renewals it sleeps until the earliest foreign lease ends,
/// read again at every renewal (a live worker's renewal moves it), so a dead worker's runs are
/// found at their lease's end, not at the next tick.
pub(crate) async fn heartbeat(shared: Arc<Shared>) {
    let every = shared.lease / 3;
    let mut renew_at = tokio::time::Instant::now() + every;
    loop {
        let expiry = match shared.store.next_lease_expiry(&shared.owner).await {
            Ok(expiry) => expiry,
            Err(e) => {
                tracing::error!(error = %e, "reading leases failed");
                shared.store_failed(&e);
                None
            }
        };
        let now = now_ms();
        let mut expiry = expiry;
        if let Some(until) = expiry
            && until < now
        {
            if release_lapsed(&shared, now).await {
                continue; // the next lease to lapse may end before the next renewal
            }
            // Failed (reported): try again at the next renewal, not in a loop.
            expiry = None;
        }
        // Wake just after the earliest foreign lease ends (its `until` is the last instant it
        // holds), or at the next renewal, whichever is first.
        let lapse_at = expiry.map(|until| {
            tokio::time::Instant::now() + until_ms(until, now) + Duration::from_millis(1)
        });
        let wake_at = lapse_at.map_or(renew_at, |at| at.min(renew_at));
        tokio::select! {
            () = tokio::time::sleep_until(wake_at) => {}
            () = shared.shutdown.cancelled() => return,
        }
        if tokio::time::Instant::now() < renew_at {
            continue;
        }
        renew_at = tokio::time::Instant::now() + every;
        match shared
            .store
            .heartbeat(&shared.owner, millis(shared.lease))
            .await
        {
            Ok(cancelled) => {
                let running = shared.running();
                for id in cancelled {
                    if let Some(token) = running.get(&id) {
                        token.cancel();
                    }
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "renewing leases failed");
                shared.store_failed(&e);
            }
        }
    }
}

/// Re-queues the runs whose lease ended before `now` and wakes an idle worker for them;
/// false when the store failed (reported).
async fn release_lapsed(shared: &Shared, now: i64) -> bool {
    match shared.store.release_expired_leases(now).await {
        Ok(0) => true,
        Ok(_) => {
            shared.queued();
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "releasing lapsed leases failed");
            shared.store_failed(&e);
            false
        }
    }
}

/// Turns another process's changes (a store's [`Wakeup`]s) into this process's wake-ups: idle
/// workers look for runs, the question timer re-reads deadlines, a cancelled run's calls stop.
pub(crate) async fn forward_wakeups(
    shared: Arc<Shared>,
    mut wakeups: tokio::sync::broadcast::Receiver<Wakeup>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let wakeup = tokio::select! {
            w = wakeups.recv() => w,
            () = shared.shutdown.cancelled() => return,
        };
        match wakeup {
            Ok(Wakeup::Queued) => shared.queued(),
            Ok(Wakeup::Deadlines) => shared.timer.notify_one(),
            Ok(Wakeup::Cancel(run)) => {
                if let Some(token) = shared.running().get(&run) {
                    token.cancel();
                }
            }
            Ok(Wakeup::Events { run, seq }) => {
                let _ = shared.stored.send(StoredNotice::Run(run, seq));
            }
            Ok(_) | Err(RecvError::Lagged(_)) => {
                shared.wake.notify_waiters();
                shared.timer.notify_one();
                let _ = shared.stored.send(StoredNotice::All);
            }
            Err(RecvError::Closed) => return,
        }
    }
}
