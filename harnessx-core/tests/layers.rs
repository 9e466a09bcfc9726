//! The core's modules form layers, and a lower layer never imports a higher one:
//!
//! 0. the vocabulary — `error`, `output`, `tool`, `schema`, `context`, `sandbox`, `model`,
//!    `permissions`, `frontmatter`, `question`: what a tool, a call, a result, a question to a
//!    person and a model turn are;
//! 1. `registry`: the tools an agent has, and the lane its serial tools take turns on;
//! 2. `engine`, `hooks` and `telemetry`: executing calls (with the calls' half of the journal
//!    seam, `engine::call_journal`), and the spans of runs, model requests and calls (the agent
//!    hands its errors to the spans through a trait);
//! 3. `journal`: the seam a durable runtime drives the loop through (model turns on top of the
//!    engine's calls);
//! 4. `agent`, `planning`, `subagent`: the loop.
//!
//! This test reads the crate's source and fails on any `crate::<module>` path (outside comments
//! and `#[cfg(test)]` modules) that reaches a higher layer.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn layer(module: &str) -> Option<u8> {
    Some(match module {
        "error" | "output" | "tool" | "schema" | "context" | "sandbox" | "model"
        | "permissions" | "frontmatter" | "question" => 0,
        "registry" => 1,
        "engine" | "hooks" | "telemetry" => 2,
        "journal" => 3,
        "agent" | "planning" | "subagent" => 4,
        _ => return None,
    })
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the source folder is readable") {
        let path = entry.expect("a readable entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::<module>` paths of `text`, outside comments and the `#[cfg(test)]` module.
fn imports(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let code = code.split("//").next().unwrap_or_default();
        for (at, _) in code.match_indices("crate::") {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let module: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !module.is_empty() {
                found.insert(module);
            }
        }
    }
    found
}

#[test]
fn no_module_imports_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut unexpected = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|name| name.trim_end_matches(".rs").to_owned())
            .expect("a file name");
        let Some(from) = layer(&top) else {
            // `lib.rs` and `prelude.rs` re-export every layer.
            assert!(
                top == "lib" || top == "prelude",
                "`{}` is in no layer: add its module to `layer()`",
                relative.display()
            );
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a readable source file");
        for module in imports(&text) {
            let Some(to) = layer(&module) else { continue };
            if to > from {
                unexpected.push(format!(
                    "{} (layer {from}) imports `crate::{module}` (layer {to})",
                    relative.display()
                ));
            }
        }
    }
    assert!(
        unexpected.is_empty(),
        "lower layers must not import higher ones:\n{}",
        unexpected.join("\n")
    );
}

#[test]
fn the_scan_sees_paths_in_code_only() {
    let text = "use crate::engine::X;\n// crate::agent in a comment\nlet y = $crate::agent::Z;\n\
                fn f() { crate::journal::g() } // crate::telemetry\n#[cfg(test)]\nuse crate::hooks;";
    assert_eq!(
        imports(text).into_iter().collect::<Vec<_>>(),
        ["engine", "journal"]
    );
}
