//! `read_file`: numbering, paging, long lines, binary files, directories and the byte limit.

use harnessx_builtin::FilesystemOptions;
use serde_json::json;

use super::fs_support::{Workspace, assert_error, call_promptly, mkfifo, ok};

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn lines_are_numbered_and_the_end_is_marked() {
    let ws = Workspace::new();
    ws.put("a.txt", "alpha\r\nbeta\n\tgamma");
    let r = ws.call("read_file", json!({"path": "a.txt"})).await;
    assert_eq!(
        ok(&r),
        "     1\talpha\n     2\tbeta\n     3\t\tgamma\n\n[End of file: 3 lines.]"
    );
}

#[tokio::test]
async fn offset_and_limit_page_with_a_footer_saying_how_to_read_on() {
    let ws = Workspace::new();
    ws.put("big.txt", numbered(5000));
    let r = ws.call("read_file", json!({"path": "big.txt"})).await;
    let text = ok(&r);
    assert!(text.starts_with("     1\tline 1\n"));
    assert!(text.contains("  2000\tline 2000\n"));
    assert!(!text.contains("line 2001"));
    assert!(text.ends_with(
        "[Showing lines 1-2000 (the limit of 2000 lines); the file continues. Call read_file \
         with offset=2001 to read on.]"
    ));

    let r = ws
        .call(
            "read_file",
            json!({"path": "big.txt", "offset": 4999, "limit": 10}),
        )
        .await;
    assert_eq!(
        ok(&r),
        "  4999\tline 4999\n  5000\tline 5000\n\n[End of file: 5000 lines.]"
    );

    let r = ws
        .call(
            "read_file",
            json!({"path": "big.txt", "offset": 10, "limit": 2}),
        )
        .await;
    assert!(ok(&r).contains("Call read_file with offset=12 to read on."));

    let r = ws
        .call("read_file", json!({"path": "big.txt", "offset": 6000}))
        .await;
    assert_error(
        &r,
        &[
            "offset 6000 is past the end of `big.txt`, which has 5000 lines. Call read_file with an offset of at most 5000.",
        ],
    );
}

#[tokio::test]
async fn the_byte_limit_stops_early_and_says_where_to_go_on() {
    let ws = Workspace::with(FilesystemOptions {
        max_read_bytes: 100,
        ..FilesystemOptions::default()
    });
    ws.put("big.txt", numbered(100));
    let r = ws.call("read_file", json!({"path": "big.txt"})).await;
    let text = ok(&r);
    let body = text.split("\n\n[").next().unwrap();
    assert!(body.len() <= 100, "{body}");
    assert!(text.contains("(the output reached the 100-byte limit); the file continues."));
    let next: usize = text
        .split("offset=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let r = ws
        .call(
            "read_file",
            json!({"path": "big.txt", "offset": next, "limit": 1}),
        )
        .await;
    assert!(ok(&r).contains(&format!("line {next}\n")));
}

#[tokio::test]
async fn limits_are_hidden_from_the_model() {
    let ws = Workspace::new();
    let def = ws.registry.get_tool("read_file").unwrap();
    let props = def.input_schema["properties"].as_object().unwrap();
    let keys: Vec<_> = props.keys().cloned().collect();
    assert_eq!(keys, ["path", "offset", "limit"]);
    let r = ws
        .call("read_file", json!({"path": "x", "max_read_bytes": 10}))
        .await;
    assert!(r.is_error);
    assert!(r.content.contains("max_read_bytes"), "{}", r.content);
}

#[tokio::test]
async fn long_lines_are_cut_with_a_marker() {
    let ws = Workspace::new();
    ws.put("long.txt", format!("{}\nshort\n", "x".repeat(50_000)));
    let r = ws.call("read_file", json!({"path": "long.txt"})).await;
    let text = ok(&r);
    assert!(
        text.contains(&format!(
            "     1\t{}… [line cut: 48000 more bytes not shown]\n",
            "x".repeat(2000)
        )),
        "{}",
        &text[..200]
    );
    assert!(text.contains("     2\tshort\n"));
}

#[tokio::test]
async fn binary_files_and_directories_are_refused_with_what_to_do() {
    let ws = Workspace::new();
    ws.put("image.bin", [0x89, b'P', b'N', b'G', 0, 0, 1, 2]);
    ws.put("dir/inner.txt", "x");
    ws.put("empty.txt", "");
    let r = ws.call("read_file", json!({"path": "image.bin"})).await;
    assert_error(
        &r,
        &[
            "`image.bin` is a binary file (8 bytes), so read_file will not show it. Only text files can be read.",
        ],
    );
    let r = ws.call("read_file", json!({"path": "dir"})).await;
    assert_error(
        &r,
        &[
            "`dir` is a directory, not a file. Call list_directory with path `dir` to see its entries.",
        ],
    );
    let r = ws.call("read_file", json!({"path": "."})).await;
    assert_error(&r, &["is a directory", "list_directory"]);
    let r = ws.call("read_file", json!({"path": "missing.txt"})).await;
    assert_error(
        &r,
        &[
            "`missing.txt` does not exist. Check the path with list_directory or glob and call again.",
        ],
    );
    let r = ws.call("read_file", json!({"path": "empty.txt"})).await;
    assert_eq!(ok(&r), "`empty.txt` is empty (0 bytes).");
    let r = ws
        .call("read_file", json!({"path": "dir/inner.txt/x"}))
        .await;
    assert_error(
        &r,
        &["`dir/inner.txt` is a file, not a directory, so `dir/inner.txt/x` cannot exist."],
    );
}

#[tokio::test]
async fn reading_near_the_end_of_a_large_file_streams() {
    // 64 MB of lines: the read must skip them without holding them (the 1 GB figure is in
    // BENCHMARKS.md; this checks the behaviour at a size a test can afford).
    let ws = Workspace::new();
    let path = ws.root().join("large.log");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for i in 1..=1_000_000u32 {
            writeln!(f, "{i:08} {}", "y".repeat(54)).unwrap();
        }
    }
    let r = ws
        .call("read_file", json!({"path": "large.log", "offset": 999_999}))
        .await;
    let text = ok(&r);
    assert!(text.starts_with("999999\t00999999 "), "{text}");
    assert!(text.ends_with("[End of file: 1000000 lines.]"));
}

#[tokio::test]
async fn without_base_path_the_host_filesystem_is_used_and_links_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("real.txt"), "host file\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join("real.txt"), dir.path().join("link.txt")).unwrap();
    let registry = harnessx::ToolRegistry::new();
    harnessx_builtin::register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap();
    let link = dir.path().join("link.txt");
    let r = super::fs_support::call(
        &registry,
        "read_file",
        json!({"path": link.to_str().unwrap()}),
    )
    .await;
    assert!(ok(&r).contains("1\thost file"));
    // Writing through the link is still refused.
    let r = super::fs_support::call(
        &registry,
        "write_file",
        json!({"path": link.to_str().unwrap(), "content": "x", "overwrite": true}),
    )
    .await;
    assert_error(
        &r,
        &["is a symbolic link; write_file does not write through links"],
    );
}

#[tokio::test]
async fn fifos_are_refused_instead_of_blocking() {
    let ws = Workspace::new();
    let fifo = ws.root().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let expected = "`pipe` is not a regular file (it is a FIFO, socket or device), and the file \
                    tools only work on regular files. Choose another path.";
    let r = ws.call("read_file", json!({"path": "pipe"})).await;
    assert_error(&r, &[expected]);
    let r = ws
        .call(
            "write_file",
            json!({"path": "pipe", "content": "x", "overwrite": true}),
        )
        .await;
    assert_error(&r, &[expected]);
    let r = ws
        .call(
            "edit_file",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert_error(&r, &[expected]);
}

#[tokio::test]
async fn huge_offsets_and_limits_do_not_overflow() {
    let ws = Workspace::new();
    ws.put("a.txt", "one\ntwo\n");
    let r = ws
        .call("read_file", json!({"path": "a.txt", "limit": u64::MAX}))
        .await;
    assert!(ok(&r).ends_with("[End of file: 2 lines.]"));
    let r = ws
        .call("read_file", json!({"path": "a.txt", "offset": u64::MAX}))
        .await;
    assert_error(&r, &["is past the end of `a.txt`, which has 2 lines"]);
}

fn not_regular(shown: &str) -> String {
    format!(
        "`{shown}` is not a regular file (it is a FIFO, socket or device), and the file tools \
         only work on regular files. Choose another path."
    )
}

#[test]
fn on_the_host_a_fifo_or_a_link_to_one_is_refused_promptly() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("pipe"));
    std::os::unix::fs::symlink(dir.path().join("pipe"), dir.path().join("link")).unwrap();
    let registry = harnessx::ToolRegistry::new();
    harnessx_builtin::register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap();
    for name in ["pipe", "link"] {
        let path = dir.path().join(name);
        let shown = path.to_str().unwrap();
        let r = call_promptly(&registry, "read_file", json!({"path": shown}));
        assert_error(&r, &[&not_regular(shown)]);
        assert_eq!(r.content.lines().count(), 1, "{}", r.content);
    }
    // The link names a FIFO, not a directory: grep refuses it without opening the FIFO.
    let link = dir.path().join("link");
    let r = call_promptly(
        &registry,
        "grep",
        json!({"pattern": "x", "path": link.to_str().unwrap()}),
    );
    assert!(r.is_error, "{}", r.content);
}

#[test]
fn in_the_root_a_fifo_is_refused_promptly_also_when_read_for_ignore_rules() {
    let ws = Workspace::new();
    mkfifo(&ws.root().join("pipe"));
    std::os::unix::fs::symlink("pipe", ws.root().join("link")).unwrap();
    let r = call_promptly(&ws.registry, "read_file", json!({"path": "pipe"}));
    assert_error(&r, &[&not_regular("pipe")]);
    let r = call_promptly(&ws.registry, "read_file", json!({"path": "link"}));
    assert_error(&r, &["`link` is a symbolic link"]);
    // A search below the root reads the root's ignore files through the same open (`read_small`),
    // even with `include_ignored`: a FIFO there is skipped instead of waiting for a writer.
    mkfifo(&ws.root().join(".gitignore"));
    ws.put("sub/a.txt", "hello\n");
    let r = call_promptly(
        &ws.registry,
        "grep",
        json!({"pattern": "hello", "path": "sub", "include_ignored": true}),
    );
    assert_eq!(
        ok(&r),
        "1 matching line in 1 file for `hello`:\nsub/a.txt:1: hello\n"
    );
}
