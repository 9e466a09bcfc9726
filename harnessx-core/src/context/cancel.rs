//! A call's cancellation, with the token made only when somebody asks for it.
//!
//! Most handlers never look at their token, and a `CancellationToken` costs a lock on every
//! clone and drop (its tree keeps handle counts under a mutex) and, as a run's child, a lock of
//! the run's token to join its tree. So a call carries a [`CallCancel`]: a flag the engine sets
//! when it gives up on the call, and a token made on the first
//! [`ToolContext::cancellation`](crate::ToolContext::cancellation) — already cancelled when the
//! engine gave up before that, or when the run's token was cancelled.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering, fence};

use tokio_util::sync::CancellationToken;

/// One call's cancellation, shared by its context and the engine.
#[derive(Debug, Default)]
pub(crate) struct CallCancel {
    /// The run's token, whose cancellation the call's token follows.
    parent: Option<CancellationToken>,
    token: OnceLock<CancellationToken>,
    given_up: AtomicBool,
}

impl CallCancel {
    /// A call under `parent` (the run's token), or on its own.
    pub(crate) fn new(parent: Option<&CancellationToken>) -> Self {
        Self {
            parent: parent.cloned(),
            ..Self::default()
        }
    }

    /// The call's token, made now if it was not yet.
    pub(crate) fn token(&self) -> &CancellationToken {
        if let Some(token) = self.token.get() {
            return token;
        }
        let token = self.token.get_or_init(|| {
            self.parent
                .as_ref()
                .map_or_else(CancellationToken::new, CancellationToken::child_token)
        });
        // Pairs with the fence in `cancel`: either it sees the token made here, or this sees
        // its flag (a store-then-load on each side, so one fence each).
        fence(Ordering::SeqCst);
        if self.given_up.load(Ordering::Relaxed) {
            token.cancel();
        }
        token
    }

    /// The engine gave up on the call: its token fires (now, or as it is made).
    pub(crate) fn cancel(&self) {
        self.given_up.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_token_made_after_the_call_was_given_up_is_cancelled() {
        let call = CallCancel::new(None);
        call.cancel();
        assert!(call.token().is_cancelled());
    }

    #[test]
    fn a_token_made_before_is_cancelled_with_the_call() {
        let call = CallCancel::new(None);
        let token = call.token().clone();
        assert!(!token.is_cancelled());
        call.cancel();
        assert!(token.is_cancelled());
    }

    #[test]
    fn the_runs_cancellation_reaches_the_call_either_way() {
        let run = CancellationToken::new();
        let early = CallCancel::new(Some(&run));
        let early_token = early.token().clone();
        let late = CallCancel::new(Some(&run));
        run.cancel();
        assert!(early_token.is_cancelled());
        assert!(late.token().is_cancelled());
    }

    /// Giving up and asking for the token at the same time never leaves the token uncancelled.
    #[test]
    fn giving_up_while_the_token_is_made_is_never_lost() {
        for _ in 0..2_000 {
            let call = Arc::new(CallCancel::new(None));
            let engine = {
                let call = Arc::clone(&call);
                std::thread::spawn(move || call.cancel())
            };
            let token = call.token().clone();
            engine.join().unwrap();
            assert!(token.is_cancelled());
        }
    }
}
