//! The `run_bash` tool: its schema, its description, its handler and how a result reads.

use std::sync::Arc;
use std::time::Duration;

use harnessx::{
    Sandbox, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput, handler_fn,
};
use serde_json::{Value, json};

use super::process::{CommandOutcome, RunLimits, run_command};
use crate::sandbox::LocalSandbox;

/// The settings `run_bash` was registered with, resolved and checked.
#[derive(Debug, Clone)]
pub(crate) struct RunBashConfig {
    /// The tool's registered limit.
    pub tool_limit: Duration,
    /// The longest a command may run: the tool limit less the time needed to stop it and
    /// report, so the model gets the output instead of a bare timeout.
    pub max_command: Duration,
    /// A command's limit when the model gives none.
    pub default_command: Duration,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How long output is read after the main process exits.
    pub drain: Duration,
    /// How much output the model sees.
    pub max_output_bytes: usize,
    /// How many processes a command may have at once.
    pub max_processes: u32,
    /// Whether commands run in their own cgroup when the host allows it.
    pub use_cgroups: bool,
}

/// The `run_bash` definition. `sandbox` is the one bound at registration, if any: its summary
/// tells the model where commands run.
pub(crate) fn definition(config: RunBashConfig, sandbox: Option<&dyn Sandbox>) -> ToolDefinition {
    let description = description(&config, sandbox);
    let schema = json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "minLength": 1,
                "description": "The bash script to run, for example `ls -la src` or `cargo test 2>&1 | tail -n 40`."
            },
            "timeout": {
                "type": ["number", "null"],
                "exclusiveMinimum": 0,
                "description": format!(
                    "Seconds before the command is stopped. Default {}, at most {}.",
                    seconds(config.default_command),
                    seconds(config.max_command)
                )
            }
        },
        "required": ["command"],
        "additionalProperties": false
    });
    let tool_limit = config.tool_limit.as_secs_f64();
    let config = Arc::new(config);
    let handler = handler_fn(move |args: Value, ctx: ToolContext| {
        let config = Arc::clone(&config);
        async move { run_bash(&config, &args, &ctx).await }
    });
    ToolDefinition::new("run_bash", description, schema, handler)
        .with_concurrent(false)
        .with_timeout_seconds(tool_limit)
        .with_annotations(ToolAnnotations::new().with_title("Run a shell command"))
}

async fn run_bash(
    config: &RunBashConfig,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let script = args.get("command").and_then(Value::as_str).ok_or_else(|| {
        ToolError::invalid_arguments(
            "Invalid arguments for `run_bash`: field `command` must be a string holding the \
                 script to run. Fix it and call `run_bash` again.",
        )
    })?;
    check_script(script)?;
    let asked = args.get("timeout").and_then(Value::as_f64);
    let (timeout, capped) = match asked.map(Duration::try_from_secs_f64) {
        Some(Ok(t)) if t <= config.max_command => (t, false),
        // Longer than allowed, or too large to be a duration at all.
        Some(_) => (config.max_command, true),
        None => (config.default_command, false),
    };
    let limits = RunLimits {
        timeout,
        kill_grace: config.kill_grace,
        drain: config.drain,
        max_output_bytes: config.max_output_bytes,
        max_processes: config.max_processes,
        use_cgroup: config.use_cgroups,
    };
    let local;
    let sandbox: &dyn Sandbox = match ctx.sandbox() {
        Some(bound) => bound.as_ref(),
        None => {
            local = LocalSandbox::new();
            &local
        }
    };
    let outcome = run_command(sandbox, script, &limits, ctx.cancellation())
        .await
        .map_err(|e| {
            ToolError::failed(format!(
                "{e}. The command did not run. This is a problem with the tool's setup, not with \
                 your command: tell the user."
            ))
        })?;
    Ok(render(&outcome, timeout, capped, config))
}

/// The longest single argument Linux passes to a program (`MAX_ARG_STRLEN`, 32 pages, less the
/// terminating NUL) less the gate put in front of the script; the script travels as one.
const MAX_SCRIPT_BYTES: usize = 32 * 4096 - 1 - super::containment::GATE.len();

/// Refuses scripts no process can be given, with what to do instead.
fn check_script(script: &str) -> Result<(), ToolError> {
    if script.contains('\0') {
        return Err(ToolError::invalid_arguments(
            "Invalid arguments for `run_bash`: field `command` contains a NUL character, which a \
             shell command cannot hold. Remove it (write binary data with `printf '\\0'`) and \
             call `run_bash` again.",
        ));
    }
    if script.len() > MAX_SCRIPT_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "Invalid arguments for `run_bash`: field `command` is {} bytes, more than the \
             {MAX_SCRIPT_BYTES} one command can hold. Write the script to a file first and run it \
             with `bash <file>`, or split it into several calls.",
            script.len()
        )));
    }
    Ok(())
}

/// The text and structured content the model gets.
pub(crate) fn render(
    outcome: &CommandOutcome,
    timeout: Duration,
    capped: bool,
    config: &RunBashConfig,
) -> ToolOutput {
    let out = &outcome.output;
    let mut text = if out.total_bytes == 0 {
        "(no output)\n".to_owned()
    } else {
        let mut t = out.text.clone();
        if !t.ends_with('\n') {
            t.push('\n');
        }
        t
    };
    if out.lossy_utf8 {
        text.push_str(
            "[note: the output was not valid UTF-8; invalid bytes are shown as \u{FFFD}]\n",
        );
    }
    if capped {
        text.push_str(&format!(
            "[note: the timeout asked for was longer than the {} allowed; {} was used]\n",
            seconds(config.max_command),
            seconds(timeout)
        ));
    }
    let stopped = format!(
        "stopped with SIGTERM, then SIGKILL if still running after {}",
        seconds(config.kill_grace)
    );
    if outcome.timed_out {
        let more = if timeout < config.max_command {
            format!(
                " Call again with a larger `timeout` (at most {}), or",
                seconds(config.max_command)
            )
        } else {
            " It cannot run longer in one call:".to_owned()
        };
        text.push_str(&format!(
            "[timed out after {}: the command and its child processes were {stopped}; the output \
             so far is shown above. It may have partly run: check its effects.{more} split the \
             work into shorter steps.]",
            seconds(timeout)
        ));
    } else if outcome.cancelled {
        text.push_str(&format!(
            "[cancelled: the run stopped waiting, and the command and its child processes were \
             {stopped}. It may have partly run: check its effects before running it again.]"
        ));
    } else {
        match (outcome.exit_code, outcome.signal) {
            (Some(code), _) => text.push_str(&format!("[exit code {code}]")),
            (None, Some(sig)) => text.push_str(&format!("[killed by signal {sig}]")),
            (None, None) => text.push_str("[exit status unknown]"),
        }
        if outcome.ended_background {
            text.push_str(
                "\n[note: processes the command left running in the background were ended when \
                 it finished; run a background job and the commands that need it in the same call]",
            );
        }
    }
    if outcome.process_limit_reached {
        text.push_str(&format!(
            "\n[note: the command reached its limit of {} processes at once, so some of its forks \
             failed (`Resource temporarily unavailable`); start fewer processes at once]",
            config.max_processes
        ));
    }
    let structured = json!({
        "exit_code": outcome.exit_code,
        "signal": outcome.signal,
        "timed_out": outcome.timed_out,
        "cancelled": outcome.cancelled,
        "ended_background": outcome.ended_background,
        "process_limit_reached": outcome.process_limit_reached,
        "output_bytes": out.total_bytes,
        "output_lines": out.total_lines,
        "omitted_bytes": out.omitted_bytes,
        "omitted_lines": out.omitted_lines,
        "lossy_utf8": out.lossy_utf8,
        "duration_ms": u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
    });
    let output = ToolOutput::text(text).with_structured(structured);
    if outcome.timed_out || outcome.cancelled {
        ToolOutput {
            is_error: true,
            ..output
        }
    } else {
        output
    }
}

fn description(config: &RunBashConfig, sandbox: Option<&dyn Sandbox>) -> String {
    let place = sandbox.map_or_else(
        || "Commands run in the sandbox the application bound, or else on the host.".to_owned(),
        |s| s.summary(),
    );
    format!(
        "Run a shell command with `bash -c` and return its output (stdout and stderr together), \
         its exit code and whether it timed out. {place} Each call is a fresh shell: `cd` and \
         variables do not carry over. Stdin is closed, so a command that waits for input gets \
         end-of-file at once: pass input through arguments, files or pipes and use \
         non-interactive flags (`-y`, `--no-pager`). Background processes are ended when the \
         command finishes.\n\
         Time limit: `timeout` seconds (default {}, at most {}); then the command and its child \
         processes are stopped.\n\
         Output: at most {} bytes are shown, the beginning and the end, with a line saying how \
         much was left out of the middle. To see more, write the output to a file and read it in \
         parts (`cmd > out.txt 2>&1; sed -n '200,400p' out.txt`), or filter it with grep, head \
         or tail.",
        seconds(config.default_command),
        seconds(config.max_command),
        config.max_output_bytes
    )
}

/// `5 s`, `1.5 s`, `250 ms`.
pub(crate) fn seconds(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 1.0 {
        format!("{} ms", d.as_millis())
    } else if (secs - secs.round()).abs() < 1e-9 {
        format!("{} s", secs.round() as u64)
    } else {
        format!("{secs:.1} s")
    }
}
