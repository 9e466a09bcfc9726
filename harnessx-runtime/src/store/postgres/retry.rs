//! Connection loss: which errors are worth another attempt, and the backoff between attempts.
//!
//! A transaction that failed before its `COMMIT` was sent is rolled back by the server and is
//! simply tried again. A `COMMIT` (or a single-statement write) whose answer was lost with the
//! connection is *ambiguous*: the caller checks the run's `last_write` token to learn whether it
//! took effect before trying again, so a step is never written twice.

use std::time::Duration;

use tokio_postgres::error::SqlState;

use crate::error::StoreError;

/// The first pause after a lost connection; doubled up to [`MAX_DELAY`].
pub(super) const FIRST_DELAY: Duration = Duration::from_millis(20);
/// The longest pause between attempts.
pub(super) const MAX_DELAY: Duration = Duration::from_secs(2);

/// One attempt's failure.
#[derive(Debug)]
pub(super) struct Attempt {
    /// The connection was lost or the server is restarting: another attempt may succeed.
    pub(super) transient: bool,
    /// The write may have committed.
    pub(super) ambiguous: bool,
    pub(super) error: StoreError,
}

impl From<StoreError> for Attempt {
    fn from(error: StoreError) -> Self {
        Self {
            transient: false,
            ambiguous: false,
            error,
        }
    }
}

/// Whether the error is a lost connection, a server going down or starting, or a conflict that
/// a new attempt resolves.
///
/// A refused TLS connection (a failed certificate check, no TLS where it is required) is not:
/// it would fail the same way for as long as the retries last.
pub(super) fn is_transient(e: &tokio_postgres::Error) -> bool {
    if super::tls::is_refused(e) {
        return false;
    }
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => {
            code.code().starts_with("08")
                || [
                    SqlState::ADMIN_SHUTDOWN,
                    SqlState::CRASH_SHUTDOWN,
                    SqlState::CANNOT_CONNECT_NOW,
                    SqlState::T_R_SERIALIZATION_FAILURE,
                    SqlState::T_R_DEADLOCK_DETECTED,
                ]
                .contains(code)
        }
        // No server error: an I/O error (connection refused, reset) while talking to it.
        None => true,
    }
}

/// Maps a query error of `what` (never ambiguous: a transaction not yet committed).
pub(super) fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> Attempt {
    move |e| Attempt {
        transient: is_transient(&e),
        ambiguous: false,
        error: StoreError::backend(what, e),
    }
}

/// Maps the error of a `COMMIT` or of a single-statement write: a lost connection is ambiguous.
pub(super) fn pg_commit(what: &'static str) -> impl Fn(tokio_postgres::Error) -> Attempt {
    move |e| {
        let transient = is_transient(&e);
        Attempt {
            transient,
            ambiguous: transient,
            error: StoreError::backend(what, e),
        }
    }
}

/// Maps a failure to get a pooled connection (never ambiguous: nothing was sent). A refused
/// TLS connection is not transient.
pub(super) fn pool(what: &'static str) -> impl Fn(deadpool_postgres::PoolError) -> Attempt {
    move |e| Attempt {
        transient: match &e {
            deadpool_postgres::PoolError::Closed => false,
            deadpool_postgres::PoolError::Backend(backend) => !super::tls::is_refused(backend),
            _ => true,
        },
        ambiguous: false,
        error: StoreError::backend(what, e),
    }
}

/// The next pause after `delay`.
pub(super) fn next_delay(delay: Duration) -> Duration {
    (delay * 2).min(MAX_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_doubles_up_to_the_ceiling() {
        let mut d = FIRST_DELAY;
        let mut seen = Vec::new();
        for _ in 0..10 {
            seen.push(d);
            d = next_delay(d);
        }
        assert_eq!(seen[1], FIRST_DELAY * 2);
        assert_eq!(*seen.last().unwrap(), MAX_DELAY);
        assert!(seen.windows(2).all(|w| w[0] <= w[1]));
    }
}
