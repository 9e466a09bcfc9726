//! BubblewrapSandbox privileges: commands run as an unprivileged user without capabilities,
//! whether the host process is root or not, so nothing outside the root can be written.
//!
//! These run as root on CI: that is where an earlier version kept every capability and let a
//! command remount `/usr` read-write.

use std::os::unix::fs::MetadataExt;
use std::sync::Arc;

use harnessx::{Sandbox, ToolRegistry};
use harnessx_builtin::BubblewrapSandbox;
use serde_json::json;

use super::bash_support::{bwrap_available, fast_options, field, registry_with, run, scratch_dir};

fn sandboxed(sandbox: BubblewrapSandbox) -> ToolRegistry {
    let registry = registry_with(fast_options());
    registry.set_sandbox(Some(Arc::new(sandbox)));
    registry
}

/// Whether bubblewrap can run here; under `CI` these tests must also run as root, the host on
/// which an earlier version kept every capability (as another user they would pass without
/// showing anything about that host).
async fn bwrap_as_root_under_ci() -> bool {
    if std::env::var_os("CI").is_some() {
        assert!(
            rustix::process::geteuid().is_root(),
            "with CI set the sandbox privilege tests must run as root (as .ci/run does), where \
             bwrap would otherwise keep every capability"
        );
    }
    bwrap_available().await
}

/// The lines of `/proc/self/status` that hold capability sets, as seen inside the sandbox.
const CAPABILITY_LINES: [&str; 5] = ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"];

#[tokio::test]
async fn commands_run_as_an_unprivileged_user_without_capabilities() {
    if !bwrap_as_root_under_ci().await {
        return;
    }
    let registry = sandboxed(BubblewrapSandbox::temporary().unwrap());
    let result = run(
        &registry,
        "id -u; id -g; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status",
        None,
    )
    .await;
    let expected: String = CAPABILITY_LINES
        .iter()
        .map(|name| format!("{name}:\t0000000000000000\n"))
        .collect();
    assert_eq!(
        result.content,
        format!("1000\n1000\n{expected}[exit code 0]"),
        "{}",
        result.content
    );

    let custom = sandboxed(BubblewrapSandbox::temporary().unwrap().user(4242, 4343));
    let ids = run(&custom, "id -u; id -g", None).await;
    assert_eq!(ids.content, "4242\n4343\n[exit code 0]");
}

#[tokio::test]
async fn read_only_binds_cannot_be_remounted_read_write() {
    if !bwrap_as_root_under_ci().await {
        return;
    }
    let shared = scratch_dir("bwrap-priv-ro");
    let sandbox = BubblewrapSandbox::temporary()
        .unwrap()
        .read_only(&shared, "/opt/ref");
    let registry = sandboxed(sandbox);
    // Every attempt to make a read-only mount writable, directly or from a nested user
    // namespace (where the caller would hold capabilities again), must fail.
    let attempts = [
        "mount -o remount,rw,bind /usr",
        "mount -o remount,rw /usr",
        "mount -o remount,rw,bind /etc/passwd",
        "mount -o remount,rw,bind /opt/ref",
        "mount -o remount,rw /",
        "mount -o remount,rw /dev",
        "mount --bind /workspace /usr",
        "mount -t tmpfs none /usr",
        "umount /usr",
        "unshare -Urm sh -c 'mount -o remount,rw,bind /usr && touch /usr/harnessx-escape'",
    ];
    for attempt in attempts {
        let result = run(&registry, &format!("{attempt} 2>&1; echo \"rc=$?\""), None).await;
        assert!(
            !result.content.contains("rc=0\n"),
            "`{attempt}` succeeded: {}",
            result.content
        );
    }
    let after = run(
        &registry,
        "touch /usr/harnessx-escape 2>&1; touch /opt/ref/planted 2>&1; echo done",
        None,
    )
    .await;
    assert!(
        after.content.contains("Read-only file system") && after.content.contains("done\n"),
        "{}",
        after.content
    );
    assert!(!std::path::Path::new("/usr/harnessx-escape").exists());
    assert!(!shared.join("planted").exists());
}

#[tokio::test]
async fn nothing_outside_the_workspace_tmp_and_shm_can_be_written() {
    if !bwrap_as_root_under_ci().await {
        return;
    }
    let sandbox = BubblewrapSandbox::temporary().unwrap();
    let root = sandbox.root().to_owned();
    let registry = sandboxed(sandbox);
    let script = r#"for p in /harnessx-probe /etc/harnessx-probe /usr/harnessx-probe \
        /usr/local/harnessx-probe /bin/harnessx-probe /lib/harnessx-probe /opt /home/probe \
        /var/probe /root/probe /dev/harnessx-probe /proc/harnessx-probe /sys/probe \
        /tmp/probe /dev/shm/probe /workspace/probe; do
        if (: > "$p") 2>/dev/null || mkdir "$p" 2>/dev/null; then echo "writable $p"; fi
    done"#;
    let result = run(&registry, script, None).await;
    assert_eq!(
        result.content,
        "writable /tmp/probe\nwritable /dev/shm/probe\nwritable /workspace/probe\n[exit code 0]",
        "{}",
        result.content
    );
    for host in [
        "/harnessx-probe",
        "/etc/harnessx-probe",
        "/usr/harnessx-probe",
        "/usr/local/harnessx-probe",
        "/dev/harnessx-probe",
    ] {
        assert!(!std::path::Path::new(host).exists(), "{host} on the host");
    }
    assert!(root.join("probe").is_file());
}

#[tokio::test]
async fn workspace_files_belong_to_the_host_user_and_stay_writable_both_ways() {
    if !bwrap_available().await {
        return;
    }
    let root = scratch_dir("bwrap-priv-owner");
    // A file the host process made: the sandbox user may change it.
    std::fs::write(root.join("host.txt"), "from the host\n").unwrap();
    let host_uid = std::fs::metadata(root.join("host.txt")).unwrap().uid();
    let registry = sandboxed(BubblewrapSandbox::new(&root).unwrap());
    let result = run(
        &registry,
        "echo appended >> host.txt && mkdir -p made/deeper && echo inside > made/deeper/f.txt \
         && stat -c '%u %U' host.txt made/deeper/f.txt",
        None,
    )
    .await;
    assert_eq!(field(&result, "exit_code"), &json!(0), "{}", result.content);
    // Inside, the host user's files belong to the sandbox user.
    assert!(
        result.content.starts_with("1000 ")
            && result
                .content
                .lines()
                .nth(1)
                .is_some_and(|l| l.starts_with("1000 ")),
        "{}",
        result.content
    );
    assert_eq!(
        std::fs::read_to_string(root.join("host.txt")).unwrap(),
        "from the host\nappended\n"
    );
    // On the host, what the command made belongs to the host process's user.
    for made in ["made", "made/deeper", "made/deeper/f.txt"] {
        assert_eq!(
            std::fs::metadata(root.join(made)).unwrap().uid(),
            host_uid,
            "{made}"
        );
    }
    // And the host process can change and remove it.
    std::fs::write(root.join("made/deeper/f.txt"), "rewritten\n").unwrap();
    std::fs::remove_dir_all(root.join("made")).unwrap();
}

#[tokio::test]
async fn a_root_user_inside_is_refused() {
    for (uid, gid) in [(0, 1000), (1000, 0)] {
        let sandbox = BubblewrapSandbox::temporary().unwrap().user(uid, gid);
        let err = sandbox.start().await.unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "the bubblewrap sandbox cannot start: its user would be root inside (uid {uid}, \
                 gid {gid}): give `BubblewrapSandbox::user` ids other than 0 (for example 1000 \
                 and 1000)"
            )
        );
        assert!(sandbox.command("true").is_err());
    }
}
