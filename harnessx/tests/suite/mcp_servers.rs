//! Finding, starting and stopping the reference MCP servers the MCP tests run against.
//!
//! The servers are installed from the npm registry by `.ci/install-mcp-servers.sh` and found
//! with `harnessx_testkit::npm`: with `CI` set a missing server or `node` fails the test; without
//! it the test is skipped with a printed reason.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use harnessx::mcp::{McpConnection, McpServer, connect_mcp_server};
use harnessx::{ToolCall, ToolRegistry, ToolResult};
pub use harnessx_testkit::npm::{node, reference_server};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// server-everything over stdio, named `name`.
pub fn everything(name: &str) -> Option<McpServer> {
    let script = reference_server("server-everything")?;
    Some(McpServer::stdio(
        name,
        "node",
        [script.display().to_string(), "stdio".to_owned()],
    ))
}

/// server-filesystem over stdio, serving `root`.
pub fn filesystem(name: &str, root: &Path) -> Option<McpServer> {
    let script = reference_server("server-filesystem")?;
    Some(McpServer::stdio(
        name,
        "node",
        [script.display().to_string(), root.display().to_string()],
    ))
}

/// server-everything in its streamable HTTP mode on a free port of 127.0.0.1, killed on drop.
pub struct HttpEverything {
    child: Child,
    port: u16,
}

impl HttpEverything {
    /// Starts the server on a free port and waits until it listens.
    pub async fn start() -> Option<Self> {
        Self::start_on(free_port()).await
    }

    /// Starts the server on `port` and waits until it listens.
    pub async fn start_on(port: u16) -> Option<Self> {
        let script = reference_server("server-everything")?;
        let mut child = Command::new("node")
            .arg(&script)
            .arg("streamableHttp")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let ready = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("listening on port") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            ready,
            Ok(true),
            "server-everything (streamableHttp) did not start"
        );
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Some(Self { child, port })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Stops the server.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// Runs one call through the registry with the ordinary ALLOW-default manager.
pub async fn call(registry: &ToolRegistry, name: &str, args: serde_json::Value) -> ToolResult {
    registry
        .execute(&ToolCall::json("c1", name, args), None)
        .await
}

/// Whether a tool name is one model APIs accept.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Kills a process by id (as a crash would).
pub fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -9 {pid} failed");
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

/// Connects `server` to a fresh registry.
pub async fn connect(server: McpServer) -> (ToolRegistry, McpConnection) {
    let registry = ToolRegistry::new();
    let connection = connect_mcp_server(&registry, server)
        .await
        .expect("the reference server connects");
    (registry, connection)
}

/// Waits until the connection has noticed that its server died.
pub async fn until_disconnected(connection: &McpConnection) {
    eventually("the connection noticed the death", || {
        let connection = connection.clone();
        async move { !connection.is_connected().await }
    })
    .await;
}
