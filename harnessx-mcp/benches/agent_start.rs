//! The time to start an agent run with a stdio MCP connector, per run: building the agent,
//! connecting the server (starting its process, the handshake, listing its tools) and one tool
//! call, beside the same run with the session kept ([`McpSession`]: connected once, then per
//! run only registering its tools on the new agent and the call).
//!
//! The connector is the reference server `@modelcontextprotocol/server-everything` over stdio;
//! the model is a [`TestModel`] that calls its `echo` once and answers. What is timed ends with
//! the run's answer; closing the agent (stopping its server, on the per-agent side) is not
//! timed.
//!
//! Run: `bash .ci/install-mcp-servers.sh && cargo bench -p harnessx-mcp --bench agent_start`.
//! Figures go in BENCHMARKS.md. First, interleaved rounds (`AGENT_START_ROUNDS`, default 21):
//! one run of each side per round, the side that goes first alternating; the medians and their
//! ratio are printed. Then criterion times each side on its own.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use harnessx::mcp::{McpServer, McpSession};
use harnessx::model::TestModel;
use harnessx::{Agent, Message};
use serde_json::json;

fn server() -> McpServer {
    let script = harnessx_testkit::npm::reference_server("server-everything")
        .expect("server-everything is installed: run `bash .ci/install-mcp-servers.sh` first");
    McpServer::stdio(
        "everything",
        "node",
        [script.display().to_string(), "stdio".to_owned()],
    )
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Builds an agent with `capability`, runs it to its answer (one `echo` call), and returns how
/// long that took; then closes the agent, untimed.
async fn run_once(capability: impl harnessx::agent::Capability) -> Duration {
    let started = Instant::now();
    let agent = Agent::builder()
        .model(
            TestModel::new()
                .then_call("mcp_everything_echo", json!({"message": "hi"}))
                .then_reply("done"),
        )
        .capability(capability)
        .build()
        .expect("the agent builds");
    let result = agent.run("go").await.expect("the run ends");
    let elapsed = started.elapsed();
    let echoed = result.messages.iter().any(
        |m| matches!(m, Message::Tool { content, is_error: false, .. } if content == "Echo: hi"),
    );
    assert!(echoed, "the tool call failed: {:?}", result.messages);
    agent.close().await;
    elapsed
}

/// A run whose agent connects its own session (`McpServer` as the capability).
async fn per_agent(server: &McpServer) -> Duration {
    run_once(server.clone()).await
}

/// A run whose agent takes its tools from the kept session.
async fn shared(session: &McpSession) -> Duration {
    run_once(session.capability()).await
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn interleaved(rounds: usize) {
    let rt = rt();
    let server = server();
    rt.block_on(async {
        let session = McpSession::connect(server.clone())
            .await
            .expect("server-everything connects");
        // Warm both paths once (the page cache for node and the script, the allocator).
        per_agent(&server).await;
        shared(&session).await;
        let (mut cold, mut warm) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            if round % 2 == 0 {
                cold.push(per_agent(&server).await);
                warm.push(shared(&session).await);
            } else {
                warm.push(shared(&session).await);
                cold.push(per_agent(&server).await);
            }
        }
        let (cold, warm) = (median(cold), median(warm));
        println!(
            "agent_start ({rounds} interleaved rounds, medians): connect per agent {:.1} ms, \
             session kept {:.1} µs; per agent ÷ kept = {:.0}×",
            cold.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e6,
            cold.as_secs_f64() / warm.as_secs_f64()
        );
        session.close().await;
    });
}

fn benches(c: &mut Criterion) {
    let rt = rt();
    let server = server();
    let session = rt
        .block_on(McpSession::connect(server.clone()))
        .expect("server-everything connects");
    let mut group = c.benchmark_group("agent_start");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    group.bench_function("connect_per_agent", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let server = server.clone();
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += per_agent(&server).await;
                }
                total
            }
        })
    });
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(50);
    group.bench_function("session_kept", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let session = session.clone();
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += shared(&session).await;
                }
                total
            }
        })
    });
    group.finish();
    rt.block_on(session.close());
}

criterion_group!(agent_start, benches);

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds = std::env::var("AGENT_START_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(21);
    interleaved(rounds);
    agent_start();
    Criterion::default().configure_from_args().final_summary();
}
