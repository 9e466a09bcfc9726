//! `harnessx-mcp-server [--http 127.0.0.1:PORT] [--grant TOOL]... --bundle NAME[=OPTIONS]...`
//!
//! Serves built-in bundles as an MCP server, over stdio (the default) or streamable HTTP on a
//! loopback address. `--bundle` takes a catalog name (`filesystem`, `bash`, `web`, `memory`,
//! `planning`, `all`, or one tool) with the helper's options as JSON after `=`. Calls are
//! checked like an agent's connected to an MCP server: tools served with `readOnlyHint: true`
//! are ALLOW, every other tool is ASK and so denied (there is no one to ask) unless granted with
//! `--grant TOOL`. With `--http`, the endpoint URL is printed on stdout, and when
//! `HARNESSX_MCP_API_KEYS` holds keys (comma-separated, each at least 16 characters) every request
//! must carry one as `Authorization: Bearer <key>`; without it the HTTP transport has no
//! authentication, so keep it on a loopback address.
//! Logs go to stderr.

use std::net::SocketAddr;

use harnessx::mcp_server::McpToolServer;
use harnessx::{PermissionLevel, PermissionManager, ToolRegistry};
use harnessx_builtin::catalog::BuiltinExt;

const USAGE: &str = "usage: harnessx-mcp-server [--http 127.0.0.1:PORT] [--grant TOOL]... --bundle NAME[=JSON_OPTIONS]...";

struct Args {
    http: Option<String>,
    bundles: Vec<(String, serde_json::Value)>,
    grants: Vec<String>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        http: None,
        bundles: Vec::new(),
        grants: Vec::new(),
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .ok_or_else(|| format!("`{flag}` needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--http" => {
                let address = value("--http")?;
                let ip = address.parse::<SocketAddr>().map_err(|e| {
                    format!("`--http {address}` is not an address such as 127.0.0.1:8080 ({e})")
                })?;
                if !ip.ip().is_loopback() {
                    return Err(format!(
                        "`--http {address}` is not a loopback address; this server listens on 127.0.0.1 or ::1 only"
                    ));
                }
                parsed.http = Some(address);
            }
            "--grant" => parsed.grants.push(value("--grant")?),
            "--bundle" => {
                let spec = value("--bundle")?;
                let (name, options) = match spec.split_once('=') {
                    Some((name, json)) => (
                        name.to_owned(),
                        serde_json::from_str(json).map_err(|e| {
                            format!("the options of `--bundle {name}` are not valid JSON: {e}")
                        })?,
                    ),
                    None => (spec, serde_json::json!({})),
                };
                parsed.bundles.push((name, options));
            }
            "--help" | "-h" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    if parsed.bundles.is_empty() {
        return Err(format!("name at least one `--bundle` to serve\n{USAGE}"));
    }
    Ok(parsed)
}

async fn run() -> Result<(), String> {
    let args = parse(std::env::args().skip(1))?;
    let registry = ToolRegistry::new();
    for (name, options) in &args.bundles {
        registry
            .load_builtin(name, options.clone())
            .map_err(|e| e.to_string())?;
    }
    let permissions = PermissionManager::new(PermissionLevel::Ask);
    let listed = McpToolServer::new(registry.clone(), permissions.clone()).tools();
    for tool in &listed {
        if tool["annotations"]["readOnlyHint"] == serde_json::json!(true)
            && let Some(name) = tool["name"].as_str()
        {
            permissions.set_override(name, PermissionLevel::Allow);
        }
    }
    for tool in &args.grants {
        if !registry.contains(tool) {
            return Err(format!(
                "`--grant {tool}` names no served tool; the tools are: {}",
                registry.list_tools().join(", ")
            ));
        }
        permissions.grant_session(tool.clone());
    }
    let keys: Vec<String> = std::env::var("HARNESSX_MCP_API_KEYS")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(short) = keys.iter().find(|k| k.chars().count() < 16) {
        return Err(format!(
            "HARNESSX_MCP_API_KEYS holds a key of {} characters; an API key shorter than 16 \
             characters is too easy to guess, so use a long random string",
            short.chars().count()
        ));
    }
    let server = McpToolServer::new(registry.clone(), permissions)
        .server_info("harnessx-builtin", env!("CARGO_PKG_VERSION"))
        .require_api_keys(keys)
        .denied_advice(|tool| {
            format!(
                "This server denies tools that are not read-only unless granted: restart it with `--grant {tool}` to allow `{tool}`"
            )
        });
    let outcome = match &args.http {
        Some(address) => {
            let http = server
                .serve_http(address)
                .await
                .map_err(|e| e.to_string())?;
            println!("{}", http.url());
            let _ = tokio::signal::ctrl_c().await;
            http.shutdown().await;
            Ok(())
        }
        None => server.serve_stdio().await.map_err(|e| e.to_string()),
    };
    registry.close().await;
    outcome
}

#[tokio::main]
async fn main() {
    // Logs go to stderr (stdout carries the protocol over stdio), filtered by `RUST_LOG`.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    if let Err(message) = run().await {
        eprintln!("harnessx-mcp-server: {message}");
        std::process::exit(2);
    }
}
