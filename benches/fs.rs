//! Filesystem bundle benchmarks: `grep` and `glob` against the `rg` binary over a generated
//! tree of 100,000 files, and the peak memory of `read_file` near the end of a 1 GiB file.
//!
//! Run: `cargo bench --bench fs` (needs `rg` on PATH; Debian package `ripgrep`). The tree and the
//! large file are generated under `/tmp/harnessx-fs-bench` once and reused.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use harnessx::{ToolCall, ToolRegistry};
use harnessx_builtin::fs::DEFAULT_MAX_SEARCH_RESULTS;
use harnessx_builtin::{FilesystemOptions, register_filesystem_tools};
use serde_json::{Value, json};

mod common;

use common::env_number;

const BENCH_DIR: &str = "/tmp/harnessx-fs-bench";
const TOP_DIRS: usize = 100;
const SUB_DIRS: usize = 10;
const FILES_PER_DIR: usize = 100;
const GREP_PATTERN: &str = "needle_[0-9]+";
/// The result cap of both sides: harnessx's default `max_search_results`.
const MAX_RESULTS: usize = DEFAULT_MAX_SEARCH_RESULTS;
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

async fn run_tool(registry: &ToolRegistry, name: &str, args: Value) -> String {
    let result = registry
        .execute(&ToolCall::json("bench", name, args), None)
        .await;
    assert!(!result.is_error, "{name} failed: {}", result.content);
    result.content
}

/// Runs `rg` in `dir` (so it prints paths relative to it, as harnessx shows them) with its
/// output piped to this process and read whole, as a caller would consume it. (Not
/// `/dev/null`: ripgrep detects that and stops at the first match of each file.)
fn rg(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("rg")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("`rg` must be installed (Debian package `ripgrep`)");
    assert!(out.status.success(), "rg {args:?} failed: {}", out.status);
    out.stdout
}

/// `rg`'s arguments for the grep comparison: one `path:line:text` line per match, as harnessx
/// lists them (no headings, no colour, no per-file grouping), searching the current directory.
const RG_GREP_ARGS: [&str; 5] = [
    "--no-heading",
    "--with-filename",
    "--line-number",
    "--color=never",
    GREP_PATTERN,
];

/// What harnessx's `grep` returns, built from `rg`'s output: the count of lines and files, the
/// first `max` matches in (path, line) order as `path:line: text`, and the footer. `rg` runs on
/// both cores and prints in the order its threads finish, so the consumer selects and sorts;
/// the lines of the bench tree are short, so no line needs harnessx's long-line preview.
fn grep_output_from_rg(stdout: &[u8], pattern: &str, max: usize) -> String {
    let text = std::str::from_utf8(stdout).expect("rg printed UTF-8");
    let mut matches: Vec<(&Path, u64, &str)> = text
        .lines()
        .map(|l| {
            let (path, rest) = l.split_once(':').expect("path:line:text");
            let (line, text) = rest.split_once(':').expect("line:text");
            (
                Path::new(path),
                line.parse().expect("a line number"),
                text.trim_end_matches('\r'),
            )
        })
        .collect();
    let lines = matches.len();
    let files = {
        let mut paths: Vec<&Path> = matches.iter().map(|m| m.0).collect();
        paths.sort_unstable();
        paths.dedup();
        paths.len()
    };
    if lines > max {
        matches.select_nth_unstable_by(max, |a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        matches.truncate(max);
    }
    matches.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let mut out = format!("{lines} matching lines in {files} files for `{pattern}`:\n");
    for (path, line, text) in &matches {
        writeln!(out, "{}:{line}: {text}", path.display()).expect("write to a String");
    }
    if lines > matches.len() {
        write!(
            out,
            "\n[{} more matching lines are not shown ({lines} in all). Narrow the pattern, the \
             path or the glob to see them.]",
            lines - matches.len()
        )
        .expect("write to a String");
    }
    out
}

/// What harnessx's `glob` with the pattern `*` returns, built from `rg --files`: the count, the
/// first `max` paths in order, and the footer.
fn glob_output_from_rg(stdout: &[u8], max: usize) -> String {
    let text = std::str::from_utf8(stdout).expect("rg printed UTF-8");
    let mut paths: Vec<&Path> = text.lines().map(Path::new).collect();
    let total = paths.len();
    if total > max {
        paths.select_nth_unstable(max);
        paths.truncate(max);
    }
    paths.sort_unstable();
    let mut out = format!("{total} files match `*` in `.`:\n");
    for path in &paths {
        writeln!(out, "{}", path.display()).expect("write to a String");
    }
    if total > max {
        write!(
            out,
            "\n[{} more files matched and are not shown ({total} in all). Narrow the pattern or \
             the path to see them.]",
            total - max
        )
        .expect("write to a String");
    }
    out
}

/// The ripgrep side of `fs_grep`: run `rg`, read its whole output, produce harnessx's result.
fn rg_grep(tree: &Path) -> String {
    grep_output_from_rg(&rg(tree, &RG_GREP_ARGS), GREP_PATTERN, MAX_RESULTS)
}

/// The ripgrep side of `fs_glob`.
fn rg_glob(tree: &Path) -> String {
    glob_output_from_rg(&rg(tree, &["--files"]), MAX_RESULTS)
}

fn hx_grep(registry: &ToolRegistry) -> impl Future<Output = String> + '_ {
    run_tool(registry, "grep", json!({"pattern": GREP_PATTERN}))
}

fn hx_glob(registry: &ToolRegistry) -> impl Future<Output = String> + '_ {
    run_tool(registry, "glob", json!({"pattern": "*"}))
}

/// Checks, before anything is timed, that both sides of each comparison give the same text.
fn assert_same_output(runtime: &tokio::runtime::Runtime, registry: &ToolRegistry, tree: &Path) {
    let ours = runtime.block_on(hx_grep(registry));
    let theirs = rg_grep(tree);
    assert_eq!(ours, theirs, "grep: harnessx and rg disagree");
    assert!(
        ours.contains("more matching lines are not shown"),
        "the grep comparison must hit the result cap: {}",
        &ours[..ours.len().min(200)]
    );
    let ours = runtime.block_on(hx_glob(registry));
    assert_eq!(ours, rg_glob(tree), "glob: harnessx and rg disagree");
    println!(
        "outputs checked: harnessx and rg give the same grep and glob results (cap {MAX_RESULTS})"
    );
}

fn search_benches(
    c: &mut Criterion,
    runtime: &tokio::runtime::Runtime,
    registry: &ToolRegistry,
    tree: &Path,
) {
    let mut group = c.benchmark_group("fs_grep");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("harnessx", |b| {
        b.to_async(runtime).iter(|| hx_grep(registry))
    });
    group.bench_function("ripgrep", |b| b.iter(|| rg_grep(tree)));
    group.finish();

    let mut group = c.benchmark_group("fs_glob");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("harnessx", |b| {
        b.to_async(runtime).iter(|| hx_glob(registry))
    });
    group.bench_function("ripgrep", |b| b.iter(|| rg_glob(tree)));
    group.finish();
}

/// CPU time used so far by this process and by its waited-for children (`rg`), in seconds,
/// from `/proc/self/stat` (clock ticks of 10 ms; summed over rounds that is precise enough).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which is in parentheses and may hold spaces).
    let after = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime, stime, cutime, cstime are fields 14..=17 of the line, 12..=15 after the name.
    let ticks: f64 = fields.get(11..15).map_or(0.0, |f| {
        f.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
    });
    ticks / 100.0
}

/// One side's figures over the interleaved rounds.
struct Side {
    /// Wall-clock milliseconds of each round.
    wall: Vec<f64>,
    /// CPU seconds of all rounds together (this process and `rg`).
    cpu: f64,
}

/// Times both sides in alternating rounds (the side that goes first alternates too), so that a
/// change of load on the shared machine falls on both.
fn interleaved(rounds: usize, mut ours: impl FnMut(), mut theirs: impl FnMut()) -> (Side, Side) {
    let time = |f: &mut dyn FnMut(), side: &mut Side| {
        let (started, cpu) = (Instant::now(), cpu_seconds());
        f();
        side.wall.push(started.elapsed().as_secs_f64() * 1e3);
        side.cpu += cpu_seconds() - cpu;
    };
    let new = || Side {
        wall: Vec::new(),
        cpu: 0.0,
    };
    let (mut a, mut b) = (new(), new());
    for round in 0..rounds {
        if round % 2 == 0 {
            time(&mut ours, &mut a);
            time(&mut theirs, &mut b);
        } else {
            time(&mut theirs, &mut b);
            time(&mut ours, &mut a);
        }
    }
    (a, b)
}

/// Prints the medians, the CPU time per call and both ratios of one comparison.
fn report(group: &str, rounds: usize, mut ours: Side, mut theirs: Side) {
    let (a, b) = (median(&mut ours.wall), median(&mut theirs.wall));
    let per_call = |cpu: f64| cpu * 1e3 / rounds as f64;
    let (ca, cb) = (per_call(ours.cpu), per_call(theirs.cpu));
    println!(
        "{group} interleaved ({rounds} rounds): wall medians harnessx {a:.1} ms, ripgrep {b:.1} ms, \
         ratio {:.2}x; CPU per call harnessx {ca:.0} ms, ripgrep {cb:.0} ms, ratio {:.2}x",
        a / b,
        ca / cb
    );
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn interleaved_ratios(runtime: &tokio::runtime::Runtime, registry: &ToolRegistry, tree: &Path) {
    let rounds = env_number("FS_BENCH_ROUNDS").unwrap_or(11);
    let (ours, theirs) = interleaved(
        rounds,
        || drop(runtime.block_on(hx_grep(registry))),
        || drop(rg_grep(tree)),
    );
    report("fs_grep", rounds, ours, theirs);
    let (ours, theirs) = interleaved(
        rounds,
        || drop(runtime.block_on(hx_glob(registry))),
        || drop(rg_glob(tree)),
    );
    report("fs_glob", rounds, ours, theirs);
}

fn median_ns(group: &str, id: &str) -> Option<f64> {
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
    let path = Path::new(&target)
        .join("criterion")
        .join(group)
        .join(id)
        .join("new/estimates.json");
    let estimates: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

fn print_ratios() {
    for group in ["fs_grep", "fs_glob"] {
        match (median_ns(group, "harnessx"), median_ns(group, "ripgrep")) {
            (Some(ours), Some(rg)) => println!(
                "{group} criterion medians: harnessx {:.1} ms, ripgrep {:.1} ms, ratio {:.2}x",
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
    let bytes = runtime
        .block_on(run_tool(
            &registry,
            "read_file",
            json!({"path": "large-1g.log", "offset": LARGE_LINES - 9, "limit": 10}),
        ))
        .len();
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
    let rg_version = Command::new("rg")
        .arg("--version")
        .output()
        .expect("`rg` must be installed (Debian package `ripgrep`)");
    let rg_version = String::from_utf8_lossy(&rg_version.stdout);
    println!(
        "{}",
        rg_version.lines().next().unwrap_or("rg: unknown version")
    );
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let registry = registry_for(&tree);
    assert_same_output(&runtime, &registry, &tree);
    let mut criterion = Criterion::default().configure_from_args();
    search_benches(&mut criterion, &runtime, &registry, &tree);
    criterion.final_summary();
    print_ratios();
    interleaved_ratios(&runtime, &registry, &tree);
    measure_read_tail();
}
