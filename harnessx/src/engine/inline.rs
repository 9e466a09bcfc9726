//! Running a handler's future without a task of its own, where a task would buy nothing.
//!
//! On a current-thread runtime a spawned task runs on the same thread as the caller, so it
//! neither runs in parallel with it nor lets a timeout fire while the handler blocks: spawning
//! only costs a task allocation and a wake-up per call. There the engine polls the handler's
//! future inline instead, with the guarantees the task gave: a panic is caught and becomes a
//! crash result, and a handler given up on (timed out, or its caller dropped) is cancelled and
//! gets [`CANCEL_GRACE`](super::CANCEL_GRACE) to finish on a task of its own before it is dropped.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_util::sync::CancellationToken;

/// Whether handler futures run inline (a current-thread runtime) rather than on a task each.
pub(super) fn runs_inline() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|rt| rt.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
}

/// A handler's future polled in place: resolves to its output, or to the panic's message.
/// Dropped before it finished, it fires its cancellation token and moves the future to a task
/// that gives it [`CANCEL_GRACE`](super::CANCEL_GRACE) to stop.
pub(super) struct Inline<F: Future + Send + 'static> {
    fut: Option<Pin<Box<F>>>,
    cancel: CancellationToken,
}

impl<F: Future + Send + 'static> Inline<F> {
    pub(super) fn new(fut: F, cancel: CancellationToken) -> Self {
        Self {
            fut: Some(Box::pin(fut)),
            cancel,
        }
    }
}

impl<F: Future + Send + 'static> Future for Inline<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(fut) = self.fut.as_mut() else {
            return Poll::Ready(Err("the handler was polled after it finished".to_owned()));
        };
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                self.fut = None;
                Poll::Ready(Ok(output))
            }
            Err(payload) => {
                self.fut = None;
                Poll::Ready(Err(panic_text(payload.as_ref())))
            }
        }
    }
}

impl<F: Future + Send + 'static> Drop for Inline<F> {
    fn drop(&mut self) {
        self.cancel.cancel();
        let Some(fut) = self.fut.take() else {
            return;
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                // What the handler does after it was given up on is nobody's answer: a panic
                // there is contained and the output dropped.
                let finishing = futures::FutureExt::catch_unwind(AssertUnwindSafe(fut));
                let _ = tokio::time::timeout(super::CANCEL_GRACE, finishing).await;
            });
        }
    }
}

/// The message of a panic payload (`&str` or `String`), or "panic".
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}
