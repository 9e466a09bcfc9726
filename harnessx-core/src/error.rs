//! The crate's error type for setup mistakes: registration, configuration and loading.
//!
//! Errors a model can act on never appear here: they are error [`ToolResult`](crate::ToolResult)s.

/// A setup error: the application registered or configured something wrongly.
#[derive(thiserror::Error)]
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

// Written out, not derived: a derived `fmt` is `#[inline]`, so every program that formats this
// error (a `.expect(..)` on a registration) would compile it itself, and take the generic
// instances it needs (`<&T as Debug>::fmt`) from whichever dependency exports them with the
// smallest crate hash, linking that dependency into a debug build (`url` and the ICU crates,
// once). Here it is compiled once, in this crate (BENCHMARKS.md, "All six points on one VM").
impl std::fmt::Debug for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Duplicate(name) => f.debug_tuple("Duplicate").field(name).finish(),
            Self::InvalidName(name) => f.debug_tuple("InvalidName").field(name).finish(),
            Self::SchemaRootNotObject { tool, found } => f
                .debug_struct("SchemaRootNotObject")
                .field("tool", tool)
                .field("found", found)
                .finish(),
            Self::InvalidSchema { tool, reason } => f
                .debug_struct("InvalidSchema")
                .field("tool", tool)
                .field("reason", reason)
                .finish(),
            Self::InvalidTimeout(name) => f.debug_tuple("InvalidTimeout").field(name).finish(),
            Self::Config(message) => f.debug_tuple("Config").field(message).finish(),
        }
    }
}

/// An error followed by its sources (each once), for messages that must say everything on one
/// line (a model sees only the text).
#[cfg_attr(not(any(feature = "mcp", feature = "knowledge")), allow(dead_code))]
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
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

#[cfg(test)]
mod tests {
    use super::RegistryError;

    #[test]
    fn debug_shows_the_variant_and_its_fields_as_a_derived_impl_would() {
        let duplicate = RegistryError::Duplicate("add".into());
        assert_eq!(format!("{duplicate:?}"), r#"Duplicate("add")"#);
        let schema = RegistryError::InvalidSchema {
            tool: "add".into(),
            reason: "bad".into(),
        };
        assert_eq!(
            format!("{schema:?}"),
            r#"InvalidSchema { tool: "add", reason: "bad" }"#
        );
        assert_eq!(
            format!("{schema:#?}"),
            "InvalidSchema {\n    tool: \"add\",\n    reason: \"bad\",\n}"
        );
        let root = RegistryError::SchemaRootNotObject {
            tool: "t".into(),
            found: "an array".into(),
        };
        assert_eq!(
            format!("{root:?}"),
            r#"SchemaRootNotObject { tool: "t", found: "an array" }"#
        );
        for (error, name) in [
            (RegistryError::InvalidName("a b".into()), "InvalidName"),
            (RegistryError::InvalidTimeout("t".into()), "InvalidTimeout"),
            (RegistryError::Config("c".into()), "Config"),
        ] {
            assert!(
                format!("{error:?}").starts_with(&format!("{name}(\"")),
                "{error:?}"
            );
        }
    }
}
