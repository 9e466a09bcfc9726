//! The examples report a failure as the error's message and its causes, not as its `Debug` form.

use std::path::PathBuf;
use std::process::Command;

/// The `quickstart` example next to this test binary (`target/<profile>/examples/`).
/// `cargo test --workspace` builds the examples before running tests; run alone
/// (`cargo test --test all`), this test builds it first.
fn quickstart() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps");
    let binary = profile_dir.join("examples/quickstart");
    if binary.is_file() {
        return binary;
    }
    let target_dir = profile_dir.parent().expect("target/<profile>");
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build
        .args([
            "build",
            "--quiet",
            "--example",
            "quickstart",
            "--target-dir",
        ])
        .arg(target_dir);
    if profile_dir.ends_with("release") {
        build.arg("--release");
    }
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "building the quickstart example failed");
    binary
}

#[test]
fn a_failing_example_prints_the_error_message_not_its_debug_form() {
    let out = Command::new(quickstart())
        .env("HARNESSX_MODEL", "bogus:model")
        .output()
        .expect("the example runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "error: HARNESSX_MODEL: the model spec `bogus:model` names the unknown provider `bogus`"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("Error: "), "{stderr}");
}
