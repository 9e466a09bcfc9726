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
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::McpError;
use super::config::McpServer;
use super::taps::{MAX_MESSAGE_BYTES, TapReader, TaskRequired};

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
///
/// The child itself belongs to a watcher task that waits for it to exit (and kills and reaps
/// it when asked, or when this is dropped), so whether the server still runs is a flag read —
/// the check before every call makes no system call.
pub(crate) struct ServerProcess {
    pid: Option<u32>,
    pgid: Option<u32>,
    /// Becomes `true` once the child has exited and been reaped.
    exited: watch::Receiver<bool>,
    /// Sent (or dropped) to have the watcher kill the child and reap it.
    kill: Option<oneshot::Sender<()>>,
    watcher: Option<JoinHandle<()>>,
    stderr: StderrTail,
    stderr_task: Option<JoinHandle<()>>,
}

impl ServerProcess {
    fn new(mut child: Child, stderr: StderrTail, stderr_task: Option<JoinHandle<()>>) -> Self {
        let pid = child.id();
        let (exited_tx, exited) = watch::channel(false);
        let (kill, killed) = oneshot::channel::<()>();
        let watcher = tokio::spawn(async move {
            tokio::select! {
                _ = child.wait() => {}
                // Asked to, or the process handle was dropped: kill the child and reap it.
                _ = killed => {
                    let _ = child.kill().await;
                }
            }
            let _ = exited_tx.send(true);
        });
        Self {
            pid,
            pgid: pid,
            exited,
            kill: Some(kill),
            watcher: Some(watcher),
            stderr,
            stderr_task,
        }
    }

    /// The process id, while it runs.
    pub(crate) fn id(&self) -> Option<u32> {
        self.pid.filter(|_| !self.has_exited())
    }

    /// The end of what the process wrote to stderr.
    pub(crate) fn stderr(&self) -> &StderrTail {
        &self.stderr
    }

    /// Whether the process has exited.
    pub(crate) fn has_exited(&self) -> bool {
        *self.exited.borrow()
    }

    /// A watch of [`has_exited`](Self::has_exited) that outlives a borrow of the process.
    pub(crate) fn exit_watch(&self) -> watch::Receiver<bool> {
        self.exited.clone()
    }

    /// Waits up to `limit` for the process to exit.
    async fn exit_within(&mut self, limit: Duration) {
        let _ = tokio::time::timeout(limit, self.exited.wait_for(|exited| *exited)).await;
    }

    /// Gives the process `grace` to exit by itself (its input is closed), then kills the
    /// process group and reaps the child.
    pub(crate) async fn stop(mut self, grace: Duration) {
        if !grace.is_zero() {
            self.exit_within(grace).await;
        }
        self.kill_group();
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.await;
        }
    }

    /// What the process wrote to stderr, once it has exited (waiting briefly for that).
    pub(crate) async fn stderr_after_exit(&mut self) -> Option<String> {
        self.exit_within(STDERR_WAIT).await;
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
        // The kill sender goes with this: the watcher kills the child and reaps it.
    }
}

/// The transport over a child's pipes.
pub(crate) type StdioTransport = AsyncRwTransport<RoleClient, TapReader, ChildStdin>;

/// Starts the server process and builds the transport over its pipes.
pub(crate) fn spawn(
    server: &McpServer,
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
    task_required: TaskRequired,
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
    let transport = AsyncRwTransport::new_client(TapReader::new(stdout, task_required), stdin)
        .with_max_line_length(MAX_MESSAGE_BYTES);
    Ok((ServerProcess::new(child, stderr, stderr_task), transport))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a process with this id still exists (a zombie counts: it is not reaped yet).
    fn exists(pid: u32) -> bool {
        let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
        rustix::process::test_kill_process(pid).is_ok()
    }

    fn process(program: &str, args: &[&str]) -> ServerProcess {
        let child = Command::new(program)
            .args(args)
            .process_group(0)
            .spawn()
            .expect("the program starts");
        ServerProcess::new(child, StderrTail::default(), None)
    }

    /// The watcher notices an exit by itself (no call waits for the child), and stopping or
    /// dropping a running server kills it and reaps it.
    #[tokio::test]
    async fn exits_are_noticed_and_stopped_or_dropped_servers_are_reaped() {
        let mut quick = process("sh", &["-c", "exit 3"]);
        let pid = quick.pid.expect("started");
        quick.exit_within(Duration::from_secs(30)).await;
        assert!(quick.has_exited());
        assert_eq!(quick.id(), None);
        assert!(!exists(pid), "the exited child was reaped");

        let long = process("sleep", &["1000"]);
        let pid = long.id().expect("running");
        assert!(!long.has_exited());
        long.stop(Duration::ZERO).await;
        assert!(!exists(pid), "a stopped server is killed and reaped");

        let dropped = process("sleep", &["1000"]);
        let pid = dropped.id().expect("running");
        drop(dropped);
        for _ in 0..3000 {
            if !exists(pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("a dropped server was not reaped");
    }

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
