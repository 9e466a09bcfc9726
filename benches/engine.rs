//! Engine benchmarks: the cost of one validated `execute` next to its floor and next to rmcp's
//! `ToolRouter::call` (measured in the same run), a synchronous tool's hand-off off the async
//! worker, a batch of 1,000 concurrent sleeping calls, and a mixed batch whose serial calls must
//! keep their order.
//!
//! Run: `cargo bench --bench engine`; `ENGINE_ROUNDS=31 cargo bench --bench engine` prints the
//! per-call figures from interleaved rounds instead, and `ENGINE_SIDE=<n>` runs one side alone
//! for a profiler (see [`interleaved`]). Figures are recorded in BENCHMARKS.md.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use harnessx::{
    ToolCall, ToolDefinition, ToolOptions, ToolOutput, ToolRegistry, handler_fn, sync_handler_fn,
};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, JsonObject, NumberOrString, Tool};
use rmcp::service::{RequestContext, RoleServer, RunningService};
use serde_json::json;

mod common;

use common::env_number;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A current-thread runtime: the per-call figures then measure harnessx, not cross-thread wakeups.
fn local_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn add_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": false
    })
}

fn trivial_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "add",
            "Add two numbers.",
            add_schema(),
            handler_fn(|args, _ctx| async move {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                Ok(ToolOutput::text(sum.to_string()))
            }),
        ))
        .expect("register");
    registry
}

/// Add two numbers.
///
/// # Arguments
///
/// * `a` - The first.
/// * `b` - The second.
#[harnessx::tool(name = "add")]
async fn add_typed(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// The trivial `add` as a serial tool (`concurrent = false`): each call takes a turn on the
/// registry's lane, as an MCP tool without `readOnlyHint` or a file write does.
fn serial_registry() -> ToolRegistry {
    let registry = trivial_registry();
    registry
        .register_tool_with(
            registry.unregister("add").expect("registered"),
            ToolOptions::new().concurrent(false),
        )
        .expect("register");
    registry
}

/// The same `add` written as a user writes a tool: a `#[tool]` function with typed parameters,
/// as rmcp's side is.
fn macro_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register_tool(add_typed).expect("register");
    registry
}

/// The peer: an rmcp server whose only route is the same `add` tool, typed arguments.
#[derive(Clone)]
struct RmcpPeer;

impl rmcp::ServerHandler for RmcpPeer {}

#[derive(serde::Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn rmcp_router() -> ToolRouter<RmcpPeer> {
    let schema = match add_schema() {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("the schema is an object"),
    };
    let attr = Tool::new("add", "Add two numbers.", Arc::new(schema));
    ToolRouter::new().with_route(ToolRoute::new(
        attr,
        |Parameters(args): Parameters<AddArgs>| async move { (args.a + args.b).to_string() },
    ))
}

/// rmcp's side of the per-call comparison: its router, the running service whose peer handle
/// `ToolCallContext` needs (over an in-memory pipe), and the parsed arguments of the call.
struct RmcpSide {
    router: ToolRouter<RmcpPeer>,
    service: RunningService<RoleServer, RmcpPeer>,
    arguments: JsonObject,
}

impl RmcpSide {
    fn new(rt: &tokio::runtime::Runtime, call: &ToolCall) -> Self {
        let (ours, _theirs) = tokio::io::duplex(4096);
        let service = rt.block_on(async { rmcp::service::serve_directly(RmcpPeer, ours, None) });
        Self {
            router: rmcp_router(),
            service,
            arguments: serde_json::from_str(&call.arguments).expect("arguments"),
        }
    }

    /// One `ToolRouter::call` of `add`, with typed arguments from the parsed object.
    async fn call(&self) -> rmcp::model::CallToolResponse {
        self.call_with(self.arguments.clone()).await
    }

    /// The same call with its arguments parsed from `text` first: like for like with
    /// harnessx's `execute`, which starts from the model's argument text.
    async fn call_from_text(&self, text: &str) -> rmcp::model::CallToolResponse {
        self.call_with(serde_json::from_str(text).expect("arguments"))
            .await
    }

    async fn call_with(&self, arguments: JsonObject) -> rmcp::model::CallToolResponse {
        let params = CallToolRequestParams::new("add").with_arguments(arguments);
        let context = ToolCallContext::new(
            &RmcpPeer,
            params,
            RequestContext::new(NumberOrString::Number(1), self.service.peer().clone()),
        );
        self.router.call(context).await.expect("rmcp call")
    }
}

/// (a) One validated execute of a trivial tool from a JSON argument string, beside the floor (a
/// tokio spawn plus a timeout around a ready future) and beside rmcp's `ToolRouter::call` of the
/// same tool (typed arguments from the parsed JSON object; no schema validation, permission or
/// timeout), all measured in the same run.
fn execute_vs_floor(c: &mut Criterion) {
    let rt = local_runtime();
    let registry = trivial_registry();
    let call = ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#);
    let rmcp = RmcpSide::new(&rt, &call);
    let mut group = c.benchmark_group("execute");
    group.bench_function("rmcp_tool_router_call", |b| {
        b.to_async(&rt).iter(|| rmcp.call())
    });
    group.bench_function("floor_spawn_timeout_ready", |b| {
        b.to_async(&rt).iter(|| async {
            let handle = tokio::spawn(async { 5_i64 });
            tokio::time::timeout(Duration::from_secs(25), handle).await
        })
    });
    group.bench_function("validated_execute_trivial", |b| {
        b.to_async(&rt).iter(|| registry.execute(&call, None))
    });
    group.finish();
}

/// A registry whose `add` is synchronous: the engine runs it off the async worker.
fn sync_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "add",
            "Add two numbers.",
            add_schema(),
            sync_handler_fn(|args, _ctx| {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                Ok(ToolOutput::text(sum.to_string()))
            }),
        ))
        .expect("register");
    registry
}

/// (d) A synchronous tool: one validated execute on a current-thread and on a multi-thread
/// runtime, beside the two ways off the worker measured bare: tokio's `spawn_blocking` (alone
/// and under a timeout, on both runtimes) and `block_in_place` (multi-thread runtimes only; on
/// the `block_on` thread, where there is no worker core to hand off, and on a worker).
fn sync_tool(c: &mut Criterion) {
    let registry = sync_registry();
    let call = ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#);
    let local = local_runtime();
    let multi = runtime();
    let mut group = c.benchmark_group("sync");
    group.bench_function("validated_execute_sync_current_thread", |b| {
        b.to_async(&local).iter(|| registry.execute(&call, None))
    });
    group.bench_function("validated_execute_sync_multi_thread", |b| {
        b.to_async(&multi).iter(|| registry.execute(&call, None))
    });
    group.bench_function("bare_spawn_blocking_current_thread", |b| {
        b.to_async(&local)
            .iter(|| async { tokio::task::spawn_blocking(|| 5_i64).await })
    });
    group.bench_function("bare_spawn_blocking_timeout_current_thread", |b| {
        b.to_async(&local).iter(|| async {
            let handle = tokio::task::spawn_blocking(|| 5_i64);
            tokio::time::timeout(Duration::from_secs(25), handle).await
        })
    });
    group.bench_function("bare_spawn_blocking_multi_thread", |b| {
        b.to_async(&multi)
            .iter(|| async { tokio::task::spawn_blocking(|| 5_i64).await })
    });
    group.bench_function("bare_block_in_place_multi_thread", |b| {
        b.to_async(&multi)
            .iter(|| async { tokio::task::block_in_place(|| 5_i64) })
    });
    // On a worker thread `block_in_place` hands the worker's core to another thread first;
    // beside it the same spawned task without it, so the difference is the hand-off.
    group.bench_function("worker_spawn_only_multi_thread", |b| {
        b.to_async(&multi)
            .iter(|| async { tokio::spawn(async { 5_i64 }).await })
    });
    group.bench_function("worker_block_in_place_multi_thread", |b| {
        b.to_async(&multi)
            .iter(|| async { tokio::spawn(async { tokio::task::block_in_place(|| 5_i64) }).await })
    });
    group.finish();
}

/// (b) A batch of 1,000 concurrent calls of a tool that sleeps 10 ms.
fn concurrent_batch(c: &mut Criterion) {
    let rt = runtime();
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "nap",
            "Sleep 10 ms.",
            json!({"type": "object", "properties": {}}),
            handler_fn(|_args, _ctx| async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok(ToolOutput::text("rested"))
            }),
        ))
        .expect("register");
    let calls: Vec<ToolCall> = (0..1_000)
        .map(|i| ToolCall::new(format!("c{i}"), "nap", "{}"))
        .collect();
    let mut group = c.benchmark_group("batch");
    group.sample_size(20);
    group.bench_function("1000_concurrent_10ms_calls", |b| {
        b.to_async(&rt).iter(|| async {
            let results = registry.run(None).execute_batch(&calls, None).await;
            assert!(results.iter().all(|r| !r.is_error));
            results
        })
    });
    group.finish();
}

/// (c) A mixed batch: 20 serial writes interleaved with 80 concurrent reads (1 ms each). Every
/// iteration checks that the serial calls ran one at a time in the order the model made them.
fn mixed_batch(c: &mut Criterion) {
    let rt = runtime();
    let log = Arc::new(Mutex::new(Vec::<usize>::new()));
    let registry = ToolRegistry::new();
    let tool = |name: &str, log: Option<Arc<Mutex<Vec<usize>>>>| {
        ToolDefinition::new(
            name,
            "Sleep 1 ms and record the order.",
            json!({"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}),
            handler_fn(move |args, _ctx| {
                let log = log.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    if let Some(log) = log {
                        log.lock()
                            .map_err(|_| harnessx::ToolError::failed("poisoned"))?
                            .push(args["i"].as_u64().unwrap_or(0) as usize);
                    }
                    Ok(ToolOutput::text("ok"))
                }
            }),
        )
    };
    registry
        .register_tool(tool("read", None))
        .expect("register");
    registry
        .register_tool_with(
            tool("write", Some(Arc::clone(&log))),
            ToolOptions::new().concurrent(false),
        )
        .expect("register");
    let calls: Vec<ToolCall> = (0..100)
        .map(|i| {
            let name = if i % 5 == 0 { "write" } else { "read" };
            ToolCall::json(format!("c{i}"), name, json!({"i": i}))
        })
        .collect();
    let expected: Vec<usize> = (0..100).filter(|i| i % 5 == 0).collect();
    let mut group = c.benchmark_group("batch");
    group.sample_size(20);
    group.bench_function("mixed_20_serial_80_concurrent_1ms", |b| {
        b.to_async(&rt).iter(|| async {
            log.lock().expect("log").clear();
            let results = registry.run(None).execute_batch(&calls, None).await;
            assert_eq!(
                *log.lock().expect("log"),
                expected,
                "serial calls kept their order"
            );
            results
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    execute_vs_floor,
    sync_tool,
    concurrent_batch,
    mixed_batch
);

/// The sides [`interleaved`] compares, in the order of its table.
const SIDES: [&str; 7] = [
    "rmcp ToolRouter::call",
    "harnessx execute (async tool)",
    "harnessx execute (sync tool)",
    "bare spawn_blocking",
    "rmcp ToolRouter::call, arguments parsed from the text",
    "harnessx execute (#[tool] async fn, typed parameters)",
    "harnessx execute (async tool, serial)",
];

/// The per-call figures on a current-thread runtime: rmcp's `ToolRouter::call` from the parsed
/// arguments and from their text, harnessx's validated `execute` of an async tool — a
/// `handler_fn` reading its `Value` and a `#[tool]` function — of the `handler_fn` as a serial
/// tool, of a sync tool, and a bare `spawn_blocking` ([`SIDES`]).
///
/// With `rounds` (`ENGINE_ROUNDS=31 cargo bench --bench engine`), instead of criterion's
/// one-after-another runs, interleaved rounds of all of them, the side that goes first rotating
/// each round; prints each side's median over the rounds of the mean per call, and the ratios to
/// rmcp, so machine drift falls on every side alike. With `only`, `calls` calls of that one side
/// and nothing else, for a profiler (`ENGINE_SIDE=1 ENGINE_CALLS=100000 valgrind
/// --tool=callgrind <bench binary>` counts the instructions of one call of a side, free of the
/// machine's noise).
fn interleaved(rounds: usize, only: Option<(usize, u32)>) {
    const CALLS: u32 = 20_000;
    let rt = local_runtime();
    let registry = trivial_registry();
    let sync = sync_registry();
    let typed = macro_registry();
    let serial = serial_registry();
    let call = ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#);
    let rmcp = RmcpSide::new(&rt, &call);
    let run = |side: usize, calls: u32| -> f64 {
        rt.block_on(async {
            let start = std::time::Instant::now();
            for _ in 0..calls {
                match side {
                    0 => {
                        std::hint::black_box(rmcp.call().await);
                    }
                    1 => assert!(!registry.execute(&call, None).await.is_error),
                    2 => assert!(!sync.execute(&call, None).await.is_error),
                    4 => {
                        std::hint::black_box(rmcp.call_from_text(&call.arguments).await);
                    }
                    5 => assert!(!typed.execute(&call, None).await.is_error),
                    6 => assert!(!serial.execute(&call, None).await.is_error),
                    _ => {
                        std::hint::black_box(
                            tokio::task::spawn_blocking(|| 5_i64).await.expect("joined"),
                        );
                    }
                }
            }
            start.elapsed().as_secs_f64() * 1e9 / f64::from(calls)
        })
    };
    if let Some((side, calls)) = only {
        let ns = run(side, calls);
        println!("{}: {calls} calls, {ns:.0} ns each", SIDES[side]);
        return;
    }
    for side in 0..SIDES.len() {
        run(side, CALLS / 4);
    }
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); SIDES.len()];
    for round in 0..rounds {
        for k in 0..SIDES.len() {
            let side = (round + k) % SIDES.len();
            // The hand-offs to another thread cost ~100× a call: fewer of them fill a round.
            let calls = if matches!(side, 2 | 3) {
                CALLS / 20
            } else {
                CALLS
            };
            figures[side].push(run(side, calls));
        }
    }
    let medians: Vec<f64> = figures
        .into_iter()
        .map(|mut xs| {
            xs.sort_by(f64::total_cmp);
            xs[xs.len() / 2]
        })
        .collect();
    println!(
        "| per call, current-thread runtime (median of {rounds} interleaved rounds) | ns | × rmcp |"
    );
    println!("|---|---|---|");
    for (side, median) in SIDES.iter().zip(&medians) {
        println!("| {side} | {median:.0} | {:.2}× |", median / medians[0]);
    }
    println!(
        "harnessx execute (async tool) against rmcp from the same text: {:.2}×",
        medians[1] / medians[4]
    );
    println!(
        "harnessx execute (#[tool] async fn) against rmcp from the same text: {:.2}×",
        medians[5] / medians[4]
    );
}

fn main() {
    if let Some(side) = env_number::<usize>("ENGINE_SIDE") {
        assert!(
            side < SIDES.len(),
            "ENGINE_SIDE is 0 to {}",
            SIDES.len() - 1
        );
        let calls = env_number("ENGINE_CALLS").unwrap_or(100_000);
        interleaved(0, Some((side, calls)));
        return;
    }
    if let Some(rounds) = env_number("ENGINE_ROUNDS") {
        interleaved(rounds, None);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
