//! Where synchronous handlers run: a warm pool of threads of the engine's own, never the async
//! worker that called them.
//!
//! Handing a quick synchronous body to another thread and back costs two wake-ups of sleeping
//! threads; on a virtual machine each is several microseconds, far more than the body. The
//! pool keeps both cheap where the call pattern allows, with the two waits every spin-then-park
//! lock uses, each bounded by about what a wake-up costs (so a wait that fails wastes at most
//! that much):
//!
//! * a pool thread that finished a job watches the queue for [`SPIN_FOR_WORK`] before it parks
//!   (one thread at a time), so the next call of a busy agent is taken at once;
//! * the caller watches for the result for [`SPIN_FOR_RESULT`] before its task parks, so a
//!   body that finishes in microseconds answers without a wake-up. The handler still never runs
//!   on the caller's thread; a body that takes longer costs the caller that short wait once.
//!
//! Both waits are skipped on a machine with one CPU, where spinning would only delay the
//! thread it waits for. Threads start on demand up to [`MAX_THREADS`] (a job past that waits
//! for one to finish) and leave after [`KEEP_ALIVE`] without work. A job runs inside the tokio
//! runtime of its caller (so `Handle::current()` works in a synchronous tool, as it does on
//! tokio's blocking pool), and a panic in it reaches the caller, which resumes it. Unlike tokio's
//! pool, these threads belong to no runtime: dropping a runtime does not wait for a synchronous
//! handler still running (nothing waits for its result any more), and the process exiting ends it.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, LazyLock, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::output::ToolError;

/// How long a pool thread watches for more work before it parks.
pub(crate) const SPIN_FOR_WORK: Duration = Duration::from_micros(50);
/// How long a caller watches for its result before its task parks.
pub(crate) const SPIN_FOR_RESULT: Duration = Duration::from_micros(10);
/// The most threads the pool runs at once (tokio's blocking pool has the same default).
pub(crate) const MAX_THREADS: usize = 512;
/// How long a thread without work stays before it leaves.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

/// Runs a synchronous closure on the pool. A panic is resumed in the calling task, so the
/// engine reports it exactly like a panic in an async handler.
pub(crate) async fn run_blocking<F, R>(f: F) -> Result<R, ToolError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let (done, mut result) = oneshot::channel();
    let runtime = tokio::runtime::Handle::try_current().ok();
    let job: Job = Box::new(move || {
        let _inside = runtime.as_ref().map(tokio::runtime::Handle::enter);
        // Nobody waiting any more (the call timed out) is not this thread's concern.
        let _ = done.send(std::panic::catch_unwind(AssertUnwindSafe(f)));
    });
    POOL.submit(job).map_err(|e| {
        ToolError::failed(format!(
            "the engine could not start a thread for this synchronous tool ({e}); the tool did \
             not run"
        ))
    })?;
    if POOL.spins {
        let start = Instant::now();
        loop {
            match result.try_recv() {
                Ok(outcome) => return Ok(resumed(outcome)),
                Err(oneshot::error::TryRecvError::Closed) => break,
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            if start.elapsed() >= SPIN_FOR_RESULT {
                break;
            }
            std::hint::spin_loop();
        }
    }
    match result.await {
        Ok(outcome) => Ok(resumed(outcome)),
        // The job was dropped without running: only a thread that could not start leaves one
        // behind, and `submit` reports that. Like a task cancelled by the runtime shutting
        // down, such a call has no result to report (see the engine's `joined`).
        Err(_) => std::future::pending().await,
    }
}

/// The closure's value, or its panic resumed here.
fn resumed<R>(outcome: std::thread::Result<R>) -> R {
    match outcome {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

static POOL: LazyLock<Pool> = LazyLock::new(|| Pool::new(KEEP_ALIVE));

struct Pool {
    state: Mutex<State>,
    /// Parked threads wait here for a permit.
    wake: Condvar,
    /// The queue's length, readable without the lock: what a spinning thread watches.
    queued: AtomicUsize,
    keep_alive: Duration,
    /// Whether waits spin at all (more than one CPU).
    spins: bool,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// Threads alive.
    threads: usize,
    /// Threads started that have not looked at the queue yet.
    starting: usize,
    /// Threads parked, permitted or not.
    parked: usize,
    /// Parked threads told to wake and look at the queue, that have not yet.
    permits: usize,
    /// Threads watching the queue without the lock.
    spinning: usize,
}

impl State {
    /// Threads that will look at the queue soon without being told again.
    fn coming(&self) -> usize {
        self.starting + self.permits + self.spinning
    }
}

impl Pool {
    fn new(keep_alive: Duration) -> Self {
        Self {
            state: Mutex::default(),
            wake: Condvar::new(),
            queued: AtomicUsize::new(0),
            keep_alive,
            spins: thread::available_parallelism().is_ok_and(|n| n.get() > 1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Jobs run outside the lock and catch their panics: a poisoned lock has a sound state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `job` and makes sure a thread comes for it: one already on its way, a parked one
    /// woken, or a new one.
    fn submit(&'static self, job: Job) -> std::io::Result<()> {
        let mut state = self.lock();
        state.jobs.push_back(job);
        self.queued.store(state.jobs.len(), Ordering::Release);
        if state.jobs.len() <= state.coming() {
            return Ok(());
        }
        if state.parked > state.permits {
            state.permits += 1;
            self.wake.notify_one();
            return Ok(());
        }
        if state.threads >= MAX_THREADS {
            // Every thread is busy: the job waits for the first one to finish.
            return Ok(());
        }
        let started = thread::Builder::new()
            .name("harnessx-sync".to_owned())
            .spawn(move || self.work());
        match started {
            Ok(_) => {
                state.threads += 1;
                state.starting += 1;
                Ok(())
            }
            Err(e) => {
                if state.threads == 0 {
                    // No thread will ever come for it: take it back, the caller is told.
                    state.jobs.pop_back();
                    self.queued.store(state.jobs.len(), Ordering::Release);
                    return Err(e);
                }
                // A running thread takes it when it finishes.
                Ok(())
            }
        }
    }

    /// A pool thread: takes jobs while there are any, watches for more for a moment, parks,
    /// and leaves after [`Pool::keep_alive`] without work.
    fn work(&self) {
        let mut state = self.lock();
        state.starting -= 1;
        loop {
            if let Some(job) = state.jobs.pop_front() {
                self.queued.store(state.jobs.len(), Ordering::Release);
                drop(state);
                job();
                state = self.lock();
                continue;
            }
            if self.spins && state.spinning == 0 {
                state.spinning += 1;
                drop(state);
                self.watch_for_work();
                state = self.lock();
                state.spinning -= 1;
                if !state.jobs.is_empty() {
                    continue;
                }
            }
            state.parked += 1;
            let until = Instant::now() + self.keep_alive;
            loop {
                let left = until.saturating_duration_since(Instant::now());
                state = match self.wake.wait_timeout(state, left) {
                    Ok((state, _)) => state,
                    Err(poisoned) => poisoned.into_inner().0,
                };
                if state.permits > 0 {
                    state.permits -= 1;
                    state.parked -= 1;
                    break;
                }
                if Instant::now() >= until {
                    state.parked -= 1;
                    state.threads -= 1;
                    return;
                }
            }
        }
    }

    /// Spins until a job is queued or [`SPIN_FOR_WORK`] has passed.
    fn watch_for_work(&self) {
        let start = Instant::now();
        let mut turns = 0_u32;
        while self.queued.load(Ordering::Acquire) == 0 {
            std::hint::spin_loop();
            turns = turns.wrapping_add(1);
            if turns.is_multiple_of(64) && start.elapsed() >= SPIN_FOR_WORK {
                return;
            }
        }
    }

    #[cfg(test)]
    fn threads(&self) -> usize {
        self.lock().threads
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn pool(keep_alive: Duration) -> &'static Pool {
        Box::leak(Box::new(Pool::new(keep_alive)))
    }

    /// Jobs queued together run together: none waits behind another that is still running.
    #[test]
    fn jobs_submitted_at_once_run_at_once() {
        let pool = pool(KEEP_ALIVE);
        let started = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..8 {
            let (started, tx) = (Arc::clone(&started), tx.clone());
            pool.submit(Box::new(move || {
                // Each job holds its thread until all eight have started (or gives up).
                started.fetch_add(1, Ordering::SeqCst);
                let until = Instant::now() + Duration::from_secs(5);
                while started.load(Ordering::SeqCst) < 8 && Instant::now() < until {
                    thread::sleep(Duration::from_millis(1));
                }
                tx.send(started.load(Ordering::SeqCst)).unwrap();
            }))
            .unwrap();
        }
        for _ in 0..8 {
            let seen = rx.recv_timeout(Duration::from_secs(30)).unwrap();
            assert_eq!(
                seen, 8,
                "a job waited behind another that was still running"
            );
        }
        assert!(pool.threads() >= 8);
    }

    /// A thread left without work leaves after the keep-alive, and the pool starts a new one
    /// for the next job.
    #[test]
    fn idle_threads_leave_and_come_back_on_demand() {
        let pool = pool(Duration::from_millis(50));
        let (tx, rx) = std::sync::mpsc::channel();
        let sent = tx.clone();
        pool.submit(Box::new(move || sent.send(1).unwrap()))
            .unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(1));
        let deadline = Instant::now() + Duration::from_secs(5);
        while pool.threads() > 0 {
            assert!(Instant::now() < deadline, "the idle thread never left");
            thread::sleep(Duration::from_millis(10));
        }
        pool.submit(Box::new(move || tx.send(2).unwrap())).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(2));
    }

    /// Many short jobs from several threads at once are each run exactly once.
    #[test]
    fn every_job_runs_once() {
        let pool = pool(KEEP_ALIVE);
        let ran = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let submitters: Vec<_> = (0..4)
            .map(|_| {
                let (ran, tx) = (Arc::clone(&ran), tx.clone());
                thread::spawn(move || {
                    for _ in 0..2_000 {
                        let (ran, tx) = (Arc::clone(&ran), tx.clone());
                        pool.submit(Box::new(move || {
                            ran.fetch_add(1, Ordering::Relaxed);
                            tx.send(()).unwrap();
                        }))
                        .unwrap();
                    }
                })
            })
            .collect();
        for s in submitters {
            s.join().unwrap();
        }
        for _ in 0..8_000 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("a job was lost");
        }
        assert_eq!(ran.load(Ordering::Relaxed), 8_000);
    }

    /// A synchronous tool sees its caller's runtime, as on tokio's blocking pool.
    #[tokio::test(flavor = "current_thread")]
    async fn a_job_runs_inside_its_callers_runtime() {
        let (main, pool) = run_blocking(|| {
            (
                tokio::runtime::Handle::try_current().is_ok(),
                thread::current().name().map(str::to_owned),
            )
        })
        .await
        .unwrap();
        assert!(main, "no runtime inside the job");
        assert_eq!(pool.as_deref(), Some("harnessx-sync"));
    }

    /// A panic in the job is resumed in the caller.
    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_reaches_the_caller() {
        let caught = futures::FutureExt::catch_unwind(AssertUnwindSafe(run_blocking(|| {
            panic!("boom in the pool")
        })))
        .await;
        let payload = caught.expect_err("the panic was resumed");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom in the pool"));
    }
}
