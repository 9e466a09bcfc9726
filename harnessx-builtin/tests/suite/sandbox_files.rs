//! The file tools inside a sandbox that owns its filesystem: they operate in the sandbox's root
//! (not the host, whatever `base_path` says), see what its commands write, and take 300 s.

use std::sync::Arc;
use std::time::Duration;

use harnessx::{ToolCall, ToolRegistry};
use harnessx_builtin::{
    BubblewrapSandbox, FilesystemOptions, apply_sandbox_limits, register_filesystem_tools,
};
use serde_json::json;

use super::bash_support::{bwrap_available, fast_options, registry_with, run, scratch_dir};

async fn call(
    registry: &ToolRegistry,
    name: &str,
    args: serde_json::Value,
) -> harnessx::ToolResult {
    registry
        .execute(&ToolCall::json("c", name, args), None)
        .await
}

#[tokio::test]
async fn file_tools_work_inside_the_bubblewrap_root() {
    if !bwrap_available().await {
        return;
    }
    let root = scratch_dir("bwrap-files-root");
    let host_elsewhere = scratch_dir("bwrap-files-host");
    std::fs::write(host_elsewhere.join("host.txt"), "host only").unwrap();
    let registry = registry_with(fast_options());
    registry.set_sandbox(Some(Arc::new(BubblewrapSandbox::new(&root).unwrap())));
    // base_path points at the host directory; inside a filesystem-owning sandbox it does not apply.
    register_filesystem_tools(
        &registry,
        FilesystemOptions {
            base_path: Some(host_elsewhere.clone()),
            ..FilesystemOptions::default()
        },
    )
    .unwrap();
    for name in harnessx_builtin::FILESYSTEM_TOOLS {
        assert_eq!(
            registry.get_tool(name).unwrap().timeout,
            Some(Duration::from_secs(300)),
            "{name} takes the sandbox file-tool limit"
        );
    }

    // A command writes in the sandbox; read_file sees it by relative and by sandbox path.
    let made = run(&registry, "echo made inside > /workspace/inside.txt", None).await;
    assert!(!made.is_error, "{}", made.content);
    assert!(root.join("inside.txt").is_file());
    for path in ["inside.txt", "/workspace/inside.txt"] {
        let read = call(&registry, "read_file", json!({"path": path})).await;
        assert!(
            read.content.contains("made inside"),
            "{path}: {}",
            read.content
        );
    }

    // write_file lands in the sandbox root, and the sandbox's commands see it.
    let wrote = call(
        &registry,
        "write_file",
        json!({"path": "from_tool.txt", "content": "written by a tool\n"}),
    )
    .await;
    assert!(!wrote.is_error, "{}", wrote.content);
    let seen = run(&registry, "cat /workspace/from_tool.txt", None).await;
    assert!(
        seen.content.contains("written by a tool"),
        "{}",
        seen.content
    );
    assert!(!host_elsewhere.join("from_tool.txt").exists());

    // The host directory named by base_path is not what the tools read.
    let host = call(&registry, "read_file", json!({"path": "host.txt"})).await;
    assert!(host.is_error);
    assert!(!host.content.contains("host only"), "{}", host.content);
}

#[tokio::test]
async fn binding_a_sandbox_later_applies_the_file_tool_limit() {
    if !bwrap_available().await {
        return;
    }
    let root = scratch_dir("bwrap-files-late");
    let registry = ToolRegistry::new();
    register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap();
    assert_eq!(registry.get_tool("read_file").unwrap().timeout, None);
    registry.set_sandbox(Some(Arc::new(BubblewrapSandbox::new(&root).unwrap())));
    apply_sandbox_limits(&registry);
    assert_eq!(
        registry.get_tool("read_file").unwrap().timeout,
        Some(Duration::from_secs(300))
    );
    assert_eq!(
        registry.get_tool("write_file").unwrap().timeout,
        Some(Duration::from_secs(300))
    );
    assert!(!registry.get_tool("write_file").unwrap().concurrent);
}
