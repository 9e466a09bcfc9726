//! Adversarial containment: no operation with `base_path` reads or writes outside the root.

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use super::fs_support::{Workspace, assert_error, ok};

#[tokio::test]
async fn dot_dot_chains_are_refused() {
    let ws = Workspace::new();
    ws.put("a/b/file.txt", "inside\n");
    let before = ws.outside_snapshot();
    for path in [
        "../outside/secret.txt",
        "a/../../outside/secret.txt",
        "a/b/../../../../../../etc/passwd",
        "./../outside/secret.txt",
        "a/b/..",
    ] {
        let r = ws.call("read_file", json!({"path": path})).await;
        assert_error(&r, &[&format!("`{path}` contains `..`"), "without `..`"]);
        let r = ws
            .call(
                "write_file",
                json!({"path": path, "content": "x", "overwrite": true}),
            )
            .await;
        assert_error(&r, &["contains `..`"]);
        let r = ws
            .call("delete", json!({"path": path, "recursive": true}))
            .await;
        assert_error(&r, &["contains `..`"]);
        let r = ws.call("list_directory", json!({"path": path})).await;
        assert_error(&r, &["contains `..`"]);
        let r = ws
            .call("grep", json!({"pattern": "SECRET", "path": path}))
            .await;
        assert_error(&r, &["contains `..`"]);
    }
    assert_eq!(ws.outside_snapshot(), before);
}

#[tokio::test]
async fn absolute_paths_outside_the_root_are_refused_and_inside_it_accepted() {
    let ws = Workspace::new();
    ws.put("notes.txt", "hello\n");
    let secret = ws.outside().join("secret.txt");
    let r = ws
        .call("read_file", json!({"path": secret.to_str().unwrap()}))
        .await;
    assert_error(
        &r,
        &[
            "is outside the workspace root",
            "Use a path relative to the root",
        ],
    );
    let r = ws.call("read_file", json!({"path": "/etc/passwd"})).await;
    assert_error(&r, &["`/etc/passwd` is outside the workspace root"]);
    let r = ws
        .call(
            "write_file",
            json!({"path": ws.outside().join("new.txt").to_str().unwrap(), "content": "x"}),
        )
        .await;
    assert_error(&r, &["is outside the workspace root"]);
    assert!(!ws.outside().join("new.txt").exists());

    let inside = ws.root().join("notes.txt");
    let r = ws
        .call("read_file", json!({"path": inside.to_str().unwrap()}))
        .await;
    assert!(ok(&r).contains("1\thello"));
    // "/" names the root itself.
    let r = ws.call("list_directory", json!({"path": "/"})).await;
    assert!(ok(&r).contains("notes.txt"));
}

#[tokio::test]
async fn a_symlink_to_outside_as_the_final_component_is_refused() {
    let ws = Workspace::new();
    symlink(ws.outside().join("secret.txt"), ws.root().join("link.txt")).unwrap();
    symlink(ws.outside(), ws.root().join("linkdir")).unwrap();
    let before = ws.outside_snapshot();

    let r = ws.call("read_file", json!({"path": "link.txt"})).await;
    assert_error(
        &r,
        &[
            "`link.txt` is a symbolic link",
            "refused inside the workspace root",
        ],
    );
    let r = ws
        .call(
            "write_file",
            json!({"path": "link.txt", "content": "PWNED", "overwrite": true}),
        )
        .await;
    assert_error(
        &r,
        &["`link.txt` is a symbolic link; write_file does not write through links"],
    );
    let r = ws
        .call(
            "edit_file",
            json!({"path": "link.txt", "old_string": "OUTSIDE", "new_string": "PWNED"}),
        )
        .await;
    assert_error(&r, &["is a symbolic link"]);
    let r = ws.call("list_directory", json!({"path": "linkdir"})).await;
    assert_error(&r, &["`linkdir` is a symbolic link"]);
    let r = ws.call("grep", json!({"pattern": "SECRET"})).await;
    assert!(ok(&r).starts_with("No lines match"), "{}", r.content);
    let r = ws.call("glob", json!({"pattern": "*"})).await;
    assert!(ok(&r).starts_with("No files match"), "{}", r.content);

    assert_eq!(ws.outside_snapshot(), before);
}

#[tokio::test]
async fn a_symlink_as_a_parent_directory_is_refused() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.root().join("real")).unwrap();
    symlink(ws.outside(), ws.root().join("real/escape")).unwrap();
    let before = ws.outside_snapshot();

    let r = ws
        .call("read_file", json!({"path": "real/escape/secret.txt"}))
        .await;
    assert_error(
        &r,
        &[
            "`real/escape/secret.txt` goes through `real/escape`, which is a symbolic link",
            "Use the path of the real file or directory instead",
        ],
    );
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "real/escape/new.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "real/escape/deeper/new.txt", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"path": "real/escape/secret.txt", "old_string": "OUTSIDE", "new_string": "X"}),
        ),
        ("delete", json!({"path": "real/escape/secret.txt"})),
        ("list_directory", json!({"path": "real/escape"})),
        ("grep", json!({"pattern": "SECRET", "path": "real/escape"})),
        ("glob", json!({"pattern": "*", "path": "real/escape"})),
    ] {
        let r = ws.call(tool, args).await;
        assert_error(&r, &["symbolic link"]);
    }
    // Deleting the link removes the link only.
    let r = ws
        .call("delete", json!({"path": "real/escape", "recursive": true}))
        .await;
    assert!(ok(&r).contains("Deleted the symbolic link `real/escape`"));
    assert_eq!(ws.outside_snapshot(), before);
}

#[tokio::test]
async fn dangling_symlinks_and_loops_are_refused() {
    let ws = Workspace::new();
    symlink("/nonexistent/target", ws.root().join("dangling")).unwrap();
    symlink("loop_b", ws.root().join("loop_a")).unwrap();
    symlink("loop_a", ws.root().join("loop_b")).unwrap();
    for path in ["dangling", "loop_a", "loop_a/file.txt", "dangling/file.txt"] {
        let r = ws.call("read_file", json!({"path": path})).await;
        assert_error(&r, &["symbolic link"]);
        let r = ws
            .call(
                "write_file",
                json!({"path": path, "content": "x", "overwrite": true}),
            )
            .await;
        assert_error(&r, &["symbolic link"]);
        let r = ws.call("list_directory", json!({"path": path})).await;
        assert_error(&r, &["symbolic link"]);
    }
    assert!(!std::path::Path::new("/nonexistent/target").exists());
    let r = ws.call("delete", json!({"path": "dangling"})).await;
    assert!(ok(&r).contains("Deleted the symbolic link"));
    assert!(std::fs::symlink_metadata(ws.root().join("dangling")).is_err());
}

#[tokio::test]
async fn a_directory_swapped_for_a_symlink_between_calls_is_refused() {
    let ws = Workspace::new();
    ws.put("sub/data.txt", "INSIDE\n");
    let r = ws.call("read_file", json!({"path": "sub/data.txt"})).await;
    assert!(ok(&r).contains("INSIDE"));

    std::fs::rename(ws.root().join("sub"), ws.root().join("sub_moved")).unwrap();
    std::fs::copy(
        ws.outside().join("secret.txt"),
        ws.outside().join("data.txt"),
    )
    .unwrap();
    symlink(ws.outside(), ws.root().join("sub")).unwrap();
    let before = ws.outside_snapshot();

    let r = ws.call("read_file", json!({"path": "sub/data.txt"})).await;
    assert_error(&r, &["goes through `sub`, which is a symbolic link"]);
    let r = ws
        .call(
            "write_file",
            json!({"path": "sub/data.txt", "content": "PWNED", "overwrite": true}),
        )
        .await;
    assert_error(&r, &["symbolic link"]);
    let r = ws.call("delete", json!({"path": "sub/data.txt"})).await;
    assert_error(&r, &["symbolic link"]);
    assert_eq!(ws.outside_snapshot(), before);
}

/// A thread keeps swapping `sub` between the real directory and a symlink to `outside/` while
/// reads, writes and edits run through `sub`. Not one byte outside the root may be read or
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_racing_swap_of_a_parent_directory_never_escapes() {
    let ws = Workspace::new();
    ws.put("sub/data.txt", "INSIDE\n");
    std::fs::write(ws.outside().join("data.txt"), "OUTSIDE SECRET\n").unwrap();
    let before = ws.outside_snapshot();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let root = ws.root();
        let outside = ws.outside();
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(Ordering::Relaxed) {
                if std::fs::rename(root.join("sub"), root.join("sub_real")).is_err() {
                    continue;
                }
                if symlink(&outside, root.join("sub")).is_ok() {
                    std::thread::yield_now();
                    std::fs::remove_file(root.join("sub")).unwrap();
                }
                // A write that runs while `sub` is missing creates a real, new `sub` (inside the
                // root); clear it away until the original is back.
                while std::fs::rename(root.join("sub_real"), root.join("sub")).is_err() {
                    if std::fs::symlink_metadata(root.join("sub")).is_ok_and(|m| m.is_dir()) {
                        let _ = std::fs::remove_dir_all(root.join("sub"));
                    }
                }
                std::thread::yield_now();
                swaps += 1;
            }
            swaps
        })
    };

    let mut successes = 0;
    for i in 0..300 {
        let r = ws.call("read_file", json!({"path": "sub/data.txt"})).await;
        assert!(
            !r.content.contains("OUTSIDE"),
            "read outside the root: {}",
            r.content
        );
        if !r.is_error {
            assert!(r.content.contains("INSIDE"));
            successes += 1;
        }
        let r = ws
            .call(
                "write_file",
                json!({"path": "sub/data.txt", "content": "INSIDE\n", "overwrite": true}),
            )
            .await;
        if !r.is_error {
            successes += 1;
        }
        let r = ws
            .call(
                "write_file",
                json!({"path": format!("sub/new-{i}.txt"), "content": "PWNED"}),
            )
            .await;
        if !r.is_error {
            successes += 1;
        }
        let r = ws
            .call(
                "edit_file",
                json!({"path": "sub/data.txt", "old_string": "INSIDE", "new_string": "INSIDE!"}),
            )
            .await;
        assert!(
            !r.content.contains("OUTSIDE"),
            "edit read outside: {}",
            r.content
        );
        if !r.is_error {
            successes += 1;
        }
        let r = ws
            .call("grep", json!({"pattern": "SECRET", "path": "sub"}))
            .await;
        assert!(
            !r.content.contains("OUTSIDE"),
            "grep read outside: {}",
            r.content
        );
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    assert!(
        successes > 0,
        "no operation ever got through; the race was not exercised"
    );
    assert_eq!(
        ws.outside_snapshot(),
        before,
        "a byte outside the root changed"
    );
}

#[tokio::test]
async fn a_recursive_delete_removes_links_inside_the_tree_not_their_targets() {
    let ws = Workspace::new();
    ws.put("tree/a.txt", "a");
    symlink(ws.outside(), ws.root().join("tree/out_dir")).unwrap();
    symlink(
        ws.outside().join("secret.txt"),
        ws.root().join("tree/out_file"),
    )
    .unwrap();
    let before = ws.outside_snapshot();
    let r = ws
        .call("delete", json!({"path": "tree", "recursive": true}))
        .await;
    assert!(ok(&r).contains("Deleted the directory `tree` and everything in it."));
    assert!(!ws.root().join("tree").exists());
    assert_eq!(ws.outside_snapshot(), before);
}

#[tokio::test]
async fn a_base_path_given_through_a_symlink_accepts_absolute_paths_in_either_form() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    std::fs::write(dir.path().join("real/a.txt"), "alias\n").unwrap();
    symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
    let registry = harnessx::ToolRegistry::new();
    harnessx_builtin::register_filesystem_tools(
        &registry,
        harnessx_builtin::FilesystemOptions {
            base_path: Some(dir.path().join("alias")),
            ..Default::default()
        },
    )
    .unwrap();
    for base in ["alias", "real"] {
        let path = dir.path().join(base).join("a.txt");
        let r = super::fs_support::call(
            &registry,
            "read_file",
            json!({"path": path.to_str().unwrap()}),
        )
        .await;
        assert!(ok(&r).contains("1\talias"), "{base}: {}", r.content);
    }
}
