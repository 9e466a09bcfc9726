//! BubblewrapSandbox: a real isolating sandbox that owns its filesystem.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use harnessx::Sandbox;
use harnessx_builtin::BubblewrapSandbox;
use serde_json::json;

use super::bash_support::{bwrap_available, fast_options, field, registry_with, run, scratch_dir};

fn sandboxed(sandbox: BubblewrapSandbox) -> harnessx::ToolRegistry {
    let registry = registry_with(fast_options());
    registry.set_sandbox(Some(Arc::new(sandbox)));
    registry
}

#[tokio::test]
async fn commands_cannot_read_or_write_host_files_outside_the_root() {
    if !bwrap_available().await {
        return;
    }
    let outside = scratch_dir("bwrap-outside");
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, "host secret").unwrap();
    let root = scratch_dir("bwrap-root");
    let registry = sandboxed(BubblewrapSandbox::new(&root).unwrap());

    let read = run(&registry, &format!("cat {}", secret.display()), None).await;
    assert!(!read.content.contains("host secret"), "{}", read.content);
    assert!(
        read.content.contains("No such file or directory"),
        "{}",
        read.content
    );
    assert_eq!(field(&read, "exit_code"), &json!(1));

    let write = run(
        &registry,
        &format!("echo pwned > {}/planted.txt", outside.display()),
        None,
    )
    .await;
    assert_ne!(field(&write, "exit_code"), &json!(0), "{}", write.content);
    assert!(!outside.join("planted.txt").exists());

    let system = run(&registry, "touch /usr/harnessx-probe", None).await;
    assert!(
        system.content.contains("Read-only file system"),
        "{}",
        system.content
    );
    assert!(!std::path::Path::new("/usr/harnessx-probe").exists());

    let hidden = run(
        &registry,
        "ls /root /home /work /etc/shadow 2>&1 | grep -c 'No such'",
        None,
    )
    .await;
    assert_eq!(hidden.content, "4\n[exit code 0]", "{}", hidden.content);
}

#[tokio::test]
async fn files_written_in_the_workspace_appear_in_the_host_root() {
    if !bwrap_available().await {
        return;
    }
    let root = scratch_dir("bwrap-workspace");
    std::fs::write(root.join("input.txt"), "from the host\n").unwrap();
    let sandbox = BubblewrapSandbox::new(&root).unwrap();
    assert_eq!(
        sandbox.filesystem_root(),
        Some(root.canonicalize().unwrap().as_path())
    );
    let registry = sandboxed(sandbox);
    let result = run(
        &registry,
        "pwd; echo $HOME; cat input.txt; mkdir -p out && echo made > out/made.txt",
        None,
    )
    .await;
    assert_eq!(
        result.content,
        "/workspace\n/workspace\nfrom the host\n[exit code 0]"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("out/made.txt")).unwrap(),
        "made\n"
    );
}

#[tokio::test]
async fn the_host_environment_does_not_leak_in() {
    if !bwrap_available().await {
        return;
    }
    // Cargo sets CARGO_MANIFEST_DIR for this test process; the sandbox must not see it.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let registry = sandboxed(
        BubblewrapSandbox::temporary()
            .unwrap()
            .env("PROJECT", "demo"),
    );
    let result = run(
        &registry,
        r#"echo "[${CARGO_MANIFEST_DIR:-unset}] $PAGER $GIT_TERMINAL_PROMPT $PROJECT""#,
        None,
    )
    .await;
    assert_eq!(result.content, "[unset] cat 0 demo\n[exit code 0]");
}

#[tokio::test]
async fn the_network_is_off_unless_shared() {
    if !bwrap_available().await {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let isolated = sandboxed(BubblewrapSandbox::temporary().unwrap());
    let off = run(&isolated, &script, Some(10.0)).await;
    assert!(!off.content.contains("connected\n"), "{}", off.content);
    assert_ne!(field(&off, "exit_code"), &json!(0));

    let shared = sandboxed(BubblewrapSandbox::temporary().unwrap().share_network(true));
    let on = run(&shared, &script, Some(10.0)).await;
    assert_eq!(on.content, "connected\n[exit code 0]");
}

#[tokio::test]
async fn a_timeout_ends_every_process_in_the_sandbox() {
    if !bwrap_available().await {
        return;
    }
    let sandbox = BubblewrapSandbox::temporary().unwrap();
    let beat = sandbox.root().join("beat");
    let registry = sandboxed(sandbox);
    // A grandchild appends a heartbeat every 20 ms until something kills it.
    let result = run(
        &registry,
        "(while :; do echo . >> /workspace/beat; sleep 0.02; done) & echo started; sleep 100",
        Some(1.5),
    )
    .await;
    assert_eq!(
        field(&result, "timed_out"),
        &json!(true),
        "{}",
        result.content
    );
    assert!(
        result
            .content
            .starts_with("started\n[timed out after 1.5 s")
    );
    let beats = || std::fs::metadata(&beat).map(|m| m.len()).unwrap_or(0);
    let after_timeout = beats();
    assert!(after_timeout > 0, "the grandchild never ran");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        beats(),
        after_timeout,
        "a sandboxed process outlived the timeout"
    );
}

#[tokio::test]
async fn a_background_child_does_not_hang_a_sandboxed_command() {
    if !bwrap_available().await {
        return;
    }
    let registry = sandboxed(BubblewrapSandbox::temporary().unwrap());
    let result = run(&registry, "sleep 100 & echo started", Some(15.0)).await;
    assert_eq!(field(&result, "timed_out"), &json!(false));
    assert!(
        result.content.starts_with("started\n[exit code 0]"),
        "{}",
        result.content
    );
}

#[test]
fn the_description_tells_the_model_about_the_sandbox() {
    let registry = harnessx::ToolRegistry::new();
    registry.set_sandbox(Some(Arc::new(BubblewrapSandbox::temporary().unwrap())));
    harnessx_builtin::register_bash_tools(&registry, fast_options()).unwrap();
    let description = registry.get_tool("run_bash").unwrap().description;
    assert!(
        description.contains(
            "Commands run in an isolated sandbox. Its working directory /workspace (also `HOME`) \
             is the only place whose files persist between commands; `/tmp` is empty at the \
             start of every command; the system directories are read-only and the rest of the \
             host is not visible. Commands run as an unprivileged user without root rights \
             (installing system packages is not possible). There is no network access."
        ),
        "{description}"
    );
    let shared = BubblewrapSandbox::temporary().unwrap().share_network(true);
    assert!(
        shared
            .summary()
            .ends_with("The network is shared with the host.")
    );
}

#[tokio::test]
async fn a_temporary_sandbox_removes_its_root_when_dropped() {
    let sandbox = BubblewrapSandbox::temporary().unwrap();
    let root = sandbox.root().to_owned();
    assert!(root.is_dir());
    assert_eq!(
        sandbox.mount_point_path(),
        std::path::Path::new("/workspace")
    );
    drop(sandbox);
    assert!(!root.exists());
}

#[tokio::test]
async fn a_missing_bwrap_is_explained() {
    let sandbox = BubblewrapSandbox::temporary()
        .unwrap()
        .program("/nonexistent/bwrap");
    let err = sandbox.start().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the bubblewrap sandbox cannot start: bubblewrap (`/nonexistent/bwrap`) is not installed \
         or not on PATH. Install it (Debian and Ubuntu: `apt-get install bubblewrap`; Fedora: \
         `dnf install bubblewrap`; Arch: `pacman -S bubblewrap`) or point \
         `BubblewrapSandbox::program` at the binary"
    );
    let registry = sandboxed(sandbox);
    let result = run(&registry, "true", None).await;
    assert!(result.is_error);
    assert!(
        result.content.contains("The command did not run."),
        "{}",
        result.content
    );
}

/// A stand-in for `bwrap` on a machine whose kernel refuses user namespaces: it fails the way
/// bwrap does there. Only the error path is exercised with it.
fn refusing_bwrap(stderr: &str) -> std::path::PathBuf {
    stand_in(&format!("echo '{stderr}' >&2\nexit 1"))
}

/// An executable shell script standing in for `bwrap`.
fn stand_in(body: &str) -> std::path::PathBuf {
    let dir = scratch_dir(&format!("fake-bwrap-{}", body.len()));
    let path = dir.join("bwrap");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write the stand-in");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("make the stand-in executable");
    path
}

#[tokio::test]
async fn refused_namespaces_are_explained() {
    let program = refusing_bwrap(
        "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.",
    );
    let sandbox = BubblewrapSandbox::temporary().unwrap().program(&program);
    let err = sandbox.start().await.unwrap_err().to_string();
    assert_eq!(
        err,
        "the bubblewrap sandbox cannot start: the kernel refused to create the namespaces it \
         needs (bwrap said: bwrap: No permissions to creating new namespace, likely because the \
         kernel does not allow non-privileged user namespaces.). Allow user namespaces, which \
         the sandbox needs even when the process runs as root (`sysctl -w \
         kernel.unprivileged_userns_clone=1` on Debian, `sysctl -w \
         user.max_user_namespaces=15000`, and on Ubuntu 23.10 or later `sysctl -w \
         kernel.apparmor_restrict_unprivileged_userns=0`); inside a container, the container \
         must allow namespaces (for Docker: `--security-opt seccomp=unconfined --security-opt \
         apparmor=unconfined`, or `--privileged`)"
    );
}

#[tokio::test]
async fn other_bwrap_failures_show_what_it_said() {
    let program = refusing_bwrap("bwrap: something else broke");
    let sandbox = BubblewrapSandbox::temporary().unwrap().program(&program);
    let err = sandbox.start().await.unwrap_err().to_string();
    assert_eq!(
        err,
        "the bubblewrap sandbox cannot start: bwrap failed to run a trivial command (exit status: \
         1): bwrap: something else broke"
    );
}

#[tokio::test]
async fn a_hanging_or_unrunnable_bwrap_is_explained() {
    let program = stand_in("exec /bin/sleep 30");
    let sandbox = BubblewrapSandbox::temporary()
        .unwrap()
        .program(&program)
        .start_timeout(Duration::from_millis(200));
    let err = sandbox.start().await.unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "the bubblewrap sandbox cannot start: `{}` did not run a trivial command within 0.2 s; \
             check that it is bubblewrap and that the machine is not overloaded, or allow more \
             time with `BubblewrapSandbox::start_timeout`",
            program.display()
        )
    );

    let not_executable = scratch_dir("bwrap-not-executable").join("bwrap");
    std::fs::write(&not_executable, "not a program").unwrap();
    let sandbox = BubblewrapSandbox::temporary()
        .unwrap()
        .program(&not_executable);
    let err = sandbox.start().await.unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "the bubblewrap sandbox cannot start: `{}` could not be run (Permission denied (os \
             error 13)); check that it is an executable bubblewrap binary",
            not_executable.display()
        )
    );
}

#[tokio::test]
async fn a_bad_mount_point_is_refused() {
    for mount_point in ["workspace", "/usr", "/a/../etc", "/usr/local/ws", "/proc/x"] {
        let sandbox = BubblewrapSandbox::temporary()
            .unwrap()
            .mount_point(mount_point);
        let err = sandbox.start().await.unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "the bubblewrap sandbox cannot start: its mount point {mount_point} is not usable: \
                 give `mount_point` an absolute path without `.` or `..` that is not a system \
                 directory (for example /workspace)"
            )
        );
        assert!(sandbox.command("true").is_err());
    }
}

#[tokio::test]
async fn a_custom_mount_point_and_read_only_binds_work() {
    if !bwrap_available().await {
        return;
    }
    let shared = scratch_dir("bwrap-ro");
    std::fs::write(shared.join("ref.txt"), "reference\n").unwrap();
    let sandbox = BubblewrapSandbox::temporary()
        .unwrap()
        .mount_point("/home/agent")
        .read_only(&shared, "/opt/ref");
    let registry = sandboxed(sandbox);
    let result = run(
        &registry,
        "pwd; cat /opt/ref/ref.txt; { echo x > /opt/ref/new.txt; } 2>/dev/null || echo refused",
        None,
    )
    .await;
    assert_eq!(
        result.content,
        "/home/agent\nreference\nrefused\n[exit code 0]"
    );
    assert!(!shared.join("new.txt").exists());
}
