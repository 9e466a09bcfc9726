//! `delete`: files, empty and non-empty directories, links, and never the root.

use serde_json::json;

use super::fs_support::{DirSandbox, Workspace, assert_error, call, ok};

#[tokio::test]
async fn a_non_empty_directory_needs_recursive() {
    let ws = Workspace::new();
    ws.put("tree/a.txt", "a");
    ws.put("tree/sub/b.txt", "b");
    std::fs::create_dir(ws.root().join("empty")).unwrap();
    let r = ws.call("delete", json!({"path": "tree"})).await;
    assert_error(
        &r,
        &[
            "`tree` is a directory that is not empty (2 entries). Pass `recursive: true` to delete it and everything in it.",
        ],
    );
    assert!(ws.root().join("tree/sub/b.txt").exists());
    let r = ws
        .call("delete", json!({"path": "tree", "recursive": true}))
        .await;
    assert_eq!(ok(&r), "Deleted the directory `tree` and everything in it.");
    assert!(!ws.root().join("tree").exists());
    let r = ws.call("delete", json!({"path": "empty"})).await;
    assert_eq!(ok(&r), "Deleted the empty directory `empty`.");
    ws.put("f.txt", "f");
    let r = ws.call("delete", json!({"path": "f.txt"})).await;
    assert_eq!(ok(&r), "Deleted the file `f.txt`.");
    let r = ws.call("delete", json!({"path": "f.txt"})).await;
    assert_error(&r, &["`f.txt` does not exist."]);
}

#[tokio::test]
async fn the_root_is_never_removed() {
    let ws = Workspace::new();
    ws.put("keep.txt", "k");
    let root = ws.root();
    let root_abs = root.to_str().unwrap().to_owned();
    let root_slash = format!("{root_abs}/");
    for path in ["", ".", "/", "./", root_abs.as_str(), root_slash.as_str()] {
        let r = ws
            .call("delete", json!({"path": path, "recursive": true}))
            .await;
        assert_error(
            &r,
            &[
                "is the root directory, which delete never removes. Delete the files or directories inside it one by one.",
            ],
        );
    }
    assert!(ws.root().join("keep.txt").exists());
}

#[tokio::test]
async fn a_symlink_is_removed_as_a_link() {
    let ws = Workspace::new();
    ws.put("target.txt", "still here");
    std::os::unix::fs::symlink("target.txt", ws.root().join("link")).unwrap();
    let r = ws.call("delete", json!({"path": "link"})).await;
    assert_eq!(
        ok(&r),
        "Deleted the symbolic link `link` (its target was not touched)."
    );
    assert_eq!(ws.read("target.txt"), "still here");
}

#[tokio::test]
async fn host_mode_never_removes_dot_or_slash() {
    let registry = harnessx::ToolRegistry::new();
    harnessx_builtin::register_filesystem_tools(&registry, Default::default()).unwrap();
    for path in ["", ".", "/"] {
        let r = super::fs_support::call(
            &registry,
            "delete",
            json!({"path": path, "recursive": true}),
        )
        .await;
        assert_error(&r, &["is the root directory, which delete never removes"]);
    }
}

/// `x/x/…/x/leaf.txt`, `depth` directories deep.
fn deep_path(depth: usize) -> String {
    format!("{}leaf.txt", "x/".repeat(depth))
}

#[tokio::test]
async fn a_tree_as_deep_as_a_write_can_make_is_deleted_without_exhausting_the_stack() {
    let ws = Workspace::new();
    let path = deep_path(5_000);
    let r = ws
        .call("write_file", json!({"path": path, "content": "leaf\n"}))
        .await;
    assert!(ok(&r).starts_with("Created `x/x/x/"), "{}", r.content);
    ws.put("x-sibling.txt", "kept");
    // Searches of the tree answer too (the walker stops where paths get too long).
    let r = ws.call("glob", json!({"pattern": "*.txt"})).await;
    assert!(ok(&r).contains("x-sibling.txt"), "{}", r.content);
    let r = ws.call("grep", json!({"pattern": "kept"})).await;
    assert!(ok(&r).contains("x-sibling.txt:1: kept"), "{}", r.content);
    let r = ws
        .call("delete", json!({"path": "x", "recursive": true}))
        .await;
    assert_eq!(ok(&r), "Deleted the directory `x` and everything in it.");
    assert!(!ws.root().join("x").exists());
    assert_eq!(ws.read("x-sibling.txt"), "kept");
    assert_eq!(ws.outside_snapshot().len(), 1, "nothing outside changed");
}

#[tokio::test]
async fn a_deep_tree_inside_a_sandbox_that_owns_its_filesystem_is_deleted_too() {
    let sandbox_root = tempfile::tempdir().unwrap();
    let registry = harnessx::ToolRegistry::new();
    registry.set_sandbox(Some(std::sync::Arc::new(DirSandbox {
        root: sandbox_root.path().to_owned(),
        mount_point: Some("/workspace".into()),
    })));
    harnessx_builtin::register_filesystem_tools(&registry, Default::default()).unwrap();
    let path = format!("/workspace/{}", deep_path(5_000));
    let r = call(
        &registry,
        "write_file",
        json!({"path": path, "content": "leaf\n"}),
    )
    .await;
    ok(&r);
    let r = call(
        &registry,
        "delete",
        json!({"path": "/workspace/x", "recursive": true}),
    )
    .await;
    assert_eq!(ok(&r), "Deleted the directory `x` and everything in it.");
    assert!(!sandbox_root.path().join("x").exists());
}
