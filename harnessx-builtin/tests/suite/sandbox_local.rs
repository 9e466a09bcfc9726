//! LocalSandbox: commands on the host, in a chosen directory; the file tools stay on the host.

use std::sync::Arc;

use harnessx::{BoxFuture, Sandbox, SandboxError};
use harnessx_builtin::LocalSandbox;

use super::bash_support::{fast_options, registry_with, run, scratch_dir};

#[tokio::test]
async fn runs_on_the_host_in_its_working_directory() {
    let dir = scratch_dir("local-cwd");
    let sandbox = LocalSandbox::new().with_working_dir(&dir);
    assert!(sandbox.filesystem_root().is_none());
    assert_eq!(
        sandbox.summary(),
        format!(
            "Commands run on the host as the current user, starting in {}.",
            dir.display()
        )
    );
    assert_eq!(
        LocalSandbox::new().summary(),
        "Commands run on the host as the current user."
    );
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

/// A sandbox that only names itself and relies on the trait's defaults; `Named(Some(p))` runs
/// the program `p` instead of bash.
struct Named(Option<&'static str>);

impl Sandbox for Named {
    fn name(&self) -> &str {
        "named"
    }
    fn filesystem_root(&self) -> Option<&std::path::Path> {
        None
    }
    fn start(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async { Ok(()) })
    }
    fn command(&self, script: &str) -> Result<tokio::process::Command, SandboxError> {
        let mut command = tokio::process::Command::new(self.0.unwrap_or("bash"));
        command.arg("-c").arg(script);
        Ok(command)
    }
}

#[tokio::test]
async fn a_custom_sandbox_gets_the_defaults() {
    assert_eq!(
        Named(None).summary(),
        "Commands run in the `named` sandbox."
    );
    let registry = harnessx::ToolRegistry::new();
    registry.set_sandbox(Some(Arc::new(Named(None))));
    harnessx_builtin::register_bash_tools(&registry, fast_options()).unwrap();
    let description = registry.get_tool("run_bash").unwrap().description;
    assert!(description.contains("Commands run in the `named` sandbox."));
    // The default `command_with_env` sets the variables on the command.
    let result = run(&registry, "echo $GIT_PAGER", None).await;
    assert_eq!(result.content, "cat\n[exit code 0]");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_reported() {
    let registry = registry_with(fast_options());
    registry.set_sandbox(Some(Arc::new(Named(Some("/nonexistent/shell")))));
    let result = run(&registry, "true", None).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "the named sandbox cannot start: could not start the command: No such file or directory \
         (os error 2). The command did not run. This is a problem with the tool's setup, not with \
         your command: tell the user."
    );
}
