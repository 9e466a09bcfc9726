//! The one error type of the testkit.

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong while finding, starting or stopping a server, or driving a child process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestkitError {
    /// The PostgreSQL server programs are not installed where the testkit looks.
    #[error(
        "PostgreSQL server program(s) not found: {missing} (searched {searched}); install the \
         server: `apt-get install postgresql` on Debian, or run `.ci/install-postgres.sh`"
    )]
    PostgresNotFound {
        /// The program names that were missing, comma-separated (`initdb`, `pg_ctl`, `postgres`).
        missing: String,
        /// Where the testkit looked: the `PATH` entries and the version directories.
        searched: String,
    },
    /// Running as root, and there is no unprivileged user to run PostgreSQL as.
    #[error(
        "running as root, but /etc/passwd has no `nobody` user to run PostgreSQL as (it refuses \
         to run as root); add one, e.g. `useradd --system nobody`, or run the tests as a normal user"
    )]
    NoUnprivilegedUser,
    /// A file-system or process operation failed.
    #[error("could not {action} `{}`", path.display())]
    Io {
        /// What was being done, worded to follow "could not".
        action: &'static str,
        /// The file, directory or program concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A PostgreSQL program ran and exited unsuccessfully.
    #[error("`{program}` failed ({status}); its output and the server log's end:\n{output}")]
    CommandFailed {
        /// The command line, shortened to the program and its first arguments.
        program: String,
        /// The exit status as the operating system reported it.
        status: String,
        /// The program's standard error and output, then the last lines of the server log.
        output: String,
    },
    /// A child process did not print its marker in time.
    #[error(
        "`{program}` did not print a line containing `{marker}` within {waited:?}; it printed:\n{output}"
    )]
    MarkerTimeout {
        /// The program that was waited on.
        program: String,
        /// The text that was awaited.
        marker: String,
        /// How long the wait lasted.
        waited: Duration,
        /// Every line it printed to standard output so far.
        output: String,
    },
    /// A child process closed its standard output (usually: exited) before printing its marker.
    #[error(
        "`{program}` closed its output before printing a line containing `{marker}`; it printed:\n{output}"
    )]
    ExitedBeforeMarker {
        /// The program that was waited on.
        program: String,
        /// The text that was awaited.
        marker: String,
        /// Every line it printed to standard output.
        output: String,
    },
}
