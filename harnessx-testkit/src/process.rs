//! A child process to crash on purpose: spawn it, wait for a line it prints, `kill -9` it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::TestkitError;

/// A spawned program whose standard output is read line by line; killed (`SIGKILL`) and reaped
/// on drop if it still runs. Standard error is inherited, so it shows in the test's output.
///
/// See the [crate docs](crate) for an example.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    program: String,
    lines: Receiver<String>,
    seen: Vec<String>,
    closed: bool,
}

impl ChildProcess {
    /// Spawns `command` with its standard output piped (and standard input closed).
    ///
    /// # Errors
    /// [`TestkitError::Io`] when the program cannot be started.
    pub fn spawn(command: &mut Command) -> Result<ChildProcess, TestkitError> {
        let program = command.get_program().to_string_lossy().into_owned();
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|source| TestkitError::Io {
                action: "start",
                path: program.clone().into(),
                source,
            })?;
        let stdout = child.stdout.take().expect("stdout was set to piped above");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(ChildProcess {
            child,
            program,
            lines,
            seen: Vec::new(),
            closed: false,
        })
    }

    /// The child's process id, e.g. to signal it from elsewhere.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the child prints a line containing `marker` and returns that line. Lines
    /// printed before it are kept (see [`ChildProcess::output`]); the wait goes on from there
    /// next time.
    ///
    /// # Errors
    /// [`TestkitError::MarkerTimeout`] after `timeout`; [`TestkitError::ExitedBeforeMarker`]
    /// when the child closes its output first. Both quote what it printed.
    pub fn wait_for_line(
        &mut self,
        marker: &str,
        timeout: Duration,
    ) -> Result<String, TestkitError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.closed {
                return Err(TestkitError::ExitedBeforeMarker {
                    program: self.program.clone(),
                    marker: marker.to_owned(),
                    output: self.output(),
                });
            }
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(marker) {
                        return Ok(line);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => self.closed = true,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(TestkitError::MarkerTimeout {
                        program: self.program.clone(),
                        marker: marker.to_owned(),
                        waited: timeout,
                        output: self.output(),
                    });
                }
            }
        }
    }

    /// Every line read from the child's standard output so far, newline-separated.
    pub fn output(&self) -> String {
        self.seen.join("\n")
    }

    /// Kills the child with `SIGKILL` (no chance to clean up, like a crash or `kill -9`) and
    /// reaps it. Killing a child that already exited just reaps it.
    ///
    /// # Errors
    /// [`TestkitError::Io`] when it cannot be signalled or waited for.
    pub fn sigkill(mut self) -> Result<ExitStatus, TestkitError> {
        self.kill_and_reap()
    }

    /// Waits for the child to exit by itself.
    ///
    /// # Errors
    /// [`TestkitError::Io`] when it cannot be waited for.
    pub fn wait(mut self) -> Result<ExitStatus, TestkitError> {
        self.child.wait().map_err(|source| TestkitError::Io {
            action: "wait for",
            path: self.program.clone().into(),
            source,
        })
    }

    fn kill_and_reap(&mut self) -> Result<ExitStatus, TestkitError> {
        if let Some(status) = self.try_reaped()? {
            return Ok(status);
        }
        // std's `Child::kill` sends SIGKILL on Unix.
        self.child.kill().map_err(|source| TestkitError::Io {
            action: "kill",
            path: self.program.clone().into(),
            source,
        })?;
        self.child.wait().map_err(|source| TestkitError::Io {
            action: "wait for",
            path: self.program.clone().into(),
            source,
        })
    }

    fn try_reaped(&mut self) -> Result<Option<ExitStatus>, TestkitError> {
        self.child.try_wait().map_err(|source| TestkitError::Io {
            action: "wait for",
            path: self.program.clone().into(),
            source,
        })
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if let Err(err) = self.kill_and_reap() {
            eprintln!("harnessx-testkit: {err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn sh(script: &str) -> ChildProcess {
        ChildProcess::spawn(Command::new("sh").args(["-c", script])).unwrap()
    }

    #[test]
    fn waits_for_the_marker_then_kills_with_sigkill() {
        let mut child = sh("echo starting; echo step 1 running; trap '' TERM; exec sleep 30");
        let line = child
            .wait_for_line("running", Duration::from_secs(10))
            .unwrap();
        assert_eq!(line, "step 1 running");
        assert_eq!(child.output(), "starting\nstep 1 running");
        let pid = child.pid();
        let status = child.sigkill().unwrap();
        // SIGKILL, not SIGTERM (which the script ignores).
        assert_eq!(status.signal(), Some(9));
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn a_marker_that_never_comes_times_out_and_quotes_the_output() {
        let mut child = sh("echo only this; exec sleep 30");
        let err = child
            .wait_for_line("ready", Duration::from_millis(300))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`sh` did not print a line containing `ready` within 300ms; it printed:\nonly this"
        );
    }

    #[test]
    fn a_child_that_exits_first_is_reported() {
        let mut child = sh("echo bye; exit 3");
        let err = child
            .wait_for_line("ready", Duration::from_secs(10))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`sh` closed its output before printing a line containing `ready`; it printed:\nbye"
        );
        assert_eq!(child.wait().unwrap().code(), Some(3));
    }

    #[test]
    fn a_program_that_does_not_exist_is_named() {
        let err =
            ChildProcess::spawn(&mut Command::new("/nonexistent/harnessx-worker")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "could not start `/nonexistent/harnessx-worker`"
        );
    }

    #[test]
    fn dropping_a_running_child_kills_it() {
        let mut child = sh("echo up; exec sleep 30");
        child.wait_for_line("up", Duration::from_secs(10)).unwrap();
        let pid = child.pid();
        drop(child);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
}
