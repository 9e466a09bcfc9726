//! The npm packages the MCP tests and benchmarks run: the official TypeScript SDK and the
//! reference servers, installed from the npm registry by `.ci/install-mcp-servers.sh` into
//! `.ci/mcp-servers/node_modules`.
//!
//! Each finder returns `None` when `node` or the package is missing, printing why, so the test
//! can skip; with `CI` set, where the script installed them, it panics instead.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the testkit sits in the workspace")
        .to_path_buf()
}

/// `.ci/mcp-servers/node_modules`, where the install script puts the packages.
fn modules_dir() -> PathBuf {
    workspace_root().join(".ci/mcp-servers/node_modules")
}

fn missing(what: &str) -> Option<PathBuf> {
    let message = format!(
        "{what} is missing; run `bash .ci/install-mcp-servers.sh` (needs node and npm) to install \
         the MCP SDK and reference servers"
    );
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("skipping: {message}");
    None
}

/// `node`, found on `PATH`.
pub fn node() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("node"))
            .find(|p| p.is_file())
    });
    found.or_else(|| missing("`node`"))
}

/// The `node_modules` folder holding the MCP SDK (`@modelcontextprotocol/sdk`), with `node`
/// available: for a test's own server or client script, run with `NODE_PATH` set to it.
pub fn node_modules() -> Option<PathBuf> {
    node()?;
    let dir = modules_dir();
    let sdk = dir.join("@modelcontextprotocol/sdk/package.json");
    if sdk.is_file() {
        Some(dir)
    } else {
        missing(&format!("the MCP SDK ({})", sdk.display()))
    }
}

/// The entry script of the reference server `@modelcontextprotocol/<package>` (such as
/// `server-everything` or `server-memory`), with `node` available.
///
/// ```no_run
/// let Some(script) = harnessx_testkit::npm::reference_server("server-memory") else { return };
/// assert!(script.ends_with("server-memory/dist/index.js"));
/// ```
pub fn reference_server(package: &str) -> Option<PathBuf> {
    node()?;
    let script = modules_dir()
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if script.is_file() {
        Some(script)
    } else {
        missing(&format!("the reference server {}", script.display()))
    }
}
