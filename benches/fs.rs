//! Filesystem bundle benchmarks: `grep` and `glob` against the `rg` binary over a generated
//! tree of 100,000 files, and the peak memory of `read_file` near the end of a 1 GiB file.
//!
//! Run: `cargo bench --bench fs` (needs `rg` on PATH; Debian package `ripgrep`). The tree and the
//! large file are generated under `/tmp/harnessx-fs-bench` once and reused.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use harnessx::{ToolCall, ToolRegistry};
use harnessx_builtin::{FilesystemOptions, register_filesystem_tools};
use serde_json::{Value, json};

const BENCH_DIR: &str = "/tmp/harnessx-fs-bench";
const TOP_DIRS: usize = 100;
const SUB_DIRS: usize = 10;
const FILES_PER_DIR: usize = 100;
const GREP_PATTERN: &str = "needle_[0-9]+";
/// 1 GiB of 64-byte lines.
const LARGE_LINES: u64 = 16 * 1024 * 1024;
const CHILD_ENV: &str = "HARNESSX_FS_BENCH_READ_TAIL";

fn tree_dir() -> PathBuf {
    Path::new(BENCH_DIR).join("tree")
}

/// Generates the tree of `TOP_DIRS * SUB_DIRS * FILES_PER_DIR` text files, unless present.
fn ensure_tree() -> PathBuf {
    let tree = tree_dir();
    let done = Path::new(BENCH_DIR).join("tree.complete");
    if done.exists() {
        return tree;
    }
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(&tree);
    let mut n = 0usize;
    for top in 0..TOP_DIRS {
        for sub in 0..SUB_DIRS {
            let dir = tree.join(format!("module_{top:03}/part_{sub:02}"));
            std::fs::create_dir_all(&dir).expect("create bench dir");
            for f in 0..FILES_PER_DIR {
                let ext = if f.is_multiple_of(3) { "txt" } else { "rs" };
                let mut text = String::with_capacity(1200);
                for line in 0..24 {
                    text.push_str(&format!(
                        "fn item_{n}_{line}(value: u64) -> u64 {{ value * {line} + {f} }}\n"
                    ));
                }
                if n.is_multiple_of(97) {
                    text.push_str(&format!("// needle_{n} marks this file\n"));
                }
                std::fs::write(dir.join(format!("file_{f:03}.{ext}")), text).expect("write");
                n += 1;
            }
        }
    }
    std::fs::write(&done, n.to_string()).expect("marker");
    eprintln!("generated {n} files in {:?}", started.elapsed());
    tree
}

fn registry_for(root: &Path) -> ToolRegistry {
    let registry = ToolRegistry::builder()
        .default_timeout_seconds(600.0)
        .build();
    register_filesystem_tools(
        &registry,
        FilesystemOptions {
            base_path: Some(root.to_owned()),
            ..FilesystemOptions::default()
        },
    )
    .expect("register the filesystem tools");
    registry
}

async fn run_tool(registry: &ToolRegistry, name: &str, args: Value) -> usize {
    let result = registry
        .execute(&ToolCall::json("bench", name, args), None)
        .await;
    assert!(!result.is_error, "{name} failed: {}", result.content);
    result.content.len()
}

/// Runs `rg` with its output piped to this process and read whole, as a caller would consume
/// it. (Not `/dev/null`: ripgrep detects that and stops at the first match of each file.)
fn rg(args: &[&str]) -> usize {
    let out = Command::new("rg")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("`rg` must be installed (Debian package `ripgrep`)");
    assert!(out.status.success(), "rg {args:?} failed: {}", out.status);
    out.stdout.len()
}

fn search_benches(c: &mut Criterion, tree: &Path) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let registry = registry_for(tree);
    let tree_str = tree.to_str().expect("utf-8 path");

    let mut group = c.benchmark_group("fs_grep");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("harnessx", |b| {
        b.to_async(&runtime)
            .iter(|| run_tool(&registry, "grep", json!({"pattern": GREP_PATTERN})))
    });
    group.bench_function("ripgrep", |b| b.iter(|| rg(&[GREP_PATTERN, tree_str])));
    group.finish();

    let mut group = c.benchmark_group("fs_glob");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("harnessx", |b| {
        b.to_async(&runtime)
            .iter(|| run_tool(&registry, "glob", json!({"pattern": "*"})))
    });
    group.bench_function("ripgrep", |b| b.iter(|| rg(&["--files", tree_str])));
    group.finish();
}

fn mean_ns(group: &str, id: &str) -> Option<f64> {
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
    let path = Path::new(&target)
        .join("criterion")
        .join(group)
        .join(id)
        .join("new/estimates.json");
    let estimates: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    estimates["mean"]["point_estimate"].as_f64()
}

fn print_ratios() {
    for group in ["fs_grep", "fs_glob"] {
        match (mean_ns(group, "harnessx"), mean_ns(group, "ripgrep")) {
            (Some(ours), Some(rg)) => println!(
                "{group}: harnessx {:.1} ms, ripgrep {:.1} ms, ratio {:.2}x",
                ours / 1e6,
                rg / 1e6,
                ours / rg
            ),
            _ => println!("{group}: no estimates found"),
        }
    }
}

fn ensure_large_file() -> PathBuf {
    let path = Path::new(BENCH_DIR).join("large-1g.log");
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == LARGE_LINES * 64) {
        return path;
    }
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(&path).expect("create the large file"),
    );
    let filler = "x".repeat(52);
    for i in 0..LARGE_LINES {
        // 10 digits + space + 52 + newline = 64 bytes.
        writeln!(out, "{i:010} {filler}").expect("write the large file");
    }
    out.flush().expect("flush the large file");
    path
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Runs in a fresh process so its peak RSS is the read's alone.
fn read_tail_child() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let registry = registry_for(Path::new(BENCH_DIR));
    let before = vm_hwm_kib();
    let started = Instant::now();
    let bytes = runtime.block_on(run_tool(
        &registry,
        "read_file",
        json!({"path": "large-1g.log", "offset": LARGE_LINES - 9, "limit": 10}),
    ));
    println!(
        "read_file offset={} of a 1 GiB file: {:.2} s, {bytes} bytes returned, peak RSS {} KiB \
         (before the call {} KiB)",
        LARGE_LINES - 9,
        started.elapsed().as_secs_f64(),
        vm_hwm_kib(),
        before
    );
}

fn measure_read_tail() {
    ensure_large_file();
    let exe = std::env::current_exe().expect("bench executable");
    let timed = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(&exe)
        .env(CHILD_ENV, "1")
        .output();
    match timed {
        Ok(out) => {
            print!("{}", String::from_utf8_lossy(&out.stdout));
            let stderr = String::from_utf8_lossy(&out.stderr);
            for line in stderr.lines().filter(|l| {
                l.contains("Maximum resident set size") || l.contains("Elapsed (wall clock)")
            }) {
                println!("/usr/bin/time -v: {}", line.trim());
            }
        }
        Err(_) => {
            let out = Command::new(&exe)
                .env(CHILD_ENV, "1")
                .output()
                .expect("run the read child");
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
    }
}

fn main() {
    if std::env::var_os(CHILD_ENV).is_some() {
        read_tail_child();
        return;
    }
    let tree = ensure_tree();
    let mut criterion = Criterion::default().configure_from_args();
    search_benches(&mut criterion, &tree);
    criterion.final_summary();
    print_ratios();
    measure_read_tail();
}
