//! The warm pool synchronous handlers run on, off the async workers.
//!
//! A handler's closure is handed to a pool thread over a channel and its result comes back on a
//! oneshot. A thread that finished a closure stays awake for [`SPIN`], looking for the next one
//! before it sleeps, so a run of quick synchronous calls is handed off without waking a sleeping
//! thread each time; an idle thread exits after [`KEEP_ALIVE`]. At most [`MAX_THREADS`] threads
//! run; more closures wait their turn. The closure runs inside the caller's tokio runtime
//! context (so `Handle::current()` works in it, as it does on tokio's blocking pool).

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send>;

/// How long a thread that finished a closure looks for the next one before it sleeps.
const SPIN: Duration = Duration::from_micros(50);
/// How long an idle thread waits for work before it exits.
const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// The most pool threads at once.
const MAX_THREADS: usize = 512;

struct Pool {
    jobs: Sender<Job>,
    queue: Mutex<Receiver<Job>>,
    /// Threads waiting for a job (started ones count from the start).
    idle: AtomicUsize,
    /// Jobs sent and not yet taken.
    pending: AtomicUsize,
    threads: AtomicUsize,
}

static POOL: LazyLock<Pool> = LazyLock::new(|| {
    let (jobs, queue) = std::sync::mpsc::channel();
    Pool {
        jobs,
        queue: Mutex::new(queue),
        idle: AtomicUsize::new(0),
        pending: AtomicUsize::new(0),
        threads: AtomicUsize::new(0),
    }
});

/// Runs `f` on a pool thread; `Err` carries its panic.
pub(crate) async fn run<F, R>(f: F) -> Result<R, Box<dyn Any + Send>>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let runtime = tokio::runtime::Handle::try_current().ok();
    let job: Job = Box::new(move || {
        let _context = runtime.as_ref().map(tokio::runtime::Handle::enter);
        let _ = tx.send(std::panic::catch_unwind(AssertUnwindSafe(f)));
    });
    if let Err(job) = POOL.submit(job) {
        // No pool thread runs and none could be started: tokio's blocking pool runs it.
        let _ = tokio::task::spawn_blocking(job).await;
    }
    match rx.await {
        Ok(result) => result,
        Err(_) => Err(Box::new(
            "the thread running the handler stopped before it finished",
        )),
    }
}

impl Pool {
    /// Queues a job, starting a thread when the waiting ones do not cover the queued jobs
    /// (under the cap). The job comes back when no thread runs and none could be started.
    fn submit(&'static self, job: Job) -> Result<(), Job> {
        let queued = self.pending.fetch_add(1, Ordering::SeqCst) + 1;
        if queued > self.idle.load(Ordering::SeqCst)
            && self.threads.fetch_add(1, Ordering::SeqCst) < MAX_THREADS
        {
            self.idle.fetch_add(1, Ordering::SeqCst);
            let started = std::thread::Builder::new()
                .name("harnessx-sync".to_owned())
                .spawn(move || self.work());
            if started.is_err() {
                self.idle.fetch_sub(1, Ordering::SeqCst);
                if self.threads.fetch_sub(1, Ordering::SeqCst) == 1 {
                    self.pending.fetch_sub(1, Ordering::SeqCst);
                    return Err(job);
                }
            }
        } else if queued > self.idle.load(Ordering::SeqCst) {
            // At the cap: the job waits for the next thread that finishes.
            self.threads.fetch_sub(1, Ordering::SeqCst);
        }
        // The receiver lives in the pool, which is never dropped: sending cannot fail.
        self.jobs.send(job).map_err(|e| e.0)
    }

    /// A pool thread: take a job, run it, wait for the next; leave after [`KEEP_ALIVE`] idle.
    fn work(&self) {
        while let Some(job) = self.wait() {
            job();
            self.idle.fetch_add(1, Ordering::SeqCst);
        }
        self.threads.fetch_sub(1, Ordering::SeqCst);
    }

    /// Waits as an idle thread, spinning for [`SPIN`] and then asleep, for a job (`None`: none
    /// came for [`KEEP_ALIVE`] and no queued job needs this thread; it is no longer idle).
    fn wait(&self) -> Option<Job> {
        let spin_until = Instant::now() + SPIN;
        while Instant::now() < spin_until {
            if let Ok(queue) = self.queue.try_lock() {
                match queue.try_recv() {
                    Ok(job) => return Some(self.take(job)),
                    Err(TryRecvError::Disconnected) => return self.leave(),
                    Err(TryRecvError::Empty) => {}
                }
            }
            std::hint::spin_loop();
        }
        loop {
            let deadline = Instant::now() + KEEP_ALIVE;
            let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            match queue.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(job) => return Some(self.take(job)),
                Err(RecvTimeoutError::Disconnected) => return self.leave(),
                Err(RecvTimeoutError::Timeout) => {}
            }
            drop(queue);
            self.idle.fetch_sub(1, Ordering::SeqCst);
            // A submitter that counted this thread as idle sent a job for it: stay for it.
            if self.pending.load(Ordering::SeqCst) <= self.idle.load(Ordering::SeqCst) {
                return None;
            }
            self.idle.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn take(&self, job: Job) -> Job {
        self.idle.fetch_sub(1, Ordering::SeqCst);
        self.pending.fetch_sub(1, Ordering::SeqCst);
        job
    }

    fn leave(&self) -> Option<Job> {
        self.idle.fetch_sub(1, Ordering::SeqCst);
        None
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;

    /// 32 closures that can only finish together: the pool starts a thread for each one that
    /// no waiting thread covers, and strands none.
    #[tokio::test(flavor = "current_thread")]
    async fn closures_that_wait_for_each_other_all_get_a_thread() {
        let barrier = Arc::new(Barrier::new(32));
        let runs = (0..32).map(|i| {
            let barrier = Arc::clone(&barrier);
            run(move || {
                barrier.wait();
                i
            })
        });
        let done = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(runs))
            .await
            .expect("every closure ran");
        let mut values: Vec<i32> = done.into_iter().map(|r| r.unwrap()).collect();
        values.sort_unstable();
        assert_eq!(values, (0..32).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn closures_run_off_the_worker_in_its_runtime_context_and_panics_come_back() {
        let worker = std::thread::current().id();
        let (thread, in_runtime) = run(|| {
            (
                std::thread::current().id(),
                tokio::runtime::Handle::try_current().is_ok(),
            )
        })
        .await
        .unwrap();
        assert_ne!(thread, worker);
        assert!(in_runtime);
        let panic = run(|| -> () { panic!("pool boom") }).await.unwrap_err();
        assert_eq!(crate::engine::panic_text(panic.as_ref()), "pool boom");
        // The thread that panicked is still usable.
        for i in 0..100 {
            assert_eq!(run(move || i * 2).await.unwrap(), i * 2);
        }
    }
}
