//! The timers that bound calls, kept for the next call instead of made and dropped per call.
//!
//! A call that waits (an MCP request, a handler on the engine's pool, any handler that does
//! I/O) needs a timer for its time limit. Made new, a tokio timer is an allocation, a
//! registration in the runtime's timer wheel under the driver's lock and, when the call ends
//! first (as it nearly always does), a deregistration under the same lock: on a multi-thread
//! runtime a lock shared with every worker, ~1.7 µs of an MCP call (BENCHMARKS.md, issue 16
//! point 3). Most limits are the same few tens of seconds, so each call's deadline is later
//! than the one before it; tokio moves a registered timer to a later deadline without its
//! lock. So a call's timer is not dropped when the call ends: it goes back to its thread's
//! spares, still registered, and the next call that waits on that thread and runtime takes it
//! and moves its deadline.
//!
//! What that costs: a spare timer fires at its old deadline unless a call took it first, and
//! then wakes the task that last waited on it once, for nothing (a spurious wake, which every
//! future tolerates); until then it holds that task's waker. Spares are per runtime (a timer
//! must be polled in the runtime it was made in) and at most [`SPARES_PER_THREAD`] per thread,
//! oldest dropped first.

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
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<F> Limited<F> {
    /// Limits `future` to `timeout` counted from `started`.
    pub(super) fn new(future: F, started: Instant, timeout: Duration) -> Self {
        Self {
            future,
            deadline: started.checked_add(timeout),
            sleep: None,
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
        let sleep = this.sleep.get_or_insert_with(|| until(deadline));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F> Drop for Limited<F> {
    fn drop(&mut self) {
        if let Some(sleep) = self.sleep.take() {
            keep(sleep);
        }
    }
}

/// How many spare timers a thread keeps: enough for the calls one worker thread has waiting
/// at once in a busy agent, few enough that what they hold stays small.
pub(crate) const SPARES_PER_THREAD: usize = 16;

thread_local! {
    /// This thread's spare timers, each with the runtime it was made in; newest last.
    static SPARES: RefCell<Vec<(Id, Pin<Box<Sleep>>)>> = const { RefCell::new(Vec::new()) };
}

/// A timer that fires at `deadline`: a spare of this thread and runtime if there is one (its
/// deadline moved), a new one otherwise.
fn until(deadline: Instant) -> Pin<Box<Sleep>> {
    let spare = Handle::try_current().ok().and_then(|rt| {
        let id = rt.id();
        SPARES
            .try_with(|spares| {
                let mut spares = spares.try_borrow_mut().ok()?;
                let at = spares.iter().rposition(|(made_in, _)| *made_in == id)?;
                Some(spares.remove(at).1)
            })
            .ok()
            .flatten()
    });
    match spare {
        Some(mut sleep) => {
            sleep.as_mut().reset(deadline);
            sleep
        }
        None => Box::pin(tokio::time::sleep_until(deadline)),
    }
}

/// Keeps a call's timer for the next call on this thread, or drops it (outside a runtime, or
/// while the thread is ending).
fn keep(sleep: Pin<Box<Sleep>>) {
    let Ok(rt) = Handle::try_current() else {
        return;
    };
    let id = rt.id();
    // A thread that is ending drops the timer here instead.
    let _ = SPARES.try_with(|spares| {
        if let Ok(mut spares) = spares.try_borrow_mut() {
            if spares.len() == SPARES_PER_THREAD {
                drop(spares.remove(0));
            }
            spares.push((id, sleep));
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
        again.await;
        assert!(started.elapsed() >= Duration::from_millis(20));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_timer_made_in_another_runtime_is_not_taken() {
        let deadline = Instant::now() + Duration::from_secs(60);
        // Made and kept on a runtime of its own on another thread, then this thread's
        // spares hold only timers of this runtime.
        keep(until(deadline));
        let other = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("runtime");
            rt.block_on(async { keep(until(tokio::time::Instant::now())) });
            // Spares outlive their runtime on this thread: a later runtime does not take them.
            let later = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("runtime");
            later.block_on(async {
                let before = SPARES.with(|s| s.borrow().len());
                let fresh = until(tokio::time::Instant::now() + Duration::from_millis(5));
                let after = SPARES.with(|s| s.borrow().len());
                fresh.await;
                (before, after)
            })
        });
        assert_eq!(other.join().expect("thread"), (1, 1));
        assert_eq!(spares(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_thread_keeps_at_most_its_share_of_timers() {
        let deadline = Instant::now() + Duration::from_secs(60);
        for _ in 0..SPARES_PER_THREAD + 5 {
            keep(until(deadline));
            keep(Box::pin(tokio::time::sleep_until(deadline)));
        }
        assert_eq!(spares(), SPARES_PER_THREAD);
    }

    #[test]
    fn outside_a_runtime_a_timer_is_dropped_not_kept() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let inside = rt.enter();
        let sleep = until(Instant::now() + Duration::from_secs(1));
        drop(inside);
        keep(sleep);
        assert_eq!(spares(), 0);
    }
}
