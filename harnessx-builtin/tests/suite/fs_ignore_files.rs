//! Ignore files inside the root are read through the containment layer: never through a
//! symbolic link, never blocking, only when regular files of at most 1 MiB; the result names the
//! ones that were not applied. The rules themselves are ripgrep's.

use serde_json::json;

use super::fs_support::{Workspace, call_promptly, mkfifo, ok};

/// A workspace with `src/main.rs`, `src/lib.rs` and `notes.md`.
fn sources() -> Workspace {
    let ws = Workspace::new();
    ws.put("src/main.rs", "fn main() { needle(); }\n");
    ws.put("src/lib.rs", "pub fn needle() {}\n");
    ws.put("notes.md", "needle notes\n");
    ws
}

const ALL_RS: &str = "2 files match `*.rs` in `.`:\nsrc/lib.rs\nsrc/main.rs\n";

#[test]
fn a_gitignore_linked_to_dev_zero_is_not_read() {
    let ws = sources();
    std::os::unix::fs::symlink("/dev/zero", ws.root().join(".gitignore")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", ws.root().join("src/.ignore")).unwrap();
    let r = call_promptly(&ws.registry, "glob", json!({"pattern": "*.rs"}));
    assert_eq!(
        ok(&r),
        format!(
            "{ALL_RS}\n[Ignore files not applied: `.gitignore` is a symbolic link; `src/.ignore` \
             is a symbolic link. Ignore files are applied only when they are regular files of at \
             most 1 MiB inside the workspace.]"
        )
    );
    let r = call_promptly(&ws.registry, "grep", json!({"pattern": "needle"}));
    assert!(
        ok(&r).starts_with("3 matching lines in 3 files"),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("`.gitignore` is a symbolic link"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn rules_of_a_gitignore_linked_outside_the_root_do_not_apply() {
    let ws = sources();
    std::fs::write(ws.outside().join("rules"), "*.rs\nnotes.md\n").unwrap();
    std::os::unix::fs::symlink(ws.outside().join("rules"), ws.root().join(".gitignore")).unwrap();
    std::os::unix::fs::symlink("../../outside/rules", ws.root().join("src/.gitignore")).unwrap();
    let r = ws.call("glob", json!({"pattern": "*.rs"})).await;
    let text = ok(&r);
    assert!(text.starts_with(ALL_RS), "{text}");
    assert!(
        text.contains("`.gitignore` is a symbolic link; `src/.gitignore` is a symbolic link."),
        "{text}"
    );
    // A search of a subdirectory reads the root's ignore files the same way.
    let r = ws
        .call("grep", json!({"pattern": "needle", "path": "src"}))
        .await;
    let text = ok(&r);
    assert!(text.starts_with("2 matching lines in 2 files"), "{text}");
    assert!(text.contains("`.gitignore` is a symbolic link"), "{text}");
}

#[test]
fn a_fifo_named_like_an_ignore_file_neither_hangs_nor_applies() {
    let ws = sources();
    mkfifo(&ws.root().join(".gitignore"));
    mkfifo(&ws.root().join("src/.ignore"));
    let note = "[Ignore files not applied: `.gitignore` is not a regular file (a FIFO, socket or \
                device); `src/.ignore` is not a regular file (a FIFO, socket or device).";
    for (tool, args) in [
        ("glob", json!({"pattern": "*.rs"})),
        ("grep", json!({"pattern": "needle"})),
        ("grep", json!({"pattern": "needle", "path": "src"})),
    ] {
        // Returning at all means the blocking thread that ran the call is free again.
        let r = call_promptly(&ws.registry, tool, args);
        assert!(
            ok(&r).contains(note) || r.content.contains("`.gitignore` is not a regular file"),
            "{tool}: {}",
            r.content
        );
    }
}

#[tokio::test]
async fn an_ignore_file_over_1_mib_is_not_applied_and_the_result_says_so() {
    let ws = sources();
    let mut big = String::from("*.rs\n");
    while big.len() <= 1024 * 1024 {
        big.push_str("# a comment line that pads the file past the limit\n");
    }
    ws.put(".gitignore", &big);
    ws.put("src/.ignore", "lib.rs\n");
    let r = ws.call("glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(
        ok(&r),
        "1 file matches `*.rs` in `.`:\nsrc/main.rs\n\n[Ignore files not applied: `.gitignore` is \
         larger than 1 MiB. Ignore files are applied only when they are regular files of at most \
         1 MiB inside the workspace.]"
    );
    // At the limit it applies.
    ws.put(".gitignore", &big[..1024 * 1024]);
    let r = ws.call("glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(
        ok(&r),
        "No files match `*.rs` in `.`. Hidden files and files ignored by .gitignore were skipped; \
         pass `include_ignored: true` to search them too."
    );
}

/// The precedence of ripgrep's walker: deeper rules win within a kind, `.ignore` wins over
/// `.gitignore`, which wins over `.git/info/exclude`; a whitelisted hidden file is searched. A
/// search of a subdirectory lists exactly what a search of the root lists below it (the rules
/// of the directories above it take part with the same precedence).
#[tokio::test]
async fn ignore_rules_keep_ripgrep_precedence() {
    let ws = Workspace::new();
    ws.put(".gitignore", "*.log\n!keep.log\n!.env\nbuild/\n");
    ws.put(".ignore", "secret.txt\n");
    ws.put(".git/info/exclude", "excluded.txt\nsrc/exclude-me.txt\n");
    ws.put("src/.gitignore", "!*.log\nlocal.txt\n");
    ws.put("src/.ignore", "!secret.txt\n");
    for file in [
        "a.log",
        "keep.log",
        ".env",
        ".hidden",
        "secret.txt",
        "excluded.txt",
        "plain.txt",
        "build/out.txt",
        "src/b.log",
        "src/secret.txt",
        "src/local.txt",
        "src/exclude-me.txt",
        "src/deep/c.log",
        "src/deep/local.txt",
    ] {
        ws.put(file, "x\n");
    }
    let r = ws.call("glob", json!({"pattern": "*"})).await;
    assert_eq!(
        ok(&r),
        "6 files match `*` in `.`:\n.env\nkeep.log\nplain.txt\nsrc/b.log\nsrc/deep/c.log\n\
         src/secret.txt\n"
    );
    let r = ws
        .call("glob", json!({"pattern": "*", "path": "src"}))
        .await;
    assert_eq!(
        ok(&r),
        "3 files match `*` in `src`:\nsrc/b.log\nsrc/deep/c.log\nsrc/secret.txt\n"
    );
}
