//! The cost harnessx adds over rmcp for one MCP tool call: `registry.execute` of
//! server-everything's `echo` over stdio (the engine — name lookup, schema check, permission,
//! time limit — and harnessx's MCP layer: the live-session check, the reply-size marker and the
//! pipe taps, result conversion) beside rmcp's own client calling `echo` on a second instance of
//! the same server, interleaved in one run.
//!
//! Run: `bash .ci/install-mcp-servers.sh && cargo bench --bench mcp`. Figures go in
//! BENCHMARKS.md. Calls are made in pairs, one per side, the side that goes first alternating,
//! and each call is timed on its own; the figures are the medians of each side's calls and of
//! the pairs' differences, so a burst of noise on this shared machine moves neither.

use std::path::PathBuf;
use std::time::Instant;

use harnessx::mcp::{McpServer, connect_mcp_server};
use harnessx::{ToolCall, ToolRegistry};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

const ROUNDS: usize = 41;
const CALLS_PER_ROUND: usize = 200;

fn server_script() -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".ci/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.is_file(),
        "{} is missing: run `bash .ci/install-mcp-servers.sh` first",
        script.display()
    );
    script
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
    rt.block_on(async {
        let registry = ToolRegistry::new();
        let server = McpServer::stdio(
            "ev",
            "node",
            [script.display().to_string(), "stdio".to_owned()],
        );
        let _connection = connect_mcp_server(&registry, server)
            .await
            .expect("harnessx connects to server-everything");

        let mut command = tokio::process::Command::new("node");
        command.arg(&script).arg("stdio");
        let transport = TokioChildProcess::new(command).expect("server-everything starts");
        let client = ().serve(transport).await.expect("rmcp connects");

        let harnessx_call = || async {
            let call = ToolCall::json("c", "mcp_ev_echo", json!({"message": "hello"}));
            let result = registry.execute(&call, None).await;
            assert!(!result.is_error, "{result:?}");
            assert_eq!(result.content, "Echo: hello");
        };
        let rmcp_call = || async {
            let arguments = json!({"message": "hello"});
            let params = CallToolRequestParams::new("echo")
                .with_arguments(arguments.as_object().cloned().unwrap_or_default());
            let result = client.call_tool(params).await.expect("rmcp call");
            assert_ne!(result.is_error, Some(true), "{result:?}");
        };

        // Warm up both sides (JIT in node, connections, caches).
        for _ in 0..500 {
            harnessx_call().await;
            rmcp_call().await;
        }
        // `MCP_BENCH_ONLY=harnessx|rmcp` makes 20,000 calls of one side and nothing else:
        // for a profiler or `strace -c` attached to this process.
        if let Ok(only) = std::env::var("MCP_BENCH_ONLY") {
            eprintln!("only {only}: pid {}", std::process::id());
            let t = Instant::now();
            for _ in 0..20_000 {
                if only == "rmcp" {
                    rmcp_call().await;
                } else {
                    harnessx_call().await;
                }
            }
            println!("{only}: {:.1} µs per call", t.elapsed().as_secs_f64() * 1e6 / 20_000.0);
            return;
        }
        // Call by call, in pairs whose order alternates: each call is timed on its own, so a
        // burst of machine noise lands on one call of each side, and medians drop it.
        let (mut ours, mut theirs, mut differences) = (Vec::new(), Vec::new(), Vec::new());
        for pair in 0..ROUNDS * CALLS_PER_ROUND {
            let mut took = [0.0_f64; 2];
            for side in [pair % 2, 1 - pair % 2] {
                let t = Instant::now();
                if side == 0 {
                    harnessx_call().await;
                } else {
                    rmcp_call().await;
                }
                took[side] = t.elapsed().as_secs_f64() * 1e6;
            }
            ours.push(took[0]);
            theirs.push(took[1]);
            differences.push(took[0] - took[1]);
        }
        let pairs = ours.len();
        let (ours, theirs, difference) = (median(ours), median(theirs), median(differences));
        println!("| MCP stdio `echo`, server-everything | per call (median of {pairs} interleaved pairs) |");
        println!("|---|---|");
        println!("| rmcp client `call_tool` | {theirs:.1} µs |");
        println!("| harnessx `registry.execute` | {ours:.1} µs |");
        println!(
            "| harnessx's layer (median of the pairs' differences) | {difference:.1} µs ({:.2}× rmcp) |",
            ours / theirs
        );
        client.cancel().await.ok();
        registry.close().await;
    });
}
