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

#[tokio::test]
async fn a_pattern_too_large_to_compile_is_refused_naming_it_and_the_limit() {
    let ws = Workspace::new();
    ws.put("one.txt", "x".repeat(100_000));
    for pattern in [r"(\w{1000}){1000}", ".{65535}"] {
        let r = ws.call("grep", json!({"pattern": pattern})).await;
        assert_error(
            &r,
            &[
                &format!("`pattern` `{pattern}` is too large"),
                "more than the 8 MiB that grep allows for a pattern",
                "use a smaller count or a simpler pattern",
            ],
        );
    }
    // Ordinary counted repetitions stay usable.
    let r = ws.call("grep", json!({"pattern": r"x{5000}"})).await;
    assert!(
        ok(&r).starts_with("1 matching line in 1 file"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn only_the_first_64_kib_of_a_long_line_are_searched_and_the_result_says_so() {
    let ws = Workspace::new();
    let near = format!("NEAR{}", "a".repeat(5_000_000));
    let far = format!("{}FAR\nFAR on line two\n", "b".repeat(70_000));
    ws.put("near.min.js", &near);
    ws.put("far.min.js", &far);
    let r = ws.call("grep", json!({"pattern": "NEAR"})).await;
    let text = ok(&r);
    assert!(
        text.starts_with("1 matching line in 1 file for `NEAR`:\nnear.min.js:1: NEAR"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "[Only the first 64 KiB of 2 lines longer than that were searched (2 files); matches \
             further along them are not found. Use read_file to look at those lines.]"
        ),
        "{text}"
    );
    let r = ws.call("grep", json!({"pattern": "FAR"})).await;
    let text = ok(&r);
    assert!(
        text.starts_with("1 matching line in 1 file for `FAR`:\nfar.min.js:2: FAR on line two\n"),
        "{text}"
    );
}

/// Calls `tool` through its handler with a context whose cancellation has already fired, as
/// the engine leaves it once the call's time limit passed.
async fn call_cancelled(ws: &Workspace, tool: &str, args: serde_json::Value) -> String {
    let def = ws.registry.get_tool(tool).expect("the tool is registered");
    let ctx = harnessx::ToolContext::new("c", tool);
    ctx.cancellation().cancel();
    match def.handler.call(args, ctx).await {
        Ok(output) => panic!("a cancelled {tool} still answered: {output:?}"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_cancelled_search_stops_instead_of_walking_on() {
    let ws = Workspace::new();
    for i in 0..50 {
        ws.put(&format!("d{i}/f.txt"), "needle\n");
    }
    for (tool, args) in [
        ("grep", json!({"pattern": "needle"})),
        ("grep", json!({"pattern": "needle", "path": "d1/f.txt"})),
        ("glob", json!({"pattern": "*.txt"})),
    ] {
        let e = call_cancelled(&ws, tool, args).await;
        assert!(
            e.contains("the search was stopped before it finished: the call was cancelled"),
            "{tool}: {e}"
        );
    }
}

#[tokio::test]
async fn grep_transcodes_a_utf16_file_with_a_byte_order_mark() {
    let ws = Workspace::new();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(
            "first\nsay hello\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        )
        .collect();
    ws.put("wide.txt", utf16);
    let r = ws.call("grep", json!({"pattern": "hello"})).await;
    assert_eq!(
        ok(&r),
        "1 matching line in 1 file for `hello`:\nwide.txt:2: say hello\n"
    );
}
