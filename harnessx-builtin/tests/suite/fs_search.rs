//! `glob` and `grep`: ripgrep's walker and searcher, .gitignore, binaries, caps and previews.

use harnessx_builtin::FilesystemOptions;
use serde_json::json;

use super::fs_support::{Workspace, assert_error, ok};

fn project() -> Workspace {
    let ws = Workspace::with(FilesystemOptions {
        max_search_results: 3,
        ..FilesystemOptions::default()
    });
    ws.put(".gitignore", "target/\n*.log\n");
    ws.put("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    ws.put(
        "src/lib.rs",
        "pub fn hello() -> &'static str {\n    \"Hello\"\n}\n",
    );
    ws.put("src/deep/mod.rs", "// nothing to see\n");
    ws.put("src/.gitignore", "generated.rs\n");
    ws.put("src/generated.rs", "fn hello_generated() {}\n");
    ws.put("target/debug/out.rs", "fn hello() {}\n");
    ws.put("build.log", "hello from the log\n");
    ws.put(".hidden/secret.rs", "hello hidden\n");
    ws.put("data.bin", b"hello\x00\x01\x02binary");
    ws.put("README.md", "# Hello\n");
    ws
}

#[tokio::test]
async fn glob_matches_names_or_paths_sorted_and_respects_gitignore() {
    let ws = project();
    let r = ws.call("glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(
        ok(&r),
        "3 files match `*.rs` in `.`:\nsrc/deep/mod.rs\nsrc/lib.rs\nsrc/main.rs\n"
    );
    let r = ws.call("glob", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(
        ok(&r),
        "2 files match `src/*.rs` in `.`:\nsrc/lib.rs\nsrc/main.rs\n"
    );
    let r = ws
        .call("glob", json!({"pattern": "**/*.rs", "path": "src"}))
        .await;
    assert_eq!(
        ok(&r),
        "3 files match `**/*.rs` in `src`:\nsrc/deep/mod.rs\nsrc/lib.rs\nsrc/main.rs\n"
    );
    let r = ws.call("glob", json!({"pattern": "*.nothing"})).await;
    assert_eq!(
        ok(&r),
        "No files match `*.nothing` in `.`. Hidden files and files ignored by .gitignore were \
         skipped; pass `include_ignored: true` to search them too."
    );
}

#[tokio::test]
async fn a_subdirectory_search_applies_the_root_gitignore() {
    let ws = project();
    ws.put("src/app.log", "hello\n");
    let r = ws
        .call("glob", json!({"pattern": "*", "path": "src"}))
        .await;
    let text = ok(&r);
    assert!(!text.contains("app.log"), "{text}");
    assert!(!text.contains("generated.rs"), "{text}");
    let r = ws
        .call("grep", json!({"pattern": "hello", "path": "src"}))
        .await;
    assert!(!ok(&r).contains("app.log"), "{}", r.content);
}

#[tokio::test]
async fn results_are_capped_with_a_footer() {
    let ws = project();
    let r = ws
        .call("glob", json!({"pattern": "*", "include_ignored": true}))
        .await;
    let text = ok(&r);
    assert!(text.starts_with("11 files match `*` in `.`:\n"), "{text}");
    assert!(text.ends_with(
        "[8 more files matched and are not shown (11 in all). Narrow the pattern or the path to see them.]"
    ), "{text}");
    let r = ws
        .call(
            "grep",
            json!({"pattern": "(?i)hello", "include_ignored": true}),
        )
        .await;
    let text = ok(&r);
    assert!(
        text.starts_with("8 matching lines in 7 files for `(?i)hello`:\n"),
        "{text}"
    );
    assert!(text.ends_with(
        "[5 more matching lines are not shown (8 in all). Narrow the pattern, the path or the glob to see them.]"
    ), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(": ")).count(),
        3,
        "{text}"
    );
}

#[tokio::test]
async fn grep_reports_path_and_line_skips_ignored_and_binary_files() {
    let ws = Workspace::new();
    ws.put(".gitignore", "*.log\n");
    ws.put("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    ws.put("src/lib.rs", "pub fn hello() {}\n");
    ws.put("build.log", "hello from the log\n");
    ws.put("data.bin", b"hello\x00\x01\x02binary");
    ws.put(
        "late.bin",
        [b"hello\n".repeat(20_000), vec![0u8; 4]].concat(),
    );
    let r = ws.call("grep", json!({"pattern": "hello"})).await;
    assert_eq!(
        ok(&r),
        "2 matching lines in 2 files for `hello`:\nsrc/lib.rs:1: pub fn hello() {}\nsrc/main.rs:2:     println!(\"hello\");\n"
    );
    let r = ws
        .call(
            "grep",
            json!({"pattern": "HELLO", "ignore_case": true, "glob": "main.rs"}),
        )
        .await;
    assert_eq!(
        ok(&r),
        "1 matching line in 1 file for `HELLO`:\nsrc/main.rs:2:     println!(\"hello\");\n"
    );
    let r = ws
        .call("grep", json!({"pattern": "hello", "include_ignored": true}))
        .await;
    let text = ok(&r);
    assert!(text.contains("build.log:1: hello from the log"), "{text}");
    assert!(!text.contains(".bin"), "{text}");
    let r = ws
        .call("grep", json!({"pattern": "fn", "path": "src/lib.rs"}))
        .await;
    assert_eq!(
        ok(&r),
        "1 matching line in 1 file for `fn`:\nsrc/lib.rs:1: pub fn hello() {}\n"
    );
}

#[tokio::test]
async fn long_matching_lines_are_shown_as_a_preview() {
    let ws = Workspace::new();
    ws.put(
        "min.js",
        format!("{}NEEDLE{}\n", "a".repeat(5_000), "b".repeat(5_000)),
    );
    let r = ws.call("grep", json!({"pattern": "NEEDLE"})).await;
    let text = ok(&r);
    assert!(text.contains("min.js:1: …"), "{text}");
    assert!(text.contains("NEEDLE"), "{text}");
    assert!(
        text.contains("[long line: 10006 characters, preview shown]"),
        "{text}"
    );
    assert!(text.len() < 600, "{text}");
}

#[tokio::test]
async fn bad_patterns_are_refused_with_the_fix() {
    let ws = Workspace::new();
    let r = ws.call("grep", json!({"pattern": "fn(("})).await;
    assert_error(
        &r,
        &[
            "`pattern` is not a valid regular expression:",
            "Escape special characters",
        ],
    );
    let r = ws.call("glob", json!({"pattern": "a[b"})).await;
    assert_error(
        &r,
        &[
            "`pattern` is not a valid glob pattern:",
            "for example `**/*.rs`",
        ],
    );
    let r = ws.call("grep", json!({"pattern": "x", "glob": "{a"})).await;
    assert_error(&r, &["`glob` is not a valid glob pattern:"]);
    let r = ws
        .call("grep", json!({"pattern": "x", "path": "missing"}))
        .await;
    assert_error(&r, &["`missing` does not exist."]);
}

#[tokio::test]
async fn without_base_path_search_paths_are_host_paths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a.rs"), "let needle = 1;\n").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "skip.rs\n").unwrap();
    std::fs::write(dir.path().join("skip.rs"), "let needle = 2;\n").unwrap();
    let registry = harnessx::ToolRegistry::new();
    harnessx_builtin::register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap();
    let root = dir.path().to_str().unwrap();
    let r = super::fs_support::call(
        &registry,
        "grep",
        json!({"pattern": "needle", "path": root}),
    )
    .await;
    assert_eq!(
        ok(&r),
        format!("1 matching line in 1 file for `needle`:\n{root}/src/a.rs:1: let needle = 1;\n")
    );
    let r =
        super::fs_support::call(&registry, "glob", json!({"pattern": "*.rs", "path": root})).await;
    assert_eq!(
        ok(&r),
        format!("1 file matches `*.rs` in `{root}`:\n{root}/src/a.rs\n")
    );
}

#[tokio::test]
async fn grep_counts_every_match_of_a_huge_file_exactly_while_keeping_only_what_it_shows() {
    let ws = Workspace::with(FilesystemOptions {
        max_search_results: 3,
        ..FilesystemOptions::default()
    });
    let many: String = (1..=20_000).map(|i| format!("match {i}\n")).collect();
    ws.put("b.log", &many);
    ws.put("a.log", "match a1\nnothing\nmatch a2\n");
    ws.put("c.log", &many);
    let r = ws.call("grep", json!({"pattern": "match"})).await;
    let text = ok(&r);
    assert_eq!(
        text,
        "40002 matching lines in 3 files for `match`:\na.log:1: match a1\na.log:3: match a2\n\
         b.log:1: match 1\n\n[39999 more matching lines are not shown (40002 in all). Narrow \
         the pattern, the path or the glob to see them.]"
    );
    let r = ws
        .call("grep", json!({"pattern": "match", "path": "c.log"}))
        .await;
    assert_eq!(
        ok(&r),
        "20000 matching lines in 1 file for `match`:\nc.log:1: match 1\nc.log:2: match 2\n\
         c.log:3: match 3\n\n[19997 more matching lines are not shown (20000 in all). Narrow \
         the pattern, the path or the glob to see them.]"
    );
}
