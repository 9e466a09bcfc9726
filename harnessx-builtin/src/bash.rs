//! The bash bundle: the `run_bash` tool and its helper [`register_bash_tools`].
//!
//! `run_bash` runs `bash -c` through the sandbox bound to the registry
//! ([`ToolRegistry::set_sandbox`]), or on the host through a [`LocalSandbox`](crate::LocalSandbox)
//! when none is bound. Each command runs in its own process group with stdin closed and
//! `PAGER=cat`, `GIT_PAGER=cat`, `GIT_TERMINAL_PROMPT=0`; its own `timeout` argument ends it
//! first, and no command runs longer than [`RUN_BASH_TIMEOUT_SECONDS`]. On a timeout the whole
//! group gets SIGTERM, then SIGKILL after a grace period. The output the model sees is capped
//! head and tail (see [`OutputCapture`]). How background processes are handled is described in
//! [`run_command`].
//!
//! No process a command starts outlives the call, even one that starts its own session
//! (`setsid`) or double-forks. Where the host lets this process make cgroups, each command runs
//! in its own cgroup v2, killed as a whole (`cgroup.kill`) and removed when the call ends
//! ([`Containment::Cgroup`]). Otherwise a [`BubblewrapSandbox`](crate::BubblewrapSandbox)'s PID
//! namespace or a [`LocalSandbox`](crate::LocalSandbox)'s supervisor (a child subreaper: the
//! `harnessx-supervisor` binary, found on its own — see [`find_supervisor`](crate::find_supervisor)
//! — or given with [`LocalSandbox::with_supervisor`](crate::LocalSandbox::with_supervisor)) does
//! it, and without either only the process group is tracked.
//! [`Containment::host`], [`LocalSandbox::containment`](crate::LocalSandbox::containment) and
//! [`CommandOutcome::containment`] tell which holds. The number of processes a command may have
//! is bounded ([`BashOptions::max_processes`]; [`ProcessLimit`] says by what).
//!
//! When the process running the commands dies without ending them (SIGKILL, a crash), a
//! supervisor ends its command at once: it gets a signal when its parent dies
//! (`PR_SET_PDEATHSIG`) and kills every process of the command. Bubblewrap dies with its parent
//! too (`--die-with-parent`), and its PID namespace with it. A command run directly — in its
//! cgroup, or only its process group — lives on until the next start calls [`reap_orphans`]:
//! every command names the process that started it (its pid, start time and PID namespace) in
//! its cgroup's name and in [`COMMAND_OWNER_ENV`], which its processes inherit, so the next start
//! finds the cgroups and processes whose owner is gone, kills them and removes the cgroups.
//! `harnessx serve` calls it before it resumes any run; a program of its own calls it once at
//! start, before anything asks whether an interrupted command took effect.
//!
//! The bundle is Unix-only (process groups and signals): build without the `bash` feature
//! elsewhere.

mod capture;
mod cgroup;
mod containment;
mod orphans;
mod owner;
mod process;
mod procfs;
mod supervisor;
mod tool;

use std::time::Duration;

use harnessx::{PermissionLevel, RegistryError, ToolRegistry};

use crate::bundle::{register_selected, select_tools};
use serde::Deserialize;

pub use capture::{CapturedOutput, OutputCapture};
pub use containment::{Containment, ProcessLimit};
pub use orphans::{Reaped, reap_orphans};
pub use owner::COMMAND_OWNER_ENV;
pub use process::{COMMAND_ENV, CommandOutcome, DEFAULT_MAX_PROCESSES, RunLimits, run_command};
pub use supervisor::{MAX_PROCESSES_ENV, SUPERVISOR_FLAG, SUPERVISOR_LIMIT_STATUS, supervise};

/// The tools of the bash bundle, in registration order.
pub const BASH_TOOLS: [&str; 1] = ["run_bash"];

/// The registered time limit of `run_bash`: 300 seconds. The command's own `timeout` argument
/// ends it first.
pub const RUN_BASH_TIMEOUT_SECONDS: f64 = 300.0;

/// Options of [`register_bash_tools`] (and of `load_builtin("bash", ..)`, which parses them from
/// JSON; unknown keys are refused).
///
/// ```
/// use harnessx_builtin::bash::BashOptions;
/// let options: BashOptions = serde_json::from_value(serde_json::json!({
///     "max_output_bytes": 10000,
///     "default_timeout_seconds": 60
/// }))?;
/// assert_eq!(options.max_output_bytes, 10_000);
/// assert_eq!(options.timeout_seconds, 300.0);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BashOptions {
    /// Register only these tools (`None`: all of [`BASH_TOOLS`]).
    pub include: Option<Vec<String>>,
    /// Leave these tools out.
    pub exclude: Vec<String>,
    /// The tools' permission; `None` inherits the agent's policy.
    pub permission: Option<PermissionLevel>,
    /// Replace tools of the same name instead of failing.
    pub replace: bool,
    /// The longest a command may run, in seconds (default [`RUN_BASH_TIMEOUT_SECONDS`]). The
    /// tool's registered limit adds the time needed to stop a command and report
    /// (`kill_grace_seconds + drain_seconds + 1`), so a command always gets its whole time.
    pub timeout_seconds: f64,
    /// A command's time limit when the model gives no `timeout` (default: as long as allowed).
    pub default_timeout_seconds: Option<f64>,
    /// How many bytes of output the model sees: the first half and the last half (default
    /// 30 000, within the registry's 64 KB result cap).
    pub max_output_bytes: usize,
    /// Seconds between SIGTERM and SIGKILL when a command is stopped (default 2).
    pub kill_grace_seconds: f64,
    /// Seconds output is still read after the main process exits while a background process
    /// keeps the pipe open (default 0.25).
    pub drain_seconds: f64,
    /// How many processes (threads included) a command may have at once (default
    /// [`DEFAULT_MAX_PROCESSES`]; at least 8). What enforces it: [`ProcessLimit`].
    pub max_processes: u32,
    /// Run each command in its own cgroup when the host allows it (default `true`); see
    /// [`Containment`].
    pub use_cgroups: bool,
}

impl Default for BashOptions {
    fn default() -> Self {
        Self {
            include: None,
            exclude: Vec::new(),
            permission: None,
            replace: false,
            timeout_seconds: RUN_BASH_TIMEOUT_SECONDS,
            default_timeout_seconds: None,
            max_output_bytes: 30_000,
            kill_grace_seconds: 2.0,
            drain_seconds: 0.25,
            max_processes: DEFAULT_MAX_PROCESSES,
            use_cgroups: true,
        }
    }
}

/// The smallest `max_output_bytes` accepted.
const MIN_OUTPUT_BYTES: usize = 256;

/// The largest registered limit of `run_bash`, in seconds: a day.
const MAX_TOOL_LIMIT_SECONDS: f64 = 86_400.0;

/// The smallest `max_processes` accepted: the shell, the sandbox's helpers and a pipeline.
const MIN_PROCESSES: u32 = 8;

impl BashOptions {
    fn config(&self) -> Result<tool::RunBashConfig, RegistryError> {
        let secs = |field: &str, value: f64| {
            Duration::try_from_secs_f64(value)
                .ok()
                .filter(|_| value.is_finite())
                .ok_or_else(|| {
                    RegistryError::Config(format!(
                        "bash option `{field}` must be a finite number of seconds of at least 0, \
                         but it is {value}"
                    ))
                })
        };
        let mut max_command = secs("timeout_seconds", self.timeout_seconds)?;
        if max_command.is_zero() {
            return Err(RegistryError::Config(
                "bash option `timeout_seconds` is 0, but a command needs time to run; give the \
                 longest a command may run, in seconds"
                    .into(),
            ));
        }
        let kill_grace = secs("kill_grace_seconds", self.kill_grace_seconds)?;
        let drain = secs("drain_seconds", self.drain_seconds)?;
        // The tool's own limit leaves the command its whole time, then the time needed to stop
        // it and report, so the model gets the output instead of a bare timeout.
        let tool_limit = kill_grace
            .checked_add(drain)
            .and_then(|r| r.checked_add(Duration::from_secs(1)))
            .and_then(|r| r.checked_add(max_command))
            .filter(|d| d.as_secs_f64() <= MAX_TOOL_LIMIT_SECONDS)
            .ok_or_else(|| {
                RegistryError::Config(format!(
                    "bash options `timeout_seconds + kill_grace_seconds + drain_seconds + 1` \
                     come to more than {MAX_TOOL_LIMIT_SECONDS} seconds; lower them"
                ))
            })?;
        if max_command > Duration::from_secs(10) {
            max_command = Duration::from_secs(max_command.as_secs());
        }
        let default_command = match self.default_timeout_seconds {
            None => max_command,
            Some(value) => {
                let d = secs("default_timeout_seconds", value)?;
                if d.is_zero() || d > max_command {
                    return Err(RegistryError::Config(format!(
                        "bash option `default_timeout_seconds` is {value}, but it must be more \
                         than 0 and at most {} (`timeout_seconds`)",
                        max_command.as_secs_f64()
                    )));
                }
                d
            }
        };
        if self.max_output_bytes < MIN_OUTPUT_BYTES {
            return Err(RegistryError::Config(format!(
                "bash option `max_output_bytes` is {}, but it must be at least {MIN_OUTPUT_BYTES}",
                self.max_output_bytes
            )));
        }
        if self.max_processes < MIN_PROCESSES {
            return Err(RegistryError::Config(format!(
                "bash option `max_processes` is {}, but it must be at least {MIN_PROCESSES}",
                self.max_processes
            )));
        }
        Ok(tool::RunBashConfig {
            tool_limit,
            max_command,
            default_command,
            kill_grace,
            drain,
            max_output_bytes: self.max_output_bytes,
            max_processes: self.max_processes,
            use_cgroups: self.use_cgroups,
        })
    }
}

/// Registers the bash bundle's tools and returns the names registered, in bundle order.
///
/// `run_bash` is registered serial (commands may change shared state), with manual replay (a
/// command is never re-run automatically) and its own limit — a command's 300 seconds plus the
/// time to stop it and report (303.25 s by default) — which the registry's default timeout does
/// not change. Bind the sandbox ([`ToolRegistry::set_sandbox`]) before
/// registering: the tool's description then tells the model where its commands run.
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx_builtin::bash::{register_bash_tools, BashOptions};
///
/// let registry = ToolRegistry::new();
/// let names = register_bash_tools(&registry, BashOptions::default())?;
/// assert_eq!(names, ["run_bash"]);
/// let def = registry.get_tool("run_bash").unwrap();
/// assert_eq!(def.timeout, Some(std::time::Duration::from_secs_f64(303.25)));
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
///
/// # Errors
/// [`RegistryError::Config`] for an unknown name in `include` or `exclude` (the message lists the
/// valid names) or an option out of range; [`RegistryError::Duplicate`] when a tool of the same
/// name exists and `replace` is false.
pub fn register_bash_tools(
    registry: &ToolRegistry,
    options: BashOptions,
) -> Result<Vec<String>, RegistryError> {
    let selected = select_tools(
        "bash",
        &BASH_TOOLS,
        options.include.as_deref(),
        &options.exclude,
    )?;
    let config = options.config()?;
    let sandbox = registry.sandbox();
    let definitions = selected
        .into_iter()
        .map(|name| match name {
            "run_bash" => Ok(tool::definition(config.clone(), sandbox.as_deref())),
            other => Err(RegistryError::Config(format!(
                "the bash bundle has no tool `{other}`"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    register_selected(registry, definitions, options.permission, options.replace)
}
