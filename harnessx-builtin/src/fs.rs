//! The filesystem bundle: `read_file`, `write_file`, `edit_file`, `delete`, `glob`, `grep`,
//! `list_directory` and `generate_file`, registered by [`register_filesystem_tools`].
//!
//! # Where the tools operate
//!
//! - **With `base_path`** every operation is contained in that directory, which must exist. The
//!   containment is descriptor-relative and does not follow symbolic links: each directory on a
//!   path is opened relative to the handle of the one before it, with `O_NOFOLLOW`, and the final
//!   component is opened, inspected or replaced relative to its parent's handle. `..`, absolute
//!   paths outside the root and symbolic links (as the final component or as any parent
//!   directory) are refused with an error that names the path. There is no string-prefix check.
//!   This is an application boundary, not an OS sandbox for arbitrary code: hard links to files
//!   outside the root, mount points inside it, and other processes moving directories that are
//!   already open are out of scope and need stronger isolation (a sandbox that owns its
//!   filesystem).
//!
//!   `glob` and `grep` walk with ripgrep's walker, which starts at a descriptor of the searched
//!   directory (`/proc/self/fd/N`), never descends into symbolic links, and reads each file it
//!   searches through that descriptor with no-follow, beneath-the-directory resolution: file
//!   contents never come from outside the root. Ignore files (`.ignore`, `.gitignore`,
//!   `.git/info/exclude`) are read the same way by the tools, not by the walker: never through
//!   a link, opened non-blocking, and applied only when they are regular files of at most 1 MiB;
//!   the result names any that were not applied. A directory inside the tree that another
//!   process swaps for a link in the middle of a walk could at worst add names from outside to
//!   a `glob` listing; that is the "other processes relocating directories" case above.
//!
//!   `write_file` and `generate_file` publish a new file with `renameat2(RENAME_NOREPLACE)`, so
//!   whatever another process puts at the path after the tool's check (a link, a file, a
//!   directory) is left alone and the call fails saying so; `write_file` with `overwrite`
//!   replaces only the regular file it checked (held open, compared again right before the
//!   rename). `delete` removes trees iteratively, relative to directory handles and without
//!   following links, at any depth.
//! - **In a sandbox that owns its filesystem** (the registry's [`Sandbox`](harnessx::Sandbox)
//!   reports a [`filesystem_root`](harnessx::Sandbox::filesystem_root)), the tools operate inside
//!   that root, contained exactly as above; `base_path` does not apply. They are then
//!   registered with a 300-second timeout, since the first call may start the sandbox.
//! - **Without `base_path`** the tools have host filesystem access under the process's
//!   permissions: relative paths start at the current directory, absolute paths are taken as
//!   they are, and symbolic links are followed as the OS follows them (except that `write_file`
//!   and `edit_file` never write through a link and `delete` removes a link, not its target).
//!
//! # Execution
//!
//! All filesystem I/O runs on tokio's blocking pool, never on the async workers. `read_file`,
//! `glob`, `grep` and `list_directory` run concurrently; `write_file`, `edit_file`, `delete` and
//! `generate_file` run one at a time, whatever `permission` is given. Writes publish atomically
//! (temporary file in the same directory, fsync, rename).
//!
//! `glob` and `grep` stop once the call is cancelled (its time limit passed or the run ended):
//! the walk checks between files, `grep` between chunks of a file. `grep` refuses a pattern
//! whose compiled form exceeds 8 MiB before reading anything, and searches only the first
//! 64 KiB of each line (the result counts the lines cut), so one call's work between two checks
//! stays bounded.
//!
//! ```
//! use harnessx::ToolRegistry;
//! use harnessx_builtin::{FilesystemOptions, register_filesystem_tools};
//!
//! let workspace = tempfile::tempdir()?;
//! let registry = ToolRegistry::new();
//! let names = register_filesystem_tools(&registry, FilesystemOptions {
//!     include: Some(vec!["read_file".into(), "list_directory".into()]),
//!     base_path: Some(workspace.path().to_owned()),
//!     max_read_bytes: 1_000_000,
//!     max_directory_entries: 1_000,
//!     ..FilesystemOptions::default()
//! })?;
//! assert_eq!(names, ["read_file", "list_directory"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod atomic;
mod delete;
mod edit;
mod generate;
mod glob;
mod grep;
mod ignore_rules;
mod line_cap;
mod list;
mod options;
mod read;
mod remove_tree;
mod root;
mod text;
mod walk;
mod write;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use harnessx::{
    BoxFuture, RegistryError, ToolContext, ToolDefinition, ToolError, ToolHandler, ToolOptions,
    ToolOutput, ToolRegistry,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use options::{
    DEFAULT_MAX_DIRECTORY_ENTRIES, DEFAULT_MAX_READ_BYTES, DEFAULT_MAX_SEARCH_RESULTS,
    FilesystemOptions,
};

use root::{Jail, Root};

use crate::bundle::{register_selected, select_tools};

/// The tools of the filesystem bundle, in bundle order.
pub const FILESYSTEM_TOOLS: [&str; 8] = [
    "read_file",
    "write_file",
    "edit_file",
    "delete",
    "glob",
    "grep",
    "list_directory",
    "generate_file",
];

/// The timeout of the file tools when the registry's sandbox owns its filesystem.
pub const SANDBOX_FILE_TOOL_TIMEOUT_SECONDS: u64 = 300;

/// One tool of the bundle: its model-facing contract and its operation.
pub(crate) struct Spec {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) schema: fn() -> Value,
    pub(crate) concurrent: bool,
    pub(crate) run: fn(&Call<'_>, Value) -> Result<String, ToolError>,
}

const SPECS: [&Spec; 8] = [
    &read::SPEC,
    &write::SPEC,
    &edit::SPEC,
    &delete::SPEC,
    &glob::SPEC,
    &grep::SPEC,
    &list::SPEC,
    &generate::SPEC,
];

/// What every call of the bundle shares: the configured root and limits.
#[derive(Debug)]
pub(crate) struct Shared {
    jail: Option<Arc<Jail>>,
    pub(crate) options: FilesystemOptions,
}

/// One call's view: where it operates, the configured limits, and the call's cancellation
/// (fired when the runtime stops waiting, say on a timeout): long searches check it between
/// files and chunks and stop.
pub(crate) struct Call<'a> {
    pub(crate) root: Root,
    pub(crate) options: &'a FilesystemOptions,
    pub(crate) cancel: CancellationToken,
}

/// A tool's input schema: an object with these properties and required names, and no others
/// (a misspelled argument gets an error naming it).
pub(crate) fn object_schema(properties: Value, required: &[&str]) -> Value {
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// Parses a tool's arguments (already checked against its schema by the engine).
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| {
        ToolError::invalid_arguments(format!(
            "Invalid arguments for {tool}: {e}. Fix them and call again."
        ))
    })
}

struct FsHandler {
    spec: &'static Spec,
    shared: Arc<Shared>,
}

impl ToolHandler for FsHandler {
    fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let spec = self.spec;
        let shared = Arc::clone(&self.shared);
        let cancel = ctx.cancellation().clone();
        Box::pin(async move {
            let sandbox_root = match ctx.sandbox() {
                Some(sandbox) => match sandbox.filesystem_root() {
                    Some(root) => {
                        let root = (
                            root.to_owned(),
                            sandbox.filesystem_mount_point().map(Path::to_owned),
                        );
                        sandbox.start().await.map_err(|e| {
                            ToolError::failed(format!(
                                "{e}. The file tools work inside the sandbox, so {} cannot run \
                                 until it starts; report this to the user.",
                                spec.name
                            ))
                        })?;
                        Some(root)
                    }
                    None => None,
                },
                None => None,
            };
            let text = tokio::task::spawn_blocking(move || {
                let root = match sandbox_root {
                    Some((path, mount)) => Root::Jail(Arc::new(
                        Jail::open_sandbox(&path, mount.as_deref()).map_err(|e| {
                            ToolError::failed(format!(
                                "the sandbox's filesystem root `{}` cannot be opened: {e}; report \
                             this to the user.",
                                path.display()
                            ))
                        })?,
                    )),
                    None => match &shared.jail {
                        Some(jail) => Root::Jail(Arc::clone(jail)),
                        None => Root::Host,
                    },
                };
                (spec.run)(
                    &Call {
                        root,
                        options: &shared.options,
                        cancel,
                    },
                    args,
                )
            })
            .await
            .map_err(|e| ToolError::failed(format!("the {} tool crashed: {e}", spec.name)))??;
            Ok(ToolOutput::text(text))
        })
    }
}

fn check_limits(options: &FilesystemOptions) -> Result<(), RegistryError> {
    let zero = [
        ("max_read_bytes", options.max_read_bytes == 0),
        ("max_directory_entries", options.max_directory_entries == 0),
        ("max_search_results", options.max_search_results == 0),
    ];
    for (field, is_zero) in zero {
        if is_zero {
            return Err(RegistryError::Config(format!(
                "filesystem option `{field}` must be at least 1; leave it out for the default"
            )));
        }
    }
    Ok(())
}

fn open_base_path(path: &std::path::Path) -> Result<Jail, RegistryError> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(RegistryError::Config(format!(
                "filesystem option `base_path`: `{shown}` does not exist; create the directory \
                 first or fix the path"
            )));
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(RegistryError::Config(format!(
                "filesystem option `base_path`: `{shown}` is not a directory; give the directory \
                 the tools should work in"
            )));
        }
        _ => {}
    }
    Jail::open(path).map_err(|e| {
        RegistryError::Config(format!(
            "filesystem option `base_path`: `{shown}` cannot be opened: {e}"
        ))
    })
}

fn sandbox_owns_filesystem(registry: &ToolRegistry) -> bool {
    registry
        .sandbox()
        .is_some_and(|s| s.filesystem_root().is_some())
}

/// Registers the filesystem tools selected by `options` and returns their names in bundle order.
///
/// # Errors
///
/// [`RegistryError::Config`] for an unknown name in `include` or `exclude` (the message lists
/// the valid names), a limit of zero, or a `base_path` that does not exist or is not a
/// directory; [`RegistryError::Duplicate`] when a selected name is taken and `replace` is off (no
/// tool is registered then).
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx_builtin::{FilesystemOptions, register_filesystem_tools};
///
/// let registry = ToolRegistry::new();
/// let names = register_filesystem_tools(&registry, FilesystemOptions {
///     exclude: vec!["delete".into(), "generate_file".into()],
///     ..FilesystemOptions::default()
/// })?;
/// assert_eq!(names, ["read_file", "write_file", "edit_file", "glob", "grep", "list_directory"]);
/// assert!(!registry.get_tool("write_file").unwrap().concurrent);
///
/// let err = register_filesystem_tools(&registry, FilesystemOptions {
///     include: Some(vec!["cat".into()]),
///     ..FilesystemOptions::default()
/// }).unwrap_err();
/// assert!(err.to_string().contains("`include` names `cat`, which is not a tool of the filesystem bundle"));
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
pub fn register_filesystem_tools(
    registry: &ToolRegistry,
    options: FilesystemOptions,
) -> Result<Vec<String>, RegistryError> {
    let chosen = select_tools(
        "filesystem",
        &FILESYSTEM_TOOLS,
        options.include.as_deref(),
        &options.exclude,
    )?;
    check_limits(&options)?;
    let jail = match &options.base_path {
        Some(path) => Some(Arc::new(open_base_path(path)?)),
        None => None,
    };
    let sandboxed = sandbox_owns_filesystem(registry);
    let permission = options.permission;
    let replace = options.replace;
    let shared = Arc::new(Shared { jail, options });
    let definitions = SPECS
        .iter()
        .copied()
        .filter(|s| chosen.contains(&s.name))
        .map(|spec| {
            let def = definition(spec, &shared);
            if sandboxed {
                def.with_timeout_seconds(SANDBOX_FILE_TOOL_TIMEOUT_SECONDS as f64)
            } else {
                def
            }
        })
        .collect();
    register_selected(registry, definitions, permission, replace)
}

fn definition(spec: &'static Spec, shared: &Arc<Shared>) -> ToolDefinition {
    let handler = Arc::new(FsHandler {
        spec,
        shared: Arc::clone(shared),
    });
    ToolDefinition::new(spec.name, spec.description, (spec.schema)(), handler)
        .with_concurrent(spec.concurrent)
}

/// Gives the filesystem tools already registered on `registry` the sandbox time limit
/// ([`SANDBOX_FILE_TOOL_TIMEOUT_SECONDS`]) when the registry's bound sandbox owns its
/// filesystem. Call it after binding such a sandbox to a registry whose file tools were
/// registered before. Tools of the same names that this bundle did not register are left alone.
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx_builtin::{FilesystemOptions, apply_sandbox_limits, register_filesystem_tools};
///
/// let registry = ToolRegistry::new();
/// register_filesystem_tools(&registry, FilesystemOptions::default())?;
/// apply_sandbox_limits(&registry); // no sandbox bound: nothing changes
/// assert_eq!(registry.get_tool("read_file").unwrap().timeout, None);
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
pub fn apply_sandbox_limits(registry: &ToolRegistry) {
    if !sandbox_owns_filesystem(registry) {
        return;
    }
    let limit = Duration::from_secs(SANDBOX_FILE_TOOL_TIMEOUT_SECONDS);
    for spec in SPECS {
        let Some(def) = registry.get_tool(spec.name) else {
            continue;
        };
        if def.description != spec.description || def.timeout == Some(limit) {
            continue;
        }
        let def = def.with_timeout_seconds(SANDBOX_FILE_TOOL_TIMEOUT_SECONDS as f64);
        if let Err(e) = registry.register_tool_with(def, ToolOptions::new().replace(true)) {
            tracing::warn!(tool = spec.name, error = %e, "could not apply the sandbox time limit");
        }
    }
}

/// Where `generate_file` writes: `output_dir`, else `AGENT_OUTPUT_DIR`, else `./output`.
pub(crate) fn output_dir(options: &FilesystemOptions) -> PathBuf {
    choose_output_dir(
        options.output_dir.as_deref(),
        std::env::var_os("AGENT_OUTPUT_DIR"),
    )
}

fn choose_output_dir(
    configured: Option<&std::path::Path>,
    env: Option<std::ffi::OsString>,
) -> PathBuf {
    if let Some(dir) = configured {
        return dir.to_owned();
    }
    match env {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from("output"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn output_dir_is_the_option_else_the_environment_else_dot_output() {
        let env = Some("/srv/downloads".into());
        assert_eq!(
            choose_output_dir(Some(Path::new("/app/out")), env.clone()),
            Path::new("/app/out")
        );
        assert_eq!(choose_output_dir(None, env), Path::new("/srv/downloads"));
        assert_eq!(
            choose_output_dir(None, Some("".into())),
            Path::new("output")
        );
        assert_eq!(choose_output_dir(None, None), Path::new("output"));
    }
}
