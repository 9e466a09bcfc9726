//! Running a handler's future without a task of its own, where a task would buy nothing, and the
//! time limit around it.
//!
//! A task of its own lets a handler run in parallel with other work of its caller; it costs a
//! task allocation and, on a multi-thread runtime, a hop to another thread on the way in and
//! another on the way out — a parked worker woken each time, tens of microseconds per call on a
//! busy machine (`harnessx/docs/internals/performance.md`). It buys nothing when
//! there is nothing to run beside the handler: a call that runs alone (a direct `execute`, a
//! turn of one call), whose caller only waits for it; and any call on a current-thread runtime,
//! where a spawned task runs on the caller's thread anyway. There the engine polls the handler's future in
//! place instead, with the guarantees the task gave: the handler is called inside a panic guard
//! and a panic there or in a poll is caught and becomes a crash result, and a handler given up
//! on (timed out, or its caller dropped) is cancelled and gets
//! [`CANCEL_GRACE`](super::CANCEL_GRACE) to finish on a task of its own before it is dropped.
//! The calls of one batch that run side by side on a multi-thread runtime keep a task each, so
//! they run in parallel and one that blocks its thread holds up none of the others.
//!
//! The time limit is [`Limited`](super::timers::Limited), as for a handler on a task of its
//! own.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde_json::Value;

use crate::context::{CallCancel, ToolContext};
use crate::output::{ToolError, ToolOutput};
use crate::registry::lane::Turn;
use crate::tool::{BoxFuture, ToolHandler};

/// Whether handler futures run inline (a current-thread runtime) rather than on a task each.
pub(super) fn runs_inline() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|rt| rt.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
}

type Outcome = Result<ToolOutput, ToolError>;

/// Where an inline handler is: running, panicked while it was called, or finished.
enum Stage {
    Running(BoxFuture<'static, Outcome>),
    Panicked(String),
    Done,
}

/// A handler called and polled in place, inside its lane turn: resolves to its output, or to
/// the panic's message (of the call or of a poll). Dropped before it finished, it fires its
/// cancellation token and moves
/// the handler's future to a task that gives it [`CANCEL_GRACE`](super::CANCEL_GRACE) to stop.
pub(super) struct Inline {
    stage: Stage,
    turn: Turn,
    cancel: Arc<CallCancel>,
}

impl Inline {
    /// Calls `handler` with `args` and `ctx` inside the turn, catching a panic of the call
    /// itself (reported when this is first polled). Only the handler's future is kept, so
    /// what awaits this holds and moves a few words, not the call's arguments and context.
    pub(super) fn new(
        handler: &dyn ToolHandler,
        args: Value,
        ctx: ToolContext,
        turn: Turn,
        cancel: Arc<CallCancel>,
    ) -> Self {
        let called =
            std::panic::catch_unwind(AssertUnwindSafe(|| turn.enter(|| handler.call(args, ctx))));
        let stage = match called {
            Ok(fut) => Stage::Running(fut),
            Err(payload) => Stage::Panicked(panic_text(payload.as_ref())),
        };
        Self {
            stage,
            turn,
            cancel,
        }
    }
}

impl Future for Inline {
    type Output = Result<Outcome, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let fut = match &mut this.stage {
            Stage::Running(fut) => fut,
            Stage::Panicked(message) => {
                let message = std::mem::take(message);
                this.stage = Stage::Done;
                return Poll::Ready(Err(message));
            }
            Stage::Done => {
                return Poll::Ready(Err("the handler was polled after it finished".to_owned()));
            }
        };
        let turn = &this.turn;
        let polled =
            std::panic::catch_unwind(AssertUnwindSafe(|| turn.enter(|| fut.as_mut().poll(cx))));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                this.stage = Stage::Done;
                Poll::Ready(Ok(output))
            }
            Err(payload) => {
                this.stage = Stage::Done;
                Poll::Ready(Err(panic_text(payload.as_ref())))
            }
        }
    }
}

impl Drop for Inline {
    fn drop(&mut self) {
        // A handler that finished (or was never called) was not given up on: its token stays
        // as it is.
        let Stage::Running(fut) = std::mem::replace(&mut self.stage, Stage::Done) else {
            return;
        };
        self.cancel.cancel();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            // The turn goes with the future: a serial call's turn ends when it does.
            let fut = self.turn.scope(fut);
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
