//! `write_file` and `edit_file`: overwrite rules, atomic publication, modes, line endings.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::fs_support::{Workspace, assert_error, ok};

fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn write_creates_parents_and_needs_overwrite_for_an_existing_file() {
    let ws = Workspace::new();
    let r = ws
        .call(
            "write_file",
            json!({"path": "a/b/c.txt", "content": "hello\nworld\n"}),
        )
        .await;
    assert_eq!(ok(&r), "Created `a/b/c.txt` (12 bytes, 2 lines).");
    assert_eq!(ws.read("a/b/c.txt"), "hello\nworld\n");

    let r = ws
        .call(
            "write_file",
            json!({"path": "a/b/c.txt", "content": "other"}),
        )
        .await;
    assert_error(
        &r,
        &[
            "`a/b/c.txt` already exists (12 bytes). Pass `overwrite: true` to replace it whole, or use edit_file to change part of it.",
        ],
    );
    assert_eq!(ws.read("a/b/c.txt"), "hello\nworld\n");

    let r = ws
        .call(
            "write_file",
            json!({"path": "a/b/c.txt", "content": "other", "overwrite": true}),
        )
        .await;
    assert_eq!(ok(&r), "Overwrote `a/b/c.txt` (5 bytes, 1 line).");
    assert_eq!(ws.read("a/b/c.txt"), "other");
    // The atomic publish leaves no temporary file behind.
    assert_eq!(names_in(&ws.root().join("a/b")), ["c.txt"]);
}

#[tokio::test]
async fn write_keeps_the_mode_bits_of_an_existing_file() {
    let ws = Workspace::new();
    ws.put("run.sh", "#!/bin/sh\necho old\n");
    let path = ws.root().join("run.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    let r = ws
        .call(
            "write_file",
            json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n", "overwrite": true}),
        )
        .await;
    ok(&r);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o750
    );
    let r = ws
        .call(
            "edit_file",
            json!({"path": "run.sh", "old_string": "new", "new_string": "newer"}),
        )
        .await;
    ok(&r);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o750
    );
    assert_eq!(ws.read("run.sh"), "#!/bin/sh\necho newer\n");
}

#[tokio::test]
async fn write_refuses_directories_and_the_root() {
    let ws = Workspace::new();
    ws.put("dir/x.txt", "x");
    let r = ws
        .call(
            "write_file",
            json!({"path": "dir", "content": "x", "overwrite": true}),
        )
        .await;
    assert_error(
        &r,
        &["`dir` is a directory; give the path of a file inside it, such as `dir/notes.md`."],
    );
    let r = ws
        .call(
            "write_file",
            json!({"path": ".", "content": "x", "overwrite": true}),
        )
        .await;
    assert_error(&r, &["`.` is a directory"]);
    let r = ws
        .call("write_file", json!({"path": "dir/x.txt/y", "content": "x"}))
        .await;
    assert_error(&r, &["`dir/x.txt` is a file, not a directory"]);
}

#[tokio::test]
async fn edit_replaces_exactly_one_match_and_refuses_zero_or_many_with_line_numbers() {
    let ws = Workspace::new();
    ws.put(
        "code.rs",
        "fn a() {}\nlet x = 1;\nfn b() {}\nlet x = 1;\nlet x = 1;\n",
    );
    let r = ws
        .call(
            "edit_file",
            json!({"path": "code.rs", "old_string": "fn b()", "new_string": "fn c()"}),
        )
        .await;
    assert_eq!(ok(&r), "Edited `code.rs`: replaced 1 occurrence (line 3).");

    let r = ws
        .call(
            "edit_file",
            json!({"path": "code.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
        )
        .await;
    assert_error(
        &r,
        &[
            "`old_string` occurs 3 times in `code.rs` (lines 2, 4, 5). Include more surrounding lines to make it unique, or pass `replace_all: true` to replace every occurrence.",
        ],
    );
    let r = ws
        .call(
            "edit_file",
            json!({"path": "code.rs", "old_string": "missing", "new_string": "x"}),
        )
        .await;
    assert_error(
        &r,
        &[
            "`old_string` was not found in `code.rs`. Read the file again and copy the exact text, including whitespace and indentation.",
        ],
    );
    assert_eq!(
        ws.read("code.rs"),
        "fn a() {}\nlet x = 1;\nfn c() {}\nlet x = 1;\nlet x = 1;\n"
    );

    let r = ws
        .call(
            "edit_file",
            json!({"path": "code.rs", "old_string": "let x = 1;", "new_string": "let x = 2;", "replace_all": true}),
        )
        .await;
    assert_eq!(
        ok(&r),
        "Edited `code.rs`: replaced 3 occurrences (lines 2, 4, 5)."
    );
    assert_eq!(
        ws.read("code.rs"),
        "fn a() {}\nlet x = 2;\nfn c() {}\nlet x = 2;\nlet x = 2;\n"
    );
}

#[tokio::test]
async fn edit_keeps_crlf_line_endings_and_a_bom() {
    let ws = Workspace::new();
    ws.put("win.txt", "\u{feff}first\r\nsecond\r\nthird\r\n");
    let r = ws
        .call(
            "edit_file",
            json!({"path": "win.txt", "old_string": "first\nsecond", "new_string": "one\ntwo\nextra"}),
        )
        .await;
    ok(&r);
    assert_eq!(
        std::fs::read(ws.root().join("win.txt")).unwrap(),
        "\u{feff}one\r\ntwo\r\nextra\r\nthird\r\n".as_bytes()
    );
    let r = ws
        .call(
            "edit_file",
            json!({"path": "win.txt", "old_string": "third", "new_string": "3"}),
        )
        .await;
    ok(&r);
    assert_eq!(
        std::fs::read(ws.root().join("win.txt")).unwrap(),
        "\u{feff}one\r\ntwo\r\nextra\r\n3\r\n".as_bytes()
    );
}

#[tokio::test]
async fn edit_counts_overlapping_matches_as_ambiguous() {
    let ws = Workspace::new();
    ws.put("a.txt", "x\naaa\n");
    let r = ws
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "aa", "new_string": "b"}),
        )
        .await;
    assert_error(
        &r,
        &[
            "`old_string` occurs 2 times in `a.txt` (lines 2, 2). Include more surrounding lines to make it unique, or pass `replace_all: true` to replace every occurrence.",
        ],
    );
    assert_eq!(ws.read("a.txt"), "x\naaa\n");
    let r = ws
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "aaa", "new_string": "b"}),
        )
        .await;
    assert_eq!(ok(&r), "Edited `a.txt`: replaced 1 occurrence (line 2).");
    assert_eq!(ws.read("a.txt"), "x\nb\n");
    // replace_all takes each match after the one before, and says how many it replaced.
    ws.put("b.txt", "aaaa\naa\n");
    let r = ws
        .call(
            "edit_file",
            json!({"path": "b.txt", "old_string": "aa", "new_string": "c", "replace_all": true}),
        )
        .await;
    assert_eq!(
        ok(&r),
        "Edited `b.txt`: replaced 3 occurrences (lines 1, 1, 2)."
    );
    assert_eq!(ws.read("b.txt"), "cc\nc\n");
}

#[tokio::test]
async fn edit_writes_new_lines_in_the_line_ending_of_a_crlf_file() {
    let ws = Workspace::new();
    ws.put("win.txt", "first\r\nsecond\r\n");
    // `old_string` without a line break, `new_string` with bare `\n`.
    let r = ws
        .call(
            "edit_file",
            json!({"path": "win.txt", "old_string": "first", "new_string": "one\ntwo"}),
        )
        .await;
    ok(&r);
    assert_eq!(
        std::fs::read(ws.root().join("win.txt")).unwrap(),
        b"one\r\ntwo\r\nsecond\r\n"
    );
    // `old_string` in CRLF, `new_string` mixing both endings.
    let r = ws
        .call(
            "edit_file",
            json!({"path": "win.txt", "old_string": "two\r\nsecond", "new_string": "2\r\n3\n4"}),
        )
        .await;
    ok(&r);
    assert_eq!(
        std::fs::read(ws.root().join("win.txt")).unwrap(),
        b"one\r\n2\r\n3\r\n4\r\n"
    );
    // `old_string` written with `\n` matches the CRLF text.
    let r = ws
        .call(
            "edit_file",
            json!({"path": "win.txt", "old_string": "3\n4\n", "new_string": "three\n"}),
        )
        .await;
    assert_eq!(ok(&r), "Edited `win.txt`: replaced 1 occurrence (line 3).");
    assert_eq!(
        std::fs::read(ws.root().join("win.txt")).unwrap(),
        b"one\r\n2\r\nthree\r\n"
    );
    // In a file of mixed endings, text replacing CRLF lines gets CRLF.
    ws.put("mixed.txt", "a\nb\r\nc\r\n");
    let r = ws
        .call(
            "edit_file",
            json!({"path": "mixed.txt", "old_string": "b\nc", "new_string": "x\ny"}),
        )
        .await;
    ok(&r);
    assert_eq!(ws.read("mixed.txt"), "a\nx\r\ny\r\n");
    // A file with LF endings keeps them.
    ws.put("unix.txt", "a\nb\n");
    let r = ws
        .call(
            "edit_file",
            json!({"path": "unix.txt", "old_string": "a", "new_string": "x\r\ny"}),
        )
        .await;
    ok(&r);
    assert_eq!(ws.read("unix.txt"), "x\r\ny\nb\n");
}

#[tokio::test]
async fn edit_refuses_non_utf8_and_pointless_edits() {
    let ws = Workspace::new();
    ws.put("latin1.txt", b"caf\xe9 au lait\n");
    let r = ws
        .call(
            "edit_file",
            json!({"path": "latin1.txt", "old_string": "au", "new_string": "con"}),
        )
        .await;
    assert_error(
        &r,
        &[
            "`latin1.txt` is not valid UTF-8 text (the first invalid byte is at offset 3), so edit_file will not rewrite it",
        ],
    );
    assert_eq!(
        std::fs::read(ws.root().join("latin1.txt")).unwrap(),
        b"caf\xe9 au lait\n"
    );

    let r = ws
        .call(
            "edit_file",
            json!({"path": "latin1.txt", "old_string": "", "new_string": "x"}),
        )
        .await;
    assert_error(
        &r,
        &[
            "`old_string` is empty. Give the exact text to replace; to write a new file use write_file.",
        ],
    );
    let r = ws
        .call(
            "edit_file",
            json!({"path": "latin1.txt", "old_string": "au", "new_string": "au"}),
        )
        .await;
    assert_error(
        &r,
        &["`old_string` and `new_string` are the same, so the edit would change nothing."],
    );
    let r = ws
        .call(
            "edit_file",
            json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert_error(&r, &["`nope.txt` does not exist."]);
}
