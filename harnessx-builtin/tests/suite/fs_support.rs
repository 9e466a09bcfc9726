//! Helpers for the filesystem tests: a workspace with the bundle registered, and calls.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use harnessx::{BoxFuture, Sandbox, SandboxError, ToolCall, ToolRegistry, ToolResult};
use harnessx_builtin::{FilesystemOptions, register_filesystem_tools};
use serde_json::Value;
use tempfile::TempDir;

/// A temporary directory holding `root/` (the workspace) and `outside/` (must never change).
pub struct Workspace {
    pub dir: TempDir,
    pub registry: ToolRegistry,
}

impl Workspace {
    /// The whole bundle registered with `base_path` = `root/`.
    pub fn new() -> Self {
        Self::with(FilesystemOptions::default())
    }

    /// The bundle registered with `options` plus `base_path` = `root/`.
    pub fn with(options: FilesystemOptions) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret.txt"), "OUTSIDE SECRET\n").unwrap();
        let registry = ToolRegistry::new();
        register_filesystem_tools(
            &registry,
            FilesystemOptions {
                base_path: Some(dir.path().join("root")),
                output_dir: Some(dir.path().join("downloads")),
                ..options
            },
        )
        .unwrap();
        Workspace { dir, registry }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    pub fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    /// Writes a file below the root (creating parents).
    pub fn put(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap()
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolResult {
        call(&self.registry, tool, args).await
    }

    /// Every file below `outside/` with its content, to prove nothing there changed.
    pub fn outside_snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        snapshot(&self.outside())
    }
}

pub async fn call(registry: &ToolRegistry, tool: &str, args: Value) -> ToolResult {
    registry
        .execute(&ToolCall::json("call-1", tool, args), None)
        .await
}

/// Calls `tool` on a thread of its own and fails the test unless it answers within ten seconds:
/// a call blocked for good (opening a FIFO, say) would otherwise hang the whole test run.
pub fn call_promptly(registry: &ToolRegistry, tool: &str, args: Value) -> ToolResult {
    let (tx, rx) = std::sync::mpsc::channel();
    let (registry, name) = (registry.clone(), tool.to_owned());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(runtime.block_on(call(&registry, &name, args)));
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("`{tool}` did not return within 10 seconds"))
}

/// Makes a FIFO at `path` with `mkfifo`.
pub fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else {
                out.push((
                    entry.path(),
                    std::fs::read(entry.path()).unwrap_or_default(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// Asserts an error result whose text contains every fragment.
#[track_caller]
pub fn assert_error(result: &ToolResult, fragments: &[&str]) {
    assert!(
        result.is_error,
        "expected an error, got: {}",
        result.content
    );
    for f in fragments {
        assert!(
            result.content.contains(f),
            "error text lacks {f:?}: {}",
            result.content
        );
    }
}

/// Asserts a successful result and returns its text.
#[track_caller]
pub fn ok(result: &ToolResult) -> &str {
    assert!(!result.is_error, "unexpected error: {}", result.content);
    &result.content
}

/// A sandbox whose filesystem is a host directory (commands are not needed by the file tools).
pub struct DirSandbox {
    pub root: PathBuf,
    pub mount_point: Option<PathBuf>,
}

impl Sandbox for DirSandbox {
    fn name(&self) -> &str {
        "dir"
    }
    fn filesystem_root(&self) -> Option<&Path> {
        Some(&self.root)
    }
    fn filesystem_mount_point(&self) -> Option<&Path> {
        self.mount_point.as_deref()
    }
    fn start(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async { Ok(()) })
    }
    fn command(&self, script: &str) -> Result<tokio::process::Command, SandboxError> {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c").arg(script).current_dir(&self.root);
        Ok(cmd)
    }
}
