//! run_bash on the host: exit codes, environment, stdin, process groups, timeouts, background
//! children, cancellation and output capping.

use std::time::Duration;

use harnessx::{ToolContext, ToolErrorKind, ToolOptions};
use harnessx_builtin::bash::BashOptions;
use serde_json::json;

use super::bash_support::{
    fast_options, field, read_pid, registry_with, run, scratch_dir, wait_gone,
};

#[tokio::test]
async fn reports_output_and_exit_code() {
    let registry = registry_with(fast_options());
    let result = run(&registry, "echo out; echo err >&2; exit 7", None).await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(result.content, "out\nerr\n[exit code 7]");
    assert_eq!(field(&result, "exit_code"), &json!(7));
    assert_eq!(field(&result, "timed_out"), &json!(false));
    assert_eq!(field(&result, "signal"), &json!(null));

    let ok = run(&registry, "true", None).await;
    assert_eq!(ok.content, "(no output)\n[exit code 0]");
    assert_eq!(field(&ok, "exit_code"), &json!(0));
}

#[tokio::test]
async fn reports_a_killing_signal() {
    let registry = registry_with(fast_options());
    let result = run(&registry, "echo before; kill -9 $$", None).await;
    assert_eq!(result.content, "before\n[killed by signal 9]");
    assert_eq!(field(&result, "signal"), &json!(9));
    assert_eq!(field(&result, "exit_code"), &json!(null));
}

#[tokio::test]
async fn sets_non_interactive_environment() {
    let registry = registry_with(fast_options());
    let result = run(
        &registry,
        r#"echo "$PAGER|$GIT_PAGER|$GIT_TERMINAL_PROMPT""#,
        None,
    )
    .await;
    assert_eq!(result.content, "cat|cat|0\n[exit code 0]");
}

#[tokio::test]
async fn stdin_is_closed_so_reads_get_eof() {
    let registry = registry_with(fast_options());
    // With stdin open this would wait for the whole timeout.
    let result = run(&registry, r#"read x; echo "read exit $?"; cat"#, Some(15.0)).await;
    assert_eq!(result.content, "read exit 1\n[exit code 0]");
    assert_eq!(field(&result, "timed_out"), &json!(false));
}

#[tokio::test]
async fn runs_in_its_own_process_group() {
    let registry = registry_with(fast_options());
    let result = run(
        &registry,
        "echo \"$$ $(cut -d' ' -f5 /proc/$$/stat)\"",
        None,
    )
    .await;
    let line = result.content.lines().next().unwrap_or_default();
    let (pid, pgrp) = line.split_once(' ').expect("two numbers");
    assert_eq!(pid, pgrp, "bash leads its own process group: {line}");
    let own_pgrp = std::fs::read_to_string("/proc/self/stat").unwrap();
    let own_pgrp = own_pgrp
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(2)
        .unwrap();
    assert_ne!(pgrp, own_pgrp);
}

#[tokio::test]
async fn own_timeout_kills_the_whole_process_tree() {
    let dir = scratch_dir("timeout-tree");
    let pidfile = dir.join("grandchild.pid");
    let registry = registry_with(fast_options());
    let script = format!(
        "echo started; (sleep 100 & echo $! > {}; wait) & sleep 100",
        pidfile.display()
    );
    let result = run(&registry, &script, Some(2.0)).await;
    assert!(result.is_error);
    assert_eq!(result.error_kind, Some(ToolErrorKind::Failed));
    assert!(
        result.content.starts_with("started\n[timed out after 2 s: the command and its child processes were stopped with SIGTERM, then SIGKILL if still running after 300 ms; the output so far is shown above. It may have partly run: check its effects. Call again with a larger `timeout` (at most 20 s), or split the work into shorter steps.]"),
        "{}",
        result.content
    );
    assert_eq!(field(&result, "timed_out"), &json!(true));
    let grandchild = read_pid(&pidfile);
    assert!(
        wait_gone(grandchild, Duration::from_secs(5)).await,
        "the grandchild {grandchild} survived the timeout"
    );
}

#[tokio::test]
async fn a_command_ignoring_sigterm_is_killed_after_the_grace_period() {
    let dir = scratch_dir("ignore-term");
    let pidfile = dir.join("child.pid");
    let registry = registry_with(fast_options());
    let script = format!(
        "trap '' TERM; sleep 100 & echo $! > {}; wait; wait",
        pidfile.display()
    );
    let result = run(&registry, &script, Some(1.5)).await;
    assert_eq!(field(&result, "timed_out"), &json!(true));
    assert_eq!(field(&result, "signal"), &json!(9), "{}", result.content);
    let child = read_pid(&pidfile);
    assert!(wait_gone(child, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_background_child_holding_stdout_does_not_hang_the_tool() {
    let dir = scratch_dir("background");
    let pidfile = dir.join("bg.pid");
    let registry = registry_with(fast_options());
    let script = format!("sleep 100 & echo $! > {}; echo started", pidfile.display());
    let result = run(&registry, &script, Some(15.0)).await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        result.content,
        "started\n[exit code 0]\n[note: processes the command left running in the background \
         were ended when it finished; run a background job and the commands that need it in the \
         same call]"
    );
    assert_eq!(field(&result, "timed_out"), &json!(false));
    assert_eq!(field(&result, "ended_background"), &json!(true));
    let bg = read_pid(&pidfile);
    assert!(
        wait_gone(bg, Duration::from_secs(5)).await,
        "sleep {bg} was left running"
    );
}

#[tokio::test]
async fn output_written_by_background_jobs_before_exit_is_kept() {
    let registry = registry_with(fast_options());
    let result = run(&registry, "(echo from-job) & wait; echo done", None).await;
    assert_eq!(result.content, "from-job\ndone\n[exit code 0]");
    assert_eq!(field(&result, "ended_background"), &json!(false));
}

#[tokio::test]
async fn the_engine_timeout_ends_the_group() {
    let dir = scratch_dir("engine-timeout");
    let pidfile = dir.join("child.pid");
    let registry = registry_with(fast_options());
    // Give the registered tool a 2 s limit, shorter than the command's own timeout, so the engine
    // stops waiting and drops the handler.
    let def = registry.get_tool("run_bash").unwrap();
    registry
        .register_tool_with(def, ToolOptions::new().timeout_seconds(2.0).replace(true))
        .unwrap();
    let script = format!("sleep 100 & echo $! > {}; wait", pidfile.display());
    let result = run(&registry, &script, Some(15.0)).await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::TimedOut));
    let child = read_pid(&pidfile);
    assert!(
        wait_gone(child, Duration::from_secs(5)).await,
        "the command outlived the engine's timeout"
    );
}

#[tokio::test]
async fn cancellation_stops_the_command() {
    let dir = scratch_dir("cancel");
    let pidfile = dir.join("child.pid");
    let registry = registry_with(fast_options());
    let def = registry.get_tool("run_bash").unwrap();
    let ctx = ToolContext::new("c1", "run_bash");
    let token = ctx.cancellation().clone();
    let script = format!(
        "echo begun; sleep 100 & echo $! > {}; wait",
        pidfile.display()
    );
    let pidfile_for_cancel = pidfile.clone();
    tokio::spawn(async move {
        while !pidfile_for_cancel.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        token.cancel();
    });
    let out = def
        .handler
        .call(json!({"command": script, "timeout": 15}), ctx)
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.content.starts_with("begun\n[cancelled: the run stopped waiting, and the command and its child processes were stopped with SIGTERM, then SIGKILL if still running after 300 ms."),
        "{}",
        out.content
    );
    assert_eq!(out.structured.as_ref().unwrap()["cancelled"], json!(true));
    assert!(wait_gone(read_pid(&pidfile), Duration::from_secs(5)).await);
}

#[tokio::test]
async fn huge_output_is_capped_head_and_tail() {
    let registry = registry_with(BashOptions {
        max_output_bytes: 2_000,
        ..fast_options()
    });
    let result = run(&registry, "seq 1 300000", None).await;
    let total: u64 = (1..=300_000u64)
        .map(|i| i.to_string().len() as u64 + 1)
        .sum();
    assert!(!result.truncated, "the tool caps before the registry does");
    assert!(
        result.content.starts_with("1\n2\n3\n"),
        "{}",
        &result.content[..40]
    );
    assert!(result.content.ends_with("299999\n300000\n[exit code 0]"));
    assert!(
        result.content.len() < 2_400,
        "{} bytes shown",
        result.content.len()
    );
    assert_eq!(field(&result, "output_bytes"), &json!(total));
    assert_eq!(field(&result, "output_lines"), &json!(300_000));
    let omitted = field(&result, "omitted_bytes").as_u64().unwrap();
    let omitted_lines = field(&result, "omitted_lines").as_u64().unwrap();
    assert_eq!(omitted, total - 2_000, "ASCII output keeps exactly the cap");
    assert!(
        result.content.contains(&format!(
            "[... {omitted} bytes ({omitted_lines} lines) omitted from the middle of the output; \
             {total} bytes in all. To see them, send the output to a file and read it in parts, or \
             filter it with grep, head or tail ...]"
        )),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn invalid_utf8_is_decoded_lossily_and_said_so() {
    let registry = registry_with(fast_options());
    let result = run(&registry, r"printf 'ok \377 end\n'", None).await;
    assert_eq!(
        result.content,
        "ok \u{FFFD} end\n[note: the output was not valid UTF-8; invalid bytes are shown as \
         \u{FFFD}]\n[exit code 0]"
    );
    assert_eq!(field(&result, "lossy_utf8"), &json!(true));
}

#[tokio::test]
async fn a_timeout_above_the_limit_is_capped_and_said_so() {
    let registry = registry_with(fast_options());
    for asked in [10_000.0, 1e300] {
        let result = run(&registry, "echo hi", Some(asked)).await;
        assert_eq!(
            result.content,
            "hi\n[note: the timeout asked for was longer than the 20 s allowed; 20 s was used]\n\
             [exit code 0]"
        );
    }
}

#[tokio::test]
async fn a_timed_out_command_at_the_limit_says_it_cannot_run_longer() {
    let registry = registry_with(BashOptions {
        timeout_seconds: 0.8,
        kill_grace_seconds: 0.1,
        drain_seconds: 0.1,
        ..BashOptions::default()
    });
    // A command runs 0.8 s at most: the tool stops it itself and reports, before the engine's
    // limit (0.8 + 0.1 + 0.1 + 1 = 2 s).
    let result = run(&registry, "sleep 100", None).await;
    assert_eq!(
        result.error_kind,
        Some(ToolErrorKind::Failed),
        "{}",
        result.content
    );
    assert!(
        result.content.ends_with(
            "It may have partly run: check its effects. It cannot run longer in one call: split \
             the work into shorter steps.]"
        ),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn a_command_gets_the_whole_timeout_the_options_give() {
    let registry = registry_with(BashOptions {
        timeout_seconds: 4.0,
        ..BashOptions::default()
    });
    // 1.5 s is past what `timeout_seconds = 4` used to leave a command (0.75 s).
    let result = run(&registry, "sleep 1.5; echo done", None).await;
    assert_eq!(result.content, "done\n[exit code 0]", "{result:?}");
    let def = registry.get_tool("run_bash").unwrap();
    assert_eq!(
        def.timeout,
        Some(std::time::Duration::from_secs_f64(4.0 + 2.0 + 0.25 + 1.0))
    );
}

#[tokio::test]
async fn schema_errors_name_the_field() {
    let registry = registry_with(fast_options());
    let result = registry
        .execute(
            &harnessx::ToolCall::json("c", "run_bash", json!({"command": "true", "timeout": -1})),
            None,
        )
        .await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert!(
        result.content.contains("field `timeout`"),
        "{}",
        result.content
    );
}
