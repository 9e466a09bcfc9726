//! Stdio servers: the child process (clean environment, own process group, killed whole), the
//! end of its stderr kept (bounded) for error messages, and the transport over its pipes, tapped
//! (see [`super::taps`]).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use super::McpError;
use super::config::McpServer;
use super::taps::{MAX_MESSAGE_BYTES, ReplyWatch, TapReader, TapWriter, TaskRequired};

/// The most bytes of a server's stderr kept for error messages: the latest lines, older ones
/// dropped first.
pub(crate) const STDERR_KEEP_BYTES: usize = 8 * 1024;
/// The most bytes kept of one stderr line; the rest of a longer line is dropped.
pub(crate) const STDERR_LINE_BYTES: usize = 1024;
/// How long a failed start waits for the process to exit and its stderr to be read.
const STDERR_WAIT: Duration = Duration::from_millis(300);

/// The end of what the server wrote to stderr, bounded: at most [`STDERR_KEEP_BYTES`] in lines
/// of at most [`STDERR_LINE_BYTES`], with a count of the bytes dropped.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<TailState>>);

#[derive(Default)]
struct TailState {
    lines: VecDeque<Vec<u8>>,
    /// Bytes in `lines`.
    kept: usize,
    /// The line being read (at most [`STDERR_LINE_BYTES`]).
    partial: Vec<u8>,
    /// Bytes read but not kept: the cut ends of long lines and the oldest lines.
    dropped: u64,
}

impl TailState {
    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.partial);
        self.kept += line.len();
        self.lines.push_back(line);
        while self.kept > STDERR_KEEP_BYTES
            && let Some(old) = self.lines.pop_front()
        {
            self.kept -= old.len();
            self.dropped += old.len() as u64;
        }
    }
}

impl StderrTail {
    /// Takes in a chunk read from the pipe.
    fn push(&self, bytes: &[u8]) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut rest = bytes;
        loop {
            let (piece, ends) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            let room = STDERR_LINE_BYTES - state.partial.len();
            let take = piece.len().min(room);
            state.partial.extend_from_slice(&piece[..take]);
            state.dropped += (piece.len() - take) as u64;
            if !ends {
                break;
            }
            state.end_line();
            rest = &rest[piece.len() + 1..];
        }
    }

    /// The bytes kept: never more than [`STDERR_KEEP_BYTES`] + [`STDERR_LINE_BYTES`].
    #[cfg(test)]
    pub(crate) fn kept_bytes(&self) -> usize {
        let state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        state.kept + state.partial.len()
    }

    /// The kept lines joined, after a note of how much was dropped; `None` when there are none.
    pub(crate) fn text(&self) -> Option<String> {
        let state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let text: Vec<String> = state
            .lines
            .iter()
            .chain(std::iter::once(&state.partial))
            .map(|l| String::from_utf8_lossy(l).trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
        if text.is_empty() {
            return None;
        }
        let text = text.join(" | ");
        Some(if state.dropped > 0 {
            format!(
                "({} earlier or over-long bytes not kept) {text}",
                state.dropped
            )
        } else {
            text
        })
    }
}

/// A running server process. Dropping it kills the whole process group.
pub(crate) struct ServerProcess {
    child: Child,
    pgid: Option<u32>,
    stderr: StderrTail,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

impl ServerProcess {
    /// The process id, while it runs.
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The end of what the process wrote to stderr.
    pub(crate) fn stderr(&self) -> &StderrTail {
        &self.stderr
    }

    /// Whether the process has exited.
    pub(crate) fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Gives the process `grace` to exit by itself (its input is closed), then kills the
    /// process group and reaps the child.
    pub(crate) async fn stop(mut self, grace: Duration) {
        if !grace.is_zero() {
            let _ = tokio::time::timeout(grace, self.child.wait()).await;
        }
        self.kill_group();
        let _ = self.child.kill().await;
    }

    /// What the process wrote to stderr, once it has exited (waiting briefly for that).
    pub(crate) async fn stderr_after_exit(&mut self) -> Option<String> {
        let _ = tokio::time::timeout(STDERR_WAIT, self.child.wait()).await;
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(STDERR_WAIT, task).await;
        }
        self.stderr.text()
    }

    fn kill_group(&mut self) {
        if let Some(pid) = self.pgid.take().and_then(|p| i32::try_from(p).ok())
            && let Some(pid) = rustix::process::Pid::from_raw(pid)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill_group();
        let _ = self.child.start_kill();
    }
}

/// The transport over a child's pipes.
pub(crate) type StdioTransport = AsyncRwTransport<RoleClient, TapReader, TapWriter>;

/// Starts the server process and builds the transport over its pipes.
pub(crate) fn spawn(
    server: &McpServer,
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
    task_required: TaskRequired,
    replies: ReplyWatch,
) -> Result<(ServerProcess, StdioTransport), McpError> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    for key in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let spawn_error = |source: std::io::Error| McpError::Spawn {
        server: server.name.clone(),
        command: command.to_owned(),
        source,
    };
    let mut child = cmd.spawn().map_err(spawn_error)?;
    let pgid = child.id();
    let missing = || {
        spawn_error(std::io::Error::other(
            "the child's pipes were not available",
        ))
    };
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr_pipe = child.stderr.take();
    let stderr = StderrTail::default();
    let stderr_task = stderr_pipe.map(|mut pipe| {
        let tail = stderr.clone();
        let name = server.name.clone();
        // Read in fixed chunks, never a whole line at once: a server can write any amount
        // without a newline, and only the bounded tail is kept.
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8 * 1024];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tracing::trace!(server = %name, "mcp server stderr: {}", String::from_utf8_lossy(&buf[..n.min(STDERR_LINE_BYTES)]));
                tail.push(&buf[..n]);
            }
        })
    });
    let transport = AsyncRwTransport::new_client(
        TapReader::new(stdout, task_required, replies.clone()),
        TapWriter::new(stdin, replies),
    )
    .with_max_line_length(MAX_MESSAGE_BYTES);
    Ok((
        ServerProcess {
            child,
            pgid,
            stderr,
            stderr_task,
        },
        transport,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_keeps_a_bounded_tail_and_counts_what_it_drops() {
        let tail = StderrTail::default();
        // 1 MiB without a newline, then many short lines.
        tail.push(&vec![b'x'; 1024 * 1024]);
        assert_eq!(tail.kept_bytes(), STDERR_LINE_BYTES);
        for i in 0..10_000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        assert!(
            tail.kept_bytes() <= STDERR_KEEP_BYTES,
            "{}",
            tail.kept_bytes()
        );
        let text = tail.text().unwrap();
        assert!(
            text.ends_with("line 9998 | line 9999"),
            "{}",
            &text[text.len() - 40..]
        );
        assert!(text.starts_with('('), "{}", &text[..60]);
        assert!(
            text.contains("earlier or over-long bytes not kept"),
            "{}",
            &text[..80]
        );
        assert!(!text.contains("line 0 "));
    }
}
