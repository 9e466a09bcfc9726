//! Helpers for the bash and sandbox tests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use harnessx::{ToolCall, ToolRegistry, ToolResult};
use harnessx_builtin::bash::{BashOptions, register_bash_tools};
use serde_json::{Value, json};

/// Options with short grace and drain windows and a 20 s tool limit, so a broken test fails
/// quickly instead of hanging for five minutes.
pub fn fast_options() -> BashOptions {
    BashOptions {
        timeout_seconds: 20.0,
        kill_grace_seconds: 0.3,
        drain_seconds: 0.2,
        ..BashOptions::default()
    }
}

/// A registry with `run_bash` registered with `options`.
pub fn registry_with(options: BashOptions) -> ToolRegistry {
    let registry = ToolRegistry::new();
    register_bash_tools(&registry, options).expect("run_bash registers");
    registry
}

/// Calls `run_bash` through the registry (schema, permission and registered timeout applied).
pub async fn run(registry: &ToolRegistry, command: &str, timeout: Option<f64>) -> ToolResult {
    let mut args = json!({ "command": command });
    if let Some(t) = timeout {
        args["timeout"] = json!(t);
    }
    registry
        .execute(&ToolCall::json("call-1", "run_bash", args), None)
        .await
}

/// A field of the structured content.
pub fn field<'a>(result: &'a ToolResult, name: &str) -> &'a Value {
    result
        .structured
        .as_ref()
        .and_then(|s| s.get(name))
        .unwrap_or(&Value::Null)
}

/// A fresh directory for one test.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("bash-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Reads a pid a command wrote to `file`.
pub fn read_pid(file: &Path) -> i32 {
    let text = std::fs::read_to_string(file).expect("the command wrote its pid");
    text.trim().parse().expect("a pid")
}

/// Whether the process is gone (no such process, or a zombie nobody reaped yet).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits up to `within` for the process to be gone.
pub async fn wait_gone(pid: i32, within: Duration) -> bool {
    let end = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < end {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    process_gone(pid)
}

/// Whether bubblewrap can run sandboxes here: `bwrap` is on PATH and a trivial command runs in
/// a new sandbox. When the `CI` variable is set, anything less fails the test; otherwise the test
/// is skipped with the reason printed.
pub async fn bwrap_available() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("bwrap").is_file()));
    let problem = if found {
        let sandbox = harnessx_builtin::BubblewrapSandbox::temporary().expect("a temporary root");
        harnessx::Sandbox::start(&sandbox)
            .await
            .err()
            .map(|e| e.to_string())
    } else {
        Some("bubblewrap (`bwrap`) is not installed: `apt-get install -y bubblewrap`".to_owned())
    };
    let Some(problem) = problem else {
        return true;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "bubblewrap sandboxes are required when CI is set: {problem}"
    );
    eprintln!("skipping: {problem}");
    false
}

/// A name no other process has: commands start `sleep` under it (`exec -a "$HXM"`).
pub fn marker(test: &str) -> String {
    format!("hxmark-{test}-{}", std::process::id())
}

/// The line that sets `HXM` to `marker` in a script without writing the marker itself, so the
/// shell running the script does not match it.
pub fn export_marker(marker: &str) -> String {
    let rest = marker.strip_prefix("hxmark").expect("a marker");
    format!("export HXM=hxmark\"{rest}\"\n")
}

/// Live processes whose command line holds `marker`.
pub fn marked(marker: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
                && !process_gone(*pid)
        })
        .collect()
}

/// Kills what a test left behind, so a failing test does not leak sleepers.
pub fn kill_marked(marker: &str) {
    for pid in marked(marker) {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}
