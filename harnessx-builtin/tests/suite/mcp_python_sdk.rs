//! `harnessx-mcp-server` against the official Python MCP SDK's client (the `mcp` package from
//! PyPI, installed by `.ci/install-python-mcp.sh`), over stdio and streamable HTTP.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const BIN: &str = env!("CARGO_BIN_EXE_harnessx-mcp-server");

/// The venv's Python with the SDK, or `None` (a failure under `CI`) when it is missing.
fn sdk_python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("test set-up");
    let python = root.join(".ci/python-mcp/venv/bin/python");
    let sdk_ok = std::process::Command::new(&python)
        .args(["-c", "import mcp.client.streamable_http"])
        .output()
        .is_ok_and(|o| o.status.success());
    super::mcp_server::available(
        sdk_ok,
        "Python or its `mcp` package is missing; run `bash .ci/install-python-mcp.sh`",
    )
    .then_some(python)
}

async fn sdk_client(python: &Path, tool: &str, args: Value, transport: &[String]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_python_client.py");
    let mut command = tokio::process::Command::new(python);
    command
        .arg(script)
        .arg(tool)
        .arg(args.to_string())
        .args(transport);
    super::mcp_server::client_output(command).await
}

fn annotations(out: &Value, tool: &str) -> Value {
    out["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == tool))
        .map(|t| t["annotations"].clone())
        .unwrap_or_else(|| panic!("{tool} is not listed: {out}"))
}

#[tokio::test]
async fn the_python_sdk_client_lists_and_calls_over_stdio() {
    let Some(python) = sdk_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello from python").unwrap();
    let fs_options = json!({"base_path": dir.path()}).to_string();
    let command = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "stdio".to_owned(),
            BIN.to_owned(),
            "--bundle".to_owned(),
            format!("filesystem={fs_options}"),
            "--bundle".to_owned(),
            "planning".to_owned(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };

    let out = sdk_client(
        &python,
        "read_file",
        json!({"path": "a.txt"}),
        &command(&[]),
    )
    .await;
    assert_eq!(out["server"]["name"], "harnessx-builtin");
    assert_eq!(out["result"]["isError"], false, "{out}");
    assert!(
        out["result"]["text"]
            .as_str()
            .unwrap()
            .contains("hello from python")
    );
    assert_eq!(
        annotations(&out, "read_todos"),
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(
        annotations(&out, "write_file"),
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false})
    );

    // A tool that writes is denied, and the denial says how to grant it.
    let args = json!({"path": "b.txt", "content": "x"});
    let out = sdk_client(&python, "write_file", args.clone(), &command(&[])).await;
    assert_eq!(out["result"]["isError"], true);
    assert!(
        out["result"]["text"]
            .as_str()
            .unwrap()
            .contains("`--grant write_file`"),
        "{out}"
    );
    assert!(!dir.path().join("b.txt").exists());
    let out = sdk_client(
        &python,
        "write_file",
        args,
        &command(&["--grant", "write_file"]),
    )
    .await;
    assert_eq!(out["result"]["isError"], false, "{out}");
    assert!(dir.path().join("b.txt").exists());
}

#[tokio::test]
async fn the_python_sdk_client_lists_calls_and_ends_its_session_over_http() {
    let Some(python) = sdk_python() else { return };
    let mut server = tokio::process::Command::new(BIN)
        .args([
            "--http",
            "127.0.0.1:0",
            "--bundle",
            "memory",
            "--bundle",
            "web",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server printed its URL")
        .unwrap()
        .expect("the server printed its URL");

    let out = sdk_client(&python, "list_memories", json!({}), &["http".into(), url]).await;
    assert_eq!(out["result"]["isError"], false, "{out}");
    for tool in ["list_memories", "search_memories"] {
        assert_eq!(
            annotations(&out, tool),
            json!({"readOnlyHint": true, "openWorldHint": false}),
            "{tool}"
        );
    }
    assert_eq!(
        annotations(&out, "fetch_url"),
        json!({"readOnlyHint": true, "openWorldHint": true})
    );
    // The SDK ends the session with a DELETE and logs a warning unless it is answered 200 or 204.
    assert_eq!(out["warnings"], json!([]), "{out}");
    server.kill().await.unwrap();
}
