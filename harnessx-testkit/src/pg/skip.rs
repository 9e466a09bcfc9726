//! What a test does when PostgreSQL is missing: skip locally, fail in CI.

use std::ffi::OsStr;

use super::{PgCluster, PgOptions};
use crate::TestkitError;

/// Starts a cluster, or decides what a test without PostgreSQL does: returns `None` (after
/// printing why) when the server is not installed and `CI` is unset, and panics when `CI` is set.
/// Any other failure (the server is installed but does not start) panics.
///
/// ```no_run
/// let Some(pg) = harnessx_testkit::require_or_skip() else { return };
/// # let _ = pg;
/// ```
///
/// # Panics
/// With `CI` set when PostgreSQL is missing; always when it is installed but fails to start.
pub fn require_or_skip() -> Option<PgCluster> {
    require_or_skip_with(PgOptions::default())
}

/// [`require_or_skip`] with options.
///
/// # Panics
/// As [`require_or_skip`].
pub fn require_or_skip_with(options: PgOptions) -> Option<PgCluster> {
    match PgCluster::start_with(options) {
        Ok(cluster) => Some(cluster),
        Err(err) => skip_or_panic(err, std::env::var_os("CI").as_deref()),
    }
}

fn skip_or_panic(err: TestkitError, ci: Option<&OsStr>) -> Option<PgCluster> {
    let in_ci = ci.is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
    match err {
        TestkitError::PostgresNotFound { .. } if !in_ci => {
            eprintln!("skipping: {err}");
            None
        }
        TestkitError::PostgresNotFound { .. } => {
            panic!("CI is set, so a missing PostgreSQL is a failure, not a skip: {err}")
        }
        err => panic!("could not start a PostgreSQL cluster for this test: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn not_found() -> TestkitError {
        TestkitError::PostgresNotFound {
            missing: "`initdb`".into(),
            searched: "PATH".into(),
        }
    }

    #[test]
    fn without_ci_a_missing_server_is_a_skip() {
        assert!(skip_or_panic(not_found(), None).is_none());
        assert!(skip_or_panic(not_found(), Some(OsStr::new(""))).is_none());
        assert!(skip_or_panic(not_found(), Some(OsStr::new("false"))).is_none());
    }

    #[test]
    #[should_panic(
        expected = "CI is set, so a missing PostgreSQL is a failure, not a skip: \
                               PostgreSQL server program(s) not found: `initdb`"
    )]
    fn with_ci_a_missing_server_is_a_failure() {
        skip_or_panic(not_found(), Some(OsStr::new("true")));
    }

    #[test]
    #[should_panic(
        expected = "could not start a PostgreSQL cluster for this test: `pg_ctl` failed"
    )]
    fn a_server_that_does_not_start_is_always_a_failure() {
        let err = TestkitError::CommandFailed {
            program: "pg_ctl".into(),
            status: "exit status: 1".into(),
            output: String::new(),
        };
        skip_or_panic(err, None);
    }
}
