//! A hostile stdio MCP server (a node script): it floods its stderr and answers with a reply
//! larger than the client reads. The client keeps a bounded tail of stderr and fails the call
//! at once, naming the reply's size.

use std::time::Duration;

use harnessx::ToolErrorKind;
use harnessx::mcp::McpServer;
use serde_json::json;

use super::mcp_servers::{call, connect, node};

/// Speaks enough JSON-RPC to initialize and list two tools: `flood` writes 64 MiB to stderr
/// without a newline and then 20 000 short lines before answering; `big` answers with a reply of
/// 17 MiB on one line.
const HOSTILE_SERVER: &str = r#"
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const writeAll = (stream, data) => new Promise((ok) => stream.write(data) ? ok() : stream.once('drain', ok));
rl.on('line', async (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') {
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1.0.0' } } });
  } else if (m.method === 'tools/list') {
    const schema = { type: 'object', properties: {} };
    send({ jsonrpc: '2.0', id: m.id, result: { tools: [
      { name: 'flood', inputSchema: schema, annotations: { readOnlyHint: true } },
      { name: 'big', inputSchema: schema, annotations: { readOnlyHint: true } }] } });
  } else if (m.method === 'tools/call' && m.params.name === 'flood') {
    const mib = Buffer.alloc(1024 * 1024, 'x');
    for (let i = 0; i < 64; i++) await writeAll(process.stderr, mib);
    let lines = '';
    for (let i = 0; i < 20000; i++) lines += 'line ' + i + '\n';
    await writeAll(process.stderr, lines + 'done flooding\n');
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'flooded' }] } });
  } else if (m.method === 'tools/call' && m.params.name === 'big') {
    const text = 'y'.repeat(17 * 1024 * 1024);
    await writeAll(process.stdout, JSON.stringify({ jsonrpc: '2.0', id: m.id,
      result: { content: [{ type: 'text', text }] } }) + '\n');
  } else if (m.id !== undefined) {
    send({ jsonrpc: '2.0', id: m.id, result: {} });
  }
});
"#;

fn hostile() -> McpServer {
    McpServer::stdio("hostile", "node", ["-e", HOSTILE_SERVER])
}

#[tokio::test]
async fn a_stderr_flood_keeps_only_a_bounded_tail() {
    if node().is_none() {
        return;
    }
    let (registry, conn) = connect(hostile()).await;
    let result = call(&registry, "mcp_hostile_flood", json!({})).await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(result.content, "flooded");
    // The reply can overtake the end of stderr: wait until the last line has been read.
    let mut stderr = String::new();
    for _ in 0..200 {
        stderr = conn.server_stderr().await.unwrap_or_default();
        if stderr.ends_with("done flooding") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        stderr.ends_with("line 19999 | done flooding"),
        "{}",
        &stderr[stderr.len().saturating_sub(80)..]
    );
    // 64 MiB and 20 000 lines went in; 8 KiB of lines came out (joined by " | ", after the
    // note of what was dropped).
    assert!(stderr.len() < 16 * 1024, "{} bytes kept", stderr.len());
    assert!(stderr.starts_with('('), "{}", &stderr[..80]);
    let dropped: u64 = stderr[1..stderr.find(' ').unwrap()].parse().unwrap();
    assert!(dropped > 64 * 1024 * 1024, "{dropped}");
    registry.close().await;
}

#[tokio::test]
async fn a_reply_over_16_mib_fails_its_call_at_once_naming_the_size() {
    if node().is_none() {
        return;
    }
    // A call timeout far below the default 300 s: had the call waited for it, the result would
    // be the timeout's message, not the size.
    let (registry, conn) = connect(hostile().call_timeout(Duration::from_secs(60))).await;
    let result = call(&registry, "mcp_hostile_big", json!({})).await;
    assert!(result.is_error);
    assert_eq!(result.error_kind, Some(ToolErrorKind::Failed), "{result:?}");
    let prefix = "The MCP server `hostile` sent a reply to `mcp_hostile_big` of ";
    assert!(result.content.starts_with(prefix), "{}", result.content);
    // 17 MiB of text and the JSON-RPC envelope around it.
    let size: u64 = result.content[prefix.len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (17 * 1024 * 1024..17 * 1024 * 1024 + 200).contains(&size),
        "{size}"
    );
    assert!(
        result
            .content
            .contains("bytes, more than the 16777216 bytes (16 MiB) harnessx reads in one message"),
        "{}",
        result.content
    );
    // The connection survives: the next call is answered.
    assert!(conn.is_connected().await);
    let flood = call(&registry, "mcp_hostile_flood", json!({})).await;
    assert_eq!(flood.content, "flooded");
    registry.close().await;
}

/// Answers `meet` only when a second `meet` call is in flight at the same time ("together");
/// one left alone is answered "alone" after 20 s.
const MEETING_SERVER: &str = r#"
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
let waiting = [];
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') {
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'meeting', version: '1.0.0' } } });
  } else if (m.method === 'tools/list') {
    send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'meet',
      inputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } }] } });
  } else if (m.method === 'tools/call') {
    const answer = (id, text) => send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
    waiting.push(m.id);
    if (waiting.length === 2) {
      waiting.forEach((id) => answer(id, 'together'));
      waiting = [];
    } else {
      setTimeout(() => { if (waiting.includes(m.id)) { waiting = waiting.filter((id) => id !== m.id); answer(m.id, 'alone'); } }, 20000);
    }
  } else if (m.id !== undefined) {
    send({ jsonrpc: '2.0', id: m.id, result: {} });
  }
});
"#;

/// Read-only MCP tools of one batch are in flight at the same time, on either runtime: the
/// engine awaits an MCP call in the batch's task instead of a task of its own, and must still
/// not make one call wait for another.
async fn batch_calls_meet() {
    if node().is_none() {
        return;
    }
    let (registry, conn) =
        connect(McpServer::stdio("meeting", "node", ["-e", MEETING_SERVER])).await;
    let calls = [
        harnessx::ToolCall::json("c1", "mcp_meeting_meet", json!({})),
        harnessx::ToolCall::json("c2", "mcp_meeting_meet", json!({})),
    ];
    let results = registry.run(None).execute_batch(&calls, None).await;
    for result in &results {
        assert!(!result.is_error, "{}", result.content);
        assert_eq!(result.content, "together", "the two calls did not overlap");
    }
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_calls_of_a_batch_overlap_on_a_multi_thread_runtime() {
    batch_calls_meet().await;
}

#[tokio::test(flavor = "current_thread")]
async fn read_only_calls_of_a_batch_overlap_on_a_current_thread_runtime() {
    batch_calls_meet().await;
}
