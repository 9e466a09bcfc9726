//! # harnessx-testkit — real servers and real crashes for harnessx's tests
//!
//! A dev-dependency for the crates whose tests need more than a mock: a throwaway PostgreSQL
//! cluster started by the test itself, the npm-installed MCP servers, and a child process that
//! can be `kill -9`ed at a known point. Nothing here is published; nothing here is used outside tests and benchmarks.
//!
//! ## PostgreSQL
//!
//! [`PgCluster::start`] finds `initdb`, `pg_ctl` and `postgres` (on `PATH`, else the highest
//! version under `/usr/lib/postgresql/*/bin`), creates a cluster in a temporary directory
//! (`initdb -A trust -U postgres`), and starts it on a free port of 127.0.0.1. When the test runs
//! as root, the server programs run as the unprivileged `nobody` user (PostgreSQL refuses to
//! run as root), and the directory is handed to that user. `fsync` stays on unless
//! [`PgOptions::fsync`] turns it off, so benchmarks against it are honest;
//! [`PgOptions::tls`] turns TLS on with a certificate and key the test made. The cluster is
//! stopped and its directory removed when the value is dropped.
//!
//! ```no_run
//! use harnessx_testkit::PgCluster;
//!
//! // Skips (returns None) when PostgreSQL is not installed, unless `CI` is set: then it panics.
//! let Some(mut pg) = harnessx_testkit::require_or_skip() else { return Ok(()) };
//! let url = pg.url(); // postgresql://postgres@127.0.0.1:PORT/postgres
//! pg.restart()?; // stop -m fast, then start on the same port: a chaos test's server restart
//! # let _ = url;
//! # Ok::<(), harnessx_testkit::TestkitError>(())
//! ```
//!
//! CI installs the server with `.ci/install-postgres.sh`.
//!
//! ## OAuth sign-in (feature `oauth`)
//!
//! `oauth::OAuthServers::start` serves an OAuth 2.1 authorization server (registration, PKCE
//! S256, refresh) and a gateway checking its tokens in front of a harnessx MCP server, all on
//! 127.0.0.1: the sign-in tests of `harnessx` and of the runs server share it.
//!
//! ## The MCP SDK and reference servers
//!
//! [`npm`] finds `node` and the packages `.ci/install-mcp-servers.sh` installs: the SDK's
//! `node_modules` and each reference server's entry script, skipping (or, under `CI`, failing)
//! when one is missing.
//!
//! ## Crashing a process
//!
//! [`ChildProcess`] spawns a program with its standard output piped, waits until it prints a
//! marker line, and kills it with `SIGKILL`, which is what a crash test needs:
//!
//! ```
//! use std::process::Command;
//! use std::time::Duration;
//! use harnessx_testkit::ChildProcess;
//!
//! let mut child = ChildProcess::spawn(Command::new("sh").args(["-c", "echo ready; exec sleep 30"]))?;
//! child.wait_for_line("ready", Duration::from_secs(10))?;
//! let status = child.sigkill()?;
//! # use std::os::unix::process::ExitStatusExt;
//! assert_eq!(status.signal(), Some(9));
//! # Ok::<(), harnessx_testkit::TestkitError>(())
//! ```

mod error;
pub mod npm;
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub mod oauth;
mod pg;
mod process;

pub use error::TestkitError;
pub use pg::{PgCluster, PgOptions, require_or_skip, require_or_skip_with};
pub use process::ChildProcess;
