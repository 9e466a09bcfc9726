//! The crate's error type for setup mistakes: registration, configuration and loading.
//!
//! Errors a model can act on never appear here: they are error [`ToolResult`](crate::ToolResult)s.

/// A setup error: the application registered or configured something wrongly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool of that name is already registered.
    #[error(
        "a tool named `{0}` is already registered; pass `replace(true)` to replace it deliberately"
    )]
    Duplicate(String),
    /// The tool name is empty or uses characters model APIs refuse.
    #[error("tool name `{0}` is not valid: use 1 to 64 letters, digits, `_` or `-`")]
    InvalidName(String),
    /// The input schema's root is not an object schema.
    #[error(
        "the input schema of tool `{tool}` must have an object root (`{{\"type\": \"object\", ...}}`), but it is {found}"
    )]
    SchemaRootNotObject {
        /// The tool.
        tool: String,
        /// What the root was.
        found: String,
    },
    /// The input schema does not compile.
    #[error("the input schema of tool `{tool}` is not a valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What the schema compiler said.
        reason: String,
    },
    /// A tool's own time limit is not a positive number of seconds.
    #[error(
        "the timeout of tool `{0}` must be a positive number of seconds; leave it unset to use the registry's default"
    )]
    InvalidTimeout(String),
    /// A built-in, bundle or option is unknown or invalid.
    #[error("{0}")]
    Config(String),
}

/// An error followed by its sources (each once), for messages that must say everything on one
/// line (a model sees only the text).
///
/// ```
/// let err = harnessx::AgentError::Setup {
///     capability: "MCP server `files`".into(),
///     source: "connection refused".into(),
/// };
/// assert_eq!(
///     harnessx::error::error_chain(&err),
///     "could not set up the agent's MCP server `files`: connection refused"
/// );
/// ```
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}
