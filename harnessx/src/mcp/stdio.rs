//! Stdio servers: the child process (clean environment, own process group, killed whole), its
//! stderr kept for error messages, and a tap on stdout that notes tools needing the tasks API.

use std::collections::{HashSet, VecDeque};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::McpError;
use super::config::McpServer;

/// How many stderr lines are kept for error messages.
const STDERR_LINES: usize = 20;
/// How long a failed start waits for the process to exit and its stderr to be read.
const STDERR_WAIT: Duration = Duration::from_millis(300);
/// The longest stdout line the tap inspects; longer lines are passed on unread.
const TAP_MAX_LINE: usize = 4 * 1024 * 1024;

/// The names of tools whose listing said `execution.taskSupport: "required"`.
pub(crate) type TaskRequired = Arc<Mutex<HashSet<String>>>;

/// The last lines the server wrote to stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines joined, or `None` when there are none.
    pub(crate) fn text(&self) -> Option<String> {
        let lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let text: Vec<&str> = lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect();
        (!text.is_empty()).then(|| text.join(" | "))
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
    let stderr_task = stderr_pipe.map(|pipe| {
        let tail = stderr.clone();
        let name = server.name.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %name, "mcp server stderr: {line}");
                tail.push(line);
            }
        })
    });
    let transport = AsyncRwTransport::new_client(TapReader::new(stdout, task_required), stdin);
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

/// Passes the server's stdout through unchanged while reading each line that lists tools, to
/// note the tools whose `execution.taskSupport` is `"required"` (rmcp's `Tool` type drops that
/// field, and harnessx cannot run such tools).
pub(crate) struct TapReader {
    inner: ChildStdout,
    line: Vec<u8>,
    overflow: bool,
    task_required: TaskRequired,
}

impl TapReader {
    fn new(inner: ChildStdout, task_required: TaskRequired) -> Self {
        Self {
            inner,
            line: Vec::new(),
            overflow: false,
            task_required,
        }
    }

    fn observe(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            self.push(&rest[..pos]);
            if !self.overflow {
                note_task_required(&self.line, &self.task_required);
            }
            self.line.clear();
            self.overflow = false;
            rest = &rest[pos + 1..];
        }
        self.push(rest);
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        if self.line.len() + bytes.len() > TAP_MAX_LINE {
            self.overflow = true;
            self.line.clear();
        } else {
            self.line.extend_from_slice(bytes);
        }
    }
}

impl AsyncRead for TapReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &poll {
            let new = buf.filled()[before..].to_vec();
            self.observe(&new);
        }
        poll
    }
}

/// Records tools marked `taskSupport: "required"` in a `tools/list` result line.
fn note_task_required(line: &[u8], into: &TaskRequired) {
    let needle = b"taskSupport";
    if !line.windows(needle.len()).any(|w| w == needle) {
        return;
    }
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(line) else {
        return;
    };
    let Some(tools) = message.pointer("/result/tools").and_then(|t| t.as_array()) else {
        return;
    };
    let mut set = into.lock().unwrap_or_else(|p| p.into_inner());
    for tool in tools {
        let required = tool
            .pointer("/execution/taskSupport")
            .and_then(|v| v.as_str())
            == Some("required");
        if let Some(name) = tool.get("name").and_then(|n| n.as_str()) {
            if required {
                set.insert(name.to_owned());
            } else {
                set.remove(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists_mark_task_required_tools() {
        let set = TaskRequired::default();
        let line = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{}},{"name":"b","execution":{"taskSupport":"required"}},{"name":"c","execution":{"taskSupport":"optional"}}]}}"#;
        note_task_required(line, &set);
        let got = set.lock().unwrap().clone();
        assert_eq!(got, HashSet::from(["b".to_owned()]));
        note_task_required(br#"{"not json"#, &set);
        assert_eq!(set.lock().unwrap().len(), 1);
    }
}
