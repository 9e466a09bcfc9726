//! LocalSandbox: commands on the host, in a chosen directory; the file tools stay on the host.

use std::sync::Arc;

use harnessx::Sandbox;
use harnessx_builtin::LocalSandbox;

use super::bash_support::{fast_options, registry_with, run, scratch_dir};

#[tokio::test]
async fn runs_on_the_host_in_its_working_directory() {
    let dir = scratch_dir("local-cwd");
    let sandbox = LocalSandbox::new().with_working_dir(&dir);
    assert!(sandbox.filesystem_root().is_none());
    let registry = registry_with(fast_options());
    registry.set_sandbox(Some(Arc::new(sandbox)));
    let result = run(&registry, "pwd; echo made > made.txt", None).await;
    assert_eq!(result.content, format!("{}\n[exit code 0]", dir.display()));
    assert_eq!(
        std::fs::read_to_string(dir.join("made.txt")).unwrap(),
        "made\n"
    );
}

#[tokio::test]
async fn a_missing_working_directory_is_explained() {
    let dir = scratch_dir("local-missing").join("nope");
    let sandbox = LocalSandbox::new().with_working_dir(&dir);
    let err = sandbox.start().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the local sandbox cannot start: its working directory {} does not exist or is not a \
             directory; create it or give `LocalSandbox::with_working_dir` an existing directory",
            dir.display()
        )
    );
    let registry = registry_with(fast_options());
    registry.set_sandbox(Some(Arc::new(sandbox)));
    let result = run(&registry, "true", None).await;
    assert!(result.is_error);
    assert!(
        result.content.ends_with(
            "an existing directory. The command did not run. This is a problem with the tool's \
             setup, not with your command: tell the user."
        ),
        "{}",
        result.content
    );
}
