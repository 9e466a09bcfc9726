//! A throwaway PostgreSQL cluster: `initdb` into a temporary directory, `pg_ctl` on a free port.

mod find;
mod options;
mod skip;
mod user;

pub use options::PgOptions;
pub use skip::{require_or_skip, require_or_skip_with};

use std::ffi::OsStr;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::TestkitError;
use user::RunAs;

/// How many free ports to try when another process takes the chosen one first.
const PORT_ATTEMPTS: usize = 5;
/// How long `pg_ctl` waits for the server to start or stop, in seconds.
const PG_CTL_WAIT_SECONDS: &str = "60";
/// How many lines of the server log an error quotes.
const LOG_TAIL_LINES: usize = 20;

/// A PostgreSQL cluster of its own, listening on 127.0.0.1; stopped and deleted on drop.
///
/// The superuser is `postgres` with `trust` authentication, so [`PgCluster::url`] needs no
/// password. See the [crate docs](crate) for an example. Dropping (also while a test panics)
/// cleans up; a test process killed outright leaves its server running, under
/// `$TMPDIR/harnessx-pg-*` (stop it with `pg_ctl stop -D <dir>/data`).
#[derive(Debug)]
pub struct PgCluster {
    bin_dir: PathBuf,
    run_as: Option<RunAs>,
    /// Holds `data/`, the server log and the Unix socket; owned by the server's user.
    root: TempDir,
    port: u16,
    options: PgOptions,
    running: bool,
}

impl PgCluster {
    /// Creates and starts a cluster with the default [`PgOptions`] (`fsync` on).
    ///
    /// # Errors
    /// [`TestkitError::PostgresNotFound`] when the server programs are not installed;
    /// [`TestkitError::NoUnprivilegedUser`] as root without a `nobody` user;
    /// [`TestkitError::CommandFailed`] when `initdb` or `pg_ctl start` fails (with the log's end).
    pub fn start() -> Result<PgCluster, TestkitError> {
        PgCluster::start_with(PgOptions::default())
    }

    /// Creates and starts a cluster with the given options.
    ///
    /// # Errors
    /// As [`PgCluster::start`].
    pub fn start_with(options: PgOptions) -> Result<PgCluster, TestkitError> {
        let bin_dir = find::find_bin_dir(
            std::env::var_os("PATH").as_deref(),
            Path::new(find::DEBIAN_ROOT),
        )?;
        let run_as = RunAs::for_current_process()?;
        let root = temp_root(run_as.is_some())?;
        if let Some(user) = run_as {
            user.chown(root.path())?;
        }
        let mut cluster = PgCluster {
            bin_dir,
            run_as,
            root,
            port: 0,
            options,
            running: false,
        };
        cluster.run(
            "initdb",
            [
                "-D".as_ref(),
                cluster.data_dir().as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "-A".as_ref(),
                "trust".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-locale".as_ref(),
                // Skips syncing the new files to disk: only initdb's own writes, never a commit.
                "--no-sync".as_ref(),
            ],
        )?;
        cluster.write_tls_files()?;
        cluster.start_on_a_free_port()?;
        Ok(cluster)
    }

    /// Writes [`PgOptions::tls`]'s certificate and key where the server looks for them.
    fn write_tls_files(&self) -> Result<(), TestkitError> {
        let Some(tls) = self.options.server_tls() else {
            return Ok(());
        };
        for (name, contents) in [
            ("server.crt", &tls.certificate_chain),
            ("server.key", &tls.private_key),
        ] {
            let path = self.data_dir().join(name);
            write_private(&path, contents).map_err(|source| TestkitError::Io {
                action: "write",
                path: path.clone(),
                source,
            })?;
            if let Some(user) = self.run_as {
                user.chown(&path)?;
            }
        }
        Ok(())
    }

    /// `postgresql://postgres@127.0.0.1:PORT/postgres`, for `tokio_postgres::connect(url, NoTls)`.
    pub fn url(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The TCP port on 127.0.0.1. It stays the same across [`PgCluster::restart`].
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// The directory the server programs were taken from.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// Whether the server is running (started and not stopped since).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The server log so far (empty if it cannot be read), for a failing test to print.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Stops the server (`pg_ctl stop -m fast`: sessions are disconnected, open transactions
    /// rolled back) and starts it again on the same port, for a test of lost connections.
    /// After [`PgCluster::stop`], this starts it again.
    ///
    /// # Errors
    /// [`TestkitError::CommandFailed`] when `pg_ctl` fails, with the log's end.
    pub fn restart(&mut self) -> Result<(), TestkitError> {
        if self.running {
            self.stop()?;
        }
        self.pg_ctl_start()
    }

    /// Stops the server (`pg_ctl stop -m fast`) and keeps its data; [`PgCluster::restart`]
    /// starts it again. Stopping a stopped server does nothing.
    ///
    /// # Errors
    /// [`TestkitError::CommandFailed`] when `pg_ctl stop` fails, with the log's end.
    pub fn stop(&mut self) -> Result<(), TestkitError> {
        if !self.running {
            return Ok(());
        }
        self.pg_ctl_stop("fast")?;
        self.running = false;
        Ok(())
    }

    fn start_on_a_free_port(&mut self) -> Result<(), TestkitError> {
        let mut last = None;
        for _ in 0..PORT_ATTEMPTS {
            self.port = free_port()?;
            match self.pg_ctl_start() {
                Ok(()) => return Ok(()),
                // Another process bound the port between our probe and the server's bind.
                Err(err) if self.log().contains("could not bind") => last = Some(err),
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or_else(|| unreachable_port_error(self)))
    }

    fn pg_ctl_start(&mut self) -> Result<(), TestkitError> {
        let mut server_options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {}",
            self.port,
            shell_quote(&self.root.path().display().to_string()),
        );
        for (name, value) in self.options.server_settings() {
            server_options.push_str(&format!(" -c {}", shell_quote(&format!("{name}={value}"))));
        }
        self.run(
            "pg_ctl",
            [
                "start".as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                PG_CTL_WAIT_SECONDS.as_ref(),
                "-D".as_ref(),
                self.data_dir().as_os_str(),
                "-l".as_ref(),
                self.log_path().as_os_str(),
                "-o".as_ref(),
                server_options.as_ref(),
            ],
        )?;
        self.running = true;
        Ok(())
    }

    /// `pg_ctl stop` returns once the server removed its pid file; the postmaster may live a
    /// moment longer, so wait (bounded) until it is gone too.
    fn pg_ctl_stop(&self, mode: &str) -> Result<(), TestkitError> {
        let postmaster = self.postmaster_pid();
        self.pg_ctl(mode)?;
        if let Some(pid) = postmaster {
            let deadline = Instant::now() + Duration::from_secs(10);
            while process_alive(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(())
    }

    /// The first line of `postmaster.pid`, when the server runs.
    fn postmaster_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.data_dir().join("postmaster.pid"))
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }

    fn pg_ctl(&self, mode: &str) -> Result<(), TestkitError> {
        self.run(
            "pg_ctl",
            [
                "stop".as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                PG_CTL_WAIT_SECONDS.as_ref(),
                "-m".as_ref(),
                mode.as_ref(),
                "-D".as_ref(),
                self.data_dir().as_os_str(),
            ],
        )
    }

    fn log_path(&self) -> PathBuf {
        self.root.path().join("postgres.log")
    }

    /// Runs one of the server programs as the server's user, from the cluster's directory.
    fn run<'a>(
        &self,
        program: &str,
        args: impl IntoIterator<Item = &'a OsStr>,
    ) -> Result<(), TestkitError> {
        let path = self.bin_dir.join(program);
        let mut command = Command::new(&path);
        command
            .args(args)
            .current_dir(self.root.path())
            .stdin(Stdio::null());
        if let Some(user) = self.run_as {
            user.apply(&mut command);
        }
        let output = command.output().map_err(|source| TestkitError::Io {
            action: "run",
            path,
            source,
        })?;
        if output.status.success() {
            return Ok(());
        }
        Err(TestkitError::CommandFailed {
            program: program.to_owned(),
            status: output.status.to_string(),
            output: failure_text(&output, &self.log()),
        })
    }
}

impl Drop for PgCluster {
    /// Stops the server at once (`-m immediate`) if it runs; the directory is then removed.
    fn drop(&mut self) {
        if self.running
            && let Err(err) = self.pg_ctl_stop("immediate")
        {
            eprintln!(
                "harnessx-testkit: could not stop the PostgreSQL cluster on port {}: {err}",
                self.port
            );
        }
    }
}

/// A new temporary directory. The server's user must reach it: as root, fall back to `/tmp`
/// when `TMPDIR` lies under a directory others cannot enter (such as `/root`).
fn temp_root(for_another_user: bool) -> Result<TempDir, TestkitError> {
    let mut base = std::env::temp_dir();
    if for_another_user && !others_can_enter(&base) {
        base = PathBuf::from("/tmp");
    }
    tempfile::Builder::new()
        .prefix("harnessx-pg-")
        .tempdir_in(&base)
        .map_err(|source| TestkitError::Io {
            action: "create a temporary directory in",
            path: base,
            source,
        })
}

/// Creates (or replaces) a file readable by its owner only.
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(contents.as_bytes())
}

fn others_can_enter(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    dir.ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// Whether `pid` is a live process (a zombie waiting to be reaped counts as gone).
fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        // The state follows the command name, which is in parentheses and may hold spaces.
        .is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16, TestkitError> {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| TestkitError::Io {
            action: "find a free port on",
            path: "127.0.0.1".into(),
            source,
        })
}

fn unreachable_port_error(cluster: &PgCluster) -> TestkitError {
    TestkitError::CommandFailed {
        program: "pg_ctl".into(),
        status: format!("no free port after {PORT_ATTEMPTS} attempts"),
        output: log_tail(&cluster.log()),
    }
}

/// `'text'` for `/bin/sh`, which `pg_ctl` runs the server through.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn failure_text(output: &Output, log: &str) -> String {
    let mut text = String::from_utf8_lossy(&output.stderr)
        .trim_end()
        .to_owned();
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !stdout.trim().is_empty() {
        text.push('\n');
        text.push_str(stdout.trim_end());
    }
    let tail = log_tail(log);
    if !tail.is_empty() {
        text.push_str("\n--- server log (end) ---\n");
        text.push_str(&tail);
    }
    text
}

fn log_tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_alive_until_it_exits() {
        assert!(process_alive(std::process::id()));
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_alive(pid));
    }

    #[test]
    fn shell_quoting_survives_quotes_and_spaces() {
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn failure_text_joins_the_output_and_the_log_tail() {
        use std::os::unix::process::ExitStatusExt;
        let output = Output {
            status: std::process::ExitStatus::from_raw(256),
            stdout: b"waiting for server to start.... stopped waiting\n".to_vec(),
            stderr: b"pg_ctl: could not start server\n".to_vec(),
        };
        let log: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let text = failure_text(&output, &log);
        assert!(text.starts_with("pg_ctl: could not start server\nwaiting for server to start"));
        assert!(
            text.contains("--- server log (end) ---\nline 11\n"),
            "{text}"
        );
        assert!(!text.contains("line 10\n"));
        assert!(text.ends_with("line 30"));
        let err = TestkitError::CommandFailed {
            program: "pg_ctl".into(),
            status: output.status.to_string(),
            output: text,
        };
        assert!(err.to_string().starts_with("`pg_ctl` failed (exit status: 1); its output and the server log's end:\npg_ctl: could not start server"));
    }

    #[test]
    fn io_errors_name_the_action_and_path() {
        let err = TestkitError::Io {
            action: "create a temporary directory in",
            path: "/nonexistent".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(
            err.to_string(),
            "could not create a temporary directory in `/nonexistent`"
        );
    }

    #[test]
    fn a_private_file_is_for_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.key");
        write_private(&path, "old and longer").unwrap();
        write_private(&path, "key").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "key");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn the_root_is_reachable_by_others_only_through_enterable_directories() {
        let dir = tempfile::tempdir().unwrap();
        let closed = dir.path().join("closed");
        std::fs::create_dir(&closed).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!others_can_enter(&closed));
        assert!(others_can_enter(dir.path()));
    }
}
