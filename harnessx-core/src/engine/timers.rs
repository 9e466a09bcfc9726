//! The timers that bound calls, kept for the next call instead of made and dropped per call.
//!
//! A call that waits (an MCP request, a handler on the engine's pool, any handler that does
//! I/O) needs a timer for its time limit. Made new, a tokio timer is an allocation, a
//! registration in the runtime's timer wheel under the driver's lock and, when the call ends
//! first (as it nearly always does), a deregistration under the same lock: on a multi-thread
//! runtime a lock shared with every worker, ~1.7 µs of an MCP call
//! (`harnessx/docs/internals/performance.md`). Most limits are the same few tens of seconds, so each call's deadline is later
//! than the one before it; tokio moves a registered timer to a later deadline without its
//! lock. So a call's timer is not dropped when the call ends: it goes back to its thread's
//! spares, still registered, and the next call that waits on that thread and runtime takes it
//! and moves its deadline.
//!
//! What that costs: a spare timer fires at its old deadline unless a call took it first, and
//! then wakes the task that last waited on it once, for nothing (a spurious wake, which every
//! future tolerates); until then it holds that task's waker. A thread keeps the spares of one
//! runtime at a time (a timer is taken only in the runtime it was made in, and a spare of a
//! runtime the thread left is dropped when it keeps one of another), at most
//! [`SPARES_PER_THREAD`], oldest dropped first. The spares of the last runtime a thread ran stay
//! until the thread ends; they hold that runtime's timer handle, not its tasks. Under tokio's
//! paused clock (`test-util`) a spare is a pending timer like any other: a runtime with nothing
//! else to do advances its clock to the spare's deadline.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::runtime::{Handle, Id};
use tokio::time::{Instant, Sleep};

/// A call's future under its time limit: resolves to `None` when the limit passed first.
///
/// A future that finishes in its first poll (the common case for quick tools) never needs a
/// timer; one that waits gets a timer (a spare where there is one) whose deadline counts from
/// `started`, exactly as `tokio::time::timeout` would. The timer goes back to the spares when
/// this is dropped.
pub(super) struct Limited<F> {
    future: F,
    /// `None` when the limit is too far away to represent: no practical limit.
    deadline: Option<Instant>,
    /// Armed on the first poll that finds the future still running.
    timer: Option<Timer>,
}

/// A timer and the runtime it was made in (where it must be polled, and kept).
struct Timer {
    runtime: Id,
    sleep: Pin<Box<Sleep>>,
}

impl<F> Limited<F> {
    /// Limits `future` to `timeout` counted from `started`.
    pub(super) fn new(future: F, started: Instant, timeout: Duration) -> Self {
        Self {
            future,
            deadline: started.checked_add(timeout),
            timer: None,
        }
    }
}

impl<F: Future + Unpin> Future for Limited<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Poll::Ready(output) = Pin::new(&mut this.future).poll(cx) {
            return Poll::Ready(Some(output));
        }
        let Some(deadline) = this.deadline else {
            return Poll::Pending;
        };
        let timer = this.timer.get_or_insert_with(|| until(deadline));
        match timer.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F> Drop for Limited<F> {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            keep(timer);
        }
    }
}

/// How many spare timers a thread keeps: enough for the calls one worker thread has waiting
/// at once in a busy agent, few enough that what they hold stays small.
const SPARES_PER_THREAD: usize = 16;

thread_local! {
    /// This thread's spare timers, all of one runtime; newest last.
    static SPARES: RefCell<Vec<Timer>> = const { RefCell::new(Vec::new()) };
}

/// A timer that fires at `deadline`: a spare of this thread and runtime if there is one (its
/// deadline moved), a new one otherwise. Only called inside a runtime (the engine runs in one).
fn until(deadline: Instant) -> Timer {
    let runtime = Handle::current().id();
    let spare = SPARES
        .try_with(|spares| {
            let mut spares = spares.try_borrow_mut().ok()?;
            let at = spares.iter().rposition(|spare| spare.runtime == runtime)?;
            Some(spares.remove(at))
        })
        .ok()
        .flatten();
    match spare {
        Some(mut timer) => {
            timer.sleep.as_mut().reset(deadline);
            timer
        }
        None => Timer {
            runtime,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
        },
    }
}

/// Keeps a call's timer for the next call on this thread. A thread keeps the spares of one
/// runtime: those of another (one the thread ran before, now perhaps gone, whose driver a kept
/// timer would keep alive) are dropped here. A thread that is ending drops the timer instead.
fn keep(timer: Timer) {
    let _ = SPARES.try_with(|spares| {
        if let Ok(mut spares) = spares.try_borrow_mut() {
            spares.retain(|spare| spare.runtime == timer.runtime);
            if spares.len() == SPARES_PER_THREAD {
                drop(spares.remove(0));
            }
            spares.push(timer);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn spares() -> usize {
        SPARES.with(|s| s.borrow().len())
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_future_ready_at_once_arms_no_timer_and_one_that_waits_keeps_its_timer() {
        let started = Instant::now();
        let ready = Limited::new(std::future::ready(7), started, Duration::from_millis(10));
        assert_eq!(ready.await, Some(7));
        assert_eq!(spares(), 0, "no timer was made");

        let never = Limited::new(
            std::future::pending::<()>(),
            started,
            Duration::from_millis(10),
        );
        assert_eq!(never.await, None, "the limit passed first");
        assert!(started.elapsed() >= Duration::from_millis(10));
        assert_eq!(spares(), 1, "its timer was kept");

        let slow = Limited::new(
            Box::pin(tokio::time::sleep(Duration::from_millis(5))),
            Instant::now(),
            Duration::from_secs(60),
        );
        assert_eq!(slow.await, Some(()), "it took the spare and finished first");
        assert_eq!(spares(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_kept_timer_is_taken_again_and_fires_at_its_new_deadline() {
        let first = until(Instant::now() + Duration::from_secs(60));
        keep(first);
        assert_eq!(spares(), 1);
        let started = Instant::now();
        let again = until(started + Duration::from_millis(20));
        assert_eq!(spares(), 0, "the spare was taken");
        again.sleep.await;
        assert!(started.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn a_thread_keeps_the_spares_of_one_runtime_and_takes_only_its_own() {
        let first = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let first_id = first.handle().id();
        first.block_on(async { keep(until(Instant::now() + Duration::from_secs(60))) });
        drop(first);
        assert_eq!(
            spares(),
            1,
            "kept after its runtime ended, until another is kept"
        );

        let later = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let later_id = later.handle().id();
        later.block_on(async {
            let fresh = until(Instant::now() + Duration::from_millis(5));
            assert_eq!(fresh.runtime, later_id);
            assert_eq!(spares(), 1, "the first runtime's spare was not taken");
            let mut fresh = fresh;
            fresh.sleep.as_mut().await;
            keep(fresh);
        });
        let runtimes: Vec<Id> = SPARES.with(|s| s.borrow().iter().map(|t| t.runtime).collect());
        assert_eq!(
            runtimes,
            vec![later_id],
            "the first runtime's spare was dropped"
        );
        assert_ne!(first_id, later_id);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_thread_keeps_at_most_its_share_of_timers() {
        let deadline = Instant::now() + Duration::from_secs(60);
        let timers: Vec<Timer> = (0..SPARES_PER_THREAD + 5)
            .map(|_| until(deadline))
            .collect();
        for timer in timers {
            keep(timer);
        }
        assert_eq!(spares(), SPARES_PER_THREAD);
    }
}
