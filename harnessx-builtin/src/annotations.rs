//! The MCP annotations of every built-in tool, in one table: what each tool does to its
//! environment (read-only, destructive, idempotent) and whether it reaches outside the machine
//! (open world). The bundles take their tools' hints from here, so an MCP client listing them
//! (for example through `harnessx-mcp-server`) sees the same truthful hints for every tool.

use harnessx::ToolAnnotations;

/// The hints of one built-in tool, as MCP defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinHints {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may delete or overwrite what is already there (meaningful when not read-only).
    pub destructive: bool,
    /// Calling it again with the same arguments has no further effect (meaningful when not
    /// read-only).
    pub idempotent: bool,
    /// The tool talks to an open world (the network, arbitrary programs) rather than a closed
    /// store of its own.
    pub open_world: bool,
}

const fn reads(open_world: bool) -> BuiltinHints {
    BuiltinHints {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world,
    }
}

const fn writes(destructive: bool, idempotent: bool, open_world: bool) -> BuiltinHints {
    BuiltinHints {
        read_only: false,
        destructive,
        idempotent,
        open_world,
    }
}

/// Every built-in tool with its hints, in catalog order.
pub const BUILTIN_ANNOTATIONS: [(&str, BuiltinHints); 16] = [
    ("read_file", reads(false)),
    // Overwrites an existing file; writing the same content twice leaves the same file.
    ("write_file", writes(true, true, false)),
    // Replaces text in place; a second identical edit finds the old text gone.
    ("edit_file", writes(true, false, false)),
    ("delete", writes(true, true, false)),
    ("glob", reads(false)),
    ("grep", reads(false)),
    ("list_directory", reads(false)),
    // Publishes a new file and never replaces one, so nothing existing is lost.
    ("generate_file", writes(false, false, false)),
    ("run_bash", writes(true, false, true)),
    ("fetch_url", reads(true)),
    // Adds a memory; each call adds another.
    ("save_memory", writes(false, false, false)),
    ("search_memories", reads(false)),
    ("list_memories", reads(false)),
    ("delete_memory", writes(true, true, false)),
    // Replaces the whole todo list with the one sent.
    ("write_todos", writes(true, true, false)),
    ("read_todos", reads(false)),
];

/// The hints of the built-in tool `name`, or `None` when no built-in has that name.
///
/// ```
/// let hints = harnessx_builtin::annotations::builtin_hints("fetch_url").unwrap();
/// assert!(hints.read_only && hints.open_world);
/// assert!(harnessx_builtin::annotations::builtin_hints("fetch").is_none());
/// ```
pub fn builtin_hints(name: &str) -> Option<BuiltinHints> {
    BUILTIN_ANNOTATIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, hints)| *hints)
}

/// `annotations` with the hints of the built-in tool `name` (its title and anything else kept);
/// unchanged when no built-in has that name.
pub(crate) fn with_builtin_hints(name: &str, annotations: ToolAnnotations) -> ToolAnnotations {
    match builtin_hints(name) {
        Some(h) => annotations
            .with_read_only_hint(h.read_only)
            .with_destructive_hint(h.destructive)
            .with_idempotent_hint(h.idempotent)
            .with_open_world_hint(h.open_world),
        None => annotations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::BUNDLE_TOOLS;

    #[test]
    fn the_table_names_every_catalog_tool_once() {
        let catalog: Vec<&str> = BUNDLE_TOOLS
            .iter()
            .flat_map(|(_, tools)| tools.iter().copied())
            .collect();
        let table: Vec<&str> = BUILTIN_ANNOTATIONS.iter().map(|(n, _)| *n).collect();
        assert_eq!(table, catalog);
    }

    #[test]
    fn hints_replace_only_the_hints() {
        let a = with_builtin_hints("run_bash", ToolAnnotations::new().with_title("Run"));
        assert_eq!(a.title.as_deref(), Some("Run"));
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.open_world_hint),
            (Some(false), Some(true), Some(true))
        );
        let untouched = with_builtin_hints("mine", ToolAnnotations::default());
        assert_eq!(untouched, ToolAnnotations::default());
    }
}
