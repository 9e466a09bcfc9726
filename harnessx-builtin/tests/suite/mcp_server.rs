//! A registry served as an MCP server (`harnessx::mcp_server`, the `harnessx-mcp-server` binary),
//! reached by harnessx's own MCP client over stdio and HTTP and by the official TypeScript SDK
//! client (installed by `.ci/install-mcp-servers.sh`).

use std::path::Path;
use std::time::Duration;

use harnessx::mcp::{McpServer, connect_mcp_server};
use harnessx::mcp_server::{McpServeError, McpToolServer};
use harnessx::{
    ApprovalDecision, PermissionLevel, PermissionManager, ReplayPolicy, ToolAnnotations, ToolCall,
    ToolOptions, ToolOutput, ToolRegistry, ToolResult, handler_fn,
};
use harnessx_builtin::catalog::BuiltinExt;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_harnessx-mcp-server");

/// The client side lets every call through, so what is checked is the server's decision.
fn client_permissions(registry: &ToolRegistry) -> PermissionManager {
    let pm = PermissionManager::new(PermissionLevel::Allow);
    for name in registry.list_tools() {
        pm.set_override(name, PermissionLevel::Allow);
    }
    pm
}

async fn call(registry: &ToolRegistry, name: &str, args: Value) -> ToolResult {
    registry
        .execute(
            &ToolCall::new("t1", name, args.to_string()),
            Some(&client_permissions(registry)),
        )
        .await
}

fn fs_options(root: &Path) -> Value {
    json!({"base_path": root, "include": ["read_file", "write_file", "list_directory"]})
}

#[tokio::test]
async fn stdio_binary_serves_bundles_to_the_harnessx_client() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello from the server\n").unwrap();
    let options = fs_options(dir.path());
    let client = ToolRegistry::new();
    let conn = connect_mcp_server(
        &client,
        McpServer::stdio(
            "built",
            BIN,
            [
                "--bundle".to_owned(),
                format!("filesystem={options}"),
                "--bundle".to_owned(),
                "planning".to_owned(),
            ],
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        conn.tool_names(),
        [
            "mcp_built_read_file",
            "mcp_built_write_file",
            "mcp_built_list_directory",
            "mcp_built_write_todos",
            "mcp_built_read_todos"
        ]
    );

    // Schemas and descriptions arrive unchanged.
    let local = ToolRegistry::new();
    local.load_builtin("filesystem", options.clone()).unwrap();
    local.load_builtin("planning", json!({})).unwrap();
    for name in local.list_tools() {
        let served = local.get_tool(&name).unwrap();
        let seen = client.get_tool(&format!("mcp_built_{name}")).unwrap();
        assert_eq!(seen.input_schema, served.input_schema, "{name}");
        assert_eq!(seen.description, served.description, "{name}");
    }

    // Annotations: every built-in carries the hints of the annotations table, so the tools that
    // only read (read_todos included) are ALLOW on the client and the others ASK.
    let hint = |n: &str| client.get_tool(n).unwrap().annotations.read_only_hint;
    assert_eq!(hint("mcp_built_read_file"), Some(true));
    assert_eq!(hint("mcp_built_list_directory"), Some(true));
    assert_eq!(hint("mcp_built_write_file"), Some(false));
    assert_eq!(hint("mcp_built_read_todos"), Some(true));
    assert_eq!(hint("mcp_built_write_todos"), Some(false));
    let write = client.get_tool("mcp_built_write_file").unwrap();
    assert_eq!(write.annotations.destructive_hint, Some(true));
    assert_eq!(write.permission, Some(PermissionLevel::Ask));
    assert_eq!(
        client.get_tool("mcp_built_read_file").unwrap().permission,
        Some(PermissionLevel::Allow)
    );

    // A read-only tool runs.
    let read = call(&client, "mcp_built_read_file", json!({"path": "a.txt"})).await;
    assert!(!read.is_error, "{}", read.content);
    assert!(
        read.content.contains("hello from the server"),
        "{}",
        read.content
    );

    // The binary grants nothing else: write_file is ASK with no one to ask, so denied.
    let denied = call(
        &client,
        "mcp_built_write_file",
        json!({"path": "b.txt", "content": "x"}),
    )
    .await;
    assert!(denied.is_error);
    assert!(
        denied.content.contains(
            "Permission denied. This server denies tools that are not read-only unless granted: restart it with `--grant write_file` to allow `write_file`"
        ),
        "{}",
        denied.content
    );
    assert!(!dir.path().join("b.txt").exists());

    // Bad arguments come back as an error result from the server's engine.
    let bad = call(&client, "mcp_built_read_file", json!({"path": 5})).await;
    assert!(bad.is_error);
    assert!(bad.content.contains("path"), "{}", bad.content);
    conn.close().await;
}

#[tokio::test]
async fn stdio_binary_grants_named_tools() {
    let dir = tempfile::tempdir().unwrap();
    let options = fs_options(dir.path());
    let client = ToolRegistry::new();
    let conn = connect_mcp_server(
        &client,
        McpServer::stdio(
            "built",
            BIN,
            [
                "--grant".to_owned(),
                "write_file".to_owned(),
                "--bundle".to_owned(),
                format!("filesystem={options}"),
            ],
        ),
    )
    .await
    .unwrap();
    let wrote = call(
        &client,
        "mcp_built_write_file",
        json!({"path": "b.txt", "content": "granted"}),
    )
    .await;
    assert!(!wrote.is_error, "{}", wrote.content);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "granted"
    );
    conn.close().await;
}

async fn bin_error(args: &[&str]) -> String {
    let out = tokio::process::Command::new(BIN)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("test set-up");
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    String::from_utf8(out.stderr).expect("test set-up")
}

#[tokio::test]
async fn the_binary_explains_bad_command_lines() {
    let e = bin_error(&[]).await;
    assert!(
        e.starts_with("harnessx-mcp-server: name at least one `--bundle` to serve\nusage: "),
        "{e}"
    );
    let e = bin_error(&["--http", "0.0.0.0:0", "--bundle", "planning"]).await;
    assert!(e.contains("`--http 0.0.0.0:0` is not a loopback address; this server listens on 127.0.0.1 or ::1 only"), "{e}");
    let e = bin_error(&["--http", "localhost"]).await;
    assert!(
        e.contains("`--http localhost` is not an address such as 127.0.0.1:8080 ("),
        "{e}"
    );
    let e = bin_error(&["--bundle", "planning={"]).await;
    assert!(
        e.contains("the options of `--bundle planning` are not valid JSON: "),
        "{e}"
    );
    let e = bin_error(&["--bundle"]).await;
    assert!(e.contains("`--bundle` needs a value"), "{e}");
    let e = bin_error(&["--frobnicate"]).await;
    assert!(e.contains("unknown argument `--frobnicate`"), "{e}");
    let out = tokio::process::Command::new(BIN)
        .args(["--http", "127.0.0.1:0", "--bundle", "planning"])
        .env("HARNESSX_MCP_API_KEYS", "short")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("test set-up");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "HARNESSX_MCP_API_KEYS holds a key of 5 characters; an API key shorter than 16 \
             characters is too easy to guess"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e = bin_error(&["--bundle", "planning", "--grant", "nope"]).await;
    assert!(
        e.contains("`--grant nope` names no served tool; the tools are: write_todos, read_todos"),
        "{e}"
    );
    let e = bin_error(&["--bundle", "no_such_bundle"]).await;
    assert!(e.contains("no_such_bundle"), "{e}");
}

/// A registry with one tool of each kind the engine treats differently.
fn sample_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let object = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required, "additionalProperties": false});
    registry
        .register_with_schema(
            "echo",
            "Echo the text back.",
            object(
                json!({"text": {"type": "string", "description": "What to echo."}}),
                json!(["text"]),
            ),
            handler_fn(|args, _| async move {
                let text = args["text"].as_str().unwrap_or_default().to_owned();
                Ok(ToolOutput::text(text.clone()).with_structured(json!({"echoed": text})))
            }),
            ToolOptions::new()
                .permission(PermissionLevel::Allow)
                .replay_policy(ReplayPolicy::Safe),
        )
        .expect("test set-up");
    registry
        .register_with_schema(
            "slow",
            "Sleep for a long time.",
            object(json!({}), json!([])),
            handler_fn(|_, _| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(ToolOutput::text("woke up"))
            }),
            ToolOptions::new().timeout_seconds(0.2),
        )
        .expect("test set-up");
    registry
        .register_with_schema(
            "forbidden",
            "Never runs.",
            object(json!({}), json!([])),
            handler_fn(|_, _| async { Ok(ToolOutput::text("ran")) }),
            ToolOptions::new()
                .permission(PermissionLevel::Deny)
                .annotations(ToolAnnotations::new().with_read_only_hint(true)),
        )
        .expect("test set-up");
    registry
        .register_with_schema(
            "launch",
            "Needs approval.",
            object(json!({}), json!([])),
            handler_fn(|_, _| async { Ok(ToolOutput::text("launched")) }),
            ToolOptions::new()
                .permission(PermissionLevel::Ask)
                .replay_policy(ReplayPolicy::Idempotent)
                .annotations(
                    ToolAnnotations::new()
                        .with_title("Launch")
                        .with_destructive_hint(false)
                        .with_open_world_hint(false),
                ),
        )
        .expect("test set-up");
    registry
}

#[tokio::test]
async fn http_server_in_process_applies_the_engine() {
    let served = sample_registry();
    let server = McpToolServer::new(served.clone(), PermissionManager::default())
        .server_info("sample", "9.9.9");
    let http = server.clone().serve_http("127.0.0.1:0").await.unwrap();
    assert!(http.url().starts_with("http://127.0.0.1:"));
    assert!(http.url().ends_with("/mcp"));
    assert_ne!(http.local_addr().port(), 0);

    let client = ToolRegistry::new();
    let conn = connect_mcp_server(&client, McpServer::http("s", http.url()))
        .await
        .unwrap();
    assert_eq!(
        conn.tool_names(),
        [
            "mcp_s_echo",
            "mcp_s_slow",
            "mcp_s_forbidden",
            "mcp_s_launch"
        ]
    );
    for name in served.list_tools() {
        assert_eq!(
            client
                .get_tool(&format!("mcp_s_{name}"))
                .unwrap()
                .input_schema,
            served.get_tool(&name).unwrap().input_schema
        );
    }

    // The readOnlyHint rule: ALLOW + Safe is read-only; DENY never is, whatever it claims.
    let a = |n: &str| client.get_tool(n).unwrap().annotations;
    assert_eq!(a("mcp_s_echo").read_only_hint, Some(true));
    assert_eq!(a("mcp_s_slow").read_only_hint, Some(false));
    assert_eq!(a("mcp_s_forbidden").read_only_hint, Some(false));
    let launch = a("mcp_s_launch");
    assert_eq!(launch.read_only_hint, Some(false));
    assert_eq!(launch.title.as_deref(), Some("Launch"));
    assert_eq!(launch.destructive_hint, Some(false));
    assert_eq!(launch.idempotent_hint, Some(true));
    assert_eq!(launch.open_world_hint, Some(false));
    // The same list the server reports for itself.
    let listed = server.tools();
    assert_eq!(listed[0]["annotations"], json!({"readOnlyHint": true}));
    assert_eq!(
        listed[1]["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false})
    );

    let ok = call(&client, "mcp_s_echo", json!({"text": "hi"})).await;
    assert!(!ok.is_error);
    assert_eq!(ok.content, "hi");
    assert_eq!(ok.structured, Some(json!({"echoed": "hi"})));

    let timed_out = call(&client, "mcp_s_slow", json!({})).await;
    assert!(timed_out.is_error);
    assert!(
        timed_out
            .content
            .contains("The tool `slow` timed out after"),
        "{}",
        timed_out.content
    );

    let denied = call(&client, "mcp_s_forbidden", json!({})).await;
    assert!(denied.is_error);
    assert!(
        denied.content.contains("Permission denied"),
        "{}",
        denied.content
    );
    // ASK with no approval callback on the server: denied, as the engine does.
    let asked = call(&client, "mcp_s_launch", json!({})).await;
    assert!(asked.is_error);
    assert!(
        asked.content.contains("Permission denied"),
        "{}",
        asked.content
    );

    let bad = call(&client, "mcp_s_echo", json!({"text": 3})).await;
    assert!(bad.is_error);
    assert!(bad.content.contains("text"), "{}", bad.content);

    // A tool registered while serving is listed on the next tools/list.
    served.load_builtin("planning", json!({})).unwrap();
    let names = conn.refresh_tools().await.unwrap();
    assert!(names.contains(&"mcp_s_read_todos".to_owned()), "{names:?}");
    conn.close().await;
    http.shutdown().await;
}

#[tokio::test]
async fn the_owners_approval_callback_answers_ask() {
    let served = sample_registry();
    let approvals = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = approvals.clone();
    let pm = PermissionManager::default().with_approval(move |req| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let decision = if req.tool_name == "launch" {
            ApprovalDecision::AllowOnce
        } else {
            ApprovalDecision::Deny
        };
        async move { decision }
    });
    let http = McpToolServer::new(served, pm)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let client = ToolRegistry::new();
    let conn = connect_mcp_server(&client, McpServer::http("s", http.url()))
        .await
        .unwrap();
    let launched = call(&client, "mcp_s_launch", json!({})).await;
    assert!(!launched.is_error, "{}", launched.content);
    assert_eq!(launched.content, "launched");
    assert_eq!(approvals.load(std::sync::atomic::Ordering::SeqCst), 1);
    conn.close().await;
    http.shutdown().await;
}

#[tokio::test]
async fn serve_errors_name_the_problem() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let server = McpToolServer::new(ToolRegistry::new(), PermissionManager::default());
    let err = server.clone().serve_http(&address).await.unwrap_err();
    assert!(matches!(err, McpServeError::Bind { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "could not listen for MCP over HTTP on `{address}`; choose a free port, or port 0 for any free one"
        )
    );

    // A peer that closes without the handshake.
    let (ours, theirs) = tokio::io::duplex(1024);
    drop(theirs);
    let (read, write) = tokio::io::split(ours);
    let err = server
        .serve_io(read, write, "a test pipe")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the MCP client on a test pipe did not complete the handshake: "),
        "{err}"
    );
}

/// Whether an external client a test needs is `present`: when it is not, a failure under `CI`
/// (which installs it) and otherwise a skip, saying `missing`.
pub(super) fn available(present: bool, missing: &str) -> bool {
    if !present {
        assert!(std::env::var_os("CI").is_none(), "{missing}");
        eprintln!("skipping: {missing}");
    }
    present
}

async fn sdk_client(modules: &Path, tool: &str, args: Value, transport: &[String]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_sdk_client.cjs");
    let mut command = tokio::process::Command::new("node");
    command
        .arg(script)
        .arg(modules)
        .arg(tool)
        .arg(args.to_string())
        .args(transport)
        .env_remove("CI");
    client_output(command).await
}

/// Runs an SDK client script (at most a minute) and reads the JSON it prints.
pub(super) async fn client_output(mut command: tokio::process::Command) -> Value {
    let out = tokio::time::timeout(Duration::from_secs(60), command.kill_on_drop(true).output())
        .await
        .expect("the SDK client finished")
        .expect("test set-up");
    assert!(
        out.status.success(),
        "SDK client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("test set-up")
}

#[tokio::test]
async fn the_typescript_sdk_client_lists_and_calls_over_http() {
    let Some(modules) = harnessx_testkit::npm::node_modules() else {
        return;
    };
    let served = sample_registry();
    let http = McpToolServer::new(served.clone(), PermissionManager::default())
        .server_info("sample", "9.9.9")
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let out = sdk_client(
        &modules,
        "echo",
        json!({"text": "from node"}),
        &["http".into(), http.url()],
    )
    .await;
    assert_eq!(out["server"]["name"], "sample");
    assert_eq!(out["server"]["version"], "9.9.9");
    let tools = out["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "slow", "forbidden", "launch"]);
    assert_eq!(
        tools[0]["inputSchema"],
        served.get_tool("echo").unwrap().input_schema
    );
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
    assert_eq!(
        out["result"]["content"],
        json!([{"type": "text", "text": "from node"}])
    );
    assert_eq!(
        out["result"]["structuredContent"],
        json!({"echoed": "from node"})
    );
    assert_ne!(out["result"]["isError"], true);

    let denied = sdk_client(
        &modules,
        "forbidden",
        json!({}),
        &["http".into(), http.url()],
    )
    .await;
    assert_eq!(denied["result"]["isError"], true);
    assert_eq!(denied["result"]["content"][0]["text"], "Permission denied");
    http.shutdown().await;
}

#[tokio::test]
async fn the_typescript_sdk_client_lists_and_calls_over_stdio() {
    let Some(modules) = harnessx_testkit::npm::node_modules() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "node reads this").unwrap();
    let options = fs_options(dir.path());
    let out = sdk_client(
        &modules,
        "read_file",
        json!({"path": "a.txt"}),
        &[
            "stdio".into(),
            BIN.into(),
            "--bundle".into(),
            format!("filesystem={options}"),
        ],
    )
    .await;
    let names: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file", "write_file", "list_directory"]);
    assert_eq!(out["server"]["name"], "harnessx-builtin");
    let text = out["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("node reads this"), "{text}");
}

/// What the server answers itself: a line that is not JSON gets `-32700` with a null id, a
/// `tools/call` whose arguments are not an object gets `-32602` with its id — over stdio and
/// over HTTP — and the session goes on.
#[tokio::test]
async fn malformed_messages_get_json_rpc_errors_over_stdio_and_http() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let server = McpToolServer::new(sample_registry(), PermissionManager::default());

    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(theirs);
    let serving = tokio::spawn(server.clone().serve_io(read, write, "a test pipe"));
    let (client_read, mut client_write) = tokio::io::split(ours);
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let mut send = async |line: &str| {
        client_write.write_all(line.as_bytes()).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
    };
    send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#).await;
    let init: Value = serde_json::from_str(
        &tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("no line in 10 s")
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(init["id"], 1, "{init}");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    send("this is not json").await;
    let parse: Value = serde_json::from_str(
        &tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("no line in 10 s")
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (parse["id"].clone(), parse["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{parse}"
    );
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":"oops"}}"#).await;
    let invalid: Value = serde_json::from_str(
        &tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("no line in 10 s")
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (invalid["id"].clone(), invalid["error"]["code"].clone()),
        (json!(2), json!(-32602)),
        "{invalid}"
    );
    assert_eq!(
        invalid["error"]["message"],
        "Invalid params: `params.arguments` is a string, not an object of arguments"
    );
    // The session goes on.
    send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#).await;
    let listed: Value = serde_json::from_str(
        &tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("no line in 10 s")
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(listed["id"], 3, "{listed}");
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    client_write.shutdown().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve_io did not end")
        .unwrap()
        .unwrap();

    let http = server.serve_http("127.0.0.1:0").await.unwrap();
    let client = reqwest::Client::new();
    let post = |body: &'static str| {
        client
            .post(http.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    let r = post("{not json").await.unwrap();
    assert_eq!(r.status(), 400);
    let parse: Value = r.json().await.unwrap();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);
    let r = post(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{}}}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let invalid: Value = r.json().await.unwrap();
    assert_eq!(
        (invalid["id"].clone(), invalid["error"]["code"].clone()),
        (json!(9), json!(-32602)),
        "{invalid}"
    );
}
