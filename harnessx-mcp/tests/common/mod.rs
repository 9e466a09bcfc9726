//! Starting the test MCP servers and watching their processes.
//!
//! The servers run on the official TypeScript SDK, installed from the npm registry by
//! `.ci/install-mcp-servers.sh` and found with `harnessx_testkit::npm`: with `CI` set a missing
//! program fails the test; without it the test is skipped with a printed reason.

use std::path::{Path, PathBuf};
use std::time::Duration;

use harnessx::mcp::McpServer;
use harnessx::{ToolCall, ToolRegistry, ToolResult};

pub use harnessx_testkit::npm::node_modules;

/// A test server's files: where it logs its starts.
pub struct Counting {
    /// The server, named `counting`, to connect to.
    pub server: McpServer,
    /// One line (a process id) per start.
    pub starts: PathBuf,
    /// Run `sh` instead of `node` directly: a start attempt is logged here before the server
    /// starts (see [`Counting::failing_when`]).
    pub attempts: PathBuf,
    _dir: tempfile::TempDir,
}

impl Counting {
    /// `tests/servers/counting.cjs` over stdio: logs its process id to [`starts`](Self::starts)
    /// when it starts; tools `echo`, `pid` and `add_tool` (which adds a tool and sends
    /// `notifications/tools/list_changed`).
    pub fn new() -> Option<Self> {
        Self::build(None)
    }

    /// The same server started through `sh`, which logs each start attempt to
    /// [`attempts`](Self::attempts) and fails the start (exit 1, `down` on stderr) while the
    /// file `flag` exists.
    pub fn failing_when(flag: &Path) -> Option<Self> {
        Self::build(Some(flag))
    }

    fn build(flag: Option<&Path>) -> Option<Self> {
        let modules = node_modules()?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/counting.cjs");
        let dir = tempfile::tempdir().unwrap();
        let starts = dir.path().join("starts");
        let attempts = dir.path().join("attempts");
        let server = match flag {
            None => McpServer::stdio("counting", "node", [script.display().to_string()]),
            Some(flag) => {
                let shell = format!(
                    "echo x >> '{}'; if [ -e '{}' ]; then echo down >&2; exit 1; fi; exec node '{}'",
                    attempts.display(),
                    flag.display(),
                    script.display()
                );
                McpServer::stdio("counting", "sh", ["-c".to_owned(), shell])
            }
        }
        .env("NODE_PATH", modules.display().to_string())
        .env("START_LOG", starts.display().to_string())
        .connect_timeout(Duration::from_secs(20));
        Some(Self {
            server,
            starts,
            attempts,
            _dir: dir,
        })
    }

    /// The process ids of the server's starts so far, in order.
    pub fn started(&self) -> Vec<u32> {
        lines(&self.starts)
            .iter()
            .map(|l| l.parse().unwrap())
            .collect()
    }

    /// How many start attempts `sh` logged (for [`failing_when`](Self::failing_when)).
    pub fn attempted(&self) -> usize {
        lines(&self.attempts).len()
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Runs one call through the registry with the ordinary ALLOW-default manager.
pub async fn call(registry: &ToolRegistry, name: &str, args: serde_json::Value) -> ToolResult {
    registry
        .execute(&ToolCall::json("c1", name, args), None)
        .await
}

/// Kills a process by id (as a crash would).
pub fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -9 {pid} failed");
}

/// Whether a process no longer runs: gone, or a zombie waiting to be reaped.
pub fn stopped(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Polls `check` every 20 ms for up to 10 s.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..500 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting until {what}");
}
