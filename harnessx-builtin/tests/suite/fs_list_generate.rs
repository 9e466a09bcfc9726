//! `list_directory` and `generate_file`.

use harnessx_builtin::FilesystemOptions;
use serde_json::json;

use super::fs_support::{Workspace, assert_error, ok};

#[tokio::test]
async fn list_is_sorted_with_types_marked_and_capped() {
    let ws = Workspace::with(FilesystemOptions {
        max_directory_entries: 3,
        ..FilesystemOptions::default()
    });
    ws.put("b.txt", "12345");
    ws.put("a/inner.txt", "x");
    ws.put("c.txt", "");
    ws.put("d.txt", "d");
    std::os::unix::fs::symlink("b.txt", ws.root().join("e-link")).unwrap();
    let r = ws.call("list_directory", json!({})).await;
    assert_eq!(
        ok(&r),
        "`.` (5 entries):\na/\nb.txt  (5 bytes)\nc.txt  (0 bytes)\n\n[2 more entries not shown \
         (5 in all). List a subdirectory, or use glob with a pattern to find specific files.]"
    );
    let r = ws.call("list_directory", json!({"path": "a"})).await;
    assert_eq!(ok(&r), "`a` (1 entry):\ninner.txt  (1 byte)\n");
    std::fs::create_dir(ws.root().join("void")).unwrap();
    let r = ws.call("list_directory", json!({"path": "void"})).await;
    assert_eq!(ok(&r), "`void` is an empty directory.");
    let r = ws.call("list_directory", json!({"path": "b.txt"})).await;
    assert_error(
        &r,
        &["`b.txt` is a file, not a directory. Call read_file to read it."],
    );
}

#[tokio::test]
async fn links_are_marked() {
    let ws = Workspace::new();
    std::os::unix::fs::symlink("nowhere", ws.root().join("link")).unwrap();
    let r = ws.call("list_directory", json!({"path": "."})).await;
    assert_eq!(ok(&r), "`.` (1 entry):\nlink@\n");
}

#[tokio::test]
async fn generate_file_writes_to_the_output_dir_without_overwriting() {
    let ws = Workspace::new();
    let downloads = ws.dir.path().join("downloads");
    let r = ws
        .call(
            "generate_file",
            json!({"filename": "report.md", "content": "# Report\n"}),
        )
        .await;
    let first = downloads.canonicalize().unwrap().join("report.md");
    assert_eq!(
        ok(&r),
        format!("Created the download `{}` (9 bytes).", first.display())
    );
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "# Report\n");
    let r = ws
        .call(
            "generate_file",
            json!({"filename": "report.md", "content": "second"}),
        )
        .await;
    assert!(ok(&r).contains("report-1.md"));
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "# Report\n");
    let r = ws
        .call(
            "generate_file",
            json!({"filename": "exports/data.csv", "content": "a,b\n"}),
        )
        .await;
    assert!(ok(&r).contains("exports/data.csv"));
    let r = ws
        .call(
            "generate_file",
            json!({"filename": "../escape.txt", "content": "x"}),
        )
        .await;
    assert_error(
        &r,
        &[
            "`../escape.txt` contains `..`, which is not allowed in a download's name. Give a file name inside the output directory, such as `report.md`.",
        ],
    );
    let r = ws
        .call(
            "generate_file",
            json!({"filename": "/etc/report.md", "content": "x"}),
        )
        .await;
    let shown_dir = downloads.canonicalize().unwrap();
    assert_error(
        &r,
        &[&format!(
            "`/etc/report.md` is an absolute path, but downloads are written to the output \
             directory `{}`. Give a file name relative to it, such as `report.md`.",
            shown_dir.display()
        )],
    );
    assert!(!r.content.contains("workspace"), "{}", r.content);
    let r = ws
        .call("generate_file", json!({"filename": ".", "content": "x"}))
        .await;
    assert_error(
        &r,
        &["`filename` names no file. Give a file name such as `report.md`."],
    );
    assert!(!ws.dir.path().join("escape.txt").exists());
    // generate_file never touches the workspace.
    assert_eq!(std::fs::read_dir(ws.root()).unwrap().count(), 0);
}
