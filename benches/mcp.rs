//! The cost harnessx adds over rmcp for one MCP tool call: `registry.execute` of
//! server-everything's `echo` over stdio (the engine — name lookup, schema check, permission,
//! time limit — and harnessx's MCP layer: the live-session check, the tap on the server's
//! output, result conversion) beside rmcp's own client calling `echo` on a second instance of
//! the same server, interleaved in one run.
//!
//! Run: `bash .ci/install-mcp-servers.sh && cargo bench --bench mcp`. Figures go in
//! BENCHMARKS.md. Calls are made in rounds of one block per side (one call by default), the side
//! that goes first alternating, and each call is timed on its own; the figures are the medians of
//! each side's blocks and of the rounds' differences, so a burst of noise on this shared machine
//! moves neither.
//!
//! Knobs, for finding where time goes:
//! - `MCP_BENCH_SIDES=a,b`: the client of each side, of `harnessx` (`registry.execute`),
//!   `handler` (harnessx's MCP handler called without the engine), `rmcp`, `rmcp-copy` (rmcp's
//!   client compiled a second time), `rmcp-text` (rmcp's client from the model's argument text
//!   to the reply's text, what a user of rmcp writes around the call) and `rmcp+local` (rmcp's
//!   call, then harnessx's `execute` of a local trivial tool: what ~1 µs of warm work costs
//!   right after a reply); `harnessx,harnessx` or `rmcp,rmcp-copy` are control runs whose
//!   difference shows what the method itself reads.
//! - `MCP_BENCH_BLOCK=n`: calls per side per round (each side's code warm for `n` calls).
//! - `MCP_BENCH_RUNTIME=current`: a current-thread runtime.
//! - `MCP_BENCH_NO_TIMER=1`: harnessx's servers get `call_timeout(Duration::MAX)`, a limit too
//!   far to represent, so the engine registers no timer per call: what the time limit costs.
//! - `MCP_BENCH_ONLY=1`: 20,000 calls (`MCP_BENCH_CALLS=n`: n) of the first side alone, for
//!   `perf`, `strace` or callgrind (two counts of calls: their difference is the calls' work).

use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use harnessx::mcp::{McpServer, connect_mcp_server};
use harnessx::{ToolCall, ToolContext, ToolRegistry};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

mod common;

use common::env_number;

const ROUNDS: usize = 41;
const CALLS_PER_ROUND: usize = 200;

fn server_script() -> PathBuf {
    harnessx_testkit::npm::reference_server("server-everything")
        .expect("server-everything is installed: run `bash .ci/install-mcp-servers.sh` first")
}

/// One side's client: a harnessx registry tool (by its registered name), rmcp's own client, or
/// rmcp's client over the server's pipes in [`Passthrough`] wrappers (with the child it owns).
enum Client {
    Harnessx(String),
    /// The handler harnessx registered for the tool, called without the engine.
    Handler(String, std::sync::Arc<dyn harnessx::ToolHandler>),
    Rmcp(rmcp::service::RunningService<rmcp::RoleClient, ()>),
    /// rmcp's client doing what harnessx's side does around the call: the arguments parsed
    /// from the model's text, the reply's text blocks joined into the text the model reads.
    RmcpText(rmcp::service::RunningService<rmcp::RoleClient, ()>),
    /// rmcp's client, then harnessx's `execute` of a local trivial tool right after the reply:
    /// what a warm ~1 µs of work costs at the point where harnessx's layer runs.
    RmcpThenLocal(rmcp::service::RunningService<rmcp::RoleClient, ()>),
    RmcpCopy(
        rmcp::service::RunningService<rmcp::RoleClient, ()>,
        tokio::process::Child,
    ),
}

/// One `echo` call through rmcp's client.
async fn rmcp_echo(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>) {
    let arguments = json!({"message": "hello"});
    let params = CallToolRequestParams::new("echo")
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let result = client.call_tool(params).await.expect("rmcp call");
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

/// One `echo` call through rmcp's client as a user of rmcp would make it for a model: the
/// arguments parsed from the model's text, the reply's text joined.
async fn rmcp_echo_from_text(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>) {
    let arguments: rmcp::model::JsonObject =
        serde_json::from_str(r#"{"message":"hello"}"#).expect("arguments");
    let params = CallToolRequestParams::new("echo").with_arguments(arguments);
    let result = client.call_tool(params).await.expect("rmcp call");
    let texts: Vec<String> = result
        .content
        .iter()
        .filter_map(|block| match block {
            rmcp::model::ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts.join("\n"), "Echo: hello");
}

/// Adds two numbers.
///
/// Args:
///     a: The first.
///     b: The second.
#[harnessx::tool]
async fn local_add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// A pipe passed through unchanged: a type of its own, so that code generic over it is a
/// second copy of the same code.
struct Passthrough<T>(T);

impl<T: AsyncRead + Unpin> AsyncRead for Passthrough<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Passthrough<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let script = server_script();
    // `MCP_BENCH_RUNTIME=current` runs both sides on a current-thread runtime instead.
    let rt = match std::env::var("MCP_BENCH_RUNTIME").as_deref() {
        Ok("current") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .expect("tokio runtime");
    // `MCP_BENCH_SIDES=a,b` picks the client of each side (default `harnessx,rmcp`); each side
    // talks to its own instance of the server. `harnessx,harnessx` and `rmcp,rmcp` are control
    // runs: the same client on both sides, whose "layer" shows what the method itself reads
    // between two server instances.
    let sides = std::env::var("MCP_BENCH_SIDES").unwrap_or_else(|_| "harnessx,rmcp".to_owned());
    let kinds: Vec<&str> = sides.split(',').map(str::trim).collect();
    assert!(
        kinds.len() == 2
            && kinds.iter().all(|k| matches!(
                *k,
                "harnessx" | "handler" | "rmcp" | "rmcp-copy" | "rmcp-text" | "rmcp+local"
            )),
        "MCP_BENCH_SIDES must be two of harnessx, handler, rmcp, rmcp-copy, rmcp-text and \
         rmcp+local, comma-separated; got {sides:?}"
    );
    rt.block_on(async {
        let registry = ToolRegistry::new();
        registry.register_tool(local_add).expect("local_add registers");
        let mut clients = Vec::new();
        for (index, kind) in kinds.iter().enumerate() {
            clients.push(if matches!(*kind, "harnessx" | "handler") {
                let name = format!("ev{index}");
                let mut server = McpServer::stdio(
                    &name,
                    "node",
                    [script.display().to_string(), "stdio".to_owned()],
                );
                if std::env::var_os("MCP_BENCH_NO_TIMER").is_some() {
                    server = server.call_timeout(Duration::MAX);
                }
                connect_mcp_server(&registry, server)
                    .await
                    .expect("harnessx connects to server-everything");
                let tool = format!("mcp_{name}_echo");
                if *kind == "harnessx" {
                    Client::Harnessx(tool)
                } else {
                    let handler = registry.get_tool(&tool).expect("echo is registered").handler;
                    Client::Handler(tool, handler)
                }
            } else if matches!(*kind, "rmcp" | "rmcp-text" | "rmcp+local") {
                let mut command = tokio::process::Command::new("node");
                command.arg(&script).arg("stdio");
                let transport = TokioChildProcess::new(command).expect("server-everything starts");
                let service = ().serve(transport).await.expect("rmcp connects");
                match *kind {
                    "rmcp" => Client::Rmcp(service),
                    "rmcp-text" => Client::RmcpText(service),
                    _ => Client::RmcpThenLocal(service),
                }
            } else {
                // The same client doing the same work through code of its own: the pipes in a
                // pass-through wrapper make rmcp compile its service loop a second time.
                let mut child = tokio::process::Command::new("node")
                    .arg(&script)
                    .arg("stdio")
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .expect("server-everything starts");
                let pipes = (
                    Passthrough(child.stdout.take().expect("stdout")),
                    Passthrough(child.stdin.take().expect("stdin")),
                );
                Client::RmcpCopy(
                    ().serve(pipes).await.expect("rmcp connects"),
                    child,
                )
            });
        }
        let call = |side: usize| {
            let (client, registry) = (&clients[side], &registry);
            async move {
                match client {
                    Client::Harnessx(tool) => {
                        // The argument text as a model sends it.
                        let call = ToolCall::new("c", tool.as_str(), r#"{"message":"hello"}"#);
                        let result = registry.execute(&call, None).await;
                        assert!(!result.is_error, "{result:?}");
                        assert_eq!(result.content, "Echo: hello");
                    }
                    Client::Handler(tool, handler) => {
                        let ctx = ToolContext::new("c", tool.as_str());
                        let output = handler
                            .call(json!({"message": "hello"}), ctx)
                            .await
                            .expect("echo runs");
                        assert_eq!(output.content, "Echo: hello");
                    }
                    Client::Rmcp(client) => rmcp_echo(client).await,
                    Client::RmcpText(client) => rmcp_echo_from_text(client).await,
                    Client::RmcpThenLocal(client) => {
                        rmcp_echo(client).await;
                        let call = ToolCall::new("c", "local_add", r#"{"a":2,"b":3}"#);
                        let result = registry.execute(&call, None).await;
                        assert_eq!(result.content, "5");
                    }
                    Client::RmcpCopy(client, _) => rmcp_echo(client).await,
                }
            }
        };

        // Warm up both sides (JIT in node, connections, caches).
        for _ in 0..500 {
            call(0).await;
            call(1).await;
        }
        // `MCP_BENCH_ONLY=1` makes 20,000 calls (`MCP_BENCH_CALLS=n`: n) of the first side and
        // nothing else: for a profiler or `strace -c` attached to this process.
        if std::env::var_os("MCP_BENCH_ONLY").is_some() {
            let only = kinds[0];
            let calls: u32 = env_number("MCP_BENCH_CALLS").unwrap_or(20_000);
            eprintln!("only {only}: pid {}", std::process::id());
            let t = Instant::now();
            for _ in 0..calls {
                call(0).await;
            }
            let per_call = t.elapsed().as_secs_f64() * 1e6 / f64::from(calls);
            println!("{only}: {calls} calls, {per_call:.1} µs per call");
            return;
        }
        // Rounds of one block of calls per side, the side that goes first alternating; each
        // call is timed on its own and a block counts by its median, so a burst of machine noise
        // moves neither side. `MCP_BENCH_BLOCK=1` (the default) alternates call by call: each
        // side's code then runs right after the other's. Larger blocks measure each side with
        // its own code warm, as a loop of calls of one client does (see BENCHMARKS.md).
        let block: usize = env_number("MCP_BENCH_BLOCK")
            .filter(|b| *b > 0)
            .unwrap_or(1);
        let rounds = ROUNDS * CALLS_PER_ROUND / block;
        let (mut ours, mut theirs, mut differences) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let mut took = [0.0_f64; 2];
            for side in [round % 2, 1 - round % 2] {
                let mut calls = Vec::with_capacity(block);
                for _ in 0..block {
                    let t = Instant::now();
                    call(side).await;
                    calls.push(t.elapsed().as_secs_f64() * 1e6);
                }
                took[side] = median(calls);
            }
            ours.push(took[0]);
            theirs.push(took[1]);
            differences.push(took[0] - took[1]);
        }
        let (ours, theirs, difference) = (median(ours), median(theirs), median(differences));
        let label = |kind: &str| match kind {
            "harnessx" => "harnessx `registry.execute`",
            "handler" => "harnessx's MCP handler, called without the engine",
            "rmcp" => "rmcp client `call_tool`",
            "rmcp-text" => "rmcp client `call_tool`, from the argument text to the reply's text",
            "rmcp+local" => "rmcp client `call_tool`, then `execute` of a local trivial tool",
            _ => "rmcp client `call_tool` (second copy)",
        };
        println!(
            "| MCP stdio `echo`, server-everything | per call (median of {rounds} rounds of {block} call(s) a side) |"
        );
        println!("|---|---|");
        println!("| side 2: {} | {theirs:.1} µs |", label(kinds[1]));
        println!("| side 1: {} | {ours:.1} µs |", label(kinds[0]));
        println!(
            "| side 1 − side 2 (median of the rounds' differences) | {difference:.1} µs ({:.2}×) |",
            ours / theirs
        );
        for client in clients {
            match client {
                Client::Rmcp(client) | Client::RmcpText(client) | Client::RmcpThenLocal(client) => {
                    drop(client.cancel().await)
                }
                Client::RmcpCopy(client, mut child) => {
                    drop(client.cancel().await);
                    child.kill().await.ok();
                }
                Client::Harnessx(_) | Client::Handler(..) => {}
            }
        }
        registry.close().await;
    });
}
